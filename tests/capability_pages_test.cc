// The capability pages a program reads through DevX, checked bit by bit against what the software NIC
// does when the feature is tried.
//
// Programs gate features on QUERY_HCA_CAP bits: rdma-core's tests (requires_geneve_fields_rx_support,
// requires_flow_counter_support, requires_reformat_support, test_flow_meter's flow_meter_reg_id), rdma-core's
// DR (dr_devx_query_device, dr_devx_query_esw_caps, dr_devx_query_nic_caps) and DPDK's
// mlx5_devx_cmd_query_hca_attr. Each bit must be set exactly when drsim does the thing. So every bit here
// is compared with a try: the pages are read with mlx5dv_devx_general_cmd as those programs send it, and
//  - ft_field_support / ft_field_bitmask_support: a bit is supported when some probe frame, parsed as the
//    NIC parses it, has a nonzero value in the bit's fields, and a NIC_RX rule on those values catches the
//    frame while the same rule with one value bit flipped does not. NIC_TX and FDB also need their matcher
//    to take the mask. Of the metadata, source_eswitch_port is the wire's port, reg_a is set on NIC_TX
//    and matched there, and source_sqn (a verbs send queue's number) needs the matchers to take it;
//  - the flow table properties: a bit is supported when a rule with the actions it names is taken in a
//    non-root table of the domain;
//  - the QoS page: meters colour frames into each register, keeping its other bits.
// Bit offsets are written here from mlx5_ifc.h (rdma-core's providers/mlx5/mlx5_ifc.h, DPDK's mlx5_prm.h),
// independently of soft_mlx5/devx_caps.cc.
#include <arpa/inet.h>
#include <infiniband/mlx5dv.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "capi/drsim.h"
#include "gtest/gtest.h"
#include "hw/match_layout.h"
#include "hw/match_params.h"
#include "hw/modify_header.h"
#include "hw/net_addr.h"
#include "sim/frame_builder.h"
#include "sim/packet_parser.h"
#include "tests/flow_meter.h"

namespace drsim {
namespace {

using Bytes = std::vector<uint8_t>;
using hw::Field;
using hw::Headers;
using hw::MatchParams;

// ---- Mailboxes ----

// A bit of a page, counted from the most significant bit of byte 0 (the PRM's numbering).
bool Bit(const Bytes& page, size_t bit) { return (page[bit / 8] >> (7 - bit % 8)) & 1; }

// QUERY_HCA_CAP (0x100), op_mod = type << 1 | current; the page after the 16-byte output header.
Bytes CapPage(ibv_context* ctx, uint16_t type) {
  Bytes in(16), out(16 + 4096);
  in[0] = 0x01;
  in[6] = static_cast<uint8_t>(type >> 7);
  in[7] = static_cast<uint8_t>(type << 1 | 1);
  EXPECT_EQ(mlx5dv_devx_general_cmd(ctx, in.data(), in.size(), out.data(), out.size()), 0)
      << drsim_last_error();
  return Bytes(out.begin() + 16, out.end());
}

// CREATE_GENERAL_OBJECT (0xa00) of `type`; `fill` writes the object after the 16-byte header.
mlx5dv_devx_obj* CreateObject(ibv_context* ctx, uint16_t type, uint8_t log_obj_range,
                              const std::function<void(Bytes&)>& fill = nullptr) {
  Bytes in(144), out(16);
  in[0] = 0x0a;
  in[6] = static_cast<uint8_t>(type >> 8);
  in[7] = static_cast<uint8_t>(type);
  in[12] = log_obj_range;
  if (fill) fill(in);
  return mlx5dv_devx_obj_create(ctx, in.data(), in.size(), out.data(), out.size());
}

// ---- Page layouts (mlx5_ifc.h) ----

// flow_table_nic_cap: flow_table_properties_nic_receive at bit 0x200, _nic_transmit at 0x800;
// flow_table_eswitch_cap: flow_table_properties_nic_esw_fdb at 0x200. In flow_table_prop_layout,
// ft_field_support is at 0x100 and ft_field_bitmask_support at 0x180.
struct Pipe {
  const char* name;
  mlx5dv_dr_domain_type domain;
  uint16_t page_type;
  size_t properties;
};
constexpr Pipe kPipes[] = {{"NIC_RX", MLX5DV_DR_DOMAIN_TYPE_NIC_RX, 7, 0x200},
                           {"NIC_TX", MLX5DV_DR_DOMAIN_TYPE_NIC_TX, 7, 0x800},
                           {"FDB", MLX5DV_DR_DOMAIN_TYPE_FDB, 8, 0x200}};
constexpr size_t kFieldSupport = 0x100, kFieldBitmaskSupport = 0x180;

// flow_table_fields_supported: a bit, its name, the match-layout fields it stands for, the header stack
// whose ip_version a mask on them carries (mlx5 matchers need it beside IP and L4 fields), and fields a
// matcher needs beside them.
enum class Kind { kHeader, kMetadata, kNone };
struct FieldBit {
  uint32_t bit;
  const char* name;
  std::vector<Field> fields;
  Headers stack = Headers::kOuter;
  Kind kind = Kind::kHeader;
  std::vector<Field> with = {};
};

std::vector<FieldBit> FieldBits() {
  // The outer stack's bits 0x00-0x16 and the inner stack's, 0x20 further on.
  struct Stack {
    uint32_t bit;
    const char* name;
    std::vector<Field> outer, inner;
  };
  const Stack stacks[] = {
      {0x00,
       "dmac",
       {Field::kOuterDmac47_16, Field::kOuterDmac15_0},
       {Field::kInnerDmac47_16, Field::kInnerDmac15_0}},
      {0x01,
       "smac",
       {Field::kOuterSmac47_16, Field::kOuterSmac15_0},
       {Field::kInnerSmac47_16, Field::kInnerSmac15_0}},
      {0x02, "ether_type", {Field::kOuterEthertype}, {Field::kInnerEthertype}},
      {0x03, "ip_version", {Field::kOuterIpVersion}, {Field::kInnerIpVersion}},
      {0x04, "first_prio", {Field::kOuterFirstPrio}, {Field::kInnerFirstPrio}},
      {0x05, "first_cfi", {Field::kOuterFirstCfi}, {Field::kInnerFirstCfi}},
      {0x06, "first_vid", {Field::kOuterFirstVid}, {Field::kInnerFirstVid}},
      {0x07, "ipv4_ttl", {Field::kOuterIpTtlHoplimit}, {Field::kInnerIpTtlHoplimit}},
      {0x08, "second_prio", {Field::kOuterSecondPrio}, {Field::kInnerSecondPrio}},
      {0x09, "second_cfi", {Field::kOuterSecondCfi}, {Field::kInnerSecondCfi}},
      {0x0a, "second_vid", {Field::kOuterSecondVid}, {Field::kInnerSecondVid}},
      {0x0b, "ipv6_flow_label", {Field::kOuterIpv6FlowLabel}, {Field::kInnerIpv6FlowLabel}},
      {0x0c,
       "sip",
       {Field::kOuterSrcIp127_96, Field::kOuterSrcIp95_64, Field::kOuterSrcIp63_32, Field::kOuterSrcIp31_0},
       {Field::kInnerSrcIp127_96, Field::kInnerSrcIp95_64, Field::kInnerSrcIp63_32, Field::kInnerSrcIp31_0}},
      {0x0d,
       "dip",
       {Field::kOuterDstIp127_96, Field::kOuterDstIp95_64, Field::kOuterDstIp63_32, Field::kOuterDstIp31_0},
       {Field::kInnerDstIp127_96, Field::kInnerDstIp95_64, Field::kInnerDstIp63_32, Field::kInnerDstIp31_0}},
      {0x0e, "frag", {Field::kOuterFrag}, {Field::kInnerFrag}},
      {0x0f, "ip_protocol", {Field::kOuterIpProtocol}, {Field::kInnerIpProtocol}},
      {0x10, "ip_ecn", {Field::kOuterIpEcn}, {Field::kInnerIpEcn}},
      {0x11, "ip_dscp", {Field::kOuterIpDscp}, {Field::kInnerIpDscp}},
      {0x12, "udp_sport", {Field::kOuterUdpSport}, {Field::kInnerUdpSport}},
      {0x13, "udp_dport", {Field::kOuterUdpDport}, {Field::kInnerUdpDport}},
      {0x14, "tcp_sport", {Field::kOuterTcpSport}, {Field::kInnerTcpSport}},
      {0x15, "tcp_dport", {Field::kOuterTcpDport}, {Field::kInnerTcpDport}},
      {0x16, "tcp_flags", {Field::kOuterTcpFlags}, {Field::kInnerTcpFlags}},
  };
  std::vector<FieldBit> bits;
  for (const Stack& s : stacks) {
    bits.push_back({s.bit, s.name, s.outer, Headers::kOuter});
    bits.push_back({s.bit + 0x20, s.name, s.inner, Headers::kInner});
  }
  const std::vector<FieldBit> others = {
      {0x17, "outer_gre_protocol", {Field::kGreProtocol}},
      {0x18, "outer_gre_key", {Field::kGreKeyH, Field::kGreKeyL}},
      {0x19, "outer_vxlan_vni", {Field::kVxlanVni}},
      {0x1a, "outer_geneve_vni", {Field::kGeneveVni}},
      {0x1b, "outer_geneve_oam", {Field::kGeneveOam}},
      {0x1c, "outer_geneve_protocol_type", {Field::kGeneveProtocolType}},
      {0x1d, "outer_geneve_opt_len", {Field::kGeneveOptLen}},
      {0x1e, "source_vhca_port", {Field::kSourceVhcaPort}},
      {0x1f, "source_eswitch_port", {Field::kSourcePort}},
      {0x3e, "metadata_reg_b", {}, Headers::kOuter, Kind::kNone},  // the SW steering layout has no reg_b
      {0x3f, "metadata_reg_a", {Field::kMetadataRegA}, Headers::kOuter, Kind::kMetadata},
      {0x40, "geneve_tlv_option_0_data", {Field::kGeneveTlvOption0Data}},
      // Matched beside a GENEVE field, as rdma-core's dr_matcher builds it (with the GENEVE lookup).
      {0x41,
       "geneve_tlv_option_0_exist",
       {Field::kGeneveTlvOption0Exist},
       Headers::kOuter,
       Kind::kHeader,
       {Field::kGeneveVni}},
      {0x45, "outer_first_mpls_over_udp_ttl", {Field::kOuterFirstMplsOverUdpTtl}},
      {0x46, "outer_first_mpls_over_udp_s_bos", {Field::kOuterFirstMplsOverUdpSBos}},
      {0x47, "outer_first_mpls_over_udp_exp", {Field::kOuterFirstMplsOverUdpExp}},
      {0x48, "outer_first_mpls_over_udp_label", {Field::kOuterFirstMplsOverUdpLabel}},
      {0x49, "outer_first_mpls_over_gre_ttl", {Field::kOuterFirstMplsOverGreTtl}},
      {0x4a, "outer_first_mpls_over_gre_s_bos", {Field::kOuterFirstMplsOverGreSBos}},
      {0x4b, "outer_first_mpls_over_gre_exp", {Field::kOuterFirstMplsOverGreExp}},
      {0x4c, "outer_first_mpls_over_gre_label", {Field::kOuterFirstMplsOverGreLabel}},
      {0x4d, "inner_first_mpls_ttl", {Field::kInnerFirstMplsTtl}, Headers::kInner},
      {0x4e, "inner_first_mpls_s_bos", {Field::kInnerFirstMplsSBos}, Headers::kInner},
      {0x4f, "inner_first_mpls_exp", {Field::kInnerFirstMplsExp}, Headers::kInner},
      {0x50, "inner_first_mpls_label", {Field::kInnerFirstMplsLabel}, Headers::kInner},
      {0x51, "outer_first_mpls_ttl", {Field::kOuterFirstMplsTtl}},
      {0x52, "outer_first_mpls_s_bos", {Field::kOuterFirstMplsSBos}},
      {0x53, "outer_first_mpls_exp", {Field::kOuterFirstMplsExp}},
      {0x54, "outer_first_mpls_label", {Field::kOuterFirstMplsLabel}},
      {0x55, "outer_emd_tag", {Field::kOuterEmdTag}},
      {0x56, "inner_esp_spi", {Field::kInnerEspSpi}, Headers::kInner},
      {0x57, "outer_esp_spi", {Field::kOuterEspSpi}},
      {0x58, "inner_ipv6_hop_limit", {Field::kInnerIpTtlHoplimit}, Headers::kInner},
      {0x59, "outer_ipv6_hop_limit", {Field::kOuterIpTtlHoplimit}},
      {0x5a, "bth_dst_qp", {Field::kBthDstQp}},
      {0x5b, "inner_first_svlan", {Field::kInnerSvlanTag}, Headers::kInner},
      {0x5c, "inner_second_svlan", {Field::kInnerSecondSvlanTag}, Headers::kInner},
      {0x5d, "outer_first_svlan", {Field::kOuterSvlanTag}},
      {0x5e, "outer_second_svlan", {Field::kOuterSecondSvlanTag}},
      {0x5f, "source_sqn", {Field::kSourceSqn}, Headers::kOuter, Kind::kMetadata},
  };
  bits.insert(bits.end(), others.begin(), others.end());
  return bits;
}

bool IsIpVersion(Field f) { return f == Field::kOuterIpVersion || f == Field::kInnerIpVersion; }

// ---- Probe frames: every header the bits name, with distinctive nonzero values ----

constexpr uint16_t kOptionClass = 0x0102;
constexpr uint8_t kOptionType = 0x01;

sim::FrameSpec Ipv4Tcp() {
  sim::FrameSpec s;
  s.dmac = *hw::MacAddress::Parse("02:11:22:33:44:55");
  s.smac = *hw::MacAddress::Parse("02:66:77:88:99:aa");
  s.vlans = {{0x88a8, 0xb123}, {0x88a8, 0xd456}};  // two S-tags: prio 5 and 6, DEI set, VIDs 0x123, 0x456
  s.dscp = 0x2a;
  s.ecn = 2;
  s.ttl = 77;
  s.protocol = sim::kIpProtoTcp;
  s.ipv4_src = *hw::Ipv4Address::Parse("10.1.2.3");
  s.ipv4_dst = *hw::Ipv4Address::Parse("10.4.5.6");
  s.sport = 1234;
  s.dport = 5678;
  s.tcp_flags = 0x1d2;
  s.payload_len = 8;
  return s;
}
sim::FrameSpec Ipv6Udp() {
  sim::FrameSpec s;
  s.l3 = sim::L3Kind::kIpv6;
  s.ipv6_src = *hw::Ipv6Address::Parse("2001:db8:1:2:3:4:5:6");
  s.ipv6_dst = *hw::Ipv6Address::Parse("2001:db8:7:8:9:a:b:c");
  s.flow_label = 0xabcde;
  s.ttl = 99;
  s.sport = 4321;
  s.dport = 8765;
  s.payload_len = 8;
  return s;
}
sim::FrameSpec Ipv4Fragment() {
  sim::FrameSpec s;
  s.more_fragments = true;
  s.payload_len = 16;
  return s;
}
sim::FrameSpec Esp() {  // IP protocol 50: the SPI is the first payload word
  sim::FrameSpec s;
  s.protocol = 50;
  s.l3 = sim::L3Kind::kIpv4;
  s.payload_len = 16;
  return s;
}

std::vector<Bytes> ProbeFrames() {
  std::vector<Bytes> frames = {sim::BuildFrame(Ipv4Tcp()), sim::BuildFrame(Ipv6Udp()),
                               sim::BuildFrame(Ipv4Fragment()), sim::BuildFrame(Esp())};
  auto tunnel = [&](sim::TunnelSpec t, sim::FrameSpec inner = Ipv4Tcp()) {
    sim::TunnelFrameSpec f;
    f.outer.ipv4_src = *hw::Ipv4Address::Parse("192.0.2.1");
    f.outer.ipv4_dst = *hw::Ipv4Address::Parse("192.0.2.2");
    f.outer.sport = 999;
    f.tunnel = std::move(t);
    f.inner = std::move(inner);
    frames.push_back(sim::BuildFrame(f));
  };
  sim::TunnelSpec vxlan;
  vxlan.kind = sim::Encap::kVxlan;
  vxlan.vni = 0x123456;
  tunnel(vxlan);
  tunnel(vxlan, Ipv6Udp());
  tunnel(vxlan, Ipv4Fragment());
  tunnel(vxlan, Esp());
  sim::FrameSpec inner_mpls;  // MPLS inside the inner Ethernet frame: a second tunnel level
  inner_mpls.l3 = sim::L3Kind::kNone;
  inner_mpls.ethertype = 0x8847;
  inner_mpls.payload_len = 16;
  tunnel(vxlan, inner_mpls);
  sim::TunnelSpec geneve;
  geneve.kind = sim::Encap::kGeneve;
  geneve.vni = 0x654321;
  geneve.geneve_oam = true;
  geneve.geneve_options = {{kOptionClass, kOptionType, {0xdeadbeef}}};
  tunnel(geneve);
  sim::TunnelSpec gre;
  gre.kind = sim::Encap::kGre;
  gre.gre_protocol = 0x6558;
  gre.gre_key_present = true;
  gre.gre_key = 0x12345678;
  tunnel(gre);
  const sim::MplsLabel label{0x12345, 5, 33};
  for (sim::Encap kind : {sim::Encap::kMpls, sim::Encap::kMplsOverUdp, sim::Encap::kGre}) {
    sim::TunnelSpec mpls;
    mpls.kind = kind;
    mpls.gre_protocol = 0x8847;
    mpls.mpls = {label};
    sim::FrameSpec inner = Ipv4Tcp();
    inner.vlans.clear();
    tunnel(mpls, inner);
  }
  sim::TunnelSpec roce;
  roce.kind = sim::Encap::kRoceV2;
  roce.bth_dst_qp = 0xabcdef;
  tunnel(roce);
  return frames;
}

// A frame as the NIC parses it from the wire (source port 0xffff), with the probe's GENEVE option
// configured as option 0.
hw::HeaderVector Parse(const Bytes& frame) {
  hw::HeaderVector hv;
  sim::ParsePacket(frame.data(), frame.size(), 0xffff, &hv,
                   sim::GeneveOptionSelector::For(kOptionClass, kOptionType));
  return hv;
}

// ---- The fixture: a NIC with a VF; NIC_RX steers each frame from the root to a table of tries ----

class CapabilityPagesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_ = drsim_open(1);
    ASSERT_NE(ctx_, nullptr);
    for (const Pipe& p : kPipes) {
      domains_.push_back(mlx5dv_dr_domain_create(ctx_, p.domain));
      ASSERT_NE(domains_.back(), nullptr) << drsim_last_error();
    }
    qp_ = drsim_create_qp(ctx_, 0);
    ASSERT_NE(qp_, nullptr);
    counters_ = drsim_counter_alloc(ctx_, 1);
    ASSERT_NE(counters_, nullptr);
  }
  void TearDown() override {
    for (mlx5dv_dr_domain* d : domains_) EXPECT_EQ(mlx5dv_dr_domain_destroy(d), 0);
    EXPECT_EQ(mlx5dv_devx_obj_destroy(counters_), 0);
    EXPECT_EQ(drsim_destroy_qp(qp_), 0);
    EXPECT_EQ(drsim_close(ctx_), 0) << drsim_last_error();
  }

  mlx5dv_dr_domain* domain(mlx5dv_dr_domain_type type) const { return domains_[type]; }

  // Tables, matchers, rules and actions of one try, destroyed newest first, each kind after the one
  // that refers to it.
  struct Scope {
    std::vector<mlx5dv_dr_rule*> rules;
    std::vector<mlx5dv_dr_matcher*> matchers;
    std::vector<mlx5dv_dr_action*> actions;
    std::vector<mlx5dv_dr_table*> tables;
    ~Scope() {
      for (auto it = rules.rbegin(); it != rules.rend(); ++it) EXPECT_EQ(mlx5dv_dr_rule_destroy(*it), 0);
      for (auto it = matchers.rbegin(); it != matchers.rend(); ++it)
        EXPECT_EQ(mlx5dv_dr_matcher_destroy(*it), 0);
      for (auto it = actions.rbegin(); it != actions.rend(); ++it)
        EXPECT_EQ(mlx5dv_dr_action_destroy(*it), 0);
      for (auto it = tables.rbegin(); it != tables.rend(); ++it) EXPECT_EQ(mlx5dv_dr_table_destroy(*it), 0);
    }
    mlx5dv_dr_table* Table(mlx5dv_dr_domain* d, uint32_t level) {
      mlx5dv_dr_table* t = mlx5dv_dr_table_create(d, level);
      EXPECT_NE(t, nullptr) << drsim_last_error();
      if (t) tables.push_back(t);
      return t;
    }
    mlx5dv_dr_matcher* Matcher(mlx5dv_dr_table* t, MatchParams mask) {
      mlx5dv_dr_matcher* m = mlx5dv_dr_matcher_create(t, 0, mask.criteria(), mask.get());
      if (m) matchers.push_back(m);
      return m;
    }
    mlx5dv_dr_action* Action(mlx5dv_dr_action* a) {
      if (a) actions.push_back(a);
      return a;
    }
    mlx5dv_dr_rule* Rule(mlx5dv_dr_matcher* m, MatchParams value, std::vector<mlx5dv_dr_action*> list) {
      mlx5dv_dr_rule* r = mlx5dv_dr_rule_create(m, value.get(), list.size(), list.data());
      if (r) rules.push_back(r);
      return r;
    }
  };

  // In `s`: the root of `d` sends every frame to a new level-1 table, which it returns.
  mlx5dv_dr_table* Level1(Scope& s, mlx5dv_dr_domain* d) {
    mlx5dv_dr_table* root = s.Table(d, 0);
    mlx5dv_dr_table* t1 = s.Table(d, 1);
    mlx5dv_dr_matcher* all = s.Matcher(root, MatchParams());
    EXPECT_NE(s.Rule(all, MatchParams(), {s.Action(mlx5dv_dr_action_create_dest_table(t1))}), nullptr);
    return t1;
  }

  int Delivered(const Bytes& frame) {
    EXPECT_EQ(drsim_send(ctx_, -1, frame.data(), frame.size()), 0) << drsim_last_error();
    Bytes buf(4096);
    int n = 0;
    while (drsim_recv_qp(qp_, buf.data(), buf.size(), nullptr) > 0) ++n;
    return n;
  }
  uint64_t Counted() {
    uint64_t packets = 0, bytes = 0;
    EXPECT_EQ(drsim_counter_query(counters_, 0, &packets, &bytes), 0);
    return packets;
  }

  // Whether a NIC_RX rule on `value` under `mask` catches `frame`, and misses what differs in `field`:
  // `frame` once the field's lowest set bit is cleared in the value, or, for ip_version (whose value
  // must equal its mask), `other`, a frame of the other IP version.
  bool RxRuleCatches(MatchParams mask, const MatchParams& value, Field field, const Bytes& frame,
                     const Bytes& other) {
    Scope s;
    mlx5dv_dr_matcher* m = s.Matcher(Level1(s, domain(MLX5DV_DR_DOMAIN_TYPE_NIC_RX)), mask);
    mlx5dv_dr_action* to_qp = s.Action(mlx5dv_dr_action_create_dest_ibv_qp(qp_));
    if (m == nullptr || s.Rule(m, value, {to_qp}) == nullptr) return false;
    const bool caught = Delivered(frame) == 1;
    if (IsIpVersion(field)) return caught && Delivered(other) == 0;
    EXPECT_EQ(mlx5dv_dr_rule_destroy(s.rules.back()), 0);
    s.rules.pop_back();
    MatchParams flipped = value;
    const uint32_t v = hw::GetField(value.bytes(), field);
    hw::SetField(flipped.bytes(), field, v & (v - 1));
    EXPECT_NE(s.Rule(m, flipped, {to_qp}), nullptr) << drsim_last_error();
    return caught && Delivered(frame) == 0;
  }

  // Whether metadata_reg_a, set by NIC_TX (a modify header), is matched by a later NIC_TX table.
  bool RegAWrittenOnTxIsMatched() {
    Scope s;
    mlx5dv_dr_domain* tx = domain(MLX5DV_DR_DOMAIN_TYPE_NIC_TX);
    mlx5dv_dr_table* t1 = Level1(s, tx);
    mlx5dv_dr_table* t2 = s.Table(tx, 2);
    __be64 set = hw::ModifySetWord(hw::ModifyField::kMetadataRegA, 0, 32, 0x5a5a0001);
    mlx5dv_dr_action* modify = s.Action(mlx5dv_dr_action_create_modify_header(tx, 0, sizeof set, &set));
    if (modify == nullptr || s.Rule(s.Matcher(t1, MatchParams()), MatchParams(),
                                    {modify, s.Action(mlx5dv_dr_action_create_dest_table(t2))}) == nullptr) {
      return false;
    }
    MatchParams mask, value;
    hw::SetFieldAllOnes(mask.bytes(), Field::kMetadataRegA);
    hw::SetField(value.bytes(), Field::kMetadataRegA, 0x5a5a0001);
    mlx5dv_dr_matcher* m = s.Matcher(t2, mask);
    if (m == nullptr ||
        s.Rule(m, value, {s.Action(mlx5dv_dr_action_create_flow_counter(counters_, 0))}) == nullptr) {
      return false;
    }
    const uint64_t before = Counted();
    const Bytes frame = sim::BuildFrame(Ipv4Tcp());
    EXPECT_EQ(drsim_send(ctx_, 0, frame.data(), frame.size()), 0) << drsim_last_error();
    return Counted() == before + 1;
  }

  ibv_context* ctx_ = nullptr;
  std::vector<mlx5dv_dr_domain*> domains_;  // indexed by mlx5dv_dr_domain_type
  ibv_qp* qp_ = nullptr;
  mlx5dv_devx_obj* counters_ = nullptr;
};

// ---- ft_field_support ----

// The mask and value of a rule on those of a bit's fields that `hv` has (an IPv4 address is the low word
// of sip), with the values of `hv`, the fields it needs beside them, and the stack's ip_version when it
// has one.
void RuleOn(const FieldBit& b, const hw::HeaderVector& hv, MatchParams* mask, MatchParams* value) {
  std::vector<Field> fields = b.with;
  for (Field f : b.fields) {
    if (hw::GetField(hv.bytes, f) != 0) fields.push_back(f);
  }
  fields.push_back(b.stack == Headers::kOuter ? Field::kOuterIpVersion : Field::kInnerIpVersion);
  for (Field f : fields) {
    const uint32_t v = hw::GetField(hv.bytes, f);
    if (v == 0 && IsIpVersion(f)) continue;
    // DR takes an ip_version mask of the version itself (4 or 6), as rdma-core's tests write it.
    if (IsIpVersion(f)) {
      hw::SetField(mask->bytes(), f, v);
    } else {
      hw::SetFieldAllOnes(mask->bytes(), f);
    }
    hw::SetField(value->bytes(), f, v);
  }
}

TEST_F(CapabilityPagesTest, FieldSupportBitsAreTheFieldsRulesMatch) {
  // The GENEVE option the probe carries is option 0, as a program configures it (a GENEVE TLV option
  // object: option_class at byte 28, option_type at 30, option_data_length at 31).
  mlx5dv_devx_obj* option = CreateObject(ctx_, 0x0b, 0, [](Bytes& in) {
    in[28] = kOptionClass >> 8;
    in[29] = kOptionClass & 0xff;
    in[30] = kOptionType;
    in[31] = 1;
  });
  ASSERT_NE(option, nullptr) << drsim_last_error();
  const std::vector<Bytes> probes = ProbeFrames();
  std::vector<hw::HeaderVector> parsed;
  for (const Bytes& f : probes) parsed.push_back(Parse(f));
  const Bytes nic = CapPage(ctx_, 7), fdb = CapPage(ctx_, 8);
  const bool reg_a_works = RegAWrittenOnTxIsMatched();

  std::vector<bool> listed(0x80);
  for (const FieldBit& b : FieldBits()) {
    listed[b.bit] = true;
    SCOPED_TRACE(std::string(b.name) + (b.stack == Headers::kInner && b.bit < 0x37 ? " (inner)" : ""));
    // The first probe with a nonzero value in one of the bit's fields, and that field.
    int probe = -1;
    Field field = Field::kOuterIpVersion;
    for (size_t i = 0; i < parsed.size() && probe < 0 && b.kind == Kind::kHeader; ++i) {
      for (Field f : b.fields) {
        if (probe < 0 && hw::GetField(parsed[i].bytes, f) != 0) {
          probe = static_cast<int>(i);
          field = f;
        }
      }
    }
    bool rx = false;
    MatchParams mask, value;
    if (probe >= 0) {
      RuleOn(b, parsed[probe], &mask, &value);
      // For ip_version: the first probe of another version.
      size_t other = 0;
      while (other + 1 < parsed.size() &&
             (hw::GetField(parsed[other].bytes, field) == hw::GetField(parsed[probe].bytes, field) ||
              hw::GetField(parsed[other].bytes, field) == 0)) {
        ++other;
      }
      rx = RxRuleCatches(mask, value, field, probes[probe], probes[other]);
    } else if (b.kind == Kind::kMetadata) {
      for (Field f : b.fields) hw::SetFieldAllOnes(mask.bytes(), f);
    }
    for (const Pipe& p : kPipes) {
      SCOPED_TRACE(p.name);
      const Bytes& page = p.page_type == 7 ? nic : fdb;
      // Header fields are tried on NIC_RX; the other pipes parse alike and need their matcher to take the
      // mask. Metadata needs the matcher to take the mask; reg_a is tried on NIC_TX, source_sqn is the
      // sending queue's number.
      bool supported = false;
      if (b.kind == Kind::kHeader) supported = rx;
      if (b.kind == Kind::kMetadata) supported = b.bit != 0x3f || reg_a_works;
      if (supported && (p.domain != MLX5DV_DR_DOMAIN_TYPE_NIC_RX || b.kind == Kind::kMetadata)) {
        Scope s;
        supported = s.Matcher(s.Table(domain(p.domain), 1), mask) != nullptr;
      }
      EXPECT_EQ(Bit(page, p.properties + kFieldSupport + b.bit), supported);
      EXPECT_EQ(Bit(page, p.properties + kFieldBitmaskSupport + b.bit), supported);
    }
  }
  // Bits mlx5_ifc.h reserves read 0.
  for (uint32_t bit = 0; bit < 0x80; ++bit) {
    if (listed[bit]) continue;
    for (const Pipe& p : kPipes) {
      const Bytes& page = p.page_type == 7 ? nic : fdb;
      EXPECT_FALSE(Bit(page, p.properties + kFieldSupport + bit))
          << p.name << " reserved bit 0x" << std::hex << bit;
      EXPECT_FALSE(Bit(page, p.properties + kFieldBitmaskSupport + bit))
          << p.name << " reserved bit 0x" << std::hex << bit;
    }
  }
  EXPECT_EQ(mlx5dv_devx_obj_destroy(option), 0);
}

// ---- Flow table properties ----

// flow_table_prop_layout, from the start of one layout.
enum Property : uint32_t {
  kFtSupport = 0x00,
  kFlowTag = 0x01,
  kFlowCounter = 0x02,
  kFlowModifyEn = 0x03,
  kReformat = 0x07,
  kDecap = 0x08,
  kPopVlan = 0x0a,
  kPushVlan = 0x0b,
  kPopVlan2 = 0x0d,
  kPushVlan2 = 0x0e,
  kReformatAndVlanAction = 0x0f,
  kModifyAndVlanAction = 0x10,
  kReformatL3TunnelToL2 = 0x12,
  kReformatL2ToL3Tunnel = 0x13,
  kReformatAndModifyAction = 0x14,
};

enum class Act { kTag, kCounter, kModify, kDecapL2, kDecapL3, kEncapL2, kEncapL3, kPushVlan, kPopVlan };

// What each property names, as action lists a rule may hold; the property is supported when the domain
// takes a rule with one of them. `reformat` is any packet reformat: NIC_RX's are the decapsulations
// (mlx5_ib's fs.c makes NIC RX tables with TUNNEL_EN_REFORMAT for L3 decap), NIC_TX's the encapsulations.
struct PropertyTries {
  Property bit;
  const char* name;
  std::vector<std::vector<Act>> tries;
};
const std::vector<PropertyTries>& Properties() {
  static const auto* properties = new std::vector<PropertyTries>{
      {kFlowTag, "flow_tag", {{Act::kTag}}},
      {kFlowCounter, "flow_counter", {{Act::kCounter}}},
      {kFlowModifyEn, "flow_modify_en", {{Act::kModify}}},
      {kReformat, "reformat", {{Act::kDecapL2}, {Act::kDecapL3}, {Act::kEncapL2}, {Act::kEncapL3}}},
      {kDecap, "decap", {{Act::kDecapL2}}},
      {kPopVlan, "pop_vlan", {{Act::kPopVlan}}},
      {kPushVlan, "push_vlan", {{Act::kPushVlan}}},
      {kPopVlan2, "pop_vlan_2", {{Act::kPopVlan, Act::kPopVlan}}},
      {kPushVlan2, "push_vlan_2", {{Act::kPushVlan, Act::kPushVlan}}},
      {kReformatAndVlanAction,
       "reformat_and_vlan_action",
       {{Act::kDecapL2, Act::kPopVlan}, {Act::kDecapL2, Act::kPushVlan}, {Act::kPushVlan, Act::kEncapL2}}},
      {kModifyAndVlanAction,
       "modify_and_vlan_action",
       {{Act::kModify, Act::kPushVlan}, {Act::kPopVlan, Act::kModify}}},
      {kReformatL3TunnelToL2, "reformat_l3_tunnel_to_l2", {{Act::kDecapL3}}},
      {kReformatL2ToL3Tunnel, "reformat_l2_to_l3_tunnel", {{Act::kEncapL3}}},
      {kReformatAndModifyAction,
       "reformat_and_modify_action",
       {{Act::kDecapL2, Act::kModify}, {Act::kModify, Act::kEncapL2}}},
  };
  return *properties;
}

TEST_F(CapabilityPagesTest, TablePropertiesAreTheActionsEachDomainTakes) {
  const Bytes nic = CapPage(ctx_, 7), fdb = CapPage(ctx_, 8);
  // VXLAN over IPv4 (L2 tunnel, 50 bytes) and its L3 part (36 bytes); a new L2 header for L3 decap.
  sim::TunnelFrameSpec vxlan;
  vxlan.tunnel.kind = sim::Encap::kVxlan;
  vxlan.tunnel.vni = 7;
  Bytes l2_tunnel = sim::BuildFrame(vxlan);
  l2_tunnel.resize(50);
  Bytes l3_tunnel(l2_tunnel.begin() + 14, l2_tunnel.end());
  Bytes l2_header(l2_tunnel.begin(), l2_tunnel.begin() + 14);
  const uint64_t set_ttl = hw::ModifySetWord(hw::ModifyField::kIpTtl, 0, 8, 9);

  for (const Pipe& p : kPipes) {
    SCOPED_TRACE(p.name);
    const Bytes& page = p.page_type == 7 ? nic : fdb;
    mlx5dv_dr_domain* d = domain(p.domain);
    auto make = [&](Act a) -> mlx5dv_dr_action* {
      __be64 modify = set_ttl;
      switch (a) {
        case Act::kTag:
          return mlx5dv_dr_action_create_tag(0x1234);
        case Act::kCounter:
          return mlx5dv_dr_action_create_flow_counter(counters_, 0);
        case Act::kModify:
          return mlx5dv_dr_action_create_modify_header(d, 0, sizeof modify, &modify);
        case Act::kDecapL2:
          return mlx5dv_dr_action_create_packet_reformat(
              d, 0, MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TUNNEL_TO_L2, 0, nullptr);
        case Act::kDecapL3:
          return mlx5dv_dr_action_create_packet_reformat(
              d, 0, MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L3_TUNNEL_TO_L2, l2_header.size(),
              l2_header.data());
        case Act::kEncapL2:
          return mlx5dv_dr_action_create_packet_reformat(
              d, 0, MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TO_L2_TUNNEL, l2_tunnel.size(),
              l2_tunnel.data());
        case Act::kEncapL3:
          return mlx5dv_dr_action_create_packet_reformat(
              d, 0, MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TO_L3_TUNNEL, l3_tunnel.size(),
              l3_tunnel.data());
        case Act::kPushVlan:
          return mlx5dv_dr_action_create_push_vlan(d, htonl(0x81000123));
        case Act::kPopVlan:
          return mlx5dv_dr_action_create_pop_vlan();
      }
      return nullptr;
    };
    {
      Scope s;
      EXPECT_EQ(Bit(page, p.properties + kFtSupport), s.Table(d, 1) != nullptr);
    }
    for (const PropertyTries& prop : Properties()) {
      SCOPED_TRACE(prop.name);
      bool supported = false;
      for (const std::vector<Act>& list : prop.tries) {
        Scope s;
        std::vector<mlx5dv_dr_action*> actions;
        for (Act a : list) actions.push_back(s.Action(make(a)));
        if (std::count(actions.begin(), actions.end(), nullptr) != 0) continue;
        if (p.domain != MLX5DV_DR_DOMAIN_TYPE_FDB) {
          mlx5dv_dr_matcher* all = s.Matcher(s.Table(d, 1), MatchParams());
          supported = supported || s.Rule(all, MatchParams(), actions) != nullptr;
          continue;
        }
        // An FDB rule runs on the pipes its source allows (rdma-core's dr_rule_skip): one from the wire
        // runs on the RX pipe alone, which decapsulates; one from a vport on the TX pipe, which
        // encapsulates.
        mlx5dv_dr_matcher* by_source =
            s.Matcher(s.Table(d, 1), *hw::MatchBuilder().SourcePort(0xffff).Build());
        for (uint32_t source : {0xffffu, 0u}) {
          supported = supported ||
                      s.Rule(by_source, *hw::MatchBuilder().SourcePort(source).Build(), actions) != nullptr;
        }
      }
      EXPECT_EQ(Bit(page, p.properties + prop.bit), supported);
    }
  }
}

// ---- QoS ----

// qos_cap (DPDK's mlx5_prm.h; rdma-core's tests read flow_meter_reg_id at the same place).
constexpr size_t kFlowMeterOld = 0x07, kFlowMeterRegId = 0x18, kFlowMeter = 0x28;
constexpr size_t kLogMeterAsoGranularity = 0x123, kLogMeterAsoMaxAlloc = 0x12b;

uint32_t Bits(const Bytes& page, size_t bit, size_t width) {
  uint32_t v = 0;
  for (size_t i = 0; i < width; ++i) v = v << 1 | Bit(page, bit + i);
  return v;
}

// A flow meter colours reg_c `reg` (its low byte; the PRM's colours: 0 red, 1 yellow, 2 green) and
// leaves the other 24 bits alone, so a program may keep a meter id beside the colour (DPDK's
// mtr_reg_share, which it takes from qos_cap.flow_meter). Each meter here starts green with a full bucket.
TEST_F(CapabilityPagesTest, QosPageIsWhatMetersDo) {
  const Bytes qos = CapPage(ctx_, 0xc);
  const Bytes prm = tests::MeterPrm();
  mlx5dv_dr_domain* rx = domain(MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
  const Bytes frame = sim::BuildFrame(Ipv4Tcp());
  mlx5dv_devx_obj* aso =
      CreateObject(ctx_, 0x24, 0, [&](Bytes& in) { std::copy(prm.begin(), prm.end(), in.begin() + 80); });
  ASSERT_NE(aso, nullptr) << drsim_last_error();

  // Whether a meter colouring reg_c `reg`, after a modify header put `high` in its upper 24 bits, leaves
  // green and `high` there: `legacy` is mlx5dv_dr_action_create_flow_meter's, else the ASO object's.
  auto colours = [&](bool legacy, uint8_t reg, uint32_t high) {
    Scope s;
    mlx5dv_dr_table* t1 = Level1(s, rx);
    mlx5dv_dr_table* t2 = s.Table(rx, 2);
    std::vector<mlx5dv_dr_action*> actions;
    if (high != 0) {
      __be64 set = hw::ModifySetWord(
          static_cast<hw::ModifyField>(static_cast<uint16_t>(hw::ModifyField::kMetadataRegC0) + reg), 0, 32,
          high << 8);
      actions.push_back(s.Action(mlx5dv_dr_action_create_modify_header(rx, 0, sizeof set, &set)));
    }
    if (legacy) {
      mlx5dv_dr_flow_meter_attr attr = {t2, 1, reg, prm.size(), const_cast<uint8_t*>(prm.data())};
      actions.push_back(s.Action(mlx5dv_dr_action_create_flow_meter(&attr)));
    } else {
      actions.push_back(s.Action(
          mlx5dv_dr_action_create_aso(rx, aso, 0, MLX5DV_DR_ACTION_FLAGS_ASO_FLOW_METER_GREEN, reg)));
      actions.push_back(s.Action(mlx5dv_dr_action_create_dest_table(t2)));
    }
    if (std::count(actions.begin(), actions.end(), nullptr) != 0) return false;
    if (s.Rule(s.Matcher(t1, MatchParams()), MatchParams(), actions) == nullptr) return false;
    MatchParams mask, value;
    const Field reg_field = static_cast<Field>(static_cast<int>(Field::kMetadataRegC0) - reg);  // c_7 .. c_0
    hw::SetFieldAllOnes(mask.bytes(), reg_field);
    hw::SetField(value.bytes(), reg_field, high << 8 | 2);
    mlx5dv_dr_matcher* m = s.Matcher(t2, mask);
    EXPECT_NE(m, nullptr) << drsim_last_error();
    EXPECT_NE(s.Rule(m, value, {s.Action(mlx5dv_dr_action_create_dest_ibv_qp(qp_))}), nullptr);
    return Delivered(frame) == 1;
  };
  // flow_meter_reg_id: the registers both kinds of meter colour (DPDK takes its ASO register from it,
  // rdma-core's test_flow_meter its legacy meter's reg_c_index).
  uint32_t reg_ids = 0;
  for (uint8_t reg = 0; reg < 8; ++reg) {
    if (colours(true, reg, 0) && colours(false, reg, 0)) reg_ids |= 1u << reg;
  }
  // Sharing, tried on each of those registers a modify header writes (reg_c_0 to reg_c_5).
  bool shares = reg_ids != 0;
  for (uint8_t reg = 0; reg < 6; ++reg) {
    if (reg_ids & (1u << reg))
      shares = shares && colours(true, reg, 0xabcdef) && colours(false, reg, 0xabcdef);
  }
  EXPECT_EQ(Bits(qos, kFlowMeterRegId, 8), reg_ids);
  EXPECT_EQ(Bit(qos, kFlowMeterOld), reg_ids != 0);  // srTCM/trTCM meters (DPDK: flow_meter_old)
  EXPECT_EQ(Bit(qos, kFlowMeter), shares);

  // ASO meter objects: 2^log_obj_range lines, from 2^granularity to 2^max_alloc.
  const uint32_t granularity = Bits(qos, kLogMeterAsoGranularity, 5);
  const uint32_t max_alloc = Bits(qos, kLogMeterAsoMaxAlloc, 5);
  for (uint32_t log = granularity; log <= max_alloc + 1; ++log) {
    SCOPED_TRACE(log);
    mlx5dv_devx_obj* o = CreateObject(ctx_, 0x24, static_cast<uint8_t>(log));
    EXPECT_EQ(o != nullptr, log <= max_alloc) << drsim_last_error();
    if (o != nullptr) {
      EXPECT_EQ(mlx5dv_devx_obj_destroy(o), 0);
    }
  }
  EXPECT_EQ(mlx5dv_devx_obj_destroy(aso), 0);
}

}  // namespace
}  // namespace drsim
