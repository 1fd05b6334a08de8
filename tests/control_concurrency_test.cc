// Control-path concurrency: several threads program domains on one software NIC at once (their own
// domains, and one shared domain). Run under --config=tsan to check the locking; afterwards every rule
// must steer as programmed.
#include <thread>
#include <vector>

#include "dr/dr.h"
#include "gtest/gtest.h"
#include "hw/match_params.h"
#include "sim/frame_builder.h"
#include "sim/nic.h"

namespace drsim {
namespace {

using hw::kOuter;

hw::MatchParams PortMask() {
  return *hw::MatchBuilder().IpVersion(kOuter, 4).UdpDport(kOuter, 0xffff).UdpSport(kOuter, 0xffff).Build();
}
hw::MatchParams PortValue(uint16_t sport, uint16_t dport) {
  return *hw::MatchBuilder().IpVersion(kOuter, 4).UdpSport(kOuter, sport).UdpDport(kOuter, dport).Build();
}

TEST(ControlConcurrencyTest, ThreadsProgramDomainsAtOnce) {
  constexpr int kThreads = 4;
  constexpr int kRules = 500;
  sim::Nic nic;
  const uint32_t qp = nic.pf().CreateQueue(kThreads * kRules);
  // A shared domain every thread inserts into; its root sends what the threads' matchers miss to it.
  dr::Domain shared = *dr::Domain::Create(nic.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
  dr::Table shared_root = *dr::Table::Create(shared, 0);
  dr::Table shared_table = *dr::Table::Create(shared, 1);
  dr::Matcher catch_all = *dr::Matcher::Create(shared_root, 100, 0, nullptr);
  dr::Action to_shared = *dr::Action::DestTable(shared_table);
  dr::Rule jump = *dr::Rule::Create(catch_all, hw::MatchParams(), {&to_shared});
  dr::Matcher shared_matcher = *dr::Matcher::Create(shared_table, 0, PortMask());
  dr::Action drop = *dr::Action::Drop();

  std::vector<dr::Domain> domains(kThreads);
  std::vector<dr::Table> roots(kThreads);
  std::vector<dr::Matcher> matchers(kThreads);
  std::vector<std::vector<dr::Rule>> rules(kThreads), shared_rules(kThreads);
  std::vector<dr::Action> actions(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      domains[t] = *dr::Domain::Create(nic.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
      roots[t] = *dr::Table::Create(domains[t], 0);
      matchers[t] = *dr::Matcher::Create(roots[t], static_cast<uint16_t>(t), PortMask());
      actions[t] = *dr::Action::DestQp(nic.pf(), qp);
      for (int i = 0; i < kRules; ++i) {
        rules[t].push_back(*dr::Rule::Create(matchers[t], PortValue(t, i), {&actions[t]}));
        shared_rules[t].push_back(*dr::Rule::Create(shared_matcher, PortValue(t, i), {&drop}));
      }
      for (int i = 0; i < kRules; i += 2) ASSERT_TRUE(rules[t][i].Destroy().ok());
      for (int i = 2; i < kRules; i += 4) ASSERT_TRUE(shared_rules[t][i].Destroy().ok());
    });
  }
  for (std::thread& th : threads) th.join();

  // Odd i: the thread's own rule delivers. Even i: its rule is gone, so the shared domain decides:
  // i % 4 == 0 still has a shared drop rule; i % 4 == 2 lost it too and takes the NIC_RX default.
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kRules; ++i) {
      sim::FrameSpec s;
      s.sport = static_cast<uint16_t>(t);
      s.dport = static_cast<uint16_t>(i);
      std::vector<uint8_t> f = sim::BuildFrame(s);
      const sim::Fate want = i % 2        ? sim::Fate::kQueued
                             : i % 4 == 0 ? sim::Fate::kDropped
                                          : sim::Fate::kDomainDefault;
      EXPECT_EQ(nic.ReceiveFromWire(f).fate, want) << "thread " << t << " rule " << i;
    }
  }
}

}  // namespace
}  // namespace drsim
