// The compiled trees take the index's changes as they come (hw/tree_updates.cc): compared, change after
// change, with a twin index given the same changes that never compiles, so walks its tries.
#include <chrono>
#include <cstdint>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "hw/flow_table.h"
#include "hw/match_params.h"
#include "hw/reclaimer.h"
#include "hw/table_index.h"
#include "hw/table_index_testing.h"

namespace drsim::hw {
namespace {

// Two indexed tables with the same matchers, made in the same order (so the same ids), given the same
// changes: `compiled` is compiled first, `walked` never is (it is looked up far fewer than kQuietLookups
// times, and its trees are not asked for).
class Twins {
 public:
  // Adds a matcher of `priority` over `mask` to both.
  size_t AddMatcher(uint16_t priority, const MatchParams& mask) {
    walked_.AddMatcher(priority, mask);
    values_.emplace_back();
    return compiled_.AddMatcher(priority, mask);
  }
  void Build() {
    compiled_.Build();
    walked_.Build();
  }
  void AddRule(size_t m, const MatchParams& value) {
    compiled_.AddRule(m, value);
    walked_.AddRule(m, value);
    values_[m].push_back(value);
  }
  // Removes the `k`-th rule of matcher `m` (false: it has none).
  bool RemoveRule(size_t m, size_t k) {
    if (values_[m].empty()) return false;
    k %= values_[m].size();
    compiled_.RemoveValue(m, values_[m][k]);
    walked_.RemoveValue(m, values_[m][k]);
    values_[m][k] = values_[m].back();
    values_[m].pop_back();
    return true;
  }
  // Names `hit` as the rule of matcher `m`'s `k`-th rule, or takes it back.
  void NameHit(size_t m, size_t k, const RuleRecord* hit) {
    if (values_[m].empty()) return;
    compiled_.NameHit(m, values_[m][k % values_[m].size()], hit);
    walked_.NameHit(m, values_[m][k % values_[m].size()], hit);
  }
  void DropHit(size_t m, size_t k, const RuleRecord* hit) {
    if (values_[m].empty()) return;
    compiled_.DropHit(m, values_[m][k % values_[m].size()], hit);
    walked_.DropHit(m, values_[m][k % values_[m].size()], hit);
  }
  // Matcher `m` leaves both, its rules with it, and comes back empty.
  void RemoveMatcher(size_t m) {
    compiled_.RemoveMatcher(m);
    walked_.RemoveMatcher(m);
    compiled_.RejoinMatcher(m);
    walked_.RejoinMatcher(m);
    values_[m].clear();
  }
  const std::vector<MatchParams>& values(size_t m) const { return values_[m]; }
  const IndexedTable& compiled() const { return compiled_; }
  const IndexedTable& walked() const { return walked_; }

  // What differs between the candidates of `packets` (looked up together, from the rank of matcher
  // `later`'s and from the first) in the two, by matcher id, exactness and named hit; and whether the
  // compiled one's cover every hit. "" when nothing does.
  std::string Difference(const std::vector<MatchParams>& packets, size_t later) const {
    if (walked_.index().IsCompiled()) return "the walked twin compiled";
    const uint64_t ranks[] = {0, LookupRank(*compiled_.matcher(later))};
    for (const uint64_t from : ranks) {
      const auto got = CandidatesOfAll(compiled_.index(), packets, from);
      const auto want = CandidatesOfAll(walked_.index(), packets, from);
      for (size_t p = 0; p < packets.size(); ++p) {
        if (got[p].size() != want[p].size())
          return absl::StrFormat("packet %d from rank %d: %d candidates, not %d", p, from, got[p].size(),
                                 want[p].size());
        for (size_t c = 0; c < got[p].size(); ++c) {
          const TableIndex::Candidate &g = got[p][c], &w = want[p][c];
          if (g.matcher->id != w.matcher->id || g.exact != w.exact || g.hit != w.hit)
            return absl::StrFormat(
                "packet %d from rank %d candidate %d: matcher %d exact %d hit %p, not %d %d %p", p, from, c,
                g.matcher->id, g.exact, g.hit, w.matcher->id, w.exact, w.hit);
        }
        if (from == 0) {
          if (std::string problem = CoverProblem(compiled_, packets[p], got[p]); !problem.empty())
            return absl::StrFormat("packet %d: %s", p, problem);
        }
      }
    }
    return "";
  }

 private:
  IndexedTable compiled_, walked_;
  std::vector<std::vector<MatchParams>> values_;
};

// Random changes of every kind (rules added, removed and moved, hits named and dropped, matchers going
// broad and leaving) on matchers of many masks: the compiled trees (or the form's automata, `by_automata`)
// take each, and name what the walk names.
void TakeEveryKindOfChange(bool by_automata) {
  std::mt19937 rng(20261129);
  const int lengths[] = {0, 3, 8, 13, 16, 24, 27, 32};
  const uint16_t port_masks[] = {0, 0xffff, 0xff00, 0xfff0};
  const uint32_t hosts[] = {0x0a000001, 0x0a000102, 0x0a0a0a0a, 0xc0a80001, 0xc0a80101, 0x7f000001};
  auto pick = [&](const auto& array) { return array[rng() % std::size(array)]; };
  auto value = [&]() {
    return Acl(pick(hosts) ^ (rng() % 64), pick(hosts) ^ (rng() % 4 << 8), rng() % 4 * 0x1111,
               6 + rng() % 2 * 11, 64 + rng() % 2);
  };
  Twins t;
  std::vector<size_t> all;
  for (int i = 0; i < 48; ++i) {
    // (A TTL mask: entries that are not exact.)
    all.push_back(t.AddMatcher(static_cast<uint16_t>(rng() % 6),
                               Acl(Prefix(pick(lengths)), Prefix(pick(lengths)), pick(port_masks),
                                   rng() % 2 ? 0xff : 0, rng() % 4 == 0 ? 0xff : 0)));
  }
  t.Build();
  for (const size_t m : all) {
    for (int r = 0; r < 4; ++r) t.AddRule(m, value());
  }
  ASSERT_TRUE(t.compiled().index().Compile(by_automata));
  std::vector<RuleRecord> records(16);
  int automata_rounds = 0;
  for (int round = 0; round < 400; ++round) {
    const size_t m = pick(all);
    switch (rng() % 8) {
      case 0:
      case 1:
        t.AddRule(m, value());
        break;
      case 2:
        t.RemoveRule(m, rng());
        break;
      case 3:  // a move: the rule's key changes
        if (t.RemoveRule(m, rng())) t.AddRule(m, value());
        break;
      case 4:  // deleted and put back as it was
        if (!t.values(m).empty()) {
          const MatchParams again = t.values(m)[0];
          t.RemoveRule(m, 0);
          t.AddRule(m, again);
        }
        break;
      case 5:
        t.NameHit(m, rng(), &records[rng() % records.size()]);
        break;
      case 6:
        for (const RuleRecord& r : records) t.DropHit(m, rng(), &r);
        break;
      case 7:
        if (rng() % 4 == 0) t.RemoveMatcher(m);
        break;
    }
    std::vector<MatchParams> packets;
    for (int p = 0; p < 24; ++p) {
      const size_t from = pick(all);
      packets.push_back(t.values(from).empty() || rng() % 3 == 0 ? value() : t.values(from)[0]);
    }
    ASSERT_EQ(t.Difference(packets, pick(all)), "") << "round " << round;
    ASSERT_TRUE(t.compiled().index().IsCompiled() || t.compiled().index().tree_upkeep().overflows > 0)
        << "round " << round;
    automata_rounds += t.compiled().index().LooksUpByAutomata();
  }
  // (The automata serve until a fold replaces the form, or their delta fills.)
  if (by_automata) {
    EXPECT_GT(automata_rounds, 50);
  }
}

TEST(TreeUpdatesTest, TheTreesTakeEveryKindOfChangeAsTheWalkSeesIt) { TakeEveryKindOfChange(false); }

TEST(TreeUpdatesTest, TheAutomataTakeEveryKindOfChangeAsTheWalkSeesIt) { TakeEveryKindOfChange(true); }

// A leaf's node names the rank bucket its entries start in, and a packet whose bound is below it skips the
// leaf. An entry of an earlier bucket taken into a leaf lowers the leaf's bucket with it: into an empty
// leaf, a free slot, a copy, or a gone entry's slot. Here every packet first meets a broad rule of an early
// matcher (its bound), then a tree of later host rules, into whose leaves rules of the earliest matchers
// come: each must be found where the packet's bound would skip the leaf as it was built.
TEST(TreeUpdatesTest, AnEarlierEntryLowersItsLeafsRankBucket) {
  std::mt19937 rng(11);
  constexpr uint32_t kDst = 0x0b000001;
  Twins t;
  std::vector<size_t> earliest;  // no rules when compiled
  for (int i = 0; i < 16; ++i) earliest.push_back(t.AddMatcher(1, Acl(Prefix(32), Prefix(32), 0xffff, 0xff)));
  const size_t broad = t.AddMatcher(5, Acl(0, Prefix(32), 0, 0));
  std::vector<size_t> hosts;
  for (int i = 0; i < 600; ++i) hosts.push_back(t.AddMatcher(9, Acl(Prefix(32), Prefix(32), 0xffff, 0xff)));
  t.Build();
  t.AddRule(broad, Acl(0, kDst, 0, 0));
  for (int r = 0; r < 3000; ++r) {
    t.AddRule(hosts[r % hosts.size()],
              Acl(0x0a000000 | (rng() & 0xffffff), kDst, static_cast<uint16_t>(rng() % 1024), 6));
  }
  ASSERT_TRUE(t.compiled().index().Compile());
  // Packets on host rules' keys (in the leaves those rules reach), and on keys no rule has (mostly in empty
  // leaves).
  std::vector<MatchParams> packets;
  for (int p = 0; p < 48; ++p) packets.push_back(t.values(hosts[p * 7 % hosts.size()])[0]);
  for (int p = 0; p < 16; ++p) packets.push_back(Acl(0x0c000000 | (rng() & 0xffffff), kDst, 80, 6));
  ASSERT_EQ(t.Difference(packets, broad), "");
  // The earliest matchers' rules on the first half of the packets' keys: into free slots, copies and
  // empty leaves.
  for (int p = 0; p < 32; ++p) t.AddRule(earliest[p % earliest.size()], packets[p]);
  ASSERT_EQ(t.Difference(packets, broad), "");
  ASSERT_TRUE(t.compiled().index().IsCompiled());
  // The host rules of the other packets go, and the earliest matchers' rules take their keys: into the
  // gone entries' slots.
  for (int p = 32; p < 48; ++p) {
    ASSERT_TRUE(t.RemoveRule(hosts[p * 7 % hosts.size()], 0));
    t.AddRule(earliest[p % earliest.size()], packets[p]);
  }
  ASSERT_EQ(t.Difference(packets, broad), "");
  ASSERT_TRUE(t.compiled().index().IsCompiled());
  EXPECT_EQ(t.compiled().index().tree_upkeep().overflows, 0u);
}

// Rules removed leave gone entries, which new entries fill, and rules added beyond the leaves' free slots
// leave copies of leaves behind. Once half the entries the trees were built with are gone, the writer folds
// them into new trees (built on a thread of the index's own, the changes made meanwhile taken in after),
// and the new trees serve: twice here, with the walk's candidates throughout.
TEST(TreeUpdatesTest, RemovedRulesAreFoldedIntoNewTreesThatServe) {
  std::mt19937 rng(7);
  Twins t;
  std::vector<size_t> ms;
  // (Six rules a matcher: past kMaxEntriesPerMatcher, a matcher's rules would no longer change the index.)
  for (int i = 0; i < 300; ++i)
    ms.push_back(t.AddMatcher(static_cast<uint16_t>(i), Acl(Prefix(32), Prefix(32), 0xffff, 0xff)));
  t.Build();
  auto value = [&] {
    return Acl(0x0a000000 | rng() % 0x10000, 0x0b000001, static_cast<uint16_t>(rng() % 8), 6);
  };
  for (int r = 0; r < 1800; ++r) t.AddRule(ms[r % ms.size()], value());
  ASSERT_TRUE(t.compiled().index().Compile());
  auto expect_same = [&](const char* when) {
    std::vector<MatchParams> packets;
    for (int p = 0; p < 64; ++p) {
      const size_t m = ms[rng() % ms.size()];
      packets.push_back(t.values(m).empty() ? value() : t.values(m)[0]);
    }
    ASSERT_EQ(t.Difference(packets, ms[rng() % ms.size()]), "") << when;
    ASSERT_TRUE(t.compiled().index().IsCompiled()) << when;
  };
  for (uint64_t fold = 1; fold <= 2; ++fold) {
    // Five sixths of the rules go; the last of them starts a fold.
    for (int r = 0; r < 1500; ++r) {
      t.RemoveRule(ms[r % ms.size()], rng());
      if (r % 100 == 0) expect_same("removing");
    }
    // The fold's thread builds; a change once it is done publishes the new trees.
    for (int wait = 0; wait < 5000 && t.compiled().index().tree_upkeep().folds < fold; ++wait) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      t.AddRule(ms[wait % ms.size()], value());
      if (wait % 64 == 0) expect_same("waiting for the fold");
    }
    EXPECT_EQ(t.compiled().index().tree_upkeep().folds, fold);
    // The rules come back with new keys, into the gone entries, free slots and copies of the new trees.
    for (int r = 0; r < 1500; ++r) {
      t.AddRule(ms[r % ms.size()], value());
      if (r % 100 == 0) expect_same("adding");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // (folds are paced)
  }
  EXPECT_EQ(t.compiled().index().tree_upkeep().overflows, 0u);
}

// An entry that would be copied into more than kMaxLeavesPerChange leaves (a short prefix where the tree
// cuts on the bits past it) retires the trees rather than go in; lookups walk, and a fold follows, which
// takes the wide entry in as it builds.
TEST(TreeUpdatesTest, AnEntryTooWideRetiresTheTreesAndAFoldFollows) {
  std::mt19937 rng(3);
  Twins t;
  std::vector<size_t> hosts;  // (five rules each: fewer than kMaxEntriesPerMatcher)
  for (int i = 0; i < 600; ++i) hosts.push_back(t.AddMatcher(1, Acl(Prefix(32), Prefix(32), 0xffff, 0xff)));
  const size_t network = t.AddMatcher(0, Acl(Prefix(8), Prefix(32), 0xffff, 0xff));
  t.Build();
  for (int r = 0; r < 3000; ++r)
    t.AddRule(hosts[r % hosts.size()], Acl(0x0a000000 | (rng() & 0xffffff), 0x0b000001, 80, 6));
  ASSERT_TRUE(t.compiled().index().Compile());
  const std::vector<MatchParams> packets = {t.values(hosts[0])[0], t.values(hosts[1])[1],
                                            Acl(0x0a123456, 0x0b000001, 80, 6)};
  t.AddRule(network, Acl(0x0a000000, 0x0b000001, 80, 6));
  EXPECT_EQ(t.compiled().index().tree_upkeep().overflows, 1u);
  EXPECT_FALSE(t.compiled().index().IsCompiled());
  ASSERT_EQ(t.Difference(packets, hosts[0]), "");
  // The fold was started as that change ended; a change once it is built publishes it.
  for (int wait = 0; wait < 5000 && t.compiled().index().tree_upkeep().folds == 0; ++wait) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    t.AddRule(hosts[wait % hosts.size()], Acl(0x0c000000 + static_cast<uint32_t>(wait), 0x0b000001, 80, 6));
  }
  EXPECT_EQ(t.compiled().index().tree_upkeep().folds, 1u);
  EXPECT_TRUE(t.compiled().index().IsCompiled());
  ASSERT_EQ(t.Difference(packets, hosts[0]), "");
}

// Readers looking rules up while the writer moves others, with the trees compiled, always find the rules
// that stay: through leaves copied and replaced, entries marked gone and live again, and folds published.
TEST(TreeUpdatesTest, ReadersFindRulesThatStayWhileTheTreesTakeChanges) {
  Reclaimer reclaimer;
  IndexedTable t(&reclaimer);
  constexpr int kStaying = 8, kChurning = 300;  // (five rules a churning matcher, on average)
  const std::vector<size_t> ms = ExactMatchers(&t, kStaying + kChurning);
  t.Build();
  std::vector<MatchParams> staying;
  for (int i = 0; i < kStaying; ++i) {
    staying.push_back(
        Acl(0x0a000001 + static_cast<uint32_t>(i), 0x0b000001, static_cast<uint16_t>(80 + i), 6));
    t.AddRule(ms[i], staying.back());
  }
  std::mt19937 rng(5);
  std::vector<std::pair<size_t, MatchParams>> added;
  auto make_rule = [&] {
    return std::make_pair(ms[kStaying + rng() % kChurning], Acl(0x0a000000 + rng() % 4096, 0x0b000001,
                                                                static_cast<uint16_t>(80 + rng() % 8), 6));
  };
  ChurnRules(&t, &rng, 2000, 1500, make_rule, &added);
  ASSERT_TRUE(t.index().Compile());
  StayingRulesReader reader(t, &reclaimer, staying, ms);
  for (int round = 0; round < 40; ++round) {
    ChurnRules(&t, &rng, 1000, 1500, make_rule, &added);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(reader.Stop(), 0);
  EXPECT_TRUE(t.index().IsCompiled());
  EXPECT_GE(t.index().tree_upkeep().folds, 1u);
}

}  // namespace
}  // namespace drsim::hw
