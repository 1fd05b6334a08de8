// Verbs flows steering frames on the software NIC: priorities among flows and against the user's own DR
// root tables, entries shared by identical flows, DONT_TRAP, the multicast priority, ALL_DEFAULT and
// MC_DEFAULT, sniffers, EGRESS, counters, and the lifetimes of flows, QPs and counters.
#include <arpa/inet.h>
#include <infiniband/mlx5dv.h>

#include <vector>

#include "capi/verbs_test_support.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hw/match_params.h"
#include "sim/frame_builder.h"

namespace drsim::capi::testing {
namespace {

using hw::kOuter;
using hw::MatchBuilder;
using ::testing::HasSubstr;

ibv_flow_spec_ipv4 AnyIpv4() { return NewSpec<ibv_flow_spec_ipv4>(IBV_FLOW_SPEC_IPV4); }

ibv_flow_spec_tcp_udp UdpPort(uint16_t dport) {
  auto udp = NewSpec<ibv_flow_spec_tcp_udp>(IBV_FLOW_SPEC_UDP);
  udp.val.dst_port = htons(dport);
  udp.mask.dst_port = 0xffff;
  return udp;
}

// An IPv4/UDP flow to `dport`, at `priority` with `flags`.
FlowAttr UdpFlow(uint16_t dport, uint16_t priority = 0, uint32_t flags = 0) {
  FlowAttr attr(IBV_FLOW_ATTR_NORMAL, priority, flags);
  attr.Add(AnyIpv4()).Add(UdpPort(dport));
  return attr;
}

sim::FrameSpec Multicast(uint16_t dport) {
  sim::FrameSpec f = Udp4(dport);
  f.dmac = Mac("01:00:5e:00:00:01");
  f.ipv4_dst = Ip4("224.0.0.1");
  return f;
}

class VerbsSteeringTest : public VerbsTest {
 protected:
  ~VerbsSteeringTest() override {
    for (auto it = dr_rules_.rbegin(); it != dr_rules_.rend(); ++it)
      EXPECT_EQ(mlx5dv_dr_rule_destroy(*it), 0);
    for (mlx5dv_dr_matcher* m : dr_matchers_) EXPECT_EQ(mlx5dv_dr_matcher_destroy(m), 0);
    for (mlx5dv_dr_action* a : dr_actions_) EXPECT_EQ(mlx5dv_dr_action_destroy(a), 0);
    if (dr_root_ != nullptr) {
      EXPECT_EQ(mlx5dv_dr_table_destroy(dr_root_), 0);
    }
    if (dr_domain_ != nullptr) {
      EXPECT_EQ(mlx5dv_dr_domain_destroy(dr_domain_), 0);
    }
  }

  // A rule of the user's own PF NIC_RX root table: IPv4/UDP `dport` at `priority`, to `qp` (or dropped).
  void UserRule(uint16_t priority, uint16_t dport, ibv_qp* qp) {
    if (dr_domain_ == nullptr) {
      dr_domain_ = mlx5dv_dr_domain_create(ctx_, MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
      dr_root_ = mlx5dv_dr_table_create(dr_domain_, 0);
    }
    hw::MatchParams mask = *MatchBuilder().IpVersion(kOuter, 4).UdpDport(kOuter, 0xffff).Build();
    hw::MatchParams value = *MatchBuilder().IpVersion(kOuter, 4).UdpDport(kOuter, dport).Build();
    dr_matchers_.push_back(mlx5dv_dr_matcher_create(dr_root_, priority, mask.criteria(), mask.get()));
    dr_actions_.push_back(qp != nullptr ? mlx5dv_dr_action_create_dest_ibv_qp(qp)
                                        : mlx5dv_dr_action_create_drop());
    mlx5dv_dr_action* list[] = {dr_actions_.back()};
    dr_rules_.push_back(mlx5dv_dr_rule_create(dr_matchers_.back(), value.get(), 1, list));
    ASSERT_NE(dr_rules_.back(), nullptr) << drsim_last_error();
  }

  // How many frames each QP received (taking them).
  std::vector<int> Counts(std::initializer_list<ibv_qp*> qps) {
    std::vector<int> n;
    for (ibv_qp* q : qps) n.push_back(Count(q));
    return n;
  }

  mlx5dv_dr_domain* dr_domain_ = nullptr;
  mlx5dv_dr_table* dr_root_ = nullptr;
  std::vector<mlx5dv_dr_matcher*> dr_matchers_;
  std::vector<mlx5dv_dr_action*> dr_actions_;
  std::vector<mlx5dv_dr_rule*> dr_rules_;
};

using V = std::vector<int>;

TEST_F(VerbsSteeringTest, PrioritiesOrderFlowsAndMergeWithTheUsersDrRootTables) {
  ibv_qp *a = qp_, *b = Qp(0), *c = Qp(0);
  FlowAttr dns = UdpFlow(53, 1), any(IBV_FLOW_ATTR_NORMAL, 2);
  any.Add(AnyIpv4());
  Flow(a, dns);
  Flow(b, any);
  Send(Udp4(53));
  Send(Udp4(54));
  EXPECT_EQ(Counts({a, b}), (V{1, 1}));

  UserRule(0, 53, c);  // a DR root rule of priority 0 comes before verbs priority 1
  UserRule(3, 54, c);  // and one of priority 3 after verbs priority 2
  Send(Udp4(53));
  Send(Udp4(54));
  EXPECT_EQ(Counts({a, b, c}), (V{0, 1, 1}));

  // Equal priority: the newest matcher first, whoever made it.
  FlowAttr other = UdpFlow(55, 1);
  Flow(a, other);  // joins the matcher of `dns` (same priority and mask)
  UserRule(1, 55, c);
  Send(Udp4(55));
  EXPECT_EQ(Counts({a, c}), (V{0, 1}));
}

TEST_F(VerbsSteeringTest, IdenticalFlowsShareOneEntryThatFeedsEveryQp) {
  ibv_qp *a = qp_, *b = Qp(0);
  FlowAttr dns = UdpFlow(53);
  ibv_flow* first = Flow(a, dns);
  Flow(b, dns);
  Flow(b, dns);  // the same QP twice: still one copy
  FlowAttr ntp = UdpFlow(123);
  Flow(a, ntp);  // another value under the shared matcher
  Send(Udp4(53));
  Send(Udp4(123));
  EXPECT_EQ(Counts({a, b}), (V{2, 1}));
  Drop(first);
  Send(Udp4(53));
  Send(Udp4(123));
  EXPECT_EQ(Counts({a, b}), (V{1, 1}));
}

TEST_F(VerbsSteeringTest, IdenticalFlowsWithConflictingActionsAreEexist) {
  FlowAttr tagged = UdpFlow(53);
  auto tag = NewSpec<ibv_flow_spec_action_tag>(IBV_FLOW_SPEC_ACTION_TAG);
  tag.tag_id = 7;
  tagged.Add(tag);
  Flow(qp_, tagged);
  FlowAttr drop = UdpFlow(53);
  drop.Add(NewSpec<ibv_flow_spec_action_drop>(IBV_FLOW_SPEC_ACTION_DROP));
  std::string message;
  EXPECT_EQ(Error(qp_, drop, &message), EEXIST);
  EXPECT_THAT(message, HasSubstr("conflicting actions"));
  FlowAttr other_tag = UdpFlow(53);
  tag.tag_id = 8;
  other_tag.Add(tag);
  EXPECT_EQ(Error(qp_, other_tag, &message), EEXIST);
  EXPECT_THAT(message, HasSubstr("flow tag 0x7, not 0x8"));
  ibv_qp* b = Qp(0);
  FlowAttr untagged = UdpFlow(53);
  Flow(b, untagged);  // no tag of its own: the entry's tag applies
  Send(Udp4(53));
  std::optional<Received> got = Recv(b);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->tag, 7u);
}

TEST_F(VerbsSteeringTest, TagDropAndCountActions) {
  FlowAttr tagged = UdpFlow(53);
  auto tag = NewSpec<ibv_flow_spec_action_tag>(IBV_FLOW_SPEC_ACTION_TAG);
  tag.tag_id = 0xabcdef;
  tagged.Add(tag);
  Flow(qp_, tagged);
  ibv_counters* counters = Counters();
  auto count = NewSpec<ibv_flow_spec_counter_action>(IBV_FLOW_SPEC_ACTION_COUNT);
  count.counters = counters;
  FlowAttr dropped = UdpFlow(54);
  dropped.Add(NewSpec<ibv_flow_spec_action_drop>(IBV_FLOW_SPEC_ACTION_DROP)).Add(count);
  Flow(qp_, dropped);
  Send(Udp4(53));
  Send(Udp4(54));
  Send(Udp4(54));
  std::optional<Received> got = Recv(qp_);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->tag, 0xabcdefu);
  EXPECT_EQ(Count(qp_), 0);
  uint64_t values[2];
  ASSERT_EQ(ibv_read_counters(counters, values, 2, IBV_READ_COUNTERS_ATTR_PREFER_CACHED), 0);
  EXPECT_EQ(values[0], 2u);
  EXPECT_EQ(values[1], 2 * sim::BuildFrame(Udp4(54)).size());
}

TEST_F(VerbsSteeringTest, DontTrapDeliversAndLetsTheFrameGoOn) {
  ibv_qp *a = qp_, *b = Qp(0), *c = Qp(0), *d = Qp(0);
  FlowAttr watch = UdpFlow(53, 0, IBV_FLOW_ATTR_FLAGS_DONT_TRAP), any(IBV_FLOW_ATTR_NORMAL, 1);
  any.Add(AnyIpv4());
  Flow(a, watch);
  Flow(b, any);
  Send(Udp4(53));
  Send(Udp4(54));
  EXPECT_EQ(Counts({a, b}), (V{1, 2}));

  // A DONT_TRAP flow precedes the regular flows of its own priority (the kernel's priority 2p before 2p + 1).
  FlowAttr same_priority = UdpFlow(54, 1, IBV_FLOW_ATTR_FLAGS_DONT_TRAP);
  Flow(c, same_priority);
  Send(Udp4(54));
  EXPECT_EQ(Counts({b, c}), (V{1, 1}));

  // It goes on into the user's DR root tables too.
  UserRule(0, 53, d);  // priority 0: after the DONT_TRAP flow of priority 0
  Send(Udp4(53));
  EXPECT_EQ(Counts({a, b, d}), (V{1, 0, 1}));

  // With ACTION_DROP the frame is dropped, DONT_TRAP or not (as mlx5_ib).
  FlowAttr drop = UdpFlow(56, 0, IBV_FLOW_ATTR_FLAGS_DONT_TRAP);
  drop.Add(NewSpec<ibv_flow_spec_action_drop>(IBV_FLOW_SPEC_ACTION_DROP));
  Flow(a, drop);
  Send(Udp4(56));
  EXPECT_EQ(Counts({a, b}), (V{0, 0}));
}

TEST_F(VerbsSteeringTest, MulticastOnlyFlowsComeAfterEveryPriorityUnlessDontTrap) {
  ibv_qp *a = qp_, *b = Qp(0);
  auto eth = NewSpec<ibv_flow_spec_eth>(IBV_FLOW_SPEC_ETH);
  std::memcpy(eth.val.dst_mac, Mac("01:00:5e:00:00:01").bytes.data(), 6);
  std::memset(eth.mask.dst_mac, 0xff, 6);
  FlowAttr group(IBV_FLOW_ATTR_NORMAL, 0), any(IBV_FLOW_ATTR_NORMAL, 5);
  group.Add(eth);
  any.Add(AnyIpv4());
  Flow(a, group);
  ibv_flow* catch_all = Flow(b, any);
  Send(Multicast(9));
  EXPECT_EQ(Counts({a, b}), (V{0, 1}));  // mlx5_ib puts the multicast-only flow in its multicast priority
  FlowAttr watch(IBV_FLOW_ATTR_NORMAL, 0, IBV_FLOW_ATTR_FLAGS_DONT_TRAP);
  watch.Add(eth);
  Flow(a, watch);  // with DONT_TRAP it keeps priority 0
  Send(Multicast(9));
  EXPECT_EQ(Counts({a, b}), (V{1, 1}));
  Drop(catch_all);
  Send(Multicast(9));
  EXPECT_EQ(Counts({a, b}), (V{2, 0}));
}

TEST_F(VerbsSteeringTest, AllDefaultAndMcDefaultTakeWhatNothingElseSteered) {
  ibv_qp *a = qp_, *all = Qp(0), *mc = Qp(0), *user = Qp(0);
  FlowAttr dns = UdpFlow(53), all_default(IBV_FLOW_ATTR_ALL_DEFAULT), mc_default(IBV_FLOW_ATTR_MC_DEFAULT);
  Flow(a, dns);
  ibv_flow* everything = Flow(all, all_default);
  Flow(mc, mc_default);
  Send(Udp4(53));
  Send(Udp4(54));
  Send(Multicast(54));
  EXPECT_EQ(Counts({a, all, mc}), (V{1, 2, 1}));  // the multicast frame reached both defaults
  UserRule(0xffff, 54, user);                     // any DR root rule comes before the leftovers
  Send(Udp4(54));
  EXPECT_EQ(Counts({all, user}), (V{0, 1}));
  Drop(everything);
  Send(Udp4(55));
  Send(Multicast(55));
  EXPECT_EQ(Counts({all, mc}), (V{0, 1}));
  EXPECT_EQ(Port(0), 0);  // the unicast frame took the NIC_RX default: the PF has steering
  FlowAttr tagged(IBV_FLOW_ATTR_ALL_DEFAULT);
  tagged.Add(NewSpec<ibv_flow_spec_action_tag>(IBV_FLOW_SPEC_ACTION_TAG));
  EXPECT_EQ(Error(a, tagged), EINVAL);
}

TEST_F(VerbsSteeringTest, SniffersCopyAllTrafficOfTheirFunctionWhateverElseSteersIt) {
  ibv_qp *a = qp_, *sniff = Qp(0), *sent_only = Qp(0);
  FlowAttr sniffer(IBV_FLOW_ATTR_SNIFFER), tx_sniffer(IBV_FLOW_ATTR_SNIFFER, 0, IBV_FLOW_ATTR_FLAGS_EGRESS);
  Flow(sniff, sniffer);
  Flow(sent_only, tx_sniffer);
  // Alone, sniffers are not steering: the PF's interface still takes what it receives.
  Send(Udp4(1));
  EXPECT_EQ(Port(0), 1);
  EXPECT_EQ(Counts({sniff, sent_only}), (V{1, 0}));

  FlowAttr dns = UdpFlow(53);
  Flow(a, dns);
  UserRule(0, 54, nullptr);  // the user drops port 54
  Send(Udp4(53));
  Send(Udp4(54));
  Send(Udp4(55));  // misses everything: the NIC_RX default
  EXPECT_EQ(Counts({a, sniff, sent_only}), (V{1, 3, 0}));
  // What the PF sends: both sniffers, and the frame still leaves by the wire. A VF's traffic is not the PF's.
  Send(Udp4(7), 0);
  Send(Udp4(7), 1);
  EXPECT_EQ(Counts({sniff, sent_only}), (V{1, 1}));
  EXPECT_EQ(Wire(), 2);
  EXPECT_EQ(Port(0), 0);
}

TEST_F(VerbsSteeringTest, EgressFlowsDropAndCountWhatTheirFunctionSends) {
  ibv_counters* counters = Counters();
  auto count = NewSpec<ibv_flow_spec_counter_action>(IBV_FLOW_SPEC_ACTION_COUNT);
  count.counters = counters;
  // Priority 0 counts every IPv4 frame and lets it go on (DONT_TRAP); priority 1 drops port 9.
  FlowAttr counted(IBV_FLOW_ATTR_NORMAL, 0, IBV_FLOW_ATTR_FLAGS_EGRESS | IBV_FLOW_ATTR_FLAGS_DONT_TRAP);
  counted.Add(AnyIpv4()).Add(count);
  FlowAttr blocked = UdpFlow(9, 1, IBV_FLOW_ATTR_FLAGS_EGRESS);
  blocked.Add(NewSpec<ibv_flow_spec_action_drop>(IBV_FLOW_SPEC_ACTION_DROP));
  Flow(qp_, counted);  // the QP only names the device (the PF)
  Flow(qp_, blocked);
  Send(Udp4(9), 0);
  Send(Udp4(10), 0);
  Send(Udp4(9), 1);  // VF1's frames are not the PF's
  EXPECT_EQ(Wire(), 2);
  uint64_t values[2];
  ASSERT_EQ(ibv_read_counters(counters, values, 2, 0), 0);
  EXPECT_EQ(values[0], 2u);
  Send(Udp4(9));  // received frames are not egress traffic
  EXPECT_EQ(Port(0), 1);
  EXPECT_EQ(Count(qp_), 0);

  // A VF's QP names the VF.
  FlowAttr vf_blocked = UdpFlow(9, 0, IBV_FLOW_ATTR_FLAGS_EGRESS);
  vf_blocked.Add(NewSpec<ibv_flow_spec_action_drop>(IBV_FLOW_SPEC_ACTION_DROP));
  Flow(vf_qp_, vf_blocked);
  Send(Udp4(9), 1);
  Send(Udp4(10), 1);
  EXPECT_EQ(Wire(), 1);
}

TEST_F(VerbsSteeringTest, CountersAreSharedByTheirFlowsAndCheckedLikeMlx5) {
  ibv_counters* counters = Counters();
  auto count = NewSpec<ibv_flow_spec_counter_action>(IBV_FLOW_SPEC_ACTION_COUNT);
  count.counters = counters;
  FlowAttr dns = UdpFlow(53), ntp = UdpFlow(123);
  dns.Add(count);
  ntp.Add(count);
  Flow(qp_, dns);
  Flow(qp_, ntp);
  Send(Udp4(53));
  Send(Udp4(123));
  Send(Udp4(124));
  uint64_t values[4] = {9, 9, 9, 9};
  ASSERT_EQ(ibv_read_counters(counters, values, 4, 0), 0);
  EXPECT_EQ(values[0], 2u);
  EXPECT_EQ(values[1], sim::BuildFrame(Udp4(53)).size() + sim::BuildFrame(Udp4(123)).size());
  EXPECT_EQ(values[2], 0u);

  ibv_counter_attach_attr point{IBV_COUNTER_PACKETS, 2, 0};
  EXPECT_EQ(ibv_attach_counters_point_flow(counters, &point, nullptr), EBUSY);
  EXPECT_EQ(ibv_attach_counters_point_flow(counters, &point, flows_.back()), ENOTSUP);
  EXPECT_EQ(ibv_destroy_counters(counters), EBUSY);
  EXPECT_EQ(ibv_read_counters(counters, values, 1, 0), EINVAL);  // index 1 does not fit
  EXPECT_EQ(ibv_read_counters(counters, values, 2, 2), EINVAL);  // unknown flag
  EXPECT_EQ(ibv_read_counters(counters, nullptr, 2, 0), EINVAL);

  ibv_counters_init_attr init{};
  init.comp_mask = 1;
  errno = 0;
  EXPECT_EQ(ibv_create_counters(ctx_, &init), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  EXPECT_EQ(ibv_create_counters(ctx_, nullptr), nullptr);
  EXPECT_EQ(errno, EINVAL);
  init.comp_mask = 0;
  ibv_counters* bare = ibv_create_counters(ctx_, &init);
  ASSERT_NE(bare, nullptr);
  EXPECT_EQ(ibv_attach_counters_point_flow(bare, nullptr, nullptr), EINVAL);
  ibv_counter_attach_attr bad{IBV_COUNTER_PACKETS, 0, 1};
  EXPECT_EQ(ibv_attach_counters_point_flow(bare, &bad, nullptr), EOPNOTSUPP);
  uint32_t description = 2;  // an out-of-range C enum, as C code may pass
  std::memcpy(&bad.counter_desc, &description, sizeof description);
  bad.comp_mask = 0;
  EXPECT_EQ(ibv_attach_counters_point_flow(bare, &bad, nullptr), ENOTSUP);
  auto bare_count = NewSpec<ibv_flow_spec_counter_action>(IBV_FLOW_SPEC_ACTION_COUNT);
  bare_count.counters = bare;
  FlowAttr unpointed = UdpFlow(1);
  unpointed.Add(bare_count);
  std::string message;
  EXPECT_EQ(Error(qp_, unpointed, &message), EINVAL);
  EXPECT_THAT(message, HasSubstr("no counter points"));
  EXPECT_EQ(ibv_read_counters(bare, values, 4, 0), EINVAL);  // bound to no flow
  EXPECT_EQ(ibv_destroy_counters(bare), 0);
}

TEST_F(VerbsSteeringTest, FlowsHoldTheirQpAndTheNicUntilDestroyed) {
  ibv_qp* a = Qp(0);
  FlowAttr dns = UdpFlow(53);
  ibv_flow* f = ibv_create_flow(a, dns.get());
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(drsim_destroy_qp(a), EBUSY);
  EXPECT_THAT(drsim_last_error(), HasSubstr("1 verbs flow(s) are attached"));
  EXPECT_EQ(drsim_close(ctx_), EBUSY);
  Send(Udp4(53));
  Send(Udp4(54));
  EXPECT_EQ(Count(a), 1);
  EXPECT_EQ(Port(0), 0);
  EXPECT_EQ(ibv_destroy_flow(f), 0);
  // No flow left: the PF has no steering, and its interface takes everything again.
  Send(Udp4(53));
  EXPECT_EQ(Port(0), 1);
  EXPECT_EQ(Count(a), 0);
}

TEST_F(VerbsSteeringTest, AVfQpSteersInItsOwnFunction) {
  // The user's FDB sends wire traffic to VF1 (from a level-1 table: root rules take no vport).
  mlx5dv_dr_domain* fdb = mlx5dv_dr_domain_create(ctx_, MLX5DV_DR_DOMAIN_TYPE_FDB);
  mlx5dv_dr_table *root = mlx5dv_dr_table_create(fdb, 0), *t1 = mlx5dv_dr_table_create(fdb, 1);
  hw::MatchParams any;
  mlx5dv_dr_matcher* all = mlx5dv_dr_matcher_create(root, 0, 0, any.get());
  mlx5dv_dr_matcher* all_t1 = mlx5dv_dr_matcher_create(t1, 0, 0, any.get());
  mlx5dv_dr_action* to_t1 = mlx5dv_dr_action_create_dest_table(t1);
  mlx5dv_dr_action* to_vf1 = mlx5dv_dr_action_create_dest_vport(fdb, 1);
  mlx5dv_dr_action *jump_list[] = {to_t1}, *vf1_list[] = {to_vf1};
  mlx5dv_dr_rule* jump = mlx5dv_dr_rule_create(all, any.get(), 1, jump_list);
  mlx5dv_dr_rule* rule = mlx5dv_dr_rule_create(all_t1, any.get(), 1, vf1_list);
  ASSERT_TRUE(jump != nullptr && rule != nullptr) << drsim_last_error();
  FlowAttr dns = UdpFlow(53), pf_dns = UdpFlow(53);
  Flow(vf_qp_, dns);
  Flow(qp_, pf_dns);
  EXPECT_EQ(vf_qp_->context, vf_ctx_);
  Send(Udp4(53));
  Send(Udp4(54));
  EXPECT_EQ(Counts({vf_qp_, qp_}), (V{1, 0}));
  EXPECT_EQ(Port(1), 0);  // VF1 has steering now: its miss took the NIC_RX default
  EXPECT_EQ(mlx5dv_dr_rule_destroy(rule), 0);
  EXPECT_EQ(mlx5dv_dr_rule_destroy(jump), 0);
  EXPECT_EQ(mlx5dv_dr_matcher_destroy(all_t1), 0);
  EXPECT_EQ(mlx5dv_dr_matcher_destroy(all), 0);
  EXPECT_EQ(mlx5dv_dr_action_destroy(to_vf1), 0);
  EXPECT_EQ(mlx5dv_dr_action_destroy(to_t1), 0);
  EXPECT_EQ(mlx5dv_dr_table_destroy(t1), 0);
  EXPECT_EQ(mlx5dv_dr_table_destroy(root), 0);
  EXPECT_EQ(mlx5dv_dr_domain_destroy(fdb), 0);
}

TEST_F(VerbsSteeringTest, UnalignedRequestsAreRead) {
  FlowAttr dns = UdpFlow(53);
  const ibv_flow_attr* aligned = dns.get();
  std::vector<uint8_t> buffer(dns.size() + 1);
  std::memcpy(buffer.data() + 1, aligned, dns.size());  // a packed struct at an odd address
  ibv_flow* f = ibv_create_flow(qp_, reinterpret_cast<ibv_flow_attr*>(buffer.data() + 1));
  ASSERT_NE(f, nullptr) << drsim_last_error();
  flows_.push_back(f);
  Send(Udp4(53));
  EXPECT_EQ(Count(qp_), 1);
}

}  // namespace
}  // namespace drsim::capi::testing
