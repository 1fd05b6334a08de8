// DevX on drsim contexts: capability pages, flow counters counting traffic, direct and indirect TIRs
// steering frames to queues, ASO objects, and the failures (EINVAL, EREMOTEIO, EOPNOTSUPP, EBUSY).
// The mailboxes and the fixture are in devx_test_fixture.h.
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "capi/drsim.h"
#include "gtest/gtest.h"
#include "hw/match_params.h"
#include "hw/net_addr.h"
#include "sim/frame_builder.h"
#include "sim/meter.h"
#include "sim/toeplitz.h"
#include "soft_mlx5/devx_test_fixture.h"
#include "tests/flow_meter.h"

namespace drsim {
namespace {

using hw::kOuter;
using hw::MatchBuilder;
using hw::MatchParams;
using namespace devx_testing;  // NOLINT: the fixture and mailbox helpers

// alloc_flow_counter_in: flow_counter_bulk_log_size in the low 5 bits of byte 14, flow_counter_bulk in 15.
Bytes AllocFlowCounterIn(uint8_t bulk = 0, uint8_t log_size = 0) {
  Bytes in = In(0x939, 0, 16);
  in[14] = log_size & 0x1f;
  in[15] = bulk;
  return in;
}

// query_flow_counter_in: clear (bit 31) and num_of_counters at byte 24, flow_counter_id at 28.
Bytes QueryFlowCounterIn(uint32_t id, uint32_t num = 0, bool clear = false) {
  Bytes in = In(0x93b, 0, 32);
  Put32(in, 24, (clear ? 1u << 31 : 0) | num);
  Put32(in, 28, id);
  return in;
}

// create_rqt_in: rqt_max_size at byte 54, rqt_actual_size at 58, rq_num[] from 272.
Bytes CreateRqtIn(const std::vector<uint32_t>& rqs) {
  Bytes in = In(0x916, 0, 272 + 4 * rqs.size());
  Put16(in, 54, static_cast<uint16_t>(rqs.size()));
  Put16(in, 58, static_cast<uint16_t>(rqs.size()));
  for (size_t i = 0; i < rqs.size(); ++i) Put32(in, 272 + 4 * i, rqs[i]);
  return in;
}

// create_tir_in (tirc from byte 32): disp_type in byte 36's high nibble, inline_rqn at 61..63,
// rx_hash_symmetric and indirect_table at 64, rx_hash_fn in byte 68's high nibble, the Toeplitz key at
// 72..111, the outer and inner field selectors at 112 and 116.
Bytes DirectTirIn(uint32_t rqn) {
  Bytes in = In(0x900, 0, 272);
  Put32(in, 60, rqn);
  return in;
}
Bytes IndirectTirIn(uint32_t rqt, const std::array<uint8_t, 40>& key, uint32_t outer, uint32_t inner = 0,
                    bool symmetric = false) {
  Bytes in = In(0x900, 0, 272);
  in[36] = 1 << 4;
  Put32(in, 64, (symmetric ? 1u << 31 : 0) | rqt);
  in[68] = 2 << 4;  // Toeplitz
  std::copy(key.begin(), key.end(), in.begin() + 72);
  Put32(in, 112, outer);
  Put32(in, 116, inner);
  return in;
}
// rx_hash_field_select: IPv4 (l3 0), UDP (l4 1), SRC_IP | DST_IP | L4_SPORT | L4_DPORT.
constexpr uint32_t kIpv4UdpFourTuple = (1u << 30) | 0xf;

Bytes CreateAsoIn(uint16_t type, uint8_t log_obj_range = 0) {
  Bytes in = GeneralObjectIn(0xa00, type);
  in[12] = log_obj_range & 0x1f;
  return in;
}

std::array<uint8_t, 40> TestKey() {
  std::array<uint8_t, 40> key;
  for (size_t i = 0; i < key.size(); ++i) key[i] = static_cast<uint8_t>(i * 37 + 11);
  return key;
}

std::vector<uint8_t> Udp(const char* src, const char* dst, uint16_t sport, uint16_t dport,
                         size_t payload = 0) {
  sim::FrameSpec s;
  s.ipv4_src = *hw::Ipv4Address::Parse(src);
  s.ipv4_dst = *hw::Ipv4Address::Parse(dst);
  s.protocol = sim::kIpProtoUdp;
  s.sport = sport;
  s.dport = dport;
  s.payload_len = payload;
  return sim::BuildFrame(s);
}

// ---- QUERY_HCA_CAP ----

TEST_F(DevxTest, NicFlowTableCapsPassTheReformatCheckOfRdmaCoresTests) {
  Bytes out;
  ASSERT_EQ(General(QueryHcaCapIn(7), &out, 0x1010), 0) << drsim_last_error();
  // test_mlx5_flow.py requires_reformat_support: encap_general_header, log_max_packet_reformat_context,
  // and reformat in the receive and transmit properties.
  EXPECT_EQ(out[0], 0);
  EXPECT_TRUE(out[20] & 0x80);
  EXPECT_TRUE(out[21] & 0x1f);
  EXPECT_TRUE(out[80] & 0x1);
  EXPECT_TRUE(out[272] & 0x1);
  const Bytes caps(out.begin() + 16, out.end());
  EXPECT_EQ(Get32(caps, 4) & 0x3ff, 128u);  // max_encap_header_size
  // Receive (byte 64): ft_support, flow_tag, flow_counter, modify; decap and L3 tunnel decap.
  EXPECT_EQ(caps[64] & 0xf0, 0xf0);
  EXPECT_TRUE(caps[65] & 0x80);   // decap
  EXPECT_TRUE(caps[66] & 0x20);   // reformat_l3_tunnel_to_l2
  EXPECT_FALSE(caps[66] & 0x10);  // reformat_l2_to_l3_tunnel: encapsulation is NIC_TX's
  EXPECT_TRUE(caps[67] & 0x02);   // sw_owner_v2
  // Transmit (byte 256): no flow tag, no decap; L2-to-L3-tunnel encap.
  EXPECT_EQ(caps[256] & 0xf0, 0xb0);
  EXPECT_FALSE(caps[257] & 0x80);
  EXPECT_TRUE(caps[258] & 0x10);
  // The sniffer and RDMA properties are empty.
  EXPECT_EQ(caps[128], 0);
  EXPECT_EQ(caps[320], 0);
}

// rdma-core's test_mlx5_dr.py gates GENEVE matching on ft_field_support (requires_geneve_fields_rx_support:
// outer_geneve_vni, _oam, _protocol_type, _opt_len of the receive properties) and counters on flow_counter
// in both directions (requires_flow_counter_support). The parser fills all four GENEVE fields, so the bits
// are set, in receive, transmit and FDB properties, and the same in ft_field_bitmask_support.
TEST_F(DevxTest, FieldSupportSaysWhatTheParserFills) {
  const Bytes nic = Caps(7), fdb = Caps(8);
  for (const auto& [page, properties] : {std::pair{&nic, 64}, {&nic, 256}, {&fdb, 64}}) {
    SCOPED_TRACE(properties);
    const Bytes& caps = *page;
    EXPECT_TRUE(caps[properties] & 0x20);  // flow_counter
    for (int support : {32, 48}) {         // ft_field_support, ft_field_bitmask_support (bytes)
      const size_t at = properties + support;
      EXPECT_EQ(caps[at], 0xff);             // outer dmac .. outer ipv4 ttl
      EXPECT_EQ(caps[at + 3] & 0x3c, 0x3c);  // outer_geneve_vni, _oam, _protocol_type, _opt_len
      EXPECT_EQ(caps[at + 3] & 0x40, 0x40);  // outer_vxlan_vni
      EXPECT_EQ(caps[at + 2] & 0x03, 0x03);  // outer_gre_protocol, outer_gre_key
      EXPECT_EQ(caps[at + 6] & 0xfe, 0xfe);  // inner ip_protocol .. inner tcp_flags
      EXPECT_EQ(caps[at + 7], 0x01);         // metadata_reg_a; no reg_b, reserved bits 0
      EXPECT_EQ(caps[at + 8] & 0xc0, 0xc0);  // geneve_tlv_option_0_data, _exist
      EXPECT_EQ(caps[at + 8] & 0x38, 0);     // reserved
      EXPECT_EQ(Get32(caps, at + 12), 0u);   // reserved (the kernel's reg_c bits: not in rdma-core)
    }
  }
}

TEST_F(DevxTest, GeneralCapsDescribeTheFunction) {
  Bytes pf = Caps(0);
  EXPECT_EQ(pf[54] & 0x03, 1);         // port_type Ethernet
  EXPECT_EQ(pf[55], 1);                // num_ports
  EXPECT_EQ((pf[6] << 8) | pf[7], 0);  // vhca_id
  EXPECT_EQ(pf[52] & 0x03, 0x03);      // nic_flow_table, eswitch_manager
  EXPECT_EQ(pf[67] & 0x18, 0x18);      // qos, eth_net_offloads
  EXPECT_EQ(pf[98], 0xff);             // flow_counter_bulk_alloc
  EXPECT_EQ(pf[105], 23);              // log_max_flow_counter_bulk
  EXPECT_EQ((uint32_t{pf[88]} << 24 | uint32_t{pf[89]} << 16 | pf[106] << 8 | pf[107]), 1u << 24);
  const uint64_t obj_types = Get64(pf, 128);
  // GENEVE TLV option, ASO flow meter, flow hit, connection tracking.
  EXPECT_EQ(obj_types,
            (uint64_t{1} << 0x0b) | (uint64_t{1} << 0x24) | (uint64_t{1} << 0x25) | (uint64_t{1} << 0x31));
  EXPECT_EQ(pf[136] & 0x0f, 1);  // steering format: ConnectX-6 Dx
  const uint32_t flex = Get32(pf, 168);
  EXPECT_TRUE(flex & (1u << 8));   // ICMP
  EXPECT_TRUE(flex & (1u << 3));   // GENEVE
  EXPECT_TRUE(flex & (1u << 11));  // GTP-U

  ibv_context* vf = drsim_vport_context(ctx_, 1);
  Bytes v = Caps(0, vf);
  EXPECT_EQ((v[6] << 8) | v[7], 1);  // vhca_id = the vport
  EXPECT_EQ(v[52] & 0x01, 0);        // not the eSwitch manager

  // "Max" reads the same as "current"; rdma-core's is_eth reads 2048 bytes of the page.
  Bytes max_out, cur_out;
  ASSERT_EQ(General(QueryHcaCapIn(0, false), &max_out, 0x1010), 0);
  ASSERT_EQ(General(QueryHcaCapIn(0, true), &cur_out, 0x1010), 0);
  EXPECT_EQ(max_out, cur_out);
  Bytes short_out;
  ASSERT_EQ(General(QueryHcaCapIn(0), &short_out, 16 + 2048), 0) << drsim_last_error();
  EXPECT_TRUE(std::equal(short_out.begin(), short_out.end(), cur_out.begin()));
}

TEST_F(DevxTest, EswitchQosAndOffloadPages) {
  Bytes fdb = Caps(8);
  EXPECT_EQ(fdb[64] & 0xb1, 0xb1);  // ft_support, flow_counter, flow_modify_en, reformat
  EXPECT_FALSE(fdb[64] & 0x40);     // no flow tag in the FDB
  EXPECT_EQ(fdb[66] & 0x30, 0x30);  // both tunnel reformats
  EXPECT_EQ(Caps(8, drsim_vport_context(ctx_, 1)), Bytes(4096, 0));  // a VF has no FDB

  Bytes esw = Caps(9);
  EXPECT_TRUE(esw[12] & 0x80);  // esw_manager_vport_number_valid
  EXPECT_EQ((esw[14] << 8) | esw[15], 0);

  Bytes qos = Caps(0xc);
  EXPECT_TRUE(qos[0] & 0x01);     // flow_meter_old: srTCM/trTCM meters
  EXPECT_EQ(qos[3], 0x2a);        // flow_meter_reg_id: reg_c_1, 3, 5 (test_flow_meter takes 1, DPDK 3)
  EXPECT_TRUE(qos[5] & 0x80);     // flow_meter: the colour keeps the register's upper 24 bits
  EXPECT_EQ(qos[37] & 0x1f, 16);  // log_meter_aso_max_alloc
  EXPECT_EQ(qos[36] & 0x1f, 0);   // log_meter_aso_granularity

  EXPECT_EQ(Caps(1), Bytes(4096, 0));  // Ethernet offloads: present, all 0
}

TEST_F(DevxTest, QueryHcaCapOfAnotherFunctionAndUnknownPages) {
  Bytes in = QueryHcaCapIn(0);
  in[8] = 0x80;      // other_function
  Put16(in, 10, 1);  // function_id: the VF
  Bytes out;
  ASSERT_EQ(General(in, &out, 0x1010), 0) << drsim_last_error();
  EXPECT_EQ((out[16 + 6] << 8) | out[16 + 7], 1);
  // Only the eSwitch manager may; firmware fails the command (EREMOTEIO, status and syndrome).
  EXPECT_EQ(General(in, &out, 0x1010, drsim_vport_context(ctx_, 1)), EREMOTEIO);
  EXPECT_EQ(out[0], kBadParam);
  Put16(in, 10, 7);  // no such function
  EXPECT_EQ(General(in, &out, 0x1010), EREMOTEIO);

  // Capability type 0x20 (general device 2) is not a page of the software NIC.
  EXPECT_EQ(General(QueryHcaCapIn(0x20), &out, 0x1010), EREMOTEIO);
  EXPECT_EQ(out[0], kBadParam);
  EXPECT_EQ(Get32(out, 4), 0x1000006u);  // syndrome: the opcode, and op_mod's byte
  EXPECT_NE(std::string(drsim_last_error()).find("QUERY_HCA_CAP (0x100)"), std::string::npos);
}

// ---- Flow counters ----

TEST_F(DevxTest, DevxCounterCountsTrafficThroughACounterAction) {
  Bytes out;
  mlx5dv_devx_obj* counter = Create(AllocFlowCounterIn(), &out);
  ASSERT_NE(counter, nullptr);
  const uint32_t id = Get32(out, 8);
  ibv_qp* qp = Qp();
  mlx5dv_dr_action* count = Keep(mlx5dv_dr_action_create_flow_counter(counter, 0));
  mlx5dv_dr_action* to_qp = Keep(mlx5dv_dr_action_create_dest_ibv_qp(qp));
  mlx5dv_dr_matcher* by_port = mlx5dv_dr_matcher_create(
      root_, 1, 1 << 0, MatchBuilder().IpVersion(kOuter, 4).UdpDport(kOuter, 0xffff).Build()->get());
  ASSERT_NE(by_port, nullptr) << drsim_last_error();
  Rule(by_port, *MatchBuilder().IpVersion(kOuter, 4).UdpDport(kOuter, 4791).Build(), {count, to_qp});
  const Bytes a = Udp("10.0.0.1", "10.0.0.2", 1, 4791, 100), b = Udp("10.0.0.1", "10.0.0.2", 2, 4791, 300),
              other = Udp("10.0.0.1", "10.0.0.2", 1, 53, 10);
  for (const Bytes* f : {&a, &b, &a, &other}) Send(*f);
  EXPECT_EQ(Drain(qp), 3);

  Bytes q;
  ASSERT_EQ(Query(counter, QueryFlowCounterIn(id), &q, 32), 0) << drsim_last_error();
  EXPECT_EQ(q[0], 0);
  EXPECT_EQ(Get64(q, 16), 3u);                       // packets
  EXPECT_EQ(Get64(q, 24), 2 * a.size() + b.size());  // octets
  uint64_t packets = 0, bytes = 0;
  ASSERT_EQ(drsim_counter_query(counter, 0, &packets, &bytes), 0);  // the same counter drsim sees
  EXPECT_EQ(packets, 3u);
  EXPECT_EQ(bytes, 2 * a.size() + b.size());

  // Clear: this query reads the values and zeroes them.
  ASSERT_EQ(Query(counter, QueryFlowCounterIn(id, 0, /*clear=*/true), &q, 32), 0);
  EXPECT_EQ(Get64(q, 16), 3u);
  Send(a);
  ASSERT_EQ(Query(counter, QueryFlowCounterIn(id), &q, 32), 0);
  EXPECT_EQ(Get64(q, 16), 1u);
  EXPECT_EQ(Get64(q, 24), a.size());
  EXPECT_EQ(Drain(qp), 1);

  // In use by the action: EBUSY, and the counter stays usable.
  EXPECT_EQ(mlx5dv_devx_obj_destroy(counter), EBUSY);
  ASSERT_EQ(Query(counter, QueryFlowCounterIn(id), &q, 32), 0);
  DestroyLastRule();
  ASSERT_EQ(mlx5dv_dr_matcher_destroy(by_port), 0);
  Forget(count);
  ASSERT_EQ(mlx5dv_dr_action_destroy(count), 0);
  Forget(counter);
  EXPECT_EQ(mlx5dv_devx_obj_destroy(counter), 0);
}

TEST_F(DevxTest, CounterBulksAndBulkQuery) {
  Bytes out;
  mlx5dv_devx_obj* bulk = Create(AllocFlowCounterIn(/*bulk=*/1), &out);  // 128 counters
  ASSERT_NE(bulk, nullptr);
  const uint32_t base = Get32(out, 8);
  mlx5dv_devx_obj* eight = Create(AllocFlowCounterIn(0, /*log_size=*/3), &out);
  ASSERT_NE(eight, nullptr);
  const uint32_t eight_base = Get32(out, 8);
  EXPECT_EQ(eight_base, base + 128);  // ids follow one another
  EXPECT_NE(Keep(mlx5dv_dr_action_create_flow_counter(bulk, 127)), nullptr);
  EXPECT_NE(Keep(mlx5dv_dr_action_create_flow_counter(eight, 7)), nullptr);

  ibv_qp* qp = Qp();
  mlx5dv_dr_action* c5 = Keep(mlx5dv_dr_action_create_flow_counter(bulk, 5));
  mlx5dv_dr_action* c7 = Keep(mlx5dv_dr_action_create_flow_counter(bulk, 7));
  mlx5dv_dr_action* to_qp = Keep(mlx5dv_dr_action_create_dest_ibv_qp(qp));
  mlx5dv_dr_table* t1 = Table(1);
  mlx5dv_dr_matcher* m1 = Matcher(t1, 0, empty_);
  mlx5dv_dr_action* jump = Keep(mlx5dv_dr_action_create_dest_table(t1));
  Rule(all_, MatchParams(), {c5, jump});
  Rule(m1, MatchParams(), {c7, to_qp});
  for (int i = 0; i < 4; ++i) Send(Udp("10.0.0.1", "10.0.0.2", 1, 2));
  EXPECT_EQ(Drain(qp), 4);
  // Counters 4..7 of the bulk in one query: 0, 4, 0, 4 packets.
  Bytes q;
  ASSERT_EQ(Query(bulk, QueryFlowCounterIn(base + 4, 4), &q, 16 + 4 * 16), 0) << drsim_last_error();
  EXPECT_EQ(Get64(q, 16), 0u);
  EXPECT_EQ(Get64(q, 32), 4u);
  EXPECT_EQ(Get64(q, 48), 0u);
  EXPECT_EQ(Get64(q, 64), 4u);
  // Past the bulk's end: firmware's BAD_PARAM. An id of another bulk: the kernel's EINVAL.
  EXPECT_EQ(Query(bulk, QueryFlowCounterIn(base + 126, 4), &q, 16 + 4 * 16), EREMOTEIO);
  EXPECT_EQ(q[0], kBadParam);
  EXPECT_EQ(Query(bulk, QueryFlowCounterIn(eight_base), &q, 32), EINVAL);
  // An output too short for the counters asked for.
  EXPECT_EQ(Query(bulk, QueryFlowCounterIn(base, 2), &q, 32), EINVAL);
  EXPECT_NE(std::string(drsim_last_error()).find("outlen 32"), std::string::npos);
  // Bulk sizes other than one bit of flow_counter_bulk_alloc, and log sizes past 23.
  Bytes in = AllocFlowCounterIn(3);
  errno = 0;
  EXPECT_EQ(mlx5dv_devx_obj_create(ctx_, in.data(), in.size(), out.data(), out.size()), nullptr);
  EXPECT_EQ(errno, EREMOTEIO);
  EXPECT_EQ(out[0], kBadParam);
  in = AllocFlowCounterIn(0, 24);
  EXPECT_EQ(mlx5dv_devx_obj_create(ctx_, in.data(), in.size(), out.data(), out.size()), nullptr);
  EXPECT_EQ(errno, EREMOTEIO);
}

TEST_F(DevxTest, CountersAreNotGeneralCommands) {
  // mlx5_ib passes ALLOC_FLOW_COUNTER through obj_create only, and issues DEALLOC itself.
  Bytes out;
  EXPECT_EQ(General(AllocFlowCounterIn(), &out, 16), EINVAL);
  EXPECT_EQ(out[0], kBadOp);
  EXPECT_NE(std::string(drsim_last_error()).find("mlx5dv_devx_obj_create"), std::string::npos);
  Bytes dealloc = In(0x93a, 0, 16);
  EXPECT_EQ(General(dealloc, &out, 16), EINVAL);
  EXPECT_NE(std::string(drsim_last_error()).find("mlx5dv_devx_obj_destroy"), std::string::npos);
  // A query of a counter through obj_create is refused the same way.
  Bytes in = QueryFlowCounterIn(0);
  errno = 0;
  EXPECT_EQ(mlx5dv_devx_obj_create(ctx_, in.data(), in.size(), out.data(), out.size()), nullptr);
  EXPECT_EQ(errno, EINVAL);
}

// ---- TIRs ----

TEST_F(DevxTest, DirectTirDeliversToItsQueue) {
  ibv_qp* qp = Qp();
  Bytes out;
  mlx5dv_devx_obj* tir = Create(DirectTirIn(qp->qp_num), &out);
  ASSERT_NE(tir, nullptr);
  EXPECT_NE(Get32(out, 8) & 0xffffff, 0u);  // tirn
  mlx5dv_dr_action* to_tir = Keep(mlx5dv_dr_action_create_dest_devx_tir(tir));
  Rule(all_, MatchParams(), {to_tir});
  Send(Udp("10.0.0.1", "10.0.0.2", 1, 2));
  Send(Udp("10.0.0.3", "10.0.0.4", 5, 6));
  EXPECT_EQ(Drain(qp), 2);
  EXPECT_EQ(mlx5dv_devx_obj_destroy(tir), EBUSY);  // the action targets it
  EXPECT_EQ(drsim_destroy_qp(qp), EBUSY);          // the TIR holds its queue

  // A queue the function does not have: firmware's BAD_RESOURCE, the syndrome naming inline_rqn (byte 61).
  Bytes in = DirectTirIn(qp->qp_num + 1000);
  errno = 0;
  EXPECT_EQ(mlx5dv_devx_obj_create(ctx_, in.data(), in.size(), out.data(), out.size()), nullptr);
  EXPECT_EQ(errno, EREMOTEIO);
  EXPECT_EQ(out[0], kBadResource);
  EXPECT_EQ(Get32(out, 4), (0x900u << 16) | 61);
  // A queue of another function (the VF's).
  ibv_qp* vf_qp = drsim_create_qp(ctx_, 1);
  qps_.push_back(vf_qp);
  in = DirectTirIn(vf_qp->qp_num);
  EXPECT_EQ(mlx5dv_devx_obj_create(ctx_, in.data(), in.size(), out.data(), out.size()), nullptr);
  EXPECT_EQ(errno, EREMOTEIO);
}

TEST_F(DevxTest, IndirectTirSpreadsByToeplitzOverAnRqTable) {
  std::vector<ibv_qp*> qps = {Qp(), Qp(), Qp(), Qp()};
  std::vector<uint32_t> rqs;
  for (ibv_qp* q : qps) rqs.push_back(q->qp_num);
  Bytes out;
  mlx5dv_devx_obj* rqt = Create(CreateRqtIn(rqs), &out);
  ASSERT_NE(rqt, nullptr);
  const uint32_t rqtn = Get32(out, 8) & 0xffffff;
  const std::array<uint8_t, 40> key = TestKey();
  mlx5dv_devx_obj* tir = Create(IndirectTirIn(rqtn, key, kIpv4UdpFourTuple), &out);
  ASSERT_NE(tir, nullptr);
  Keep(mlx5dv_dr_action_create_dest_devx_tir(tir));
  Rule(all_, MatchParams(), {actions_.back()});

  // Each frame lands on rq_num[hash & 3], the hash the Toeplitz function gives under the mailbox's key.
  const uint64_t fields =
      IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 | IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP;
  std::array<int, 4> per_queue{};
  for (uint16_t sport = 1000; sport < 1064; ++sport) {
    Send(Udp("192.168.1.10", "10.1.2.3", sport, 4789));
    sim::RssHeaderFields h;
    h.ipv4_src = *hw::Ipv4Address::Parse("192.168.1.10");
    h.ipv4_dst = *hw::Ipv4Address::Parse("10.1.2.3");
    h.ip_protocol = 17;
    h.sport = sport;
    h.dport = 4789;
    const uint32_t expected = *sim::RssHash(h, fields, key) & 3;
    for (size_t i = 0; i < qps.size(); ++i) {
      const int got = Drain(qps[i]);
      EXPECT_EQ(got, i == expected ? 1 : 0) << "sport " << sport << " queue " << i;
      per_queue[i] += got;
    }
  }
  for (int n : per_queue) EXPECT_GT(n, 0);  // 64 flows reach all four queues

  // The table goes only after its TIR, the TIR only after the action (the teardown's order).
  EXPECT_EQ(mlx5dv_devx_obj_destroy(rqt), EBUSY);
  EXPECT_EQ(mlx5dv_devx_obj_destroy(tir), EBUSY);
}

TEST_F(DevxTest, SymmetricTirHashesBothDirectionsAlike) {
  std::vector<ibv_qp*> qps = {Qp(), Qp()};
  Bytes out;
  mlx5dv_devx_obj* rqt = Create(CreateRqtIn({qps[0]->qp_num, qps[1]->qp_num}), &out);
  ASSERT_NE(rqt, nullptr);
  mlx5dv_devx_obj* tir = Create(
      IndirectTirIn(Get32(out, 8) & 0xffffff, TestKey(), kIpv4UdpFourTuple, 0, /*symmetric=*/true), &out);
  ASSERT_NE(tir, nullptr);
  Rule(all_, MatchParams(), {Keep(mlx5dv_dr_action_create_dest_devx_tir(tir))});
  for (uint16_t port = 2000; port < 2016; ++port) {
    Send(Udp("10.0.0.1", "10.0.0.2", port, 80));
    Send(Udp("10.0.0.2", "10.0.0.1", 80, port));
    // Both directions of the flow on one queue.
    const int a = Drain(qps[0]), b = Drain(qps[1]);
    EXPECT_TRUE((a == 2 && b == 0) || (a == 0 && b == 2)) << "port " << port;
  }
}

TEST_F(DevxTest, TirAndRqtFieldChecks) {
  ibv_qp* qp = Qp();
  Bytes out(16);
  auto fails = [&](const Bytes& in, int err, int status) {
    errno = 0;
    EXPECT_EQ(mlx5dv_devx_obj_create(ctx_, in.data(), in.size(), out.data(), out.size()), nullptr);
    EXPECT_EQ(errno, err) << drsim_last_error();
    EXPECT_EQ(out[0], status) << drsim_last_error();
  };
  fails(CreateRqtIn({qp->qp_num, qp->qp_num, qp->qp_num}), EOPNOTSUPP, kBadParam);  // not a power of two
  fails(CreateRqtIn({qp->qp_num + 77}), EREMOTEIO, kBadResource);                   // no such queue
  Bytes rqt_in = CreateRqtIn({qp->qp_num, qp->qp_num});
  rqt_in.resize(rqt_in.size() - 1);  // the last rq_num cut short
  fails(rqt_in, EINVAL, kBadInputLength);
  fails(IndirectTirIn(12345, TestKey(), kIpv4UdpFourTuple), EREMOTEIO, kBadResource);  // no such table
  mlx5dv_devx_obj* rqt = Create(CreateRqtIn({qp->qp_num}), &out);
  ASSERT_NE(rqt, nullptr);
  const uint32_t rqtn = Get32(out, 8) & 0xffffff;
  fails(IndirectTirIn(rqtn, TestKey(), kIpv4UdpFourTuple, kIpv4UdpFourTuple), EOPNOTSUPP, kBadParam);
  fails(IndirectTirIn(rqtn, TestKey(), 1u << 4), EOPNOTSUPP, kBadParam);  // IPsec SPI
  Bytes xor8 = IndirectTirIn(rqtn, TestKey(), kIpv4UdpFourTuple);
  xor8[68] = 1 << 4;
  fails(xor8, EOPNOTSUPP, kBadParam);
  Bytes disp = DirectTirIn(qp->qp_num);
  disp[36] = 2 << 4;
  fails(disp, EREMOTEIO, kBadParam);
  // The inner selector hashes the inner headers (IBV_RX_HASH_INNER): accepted.
  EXPECT_NE(Create(IndirectTirIn(rqtn, TestKey(), 0, kIpv4UdpFourTuple), &out), nullptr);
  // A TIR mailbox short of the selectors.
  Bytes tir_in = DirectTirIn(qp->qp_num);
  tir_in.resize(100);
  fails(tir_in, EINVAL, kBadInputLength);
  EXPECT_NE(std::string(drsim_last_error()).find("rx_hash_field_selector_inner"), std::string::npos);
}

// ---- ASO objects ----

TEST_F(DevxTest, AsoFlowMeterObjectsTakeParametersAndAsoActions) {
  Bytes out;
  mlx5dv_devx_obj* meters = Create(CreateAsoIn(0x24, /*log_obj_range=*/1), &out);
  ASSERT_NE(meters, nullptr);
  const uint32_t id = Get32(out, 8);
  // Two lines of two meters: offsets 0..3.
  mlx5dv_dr_action* meter =
      Keep(mlx5dv_dr_action_create_aso(rx_, meters, 3, MLX5DV_DR_ACTION_FLAGS_ASO_FLOW_METER_GREEN, 1));
  errno = 0;
  EXPECT_EQ(mlx5dv_dr_action_create_aso(rx_, meters, 4, MLX5DV_DR_ACTION_FLAGS_ASO_FLOW_METER_GREEN, 1),
            nullptr);
  EXPECT_EQ(errno, EINVAL);

  // MODIFY sets the second meter of line 1 (offset 3); QUERY of line 1 reads it back, the first unset.
  Bytes mod = GeneralObjectIn(0xa01, 0x24, id, /*obj_offset=*/1);
  mod[23] = 0x2;  // modify_field_select: the line's second meter
  sim::MeterParams params = tests::TestFlowMeter();
  params.cir_mantissa = 3;
  const std::vector<uint8_t> prm = tests::MeterPrm(params);
  std::copy(prm.begin(), prm.end(), mod.begin() + 112);
  Bytes mout(16);
  ASSERT_EQ(mlx5dv_devx_obj_modify(meters, mod.data(), mod.size(), mout.data(), mout.size()), 0)
      << drsim_last_error();
  Bytes q;
  ASSERT_EQ(Query(meters, GeneralObjectIn(0xa02, 0x24, id, 1), &q, 144), 0) << drsim_last_error();
  EXPECT_EQ(Bytes(q.begin() + 80, q.begin() + 112), Bytes(32, 0));
  EXPECT_EQ(Bytes(q.begin() + 112, q.begin() + 144), Bytes(prm.begin(), prm.end()));
  // The same as drsim_aso_flow_meter_configure does to another object.
  mlx5dv_devx_obj* other = Create(CreateAsoIn(0x24), &out);
  const uint32_t other_id = Get32(out, 8);
  ASSERT_EQ(drsim_aso_flow_meter_configure(other, 1, prm.data(), prm.size()), 0);
  Bytes q2;
  ASSERT_EQ(Query(other, GeneralObjectIn(0xa02, 0x24, other_id, 0), &q2, 144), 0) << drsim_last_error();
  EXPECT_EQ(Bytes(q2.begin() + 112, q2.end()), Bytes(q.begin() + 112, q.end()));

  // Bad parameters change nothing; a line past the object; another object's id; a short output.
  Bytes bad = mod;
  bad[22] = 0x01;
  bad[23] = 0x03;  // bit 8: no such field
  EXPECT_EQ(mlx5dv_devx_obj_modify(meters, bad.data(), bad.size(), mout.data(), mout.size()), EREMOTEIO);
  bad = mod;
  bad[112] |= 0x30;  // start_color 3
  EXPECT_EQ(mlx5dv_devx_obj_modify(meters, bad.data(), bad.size(), mout.data(), mout.size()), EREMOTEIO);
  EXPECT_EQ(mout[0], kBadParam);
  EXPECT_EQ(Query(meters, GeneralObjectIn(0xa02, 0x24, id, 2), &q, 144), EREMOTEIO);
  EXPECT_EQ(Query(meters, GeneralObjectIn(0xa02, 0x24, id + 1, 0), &q, 144), EINVAL);
  EXPECT_EQ(Query(meters, GeneralObjectIn(0xa02, 0x25, id, 0), &q, 144), EINVAL);
  EXPECT_EQ(Query(meters, GeneralObjectIn(0xa02, 0x24, id, 0), &q, 100), EINVAL);

  EXPECT_EQ(mlx5dv_devx_obj_destroy(meters), EBUSY);  // the aso action uses it

  // The meter MODIFY set (offset 3) colours traffic: 1000-byte frames through its 4 KiB committed burst,
  // at a trickle of a rate, in an instant: 3 green, then red. (An unset meter would pass all green.)
  mlx5dv_dr_table* t2 = Table(2);
  mlx5dv_dr_matcher* by_color = Matcher(t2, 1 << 3, *MatchBuilder().RegC(1, 0xff).Build());
  mlx5dv_devx_obj* counters = Create(AllocFlowCounterIn(0, 1), &out);
  const uint32_t counter_id = Get32(out, 8);
  mlx5dv_dr_action* drop = Keep(mlx5dv_dr_action_create_drop());
  Rule(Level1(), MatchParams(), {meter, Keep(mlx5dv_dr_action_create_dest_table(t2))});
  Rule(by_color, *MatchBuilder().RegC(1, 2).Build(),
       {Keep(mlx5dv_dr_action_create_flow_counter(counters, 0)), drop});
  Rule(by_color, *MatchBuilder().RegC(1, 0).Build(),
       {Keep(mlx5dv_dr_action_create_flow_counter(counters, 1)), drop});
  for (int i = 0; i < 10; ++i) Send(Udp("10.0.0.1", "10.0.0.2", 1, 2, 1000));
  ASSERT_EQ(Query(counters, QueryFlowCounterIn(counter_id, 2), &q, 48), 0) << drsim_last_error();
  EXPECT_EQ(Get64(q, 16), 3u);  // green
  EXPECT_EQ(Get64(q, 32), 7u);  // red
}

// The PRM's flow_meter_aso object holds two flow_meter_parameters (bytes 80 and 112 of the mailbox, as in
// DPDK's mlx5_prm.h and the kernel's mlx5_ifc.h): CREATE_GENERAL_OBJECT takes them for line 0's meters. A
// block of zeros leaves its meter unset; a bad block fails the CREATE and makes nothing.
TEST_F(DevxTest, AsoFlowMeterObjectsTakeThePrmsMeterParametersAtCreate) {
  const std::vector<uint8_t> prm = tests::MeterPrm();
  Bytes in = CreateAsoIn(0x24, /*log_obj_range=*/1);
  std::copy(prm.begin(), prm.end(), in.begin() + 80);
  Bytes out;
  mlx5dv_devx_obj* meters = Create(in, &out);
  ASSERT_NE(meters, nullptr);
  const uint32_t id = Get32(out, 8);
  Bytes q;
  ASSERT_EQ(Query(meters, GeneralObjectIn(0xa02, 0x24, id, 0), &q, 144), 0) << drsim_last_error();
  EXPECT_EQ(Bytes(q.begin() + 80, q.begin() + 112), Bytes(prm.begin(), prm.end()));
  EXPECT_EQ(Bytes(q.begin() + 112, q.begin() + 144), Bytes(32, 0));  // the second meter: unset
  ASSERT_EQ(Query(meters, GeneralObjectIn(0xa02, 0x24, id, 1), &q, 144), 0) << drsim_last_error();
  EXPECT_EQ(Bytes(q.begin() + 80, q.begin() + 144), Bytes(64, 0));  // line 1: not in the CREATE
  Bytes bad = in;
  bad[112] = 0x30;  // the second meter: start_color 3
  CreateFails(bad, EREMOTEIO, kBadParam);
  EXPECT_NE(std::string(drsim_last_error()).find("the second meter's parameters"), std::string::npos);
}

TEST_F(DevxTest, AsoFlowHitObjectRecordsHits) {
  Bytes out;
  mlx5dv_devx_obj* hits = Create(CreateAsoIn(0x25), &out);
  ASSERT_NE(hits, nullptr);
  const uint32_t id = Get32(out, 8);
  ibv_qp* qp = Qp();
  mlx5dv_dr_action* hit =
      Keep(mlx5dv_dr_action_create_aso(rx_, hits, 7, MLX5DV_DR_ACTION_FLAGS_ASO_FIRST_HIT_SET, 5));
  mlx5dv_dr_action* to_qp = Keep(mlx5dv_dr_action_create_dest_ibv_qp(qp));
  Bytes q;
  ASSERT_EQ(Query(hits, GeneralObjectIn(0xa02, 0x25, id, 0), &q, 144), 0) << drsim_last_error();
  EXPECT_EQ(Bytes(q.begin() + 80, q.end()), Bytes(64, 0));
  Rule(Level1(), MatchParams(), {hit, to_qp});
  Send(Udp("10.0.0.1", "10.0.0.2", 1, 2));
  EXPECT_EQ(Drain(qp), 1);
  ASSERT_EQ(Query(hits, GeneralObjectIn(0xa02, 0x25, id, 0), &q, 144), 0);
  Bytes expected(64, 0);
  expected[63] = 0x80;  // flag 7
  EXPECT_EQ(Bytes(q.begin() + 80, q.end()), expected);
  // Flags are set by aso actions only.
  Bytes mod = GeneralObjectIn(0xa01, 0x25, id, 0);
  Bytes mout(16);
  EXPECT_EQ(mlx5dv_devx_obj_modify(hits, mod.data(), mod.size(), mout.data(), mout.size()), EOPNOTSUPP);
  EXPECT_EQ(mlx5dv_devx_obj_destroy(hits), EBUSY);
}

TEST_F(DevxTest, GeneralObjectsTheNicLacks) {
  Bytes out(16);
  Bytes dek = CreateAsoIn(0x0c);  // a DEK (crypto) object
  errno = 0;
  EXPECT_EQ(mlx5dv_devx_obj_create(ctx_, dek.data(), dek.size(), out.data(), out.size()), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  EXPECT_NE(std::string(drsim_last_error()).find("DEK"), std::string::npos);
  Bytes big = CreateAsoIn(0x24, 17);
  EXPECT_EQ(mlx5dv_devx_obj_create(ctx_, big.data(), big.size(), out.data(), out.size()), nullptr);
  EXPECT_EQ(errno, EREMOTEIO);
}

// ---- Unknown commands and mailbox sizes ----

TEST_F(DevxTest, UnknownAndUnmodelledOpcodes) {
  Bytes out;
  EXPECT_EQ(General(In(0x7777, 0, 16), &out, 16), EOPNOTSUPP);
  EXPECT_EQ(out[0], kBadOp);
  EXPECT_EQ(Get32(out, 4) >> 16, 0x7777u);
  EXPECT_NE(std::string(drsim_last_error()).find("opcode 0x7777"), std::string::npos);
  EXPECT_EQ(General(In(0x750, 0, 16), &out, 16), EOPNOTSUPP);  // QUERY_VPORT_STATE: not modelled
  EXPECT_NE(std::string(drsim_last_error()).find("QUERY_VPORT_STATE (0x750)"), std::string::npos);
  Bytes table = In(0x930, 0, 64);  // CREATE_FLOW_TABLE
  errno = 0;
  EXPECT_EQ(mlx5dv_devx_obj_create(ctx_, table.data(), table.size(), out.data(), out.size()), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  EXPECT_NE(std::string(drsim_last_error()).find("CREATE_FLOW_TABLE (0x930)"), std::string::npos);
  mlx5dv_devx_obj* counter = Create(AllocFlowCounterIn(), &out);
  Bytes q;
  EXPECT_EQ(Query(counter, In(0x903, 0, 16), &q, 64), EOPNOTSUPP);  // QUERY_TIR
  EXPECT_EQ(Query(counter, In(0x900, 0, 16), &q, 64), EINVAL);      // CREATE_TIR is no query
  Bytes mout(16);
  Bytes query = QueryFlowCounterIn(0);  // a query is no modify
  EXPECT_EQ(mlx5dv_devx_obj_modify(counter, query.data(), query.size(), mout.data(), mout.size()), EINVAL);
  // The kernel refuses commands for another vHCA.
  Bytes tunnel = AllocFlowCounterIn();
  tunnel[4] = 1;
  EXPECT_EQ(mlx5dv_devx_obj_create(ctx_, tunnel.data(), tunnel.size(), out.data(), out.size()), nullptr);
  EXPECT_EQ(errno, EINVAL);
}

TEST_F(DevxTest, ShortMailboxesAreRefusedAndNothingIsWrittenPastOutlen) {
  Bytes out(64, 0xab);
  Bytes in = QueryHcaCapIn(7);
  EXPECT_EQ(mlx5dv_devx_general_cmd(ctx_, in.data(), 4, out.data(), 64), EINVAL);  // no room for op_mod
  EXPECT_NE(std::string(drsim_last_error()).find("inlen 4"), std::string::npos);
  EXPECT_EQ(mlx5dv_devx_general_cmd(ctx_, in.data(), 10, out.data(), 64), EINVAL);  // before function_id
  EXPECT_NE(std::string(drsim_last_error()).find("function_id"), std::string::npos);
  std::fill(out.begin(), out.end(), 0xab);
  EXPECT_EQ(mlx5dv_devx_general_cmd(ctx_, in.data(), in.size(), out.data(), 8), EINVAL);
  EXPECT_NE(std::string(drsim_last_error()).find("outlen 8"), std::string::npos);
  for (size_t i = 8; i < out.size(); ++i) ASSERT_EQ(out[i], 0xab) << i;
  // A page cut to 24 bytes of output: 8 bytes of it, and nothing beyond.
  ASSERT_EQ(mlx5dv_devx_general_cmd(ctx_, in.data(), in.size(), out.data(), 24), 0);
  EXPECT_TRUE(out[20] & 0x80);  // encap_general_header
  for (size_t i = 24; i < out.size(); ++i) ASSERT_EQ(out[i], 0xab) << i;
  EXPECT_EQ(mlx5dv_devx_general_cmd(ctx_, nullptr, 16, out.data(), 64), EINVAL);
  EXPECT_EQ(mlx5dv_devx_general_cmd(nullptr, in.data(), in.size(), out.data(), 64), EINVAL);
  errno = 0;
  EXPECT_EQ(mlx5dv_devx_obj_create(nullptr, in.data(), in.size(), out.data(), 64), nullptr);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(mlx5dv_devx_obj_query(nullptr, in.data(), in.size(), out.data(), 64), EINVAL);
  EXPECT_EQ(mlx5dv_devx_obj_modify(nullptr, in.data(), in.size(), out.data(), 64), EINVAL);
}

}  // namespace
}  // namespace drsim
