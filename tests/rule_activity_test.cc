// dr::Rule::QueryActivity on the software NIC: a rule's last hit and age on the NIC's clock, from its flow
// counter's hit history or its ASO first-hit context's — what flow aging (testpmd's age action) reads.
#include <vector>

#include "dr/dr.h"
#include "gtest/gtest.h"
#include "hw/match_params.h"
#include "sim/nic.h"
#include "tests/udp_frame.h"

namespace drsim {
namespace {

using hw::MatchBuilder;
using hw::MatchParams;

constexpr uint64_t kSecond = 1'000'000'000;

class RuleActivityTest : public ::testing::Test {
 protected:
  RuleActivityTest()
      : domain_(*dr::Domain::Create(nic_.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_RX)),
        table_(*dr::Table::Create(domain_, 0)),
        by_port_(*dr::Matcher::Create(table_, 0, *UdpPort(0xffff).Build())),
        drop_(*dr::Action::Drop()) {}

  void FrameAt(uint64_t ns, uint16_t dport) {
    nic_.set_time_ns(ns);
    nic_.ReceiveFromWire(tests::UdpFrame(1, dport, 10));
  }
  // IPv4 UDP to `dport` (a mask: all ones).
  static MatchBuilder UdpPort(uint32_t dport) {
    MatchBuilder b;
    b.IpVersion(hw::kOuter, 4).IpProtocol(hw::kOuter, dport == 0xffff ? 0xff : 17).UdpDport(hw::kOuter, dport);
    return b;
  }
  MatchParams Port(uint16_t dport) { return *UdpPort(dport).Build(); }

  sim::Nic nic_;
  dr::Domain domain_;
  dr::Table table_;
  dr::Matcher by_port_;
  dr::Action drop_;
};

TEST_F(RuleActivityTest, LastHitAgeAndLongestIdleOnTheNicClock) {
  nic_.set_time_ns(2 * kSecond);
  const uint32_t counter = *nic_.AllocateCounters(1);  // counting from 2 s
  dr::Action count = *dr::Action::FlowCounter(nic_.pf(), counter, 0);
  dr::Rule rule = *dr::Rule::Create(by_port_, Port(53), {&count, &drop_});

  absl::StatusOr<hw::CounterActivity> a = rule.QueryActivity();
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_FALSE(a->hit);
  EXPECT_EQ(a->since_ns, 2 * kSecond);
  EXPECT_EQ(a->idle_ns(), 0u);

  FrameAt(3 * kSecond, 53);
  FrameAt(10 * kSecond, 53);  // 7 s without a hit before this one
  FrameAt(11 * kSecond, 53);
  FrameAt(12 * kSecond, 99);  // another flow: not this rule's
  nic_.set_time_ns(15 * kSecond);
  a = rule.QueryActivity();
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->hit);
  EXPECT_EQ(a->last_hit_ns, 11 * kSecond);
  EXPECT_EQ(a->now_ns, 15 * kSecond);
  EXPECT_EQ(a->idle_ns(), 4 * kSecond);  // the rule's age
  EXPECT_EQ(a->longest_idle_ns, 7 * kSecond);
  // Clearing the counter's packets does not clear its history.
  uint64_t packets, bytes;
  ASSERT_TRUE(nic_.QueryCounter(counter, &packets, &bytes, /*clear=*/true).ok());
  EXPECT_EQ(packets, 3u);
  EXPECT_EQ(rule.QueryActivity()->last_hit_ns, 11 * kSecond);
  // A long current stretch is the longest.
  nic_.set_time_ns(30 * kSecond);
  EXPECT_EQ(rule.QueryActivity()->longest_idle_ns, 19 * kSecond);
}

TEST_F(RuleActivityTest, ASharedCounterReportsEveryRuleUsingIt) {
  const uint32_t counter = *nic_.AllocateCounters(1);
  dr::Action count = *dr::Action::FlowCounter(nic_.pf(), counter, 0);
  dr::Rule dns = *dr::Rule::Create(by_port_, Port(53), {&count, &drop_});
  dr::Rule ntp = *dr::Rule::Create(by_port_, Port(123), {&count, &drop_});
  FrameAt(4 * kSecond, 123);
  EXPECT_EQ(dns.QueryActivity()->last_hit_ns, 4 * kSecond);
  EXPECT_EQ(ntp.QueryActivity()->last_hit_ns, 4 * kSecond);
}

TEST_F(RuleActivityTest, AnAsoFirstHitContextKeepsTheSameHistory) {
  nic_.set_time_ns(1 * kSecond);
  const uint32_t object = *nic_.CreateAsoObject(hw::AsoKind::kFirstHit, 0);  // made at 1 s
  dr::Table table = *dr::Table::Create(domain_, 1);                          // ASO is for non-root tables
  dr::Matcher matcher = *dr::Matcher::Create(table, 0, *UdpPort(0xffff).Build());
  dr::Action hit = *dr::Action::Aso(domain_, object, 7, MLX5DV_DR_ACTION_FLAGS_ASO_FIRST_HIT_SET, 5);
  dr::Rule rule = *dr::Rule::Create(matcher, Port(53), {&hit, &drop_});
  dr::Action jump = *dr::Action::DestTable(table);
  dr::Rule root = *dr::Rule::Create(by_port_, Port(53), {&jump});
  FrameAt(2 * kSecond, 53);
  FrameAt(8 * kSecond, 53);  // 6 s without a set before this one
  nic_.set_time_ns(9 * kSecond);
  absl::StatusOr<hw::CounterActivity> a = rule.QueryActivity();
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->hit);
  EXPECT_EQ(a->since_ns, 1 * kSecond);
  EXPECT_EQ(a->last_hit_ns, 8 * kSecond);
  EXPECT_EQ(a->idle_ns(), 1 * kSecond);
  EXPECT_EQ(a->longest_idle_ns, 6 * kSecond);
  EXPECT_EQ(nic_.QueryAsoFirstHitActivity(object, 7)->longest_idle_ns, 6 * kSecond);
  EXPECT_TRUE(*nic_.QueryAsoFirstHit(object, 7));
  EXPECT_FALSE(*nic_.QueryAsoFirstHit(object, 6));
  // Clearing puts the flag down and starts the history again.
  ASSERT_TRUE(nic_.ClearAsoFirstHit(object, 7).ok());
  EXPECT_FALSE(*nic_.QueryAsoFirstHit(object, 7));
  nic_.set_time_ns(10 * kSecond);
  a = rule.QueryActivity();
  EXPECT_FALSE(a->hit);
  EXPECT_EQ(a->since_ns, 9 * kSecond);
  EXPECT_EQ(a->longest_idle_ns, 1 * kSecond);
  EXPECT_EQ(nic_.QueryAsoFirstHitActivity(object, 512).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(nic_.ClearAsoFirstHit(object + 1, 0).code(), absl::StatusCode::kNotFound);
}

TEST_F(RuleActivityTest, Errors) {
  dr::Rule uncounted = *dr::Rule::Create(by_port_, Port(53), {&drop_});
  absl::StatusOr<hw::CounterActivity> a = uncounted.QueryActivity();
  EXPECT_EQ(a.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(a.status().message().find("has no flow_counter action and no aso first-hit action"),
            std::string::npos)
      << a.status();
  EXPECT_EQ(dr::Rule().QueryActivity().status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(nic_.QueryCounterActivity(12345).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace drsim
