// dr::KernelSteering on the software NIC: root tables of the kernel's namespaces merge around rdma-core's
// root tables in hw::RootRank order, kernel destination lists copy frames to queues and send them on
// through the rest of the root, NIC_TX copies reach queues, and the public dr:: API keeps its behaviour.
#include "dr/kernel_steering.h"

#include <cstdint>
#include <deque>
#include <vector>

#include "dr/dr.h"
#include "gtest/gtest.h"
#include "hw/match_params.h"
#include "sim/frame_builder.h"
#include "sim/nic.h"
#include "sim/rx_queue.h"

namespace drsim {
namespace {

using hw::kOuter;
using hw::MatchBuilder;
using hw::MatchParams;
using hw::RootNamespace;
using Dest = dr::KernelSteering::Destination;

std::vector<uint8_t> UdpFrame(uint16_t dport) {
  sim::FrameSpec s;
  s.dmac = *hw::MacAddress::Parse("02:00:00:00:00:01");
  s.smac = *hw::MacAddress::Parse("02:00:00:00:00:02");
  s.protocol = sim::kIpProtoUdp;
  s.dport = dport;
  s.payload_len = 8;
  return sim::BuildFrame(s);
}

MatchParams PortMask() { return *MatchBuilder().IpVersion(kOuter, 4).UdpDport(kOuter, 0xffff).Build(); }
MatchParams Port(uint16_t port) {
  return *MatchBuilder().IpVersion(kOuter, 4).UdpDport(kOuter, port).Build();
}

// How many frames wait in queue `qp` of `fn`.
size_t Waiting(sim::Function& fn, uint32_t qp) { return fn.queue(qp)->size(); }

// A NIC with one PF domain of `type`, the objects tests build kept alive in creation order.
class KernelSteeringTest : public ::testing::Test {
 protected:
  explicit KernelSteeringTest(mlx5dv_dr_domain_type type = MLX5DV_DR_DOMAIN_TYPE_NIC_RX)
      : domain_(*dr::Domain::Create(nic_.pf(), type)) {}

  dr::Table& Table(RootNamespace ns) {
    tables_.push_back(*dr::KernelSteering::CreateRootTable(domain_, ns));
    return tables_.back();
  }
  dr::Matcher& Matcher(const dr::Table& t, uint16_t priority, const MatchParams& mask) {
    matchers_.push_back(*dr::Matcher::Create(t, priority, mask));
    return matchers_.back();
  }
  dr::Action& Keep(absl::StatusOr<dr::Action> a) {
    EXPECT_TRUE(a.ok()) << a.status();
    actions_.push_back(*std::move(a));
    return actions_.back();
  }
  void AddRule(const dr::Matcher& m, const MatchParams& value, std::vector<const dr::Action*> list) {
    absl::StatusOr<dr::Rule> r = dr::Rule::Create(m, value, list);
    ASSERT_TRUE(r.ok()) << r.status();
    rules_.push_back(*std::move(r));
  }
  // A new queue of the PF and its dest QP action.
  uint32_t Queue(const dr::Action** to_queue) {
    const uint32_t qp = nic_.pf().CreateQueue();
    *to_queue = &Keep(dr::Action::DestQp(nic_.pf(), qp));
    return qp;
  }

  sim::Nic nic_;
  dr::Domain domain_;
  std::deque<dr::Table> tables_;
  std::deque<dr::Matcher> matchers_;
  std::deque<dr::Action> actions_;
  std::deque<dr::Rule> rules_;
};

TEST_F(KernelSteeringTest, NamespacesMergeAroundTheBypassRootInRankOrder) {
  const dr::Action *to_sniffer, *to_dont_trap, *to_user, *to_leftovers;
  const uint32_t sniffer_qp = Queue(&to_sniffer), dont_trap_qp = Queue(&to_dont_trap),
                 user_qp = Queue(&to_user), leftovers_qp = Queue(&to_leftovers);
  // rdma-core's own root table: port 53 at priority 1 to the user's queue.
  dr::Table user_root = *dr::Table::Create(domain_, 0);
  AddRule(Matcher(user_root, 1, PortMask()), Port(53), {to_user});
  // Leftovers (created before the rest, still last), DONT_TRAP priority 1, sniffer (created last, first).
  AddRule(Matcher(Table(RootNamespace::kLeftovers), 0, MatchParams()), MatchParams(), {to_leftovers});
  const dr::Action& dont_trap = Keep(dr::KernelSteering::Destinations(
      domain_, {{Dest::Kind::kNextPriority, nullptr, hw::RootRank(RootNamespace::kBypass, 1)},
                {Dest::Kind::kQueue, to_dont_trap}}));
  AddRule(Matcher(Table(RootNamespace::kDontTrap), 1, PortMask()), Port(53), {&dont_trap});
  const dr::Action& sniff = Keep(dr::KernelSteering::Destinations(
      domain_, {{Dest::Kind::kNextPriority, nullptr, hw::RootRank(RootNamespace::kDontTrap, 0)},
                {Dest::Kind::kQueue, to_sniffer}}));
  AddRule(Matcher(Table(RootNamespace::kSniffer), 7, MatchParams()), MatchParams(), {&sniff});

  sim::Verdict v = nic_.ReceiveFromWire(UdpFrame(53));
  EXPECT_EQ(v.fate, sim::Fate::kQueued);
  EXPECT_EQ(v.qp_num, user_qp);  // the frame itself went on to the user's rule
  ASSERT_EQ(v.copies.size(), 2u);
  EXPECT_EQ(v.copies[0].qp_num, sniffer_qp);
  EXPECT_EQ(v.copies[1].qp_num, dont_trap_qp);
  ASSERT_EQ(v.path.size(), 3u);  // sniffer, DONT_TRAP, the user's root table
  EXPECT_EQ(v.path[2].table_id, user_root.id());

  v = nic_.ReceiveFromWire(UdpFrame(54));
  EXPECT_EQ(v.qp_num, leftovers_qp);
  EXPECT_EQ(Waiting(nic_.pf(), sniffer_qp), 2u);
  EXPECT_EQ(Waiting(nic_.pf(), dont_trap_qp), 1u);
  EXPECT_EQ(Waiting(nic_.pf(), user_qp), 1u);
  EXPECT_EQ(Waiting(nic_.pf(), leftovers_qp), 1u);
}

TEST_F(KernelSteeringTest, DontTrapPrecedesBypassOfItsPriorityOnly) {
  const dr::Action *to_a, *to_b;
  const uint32_t a = Queue(&to_a), b = Queue(&to_b);
  // A newer bypass matcher at priority 2 and a DONT_TRAP one at priority 2: DONT_TRAP first; a bypass
  // matcher at priority 1 precedes both.
  AddRule(Matcher(Table(RootNamespace::kDontTrap), 2, PortMask()), Port(53), {to_a});
  dr::Table user_root = *dr::Table::Create(domain_, 0);
  AddRule(Matcher(user_root, 2, PortMask()), Port(53), {to_b});
  EXPECT_EQ(nic_.ReceiveFromWire(UdpFrame(53)).qp_num, a);
  AddRule(Matcher(user_root, 1, PortMask()), Port(53), {to_b});
  EXPECT_EQ(nic_.ReceiveFromWire(UdpFrame(53)).qp_num, b);
}

TEST_F(KernelSteeringTest, PublicDestRootTableSkipsSniffersAndDontTrapOfItsPriority) {
  const dr::Action *to_sniffer, *to_dont_trap, *to_user;
  const uint32_t sniffer_qp = Queue(&to_sniffer), dont_trap_qp = Queue(&to_dont_trap),
                 user_qp = Queue(&to_user);
  AddRule(Matcher(Table(RootNamespace::kSniffer), 0, MatchParams()), MatchParams(),
          {&Keep(dr::KernelSteering::Destinations(
              domain_, {{Dest::Kind::kNextPriority, nullptr, hw::RootRank(RootNamespace::kDontTrap, 0)},
                        {Dest::Kind::kQueue, to_sniffer}}))});
  AddRule(Matcher(Table(RootNamespace::kDontTrap), 3, PortMask()), Port(53), {to_dont_trap});
  // The user's root sends everything to table 1, which jumps back into the root at priority 3.
  dr::Table root = *dr::Table::Create(domain_, 0), t1 = *dr::Table::Create(domain_, 1);
  AddRule(Matcher(root, 0, MatchParams()), MatchParams(), {&Keep(dr::Action::DestTable(t1))});
  AddRule(Matcher(t1, 0, MatchParams()), MatchParams(), {&Keep(dr::Action::DestRootTable(root, 3))});
  AddRule(Matcher(root, 3, PortMask()), Port(53), {to_user});

  sim::Verdict v = nic_.ReceiveFromWire(UdpFrame(53));
  EXPECT_EQ(v.qp_num, user_qp);
  EXPECT_EQ(Waiting(nic_.pf(), sniffer_qp), 1u);  // once: the jump back does not sniff again
  EXPECT_EQ(Waiting(nic_.pf(), dont_trap_qp), 0u);
}

TEST_F(KernelSteeringTest, SniffersAloneLeaveTheFunctionItsInterface) {
  const dr::Action* to_sniffer;
  const uint32_t sniffer_qp = Queue(&to_sniffer);
  AddRule(Matcher(Table(RootNamespace::kSniffer), 0, MatchParams()), MatchParams(),
          {&Keep(dr::KernelSteering::Destinations(
              domain_, {{Dest::Kind::kNextPriority, nullptr, hw::RootRank(RootNamespace::kDontTrap, 0)},
                        {Dest::Kind::kQueue, to_sniffer}}))});
  std::vector<uint8_t> f = UdpFrame(1);
  EXPECT_EQ(nic_.ReceiveFromWire(f).fate, sim::Fate::kPort);
  EXPECT_EQ(nic_.pf().PollPort(), f);
  EXPECT_EQ(Waiting(nic_.pf(), sniffer_qp), 1u);
  // Any other root matcher is steering: misses now take the NIC_RX default.
  Matcher(Table(RootNamespace::kLeftovers), 0, PortMask());
  EXPECT_EQ(nic_.ReceiveFromWire(f).fate, sim::Fate::kDomainDefault);
}

TEST_F(KernelSteeringTest, CountersCountOnceAndAnEntryWithoutDestinationsDrops) {
  const uint32_t base = *nic_.AllocateCounters(2);
  const dr::Action& c0 = Keep(dr::Action::FlowCounter(nic_.pf(), base, 0));
  const dr::Action& c1 = Keep(dr::Action::FlowCounter(nic_.pf(), base, 1));
  const dr::Action* to_q;
  const uint32_t q = Queue(&to_q);
  dr::Matcher& m = Matcher(Table(RootNamespace::kBypass), 0, PortMask());
  AddRule(m, Port(1),
          {&Keep(dr::KernelSteering::Destinations(
              domain_, {{Dest::Kind::kCounter, &c0}, {Dest::Kind::kCounter, &c1}}))});
  AddRule(
      m, Port(2),
      {&Keep(dr::KernelSteering::Destinations(
          domain_, {{Dest::Kind::kCounter, &c0}, {Dest::Kind::kQueue, to_q}, {Dest::Kind::kCounter, &c1}}))});
  AddRule(m, Port(3), {&Keep(dr::KernelSteering::Destinations(domain_, {}))});
  EXPECT_EQ(nic_.ReceiveFromWire(UdpFrame(1)).fate, sim::Fate::kDropped);
  sim::Verdict v = nic_.ReceiveFromWire(UdpFrame(2));
  EXPECT_EQ(v.fate, sim::Fate::kQueued);
  EXPECT_TRUE(v.copies.empty());  // counters make no copies
  EXPECT_EQ(nic_.ReceiveFromWire(UdpFrame(3)).fate, sim::Fate::kDropped);
  uint64_t packets, bytes;
  ASSERT_TRUE(nic_.QueryCounter(base + 0, &packets, &bytes).ok());
  EXPECT_EQ(packets, 2u);
  ASSERT_TRUE(nic_.QueryCounter(base + 1, &packets, &bytes).ok());
  EXPECT_EQ(packets, 2u);
  EXPECT_EQ(Waiting(nic_.pf(), q), 1u);
}

TEST_F(KernelSteeringTest, BadDestinationsAreRefused) {
  const dr::Action& drop = Keep(dr::Action::Drop());
  absl::StatusOr<dr::Action> a = dr::KernelSteering::Destinations(domain_, {{Dest::Kind::kQueue, &drop}});
  EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(a.status().message().find("destination[0]"), std::string::npos);
  a = dr::KernelSteering::Destinations(domain_, {{Dest::Kind::kCounter, &drop}});
  EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
  a = dr::KernelSteering::Destinations(domain_, {{Dest::Kind::kQueue, nullptr}});
  EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
  sim::Nic other;
  const uint32_t foreign = other.pf().CreateQueue();
  dr::Action to_foreign = *dr::Action::DestQp(other.pf(), foreign);  // dies before `other`
  a = dr::KernelSteering::Destinations(domain_, {{Dest::Kind::kQueue, &to_foreign}});
  EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
  dr::Domain fdb = *dr::Domain::Create(nic_.pf(), MLX5DV_DR_DOMAIN_TYPE_FDB);
  EXPECT_EQ(dr::KernelSteering::Destinations(fdb, {}).status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(dr::KernelSteering::CreateRootTable(dr::Domain(), RootNamespace::kSniffer).status().code(),
            absl::StatusCode::kInvalidArgument);
}

class KernelSteeringTxTest : public KernelSteeringTest {
 protected:
  KernelSteeringTxTest() : KernelSteeringTest(MLX5DV_DR_DOMAIN_TYPE_NIC_TX) {}
};

TEST_F(KernelSteeringTxTest, SentFramesAreCopiedToQueuesAndGoOn) {
  const dr::Action* to_q;
  const uint32_t q = Queue(&to_q);
  const uint32_t base = *nic_.AllocateCounters(1);
  const dr::Action& count = Keep(dr::Action::FlowCounter(nic_.pf(), base, 0));
  AddRule(Matcher(Table(RootNamespace::kSniffer), 0, MatchParams()), MatchParams(),
          {&Keep(dr::KernelSteering::Destinations(
              domain_, {{Dest::Kind::kNextPriority, nullptr, hw::RootRank(RootNamespace::kDontTrap, 0)},
                        {Dest::Kind::kQueue, to_q}}))});
  // Port 9 is counted and allowed; port 10 is dropped.
  dr::Matcher& m = Matcher(Table(RootNamespace::kBypass), 0, PortMask());
  AddRule(m, Port(9),
          {&Keep(dr::KernelSteering::Destinations(domain_,
                                                  {{Dest::Kind::kAllow}, {Dest::Kind::kCounter, &count}}))});
  AddRule(m, Port(10), {&Keep(dr::KernelSteering::Destinations(domain_, {}))});

  std::vector<uint8_t> f = UdpFrame(9);
  sim::Verdict v = nic_.pf().Send(f);
  EXPECT_EQ(v.fate, sim::Fate::kWire);
  ASSERT_EQ(v.copies.size(), 1u);
  EXPECT_EQ(v.copies[0].fate, sim::Fate::kQueued);
  EXPECT_EQ(nic_.PollWire(), f);
  EXPECT_EQ(nic_.pf().queue(q)->Poll()->frame, f);
  EXPECT_EQ(nic_.pf().Send(UdpFrame(10)).fate, sim::Fate::kDropped);
  EXPECT_EQ(Waiting(nic_.pf(), q), 1u);  // sniffed before the drop
  uint64_t packets, bytes;
  ASSERT_TRUE(nic_.QueryCounter(base, &packets, &bytes).ok());
  EXPECT_EQ(packets, 1u);
}

TEST_F(KernelSteeringTxTest, PublicDestArraysStillRefuseNicTx) {
  const dr::Action* to_q;
  Queue(&to_q);
  const dr::Action& drop = Keep(dr::Action::Drop());
  dr::Action::ArrayDestination dests[] = {{to_q}, {&drop}};
  EXPECT_EQ(dr::Action::DestArray(domain_, dests).status().code(), absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace drsim
