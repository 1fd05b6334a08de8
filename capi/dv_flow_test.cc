// DV flows (mlx5dv_create_flow_matcher, mlx5dv_create_flow and the flow actions of <infiniband/mlx5dv.h>)
// steering frames on the software NIC: what rdma-core's tests/test_mlx5_flow.py does, exactly as it calls
// it; QPs, TIRs, tags, drops, DEVX counters, default miss, priorities and the multicast priority; the same
// kernel tables as verbs flows; encap on NIC_TX, decap and modify header on NIC_RX; lifetimes through
// ibv_destroy_flow, ibv_destroy_flow_action and mlx5dv_destroy_flow_matcher; and bad input.
#include <arpa/inet.h>
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "capi/verbs_test_support.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hw/match_layout.h"
#include "hw/match_params.h"
#include "hw/modify_header.h"
#include "sim/frame_builder.h"

namespace drsim::capi::testing {
namespace {

using hw::Field;
using hw::kOuter;
using hw::MatchBuilder;
using ::testing::HasSubstr;

// tests/test_mlx5_flow.py's MAX_MATCH_PARAM_SIZE, and utils.MatchCriteriaEnable.
constexpr size_t kMaxMatchParamSize = 0x180;
constexpr uint8_t kCriteriaNone = 0;
constexpr uint8_t kCriteriaOuter = 1;

// A struct mlx5dv_flow_match_parameters holding exactly `bytes` (as pyverbs' Mlx5FlowMatchParameters).
class Params {
 public:
  explicit Params(const std::vector<uint8_t>& bytes)
      : storage_(1 + (bytes.size() + sizeof(uint64_t) - 1) / sizeof(uint64_t)) {
    get()->match_sz = bytes.size();
    if (!bytes.empty()) std::memcpy(get()->match_buf, bytes.data(), bytes.size());
  }
  // The 448 bytes of a built mask or value.
  explicit Params(const hw::MatchParams& m)
      : Params(std::vector<uint8_t>(m.bytes(), m.bytes() + hw::kMatchParamBytes)) {}
  mlx5dv_flow_match_parameters* get() {
    return reinterpret_cast<mlx5dv_flow_match_parameters*>(storage_.data());
  }

 private:
  std::vector<uint64_t> storage_;
};

Params Zeros(size_t n) { return Params(std::vector<uint8_t>(n)); }

// PacketConsts.SRC_MAC, where the outer source MAC lies in the layout (bytes 0..5).
const std::vector<uint8_t> kSrcMac = {0x24, 0x8a, 0x07, 0xa5, 0x28, 0xc8};

mlx5dv_flow_action_attr Action(unsigned type) {
  mlx5dv_flow_action_attr a;
  std::memset(&a, 0, sizeof a);
  std::memcpy(&a.type, &type, sizeof type);  // C lets any value through
  return a;
}
mlx5dv_flow_action_attr ToQp(ibv_qp* qp) {
  mlx5dv_flow_action_attr a = Action(MLX5DV_FLOW_ACTION_DEST_IBV_QP);
  a.qp = qp;
  return a;
}
mlx5dv_flow_action_attr Tag(uint32_t tag) {
  mlx5dv_flow_action_attr a = Action(MLX5DV_FLOW_ACTION_TAG);
  a.tag_value = tag;
  return a;
}
mlx5dv_flow_action_attr Devx(unsigned type, mlx5dv_devx_obj* obj) {
  mlx5dv_flow_action_attr a = Action(type);
  a.obj = obj;
  return a;
}
mlx5dv_flow_action_attr Rewrite(ibv_flow_action* action) {
  mlx5dv_flow_action_attr a = Action(MLX5DV_FLOW_ACTION_IBV_FLOW_ACTION);
  a.action = action;
  return a;
}

// An IPv4/UDP mask on the destination port, and a value for `dport`.
Params UdpMask() { return Params(*MatchBuilder().IpVersion(kOuter, 4).UdpDport(kOuter, 0xffff).Build()); }
Params UdpValue(uint16_t dport) {
  return Params(*MatchBuilder().IpVersion(kOuter, 4).UdpDport(kOuter, dport).Build());
}

// The RFC 1071 checksum of an IPv4 header.
uint16_t Ipv4Checksum(const uint8_t* header, size_t len) {
  uint32_t sum = 0;
  for (size_t i = 0; i < len; i += 2) sum += header[i] << 8 | header[i + 1];
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

// tests/utils.py's gen_outer_headers for an inner frame of `inner_len` bytes: Ethernet, IPv4 (DF, TTL 64,
// identification and checksum 0), UDP to 4789 (checksum 0) and VXLAN VNI 7777777.
std::vector<uint8_t> OuterHeaders(size_t inner_len) {
  std::vector<uint8_t> h = {0x01, 0x50, 0x56, 0x19, 0x20, 0xa7, 0x24,
                            0x8a, 0x07, 0xa5, 0x28, 0xc8, 0x08, 0x00};
  const size_t ip_len = inner_len + 8 + 20 + 8, udp_len = inner_len + 8 + 8;
  const std::vector<uint8_t> ip = {
      0x45, 0, uint8_t(ip_len >> 8), uint8_t(ip_len), 0, 0, 0x40, 0, 64, 17, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2};
  h.insert(h.end(), ip.begin(), ip.end());
  const std::vector<uint8_t> udp = {0x04, 0xd2, 0x12, 0xb5, uint8_t(udp_len >> 8), uint8_t(udp_len), 0, 0};
  h.insert(h.end(), udp.begin(), udp.end());
  const uint32_t vni = 7777777;
  const std::vector<uint8_t> vxlan = {0x08, 0, 0, 0, uint8_t(vni >> 16), uint8_t(vni >> 8), uint8_t(vni), 0};
  h.insert(h.end(), vxlan.begin(), vxlan.end());
  return h;
}

class DvFlowTest : public VerbsTest {
 protected:
  ~DvFlowTest() override {
    for (auto it = dv_flows_.rbegin(); it != dv_flows_.rend(); ++it) EXPECT_EQ(ibv_destroy_flow(*it), 0);
    for (ibv_flow_action* a : actions_) EXPECT_EQ(ibv_destroy_flow_action(a), 0);
    for (mlx5dv_flow_matcher* m : matchers_) EXPECT_EQ(mlx5dv_destroy_flow_matcher(m), 0);
    for (mlx5dv_devx_obj* o : devx_) EXPECT_EQ(mlx5dv_devx_obj_destroy(o), 0);
  }

  static mlx5dv_flow_matcher_attr Attr(Params& mask, uint8_t criteria, uint16_t priority = 0,
                                       uint32_t flags = 0) {
    mlx5dv_flow_matcher_attr attr;
    std::memset(&attr, 0, sizeof attr);
    attr.type = IBV_FLOW_ATTR_NORMAL;
    attr.flags = flags;
    attr.priority = priority;
    attr.match_criteria_enable = criteria;
    attr.match_mask = mask.get();
    return attr;
  }
  // A matcher expected to be made (on `ctx`, the PF's by default); kept for the teardown.
  mlx5dv_flow_matcher* Matcher(mlx5dv_flow_matcher_attr attr, ibv_context* ctx = nullptr) {
    mlx5dv_flow_matcher* m = mlx5dv_create_flow_matcher(ctx != nullptr ? ctx : ctx_, &attr);
    EXPECT_NE(m, nullptr) << drsim_last_error();
    if (m != nullptr) matchers_.push_back(m);
    return m;
  }
  mlx5dv_flow_matcher* Matcher(Params mask, uint8_t criteria, uint16_t priority = 0, uint32_t flags = 0) {
    return Matcher(Attr(mask, criteria, priority, flags));
  }
  // A matcher of ft_type `ft` (MLX5DV_FLOW_MATCHER_MASK_FT_TYPE).
  mlx5dv_flow_matcher* TableMatcher(Params mask, uint8_t criteria, unsigned ft) {
    mlx5dv_flow_matcher_attr attr = Attr(mask, criteria);
    attr.comp_mask = MLX5DV_FLOW_MATCHER_MASK_FT_TYPE;
    std::memcpy(&attr.ft_type, &ft, sizeof ft);
    return Matcher(attr);
  }
  // The errno of a matcher expected to fail, with drsim_last_error() in *message.
  int MatcherError(mlx5dv_flow_matcher_attr* attr, std::string* message = nullptr) {
    errno = 0;
    mlx5dv_flow_matcher* m = mlx5dv_create_flow_matcher(ctx_, attr);
    EXPECT_EQ(m, nullptr);
    if (m != nullptr) matchers_.push_back(m);
    if (message != nullptr) *message = drsim_last_error();
    return errno;
  }
  // A flow expected to be made; kept for the teardown.
  ibv_flow* DvFlow(mlx5dv_flow_matcher* m, Params value, std::vector<mlx5dv_flow_action_attr> actions) {
    ibv_flow* f = mlx5dv_create_flow(m, value.get(), actions.size(), actions.data());
    EXPECT_NE(f, nullptr) << drsim_last_error();
    if (f != nullptr) dv_flows_.push_back(f);
    return f;
  }
  int FlowError(mlx5dv_flow_matcher* m, Params value, std::vector<mlx5dv_flow_action_attr> actions,
                std::string* message = nullptr) {
    errno = 0;
    ibv_flow* f = mlx5dv_create_flow(m, value.get(), actions.size(), actions.data());
    EXPECT_EQ(f, nullptr);
    if (f != nullptr) dv_flows_.push_back(f);
    if (message != nullptr) *message = drsim_last_error();
    return errno;
  }
  void DestroyDvFlow(ibv_flow* f) {
    EXPECT_EQ(ibv_destroy_flow(f), 0) << drsim_last_error();
    dv_flows_.erase(std::find(dv_flows_.begin(), dv_flows_.end(), f));
  }
  ibv_flow_action* Keep(ibv_flow_action* a) {
    EXPECT_NE(a, nullptr) << drsim_last_error();
    if (a != nullptr) actions_.push_back(a);
    return a;
  }
  mlx5dv_devx_obj* KeepDevx(mlx5dv_devx_obj* o) {
    EXPECT_NE(o, nullptr) << drsim_last_error();
    if (o != nullptr) devx_.push_back(o);
    return o;
  }
  // The next frame that left by the wire.
  std::optional<std::vector<uint8_t>> FromWire() {
    std::vector<uint8_t> buf(2048);
    const int n = drsim_recv_port(ctx_, -1, buf.data(), buf.size());
    if (n <= 0) return std::nullopt;
    buf.resize(n);
    return buf;
  }

  std::vector<mlx5dv_flow_matcher*> matchers_;
  std::vector<ibv_flow*> dv_flows_;
  std::vector<ibv_flow_action*> actions_;
  std::vector<mlx5dv_devx_obj*> devx_;
};

using V = std::vector<int>;

// ---- rdma-core's tests/test_mlx5_flow.py, called as it calls them ----

TEST_F(DvFlowTest, RdmaCoreCreateEmptyMatcher) { Matcher(Zeros(kMaxMatchParamSize), kCriteriaNone); }

TEST_F(DvFlowTest, RdmaCoreCreateSmacMatcher) {
  Matcher(Params(std::vector<uint8_t>(6, 0xff)), kCriteriaOuter);
}

TEST_F(DvFlowTest, RdmaCoreSmacMatcherToQpFlow) {
  mlx5dv_flow_matcher* m = Matcher(Params(std::vector<uint8_t>(6, 0xff)), kCriteriaOuter);
  DvFlow(m, Params(kSrcMac), {ToQp(qp_)});
  sim::FrameSpec mine = Udp4(5678), other = Udp4(5678);
  mine.smac = Mac("24:8a:07:a5:28:c8");
  const std::vector<uint8_t> frame = sim::BuildFrame(mine);
  for (int i = 0; i < 10; ++i) Send(frame);
  Send(other);
  for (int i = 0; i < 10; ++i) {
    std::optional<Received> got = Recv(qp_);
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->frame, frame);
    EXPECT_EQ(got->tag, 0u);
  }
  EXPECT_EQ(Count(qp_), 0);  // the other source MAC missed: the PF has steering now, and drops it
  EXPECT_EQ(Port(0), 0);
}

TEST_F(DvFlowTest, RdmaCoreTxPacketReformat) {
  const std::vector<uint8_t> inner = sim::BuildFrame(Udp4(5678));
  const std::vector<uint8_t> outer = OuterHeaders(inner.size());
  // Client: a NIC_TX matcher by the EGRESS flag (pyverbs leaves comp_mask 0), an encap flow action.
  mlx5dv_flow_matcher* tx = Matcher(Zeros(kMaxMatchParamSize), kCriteriaNone, 0, IBV_FLOW_ATTR_FLAGS_EGRESS);
  std::vector<uint8_t> data = outer;
  ibv_flow_action* encap = Keep(mlx5dv_create_flow_action_packet_reformat(
      ctx_, data.size(), data.data(), MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TO_L2_TUNNEL,
      MLX5DV_FLOW_TABLE_TYPE_NIC_TX));
  DvFlow(tx, Zeros(kMaxMatchParamSize), {Rewrite(encap)});
  // Server: everything received goes to its QP.
  mlx5dv_flow_matcher* rx = Matcher(Zeros(kMaxMatchParamSize), kCriteriaNone);
  DvFlow(rx, Zeros(kMaxMatchParamSize), {ToQp(qp_)});

  std::vector<uint8_t> expected = outer;
  expected.insert(expected.end(), inner.begin(), inner.end());
  const uint16_t checksum = Ipv4Checksum(expected.data() + 14, 20);
  expected[24] = checksum >> 8;  // the device fills the outer IPv4 checksum
  expected[25] = checksum & 0xff;
  for (int i = 0; i < 10; ++i) {
    Send(inner, /*from_vport=*/0);
    std::optional<std::vector<uint8_t>> sent = FromWire();
    ASSERT_TRUE(sent.has_value());
    EXPECT_EQ(*sent, expected);  // byte for byte
    Send(*sent);                 // the loopback wire brings it back
    std::optional<Received> got = Recv(qp_);
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->frame, expected);
  }
}

// ---- Steering ----

TEST_F(DvFlowTest, TagReachesTheCompletion) {
  mlx5dv_flow_matcher* m = Matcher(UdpMask(), kCriteriaOuter);
  DvFlow(m, UdpValue(53), {Tag(0xabcdef), ToQp(qp_)});
  Send(Udp4(53));
  std::optional<Received> got = Recv(qp_);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->tag, 0xabcdefu);
}

TEST_F(DvFlowTest, DropAndDevxCounters) {
  mlx5dv_devx_obj* counters = KeepDevx(drsim_counter_alloc(ctx_, 4));
  mlx5dv_flow_matcher* m = Matcher(UdpMask(), kCriteriaOuter);
  DvFlow(m, UdpValue(53),
         {Action(MLX5DV_FLOW_ACTION_DROP), Devx(MLX5DV_FLOW_ACTION_COUNTERS_DEVX, counters)});
  DvFlow(m, UdpValue(54), {ToQp(qp_)});
  Send(Udp4(53));
  Send(Udp4(53));
  Send(Udp4(54));
  EXPECT_EQ(Count(qp_), 1);
  uint64_t packets = 0, bytes = 0;
  ASSERT_EQ(drsim_counter_query(counters, 0, &packets, &bytes), 0);
  EXPECT_EQ(packets, 2u);
  EXPECT_EQ(bytes, 2 * sim::BuildFrame(Udp4(53)).size());
  EXPECT_EQ(mlx5dv_devx_obj_destroy(counters), EBUSY);  // the flow's rule counts with it
}

TEST_F(DvFlowTest, PrioritiesOrderMatchersWhateverTheirAge) {
  ibv_qp* b = Qp(0);
  mlx5dv_flow_matcher* any = Matcher(Zeros(kMaxMatchParamSize), kCriteriaNone, /*priority=*/1);
  DvFlow(any, Zeros(kMaxMatchParamSize), {ToQp(b)});
  mlx5dv_flow_matcher* dns = Matcher(UdpMask(), kCriteriaOuter, /*priority=*/0);
  DvFlow(dns, UdpValue(53), {ToQp(qp_)});
  Send(Udp4(53));
  Send(Udp4(54));
  EXPECT_EQ(Count(qp_), 1);
  EXPECT_EQ(Count(b), 1);

  // A drop at priority 0 wins over the catch-all at 1.
  DvFlow(dns, UdpValue(55), {Action(MLX5DV_FLOW_ACTION_DROP)});
  Send(Udp4(55));
  EXPECT_EQ(Count(b), 0);
}

TEST_F(DvFlowTest, MulticastMatchesComeAfterEveryPriority) {
  ibv_qp* b = Qp(0);
  // A multicast destination MAC in value and mask: mlx5_ib puts the flow at its multicast priority.
  Params mask(*MatchBuilder().Dmac(kOuter, Mac("01:00:00:00:00:00")).Build());
  mlx5dv_flow_matcher* mc = Matcher(mask, kCriteriaOuter, /*priority=*/0);
  DvFlow(mc, Params(*MatchBuilder().Dmac(kOuter, Mac("01:00:00:00:00:00")).Build()), {ToQp(qp_)});
  mlx5dv_flow_matcher* any = Matcher(Zeros(kMaxMatchParamSize), kCriteriaNone, /*priority=*/7);
  DvFlow(any, Zeros(kMaxMatchParamSize), {ToQp(b)});
  sim::FrameSpec multicast = Udp4(53);
  multicast.dmac = Mac("01:00:5e:00:00:01");
  Send(multicast);
  EXPECT_EQ(Count(qp_), 0);
  EXPECT_EQ(Count(b), 1);

  // Without the catch-all, the multicast flow takes it.
  DestroyDvFlow(dv_flows_.back());
  Send(multicast);
  EXPECT_EQ(Count(qp_), 1);
}

TEST_F(DvFlowTest, DestDevxTirSpreadsOverItsQueues) {
  ibv_qp* b = Qp(0);
  ibv_qp* qps[] = {qp_, b};
  mlx5dv_devx_obj* tir = KeepDevx(drsim_tir_create(ctx_, qps, 2, IBV_RX_HASH_SRC_PORT_UDP, nullptr, 0));
  mlx5dv_flow_matcher* m = Matcher(UdpMask(), kCriteriaOuter);
  DvFlow(m, UdpValue(53), {Devx(MLX5DV_FLOW_ACTION_DEST_DEVX, tir), Tag(9)});
  for (uint16_t sport = 1000; sport < 1064; ++sport) {
    sim::FrameSpec f = Udp4(53);
    f.sport = sport;
    Send(f);
  }
  const int a = Count(qp_), c = Count(b);
  EXPECT_EQ(a + c, 64);
  EXPECT_GT(a, 0);
  EXPECT_GT(c, 0);
}

TEST_F(DvFlowTest, DefaultMissGoesOnToTheLeftovers) {
  ibv_qp* b = Qp(0);
  mlx5dv_flow_matcher* m = Matcher(UdpMask(), kCriteriaOuter);
  DvFlow(m, UdpValue(53), {Action(MLX5DV_FLOW_ACTION_DEFAULT_MISS)});
  mlx5dv_flow_matcher* any = Matcher(Zeros(kMaxMatchParamSize), kCriteriaNone, /*priority=*/3);
  DvFlow(any, Zeros(kMaxMatchParamSize), {ToQp(qp_)});
  Send(Udp4(53));  // skips the catch-all of priority 3 and every other bypass rule: dropped by default
  EXPECT_EQ(Count(qp_), 0);
  FlowAttr leftovers(IBV_FLOW_ATTR_ALL_DEFAULT);
  Flow(b, leftovers);
  Send(Udp4(53));
  Send(Udp4(54));
  EXPECT_EQ(Count(b), 1);
  EXPECT_EQ(Count(qp_), 1);
}

TEST_F(DvFlowTest, SharesTheKernelTablesWithVerbsFlows) {
  // The same match at the same priority as a verbs flow: one flow-table entry feeding both QPs.
  ibv_qp* b = Qp(0);
  FlowAttr verbs(IBV_FLOW_ATTR_NORMAL, 0);
  auto ipv4 = NewSpec<ibv_flow_spec_ipv4>(IBV_FLOW_SPEC_IPV4);
  auto udp = NewSpec<ibv_flow_spec_tcp_udp>(IBV_FLOW_SPEC_UDP);
  udp.val.dst_port = htons(53);
  udp.mask.dst_port = 0xffff;
  verbs.Add(ipv4).Add(udp);
  Flow(qp_, verbs);
  // The verbs IPv4 spec's mask, as mlx5_ib's parse_flow_attr writes it: ip_version 0xf.
  Params mask(
      *MatchBuilder().IpVersion(kOuter, 0xf).IpProtocol(kOuter, 0xff).UdpDport(kOuter, 0xffff).Build());
  Params value(*MatchBuilder().IpVersion(kOuter, 4).IpProtocol(kOuter, 17).UdpDport(kOuter, 53).Build());
  mlx5dv_flow_matcher* m = Matcher(mask, kCriteriaOuter);
  DvFlow(m, value, {ToQp(b)});
  Send(Udp4(53));
  EXPECT_EQ(Count(qp_), 1);
  EXPECT_EQ(Count(b), 1);
  // Conflicting actions on that entry: the kernel's check_conflicting_ftes.
  std::string message;
  EXPECT_EQ(FlowError(m, value, {Action(MLX5DV_FLOW_ACTION_DROP)}, &message), EEXIST);
  EXPECT_THAT(message, HasSubstr("conflicting actions"));
  ibv_flow_action* modify = nullptr;
  uint64_t ttl = hw::ModifySetWord(hw::ModifyField::kIpTtl, 0, 8, 9);
  modify =
      Keep(mlx5dv_create_flow_action_modify_header(ctx_, sizeof ttl, &ttl, MLX5DV_FLOW_TABLE_TYPE_NIC_RX));
  EXPECT_EQ(FlowError(m, value, {ToQp(b), Rewrite(modify)}, &message), EEXIST);
  EXPECT_THAT(message, HasSubstr("header rewrites"));
}

// ---- Flow actions ----

TEST_F(DvFlowTest, L2TunnelDecapOnNicRx) {
  ibv_flow_action* decap = Keep(mlx5dv_create_flow_action_packet_reformat(
      ctx_, 0, nullptr, MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TUNNEL_TO_L2,
      MLX5DV_FLOW_TABLE_TYPE_NIC_RX));
  Params mask(*MatchBuilder().IpVersion(kOuter, 4).UdpDport(kOuter, 0xffff).VxlanVni(0xffffff).Build());
  mlx5dv_flow_matcher* m = Matcher(mask, kCriteriaOuter | hw::kCriteriaMisc);
  DvFlow(m, Params(*MatchBuilder().IpVersion(kOuter, 4).UdpDport(kOuter, 4789).VxlanVni(7777777).Build()),
         {Rewrite(decap), ToQp(qp_)});
  sim::TunnelFrameSpec tunnel;
  tunnel.outer = Udp4(4789);
  tunnel.tunnel.kind = sim::Encap::kVxlan;
  tunnel.tunnel.vni = 7777777;
  tunnel.inner = Udp4(80);
  tunnel.inner.dmac = Mac("02:00:00:00:00:99");
  tunnel.inner.payload_len = 64;  // no Ethernet padding on its own either
  Send(sim::BuildFrame(tunnel));
  std::optional<Received> got = Recv(qp_);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->frame, sim::BuildFrame(tunnel.inner));  // the inner frame, byte for byte
  EXPECT_EQ(ibv_destroy_flow_action(decap), EBUSY);
}

TEST_F(DvFlowTest, ModifyHeaderOnNicRx) {
  uint64_t words[] = {hw::ModifySetWord(hw::ModifyField::kIpTtl, 0, 8, 9),
                      hw::ModifySetWord(hw::ModifyField::kDmac15_0, 0, 16, 0x1234)};
  ibv_flow_action* modify =
      Keep(mlx5dv_create_flow_action_modify_header(ctx_, sizeof words, words, MLX5DV_FLOW_TABLE_TYPE_NIC_RX));
  mlx5dv_flow_matcher* m = Matcher(UdpMask(), kCriteriaOuter);
  DvFlow(m, UdpValue(53), {Rewrite(modify), ToQp(qp_)});
  Send(Udp4(53));
  sim::FrameSpec expected = Udp4(53);
  expected.ttl = 9;
  expected.dmac = Mac("02:00:00:00:12:34");
  std::optional<Received> got = Recv(qp_);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->frame, sim::BuildFrame(expected));
}

TEST_F(DvFlowTest, FlowActionsAreCheckedAsTheKernelChecksThem) {
  std::vector<uint8_t> header = OuterHeaders(64);
  std::string message;
  errno = 0;
  EXPECT_EQ(mlx5dv_create_flow_action_packet_reformat(ctx_, header.size(), nullptr,
                                                      MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TO_L2_TUNNEL,
                                                      MLX5DV_FLOW_TABLE_TYPE_NIC_TX),
            nullptr);
  EXPECT_EQ(errno, EINVAL);
  // Each reformat type exists in one direction only.
  EXPECT_EQ(mlx5dv_create_flow_action_packet_reformat(ctx_, header.size(), header.data(),
                                                      MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TO_L2_TUNNEL,
                                                      MLX5DV_FLOW_TABLE_TYPE_NIC_RX),
            nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  EXPECT_THAT(drsim_last_error(), HasSubstr("reformat_type 1 on NIC_RX"));
  EXPECT_EQ(mlx5dv_create_flow_action_packet_reformat(ctx_, 0, nullptr,
                                                      MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TUNNEL_TO_L2,
                                                      MLX5DV_FLOW_TABLE_TYPE_FDB),
            nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  EXPECT_EQ(mlx5dv_create_flow_action_packet_reformat(ctx_, 0, nullptr,
                                                      MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TO_L3_TUNNEL,
                                                      MLX5DV_FLOW_TABLE_TYPE_NIC_TX),
            nullptr);
  EXPECT_EQ(errno, ENOENT);  // an encapsulation without its header bytes
  uint8_t l2[10] = {};
  EXPECT_EQ(mlx5dv_create_flow_action_packet_reformat(ctx_, sizeof l2, l2,
                                                      MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L3_TUNNEL_TO_L2,
                                                      MLX5DV_FLOW_TABLE_TYPE_NIC_RX),
            nullptr);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_THAT(drsim_last_error(), HasSubstr("14"));

  uint64_t word = hw::ModifySetWord(hw::ModifyField::kIpTtl, 0, 8, 9);
  EXPECT_EQ(mlx5dv_create_flow_action_modify_header(ctx_, 4, &word, MLX5DV_FLOW_TABLE_TYPE_NIC_RX), nullptr);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(mlx5dv_create_flow_action_modify_header(ctx_, 12, &word, MLX5DV_FLOW_TABLE_TYPE_NIC_RX), nullptr);
  EXPECT_EQ(errno, EINVAL);
  unsigned bad_ft = 5;  // in the enum's value range (0..7), past its last table type
  mlx5dv_flow_table_type ft;
  std::memcpy(&ft, &bad_ft, sizeof ft);
  EXPECT_EQ(mlx5dv_create_flow_action_modify_header(ctx_, sizeof word, &word, ft), nullptr);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(mlx5dv_create_flow_action_modify_header(ctx_, sizeof word, &word, MLX5DV_FLOW_TABLE_TYPE_RDMA_TX),
            nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);

  // ibv_destroy_flow_action's op refuses what is not a flow action of the software NIC.
  ibv_flow_action fake{ctx_};
  EXPECT_EQ(ibv_destroy_flow_action(&fake), EINVAL);
}

// ---- Lifetimes ----

TEST_F(DvFlowTest, MatchersActionsAndQpsAreBusyWhileFlowsUseThem) {
  uint64_t word = hw::ModifySetWord(hw::ModifyField::kIpTtl, 0, 8, 9);
  ibv_flow_action* modify =
      mlx5dv_create_flow_action_modify_header(ctx_, sizeof word, &word, MLX5DV_FLOW_TABLE_TYPE_NIC_RX);
  ASSERT_NE(modify, nullptr) << drsim_last_error();
  ibv_qp* qp = drsim_create_qp(ctx_, 0);
  Params mask = UdpMask();
  mlx5dv_flow_matcher_attr attr = Attr(mask, kCriteriaOuter);
  mlx5dv_flow_matcher* m = mlx5dv_create_flow_matcher(ctx_, &attr);
  ASSERT_NE(m, nullptr) << drsim_last_error();
  Params value = UdpValue(53);
  mlx5dv_flow_action_attr actions[] = {Rewrite(modify), ToQp(qp)};
  ibv_flow* flow = mlx5dv_create_flow(m, value.get(), 2, actions);
  ASSERT_NE(flow, nullptr) << drsim_last_error();
  EXPECT_EQ(flow->context, ctx_);

  EXPECT_EQ(mlx5dv_destroy_flow_matcher(m), EBUSY);
  EXPECT_THAT(drsim_last_error(), HasSubstr("1 flow(s) use the matcher"));
  EXPECT_EQ(ibv_destroy_flow_action(modify), EBUSY);
  EXPECT_EQ(drsim_destroy_qp(qp), EBUSY);
  EXPECT_THAT(drsim_last_error(),
              HasSubstr("1 verbs flow(s) are attached to the QP (ibv_create_flow, mlx5dv_create_flow)"));
  EXPECT_EQ(drsim_close(ctx_), EBUSY);

  EXPECT_EQ(ibv_destroy_flow(flow), 0);  // through the verbs op, as verbs flows
  Send(Udp4(53));
  EXPECT_EQ(Count(qp), 0);
  EXPECT_EQ(Port(0), 1);  // no steering left: the PF's own interface takes it
  EXPECT_EQ(mlx5dv_destroy_flow_matcher(m), 0);
  EXPECT_EQ(ibv_destroy_flow_action(modify), 0);
  EXPECT_EQ(drsim_destroy_qp(qp), 0);
}

TEST_F(DvFlowTest, VerbsFlowsStillGoThroughTheSharedDestroyOp) {
  FlowAttr any(IBV_FLOW_ATTR_NORMAL, 0);
  any.Add(NewSpec<ibv_flow_spec_ipv4>(IBV_FLOW_SPEC_IPV4));
  ibv_flow* verbs = ibv_create_flow(qp_, any.get());
  ASSERT_NE(verbs, nullptr) << drsim_last_error();
  mlx5dv_flow_matcher* m = Matcher(UdpMask(), kCriteriaOuter, /*priority=*/0);
  ibv_flow* dv = DvFlow(m, UdpValue(53), {Tag(1), ToQp(qp_)});
  Send(Udp4(53));
  std::optional<Received> got = Recv(qp_);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->tag, 1u);  // the newer matcher of priority 0 first
  EXPECT_EQ(ibv_destroy_flow(verbs), 0);
  DestroyDvFlow(dv);
  ibv_flow fake{};
  fake.context = ctx_;
  EXPECT_EQ(ibv_destroy_flow(&fake), EINVAL);
}

TEST_F(DvFlowTest, AVfMatcherSteersItsOwnFunction) {
  Params mask = UdpMask();
  mlx5dv_flow_matcher* rx = Matcher(Attr(mask, kCriteriaOuter), vf_ctx_);
  std::string message;
  EXPECT_EQ(FlowError(rx, UdpValue(53), {ToQp(qp_)}, &message), EINVAL);  // the PF's QP
  EXPECT_THAT(message, HasSubstr("the QP is on function 0, the matcher on function 1"));
  DvFlow(rx, UdpValue(53), {ToQp(vf_qp_)});
  // VF1's NIC_TX drops what VF1 sends to port 53; the PF's frames are not VF1's.
  Params tx_mask = UdpMask();
  mlx5dv_flow_matcher* tx = Matcher(Attr(tx_mask, kCriteriaOuter, 0, IBV_FLOW_ATTR_FLAGS_EGRESS), vf_ctx_);
  DvFlow(tx, UdpValue(53), {Action(MLX5DV_FLOW_ACTION_DROP)});
  Send(Udp4(53), /*from_vport=*/1);
  Send(Udp4(54), /*from_vport=*/1);
  Send(Udp4(53), /*from_vport=*/0);
  EXPECT_EQ(Wire(), 2);
}

// ---- Bad input ----

TEST_F(DvFlowTest, MatcherAttributesAreCheckedAsLibmlx5AndTheKernelCheckThem) {
  Params mask = Zeros(kMaxMatchParamSize);
  std::string message;
  EXPECT_EQ(MatcherError(nullptr), EINVAL);
  mlx5dv_flow_matcher_attr attr = Attr(mask, kCriteriaNone);
  attr.comp_mask = 2;
  EXPECT_EQ(MatcherError(&attr, &message), EOPNOTSUPP);
  EXPECT_THAT(message, HasSubstr("comp_mask 0x2"));
  attr = Attr(mask, kCriteriaNone);
  attr.type = IBV_FLOW_ATTR_SNIFFER;
  EXPECT_EQ(MatcherError(&attr), EOPNOTSUPP);
  attr = Attr(mask, kCriteriaNone);
  attr.match_mask = nullptr;
  EXPECT_EQ(MatcherError(&attr), EINVAL);
  Params empty = Zeros(0), big = Zeros(513);
  attr = Attr(empty, kCriteriaNone);
  EXPECT_EQ(MatcherError(&attr, &message), EINVAL);
  EXPECT_THAT(message, HasSubstr("match_sz 0"));
  attr = Attr(big, kCriteriaNone);
  EXPECT_EQ(MatcherError(&attr), EINVAL);
  attr = Attr(mask, kCriteriaNone, 0, IBV_FLOW_ATTR_FLAGS_EGRESS);
  attr.comp_mask = MLX5DV_FLOW_MATCHER_MASK_FT_TYPE;
  EXPECT_EQ(MatcherError(&attr, &message), EINVAL);  // flags and ft_type together
  EXPECT_THAT(message, HasSubstr("ft_type only"));
  attr = Attr(mask, kCriteriaNone);
  attr.comp_mask = MLX5DV_FLOW_MATCHER_MASK_FT_TYPE;
  const unsigned bad_ft = 5;
  std::memcpy(&attr.ft_type, &bad_ft, sizeof bad_ft);
  EXPECT_EQ(MatcherError(&attr), EINVAL);
  attr = Attr(mask, kCriteriaNone, 0, IBV_FLOW_ATTR_FLAGS_DONT_TRAP);
  EXPECT_EQ(MatcherError(&attr), EINVAL);
  // 512 bytes (the kernel's whole fte_match_param) are fine.
  Matcher(Zeros(512), kCriteriaNone);
}

TEST_F(DvFlowTest, ActionListsAreCheckedAsLibmlx5ChecksThem) {
  mlx5dv_flow_matcher* m = Matcher(UdpMask(), kCriteriaOuter);
  std::string message;
  EXPECT_EQ(FlowError(m, UdpValue(53), {ToQp(qp_), Action(MLX5DV_FLOW_ACTION_DROP)}, &message), EOPNOTSUPP);
  EXPECT_THAT(message, HasSubstr("actions_attr[1] (DROP): a flow takes one of"));
  EXPECT_EQ(FlowError(m, UdpValue(53), {Tag(1), ToQp(qp_), Tag(2)}, &message), EINVAL);
  EXPECT_THAT(message, HasSubstr("actions_attr[2] (TAG)"));
  mlx5dv_devx_obj* counters = KeepDevx(drsim_counter_alloc(ctx_, 1));
  EXPECT_EQ(FlowError(m, UdpValue(53),
                      {ToQp(qp_), Devx(MLX5DV_FLOW_ACTION_COUNTERS_DEVX, counters),
                       Devx(MLX5DV_FLOW_ACTION_COUNTERS_DEVX, counters)}),
            EOPNOTSUPP);
  mlx5dv_flow_action_attr verbs_counter = Action(MLX5DV_FLOW_ACTION_IBV_COUNTER);
  verbs_counter.counter = Counters();
  EXPECT_EQ(FlowError(m, UdpValue(53), {ToQp(qp_), verbs_counter}, &message), EOPNOTSUPP);
  EXPECT_THAT(message, HasSubstr("COUNTERS_DEVX"));
  EXPECT_EQ(FlowError(m, UdpValue(53), {ToQp(qp_), Action(99)}, &message), EOPNOTSUPP);
  EXPECT_THAT(message, HasSubstr("actions_attr[1] (type 99)"));
  errno = 0;
  Params value = UdpValue(53);
  EXPECT_EQ(mlx5dv_create_flow(m, value.get(), 1, nullptr), nullptr);
  EXPECT_EQ(errno, EINVAL);
}

TEST_F(DvFlowTest, FlowsAreCheckedAsTheKernelChecksThem) {
  mlx5dv_flow_matcher* m = Matcher(UdpMask(), kCriteriaOuter);
  std::string message;
  // The value: its size, and bits outside the mask.
  EXPECT_EQ(FlowError(m, Zeros(0), {ToQp(qp_)}), EINVAL);
  EXPECT_EQ(FlowError(m, Zeros(513), {ToQp(qp_)}), EINVAL);
  EXPECT_EQ(FlowError(m, Params(*MatchBuilder().IpVersion(kOuter, 4).TcpSport(kOuter, 80).Build()),
                      {ToQp(qp_)}, &message),
            EINVAL);
  EXPECT_THAT(message, HasSubstr("outer.tcp_sport"));
  // Objects of the wrong kind, or another table's.
  mlx5dv_devx_obj* counters = KeepDevx(drsim_counter_alloc(ctx_, 1));
  EXPECT_EQ(FlowError(m, UdpValue(53), {Devx(MLX5DV_FLOW_ACTION_DEST_DEVX, counters)}, &message), EINVAL);
  EXPECT_THAT(message, HasSubstr("not a flow destination"));
  EXPECT_EQ(
      FlowError(m, UdpValue(53),
                {ToQp(qp_), Devx(MLX5DV_FLOW_ACTION_COUNTERS_DEVX, reinterpret_cast<mlx5dv_devx_obj*>(qp_))}),
      EINVAL);
  uint64_t word = hw::ModifySetWord(hw::ModifyField::kIpTtl, 0, 8, 9);
  ibv_flow_action* rx_modify =
      Keep(mlx5dv_create_flow_action_modify_header(ctx_, sizeof word, &word, MLX5DV_FLOW_TABLE_TYPE_NIC_RX));
  ibv_flow_action* rx_modify2 =
      Keep(mlx5dv_create_flow_action_modify_header(ctx_, sizeof word, &word, MLX5DV_FLOW_TABLE_TYPE_NIC_RX));
  ibv_flow_action* decap = Keep(mlx5dv_create_flow_action_packet_reformat(
      ctx_, 0, nullptr, MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TUNNEL_TO_L2,
      MLX5DV_FLOW_TABLE_TYPE_NIC_RX));
  ibv_flow_action* tx_modify =
      Keep(mlx5dv_create_flow_action_modify_header(ctx_, sizeof word, &word, MLX5DV_FLOW_TABLE_TYPE_NIC_TX));
  EXPECT_EQ(FlowError(m, UdpValue(53), {ToQp(qp_), Rewrite(rx_modify), Rewrite(rx_modify2)}, &message),
            EINVAL);
  EXPECT_THAT(message, HasSubstr("one modify header"));
  EXPECT_EQ(FlowError(m, UdpValue(53), {ToQp(qp_), Rewrite(rx_modify), Rewrite(decap), Rewrite(rx_modify2)},
                      &message),
            EINVAL);
  EXPECT_THAT(message, HasSubstr("actions_attr[3] (IBV_FLOW_ACTION): the kernel takes at most 2"));
  EXPECT_EQ(FlowError(m, UdpValue(53), {ToQp(qp_), Rewrite(tx_modify)}, &message), EINVAL);
  EXPECT_THAT(message, HasSubstr("made for NIC_TX, the matcher is NIC_RX"));
  // The tag's width.
  EXPECT_EQ(FlowError(m, UdpValue(53), {ToQp(qp_), Tag(1u << 24)}), EINVAL);
  // A NIC_RX flow needs somewhere to send the frame; a counter does not count as one.
  EXPECT_EQ(FlowError(m, UdpValue(53), {Tag(1)}, &message), EINVAL);
  EXPECT_THAT(message, HasSubstr("needs a destination"));
  EXPECT_EQ(FlowError(m, UdpValue(53), {Devx(MLX5DV_FLOW_ACTION_COUNTERS_DEVX, counters)}), EINVAL);
  // Priorities past the bypass namespace's.
  mlx5dv_flow_matcher* low = Matcher(UdpMask(), kCriteriaOuter, /*priority=*/16);
  EXPECT_EQ(FlowError(low, UdpValue(53), {ToQp(qp_)}), ENOMEM);
  // Reserved mask bits reach the device with the first flow.
  std::vector<uint8_t> reserved(512);
  reserved[500] = 1;
  mlx5dv_flow_matcher* bad = Matcher(Params(reserved), kCriteriaNone);
  EXPECT_EQ(FlowError(bad, Zeros(kMaxMatchParamSize), {ToQp(qp_)}, &message), EINVAL);
  EXPECT_THAT(message, HasSubstr("reserved byte 0x1f4"));
  mlx5dv_flow_matcher* bit7 = Matcher(Zeros(kMaxMatchParamSize), 0x80);
  EXPECT_EQ(FlowError(bit7, Zeros(kMaxMatchParamSize), {ToQp(qp_)}), EINVAL);
}

TEST_F(DvFlowTest, TablesAndDirectionsAreCheckedAsTheKernelChecksThem) {
  std::string message;
  mlx5dv_flow_matcher* tx =
      TableMatcher(Zeros(kMaxMatchParamSize), kCriteriaNone, MLX5DV_FLOW_TABLE_TYPE_NIC_TX);
  EXPECT_EQ(FlowError(tx, Zeros(kMaxMatchParamSize), {ToQp(qp_)}, &message), EINVAL);
  EXPECT_THAT(message, HasSubstr("NIC_TX flow sends to the wire"));
  EXPECT_EQ(FlowError(tx, Zeros(kMaxMatchParamSize), {Action(MLX5DV_FLOW_ACTION_DEFAULT_MISS)}), EOPNOTSUPP);
  EXPECT_EQ(FlowError(tx, Zeros(kMaxMatchParamSize), {Tag(1)}), EOPNOTSUPP);
  mlx5dv_flow_matcher* fdb =
      TableMatcher(Zeros(kMaxMatchParamSize), kCriteriaNone, MLX5DV_FLOW_TABLE_TYPE_FDB);
  EXPECT_EQ(FlowError(fdb, Zeros(kMaxMatchParamSize), {ToQp(qp_)}), EINVAL);
  EXPECT_EQ(FlowError(fdb, Zeros(kMaxMatchParamSize), {Action(MLX5DV_FLOW_ACTION_DROP)}, &message),
            EOPNOTSUPP);
  EXPECT_THAT(message, HasSubstr("FDB"));
  mlx5dv_flow_matcher* rdma =
      TableMatcher(Zeros(kMaxMatchParamSize), kCriteriaNone, MLX5DV_FLOW_TABLE_TYPE_RDMA_RX);
  EXPECT_EQ(FlowError(rdma, Zeros(kMaxMatchParamSize), {Action(MLX5DV_FLOW_ACTION_DROP)}), EINVAL);
  EXPECT_EQ(FlowError(rdma, Zeros(kMaxMatchParamSize), {ToQp(qp_)}), EOPNOTSUPP);

  // A NIC_TX drop counts what its function sends and keeps it off the wire.
  mlx5dv_devx_obj* counters = KeepDevx(drsim_counter_alloc(ctx_, 1));
  DvFlow(tx, Zeros(kMaxMatchParamSize),
         {Action(MLX5DV_FLOW_ACTION_DROP), Devx(MLX5DV_FLOW_ACTION_COUNTERS_DEVX, counters)});
  Send(Udp4(53), /*from_vport=*/0);
  EXPECT_EQ(Wire(), 0);
  uint64_t packets = 0, bytes = 0;
  ASSERT_EQ(drsim_counter_query(counters, 0, &packets, &bytes), 0);
  EXPECT_EQ(packets, 1u);
}

TEST_F(DvFlowTest, ObjectsOfRealHardwareAndOtherKindsAreTold) {
  Params mask = Zeros(kMaxMatchParamSize);
  mlx5dv_flow_matcher_attr attr = Attr(mask, kCriteriaNone);
  errno = 0;
  EXPECT_EQ(mlx5dv_create_flow_matcher(nullptr, &attr), nullptr);
  EXPECT_EQ(errno, EINVAL);
  // A software-NIC object of another kind never reaches libmlx5.
  EXPECT_EQ(mlx5dv_destroy_flow_matcher(reinterpret_cast<mlx5dv_flow_matcher*>(qp_)), EINVAL);
  EXPECT_THAT(drsim_last_error(), HasSubstr("another kind"));
  // Nor does a software-NIC QP given to a matcher that is not the software NIC's.
  int not_a_matcher = 0;
  mlx5dv_flow_action_attr to_qp = ToQp(qp_);
  Params value = Zeros(kMaxMatchParamSize);
  errno = 0;
  EXPECT_EQ(
      mlx5dv_create_flow(reinterpret_cast<mlx5dv_flow_matcher*>(&not_a_matcher), value.get(), 1, &to_qp),
      nullptr);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_THAT(drsim_last_error(), HasSubstr("actions_attr[0] belongs to a software NIC"));
}

}  // namespace
}  // namespace drsim::capi::testing
