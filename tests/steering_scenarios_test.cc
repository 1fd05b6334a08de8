// rdma-core's own DR test scenarios (tests/test_mlx5_dr.py) that run on a NIC_RX domain, reproduced end to
// end on the software NIC: dr:: objects programmed into sim::Nic, real frames in, queues and verdicts out.
#include <arpa/inet.h>

#include <cerrno>
#include <optional>
#include <vector>

#include "dr/dr.h"
#include "dr/status_errno.h"
#include "gtest/gtest.h"
#include "hw/byte_order.h"
#include "hw/match_params.h"
#include "hw/table_index.h"
#include "sim/frame_builder.h"
#include "sim/nic.h"
#include "sim/rx_queue.h"

namespace drsim {
namespace {

using hw::kOuter;
using hw::MatchBuilder;
using hw::MatchParams;

const hw::MacAddress kSmac = *hw::MacAddress::Parse("88:88:88:88:88:88");
const hw::MacAddress kOtherSmac = *hw::MacAddress::Parse("22:22:22:22:22:22");
const hw::MacAddress kDmac = *hw::MacAddress::Parse("24:8a:07:a5:28:a2");

sim::FrameSpec PacketSpec(const hw::MacAddress& smac, const hw::MacAddress& dmac = kDmac) {
  sim::FrameSpec s;
  s.smac = smac;
  s.dmac = dmac;
  s.ipv4_src = *hw::Ipv4Address::Parse("1.1.1.1");
  s.ipv4_dst = *hw::Ipv4Address::Parse("2.2.2.2");
  s.protocol = sim::kIpProtoUdp;
  s.sport = 1234;
  s.dport = 5678;
  s.payload_len = 32;
  return s;
}
std::vector<uint8_t> Packet(const hw::MacAddress& smac, const hw::MacAddress& dmac = kDmac) {
  return sim::BuildFrame(PacketSpec(smac, dmac));
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

// The same in a table indexed (hw/table_index.h) after the newer duplicate took the record an erased rule
// left, older than the older duplicate's: the index names the older rule as its entry's hit, never the newer.
TEST_F(ScenarioTest, DuplicatesStayShadowedInATableIndexedAfterThem) {
  const uint32_t qp2 = nic_.pf().CreateQueue(), qp3 = nic_.pf().CreateQueue();
  dr::Action a = *dr::Action::DestQp(nic_.pf(), qp_);
  dr::Action b = *dr::Action::DestQp(nic_.pf(), qp2);
  dr::Action c = *dr::Action::DestQp(nic_.pf(), qp3);
  CreateRxRecvRules({&a});                                               // the matcher's first record
  dr::Rule older = *dr::Rule::Create(matcher_, SmacValue(kSmac), {&b});  // its second
  ASSERT_TRUE(rule_.Destroy().ok());
  dr::Rule newer = *dr::Rule::Create(matcher_, SmacValue(kSmac), {&c});  // the first again
  // Enough matchers before it for the table to be indexed, and for a lookup to reach it through the index.
  std::vector<dr::Matcher> others;
  while (others.size() < hw::TableIndex::kIndexFromMatchers) {
    others.push_back(*dr::Matcher::Create(table_, 0, hw::kCriteriaOuter, SmacMask().get()));
  }
  EXPECT_EQ(SendTraffic(kSmac, 2, qp2), 2);
  ASSERT_TRUE(older.Destroy().ok());
  EXPECT_EQ(SendTraffic(kSmac, 2, qp3), 2);
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

namespace drsim {
namespace {

// The action scenarios of rdma-core's DR tests. Its tests send from a raw QP and receive on another on
// the same port (the traffic loops back through the eSwitch); here the PF sends, and what reaches the
// wire is fed back in from the wire.
class ActionScenarioTest : public ScenarioTest {
 protected:
  // Sends `frame` from the PF and returns what came out on the wire (nullopt if nothing did).
  std::optional<std::vector<uint8_t>> SendAndCollect(const std::vector<uint8_t>& frame) {
    nic_.pf().Send(frame);
    return nic_.PollWire();
  }
};

TEST_F(ActionScenarioTest, TblModifyHeaderRule) {
  // NIC_TX: empty matcher root -> table 1; smac match; SET SMAC_47_16 = 0x88888888, SMAC_15_0 = 0x8888.
  dr::Domain tx = *dr::Domain::Create(nic_.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_TX);
  dr::Table tx_root = *dr::Table::Create(tx, 0), tx_t1 = *dr::Table::Create(tx, 1);
  dr::Action tx_jump = *dr::Action::DestTable(tx_t1);
  dr::Matcher tx_all = *dr::Matcher::Create(tx_root, 0, 0, nullptr);
  dr::Rule tx_r0 = *dr::Rule::Create(tx_all, MatchParams(), {&tx_jump});
  dr::Matcher tx_m = *dr::Matcher::Create(tx_t1, 0, hw::kCriteriaOuter, SmacMask().get());
  const uint64_t words[] = {hw::ModifySetWord(hw::ModifyField::kSmac47_16, 0, 0, 0x88888888),
                            hw::ModifySetWord(hw::ModifyField::kSmac15_0, 0, 16, 0x8888)};
  dr::Action modify = *dr::Action::ModifyHeader(tx, 0, words);
  dr::Rule tx_r1 = *dr::Rule::Create(tx_m, SmacValue(kOtherSmac), {&modify});
  // RX: the rewritten smac reaches the QP.
  dr::Action qp = *dr::Action::DestQp(nic_.pf(), qp_);
  CreateRxRecvRules({&qp});
  std::optional<std::vector<uint8_t>> sent = SendAndCollect(Packet(kOtherSmac));
  ASSERT_TRUE(sent.has_value());
  std::vector<uint8_t> want = Packet(kOtherSmac);
  for (int i = 6; i < 12; ++i) want[i] = 0x88;
  EXPECT_EQ(*sent, want);
  EXPECT_EQ(nic_.ReceiveFromWire(*sent).fate, sim::Fate::kQueued);
  EXPECT_EQ(nic_.pf().queue(qp_)->Poll()->frame, want);
}

TEST_F(ActionScenarioTest, MetadataModifyActionSetCopyMatch) {
  // RX, 4 tables: empty -> t1: SET reg_c_0 = 0x1234, goto t2: COPY reg_c_0 -> reg_c_1, goto t3:
  // match reg_c_0 and reg_c_1 (mask 0xffff) -> [counter, QP].
  dr::Table t0 = *dr::Table::Create(domain_, 0), t1 = *dr::Table::Create(domain_, 1),
            t2 = *dr::Table::Create(domain_, 2), t3 = *dr::Table::Create(domain_, 3);
  dr::Action to1 = *dr::Action::DestTable(t1), to2 = *dr::Action::DestTable(t2),
             to3 = *dr::Action::DestTable(t3);
  const uint64_t set = hw::ModifySetWord(hw::ModifyField::kMetadataRegC0, 0, 0, 0x1234);
  const uint64_t copy =
      hw::ModifyCopyWord(hw::ModifyField::kMetadataRegC0, 0, hw::ModifyField::kMetadataRegC1, 0, 0);
  dr::Action set_action = *dr::Action::ModifyHeader(domain_, 0, {&set, 1});
  dr::Action copy_action = *dr::Action::ModifyHeader(domain_, 0, {&copy, 1});
  uint32_t counter = *nic_.AllocateCounters(1);
  dr::Action count = *dr::Action::FlowCounter(nic_.pf(), counter, 0);
  dr::Action qp = *dr::Action::DestQp(nic_.pf(), qp_);
  dr::Matcher m0 = *dr::Matcher::Create(t0, 0, 0, nullptr), m1 = *dr::Matcher::Create(t1, 0, 0, nullptr),
              m2 = *dr::Matcher::Create(t2, 0, 0, nullptr);
  dr::Matcher m3 = *dr::Matcher::Create(t3, 0, *MatchBuilder().RegC(0, 0xffff).RegC(1, 0xffff).Build());
  dr::Rule r0 = *dr::Rule::Create(m0, MatchParams(), {&to1});
  dr::Rule r1 = *dr::Rule::Create(m1, MatchParams(), {&set_action, &to2});
  dr::Rule r2 = *dr::Rule::Create(m2, MatchParams(), {&copy_action, &to3});
  dr::Rule r3 = *dr::Rule::Create(m3, *MatchBuilder().RegC(0, 0x1234).RegC(1, 0x1234).Build(), {&count, &qp});
  EXPECT_EQ(SendTraffic(kSmac, 10, qp_), 10);
  uint64_t packets = 0, bytes = 0;
  ASSERT_TRUE(nic_.QueryCounter(counter, &packets, &bytes).ok());
  EXPECT_EQ(packets, 10u);
  EXPECT_EQ(bytes, 10 * Packet(kSmac).size());
  // A modify header that sets or copies registers alone rewrites no frame byte, as on a ConnectX (which
  // updates a checksum only for the header bytes it rewrote): each frame reaches the QP byte for byte as
  // it came, checksums valid, or zero as rdma-core's tests send them (tests/utils.py gen_packet).
  for (int i = 0; i < 10; ++i) EXPECT_EQ(nic_.pf().queue(qp_)->Poll()->frame, Packet(kSmac));
  sim::FrameSpec zero = PacketSpec(kSmac);
  zero.zero_checksums = true;
  EXPECT_EQ(nic_.ReceiveFromWire(sim::BuildFrame(zero)).fate, sim::Fate::kQueued);
  EXPECT_EQ(nic_.pf().queue(qp_)->Poll()->frame, sim::BuildFrame(zero));
  // A wrong IPv4 header checksum stays wrong: the hardware "recalcs checksums only if re-writing headers"
  // (Linux mlx5e, en/tc/act/csum.c, csum_offload_supported).
  std::vector<uint8_t> wrong = Packet(kSmac);
  hw::StoreBe16(wrong.data() + 24, hw::LoadBe16(wrong.data() + 24) ^ 0x0f0f);
  EXPECT_EQ(nic_.ReceiveFromWire(wrong).fate, sim::Fate::kQueued);
  EXPECT_EQ(nic_.pf().queue(qp_)->Poll()->frame, wrong);
}

// The other side of the same rule: a list that rewrites an IPv4 header field (TTL) recomputes the header
// checksum, one that arrived wrong included, on a root table and behind it.
TEST_F(ActionScenarioTest, AnIpv4RewriteFixesTheHeaderChecksum) {
  const uint64_t words[] = {hw::ModifySetWord(hw::ModifyField::kIpTtl, 0, 8, 9),
                            hw::ModifySetWord(hw::ModifyField::kMetadataRegC0, 0, 0, 1)};
  for (bool root : {true, false}) {
    SCOPED_TRACE(root ? "root table" : "level 1 table");
    dr::Action modify =
        *dr::Action::ModifyHeader(domain_, root ? MLX5DV_DR_ACTION_FLAGS_ROOT_LEVEL : 0, words);
    dr::Action qp = *dr::Action::DestQp(nic_.pf(), qp_);
    root_ = *dr::Table::Create(domain_, 0);
    root_matcher_ = *dr::Matcher::Create(root_, 0, 0, nullptr);
    if (!root) {
      table_ = *dr::Table::Create(domain_, 1);
      jump_ = *dr::Action::DestTable(table_);
      root_rule_ = *dr::Rule::Create(root_matcher_, MatchParams(), {&jump_});
      matcher_ = *dr::Matcher::Create(table_, 0, 0, nullptr);
    }
    rule_ = *dr::Rule::Create(root ? root_matcher_ : matcher_, MatchParams(), {&modify, &qp});
    sim::FrameSpec spec = PacketSpec(kSmac);
    std::vector<uint8_t> wrong = sim::BuildFrame(spec);
    hw::StoreBe16(wrong.data() + 24, hw::LoadBe16(wrong.data() + 24) ^ 0x0f0f);
    EXPECT_EQ(nic_.ReceiveFromWire(wrong).fate, sim::Fate::kQueued);
    spec.ttl = 9;
    EXPECT_EQ(nic_.pf().queue(qp_)->Poll()->frame, sim::BuildFrame(spec));
    rule_ = dr::Rule();
    root_rule_ = dr::Rule();
    matcher_ = dr::Matcher();
    root_matcher_ = dr::Matcher();
    jump_ = dr::Action();
    table_ = dr::Table();
    root_ = dr::Table();
  }
}

TEST_F(ActionScenarioTest, AnSmacRewriteLeavesZeroChecksumsAsTheyCame) {
  // RX: SET SMAC = 88:88:88:88:88:88 on frames from 22:22:22:22:22:22 whose checksums are 0 (rdma-core's
  // frames). Only the smac changes: the IPv4 header checksum does not cover it and stays 0.
  const uint64_t words[] = {hw::ModifySetWord(hw::ModifyField::kSmac47_16, 0, 0, 0x88888888),
                            hw::ModifySetWord(hw::ModifyField::kSmac15_0, 0, 16, 0x8888)};
  dr::Action modify = *dr::Action::ModifyHeader(domain_, 0, words);
  dr::Action qp = *dr::Action::DestQp(nic_.pf(), qp_);
  root_ = *dr::Table::Create(domain_, 0);
  table_ = *dr::Table::Create(domain_, 1);
  root_matcher_ = *dr::Matcher::Create(root_, 0, 0, nullptr);
  jump_ = *dr::Action::DestTable(table_);
  root_rule_ = *dr::Rule::Create(root_matcher_, MatchParams(), {&jump_});
  matcher_ = *dr::Matcher::Create(table_, 0, 0, nullptr);
  rule_ = *dr::Rule::Create(matcher_, MatchParams(), {&modify, &qp});
  sim::FrameSpec spec = PacketSpec(kOtherSmac);
  spec.zero_checksums = true;
  EXPECT_EQ(nic_.ReceiveFromWire(sim::BuildFrame(spec)).fate, sim::Fate::kQueued);
  spec.smac = kSmac;
  EXPECT_EQ(nic_.pf().queue(qp_)->Poll()->frame, sim::BuildFrame(spec));
}

TEST_F(ActionScenarioTest, TblCounterActionAndReuse) {
  uint32_t base = *nic_.AllocateCounters(8);
  dr::Action qp = *dr::Action::DestQp(nic_.pf(), qp_);
  dr::Action count = *dr::Action::FlowCounter(nic_.pf(), base, 5);
  CreateRxRecvRules({&qp, &count});  // [qp, counter]: a counter may follow a terminating action
  dr::Rule other_root = *dr::Rule::Create(root_matcher_, SmacValue(kOtherSmac), {&jump_});
  dr::Rule other = *dr::Rule::Create(matcher_, SmacValue(kOtherSmac), {&count, &qp});
  SendTraffic(kSmac, 7, qp_);
  SendTraffic(kOtherSmac, 5, qp_);
  uint64_t packets, bytes;
  ASSERT_TRUE(nic_.QueryCounter(base + 5, &packets, &bytes).ok());
  EXPECT_EQ(packets, 12u);
  EXPECT_EQ(nic_.FreeCounters(base).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(dr::Action::FlowCounter(nic_.pf(), base, 8).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ActionScenarioTest, RootTblCounterAction) {
  uint32_t base = *nic_.AllocateCounters(1);
  dr::Action qp = *dr::Action::DestQp(nic_.pf(), qp_);
  dr::Action count = *dr::Action::FlowCounter(nic_.pf(), base, 0);
  root_ = *dr::Table::Create(domain_, 0);
  root_matcher_ = *dr::Matcher::Create(root_, 0, hw::kCriteriaOuter, SmacMask().get());
  rule_ = *dr::Rule::Create(root_matcher_, SmacValue(kSmac), {&qp, &count});
  SendTraffic(kSmac, 3, qp_);
  uint64_t packets, bytes;
  ASSERT_TRUE(nic_.QueryCounter(base, &packets, &bytes).ok());
  EXPECT_EQ(packets, 3u);
}

TEST_F(ActionScenarioTest, PushVlanOnTxAndPopVlanOnRx) {
  // test_push_vlan: NIC_TX level-1 push_vlan(TPID 0x8100, prio 3, cfi 0, vid 100); the RX side sees +4.
  dr::Domain tx = *dr::Domain::Create(nic_.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_TX);
  dr::Table tx_root = *dr::Table::Create(tx, 0), tx_t1 = *dr::Table::Create(tx, 1);
  dr::Action tx_jump = *dr::Action::DestTable(tx_t1);
  dr::Matcher tx_all = *dr::Matcher::Create(tx_root, 0, 0, nullptr),
              tx_m = *dr::Matcher::Create(tx_t1, 0, 0, nullptr);
  dr::Rule tx_r0 = *dr::Rule::Create(tx_all, MatchParams(), {&tx_jump});
  dr::Action push = *dr::Action::PushVlan(tx, htonl(0x8100u << 16 | 3u << 13 | 100));
  dr::Rule tx_r1 = *dr::Rule::Create(tx_m, MatchParams(), {&push});
  std::vector<uint8_t> plain = Packet(kSmac);
  std::optional<std::vector<uint8_t>> tagged = SendAndCollect(plain);
  ASSERT_TRUE(tagged.has_value());
  ASSERT_EQ(tagged->size(), plain.size() + 4);
  EXPECT_EQ(hw::LoadBe32(tagged->data() + 12), 0x81006064u);
  // test_pop_vlan: NIC_RX [pop_vlan, qp]: received without the tag.
  dr::Action pop = *dr::Action::PopVlan();
  dr::Action qp = *dr::Action::DestQp(nic_.pf(), qp_);
  CreateRxRecvRules({&pop, &qp});
  EXPECT_EQ(nic_.ReceiveFromWire(*tagged).fate, sim::Fate::kQueued);
  EXPECT_EQ(nic_.pf().queue(qp_)->Poll()->frame, plain);
  EXPECT_EQ(dr::Action::PushVlan(tx, htonl(0x9100u << 16)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(ActionScenarioTest, RegBReachesTheCompletion) {
  const uint64_t set_b = hw::ModifySetWord(hw::ModifyField::kMetadataRegB, 0, 0, 0xfeed);
  dr::Action set = *dr::Action::ModifyHeader(domain_, 0, {&set_b, 1});
  dr::Action qp = *dr::Action::DestQp(nic_.pf(), qp_);
  CreateRxRecvRules({&set, &qp});
  SendTraffic(kSmac, 1, qp_);
  EXPECT_EQ(nic_.pf().queue(qp_)->Poll()->flow_table_metadata, 0xfeedu);
}

}  // namespace
}  // namespace drsim

namespace drsim {
namespace {

class MoreScenarioTest : public ActionScenarioTest {};

TEST_F(MoreScenarioTest, DestIbPort) {
  // test_dest_ib_port: FDB root smac rule -> table 1, whose smac rule -> ib_port 1 (the PF); the PF's
  // NIC_RX root delivers to the QP.
  dr::Domain fdb = *dr::Domain::Create(nic_.pf(), MLX5DV_DR_DOMAIN_TYPE_FDB);
  dr::Table fdb_root = *dr::Table::Create(fdb, 0), fdb_t1 = *dr::Table::Create(fdb, 1);
  dr::Matcher fdb_m0 = *dr::Matcher::Create(fdb_root, 0, hw::kCriteriaOuter, SmacMask().get());
  dr::Matcher fdb_m1 = *dr::Matcher::Create(fdb_t1, 1, hw::kCriteriaOuter, SmacMask().get());
  dr::Action to_t1 = *dr::Action::DestTable(fdb_t1);
  dr::Action to_port = *dr::Action::DestIbPort(fdb, 1);
  dr::Rule fdb_r0 = *dr::Rule::Create(fdb_m0, SmacValue(kSmac), {&to_t1});
  dr::Rule fdb_r1 = *dr::Rule::Create(fdb_m1, SmacValue(kSmac), {&to_port});
  // Port actions go through the kernel's path on root tables, which does not take them.
  EXPECT_EQ(dr::Rule::Create(fdb_m0, SmacValue(kOtherSmac), {&to_port}).status().code(),
            absl::StatusCode::kUnimplemented);
  dr::Action qp = *dr::Action::DestQp(nic_.pf(), qp_);
  root_ = *dr::Table::Create(domain_, 0);
  root_matcher_ = *dr::Matcher::Create(root_, 0, hw::kCriteriaOuter, SmacMask().get());
  rule_ = *dr::Rule::Create(root_matcher_, SmacValue(kSmac), {&qp});
  EXPECT_EQ(SendTraffic(kSmac, 3, qp_), 3);
  EXPECT_EQ(dr::Action::DestIbPort(fdb, 0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(dr::Action::DestIbPort(fdb, 2).status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(dr::Action::DestIbPort(domain_, 1).status().code(), absl::StatusCode::kUnimplemented);
}

TEST_F(MoreScenarioTest, TxDefaultMissAction) {
  // test_tx_def_miss_action: NIC_TX prio 1 [default_miss] and prio 2 [drop] on the same smac: the lower
  // priority value wins and the frames reach the wire.
  dr::Domain tx = *dr::Domain::Create(nic_.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_TX);
  dr::Table tx_root = *dr::Table::Create(tx, 0), t1 = *dr::Table::Create(tx, 1);
  dr::Action jump = *dr::Action::DestTable(t1);
  dr::Matcher all = *dr::Matcher::Create(tx_root, 0, 0, nullptr);
  dr::Rule r0 = *dr::Rule::Create(all, MatchParams(), {&jump});
  dr::Matcher m1 = *dr::Matcher::Create(t1, 1, hw::kCriteriaOuter, SmacMask().get());
  dr::Matcher m2 = *dr::Matcher::Create(t1, 2, hw::kCriteriaOuter, SmacMask().get());
  dr::Action miss = *dr::Action::DefaultMiss(), drop = *dr::Action::Drop();
  dr::Rule r1 = *dr::Rule::Create(m1, SmacValue(kSmac), {&miss});
  dr::Rule r2 = *dr::Rule::Create(m2, SmacValue(kSmac), {&drop});
  EXPECT_TRUE(SendAndCollect(Packet(kSmac)).has_value());
  ASSERT_TRUE(r1.Destroy().ok());
  EXPECT_FALSE(SendAndCollect(Packet(kSmac)).has_value());  // now the drop rule is hit
}

TEST_F(MoreScenarioTest, RootTblModifyHeaderAndDestArray) {
  // test_root_tbl_modify_header_rule: a ROOT_LEVEL modify header on a level-0 NIC_TX table.
  dr::Domain tx = *dr::Domain::Create(nic_.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_TX);
  dr::Table tx_root = *dr::Table::Create(tx, 0);
  dr::Matcher m = *dr::Matcher::Create(tx_root, 0, hw::kCriteriaOuter, SmacMask().get());
  const uint64_t words[] = {hw::ModifySetWord(hw::ModifyField::kSmac47_16, 0, 0, 0x88888888),
                            hw::ModifySetWord(hw::ModifyField::kSmac15_0, 0, 16, 0x8888)};
  dr::Action plain = *dr::Action::ModifyHeader(tx, 0, words);
  EXPECT_EQ(dr::Rule::Create(m, SmacValue(kOtherSmac), {&plain}).status().code(),
            absl::StatusCode::kInvalidArgument);  // a root table needs ROOT_LEVEL actions
  dr::Action modify = *dr::Action::ModifyHeader(tx, MLX5DV_DR_ACTION_FLAGS_ROOT_LEVEL, words);
  dr::Rule r = *dr::Rule::Create(m, SmacValue(kOtherSmac), {&modify});
  std::optional<std::vector<uint8_t>> sent = SendAndCollect(Packet(kOtherSmac));
  ASSERT_TRUE(sent.has_value());
  EXPECT_EQ(std::vector<uint8_t>(sent->begin() + 6, sent->begin() + 12), std::vector<uint8_t>(6, 0x88));
  // test_root_dest_array: a dest array on a root NIC_RX table.
  const uint32_t q2 = nic_.pf().CreateQueue();
  dr::Action a1 = *dr::Action::DestQp(nic_.pf(), qp_), a2 = *dr::Action::DestQp(nic_.pf(), q2);
  dr::Action array = *dr::Action::DestArray(domain_, {{&a1, nullptr}, {&a2, nullptr}});
  root_ = *dr::Table::Create(domain_, 0);
  root_matcher_ = *dr::Matcher::Create(root_, 0, hw::kCriteriaOuter, SmacMask().get());
  rule_ = *dr::Rule::Create(root_matcher_, SmacValue(kSmac), {&array});
  sim::Verdict v = nic_.ReceiveFromWire(Packet(kSmac));
  EXPECT_EQ(v.qp_num, qp_);
  ASSERT_EQ(v.copies.size(), 1u);
  EXPECT_EQ(v.copies[0].qp_num, q2);
}

// create_tx_modify_rule and create_client_send_rule: on a level-0 NIC_TX table, a 6-byte smac mask and a
// 6-byte smac value. rdma-core hands root rules to the kernel without dr_rule_verify's multiple-of-4 check,
// and the kernel zero-extends them; a non-root table still refuses the value with EINVAL.
TEST_F(MoreScenarioTest, RootTablesTakeSixByteValuesNonRootTablesDoNot) {
  MatchParams mask = *MatchBuilder().Smac(kOuter, hw::MacAddress::AllOnes()).Build();
  mask.set_match_sz(6);
  MatchParams value = *MatchBuilder().Smac(kOuter, kOtherSmac).Build();
  value.set_match_sz(6);
  dr::Domain tx = *dr::Domain::Create(nic_.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_TX);
  dr::Table tx_root = *dr::Table::Create(tx, 0);
  dr::Matcher m = *dr::Matcher::Create(tx_root, 0, hw::kCriteriaOuter, mask.get());
  const uint64_t words[] = {hw::ModifySetWord(hw::ModifyField::kSmac47_16, 0, 0, 0x88888888),
                            hw::ModifySetWord(hw::ModifyField::kSmac15_0, 0, 16, 0x8888)};
  dr::Action modify = *dr::Action::ModifyHeader(tx, MLX5DV_DR_ACTION_FLAGS_ROOT_LEVEL, words);
  absl::StatusOr<dr::Rule> r = dr::Rule::Create(m, value, {&modify});
  ASSERT_TRUE(r.ok()) << r.status();
  // Frames from that smac are rewritten; others leave as they were sent.
  std::optional<std::vector<uint8_t>> sent = SendAndCollect(Packet(kOtherSmac));
  ASSERT_TRUE(sent.has_value());
  std::vector<uint8_t> want = Packet(kOtherSmac);
  for (int i = 6; i < 12; ++i) want[i] = 0x88;
  EXPECT_EQ(*sent, want);
  const hw::MacAddress third = *hw::MacAddress::Parse("22:22:22:22:22:23");
  EXPECT_EQ(SendAndCollect(Packet(third)), Packet(third));
  // The suite's frames carry IPv4 and UDP checksums 0 and are compared byte for byte once received: an
  // smac rewrite leaves those checksums 0.
  std::vector<uint8_t> zero = Packet(kOtherSmac);
  hw::StoreBe16(zero.data() + 14 + 10, 0);
  hw::StoreBe16(zero.data() + 14 + 20 + 6, 0);
  want = zero;
  for (int i = 6; i < 12; ++i) want[i] = 0x88;
  EXPECT_EQ(SendAndCollect(zero), want);
  // The same mask and value on a level-1 table: the mask is fine, the value is not.
  dr::Table t1 = *dr::Table::Create(tx, 1);
  dr::Matcher m1 = *dr::Matcher::Create(t1, 0, hw::kCriteriaOuter, mask.get());
  dr::Action drop = *dr::Action::Drop();
  absl::StatusOr<dr::Rule> refused = dr::Rule::Create(m1, value, {&drop});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(dr::ErrnoFromStatus(refused.status()), EINVAL);
  EXPECT_NE(refused.status().message().find("rule value match_sz 6 must be a multiple of 4"),
            absl::string_view::npos)
      << refused.status();
  value.set_match_sz(8);  // what create_rx_recv_rules pads its values to
  EXPECT_TRUE(dr::Rule::Create(m1, value, {&drop}).ok());
}

TEST_F(MoreScenarioTest, ExecutionOrderDoesNotDependOnListOrder) {
  // NIC_TX: [push_vlan, modify SMAC] and [modify SMAC, push_vlan] give the same frame.
  dr::Domain tx = *dr::Domain::Create(nic_.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_TX);
  dr::Table tx_root = *dr::Table::Create(tx, 0), t1 = *dr::Table::Create(tx, 1);
  dr::Action jump = *dr::Action::DestTable(t1);
  dr::Matcher all = *dr::Matcher::Create(tx_root, 0, 0, nullptr);
  dr::Rule r0 = *dr::Rule::Create(all, MatchParams(), {&jump});
  dr::Matcher m = *dr::Matcher::Create(t1, 0, hw::kCriteriaOuter, SmacMask().get());
  const uint64_t w = hw::ModifySetWord(hw::ModifyField::kSmac15_0, 0, 16, 0x1234);
  dr::Action modify = *dr::Action::ModifyHeader(tx, 0, {&w, 1});
  dr::Action push = *dr::Action::PushVlan(tx, htonl(0x81000005));
  // modify then push is legal on NIC_TX; push then modify is not (PUSH_VLAN -> MODIFY_HDR is an error).
  dr::Rule r = *dr::Rule::Create(m, SmacValue(kSmac), {&modify, &push});
  EXPECT_EQ(dr::Rule::Create(m, SmacValue(kOtherSmac), {&push, &modify}).status().code(),
            absl::StatusCode::kUnimplemented);
  std::optional<std::vector<uint8_t>> out = SendAndCollect(Packet(kSmac));
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(hw::LoadBe16(out->data() + 10), 0x1234);
  EXPECT_EQ(hw::LoadBe32(out->data() + 12), 0x81000005u);
}

}  // namespace
}  // namespace drsim
