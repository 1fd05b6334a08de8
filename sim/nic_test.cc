// The NIC on hand-built compiled tables (no driver): walk order, actions, queues, verdicts.
#include "sim/nic.h"

#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "hw/match_params.h"
#include "sim/frame_builder.h"
#include "sim/rx_queue.h"

namespace drsim::sim {
namespace {

using hw::kOuter;

// A matcher on outer.udp_dport (with ip_version 4), built by hand.
std::unique_ptr<hw::CompiledMatcher> PortMatcher(uint32_t id, uint16_t priority, uint64_t seq) {
  hw::MatchParams mask = *hw::MatchBuilder().IpVersion(kOuter, 0xf).UdpDport(kOuter, 0xffff).Build();
  return std::make_unique<hw::CompiledMatcher>(id, priority, seq, hw::Definer::FromMask(mask.bytes()));
}

// A rule made by hand: its id and its programs (which must outlive the matcher holding it).
struct TestRule {
  uint32_t id;
  hw::PipePrograms programs;
};

void AddRule(hw::CompiledMatcher& m, uint16_t port, const TestRule* rule) {
  hw::MatchParams v = *hw::MatchBuilder().IpVersion(kOuter, 4).UdpDport(kOuter, port).Build();
  std::vector<uint32_t> key(m.definer.key_words());
  m.definer.Extract(v.bytes(), key.data());
  m.table.Insert(key.data(), hw::RuleRecord::Of(&rule->programs, rule->id));
}

std::vector<uint8_t> UdpFrame(uint16_t dport) {
  FrameSpec s;
  s.protocol = kIpProtoUdp;
  s.dport = dport;
  s.payload_len = 10;
  return BuildFrame(s);
}

TestRule Rule(uint32_t id, hw::Destination dest, uint32_t queue = 0, const hw::FlowTable* table = nullptr) {
  TestRule r{id, {}};
  r.programs[hw::kRxPipe].destination = dest;
  r.programs[hw::kRxPipe].queue = queue;
  r.programs[hw::kRxPipe].table = table;
  return r;
}

TEST(NicTest, WithoutAnySteeringThePfInterfaceTakesWireTraffic) {
  Nic nic;
  std::vector<uint8_t> f = UdpFrame(1);
  Verdict v = nic.ReceiveFromWire(f);
  EXPECT_EQ(v.fate, Fate::kPort);
  EXPECT_EQ(v.vport, 0);
  EXPECT_EQ(nic.stats().to_port, 1u);
  EXPECT_EQ(nic.stats().domain_default, 0u);
  EXPECT_EQ(nic.pf().PollPort(), f);
  EXPECT_EQ(nic.pf().PollPort(), std::nullopt);
}

TEST(NicTest, AnEmptyFrameIsAFrameWithNoHeaders) {
  Nic nic;
  Verdict v = nic.ReceiveFromWire(std::vector<uint8_t>{});
  EXPECT_EQ(v.fate, Fate::kPort);
  EXPECT_EQ(nic.pf().PollPort(), std::vector<uint8_t>{});
}

TEST(NicTest, WalksTablesAndDeliversWithTag) {
  Nic nic;
  uint32_t q = nic.pf().CreateQueue(2);
  hw::FlowTable root{1, 0, MLX5DV_DR_DOMAIN_TYPE_NIC_RX, {}, hw::RootNamespace::kBypass, {}};
  hw::FlowTable t1{2, 1, MLX5DV_DR_DOMAIN_TYPE_NIC_RX, {}, hw::RootNamespace::kBypass, {}};
  auto m0 = PortMatcher(10, 0, 1);
  auto m1 = PortMatcher(11, 0, 2);
  TestRule jump = Rule(100, hw::Destination::kTable, 0, &t1);
  jump.programs[hw::kRxPipe].ops.push_back({hw::OpCode::kTag, 0x42});
  TestRule deliver = Rule(101, hw::Destination::kQueue, q);
  TestRule drop = Rule(102, hw::Destination::kDrop);
  AddRule(*m0, 53, &jump);
  AddRule(*m0, 54, &drop);
  AddRule(*m1, 53, &deliver);
  root.chain = {m0.get()};
  root.LinkAll();
  t1.chain = {m1.get()};
  t1.LinkAll();
  nic.pf().AttachRootTable(&root);

  std::vector<uint8_t> f53 = UdpFrame(53), f54 = UdpFrame(54), f55 = UdpFrame(55);
  Verdict v = nic.ReceiveFromWire(f53);
  EXPECT_EQ(v.fate, Fate::kQueued);
  EXPECT_EQ(v.qp_num, q);
  EXPECT_TRUE(v.has_flow_tag);
  EXPECT_EQ(v.flow_tag, 0x42u);
  ASSERT_EQ(v.path.size(), 2u);
  EXPECT_EQ(v.path[0].table_id, 1u);
  EXPECT_EQ(v.path[0].rule_id, 100u);
  EXPECT_EQ(v.path[1].table_level, 1u);
  EXPECT_EQ(v.path[1].matcher_id, 11u);
  EXPECT_EQ(v.path[1].rule_id, 101u);
  std::optional<RxCompletion> c = nic.pf().queue(q)->Poll();
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->frame, f53);
  EXPECT_EQ(c->byte_len, f53.size());
  EXPECT_EQ(c->flow_tag, 0x42u);

  EXPECT_EQ(nic.ReceiveFromWire(f54).fate, Fate::kDropped);
  Verdict miss = nic.ReceiveFromWire(f55);
  EXPECT_EQ(miss.fate, Fate::kDomainDefault);
  ASSERT_EQ(miss.path.size(), 1u);
  EXPECT_EQ(miss.path[0].rule_id, 0u);

  // A bounded queue: the third frame finds it full.
  nic.ReceiveFromWire(f53);
  nic.ReceiveFromWire(f53);
  EXPECT_EQ(nic.ReceiveFromWire(f53).fate, Fate::kQueueFull);
  EXPECT_EQ(nic.pf().queue(q)->dropped_full(), 1u);
  // With steering, a miss takes the NIC_RX default (drop); without any, the PF's interface gets it.
  EXPECT_EQ(nic.ReceiveFromWire(f55).fate, Fate::kDomainDefault);
  EXPECT_EQ(nic.pf().PollPort(), std::nullopt);
  nic.pf().DetachRootTable(&root);
  EXPECT_EQ(nic.ReceiveFromWire(f53).fate, Fate::kPort);
  EXPECT_EQ(nic.pf().PollPort(), f53);
}

TEST(NicTest, RootTablesMergeByPriorityThenNewest) {
  Nic nic;
  uint32_t qa = nic.pf().CreateQueue(), qb = nic.pf().CreateQueue();
  hw::FlowTable r1{1, 0, MLX5DV_DR_DOMAIN_TYPE_NIC_RX, {}, hw::RootNamespace::kBypass, {}};
  hw::FlowTable r2{2, 0, MLX5DV_DR_DOMAIN_TYPE_NIC_RX, {}, hw::RootNamespace::kBypass, {}};
  auto older = PortMatcher(10, 3, 1);
  auto newer = PortMatcher(11, 3, 2);
  TestRule to_a = Rule(1, hw::Destination::kQueue, qa);
  TestRule to_b = Rule(2, hw::Destination::kQueue, qb);
  AddRule(*older, 7, &to_a);
  AddRule(*newer, 7, &to_b);
  r1.chain = {older.get()};
  r1.LinkAll();
  r2.chain = {newer.get()};
  r2.LinkAll();
  nic.pf().AttachRootTable(&r1);
  nic.pf().AttachRootTable(&r2);
  std::vector<uint8_t> f = UdpFrame(7);
  Verdict v = nic.ReceiveFromWire(f);
  EXPECT_EQ(v.qp_num, qb);  // equal priority: the newer matcher first
  EXPECT_EQ(v.path[0].table_id, 2u);
  older->priority = 2;
  nic.pf().TableChanged(&r1);
  EXPECT_EQ(nic.ReceiveFromWire(f).qp_num, qa);
}

TEST(NicTest, JumpLoopsAreCut) {
  Nic nic;
  hw::FlowTable root{1, 0, MLX5DV_DR_DOMAIN_TYPE_NIC_RX, {}, hw::RootNamespace::kBypass, {}};
  hw::FlowTable t{2, 1, MLX5DV_DR_DOMAIN_TYPE_NIC_RX, {}, hw::RootNamespace::kBypass, {}};
  auto m0 = PortMatcher(10, 0, 1);
  auto m1 = PortMatcher(11, 0, 2);
  TestRule to_t = Rule(1, hw::Destination::kTable, 0, &t);
  TestRule again = Rule(2, hw::Destination::kTable, 0, &t);  // t jumps to itself
  AddRule(*m0, 9, &to_t);
  AddRule(*m1, 9, &again);
  root.chain = {m0.get()};
  root.LinkAll();
  t.chain = {m1.get()};
  t.LinkAll();
  nic.pf().AttachRootTable(&root);
  std::vector<uint8_t> f = UdpFrame(9);
  Verdict v = nic.ReceiveFromWire(f);
  EXPECT_EQ(v.fate, Fate::kTableLoop);
  EXPECT_EQ(v.path.size(), static_cast<size_t>(Nic::kMaxTableJumps) + 1);
}

// A chain of `jumps` tables behind the root, each jumping on to the next for UDP port 9; the last one
// delivers port 9 to a queue from its second matcher (its first, on port 10, misses). Untraced bursts
// follow the jumps ahead of the walk (Nic::FollowJumps); the verdicts must be the traced walk's.
struct JumpChain {
  std::vector<std::unique_ptr<hw::FlowTable>> tables;
  std::vector<std::unique_ptr<hw::CompiledMatcher>> matchers;
  std::vector<std::unique_ptr<TestRule>> rules;

  JumpChain(Nic& nic, int jumps, uint32_t queue) {
    for (int i = 0; i <= jumps; ++i) {
      tables.push_back(std::make_unique<hw::FlowTable>());
      tables.back()->id = i + 1;
      tables.back()->level = i;
    }
    for (int i = 0; i <= jumps; ++i) {
      const bool last = i == jumps;
      if (last) {
        matchers.push_back(PortMatcher(100 + 2 * i, 0, 2 * i + 1));
        rules.push_back(std::make_unique<TestRule>(Rule(1000 + 2 * i, hw::Destination::kDrop)));
        AddRule(*matchers.back(), 10, rules.back().get());
        tables[i]->chain.insert(matchers.back().get());
      }
      matchers.push_back(PortMatcher(101 + 2 * i, 1, 2 * i + 2));
      rules.push_back(std::make_unique<TestRule>(
          last ? Rule(1001 + 2 * i, hw::Destination::kQueue, queue)
               : Rule(1001 + 2 * i, hw::Destination::kTable, 0, tables[i + 1].get())));
      AddRule(*matchers.back(), 9, rules.back().get());
      tables[i]->chain.insert(matchers.back().get());
      tables[i]->LinkAll();
    }
    nic.pf().AttachRootTable(tables[0].get());
  }
};

// Sends 40 frames to port 9 in one untraced burst, then one traced; all must end in `fate`.
void ExpectUntracedAsTraced(Nic& nic, Fate fate) {
  std::vector<uint8_t> f = UdpFrame(9);
  std::vector<Frame> views(40, Frame(f));
  std::vector<Verdict> verdicts(views.size());
  ASSERT_TRUE(nic.ReceiveFromWire(views, absl::MakeSpan(verdicts), /*trace=*/false).ok());
  for (const Verdict& v : verdicts) EXPECT_EQ(v.fate, fate);
  EXPECT_EQ(nic.ReceiveFromWire(f).fate, fate);
}

TEST(NicTest, JumpsFollowedAheadCountTowardsTheLoopLimit) {
  {
    Nic nic;
    const uint32_t q = nic.pf().CreateQueue(1000);
    JumpChain chain(nic, Nic::kMaxTableJumps, q);
    ExpectUntracedAsTraced(nic, Fate::kQueued);
    EXPECT_EQ(nic.pf().queue(q)->size(), 41u);
  }
  {
    Nic nic;
    const uint32_t q = nic.pf().CreateQueue(1000);
    JumpChain chain(nic, Nic::kMaxTableJumps + 1, q);
    ExpectUntracedAsTraced(nic, Fate::kTableLoop);
    EXPECT_EQ(nic.pf().queue(q)->size(), 0u);
  }
}

// Frames the root sends into two tables of three matchers each: they hit at every depth, one rule shadows
// another of a later matcher, one hit tags and counts (ops: its walk goes on from the hit, and runs them
// once), and some frames miss every matcher. An untraced burst walks each table once for all its frames
// (Nic::WalkTogether); every verdict must be the traced walk's, frame by frame.
TEST(NicTest, BurstWalksOfTablesGiveEachFrameItsOwnWalksVerdict) {
  Nic nic;
  const uint32_t q1 = nic.pf().CreateQueue(1000), q2 = nic.pf().CreateQueue(1000);
  hw::FlowTable root{1, 0, MLX5DV_DR_DOMAIN_TYPE_NIC_RX, {}, hw::RootNamespace::kBypass, {}};
  hw::FlowTable t1{2, 1, MLX5DV_DR_DOMAIN_TYPE_NIC_RX, {}, hw::RootNamespace::kBypass, {}};
  hw::FlowTable t2{3, 1, MLX5DV_DR_DOMAIN_TYPE_NIC_RX, {}, hw::RootNamespace::kBypass, {}};
  auto r = PortMatcher(10, 0, 1);
  std::vector<std::unique_ptr<hw::CompiledMatcher>> in_t1, in_t2;
  for (uint16_t i = 0; i < 3; ++i) {
    in_t1.push_back(PortMatcher(20 + i, i, 10 + i));
    in_t2.push_back(PortMatcher(30 + i, i, 20 + i));
  }
  TestRule to_t1 = Rule(100, hw::Destination::kTable, 0, &t1);
  TestRule to_t2 = Rule(101, hw::Destination::kTable, 0, &t2);
  TestRule deliver1 = Rule(102, hw::Destination::kQueue, q1);
  TestRule deliver2 = Rule(103, hw::Destination::kQueue, q2);
  TestRule tag_deliver = Rule(104, hw::Destination::kQueue, q2);
  const uint32_t counter = *nic.AllocateCounters(1);
  tag_deliver.programs[hw::kRxPipe].ops.push_back({hw::OpCode::kTag, 0x77});
  tag_deliver.programs[hw::kRxPipe].ops.push_back({hw::OpCode::kCounter, counter});
  TestRule drop = Rule(105, hw::Destination::kDrop);
  // Ports 1..8 go to t1, 11..18 to t2. t1: port 1 in its first matcher, 2 and 3 in its second, 3 (shadowed)
  // and 4 in its third; t2 the same shape with 11..14, its port 13 tagged. Ports 5..8 and 15..18 miss.
  for (uint16_t p = 1; p <= 8; ++p) {
    AddRule(*r, p, &to_t1);
    AddRule(*r, p + 10, &to_t2);
  }
  AddRule(*in_t1[0], 1, &deliver1);
  AddRule(*in_t1[1], 2, &drop);
  AddRule(*in_t1[1], 3, &deliver2);
  AddRule(*in_t1[2], 3, &drop);
  AddRule(*in_t1[2], 4, &deliver1);
  AddRule(*in_t2[0], 11, &drop);
  AddRule(*in_t2[1], 12, &deliver1);
  AddRule(*in_t2[1], 13, &tag_deliver);
  AddRule(*in_t2[2], 13, &drop);
  AddRule(*in_t2[2], 14, &deliver2);
  root.chain = {r.get()};
  root.LinkAll();
  for (auto& m : in_t1) t1.chain.insert(m.get());
  for (auto& m : in_t2) t2.chain.insert(m.get());
  t1.LinkAll();
  t2.LinkAll();
  nic.pf().AttachRootTable(&root);

  std::vector<std::vector<uint8_t>> frames;
  for (int i = 0; i < 45; ++i) frames.push_back(UdpFrame(static_cast<uint16_t>(1 + (i * 7) % 18)));
  std::vector<Frame> views(frames.begin(), frames.end());
  std::vector<Verdict> burst(views.size());
  ASSERT_TRUE(nic.ReceiveFromWire(views, absl::MakeSpan(burst), /*trace=*/false).ok());
  int queued = 0;
  for (size_t i = 0; i < views.size(); ++i) {
    const Verdict walked = nic.ReceiveFromWire(views[i]);
    SCOPED_TRACE(testing::Message() << "frame " << i << ", port " << 1 + (i * 7) % 18);
    EXPECT_EQ(burst[i].fate, walked.fate);
    EXPECT_EQ(burst[i].qp_num, walked.qp_num);
    EXPECT_EQ(burst[i].has_flow_tag, walked.has_flow_tag);
    EXPECT_EQ(burst[i].flow_tag, walked.flow_tag);
    queued += walked.fate == Fate::kQueued;
  }
  // The traced walks themselves, for a few ports.
  EXPECT_EQ(nic.ReceiveFromWire(UdpFrame(1)).qp_num, q1);
  EXPECT_EQ(nic.ReceiveFromWire(UdpFrame(3)).qp_num, q2);  // the second matcher's rule, not the third's drop
  EXPECT_EQ(nic.ReceiveFromWire(UdpFrame(4)).qp_num, q1);
  EXPECT_EQ(nic.ReceiveFromWire(UdpFrame(6)).fate, Fate::kDomainDefault);
  const Verdict tagged = nic.ReceiveFromWire(UdpFrame(13));
  EXPECT_EQ(tagged.qp_num, q2);
  EXPECT_EQ(tagged.flow_tag, 0x77u);
  // Port 13 is frames 12 and 30 of the burst, then the same two walked one by one, then this one.
  uint64_t packets = 0, bytes = 0;
  ASSERT_TRUE(nic.QueryCounter(counter, &packets, &bytes).ok());
  EXPECT_EQ(packets, 5u);
  EXPECT_EQ(nic.ReceiveFromWire(UdpFrame(14)).qp_num, q2);
  EXPECT_EQ(nic.ReceiveFromWire(UdpFrame(16)).fate, Fate::kDomainDefault);
  EXPECT_GT(queued, 10);
}

TEST(NicTest, BurstsGiveOneVerdictPerFrame) {
  Nic nic;
  uint32_t q = nic.pf().CreateQueue(1000);
  hw::FlowTable root{1, 0, MLX5DV_DR_DOMAIN_TYPE_NIC_RX, {}, hw::RootNamespace::kBypass, {}};
  auto m = PortMatcher(10, 0, 1);
  TestRule deliver = Rule(1, hw::Destination::kQueue, q);
  AddRule(*m, 80, &deliver);
  root.chain = {m.get()};
  root.LinkAll();
  nic.pf().AttachRootTable(&root);
  std::vector<std::vector<uint8_t>> frames;
  for (int i = 0; i < 100; ++i) frames.push_back(UdpFrame(i % 2 ? 80 : 81));
  std::vector<Frame> views(frames.begin(), frames.end());
  std::vector<Verdict> verdicts(frames.size());
  ASSERT_TRUE(nic.ReceiveFromWire(views, absl::MakeSpan(verdicts)).ok());
  std::vector<Verdict> short_verdicts(3);
  EXPECT_EQ(nic.ReceiveFromWire(views, absl::MakeSpan(short_verdicts)).code(),
            absl::StatusCode::kInvalidArgument);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(verdicts[i].fate, i % 2 ? Fate::kQueued : Fate::kDomainDefault) << i;
    EXPECT_TRUE(verdicts[i].path.empty());  // not traced
  }
  EXPECT_EQ(nic.pf().queue(q)->size(), 50u);
  EXPECT_EQ(nic.stats().frames, 100u);
}

// Frames whose first hit only queues or drops them are finished from that hit: each verdict still comes back
// whole (a verdict passed in is overwritten, the path and copies of an earlier call cleared), the frame
// reaches its queue as it came, without a tag, and a full queue is reported.
TEST(NicTest, FramesFinishedFromTheirFirstHitGetWholeVerdicts) {
  Nic nic;
  uint32_t q = nic.pf().CreateQueue(2);
  hw::FlowTable root{1, 0, MLX5DV_DR_DOMAIN_TYPE_NIC_RX, {}, hw::RootNamespace::kBypass, {}};
  auto m = PortMatcher(10, 0, 1);
  TestRule deliver = Rule(1, hw::Destination::kQueue, q), drop = Rule(2, hw::Destination::kDrop);
  AddRule(*m, 80, &deliver);
  AddRule(*m, 81, &drop);
  root.chain = {m.get()};
  root.LinkAll();
  nic.pf().AttachRootTable(&root);
  std::vector<std::vector<uint8_t>> frames = {UdpFrame(80), UdpFrame(80), UdpFrame(80), UdpFrame(81)};
  std::vector<Frame> views(frames.begin(), frames.end());
  std::vector<Verdict> verdicts(frames.size());
  for (Verdict& v : verdicts) {  // what an earlier call, traced and copying, may have left
    v.fate = Fate::kWire;
    v.vport = 9;
    v.qp_num = 99;
    v.has_flow_tag = true;
    v.flow_tag = 7;
    v.path.push_back(Hop{});
    v.copies.push_back(Delivery{});
  }
  ASSERT_TRUE(nic.ReceiveFromWire(views, absl::MakeSpan(verdicts)).ok());
  const Fate want[] = {Fate::kQueued, Fate::kQueued, Fate::kQueueFull, Fate::kDropped};
  for (size_t i = 0; i < verdicts.size(); ++i) {
    const Verdict& v = verdicts[i];
    EXPECT_EQ(v.fate, want[i]) << i;
    EXPECT_EQ(v.vport, 0) << i;
    EXPECT_EQ(v.qp_num, i < 3 ? q : 0u) << i;
    EXPECT_FALSE(v.has_flow_tag) << i;
    EXPECT_EQ(v.flow_tag, 0u) << i;
    EXPECT_TRUE(v.path.empty()) << i;
    EXPECT_TRUE(v.copies.empty()) << i;
  }
  for (int i = 0; i < 2; ++i) {
    std::optional<RxCompletion> c = nic.pf().queue(q)->Poll();
    ASSERT_TRUE(c.has_value());
    EXPECT_EQ(c->frame, frames[0]);
    EXPECT_FALSE(c->has_flow_tag);
  }
  const NicStats stats = nic.stats();
  EXPECT_EQ(stats.queued, 2u);
  EXPECT_EQ(stats.queue_full, 1u);
  EXPECT_EQ(stats.dropped, 1u);
}

// A matcher of `mask` built by hand, and a rule of it with `value`.
std::unique_ptr<hw::CompiledMatcher> MaskMatcher(uint32_t id, uint16_t priority, uint64_t seq,
                                                 const hw::MatchParams& mask) {
  return std::make_unique<hw::CompiledMatcher>(id, priority, seq, hw::Definer::FromMask(mask.bytes()));
}
void AddValueRule(hw::CompiledMatcher& m, const hw::MatchParams& value, const TestRule* rule) {
  std::vector<uint32_t> key(m.definer.key_words());
  m.definer.Extract(value.bytes(), key.data());
  m.table.Insert(key.data(), hw::RuleRecord::Of(&rule->programs, rule->id));
}

std::vector<uint8_t> VxlanFrame(hw::Ipv4Address src, uint32_t vni) {
  TunnelFrameSpec t;
  t.outer.ipv4_src = src;
  t.outer.ipv4_dst = *hw::Ipv4Address::Parse("10.0.0.2");
  t.tunnel.kind = Encap::kVxlan;
  t.tunnel.vni = vni;
  t.inner.protocol = kIpProtoUdp;
  t.inner.payload_len = 10;
  return BuildFrame(t);
}

// A burst's frames are parsed no further than their lookups need: only their outer headers while the
// matchers tried key on those, all of it once one keys elsewhere (here the VXLAN VNI), whether in the word
// a matcher's summary is built on or elsewhere in its key. Each frame lands where the previous burst's
// frame of the same place left its headers, so a lookup that read past what was parsed would see that
// frame's VNI.
TEST(NicTest, LookupsPastTheOuterHeadersParseTheWholeFrame) {
  Nic nic;
  const uint32_t q1 = nic.pf().CreateQueue(100), q2 = nic.pf().CreateQueue(100),
                 q3 = nic.pf().CreateQueue(100);
  hw::FlowTable root{1, 0, MLX5DV_DR_DOMAIN_TYPE_NIC_RX, {}, hw::RootNamespace::kBypass, {}};
  hw::FlowTable t1{2, 1, MLX5DV_DR_DOMAIN_TYPE_NIC_RX, {}, hw::RootNamespace::kBypass, {}};
  auto to_t1 = PortMatcher(10, 0, 1);  // outer headers only: the burst's first lookup parses just those
  TestRule jump = Rule(100, hw::Destination::kTable, 0, &t1);
  AddRule(*to_t1, 4789, &jump);
  // In t1: an outer-only matcher that misses, then one on outer source and VNI (its summary word is the
  // address, 32 bits against the VNI's 24), then one on the VNI alone.
  auto port = PortMatcher(11, 0, 2);
  TestRule never = Rule(101, hw::Destination::kDrop);
  AddRule(*port, 1, &never);
  const hw::Ipv4Address a = *hw::Ipv4Address::Parse("10.0.0.1"), b = *hw::Ipv4Address::Parse("10.0.0.9");
  auto src_vni = MaskMatcher(
      12, 1, 3, *hw::MatchBuilder().Ipv4Src(kOuter, hw::Ipv4Address{0xffffffff}).VxlanVni(0xffffff).Build());
  TestRule to_q3 = Rule(102, hw::Destination::kQueue, q3);
  AddValueRule(*src_vni, *hw::MatchBuilder().Ipv4Src(kOuter, b).VxlanVni(3).Build(), &to_q3);
  auto vni = MaskMatcher(13, 2, 4, *hw::MatchBuilder().VxlanVni(0xffffff).Build());
  TestRule to_q1 = Rule(103, hw::Destination::kQueue, q1), to_q2 = Rule(104, hw::Destination::kQueue, q2);
  AddValueRule(*vni, *hw::MatchBuilder().VxlanVni(1).Build(), &to_q1);
  AddValueRule(*vni, *hw::MatchBuilder().VxlanVni(2).Build(), &to_q2);
  // What makes the walk below depend on the parse: source a and VNI 5 are refused on the summary words.
  ASSERT_EQ(src_vni->definer.key_words(), 2u);
  ASSERT_EQ(src_vni->definer.widest_word(), 0u);  // the address
  ASSERT_FALSE(src_vni->MayMatch(hw::MatchBuilder().Ipv4Src(kOuter, a).Build()->bytes()));
  ASSERT_FALSE(vni->MayMatch(hw::MatchBuilder().VxlanVni(5).Build()->bytes()));
  root.chain = {to_t1.get()};
  root.LinkAll();
  t1.chain = {port.get(), src_vni.get(), vni.get()};
  t1.LinkAll();
  nic.pf().AttachRootTable(&root);

  auto burst = [&](const std::vector<std::pair<hw::Ipv4Address, uint32_t>>& sources_and_vnis) {
    std::vector<std::vector<uint8_t>> frames;
    for (const auto& [src, v] : sources_and_vnis) frames.push_back(VxlanFrame(src, v));
    std::vector<Frame> views(frames.begin(), frames.end());
    std::vector<Verdict> verdicts(frames.size());
    EXPECT_TRUE(nic.ReceiveFromWire(views, absl::MakeSpan(verdicts)).ok());
    std::vector<uint32_t> queues;
    for (const Verdict& v : verdicts) queues.push_back(v.fate == Fate::kQueued ? v.qp_num : 0);
    return queues;
  };
  EXPECT_EQ(burst({{a, 1}, {a, 5}, {b, 3}, {a, 2}}), (std::vector<uint32_t>{q1, 0, q3, q2}));
  // Frame 0 passes src_vni's summary on its address, and its key needs the VNI (the last frame 0's was 1);
  // frame 1 reaches the VNI matcher refused by src_vni, and the last frame 1's VNI (5) had no rule.
  EXPECT_EQ(burst({{b, 3}, {a, 1}, {a, 2}, {b, 3}}), (std::vector<uint32_t>{q3, q1, q2, q3}));
}

TEST(NicTest, QueuesReferencedByActionsCannotBeDestroyed) {
  Nic nic;
  uint32_t q = nic.pf().CreateQueue();
  ASSERT_TRUE(nic.pf().RetainQueue(q).ok());
  EXPECT_EQ(nic.pf().DestroyQueue(q).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(nic.pf().queue(q), nullptr);
  nic.pf().ReleaseQueue(q);
  EXPECT_TRUE(nic.pf().DestroyQueue(q).ok());
  EXPECT_EQ(nic.pf().queue(q), nullptr);
  EXPECT_EQ(nic.pf().DestroyQueue(q).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(nic.pf().RetainQueue(q).code(), absl::StatusCode::kNotFound);
}

// Workers: each counts what it processed; the NIC's stats sum them, those of destroyed workers included.
// Their number is bounded by the reclaimer's reader slots (the NIC's built-in worker holds one).
TEST(NicTest, WorkersCountTheirFramesAndAreBounded) {
  Nic nic;
  std::unique_ptr<Worker> w = *Worker::Create(nic);
  std::vector<uint8_t> f = UdpFrame(1);
  std::vector<Frame> burst(3, f);
  ASSERT_TRUE(w->ReceiveFromWire(burst).ok());
  ASSERT_TRUE(nic.ReceiveFromWire(burst).ok());
  EXPECT_EQ(w->stats().frames, 3u);
  EXPECT_EQ(w->stats().to_port, 3u);
  EXPECT_EQ(nic.stats().frames, 6u);
  w.reset();
  EXPECT_EQ(nic.stats().frames, 6u);

  std::vector<std::unique_ptr<Worker>> workers;
  for (size_t i = 1; i < hw::Reclaimer::kMaxReaders; ++i) workers.push_back(*Worker::Create(nic));
  absl::StatusOr<std::unique_ptr<Worker>> one_more = Worker::Create(nic);
  EXPECT_EQ(one_more.status().code(), absl::StatusCode::kResourceExhausted);
  workers.pop_back();
  EXPECT_TRUE(Worker::Create(nic).ok());
}

}  // namespace
}  // namespace drsim::sim
