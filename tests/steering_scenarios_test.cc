// rdma-core's own DR test scenarios (tests/test_mlx5_dr.py) that run on a NIC_RX domain, reproduced end to
// end on the software NIC: dr:: objects programmed into sim::Nic, real frames in, queues and verdicts out.
#include <optional>
#include <vector>

#include "dr/dr.h"
#include "gtest/gtest.h"
#include "hw/match_params.h"
#include "sim/frame_builder.h"
#include "sim/nic.h"

namespace drsim {
namespace {

using hw::kOuter;
using hw::MatchBuilder;
using hw::MatchParams;

const hw::MacAddress kSmac = *hw::MacAddress::Parse("88:88:88:88:88:88");
const hw::MacAddress kOtherSmac = *hw::MacAddress::Parse("22:22:22:22:22:22");
const hw::MacAddress kDmac = *hw::MacAddress::Parse("24:8a:07:a5:28:a2");

std::vector<uint8_t> Packet(const hw::MacAddress& smac, const hw::MacAddress& dmac = kDmac) {
  sim::FrameSpec s;
  s.smac = smac;
  s.dmac = dmac;
  s.ipv4_src = *hw::Ipv4Address::Parse("1.1.1.1");
  s.ipv4_dst = *hw::Ipv4Address::Parse("2.2.2.2");
  s.protocol = sim::kIpProtoUdp;
  s.sport = 1234;
  s.dport = 5678;
  s.payload_len = 32;
  return sim::BuildFrame(s);
}

// The rdma-core tests' smac mask: ff*6 + 00 00, match_sz 8 (then padded to a multiple of 4 on non-root).
MatchParams SmacMask() {
  MatchParams m = *MatchBuilder().Smac(kOuter, hw::MacAddress::AllOnes()).Build();
  m.set_match_sz(8);
  return m;
}
MatchParams SmacValue(const hw::MacAddress& mac) {
  MatchParams v = *MatchBuilder().Smac(kOuter, mac).Build();
  v.set_match_sz(8);
  return v;
}

class ScenarioTest : public ::testing::Test {
 protected:
  ScenarioTest()
      : domain_(*dr::Domain::Create(nic_.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_RX)), qp_(nic_.pf().CreateQueue()) {}

  // create_rx_recv_rules: root table, smac matcher -> dest_table(level 1); level-1 smac matcher with
  // `actions`.
  void CreateRxRecvRules(const std::vector<const dr::Action*>& actions, uint32_t level = 1) {
    root_ = *dr::Table::Create(domain_, 0);
    table_ = *dr::Table::Create(domain_, level);
    root_matcher_ = *dr::Matcher::Create(root_, 0, hw::kCriteriaOuter, SmacMask().get());
    matcher_ = *dr::Matcher::Create(table_, 1, hw::kCriteriaOuter, SmacMask().get());
    jump_ = *dr::Action::DestTable(table_);
    root_rule_ = *dr::Rule::Create(root_matcher_, SmacValue(kSmac), {&jump_});
    rule_ = *dr::Rule::Create(matcher_, SmacValue(kSmac), actions);
  }

  // Sends `n` packets from `smac`; returns how many reached `qp`.
  int SendTraffic(const hw::MacAddress& smac, int n, uint32_t qp) {
    std::vector<uint8_t> f = Packet(smac);
    int before = static_cast<int>(nic_.pf().queue(qp)->received());
    for (int i = 0; i < n; ++i) nic_.ReceiveFromWire(f);
    return static_cast<int>(nic_.pf().queue(qp)->received()) - before;
  }

  sim::Nic nic_;
  dr::Domain domain_;
  uint32_t qp_;
  dr::Table root_, table_;
  dr::Matcher root_matcher_, matcher_;
  dr::Action jump_;
  dr::Rule root_rule_, rule_;
};

TEST_F(ScenarioTest, TblQpRule) {
  dr::Action qp = *dr::Action::DestQp(nic_.pf(), qp_);
  CreateRxRecvRules({&qp});
  EXPECT_EQ(SendTraffic(kSmac, 10, qp_), 10);
  std::optional<sim::RxCompletion> c = nic_.pf().queue(qp_)->Poll();
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->frame, Packet(kSmac));
  EXPECT_EQ(SendTraffic(kOtherSmac, 10, qp_), 0);  // other traffic: NIC_RX default drop
  EXPECT_EQ(nic_.stats().domain_default, 10u);
}

TEST_F(ScenarioTest, RootTblQpRule) {
  dr::Action qp = *dr::Action::DestQp(nic_.pf(), qp_);
  root_ = *dr::Table::Create(domain_, 0);
  root_matcher_ = *dr::Matcher::Create(root_, 0, hw::kCriteriaOuter, SmacMask().get());
  // Root tables accept the 6-byte value the test uses there (match_sz 8 here; rdma-core pads).
  rule_ = *dr::Rule::Create(root_matcher_, SmacValue(kSmac), {&qp});
  EXPECT_EQ(SendTraffic(kSmac, 5, qp_), 5);
}

TEST_F(ScenarioTest, TblQpTagRule) {
  dr::Action tag = *dr::Action::Tag(0x123);
  dr::Action qp = *dr::Action::DestQp(nic_.pf(), qp_);
  CreateRxRecvRules({&tag, &qp});
  ASSERT_TRUE(domain_.Sync(MLX5DV_DR_DOMAIN_SYNC_FLAGS_SW | MLX5DV_DR_DOMAIN_SYNC_FLAGS_HW).ok());
  EXPECT_EQ(SendTraffic(kSmac, 3, qp_), 3);
  for (int i = 0; i < 3; ++i) {
    std::optional<sim::RxCompletion> c = nic_.pf().queue(qp_)->Poll();
    ASSERT_TRUE(c.has_value());
    EXPECT_TRUE(c->has_flow_tag);
    EXPECT_EQ(c->flow_tag, 0x123u);
  }
}

TEST_F(ScenarioTest, TblDropAction) {
  // RX [drop] on dmac: those packets never reach the queue; others do.
  dr::Action qp = *dr::Action::DestQp(nic_.pf(), qp_);
  dr::Action drop = *dr::Action::Drop();
  root_ = *dr::Table::Create(domain_, 0);
  table_ = *dr::Table::Create(domain_, 1);
  jump_ = *dr::Action::DestTable(table_);
  root_matcher_ = *dr::Matcher::Create(root_, 0, 0, nullptr);  // empty matcher: everything to table 1
  root_rule_ = *dr::Rule::Create(root_matcher_, MatchParams(), {&jump_});
  MatchParams dmac_mask = *MatchBuilder().Dmac(kOuter, hw::MacAddress::AllOnes()).Build();
  matcher_ = *dr::Matcher::Create(table_, 0, dmac_mask);
  dr::Matcher all = *dr::Matcher::Create(table_, 1, 0, nullptr);
  hw::MacAddress blocked = *hw::MacAddress::Parse("00:00:00:00:00:bb");
  rule_ = *dr::Rule::Create(matcher_, *MatchBuilder().Dmac(kOuter, blocked).Build(), {&drop});
  dr::Rule pass = *dr::Rule::Create(all, MatchParams(), {&qp});
  std::vector<uint8_t> to_blocked = Packet(kSmac, blocked), to_other = Packet(kSmac);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(nic_.ReceiveFromWire(to_blocked).fate, sim::Fate::kDropped);
    EXPECT_EQ(nic_.ReceiveFromWire(to_other).fate, sim::Fate::kQueued);
  }
  EXPECT_EQ(nic_.pf().queue(qp_)->received(), 4u);
}

TEST_F(ScenarioTest, PreventDuplicateRule) {
  ASSERT_TRUE(domain_.AllowDuplicateRules(false).ok());
  table_ = *dr::Table::Create(domain_, 1);
  matcher_ = *dr::Matcher::Create(table_, 0, 0, nullptr);
  dr::Action qp = *dr::Action::DestQp(nic_.pf(), qp_);
  rule_ = *dr::Rule::Create(matcher_, MatchParams(), {&qp});
  EXPECT_EQ(dr::Rule::Create(matcher_, MatchParams(), {&qp}).status().code(),
            absl::StatusCode::kAlreadyExists);
}

TEST_F(ScenarioTest, DuplicatesAreShadowedUntilTheOlderRuleGoes) {
  uint32_t qp2 = nic_.pf().CreateQueue();
  dr::Action a = *dr::Action::DestQp(nic_.pf(), qp_);
  dr::Action b = *dr::Action::DestQp(nic_.pf(), qp2);
  CreateRxRecvRules({&a});
  dr::Rule shadowed = *dr::Rule::Create(matcher_, SmacValue(kSmac), {&b});
  EXPECT_EQ(SendTraffic(kSmac, 2, qp_), 2);
  ASSERT_TRUE(rule_.Destroy().ok());
  EXPECT_EQ(SendTraffic(kSmac, 2, qp2), 2);
}

TEST_F(ScenarioTest, LowerPriorityValueWinsAndHitsDoNotFallThrough) {
  // (test_tx_def_miss_action, on RX): prio 1 [default_miss] beats prio 2 [qp] on the same smac.
  dr::Action miss = *dr::Action::DefaultMiss();
  dr::Action qp = *dr::Action::DestQp(nic_.pf(), qp_);
  root_ = *dr::Table::Create(domain_, 0);
  table_ = *dr::Table::Create(domain_, 1);
  jump_ = *dr::Action::DestTable(table_);
  root_matcher_ = *dr::Matcher::Create(root_, 0, 0, nullptr);
  root_rule_ = *dr::Rule::Create(root_matcher_, MatchParams(), {&jump_});
  dr::Matcher second = *dr::Matcher::Create(table_, 2, hw::kCriteriaOuter, SmacMask().get());
  dr::Matcher first = *dr::Matcher::Create(table_, 1, hw::kCriteriaOuter, SmacMask().get());
  dr::Rule r2 = *dr::Rule::Create(second, SmacValue(kSmac), {&qp});
  dr::Rule r1 = *dr::Rule::Create(first, SmacValue(kSmac), {&miss});
  std::vector<uint8_t> f = Packet(kSmac);
  sim::Verdict v = nic_.ReceiveFromWire(f);
  EXPECT_EQ(v.fate, sim::Fate::kDomainDefault);
  ASSERT_EQ(v.path.size(), 2u);
  EXPECT_EQ(v.path[1].rule_id, r1.id());
  // A tag-only hit also ends the walk of the table: NIC_RX drops it.
  dr::Action tag = *dr::Action::Tag(7);
  ASSERT_TRUE(r1.Destroy().ok());
  r1 = *dr::Rule::Create(first, SmacValue(kSmac), {&tag});
  v = nic_.ReceiveFromWire(f);
  EXPECT_EQ(v.fate, sim::Fate::kDomainDefault);
  EXPECT_TRUE(v.has_flow_tag);
  ASSERT_TRUE(r1.Destroy().ok());
  EXPECT_EQ(nic_.ReceiveFromWire(f).fate, sim::Fate::kQueued);
}

TEST_F(ScenarioTest, SetMatcherLayoutWithTraffic) {
  dr::Action qp = *dr::Action::DestQp(nic_.pf(), qp_);
  root_ = *dr::Table::Create(domain_, 0);
  table_ = *dr::Table::Create(domain_, 1);
  jump_ = *dr::Action::DestTable(table_);
  root_matcher_ = *dr::Matcher::Create(root_, 0, hw::kCriteriaOuter, SmacMask().get());
  root_rule_ = *dr::Rule::Create(root_matcher_, SmacValue(kSmac), {&jump_});
  matcher_ = *dr::Matcher::Create(table_, 1, hw::kCriteriaOuter, SmacMask().get());
  ASSERT_TRUE(matcher_.SetLayout({MLX5DV_DR_MATCHER_LAYOUT_NUM_RULE, 5}).ok());
  rule_ = *dr::Rule::Create(matcher_, SmacValue(kSmac), {&qp});
  ASSERT_TRUE(matcher_.SetLayout({MLX5DV_DR_MATCHER_LAYOUT_NUM_RULE, 6}).ok());
  EXPECT_EQ(SendTraffic(kSmac, 4, qp_), 4);
  ASSERT_TRUE(matcher_.SetLayout({MLX5DV_DR_MATCHER_LAYOUT_RESIZABLE, 0}).ok());
  EXPECT_EQ(SendTraffic(kSmac, 4, qp_), 4);
}

TEST_F(ScenarioTest, ReuseActionAndMatcher) {
  dr::Action qp = *dr::Action::DestQp(nic_.pf(), qp_);
  CreateRxRecvRules({&qp});
  dr::Rule other_root = *dr::Rule::Create(root_matcher_, SmacValue(kOtherSmac), {&jump_});
  dr::Rule other = *dr::Rule::Create(matcher_, SmacValue(kOtherSmac), {&qp});
  EXPECT_EQ(SendTraffic(kSmac, 3, qp_) + SendTraffic(kOtherSmac, 3, qp_), 6);
  EXPECT_EQ(qp.Destroy().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(nic_.pf().DestroyQueue(qp_).code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace drsim
