// ASO connection tracking against the independent reference model (tests/ct_reference_model.h) on random
// TCP conversations with reordering, retransmissions, out-of-window segments, bogus acks, RSTs, FINs and
// window scaling: verdict by verdict and context by context, first on the engine alone, then end to end
// through the software NIC (an aso ct action, the result register matched in a later table, the context
// queried back).
#include <infiniband/mlx5dv.h>

#include <map>
#include <random>
#include <set>

#include "dr/dr.h"
#include "gtest/gtest.h"
#include "hw/match_params.h"
#include "sim/conntrack.h"
#include "sim/nic.h"
#include "tests/ct_conversation.h"
#include "tests/ct_reference_model.h"

namespace drsim::testing {
namespace {

// The register byte hardware writes for each reference verdict (mlx5 PMD: syndrome bits 7:6 valid 0,
// invalid 1, trap 2; bit 1 state change; bit 0 bad packet).
uint8_t ExpectedRegister(uint32_t verdict) {
  switch (verdict) {
    case kRefValid:
      return 0x00;
    case kRefValid | kRefChanged:
      return 0x02;
    case kRefInvalid:
      return 0x40;
    case kRefInvalid | kRefBad:
      return 0x41;
    case kRefDisabled:
      return 0x80;
    default:
      ADD_FAILURE() << "unexpected reference verdict " << verdict;
      return 0xff;
  }
}

Below FromRng(std::mt19937& rng) {
  return [&rng](uint32_t n) { return static_cast<uint32_t>(rng() % n); };
}

TEST(CtDifferentialTest, EngineMatchesTheReferenceModel) {
  std::mt19937 rng(42);
  const Below below = FromRng(rng);
  std::set<uint32_t> verdicts;
  std::set<int> states;
  for (int conversation = 0; conversation < 3000; ++conversation) {
    const CtConversation conv = MakeConversation(below, 60);
    sim::CtContext engine = conv.context;
    RefConnection ref = ToReference(conv.context);
    for (size_t i = 0; i < conv.steps.size(); ++i) {
      const CtStep& step = conv.steps[i];
      const uint32_t got = sim::TrackCtSegment(engine, step.dir == 0, step.tcp ? &step.segment : nullptr);
      const uint32_t want = ref.Segment(step.dir, ToReference(step));
      ASSERT_EQ(got, want) << "conversation " << conversation << " step " << i;
      const sim::CtContext model = FromReference(ref, conv.context);
      ASSERT_TRUE(engine == model) << "conversation " << conversation << " step " << i << "\n engine "
                                   << sim::DescribeCtContext(engine) << "\n model  "
                                   << sim::DescribeCtContext(model);
      verdicts.insert(want);
      states.insert(ref.state);
    }
  }
  // The conversations reach every verdict and every state.
  EXPECT_EQ(verdicts, (std::set<uint32_t>{kRefValid, kRefValid | kRefChanged, kRefInvalid,
                                          kRefInvalid | kRefBad, kRefDisabled}));
  EXPECT_EQ(states.size(), 6u);
}

TEST(CtDifferentialTest, NicMatchesTheReferenceModel) {
  constexpr int kConversations = 64;
  constexpr uint8_t kReg = 3;
  sim::Nic nic;
  dr::Domain domain = *dr::Domain::Create(nic.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
  dr::Table root = *dr::Table::Create(domain, 0), t1 = *dr::Table::Create(domain, 1),
            t2 = *dr::Table::Create(domain, 2);
  dr::Action to_t1 = *dr::Action::DestTable(t1), to_t2 = *dr::Action::DestTable(t2);
  dr::Matcher root_all = *dr::Matcher::Create(root, 0, 0, nullptr);
  dr::Rule root_rule = *dr::Rule::Create(root_all, hw::MatchParams(), {&to_t1});
  dr::Matcher by_ports = *dr::Matcher::Create(t1, 0,
                                              *hw::MatchBuilder()
                                                   .IpVersion(hw::kOuter, 4)
                                                   .IpProtocol(hw::kOuter, 0xff)
                                                   .TcpSport(hw::kOuter, 0xffff)
                                                   .TcpDport(hw::kOuter, 0xffff)
                                                   .Build());
  // Table 2: one queue per register value the tracker can write (under the PMD's mask 0xc3).
  dr::Matcher by_result = *dr::Matcher::Create(t2, 0, *hw::MatchBuilder().RegC(kReg, 0xc3).Build());
  std::map<uint32_t, uint8_t> register_of_queue;
  std::vector<dr::Action> to_queue;
  std::vector<dr::Rule> result_rules;
  to_queue.reserve(5);
  for (uint8_t value : {0x00, 0x02, 0x40, 0x41, 0x80}) {
    const uint32_t q = nic.pf().CreateQueue();
    register_of_queue[q] = value;
    to_queue.push_back(*dr::Action::DestQp(nic.pf(), q));
    result_rules.push_back(
        *dr::Rule::Create(by_result, *hw::MatchBuilder().RegC(kReg, value).Build(), {&to_queue.back()}));
  }

  const uint32_t cts = *nic.CreateAsoObject(hw::AsoKind::kConnTrack, 6);
  std::mt19937 rng(7);
  const Below below = FromRng(rng);
  std::vector<dr::Action> ct_actions;
  std::vector<dr::Rule> ct_rules;
  ct_actions.reserve(2 * kConversations);
  for (int k = 0; k < kConversations; ++k) {
    const CtConversation conv = MakeConversation(below, 40);
    ASSERT_TRUE(nic.ConfigureAsoConnTrack(cts, k, conv.context).ok());
    const uint16_t client = static_cast<uint16_t>(10000 + k), server = 80;
    for (int dir = 0; dir < 2; ++dir) {
      ct_actions.push_back(*dr::Action::Aso(domain, cts, k,
                                            dir == 0 ? MLX5DV_DR_ACTION_FLAGS_ASO_CT_DIRECTION_INITIATOR
                                                     : MLX5DV_DR_ACTION_FLAGS_ASO_CT_DIRECTION_RESPONDER,
                                            kReg));
      const hw::MatchParams ports = *hw::MatchBuilder()
                                         .IpVersion(hw::kOuter, 4)
                                         .IpProtocol(hw::kOuter, 6)
                                         .TcpSport(hw::kOuter, dir == 0 ? client : server)
                                         .TcpDport(hw::kOuter, dir == 0 ? server : client)
                                         .Build();
      ct_rules.push_back(*dr::Rule::Create(by_ports, ports, {&ct_actions.back(), &to_t2}));
    }
    RefConnection ref = ToReference(conv.context);
    for (size_t i = 0; i < conv.steps.size(); ++i) {
      const CtStep& step = conv.steps[i];
      if (!step.tcp) continue;  // a UDP datagram misses the TCP rules
      const std::vector<uint8_t> frame = TcpFrame(step, client, server);
      const sim::Verdict v = nic.ReceiveFromWire(frame);
      const uint8_t want = ExpectedRegister(ref.Segment(step.dir, ToReference(step)));
      ASSERT_TRUE(register_of_queue.count(v.qp_num)) << "conversation " << k << " step " << i;
      ASSERT_EQ(register_of_queue[v.qp_num], want) << "conversation " << k << " step " << i;
    }
    const sim::CtContext queried = *nic.QueryAsoConnTrack(cts, k);
    const sim::CtContext model = FromReference(ref, conv.context);
    EXPECT_TRUE(queried == model) << "conversation " << k << "\n queried " << sim::DescribeCtContext(queried)
                                  << "\n model   " << sim::DescribeCtContext(model);
  }
}

}  // namespace
}  // namespace drsim::testing
