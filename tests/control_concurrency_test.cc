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
  dr::Domain shared = *dr::Domain::Create(nic.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
  dr::Table shared_table = *dr::Table::Create(shared, 1);
  dr::Matcher shared_matcher = *dr::Matcher::Create(shared_table, 0, PortMask());

  std::vector<dr::Domain> domains(kThreads);
  std::vector<dr::Table> roots(kThreads);
  std::vector<dr::Matcher> matchers(kThreads);
  std::vector<std::vector<dr::Rule>> rules(kThreads);
  std::vector<dr::Action> actions(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      domains[t] = *dr::Domain::Create(nic.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
      roots[t] = *dr::Table::Create(domains[t], 0);
      matchers[t] = *dr::Matcher::Create(roots[t], static_cast<uint16_t>(t), PortMask());
      actions[t] = *dr::Action::DestQp(nic.pf(), qp);
      dr::Action drop = *dr::Action::Drop();
      for (int i = 0; i < kRules; ++i) {
        rules[t].push_back(*dr::Rule::Create(matchers[t], PortValue(t, i), {&actions[t]}));
        // The shared domain: rules from every thread into one matcher.
        dr::Rule r = *dr::Rule::Create(shared_matcher, PortValue(t, i), {&drop});
        if (i % 2) ASSERT_TRUE(r.Destroy().ok());
      }
      for (int i = 0; i < kRules; i += 2) ASSERT_TRUE(rules[t][i].Destroy().ok());
    });
  }
  for (std::thread& th : threads) th.join();

  // Every odd rule of every thread's domain steers to the queue; the even ones were destroyed.
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kRules; ++i) {
      sim::FrameSpec s;
      s.sport = static_cast<uint16_t>(t);
      s.dport = static_cast<uint16_t>(i);
      std::vector<uint8_t> f = sim::BuildFrame(s);
      EXPECT_EQ(nic.ReceiveFromWire(f).fate, i % 2 ? sim::Fate::kQueued : sim::Fate::kDomainDefault)
          << "thread " << t << " rule " << i;
    }
  }
}

}  // namespace
}  // namespace drsim
