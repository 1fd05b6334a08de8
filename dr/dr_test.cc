#include "dr/dr.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "dr/dump.h"
#include "gtest/gtest.h"

namespace drsim::dr {
namespace {

using hw::kOuter;
using hw::MatchBuilder;
using hw::MatchParams;

// A device that records what the driver tells it: root tables, chain changes, queue references.
class RecordingDevice : public hw::Device {
 public:
  void AttachRootTable(const hw::FlowTable* t) override { roots.push_back(t); }
  void DetachRootTable(const hw::FlowTable* t) override {
    roots.erase(std::find(roots.begin(), roots.end(), t));
  }
  void TableChanged(const hw::FlowTable* t) override { ++changes[t]; }
  uint64_t NextMatcherSequence() override { return ++sequence; }
  absl::Status RetainQueue(uint32_t qpn) override {
    if (qpn != 100 && qpn != 101)
      return absl::NotFoundError("no receive queue with QP number " + std::to_string(qpn));
    ++queue_refs[qpn];
    return absl::OkStatus();
  }
  void ReleaseQueue(uint32_t qpn) override { --queue_refs[qpn]; }
  absl::Status RetainCounter(uint32_t id) override {
    if (id >= 8) return absl::NotFoundError("no flow counter with id " + std::to_string(id));
    ++counter_refs[id];
    return absl::OkStatus();
  }
  void ReleaseCounter(uint32_t id) override { --counter_refs[id]; }
  bool IsEswitchManager() const override { return manager; }
  bool HasVport(uint32_t vport) const override { return vport <= 2 || vport == 0xffff; }
  absl::Status RetainTir(uint32_t) override { return absl::NotFoundError("no TIRs here"); }
  void ReleaseTir(uint32_t) override {}
  absl::StatusOr<uint32_t> CreateMeter(absl::Span<const uint8_t>, bool) override { return ++meters; }
  absl::Status ModifyMeter(uint32_t, absl::Span<const uint8_t>, bool, uint64_t) override {
    return absl::OkStatus();
  }
  void DestroyMeter(uint32_t) override { --meters; }
  uint32_t CreateSampler(uint32_t) override { return 1; }
  void DestroySampler(uint32_t) override {}
  absl::StatusOr<hw::AsoContext> RetainAso(uint32_t, uint32_t) override {
    return absl::NotFoundError("no ASO");
  }
  void ReleaseAso(uint32_t) override {}
  const hw::ParsedFields& parsed_fields() const override { return parsed; }

  std::vector<const hw::FlowTable*> roots;
  std::map<const hw::FlowTable*, int> changes;
  std::map<uint32_t, int> queue_refs;
  std::map<uint32_t, int> counter_refs;
  bool manager = true;
  hw::ParsedFields parsed = hw::ParsedFields::All("recording device");
  uint32_t meters = 0;
  uint64_t sequence = 0;
};

void ExpectError(const absl::Status& s, absl::StatusCode code, const std::string& needle) {
  EXPECT_EQ(s.code(), code) << s;
  EXPECT_NE(s.message().find(needle), absl::string_view::npos) << "'" << needle << "' not in: " << s;
}

MatchParams SmacMask() { return *MatchBuilder().Smac(kOuter, hw::MacAddress::AllOnes()).Build(); }
MatchParams Smac(const char* mac) {
  return *MatchBuilder().Smac(kOuter, *hw::MacAddress::Parse(mac)).Build();
}

// The raw values of `params`, as CreateMany takes them.
std::vector<const mlx5dv_flow_match_parameters*> Raw(const std::vector<MatchParams>& params) {
  std::vector<const mlx5dv_flow_match_parameters*> raw;
  for (const MatchParams& p : params) raw.push_back(p.get());
  return raw;
}

// Source MAC 00:00:00:00:hi:lo for `n`.
MatchParams SmacOf(uint32_t n) {
  return *MatchBuilder()
              .Smac(kOuter, {{0, 0, 0, 0, static_cast<uint8_t>(n >> 8), static_cast<uint8_t>(n)}})
              .Build();
}

// Rule::CreateMany into a vector of its own.
absl::StatusOr<std::vector<Rule>> Many(const Matcher& m,
                                       const std::vector<const mlx5dv_flow_match_parameters*>& values,
                                       std::initializer_list<const Action*> actions) {
  std::vector<Rule> rules(values.size());
  DRSIM_RETURN_IF_ERROR(Rule::CreateMany(m, values, actions, absl::MakeSpan(rules)));
  return rules;
}

class DrTest : public ::testing::Test {
 protected:
  DrTest() : domain_(*Domain::Create(device_, MLX5DV_DR_DOMAIN_TYPE_NIC_RX)) {}

  // The rule the device would find for `value` in `matcher` (via the compiled chain of `table`).
  const hw::RuleRecord* Lookup(const hw::FlowTable& table, uint32_t matcher_id, const MatchParams& value) {
    for (const hw::CompiledMatcher* m : table.chain) {
      if (m->id != matcher_id) continue;
      std::vector<uint32_t> key(m->definer.key_words());
      m->definer.Extract(value.bytes(), key.data());
      return m->table.Find(key.data());
    }
    return nullptr;
  }

  // The flow table of `t` (once it has had a matcher: the driver told the device of it).
  const hw::FlowTable& FlowTableOf(const Table& t) {
    for (const auto& [ft, changes] : device_.changes) {
      if (ft->id == t.id()) return *ft;
    }
    ADD_FAILURE() << "table " << t.id() << " never changed";
    return *device_.changes.begin()->first;
  }
  // Whether matcher `matcher_id` is on the chain of `table`.
  static bool OnChain(const hw::FlowTable& table, uint32_t matcher_id) {
    for (const hw::CompiledMatcher* m : table.chain) {
      if (m->id == matcher_id) return true;
    }
    return false;
  }

  RecordingDevice device_;
  Domain domain_;
};

TEST_F(DrTest, DomainTypeIsChecked) {
  ExpectError(Domain::Create(device_, static_cast<mlx5dv_dr_domain_type>(3)).status(),
              absl::StatusCode::kInvalidArgument, "domain type 3");
  EXPECT_TRUE(domain_.Sync(MLX5DV_DR_DOMAIN_SYNC_FLAGS_SW | MLX5DV_DR_DOMAIN_SYNC_FLAGS_HW).ok());
  ExpectError(domain_.Sync(8), absl::StatusCode::kUnimplemented, "sync flags 0x8");
}

TEST_F(DrTest, RootTablesAttachToTheDevice) {
  Table root = *Table::Create(domain_, 0);
  Table t1 = *Table::Create(domain_, 1);
  ASSERT_EQ(device_.roots.size(), 1u);
  EXPECT_EQ(device_.roots[0]->level, 0u);
  EXPECT_EQ(device_.roots[0]->id, root.id());
  EXPECT_TRUE(root.Destroy().ok());
  EXPECT_TRUE(device_.roots.empty());
  EXPECT_FALSE(root.valid());
  ExpectError(root.Destroy(), absl::StatusCode::kInvalidArgument, "table handle is empty");
}

TEST_F(DrTest, MatchersAreOrderedByPriorityThenNewestFirst) {
  Table t = *Table::Create(domain_, 0);
  MatchParams mask = SmacMask();
  Matcher a = *Matcher::Create(t, 5, mask);
  Matcher b = *Matcher::Create(t, 1, mask);
  Matcher c = *Matcher::Create(t, 5, mask);
  Matcher d = *Matcher::Create(t, 9, mask);
  std::vector<uint32_t> order;
  for (const hw::CompiledMatcher* m : device_.roots[0]->chain) order.push_back(m->id);
  EXPECT_EQ(order, (std::vector<uint32_t>{b.id(), c.id(), a.id(), d.id()}));
  EXPECT_EQ(device_.changes[device_.roots[0]], 4);
  ASSERT_TRUE(c.Destroy().ok());
  EXPECT_EQ(device_.roots[0]->chain.size(), 3u);
}

// Hundreds of matchers created and destroyed in shuffled order: the chain and the walk lookups follow
// (first, then next links) stay in lookup order, and every matcher's prefetch hint points kWalkAhead
// matchers on, whichever matchers come and go.
TEST_F(DrTest, TheWalkKeepsLookupOrderWhileMatchersComeAndGo) {
  Table t = *Table::Create(domain_, 0);
  const hw::FlowTable& ft = *device_.roots[0];
  MatchParams mask = SmacMask();
  std::vector<Matcher> live;
  uint32_t state = 12345;
  auto next = [&state](uint32_t below) {
    state = state * 1103515245u + 12345u;
    return (state >> 8) % below;
  };
  auto check = [&](const char* phase) {
    std::vector<std::pair<uint16_t, uint32_t>> want;  // (priority, id), the newest first on a tie
    for (const Matcher& m : live) want.emplace_back(m.priority(), m.id());
    std::sort(want.begin(), want.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second > b.second;
    });
    std::vector<std::pair<uint16_t, uint32_t>> chain, walk;
    for (const hw::CompiledMatcher* m : ft.chain) chain.emplace_back(m->priority, m->id);
    for (const hw::CompiledMatcher* m = ft.first_matcher(); m != nullptr; m = m->next_matcher()) {
      walk.emplace_back(m->priority, m->id);
    }
    EXPECT_EQ(chain, want) << phase;
    EXPECT_EQ(walk, want) << phase;
    // Each matcher's prefetch hint names the one hw::kWalkAhead places later in the walk.
    const std::vector<const hw::CompiledMatcher*> order(ft.chain.begin(), ft.chain.end());
    for (size_t i = 0; i < order.size(); ++i) {
      const size_t ahead = i + hw::kWalkAhead;
      ASSERT_EQ(order[i]->ahead.load(), ahead < order.size() ? order[ahead] : nullptr)
          << phase << ", at " << i;
    }
  };
  for (int i = 0; i < 300; ++i) {
    live.push_back(*Matcher::Create(t, static_cast<uint16_t>(next(20)), mask));
    check("creating");
  }
  for (int i = 0; i < 200; ++i) {
    const size_t victim = next(static_cast<uint32_t>(live.size()));
    ASSERT_TRUE(live[victim].Destroy().ok());
    live.erase(live.begin() + victim);
    check("destroying");
  }
  check("two thirds destroyed");
  for (int i = 0; i < 100; ++i) live.push_back(*Matcher::Create(t, static_cast<uint16_t>(next(20)), mask));
  check("created again");
  while (!live.empty()) {
    ASSERT_TRUE(live.front().Destroy().ok());
    live.erase(live.begin());
  }
  check("all destroyed");
  EXPECT_EQ(ft.first_matcher(), nullptr);
}

TEST_F(DrTest, DestroyIsRefusedWhileReferencedAndChangesNothing) {
  Table root = *Table::Create(domain_, 0);
  Table t = *Table::Create(domain_, 1);
  Matcher m = *Matcher::Create(root, 0, SmacMask());
  Action drop = *Action::Drop();
  Action jump = *Action::DestTable(t);
  MatchParams v = Smac("00:00:00:00:00:01");
  Rule r = *Rule::Create(m, v, {&jump});

  ExpectError(domain_.Destroy(), absl::StatusCode::kFailedPrecondition, "2 table(s)");
  ExpectError(t.Destroy(), absl::StatusCode::kFailedPrecondition, "0 matcher(s) and 1 action(s)");
  ExpectError(root.Destroy(), absl::StatusCode::kFailedPrecondition, "1 matcher(s) and 0 action(s)");
  ExpectError(m.Destroy(), absl::StatusCode::kFailedPrecondition, "1 rule(s)");
  ExpectError(jump.Destroy(), absl::StatusCode::kFailedPrecondition,
              "dest_table " + std::to_string(t.id()) + " action is still used by rules");
  // Nothing was lost: the rule still steers to t.
  const hw::RuleRecord* hit = Lookup(*device_.roots[0], m.id(), v);
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(hit->rule_id, r.id());
  EXPECT_EQ(hit->program(hw::kRxPipe).destination, hw::Destination::kTable);
  EXPECT_EQ(hit->program(hw::kRxPipe).table->id, t.id());

  EXPECT_TRUE(r.Destroy().ok());
  EXPECT_EQ(Lookup(*device_.roots[0], m.id(), v), nullptr);
  EXPECT_TRUE(drop.Destroy().ok());
  EXPECT_TRUE(m.Destroy().ok());
  EXPECT_TRUE(jump.Destroy().ok());
  EXPECT_TRUE(t.Destroy().ok());
  EXPECT_TRUE(root.Destroy().ok());
  EXPECT_TRUE(domain_.Destroy().ok());
  ExpectError(domain_.Destroy(), absl::StatusCode::kInvalidArgument, "domain handle is empty");
}

TEST_F(DrTest, DroppedHandlesLetObjectsGoWhenUnreferenced) {
  Table root = *Table::Create(domain_, 0);
  std::optional<Matcher> m(*Matcher::Create(root, 0, SmacMask()));
  Action drop = *Action::Drop();
  MatchParams v = Smac("00:00:00:00:00:02");
  std::optional<Rule> r(*Rule::Create(*m, v, {&drop}));
  uint32_t matcher_id = m->id();
  m.reset();  // the rule keeps the matcher in the table
  ASSERT_EQ(device_.roots[0]->chain.size(), 1u);
  EXPECT_NE(Lookup(*device_.roots[0], matcher_id, v), nullptr);
  r.reset();  // last reference: rule and matcher go
  EXPECT_TRUE(device_.roots[0]->chain.empty());
  {
    Domain other = *Domain::Create(device_, MLX5DV_DR_DOMAIN_TYPE_NIC_TX);
    Table kept = *Table::Create(other, 0);
    other = Domain();  // dropping the domain handle: the table keeps the domain alive
    EXPECT_TRUE(kept.Destroy().ok());
  }
}

TEST_F(DrTest, ActionChecksAtCreation) {
  ExpectError(Action::DestQp(device_, 7).status(), absl::StatusCode::kInvalidArgument,
              "dest_ibv_qp: no receive queue with QP number 7");
  {
    Action qp = *Action::DestQp(device_, 100);
    EXPECT_EQ(device_.queue_refs[100], 1);
  }
  EXPECT_EQ(device_.queue_refs[100], 0);  // released with the action
  Table root = *Table::Create(domain_, 0);
  ExpectError(Action::DestTable(root).status(), absl::StatusCode::kInvalidArgument, "root (level 0)");
  ExpectError(Action::DestTable(Table()).status(), absl::StatusCode::kInvalidArgument, "handle is empty");
}

TEST_F(DrTest, RuleProgramsCarryTheActions) {
  Table root = *Table::Create(domain_, 0);
  Matcher m = *Matcher::Create(root, 0, SmacMask());
  Action tag = *Action::Tag(0xfedcba98);
  Action qp = *Action::DestQp(device_, 101);
  MatchParams v = Smac("00:00:00:00:00:03");
  Rule r = *Rule::Create(m, v, {&tag, &qp});
  const hw::RuleRecord* hit = Lookup(*device_.roots[0], m.id(), v);
  ASSERT_NE(hit, nullptr);
  const hw::ActionProgram& rx = hit->program(hw::kRxPipe);
  ASSERT_EQ(rx.ops.size(), 1u);
  EXPECT_EQ(rx.ops[0].code, hw::OpCode::kTagOfRule);  // the tag is the rule's own, in its record
  EXPECT_EQ(hit->tag(), 0xdcba98u);                   // 24 bits
  EXPECT_EQ(rx.destination, hw::Destination::kQueue);
  EXPECT_EQ(rx.queue, 101u);
  EXPECT_EQ(device_.queue_refs[101], 1);      // the action's reference; rules reference the action
  EXPECT_EQ(tag.Describe(), "tag 0xdcba98");  // the 24 bits the hardware keeps
  EXPECT_EQ(qp.Describe(), "dest_ibv_qp 0x65");
  EXPECT_EQ(Action().Describe(), "");
}

// Consecutive rules of a matcher with the same actions share one compiled program, as do rules whose
// actions differ only in their tag action (the tag is in each rule's record); other actions, or the same
// ones in another order, get their own.
TEST_F(DrTest, RulesWithTheSameActionsShareTheirPrograms) {
  Table root = *Table::Create(domain_, 0);
  Matcher m = *Matcher::Create(root, 0, SmacMask());
  Action tag1 = *Action::Tag(1);
  Action tag2 = *Action::Tag(2);
  Action qp = *Action::DestQp(device_, 101);
  const char* macs[] = {"00:00:00:00:00:01", "00:00:00:00:00:02", "00:00:00:00:00:03", "00:00:00:00:00:04",
                        "00:00:00:00:00:05"};
  std::vector<std::vector<const Action*>> lists = {
      {&tag1, &qp}, {&tag1, &qp}, {&tag2, &qp}, {&qp, &tag1}, {&tag1, &qp}};
  std::vector<Rule> rules;
  std::vector<const hw::RuleRecord*> hits;
  for (size_t i = 0; i < lists.size(); ++i) {
    rules.push_back(*Rule::Create(m, Smac(macs[i]), lists[i]));
    hits.push_back(Lookup(*device_.roots[0], m.id(), Smac(macs[i])));
    ASSERT_NE(hits.back(), nullptr);
    EXPECT_EQ(hits.back()->rule_id, rules.back().id());
  }
  EXPECT_EQ(hits[0]->programs, hits[1]->programs);
  EXPECT_EQ(hits[1]->programs, hits[2]->programs);  // another tag
  EXPECT_NE(hits[2]->programs, hits[3]->programs);  // the same actions listed in another order
  EXPECT_NE(hits[3]->programs, hits[4]->programs);
  const uint32_t expected_tag[] = {1, 1, 2, 1, 1};
  for (size_t i = 0; i < hits.size(); ++i) {
    const hw::ActionProgram& rx = hits[i]->program(hw::kRxPipe);
    ASSERT_EQ(rx.ops.size(), 1u);
    EXPECT_EQ(rx.ops[0].code, hw::OpCode::kTagOfRule);
    EXPECT_EQ(hits[i]->tag(), expected_tag[i]) << "rule " << i;
    EXPECT_EQ(rx.queue, 101u);
  }
  // The shared program outlives the first rule using it.
  ASSERT_TRUE(rules[0].Destroy().ok());
  EXPECT_EQ(Lookup(*device_.roots[0], m.id(), Smac(macs[1]))->tag(), 1u);
  EXPECT_EQ(Lookup(*device_.roots[0], m.id(), Smac(macs[1]))->programs, hits[2]->programs);
}

// A thousand rules each with a tag action of its own (a flow's mark) share one program, made one by one,
// in one CreateMany call or by UpdateMany; each rule references its own tag action, which cannot be
// destroyed while the rule lives, and the dump lists it among the rule's actions.
TEST_F(DrTest, RulesWithTagsOfTheirOwnShareOneProgram) {
  Table t = *Table::Create(domain_, 1);
  Matcher m = *Matcher::Create(t, 0, SmacMask());
  Action qp = *Action::DestQp(device_, 101);
  constexpr uint32_t kRules = 1000;
  std::vector<Action> tags;
  for (uint32_t i = 0; i < kRules + 2; ++i) tags.push_back(*Action::Tag(0x10000 + i));
  std::vector<Rule> rules;
  for (uint32_t i = 0; i < kRules; ++i) rules.push_back(*Rule::Create(m, SmacOf(i), {&tags[i], &qp}));
  std::vector<Rule> many = *Many(m, Raw({SmacOf(kRules), SmacOf(kRules + 1)}), {&tags[kRules], &qp});
  const hw::FlowTable& ft = FlowTableOf(t);
  const hw::PipePrograms* shared = Lookup(ft, m.id(), SmacOf(0))->programs;
  for (uint32_t i = 0; i < kRules + 2; ++i) {
    const hw::RuleRecord* hit = Lookup(ft, m.id(), SmacOf(i));
    ASSERT_NE(hit, nullptr) << "rule " << i;
    EXPECT_EQ(hit->programs, shared) << "rule " << i;
    EXPECT_EQ(hit->tag(), 0x10000 + std::min(i, kRules)) << "rule " << i;
    EXPECT_EQ(hit->shape(hw::kRxPipe), hw::ProgramShape::kOther);  // the tag op runs
  }
  // Rule 5 takes tag kRules + 1 in its place.
  const Action* new_actions[] = {&tags[kRules + 1], &qp};
  const MatchParams five = SmacOf(5);
  ASSERT_TRUE(Rule::UpdateMany({{&rules[5], five.get(), new_actions}}).ok());
  EXPECT_EQ(Lookup(ft, m.id(), five)->tag(), 0x10000 + kRules + 1);
  EXPECT_EQ(Lookup(ft, m.id(), five)->programs, shared);
  // Each tag action is its rules' to keep: in use, it stays; once they go, it goes.
  ExpectError(tags[7].Destroy(), absl::StatusCode::kFailedPrecondition, "(1 reference(s))");
  ExpectError(tags[kRules].Destroy(), absl::StatusCode::kFailedPrecondition, "(2 reference(s))");
  EXPECT_TRUE(tags[5].Destroy().ok());  // its rule was updated away
  // The dump of rule 7 holds its tag action's record (id, rule, tag).
  char* text = nullptr;
  size_t size = 0;
  std::FILE* out = open_memstream(&text, &size);
  ASSERT_TRUE(DumpRule(rules[7], out, {/*stable_ids=*/true}).ok());
  std::fclose(out);
  const std::string dump(text, size);
  std::free(text);
  EXPECT_TRUE(
      absl::StrContains(dump, absl::StrFormat(",0x%x,0x%x,0x%x\n", tags[7].id(), rules[7].id(), 0x10007)))
      << dump;
  ASSERT_TRUE(rules[7].Destroy().ok());
  EXPECT_TRUE(tags[7].Destroy().ok());
  EXPECT_EQ(Lookup(ft, m.id(), SmacOf(8))->tag(), 0x10000 + 8u);
}

// FDB rules on source_port sit in one pipe each (the wire's in RX, a vport's in TX): the same actions
// compile to different programs for them, made one by one or in one CreateMany call.
TEST_F(DrTest, FdbRulesOfDifferentPipesDoNotShareAProgram) {
  Domain fdb = *Domain::Create(device_, MLX5DV_DR_DOMAIN_TYPE_FDB);
  Table root = *Table::Create(fdb, 0);
  const MatchParams mask = *MatchBuilder().SourcePort(0xffff).Build();
  Matcher one_by_one = *Matcher::Create(root, 0, mask);
  Matcher in_one_call = *Matcher::Create(root, 1, mask);
  Action drop = *Action::Drop();
  const MatchParams wire = *MatchBuilder().SourcePort(hw::kWireVport).Build();
  const MatchParams vport = *MatchBuilder().SourcePort(1).Build();
  Rule from_wire = *Rule::Create(one_by_one, wire, {&drop});
  Rule from_vport = *Rule::Create(one_by_one, vport, {&drop});
  absl::StatusOr<std::vector<Rule>> both = Many(in_one_call, Raw({vport, wire}), {&drop});
  ASSERT_TRUE(both.ok()) << both.status();
  for (const Matcher* m : {&one_by_one, &in_one_call}) {
    const hw::RuleRecord* w = Lookup(*device_.roots[0], m->id(), wire);
    const hw::RuleRecord* v = Lookup(*device_.roots[0], m->id(), vport);
    ASSERT_NE(w, nullptr);
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(w->program(hw::kRxPipe).destination, hw::Destination::kDrop);
    EXPECT_EQ(w->program(hw::kTxPipe).destination, hw::Destination::kNone);
    EXPECT_EQ(v->program(hw::kRxPipe).destination, hw::Destination::kNone);
    EXPECT_EQ(v->program(hw::kTxPipe).destination, hw::Destination::kDrop);
  }
}

TEST_F(DrTest, RuleErrorsComeInRdmaCoreOrder) {
  Table t = *Table::Create(domain_, 1);
  Matcher m = *Matcher::Create(t, 0, SmacMask());
  Action qp = *Action::DestQp(device_, 100);
  Action tag = *Action::Tag(1);
  MatchParams bad_value =
      *MatchBuilder().Smac(kOuter, hw::MacAddress::AllOnes()).Ethertype(kOuter, 1).Build();
  // The value is checked before the actions.
  ExpectError(Rule::Create(m, bad_value, {&qp, &tag}).status(), absl::StatusCode::kInvalidArgument,
              "outer.ethertype");
  ExpectError(Rule::Create(m, Smac("00:00:00:00:00:04"), {&qp, &tag}).status(),
              absl::StatusCode::kUnimplemented, "action[1] (tag) cannot follow action[0] (dest_ibv_qp)");
  ExpectError(Rule::Create(m, Smac("00:00:00:00:00:04"), {&qp, nullptr}).status(),
              absl::StatusCode::kInvalidArgument, "action[1] is null");
  EXPECT_TRUE(m.builders().size() == 1 && m.builders()[0].name == "eth_l2_src");
}

// Rules of one table's matchers with the same actions share their programs: each matcher offers the ones
// its last rule was compiled to, and so does the table for all of them. A matcher that goes leaves the
// programs to the rules that use them.
TEST_F(DrTest, MatchersOfOneTableShareTheProgramsOfTheSameActions) {
  Table t = *Table::Create(domain_, 0);
  const hw::FlowTable& ft = *device_.roots[0];
  const MatchParams dmac_mask = *MatchBuilder().Dmac(kOuter, hw::MacAddress::AllOnes()).Build();
  auto dmac = [](const char* mac) {
    return *MatchBuilder().Dmac(kOuter, *hw::MacAddress::Parse(mac)).Build();
  };
  Matcher a = *Matcher::Create(t, 0, SmacMask());
  Matcher b = *Matcher::Create(t, 1, dmac_mask);
  Action drop = *Action::Drop();
  Action tag = *Action::Tag(7);
  auto programs_of = [&](const Matcher& m, const MatchParams& v) {
    const hw::RuleRecord* hit = Lookup(ft, m.id(), v);
    return hit == nullptr ? nullptr : hit->programs;
  };
  Rule a1 = *Rule::Create(a, Smac("00:00:00:00:00:01"), {&drop});
  Rule b1 = *Rule::Create(b, dmac("00:00:00:00:00:01"), {&drop});
  const hw::PipePrograms* dropping = programs_of(a, Smac("00:00:00:00:00:01"));
  ASSERT_NE(dropping, nullptr);
  EXPECT_EQ(programs_of(b, dmac("00:00:00:00:00:01")), dropping);
  // Other actions, other programs (now the table's offer); a's own offer still serves its next drop rule.
  Rule b2 = *Rule::Create(b, dmac("00:00:00:00:00:02"), {&tag});
  EXPECT_NE(programs_of(b, dmac("00:00:00:00:00:02")), dropping);
  Rule a2 = *Rule::Create(a, Smac("00:00:00:00:00:02"), {&drop});
  EXPECT_EQ(programs_of(a, Smac("00:00:00:00:00:02")), dropping);
  // a goes: b's drop rule keeps its programs, and a new matcher's drop rule shares them too (b's own offer
  // is the tag's; the table finds the programs its live rules use).
  ASSERT_TRUE(a1.Destroy().ok());
  ASSERT_TRUE(a2.Destroy().ok());
  ASSERT_TRUE(a.Destroy().ok());
  EXPECT_EQ(programs_of(b, dmac("00:00:00:00:00:01")), dropping);
  Matcher c = *Matcher::Create(t, 2, SmacMask());
  Rule c1 = *Rule::Create(c, Smac("00:00:00:00:00:03"), {&drop});
  const hw::PipePrograms* again = programs_of(c, Smac("00:00:00:00:00:03"));
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again, dropping);
  Rule b3 = *Rule::Create(b, dmac("00:00:00:00:00:03"), {&drop});
  EXPECT_EQ(programs_of(b, dmac("00:00:00:00:00:03")), again);
}

// Rules taking turns among a few action lists (flows spread over queues or marks) share one program a
// list, not one a rule; programs freed with their last rule are compiled afresh for the next.
TEST_F(DrTest, RulesTakingTurnsAmongActionListsShareTheirPrograms) {
  Table t = *Table::Create(domain_, 1);
  Matcher m = *Matcher::Create(t, 0, SmacMask());
  // Four lists: each of the device's two queues, alone and after a tag (the tag's value is each rule's).
  Action q100 = *Action::DestQp(device_, 100);
  Action q101 = *Action::DestQp(device_, 101);
  Action tag = *Action::Tag(7);
  const std::vector<std::vector<const Action*>> lists = {{&q100}, {&q101}, {&tag, &q100}, {&tag, &q101}};
  auto mac = [](int i) {
    char text[18];
    std::snprintf(text, sizeof text, "00:00:00:00:%02x:%02x", i / 256, i % 256);
    return Smac(text);
  };
  const hw::FlowTable& ft = FlowTableOf(t);
  std::vector<Rule> rules;
  for (int i = 0; i < 40; ++i) rules.push_back(*Rule::Create(m, mac(i), lists[i % 4]));
  for (int i = 4; i < 40; ++i) {
    const hw::RuleRecord* hit = Lookup(ft, m.id(), mac(i));
    ASSERT_NE(hit, nullptr);
    EXPECT_EQ(hit->programs, Lookup(ft, m.id(), mac(i % 4))->programs) << "rule " << i;
    EXPECT_EQ(hit->program(hw::kRxPipe).queue, 100u + i % 2);
    EXPECT_EQ(hit->program(hw::kRxPipe).ops.size(), i % 4 / 2u);
  }
  for (int i = 0; i < 4; ++i) {
    for (int j = i + 1; j < 4; ++j)
      EXPECT_NE(Lookup(ft, m.id(), mac(i))->programs, Lookup(ft, m.id(), mac(j))->programs);
  }
  // Every rule of the first list goes, then it is asked for again: new programs, with the same queue.
  for (int i = 0; i < 40; i += 4) ASSERT_TRUE(rules[i].Destroy().ok());
  Rule again = *Rule::Create(m, mac(100), lists[0]);
  Rule next = *Rule::Create(m, mac(101), lists[1]);
  Rule and_again = *Rule::Create(m, mac(102), lists[0]);
  EXPECT_EQ(Lookup(ft, m.id(), mac(100))->program(hw::kRxPipe).queue, 100u);
  EXPECT_EQ(Lookup(ft, m.id(), mac(101))->programs, Lookup(ft, m.id(), mac(1))->programs);
  EXPECT_EQ(Lookup(ft, m.id(), mac(102))->programs, Lookup(ft, m.id(), mac(100))->programs);
}

TEST_F(DrTest, DuplicatesFollowTheDomainSetting) {
  Table t = *Table::Create(domain_, 1);
  Table root = *Table::Create(domain_, 0);
  Matcher m = *Matcher::Create(t, 0, SmacMask());
  Matcher rm = *Matcher::Create(root, 0, SmacMask());
  Action drop = *Action::Drop();
  Action miss = *Action::DefaultMiss();
  MatchParams v = Smac("00:00:00:00:00:05");
  Rule first = *Rule::Create(m, v, {&drop});
  Rule second = *Rule::Create(m, v, {&miss});  // accepted by default

  ASSERT_TRUE(domain_.AllowDuplicateRules(false).ok());
  absl::Status dup = Rule::Create(m, v, {&drop}).status();
  ExpectError(dup, absl::StatusCode::kAlreadyExists, "duplicates rule " + std::to_string(first.id()));
  // Root tables are not affected (as in rdma-core).
  Rule r1 = *Rule::Create(rm, v, {&drop});
  EXPECT_TRUE(Rule::Create(rm, v, {&drop}).ok());
  // An empty matcher: every rule has the same (empty) value.
  Matcher empty = *Matcher::Create(t, 1, 0, nullptr);
  Rule e1 = *Rule::Create(empty, MatchParams(), {&drop});
  ExpectError(Rule::Create(empty, MatchParams(), {&drop}).status(), absl::StatusCode::kAlreadyExists,
              "duplicates rule");
}

TEST_F(DrTest, CreateManyInstallsAsCreatesInARow) {
  Table t = *Table::Create(domain_, 0);
  const hw::FlowTable& ft = *device_.roots[0];
  Matcher m = *Matcher::Create(t, 0, SmacMask());
  Action drop = *Action::Drop();
  Action miss = *Action::DefaultMiss();
  // Enough values to grow the table several times during the call; the last repeats the first.
  std::vector<MatchParams> values;
  for (uint32_t i = 0; i < 3000; ++i) values.push_back(SmacOf(i));
  values.push_back(SmacOf(0));
  absl::StatusOr<std::vector<Rule>> rules = Many(m, Raw(values), {&drop});
  ASSERT_TRUE(rules.ok()) << rules.status();
  ASSERT_EQ(rules->size(), values.size());
  for (size_t i = 1; i < rules->size(); ++i) EXPECT_GT((*rules)[i].id(), (*rules)[i - 1].id());
  for (size_t i = 0; i + 1 < values.size(); ++i) {
    const hw::RuleRecord* hit = Lookup(ft, m.id(), values[i]);
    ASSERT_NE(hit, nullptr) << i;
    EXPECT_EQ(hit->rule_id, (*rules)[i].id());
    EXPECT_EQ(hit->program(hw::kRxPipe).destination, hw::Destination::kDrop);
  }
  // The older of two equal values wins until it goes; rules made one by one after the call queue behind.
  Rule later = *Rule::Create(m, SmacOf(0), {&miss});
  ASSERT_TRUE((*rules)[0].Destroy().ok());
  EXPECT_EQ(Lookup(ft, m.id(), SmacOf(0))->rule_id, rules->back().id());
  ASSERT_TRUE(rules->back().Destroy().ok());
  EXPECT_EQ(Lookup(ft, m.id(), SmacOf(0))->rule_id, later.id());
  // No values: no rules.
  absl::StatusOr<std::vector<Rule>> none = Many(m, {}, {&drop});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST_F(DrTest, CreateManyInstallsNothingWhenAValueOrActionFails) {
  Table t = *Table::Create(domain_, 1);
  Matcher m = *Matcher::Create(t, 0, SmacMask());
  Action qp = *Action::DestQp(device_, 100);
  Action tag = *Action::Tag(1);
  Action drop = *Action::Drop();
  const MatchParams bad =
      *MatchBuilder().Smac(kOuter, hw::MacAddress::AllOnes()).Ethertype(kOuter, 1).Build();
  const std::vector<MatchParams> values = {SmacOf(1), bad, SmacOf(2)};
  ExpectError(Many(m, Raw(values), {&drop}).status(), absl::StatusCode::kInvalidArgument,
              "value[1]: rule value sets outer.ethertype");
  const std::vector<const mlx5dv_flow_match_parameters*> with_null = {values[0].get(), nullptr};
  ExpectError(Many(m, with_null, {&drop}).status(), absl::StatusCode::kInvalidArgument,
              "value[1]: rule value is null");
  const std::vector<MatchParams> good = {SmacOf(1), SmacOf(2)};
  ExpectError(Many(m, Raw(good), {&qp, &tag}).status(), absl::StatusCode::kUnimplemented,
              "value[0]: action[1] (tag) cannot follow action[0] (dest_ibv_qp)");
  ExpectError(Many(m, Raw(good), {&drop, nullptr}).status(), absl::StatusCode::kInvalidArgument,
              "action[1] is null");
  ExpectError(Many(Matcher(), Raw(good), {&drop}).status(), absl::StatusCode::kInvalidArgument,
              "matcher handle is empty");
  // No rule holds the actions or the matcher.
  EXPECT_TRUE(qp.Destroy().ok());
  EXPECT_TRUE(tag.Destroy().ok());
  EXPECT_TRUE(drop.Destroy().ok());
  EXPECT_TRUE(m.Destroy().ok());
}

TEST_F(DrTest, CreateManyRefusesDuplicatesWhenTheDomainDoes) {
  Table t = *Table::Create(domain_, 1);
  Table root = *Table::Create(domain_, 0);
  Matcher m = *Matcher::Create(t, 0, SmacMask());
  Matcher rm = *Matcher::Create(root, 0, SmacMask());
  Action drop = *Action::Drop();
  ASSERT_TRUE(domain_.AllowDuplicateRules(false).ok());
  Rule existing = *Rule::Create(m, SmacOf(7), {&drop});
  ExpectError(Many(m, Raw({SmacOf(1), SmacOf(7)}), {&drop}).status(), absl::StatusCode::kAlreadyExists,
              "value[1]: rule value duplicates rule " + std::to_string(existing.id()));
  ExpectError(Many(m, Raw({SmacOf(1), SmacOf(2), SmacOf(1)}), {&drop}).status(),
              absl::StatusCode::kAlreadyExists, "value[2] duplicates value[0] of the same call");
  // Nothing went in: one by one, the same values are not duplicates.
  EXPECT_TRUE(Rule::Create(m, SmacOf(1), {&drop}).ok());
  EXPECT_TRUE(Rule::Create(m, SmacOf(2), {&drop}).ok());
  // Root tables keep accepting them (as in rdma-core), and so does a domain that allows them.
  EXPECT_TRUE(Many(rm, Raw({SmacOf(1), SmacOf(1)}), {&drop}).ok());
  ASSERT_TRUE(domain_.AllowDuplicateRules(true).ok());
  EXPECT_TRUE(Many(m, Raw({SmacOf(7), SmacOf(7)}), {&drop}).ok());
  // A matcher without criteria: every value is the empty key.
  Matcher empty = *Matcher::Create(root, 1, 0, nullptr);
  absl::StatusOr<std::vector<Rule>> catch_all = Many(empty, Raw({MatchParams(), MatchParams()}), {&drop});
  ASSERT_TRUE(catch_all.ok()) << catch_all.status();
  EXPECT_EQ(Lookup(*device_.roots[0], empty.id(), MatchParams())->rule_id, (*catch_all)[0].id());
}

// The caller's handles: one per value, all empty (releasing one could destroy a rule under the domain's
// lock), and left empty on failure.
TEST_F(DrTest, CreateManyFillsTheCallersEmptyHandles) {
  Table t = *Table::Create(domain_, 0);
  Matcher m = *Matcher::Create(t, 0, SmacMask());
  Action drop = *Action::Drop();
  std::vector<Rule> rules(2);
  ExpectError(Rule::CreateMany(m, Raw({SmacOf(1)}), {&drop}, absl::MakeSpan(rules)),
              absl::StatusCode::kInvalidArgument, "2 rule handles for 1 values");
  rules[1] = *Rule::Create(m, SmacOf(9), {&drop});
  const uint32_t held = rules[1].id();
  ExpectError(Rule::CreateMany(m, Raw({SmacOf(1), SmacOf(2)}), {&drop}, absl::MakeSpan(rules)),
              absl::StatusCode::kInvalidArgument, "rules[1] is not empty");
  EXPECT_EQ(rules[1].id(), held);
  EXPECT_EQ(Lookup(*device_.roots[0], m.id(), SmacOf(1)), nullptr);
  ASSERT_TRUE(rules[1].Destroy().ok());
  ExpectError(Rule::CreateMany(m, Raw({SmacOf(1), SmacOf(2)}), {&drop, nullptr}, absl::MakeSpan(rules)),
              absl::StatusCode::kInvalidArgument, "action[1] is null");
  EXPECT_FALSE(rules[0].valid() || rules[1].valid());
  ASSERT_TRUE(Rule::CreateMany(m, Raw({SmacOf(1), SmacOf(2)}), {&drop}, absl::MakeSpan(rules)).ok());
  EXPECT_EQ(Lookup(*device_.roots[0], m.id(), SmacOf(1))->rule_id, rules[0].id());
  EXPECT_EQ(Lookup(*device_.roots[0], m.id(), SmacOf(2))->rule_id, rules[1].id());
}

// A failure after one pipe's programs compiled (an FDB value refused as a duplicate) installs nothing, and
// errors name the first value that fails.
TEST_F(DrTest, CreateManyFailsWholeAcrossFdbPipes) {
  Domain fdb = *Domain::Create(device_, MLX5DV_DR_DOMAIN_TYPE_FDB);
  Table t = *Table::Create(fdb, 1);
  Matcher m = *Matcher::Create(t, 0, *MatchBuilder().SourcePort(0xffff).Build());
  Action drop = *Action::Drop();
  Action tag = *Action::Tag(1);
  ASSERT_TRUE(fdb.AllowDuplicateRules(false).ok());
  const MatchParams wire = *MatchBuilder().SourcePort(hw::kWireVport).Build();
  const MatchParams vport = *MatchBuilder().SourcePort(1).Build();
  Rule existing = *Rule::Create(m, wire, {&drop});
  ExpectError(Many(m, Raw({vport, wire}), {&drop}).status(), absl::StatusCode::kAlreadyExists,
              "value[1]: rule value duplicates rule " + std::to_string(existing.id()));
  // Tag is refused in the FDB's TX pipe, value 0's: the error names value 0, the first that fails.
  ExpectError(Many(m, Raw({vport, wire}), {&tag}).status(), absl::StatusCode::kUnimplemented,
              "value[0]: action[0] (tag) is not allowed in a FDB (TX pipe");
  // Nothing went in: the vport's value is not a duplicate one by one, and no rule holds the tag.
  EXPECT_TRUE(Rule::Create(m, vport, {&drop}).ok());
  EXPECT_TRUE(tag.Destroy().ok());
}

// Rule::UpdateMany with the same actions for every update.
absl::Status UpdateAll(std::vector<std::pair<Rule*, const MatchParams*>> changes,
                       std::initializer_list<const Action*> actions) {
  std::vector<Rule::Update> updates;
  for (const auto& [rule, value] : changes) updates.push_back({rule, value->get(), actions});
  return Rule::UpdateMany(updates);
}

TEST_F(DrTest, UpdateManyReplacesRulesAsDestroyThenCreate) {
  Table t = *Table::Create(domain_, 0);
  const hw::FlowTable& ft = *device_.roots[0];
  Matcher m1 = *Matcher::Create(t, 0, SmacMask());
  Matcher m2 = *Matcher::Create(t, 1, SmacMask());
  Action drop = *Action::Drop();
  Action miss = *Action::DefaultMiss();
  Rule a = *Rule::Create(m1, SmacOf(1), {&drop});
  Rule b = *Rule::Create(m1, SmacOf(2), {&drop});
  Rule c = *Rule::Create(m2, SmacOf(3), {&drop});
  const uint32_t last_id = c.id();
  const MatchParams moved_a = SmacOf(10), moved_c = SmacOf(11), same_b = SmacOf(2);
  // a and c move to new values; b keeps its value and changes its actions. (The updates' spans view lists
  // that outlive them.)
  const std::vector<const Action*> dropping = {&drop}, missing = {&miss};
  const std::vector<Rule::Update> updates = {
      {&a, moved_a.get(), dropping}, {&b, same_b.get(), missing}, {&c, moved_c.get(), dropping}};
  ASSERT_TRUE(Rule::UpdateMany(updates).ok());
  EXPECT_GT(a.id(), last_id);
  EXPECT_GT(b.id(), a.id());  // new ids, in update order
  EXPECT_GT(c.id(), b.id());
  EXPECT_EQ(Lookup(ft, m1.id(), SmacOf(1)), nullptr);
  EXPECT_EQ(Lookup(ft, m2.id(), SmacOf(3)), nullptr);
  EXPECT_EQ(Lookup(ft, m1.id(), moved_a)->rule_id, a.id());
  EXPECT_EQ(Lookup(ft, m2.id(), moved_c)->rule_id, c.id());
  const hw::RuleRecord* hit_b = Lookup(ft, m1.id(), same_b);
  ASSERT_NE(hit_b, nullptr);
  EXPECT_EQ(hit_b->rule_id, b.id());
  EXPECT_EQ(hit_b->program(hw::kRxPipe).destination, hw::Destination::kDefaultMiss);
  // The handles hold the new rules: destroying them empties the matchers.
  EXPECT_TRUE(Rule::UpdateMany({}).ok());
  for (Rule* r : {&a, &b, &c}) EXPECT_TRUE(r->Destroy().ok());
  EXPECT_TRUE(m1.Destroy().ok());
  EXPECT_TRUE(m2.Destroy().ok());
}

TEST_F(DrTest, UpdateManyChangesNothingWhenAnUpdateFails) {
  Table t = *Table::Create(domain_, 1);
  Matcher m = *Matcher::Create(t, 0, SmacMask());
  Action drop = *Action::Drop();
  Rule a = *Rule::Create(m, SmacOf(1), {&drop});
  Rule b = *Rule::Create(m, SmacOf(2), {&drop});
  Domain other = *Domain::Create(device_, MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
  Table other_t = *Table::Create(other, 1);
  Matcher other_m = *Matcher::Create(other_t, 0, SmacMask());
  Rule foreign = *Rule::Create(other_m, SmacOf(1), {&drop});
  const uint32_t id_a = a.id(), id_b = b.id();
  const MatchParams v5 = SmacOf(5), v6 = SmacOf(6);
  const MatchParams bad =
      *MatchBuilder().Smac(kOuter, hw::MacAddress::AllOnes()).Ethertype(kOuter, 1).Build();
  Rule empty;
  ExpectError(UpdateAll({{&a, &v5}, {nullptr, &v6}}, {&drop}), absl::StatusCode::kInvalidArgument,
              "update[1]: rule is null or an empty handle");
  ExpectError(UpdateAll({{&a, &v5}, {&empty, &v6}}, {&drop}), absl::StatusCode::kInvalidArgument,
              "update[1]: rule is null or an empty handle");
  ExpectError(UpdateAll({{&a, &v5}, {&foreign, &v6}}, {&drop}), absl::StatusCode::kInvalidArgument,
              "update[1]: the rule is of another domain than update[0]'s");
  ExpectError(UpdateAll({{&a, &v5}, {&b, &bad}}, {&drop}), absl::StatusCode::kInvalidArgument,
              "update[1]: rule value sets outer.ethertype");
  ExpectError(UpdateAll({{&a, &v5}, {&b, &v6}}, {&drop, nullptr}), absl::StatusCode::kInvalidArgument,
              "update[0]: action[1] is null");
  ExpectError(UpdateAll({{&a, &v5}, {&b, &v6}, {&a, &v6}}, {&drop}), absl::StatusCode::kInvalidArgument,
              "update[2]: the rule is update[0]'s too");
  EXPECT_EQ(a.id(), id_a);
  EXPECT_EQ(b.id(), id_b);
  const hw::FlowTable& ft = FlowTableOf(t);
  EXPECT_EQ(Lookup(ft, m.id(), SmacOf(1))->rule_id, id_a);
  EXPECT_EQ(Lookup(ft, m.id(), SmacOf(2))->rule_id, id_b);
  EXPECT_EQ(Lookup(ft, m.id(), v5), nullptr);
}

TEST_F(DrTest, UpdateManyRefusesDuplicatesWhenTheDomainDoes) {
  Table t = *Table::Create(domain_, 1);
  Matcher m = *Matcher::Create(t, 0, SmacMask());
  const hw::FlowTable& ft = FlowTableOf(t);
  Action drop = *Action::Drop();
  Rule x = *Rule::Create(m, SmacOf(1), {&drop});
  Rule y = *Rule::Create(m, SmacOf(2), {&drop});
  Rule z = *Rule::Create(m, SmacOf(3), {&drop});
  ASSERT_TRUE(domain_.AllowDuplicateRules(false).ok());
  const MatchParams v3 = SmacOf(3), v4 = SmacOf(4), v5 = SmacOf(5), v1 = SmacOf(1);
  ExpectError(UpdateAll({{&x, &v3}}, {&drop}), absl::StatusCode::kAlreadyExists,
              "update[0]: rule value duplicates rule " + std::to_string(z.id()));
  ExpectError(UpdateAll({{&y, &v5}, {&z, &v5}}, {&drop}), absl::StatusCode::kAlreadyExists,
              "update[1]: rule value duplicates update[0]'s, of the same matcher");
  // A value another update of the call takes away is free, whichever goes first; so is a rule's own.
  ASSERT_TRUE(UpdateAll({{&x, &v3}, {&z, &v4}, {&y, &v1}}, {&drop}).ok());
  EXPECT_EQ(Lookup(ft, m.id(), v3)->rule_id, x.id());
  EXPECT_EQ(Lookup(ft, m.id(), v4)->rule_id, z.id());
  EXPECT_EQ(Lookup(ft, m.id(), v1)->rule_id, y.id());
  EXPECT_EQ(Lookup(ft, m.id(), SmacOf(2)), nullptr);
  EXPECT_TRUE(UpdateAll({{&x, &v3}}, {&drop}).ok());
  // Duplicates installed while the domain allowed them: the one the call keeps still counts.
  ASSERT_TRUE(domain_.AllowDuplicateRules(true).ok());
  Rule twin = *Rule::Create(m, SmacOf(3), {&drop});
  ASSERT_TRUE(domain_.AllowDuplicateRules(false).ok());
  ExpectError(UpdateAll({{&x, &v3}}, {&drop}), absl::StatusCode::kAlreadyExists,
              "update[0]: rule value duplicates a rule of matcher " + std::to_string(m.id()) +
                  " that the call keeps");
  ExpectError(UpdateAll({{&y, &v3}}, {&drop}), absl::StatusCode::kAlreadyExists,
              "update[0]: rule value duplicates rule " + std::to_string(x.id()));
  EXPECT_TRUE(UpdateAll({{&x, &v3}, {&twin, &v5}}, {&drop}).ok());
  // A matcher without criteria: every value is the empty key, a rule's own too.
  Matcher empty = *Matcher::Create(t, 1, 0, nullptr);
  const MatchParams none;
  Rule e = *Rule::Create(empty, none, {&drop});
  EXPECT_TRUE(UpdateAll({{&e, &none}}, {&drop}).ok());
  ExpectError(Rule::Create(empty, none, {&drop}).status(), absl::StatusCode::kAlreadyExists,
              "duplicates rule");
  // Root tables accept duplicates.
  Table root = *Table::Create(domain_, 0);
  Matcher rm = *Matcher::Create(root, 0, SmacMask());
  Rule r1 = *Rule::Create(rm, SmacOf(1), {&drop});
  Rule r2 = *Rule::Create(rm, SmacOf(2), {&drop});
  EXPECT_TRUE(UpdateAll({{&r2, &v1}}, {&drop}).ok());
}

// The programs an update chose stay while the call removes their last rule, and a matcher whose handle is
// gone stays while the call moves its rules, its only one too. (Without either, ASan reports a use after
// free here.)
TEST_F(DrTest, UpdateManyKeepsWhatItsRulesWillUse) {
  Table t = *Table::Create(domain_, 1);
  const hw::FlowTable* ft = nullptr;
  uint32_t matcher_id = 0;
  Action drop = *Action::Drop();
  Action miss = *Action::DefaultMiss();
  Action qp = *Action::DestQp(device_, 100);
  Rule r1, r2;
  {
    Matcher m = *Matcher::Create(t, 0, SmacMask());
    ft = &FlowTableOf(t);
    matcher_id = m.id();
    r2 = *Rule::Create(m, SmacOf(2), {&qp});
    r1 = *Rule::Create(m, SmacOf(1), {&drop});  // the matcher and the table offer drop's programs
  }
  // Update 0 takes the offered programs (r1 alone uses them); update 1 compiles new ones, which the
  // matcher and table then offer instead; the delete of r1 leaves drop's programs without a rule.
  const MatchParams v7 = SmacOf(7), v8 = SmacOf(8);
  ASSERT_TRUE(Rule::UpdateMany({{&r1, v7.get(), {&drop}}, {&r2, v8.get(), {&miss}}}).ok());
  const hw::RuleRecord* hit1 = Lookup(*ft, matcher_id, v7);
  const hw::RuleRecord* hit2 = Lookup(*ft, matcher_id, v8);
  ASSERT_NE(hit1, nullptr);
  ASSERT_NE(hit2, nullptr);
  EXPECT_EQ(hit1->rule_id, r1.id());
  EXPECT_EQ(hit1->program(hw::kRxPipe).destination, hw::Destination::kDrop);
  EXPECT_EQ(hit2->program(hw::kRxPipe).destination, hw::Destination::kDefaultMiss);
  // The rules hold the matcher: moving both keeps it, destroying both frees it.
  ASSERT_TRUE(Rule::UpdateMany({{&r1, v8.get(), {&drop}}, {&r2, v7.get(), {&qp}}}).ok());
  EXPECT_EQ(Lookup(*ft, matcher_id, v8)->rule_id, r1.id());
  EXPECT_EQ(Lookup(*ft, matcher_id, v7)->program(hw::kRxPipe).destination, hw::Destination::kQueue);
  EXPECT_TRUE(OnChain(*ft, matcher_id));
  EXPECT_TRUE(r1.Destroy().ok());
  EXPECT_TRUE(r2.Destroy().ok());
  EXPECT_FALSE(OnChain(*ft, matcher_id));
  // A matcher whose only rule holds its last reference: the update's delete must not finalise it.
  Rule alone;
  uint32_t alone_id = 0;
  {
    Matcher m = *Matcher::Create(t, 1, SmacMask());
    alone_id = m.id();
    alone = *Rule::Create(m, SmacOf(3), {&drop});
  }
  const MatchParams v9 = SmacOf(9);
  ASSERT_TRUE(Rule::UpdateMany({{&alone, v9.get(), {&miss}}}).ok());
  ASSERT_TRUE(OnChain(*ft, alone_id));
  EXPECT_EQ(Lookup(*ft, alone_id, v9)->rule_id, alone.id());
  EXPECT_EQ(Lookup(*ft, alone_id, SmacOf(3)), nullptr);
  EXPECT_TRUE(alone.Destroy().ok());
  EXPECT_FALSE(OnChain(*ft, alone_id));
}

TEST_F(DrTest, SetLayout) {
  Table root = *Table::Create(domain_, 0);
  Table t = *Table::Create(domain_, 1);
  Matcher rm = *Matcher::Create(root, 0, SmacMask());
  Matcher m = *Matcher::Create(t, 0, SmacMask());
  mlx5dv_dr_matcher_layout layout = {MLX5DV_DR_MATCHER_LAYOUT_NUM_RULE, 5};
  ExpectError(rm.SetLayout(layout), absl::StatusCode::kUnimplemented, "root (level 0)");
  EXPECT_TRUE(m.SetLayout(layout).ok());
  ExpectError(m.SetLayout({4, 0}), absl::StatusCode::kUnimplemented, "flags 0x4");
  ExpectError(m.SetLayout({MLX5DV_DR_MATCHER_LAYOUT_NUM_RULE, 25}), absl::StatusCode::kUnimplemented,
              "log_num_of_rules_hint 25");
  EXPECT_TRUE(m.SetLayout({MLX5DV_DR_MATCHER_LAYOUT_RESIZABLE | MLX5DV_DR_MATCHER_LAYOUT_NUM_RULE, 16}).ok());
}

}  // namespace
}  // namespace drsim::dr
