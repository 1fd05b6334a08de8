#include "hw/table_index.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "hw/definer.h"
#include "hw/flow_table.h"
#include "hw/match_params.h"
#include "hw/reclaimer.h"
#include "hw/table_index_testing.h"

namespace drsim::hw {
namespace {

// Offsets of the outer IPv4 source and destination words, the TCP ports word and the word of the IP
// protocol in the layout.
constexpr uint32_t kSrcWord = 0x2c, kDstWord = 0x3c, kPortsWord = 0x14, kProtocolWord = 0x10;

void ExpectCandidatesCover(const IndexedTable& t, const MatchParams& packet) {
  EXPECT_EQ(CoverProblem(t, packet, t.Candidates(packet)), "");
}

// Three matchers whose masks make the index read the addresses, the destination port and the protocol.
void BuildOverAddressesPortsAndProtocol(IndexedTable* t) {
  t->AddMatcher(0, Acl(Prefix(32), Prefix(24), 0xffff, 0xff));
  t->AddMatcher(1, Acl(Prefix(16), Prefix(32), 0, 0xff));
  t->AddMatcher(2, Acl(Prefix(8), 0, 0xff00, 0));
  t->Build();
}

TEST(TableIndexTest, ChoosesTheAddressesThenTheDestinationPortThenTheProtocol) {
  IndexedTable t;
  BuildOverAddressesPortsAndProtocol(&t);
  const auto& words = t.index().words();
  EXPECT_EQ(words[0].offset, kSrcWord);  // 56 prefix bits, as the destination's: the first (lower) of equals
  EXPECT_EQ(words[1].offset, kDstWord);
  EXPECT_EQ(words[2].offset, kPortsWord);
  EXPECT_EQ(words[2].rotate, 16);  // its masks' prefixes are destination ports: the word's second half
  EXPECT_EQ(words[3].offset, kProtocolWord);
  EXPECT_EQ(words[3].rotate, 0);
}

TEST(TableIndexTest, ReadsAPacketsWordsAsEachTrieReadsItsWord) {
  IndexedTable t;
  BuildOverAddressesPortsAndProtocol(&t);
  const TableIndex& index = t.index();
  ASSERT_EQ(index.words()[2].rotate, 16);
  ASSERT_EQ(index.words()[0].rotate, 0);
  std::mt19937 random(7);
  for (int n = 0; n < 1000; ++n) {
    TableIndex::PacketWords words;
    for (uint32_t& w : words) w = static_cast<uint32_t>(random());
    uint32_t keys[TableIndex::kWords];
    index.TrieKeys(words, keys);
    for (int k = 0; k < TableIndex::kWords; ++k) ASSERT_EQ(keys[k], index.TrieKey(k, words[k])) << k;
  }
  // Byte by byte: the first byte highest, a rotated word's halves swapped.
  TableIndex::PacketWords words;
  const uint8_t bytes[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  std::memcpy(words.data(), bytes, sizeof bytes);
  uint32_t keys[TableIndex::kWords];
  index.TrieKeys(words, keys);
  EXPECT_EQ(keys[0], 0x01020304u);
  EXPECT_EQ(keys[2], 0x0b0c090au);
}

TEST(TableIndexTest, NamesOnlyTheMatchersOnThePacketsPrefixesInLookupOrderUpToAnExactOne) {
  IndexedTable t;
  // (The index reads the addresses, the ports and the protocol, not the TTL: b's and c's entries are
  // inexact.)
  const size_t a = t.AddMatcher(5, Acl(Prefix(32), Prefix(8), 0xffff, 0xff));
  const size_t b = t.AddMatcher(1, Acl(0, Prefix(16), 0, 0xff, 0xff));
  const size_t c = t.AddMatcher(1, Acl(Prefix(8), Prefix(8), 0, 0xff, 0xff));  // newer than b: tried first
  const size_t d = t.AddMatcher(7, Acl(Prefix(32), Prefix(8), 0xffff, 0xff));
  t.Build();
  t.AddRule(a, Acl(0x0a000001, 0xc0000000, 80, 6));
  t.AddRule(b, Acl(0, 0xc0a80000, 0, 6));
  t.AddRule(c, Acl(0x0a000000, 0xc0000000, 0, 6));
  t.AddRule(d, Acl(0x0a000001, 0xc0000000, 80, 6));
  const std::vector<TableIndex::Candidate> all = t.Candidates(Acl(0x0a000001, 0xc0a80101, 80, 6));
  ASSERT_EQ(all.size(), 3u);  // a's entry is exact: d, after it, is never looked into
  EXPECT_EQ(all[0].matcher, t.matcher(c));
  EXPECT_FALSE(all[0].exact);
  EXPECT_EQ(all[1].matcher, t.matcher(b));
  EXPECT_FALSE(all[1].exact);
  EXPECT_EQ(all[2].matcher, t.matcher(a));
  EXPECT_TRUE(all[2].exact);
  // Asked again past a (as a walk whose rule in a was just deleted asks): d.
  std::vector<TableIndex::Candidate> past_a(TableIndex::kMaxCandidates);
  past_a.resize(t.index().Candidates(Acl(0x0a000001, 0xc0a80101, 80, 6).bytes(),
                                     LookupRank(*t.matcher(a)) + 1, past_a.data()));
  ASSERT_EQ(past_a.size(), 1u);
  EXPECT_EQ(past_a[0].matcher, t.matcher(d));
  // From b's rank on (as a walk that passed c asks): b and a.
  std::vector<TableIndex::Candidate> from_b(TableIndex::kMaxCandidates);
  from_b.resize(t.index().Candidates(Acl(0x0a000001, 0xc0a80101, 80, 6).bytes(), LookupRank(*t.matcher(b)),
                                     from_b.data()));
  ASSERT_EQ(from_b.size(), 2u);
  EXPECT_EQ(from_b[0].matcher, t.matcher(b));
  EXPECT_EQ(from_b[1].matcher, t.matcher(a));
  // Another source: a's rule cannot match, c's still can.
  const std::vector<TableIndex::Candidate> some = t.Candidates(Acl(0x0a000002, 0xc0a80101, 80, 6));
  ASSERT_EQ(some.size(), 2u);
  EXPECT_EQ(some[0].matcher, t.matcher(c));
  EXPECT_EQ(some[1].matcher, t.matcher(b));
  EXPECT_TRUE(t.Candidates(Acl(0x0b000001, 0x01010101, 80, 6)).empty());
}

TEST(TableIndexTest, SharedEntriesStayUntilTheirLastRuleAndBroadMatchersMatchEverything) {
  IndexedTable t;
  const size_t a = t.AddMatcher(0, Acl(Prefix(32), 0, 0xffff, 0));
  for (int i = 0; i < 15; ++i) t.AddMatcher(1, Acl(Prefix(32), 0, 0, 0));
  t.Build();
  // Two rules differing only outside the index words share one entry.
  t.AddRule(a, Acl(0x01020304, 0, 80, 0));
  EXPECT_EQ(t.index().entries(), 1u);
  const size_t big = t.AddMatcher(2, Acl(Prefix(32), 0, 0, 0));
  for (uint32_t i = 0; i < TableIndex::kMaxEntriesPerMatcher; ++i)
    t.AddRule(big, Acl(0x0a000000 + i, 0, 0, 0));
  EXPECT_FALSE(t.state(big).broad);
  EXPECT_EQ(t.index().entries(), 1 + TableIndex::kMaxEntriesPerMatcher);
  t.AddRule(big, Acl(0x0b000000, 0, 0, 0));
  EXPECT_TRUE(t.state(big).broad);
  // Without concurrent readers (no reclaimer) the broad entry replaces the others at once.
  EXPECT_EQ(t.index().entries(), 2u);
  const std::vector<TableIndex::Candidate> any = t.Candidates(Acl(0x7f000001, 0, 80, 6));
  ASSERT_EQ(any.size(), 1u);
  EXPECT_EQ(any[0].matcher, t.matcher(big));
  ASSERT_TRUE(t.RemoveRule(a, 0));
  EXPECT_EQ(t.index().entries(), 1u);
  t.RemoveMatcher(big);
  EXPECT_EQ(t.index().entries(), 0u);
  EXPECT_TRUE(t.Candidates(Acl(0x01020304, 0, 80, 6)).empty());
}

TEST(TableIndexTest, ANodeOfManyEntriesSplitsThemOnTheThirdWord) {
  IndexedTable t;
  const std::vector<size_t> ms = ExactMatchers(&t, 40);
  t.Build();
  const size_t unsplit = t.index().nodes();  // (none: a trie starts with its first entry)
  for (int i = 0; i < 40; ++i)
    t.AddRule(ms[i], Acl(0x0a000001, 0x0b000001, static_cast<uint16_t>(1000 + i), 6));
  // One word-0 node and one word-1 node for the addresses, split into a word-2 trie of 40 ports: a node for
  // every four ports at least (a deepest node holds the ports that differ in their last two bits only).
  EXPECT_GE(t.index().nodes(), unsplit + 2 + 40 / 4);
  EXPECT_EQ(t.index().entries(), 40u);
  for (int i = 0; i < 40; ++i) {
    const std::vector<TableIndex::Candidate> c =
        t.Candidates(Acl(0x0a000001, 0x0b000001, static_cast<uint16_t>(1000 + i), 6));
    ASSERT_EQ(c.size(), 1u) << i;
    EXPECT_EQ(c[0].matcher, t.matcher(ms[i]));
  }
  for (int i = 0; i < 40; i += 2) ASSERT_TRUE(t.RemoveRule(ms[i], 0));
  EXPECT_EQ(t.index().entries(), 20u);
  EXPECT_TRUE(t.Candidates(Acl(0x0a000001, 0x0b000001, 1000, 6)).empty());
  EXPECT_EQ(t.Candidates(Acl(0x0a000001, 0x0b000001, 1001, 6)).size(), 1u);
}

// A walk ahead to where new values would be filed ends, changes nothing, and is the index's that started it.
TEST(TableIndexTest, AWalkAheadToAFilingEndsAndChangesNothing) {
  IndexedTable t, other;
  const std::vector<size_t> ms = ExactMatchers(&t, 40);
  ExactMatchers(&other, 16);
  t.Build();
  other.Build();
  for (int i = 0; i < 40; ++i)
    t.AddRule(ms[i], Acl(0x0a000001, 0x0b000001, static_cast<uint16_t>(1000 + i), 6));
  for (int i = 0; i < 40; ++i) t.AddRule(ms[i], Acl(0x0c000000 + i * 0x100000, 0x0b000001, 80, 6));
  const size_t nodes = t.index().nodes(), entries = t.index().entries();
  // A new port under the split addresses: the pair's node, then down the word-2 trie under it.
  EXPECT_GE(t.FilingSteps(ms[0], Acl(0x0a000001, 0x0b000001, 2000, 6)), 2);
  // New addresses among others: down the word-0 trie from its top.
  EXPECT_GE(t.FilingSteps(ms[0], Acl(0x0c080000, 0x0b000001, 80, 6)), 1);
  EXPECT_LT(t.FilingSteps(ms[0], Acl(0x0d000000, 0x0e000000, 80, 6)), IndexedTable::kMaxSteps);
  // Values the matcher holds: nothing to walk.
  EXPECT_EQ(t.FilingSteps(ms[3], Acl(0x0a000001, 0x0b000001, 1003, 6)), 0);
  // Another index's walk.
  EXPECT_EQ(t.FilingSteps(ms[0], Acl(0x0a000001, 0x0b000001, 2000, 6), &other.index()), 0);
  EXPECT_EQ(t.index().nodes(), nodes);
  EXPECT_EQ(t.index().entries(), entries);
  ExpectCandidatesCover(t, Acl(0x0a000001, 0x0b000001, 1007, 6));
}

// A node that holds no entry any more and parts no paths goes (a node on the way to one other takes its
// place), and the nodes above it that this leaves so: rules that keep moving to new keys leave the tries as a
// trie filed with their keys afresh would be, and every rule is found throughout.
TEST(TableIndexTest, NodesLeftWithoutEntriesGoAndTheTriesStayAsIfFiledAfresh) {
  constexpr int kMatchers = 64;
  std::mt19937 rng(20261127);
  // Each rule's addresses, no other rule's (each rule is its packets' first hit): sources in four /12s and
  // destinations in one /28, so that paths part at many depths of both tries.
  std::vector<std::pair<uint32_t, uint32_t>> now;
  auto random_addresses = [&] {
    return std::pair<uint32_t, uint32_t>{0x0a000000 | (rng() % 4) << 20 | (rng() % 64),
                                         0x0b000000 | (rng() % 16)};
  };
  auto move = [&](size_t i) {
    std::pair<uint32_t, uint32_t> to;
    do {
      to = random_addresses();
    } while (std::count(now.begin(), now.end(), to) > 0);
    now[i] = to;
  };
  auto value = [&](size_t i) { return Acl(now[i].first, now[i].second, 80, 6); };
  IndexedTable t;
  const std::vector<size_t> ms = ExactMatchers(&t, kMatchers);
  t.Build();
  now.resize(ms.size());
  for (size_t i = 0; i < ms.size(); ++i) {
    move(i);
    t.AddRule(ms[i], value(i));
  }
  for (int round = 0; round < 40; ++round) {
    for (size_t i = 0; i < ms.size(); ++i) {
      if (rng() % 2 == 0) continue;
      // The rule leaves (its entry waits, dormant), and one with other values takes its place.
      t.RemoveValue(ms[i], value(i));
      move(i);
      t.AddRule(ms[i], value(i));
    }
    IndexedTable fresh;
    const std::vector<size_t> fresh_ms = ExactMatchers(&fresh, kMatchers);
    fresh.Build();
    for (size_t i = 0; i < ms.size(); ++i) fresh.AddRule(fresh_ms[i], value(i));
    ASSERT_EQ(t.index().nodes(), fresh.index().nodes()) << "round " << round;
    ASSERT_EQ(t.index().entries(), fresh.index().entries()) << "round " << round;
    for (size_t i = 0; i < ms.size(); ++i) {
      const std::vector<TableIndex::Candidate> c = t.Candidates(value(i));
      ASSERT_FALSE(c.empty()) << "round " << round << " rule " << i;
      EXPECT_EQ(c.back().matcher, t.matcher(ms[i])) << "round " << round << " rule " << i;
      EXPECT_TRUE(c.back().exact);
      const auto [src, dst] = random_addresses();
      ExpectCandidatesCover(t, Acl(src, dst, 80, 6));
    }
  }
  EXPECT_FALSE(t.index().Stale());
  for (size_t m : ms) t.RemoveMatcher(m);
  EXPECT_EQ(t.index().entries(), 0u);
  EXPECT_EQ(t.index().nodes(), 0u);
  EXPECT_TRUE(t.Candidates(value(0)).empty());
  // Filed again, in nodes whose memory is used again.
  for (size_t i = 0; i < ms.size(); ++i) t.RejoinMatcher(ms[i]);
  for (size_t i = 0; i < ms.size(); ++i) t.AddRule(ms[i], value(i));
  for (size_t i = 0; i < ms.size(); ++i) {
    const std::vector<TableIndex::Candidate> c = t.Candidates(value(i));
    ASSERT_FALSE(c.empty()) << "rule " << i;
    EXPECT_EQ(c.back().matcher, t.matcher(ms[i])) << "rule " << i;
  }
}

TEST(TableIndexTest, AnExactEntryNamesTheRuleOfItsKeyWhileItIsTheOnlyOne) {
  IndexedTable t;
  const std::vector<size_t> ms = ExactMatchers(&t, 40);
  const size_t inexact = t.AddMatcher(50, Acl(Prefix(32), Prefix(32), 0xffff, 0xff, 0xff));
  t.Build();
  const MatchParams v = Acl(0x0a000001, 0x0b000001, 1000, 6);
  auto first = [&](const MatchParams& packet) {
    const std::vector<TableIndex::Candidate> c = t.Candidates(packet);
    return c.empty() ? TableIndex::Candidate{} : c[0];
  };
  RuleRecord older, newer, other;
  t.AddRule(ms[0], v);
  EXPECT_EQ(first(v).hit, nullptr);  // not named yet: looked up in the matcher's table
  t.NameHit(ms[0], v, &older);
  EXPECT_EQ(first(v).hit, &older);
  // A duplicate: the older rule still wins, and stays named until it leaves.
  t.AddRule(ms[0], v);
  t.NameHit(ms[0], v, &newer);
  EXPECT_EQ(first(v).hit, &older);
  t.DropHit(ms[0], v, &newer);
  EXPECT_EQ(first(v).hit, &older);
  t.DropHit(ms[0], v, &older);
  t.RemoveValue(ms[0], v);
  EXPECT_TRUE(first(v).exact);
  EXPECT_EQ(first(v).hit, nullptr);  // the newer rule is looked up
  // Its entry gone for other values, the new entry names nothing until the new rule is named.
  t.RemoveValue(ms[0], v);
  const MatchParams again = Acl(0x0a000001, 0x0b000001, 999, 6);
  t.AddRule(ms[0], again);
  EXPECT_EQ(t.index().entries(), 1u);
  EXPECT_EQ(first(again).matcher, t.matcher(ms[0]));
  EXPECT_EQ(first(again).hit, nullptr);
  t.NameHit(ms[0], again, &other);
  EXPECT_EQ(first(again).hit, &other);
  // Each rule of 39 matchers on the same addresses, named, keeps its name as their node fills (its slot
  // array grows) and splits on the ports.
  std::vector<RuleRecord> records(40);
  for (int i = 1; i < 40; ++i) {
    const MatchParams value = Acl(0x0a000001, 0x0b000001, static_cast<uint16_t>(1000 + i), 6);
    t.AddRule(ms[i], value);
    t.NameHit(ms[i], value, &records[i]);
  }
  for (int i = 1; i < 40; ++i) {
    EXPECT_EQ(first(Acl(0x0a000001, 0x0b000001, static_cast<uint16_t>(1000 + i), 6)).hit, &records[i]) << i;
  }
  // An inexact entry names nothing: the TTL is not among the words it holds.
  const MatchParams ttl = Acl(0x0c000001, 0x0d000001, 80, 6, 64);
  t.AddRule(inexact, ttl);
  t.NameHit(inexact, ttl, &other);
  EXPECT_FALSE(first(ttl).exact);
  EXPECT_EQ(first(ttl).hit, nullptr);
}

TEST(TableIndexTest, ALastRulesEntryWaitsUnseenForItsValuesAndMakesRoomForOthers) {
  IndexedTable t;
  const std::vector<size_t> ms = ExactMatchers(&t, 20);
  t.Build();
  const MatchParams v = Acl(0x0a000001, 0x0b000001, 1000, 6);
  RuleRecord record;
  t.AddRule(ms[0], v);
  t.NameHit(ms[0], v, &record);
  const size_t nodes = t.index().nodes();
  t.DropHit(ms[0], v, &record);
  t.RemoveValue(ms[0], v);
  // Dormant: no entry to count, no candidate, but still filed.
  EXPECT_EQ(t.index().entries(), 0u);
  EXPECT_TRUE(t.Candidates(v).empty());
  EXPECT_EQ(t.state(ms[0]).items, 1u);
  // The same values again: the same entry, published again, naming nothing until named.
  t.AddRule(ms[0], v);
  EXPECT_EQ(t.index().entries(), 1u);
  EXPECT_EQ(t.index().nodes(), nodes);
  EXPECT_EQ(t.state(ms[0]).items, 1u);
  std::vector<TableIndex::Candidate> c = t.Candidates(v);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].matcher, t.matcher(ms[0]));
  EXPECT_TRUE(c[0].exact);
  EXPECT_EQ(c[0].hit, nullptr);
  // Other values instead: the dormant entry goes, its item serves them.
  t.RemoveValue(ms[0], v);
  const MatchParams w = Acl(0x0a000001, 0x0b000001, 1001, 6);
  t.AddRule(ms[0], w);
  EXPECT_EQ(t.index().entries(), 1u);
  EXPECT_EQ(t.state(ms[0]).items, 1u);
  EXPECT_TRUE(t.Candidates(v).empty());
  ASSERT_EQ(t.Candidates(w).size(), 1u);

  // A matcher whose items are all taken makes room for new values from a dormant one, not by going broad.
  const size_t m = ms[1];
  auto port = [](int i) { return Acl(0x0c000001, 0x0d000001, static_cast<uint16_t>(2000 + i), 17); };
  for (int i = 0; i < static_cast<int>(TableIndex::kMaxEntriesPerMatcher); ++i) t.AddRule(m, port(i));
  t.RemoveValue(m, port(3));
  t.AddRule(m, port(100));
  EXPECT_FALSE(t.state(m).broad);
  EXPECT_EQ(t.state(m).items, TableIndex::kMaxEntriesPerMatcher);
  EXPECT_EQ(t.index().entries(), 1 + TableIndex::kMaxEntriesPerMatcher);
  EXPECT_TRUE(t.Candidates(port(3)).empty());
  c = t.Candidates(port(100));
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].matcher, t.matcher(m));
  // With none dormant, a new value makes it broad.
  t.AddRule(m, port(101));
  EXPECT_TRUE(t.state(m).broad);
}

TEST(TableIndexTest, DormantAndLiveEntriesKeepTheirItemsAsTheirNodeGrowsAndSplits) {
  IndexedTable t;
  const std::vector<size_t> ms = ExactMatchers(&t, 40);
  t.Build();
  auto value = [](int i) { return Acl(0x0a000001, 0x0b000001, static_cast<uint16_t>(1000 + i), 6); };
  for (int i = 0; i < 10; ++i) t.AddRule(ms[i], value(i));
  for (int i = 0; i < 5; ++i) t.RemoveValue(ms[i], value(i));
  // The node's slot array grows twice, then its entries (dormant ones too) split into a trie on the ports.
  const size_t unsplit = t.index().nodes();
  for (int i = 10; i < 40; ++i) t.AddRule(ms[i], value(i));
  EXPECT_GT(t.index().nodes(), unsplit);
  EXPECT_EQ(t.index().entries(), 35u);
  std::vector<RuleRecord> records(40);
  for (int i = 0; i < 40; ++i) {
    if (i < 5) {
      EXPECT_TRUE(t.Candidates(value(i)).empty()) << i;
      t.AddRule(ms[i], value(i));
    }
    t.NameHit(ms[i], value(i), &records[i]);
    const std::vector<TableIndex::Candidate> c = t.Candidates(value(i));
    ASSERT_EQ(c.size(), 1u) << i;
    EXPECT_EQ(c[0].matcher, t.matcher(ms[i])) << i;
    EXPECT_EQ(c[0].hit, &records[i]) << i;
  }
  EXPECT_EQ(t.index().entries(), 40u);
}

TEST(TableIndexTest, TheNamedEntriesOfAMatcherGoingBroadLeaveNoNameInTheirSlots) {
  IndexedTable t;
  const std::vector<size_t> ms = ExactMatchers(&t, 16);
  t.Build();
  // Matcher 0's rules share one node (the same addresses), each named.
  std::vector<RuleRecord> records(TableIndex::kMaxEntriesPerMatcher);
  for (uint32_t i = 0; i < TableIndex::kMaxEntriesPerMatcher; ++i) {
    const MatchParams value = Acl(0x0a000001, 0x0b000001, static_cast<uint16_t>(1000 + i), 6);
    t.AddRule(ms[0], value);
    t.NameHit(ms[0], value, &records[i]);
  }
  // One more: it goes broad, and its entries leave (at once: no reclaimer) with their rules still in place.
  t.AddRule(ms[0], Acl(0x0a000001, 0x0b000001, 2000, 6));
  ASSERT_TRUE(t.state(ms[0]).broad);
  // Another matcher's rules fill the slots they left.
  for (uint32_t i = 0; i < TableIndex::kMaxEntriesPerMatcher; ++i) {
    const MatchParams value = Acl(0x0a000001, 0x0b000001, static_cast<uint16_t>(3000 + i), 6);
    t.AddRule(ms[1], value);
    const std::vector<TableIndex::Candidate> c = t.Candidates(value);
    ASSERT_EQ(c.size(), 2u) << i;  // ms[0]'s broad entry, then ms[1]'s exact one
    EXPECT_EQ(c[1].matcher, t.matcher(ms[1])) << i;
    EXPECT_EQ(c[1].hit, nullptr) << i;
  }
}

void ExpectSameCandidates(const std::vector<std::vector<TableIndex::Candidate>>& got,
                          const std::vector<std::vector<TableIndex::Candidate>>& want, const char* what) {
  EXPECT_EQ(SameCandidates(got, want, what), "");
}

TEST(TableIndexTest, CandidatesCoverEveryHitThroughChurn) {
  std::mt19937 rng(20261126);
  const int lengths[] = {0, 3, 8, 13, 16, 24, 27, 32};
  const uint16_t port_masks[] = {0, 0xffff, 0xff00, 0xfff0};
  const uint32_t hosts[] = {0x0a000001, 0x0a000102, 0x0a0a0a0a, 0xc0a80001, 0xc0a80101, 0x7f000001};
  auto pick = [&](auto& array) { return array[rng() % std::size(array)]; };
  auto value = [&]() {
    return Acl(pick(hosts) ^ (rng() % 4), pick(hosts), rng() % 4 * 0x1111, 6 + rng() % 2 * 11,
               64 + rng() % 2);
  };
  IndexedTable t;
  std::vector<size_t> all;
  for (int i = 0; i < 60; ++i) {
    if (i == 20) t.Build();
    const size_t m = t.AddMatcher(static_cast<uint16_t>(rng() % 6),
                                  Acl(Prefix(pick(lengths)), Prefix(pick(lengths)), pick(port_masks),
                                      rng() % 2 ? 0xff : 0, rng() % 4 == 0 ? 0xff : 0));
    all.push_back(m);
    const int rules = 1 + static_cast<int>(rng() % 12);  // some beyond kMaxEntriesPerMatcher: broad
    for (int r = 0; r < rules; ++r) t.AddRule(m, value());
  }
  int by_automata = 0;  // rounds that looked up by the automata too
  for (int round = 0; round < 200; ++round) {
    std::vector<MatchParams> packets;
    for (int p = 0; p < 40; ++p) {
      packets.push_back(value());
      ExpectCandidatesCover(t, packets.back());
    }
    // The same packets looked up together (their walks interleaved) get the same candidates.
    std::vector<TableIndex::Query> queries;
    std::vector<std::vector<TableIndex::Candidate>> out(
        packets.size(), std::vector<TableIndex::Candidate>(TableIndex::kMaxCandidates));
    for (size_t p = 0; p < packets.size(); ++p)
      queries.push_back({t.index().ReadWords(packets[p].bytes()), 0, out[p].data(), 0});
    t.index().CandidatesOf(queries.data(), queries.size());
    for (size_t p = 0; p < packets.size(); ++p) {
      const std::vector<TableIndex::Candidate> alone = t.Candidates(packets[p]);
      ASSERT_EQ(queries[p].count, alone.size()) << "packet " << p;
      for (size_t c = 0; c < alone.size(); ++c) {
        EXPECT_EQ(out[p][c].matcher, alone[c].matcher) << "packet " << p << " candidate " << c;
        EXPECT_EQ(out[p][c].exact, alone[c].exact) << "packet " << p << " candidate " << c;
      }
    }
    // Compiled, the index names the same candidates, from the first rank and from later ones; the form
    // takes the next changes (hw/tree_updates_test.cc compares it with a walk through them).
    const uint64_t later = LookupRank(*t.matcher(pick(all)));
    const auto walked = CandidatesOfAll(t.index(), packets, 0);
    const auto walked_later = CandidatesOfAll(t.index(), packets, later);
    // By the automata (hw/answer_automata.h), where the set fits them, then by the same form's trees.
    if (t.index().Compile(/*by_automata=*/true)) {
      ++by_automata;
      ASSERT_TRUE(t.index().LooksUpByAutomata());
      ExpectSameCandidates(CandidatesOfAll(t.index(), packets, 0), walked, "automata");
      ExpectSameCandidates(CandidatesOfAll(t.index(), packets, later), walked_later, "automata, later ranks");
    }
    ASSERT_TRUE(t.index().Compile());
    ASSERT_TRUE(t.index().IsCompiled());
    ExpectSameCandidates(CandidatesOfAll(t.index(), packets, 0), walked, "compiled");
    ExpectSameCandidates(CandidatesOfAll(t.index(), packets, later), walked_later, "compiled, later ranks");
    for (int c = 0; c < 10; ++c) {
      const size_t m = pick(all);
      if (rng() % 2 == 0 || !t.RemoveRule(m, rng())) t.AddRule(m, value());
    }
    EXPECT_TRUE(t.index().IsCompiled() || t.index().tree_upkeep().overflows > 0);
    for (const MatchParams& packet : packets) ExpectCandidatesCover(t, packet);
    if (HasFailure()) return;
  }
  EXPECT_GT(by_automata, 50);  // (the set grows past the automata's limits partway)
}

// An index left unchanged for kQuietLookups lookups compiles itself (its trees built on a thread of its own),
// and then times its trees against its walk on the lookups it serves and keeps the faster; either way the
// candidates stay the walk's. Trees that won take the changes that follow, and keep serving.
TEST(TableIndexTest, AnIndexLeftUnchangedCompilesItselfAndItsTreesTakeChanges) {
  IndexedTable t;
  const std::vector<size_t> ms = ExactMatchers(&t, 40);
  t.Build();
  std::vector<MatchParams> packets;
  for (size_t i = 0; i < ms.size(); ++i) {
    t.AddRule(ms[i], Acl(0x0a000000 + static_cast<uint32_t>(i % 7), 0x0b000001, 80, 6));
    packets.push_back(Acl(0x0a000000 + static_cast<uint32_t>(i % 9), 0x0b000001, 80, 6));
  }
  const auto walked = CandidatesOfAll(t.index(), packets, 0);
  auto look_up = [&](uint64_t lookups) {
    for (uint64_t done = 0; done < lookups; done += packets.size()) {
      ExpectSameCandidates(CandidatesOfAll(t.index(), packets, 0), walked, "looked up");
      if (::testing::Test::HasFailure()) return;
    }
  };
  // The compiler thread builds the trees; a lookup once it is done publishes them.
  auto look_up_until_compiled = [&] {
    for (int wait = 0; wait < 5000 && !t.index().IsCompiled() && !::testing::Test::HasFailure(); ++wait) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      look_up(packets.size());
    }
    return t.index().IsCompiled();
  };
  look_up(TableIndex::kQuietLookups - 2 * packets.size());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  look_up(packets.size());
  EXPECT_FALSE(t.index().IsCompiled());
  look_up(4 * packets.size());
  EXPECT_TRUE(look_up_until_compiled());
  look_up(4 * packets.size() * 256);  // (the trial and past it)
  ASSERT_TRUE(t.index().Compile());   // (the trees serve, whichever way the trial went)
  EXPECT_TRUE(t.index().LooksUpByTrees());
  for (uint32_t i = 0; i < 100; ++i) t.AddRule(ms[i % ms.size()], Acl(0x0c000000 + i, 0x0d000001, 80, 6));
  EXPECT_TRUE(t.index().IsCompiled());
  look_up(packets.size());
  ExpectCandidatesCover(t, Acl(0x0c000007, 0x0d000001, 80, 6));
}

// The trial's ways, as TableIndex::TrialWinner numbers them.
constexpr int kTrees = 0, kWalk = 1, kAutomata = 2;

// The trial judges each way by its median run: one run in which the thread lost its CPU does not make the
// walk win, nor does one run of the walk over a cheap stretch of the trace; a walk faster in most runs does.
TEST(TableIndexTest, TheTrialJudgesEachWayByItsMedianRun) {
  // Runs in turn: trees, walk, trees, walk, ...; 128 calls of 32 packets each.
  const std::vector<uint64_t> packets(8, 128 * 32);
  auto per_packet = [](std::vector<double> ns) {
    std::vector<uint64_t> took;
    for (const double n : ns) took.push_back(static_cast<uint64_t>(n * 128 * 32));
    return took;
  };
  // The trees at 50 ns a packet but for a run preempted for 4 ms (1,000 ns a packet); the walk at 200.
  const std::vector<uint64_t> preempted = per_packet({50, 200, 1000, 200, 52, 201, 49, 199});
  EXPECT_EQ(TableIndex::TrialWinner(preempted, packets, 2), kTrees);
  // (Summed over the runs, the walk would have won.)
  EXPECT_GT(50 + 1000 + 52 + 49, 200 + 200 + 201 + 199);
  // A trial measured on ClassBench's acl2 set, whose fastest run was the walk's (66.7 ns a packet): each run
  // looks up other packets, and the walk is twice the trees' time in its median run.
  EXPECT_EQ(
      TableIndex::TrialWinner(per_packet({171.1, 331.7, 156.2, 66.7, 92.2, 232.0, 127.1, 302.1}), packets, 2),
      kTrees);
  // A walk faster in every run wins, and so does one faster in most.
  EXPECT_EQ(TableIndex::TrialWinner(per_packet({80, 60, 81, 61, 79, 60, 82, 59}), packets, 2), kWalk);
  EXPECT_EQ(TableIndex::TrialWinner(per_packet({80, 60, 60, 61, 79, 60, 82, 59}), packets, 2), kWalk);
  EXPECT_EQ(TableIndex::TrialWinner(per_packet({80, 60, 50, 61, 79, 300, 82, 59}), packets, 2), kWalk);
  // Runs not timed (no packets) do not count; with no run of the trees timed, the walk stays.
  std::vector<uint64_t> some = packets;
  some[2] = 0;
  EXPECT_EQ(TableIndex::TrialWinner(per_packet({50, 200, 1, 200, 52, 201, 49, 199}), some, 2), kTrees);
  EXPECT_EQ(TableIndex::TrialWinner(per_packet({50, 200, 50, 200, 50, 200, 50, 200}),
                                    {0, 4096, 0, 4096, 0, 4096, 0, 4096}, 2),
            kWalk);
  EXPECT_EQ(TableIndex::TrialWinner(per_packet({50, 200}), {0, 0}, 2), kWalk);
}

// With automata the trial has three ways in turn (trees, walk, automata): the least median run wins, the
// earlier way on a tie.
TEST(TableIndexTest, TheTrialKeepsTheFastestOfThreeWays) {
  const std::vector<uint64_t> packets(9, 4096);
  auto took = [](std::vector<uint64_t> ns) {
    for (uint64_t& n : ns) n *= 4096;
    return ns;
  };
  EXPECT_EQ(TableIndex::TrialWinner(took({40, 90, 30, 41, 91, 31, 39, 92, 500}), packets, 3), kAutomata);
  EXPECT_EQ(TableIndex::TrialWinner(took({30, 90, 40, 31, 91, 41, 29, 92, 40}), packets, 3), kTrees);
  EXPECT_EQ(TableIndex::TrialWinner(took({90, 30, 40, 91, 31, 41, 92, 29, 40}), packets, 3), kWalk);
  EXPECT_EQ(TableIndex::TrialWinner(took({30, 90, 30, 30, 90, 30, 30, 90, 30}), packets, 3), kTrees);
}

// A reader looking packets up while the writer adds and removes other rules, in the same nodes (slot reuse,
// growth, splits) and in the same matchers (one goes broad), always finds the matchers of rules that stay.
TEST(TableIndexTest, ReadersAlwaysFindRulesThatStayWhileOthersChurn) {
  Reclaimer reclaimer;
  IndexedTable t(&reclaimer);
  constexpr int kStaying = 8, kChurning = 24;
  std::vector<size_t> ms;
  for (int i = 0; i < kStaying + kChurning; ++i) {
    ms.push_back(t.AddMatcher(static_cast<uint16_t>(i % 5), Acl(Prefix(32), Prefix(24), 0xffff, 0xff)));
  }
  t.Build();
  std::vector<MatchParams> staying;  // rule i of matcher ms[i]
  for (int i = 0; i < kStaying; ++i) {
    staying.push_back(Acl(0x0a000001, 0x0b000000 + 0x100 * (i % 2), static_cast<uint16_t>(80 + i), 6));
    t.AddRule(ms[i], staying.back());
  }
  StayingRulesReader reader(t, &reclaimer, staying, ms);
  std::mt19937 rng(7);
  std::vector<std::pair<size_t, MatchParams>> added;
  ChurnRules(
      &t, &rng, 20000, 64,
      [&] {
        // Same addresses as the rules that stay, other ports: the same nodes. Matcher 0 (a staying rule's)
        // takes some too, and goes broad.
        const size_t m = rng() % 8 == 0 ? ms[0] : ms[kStaying + rng() % kChurning];
        return std::make_pair(m, Acl(0x0a000001, 0x0b000000 + 0x100 * (rng() % 2),
                                     static_cast<uint16_t>(1000 + rng() % 512), 6));
      },
      &added);
  EXPECT_EQ(reader.Stop(), 0);
  EXPECT_TRUE(t.state(ms[0]).broad);
  // Its other entries went once the reader was past them (at a later write).
  t.AddRule(ms[kStaying], Acl(0x0c000001, 0x0d000000, 1, 6));
  EXPECT_EQ(t.state(ms[0]).items, 0u);
}

// Readers looking rules up while the writer churns others, stopping now and then long enough for a reader
// to compile the index (on its thread, while the writer may start again) always find the rules that stay.
TEST(TableIndexTest, ReadersFindRulesThatStayWhileTheIndexCompilesBetweenChanges) {
  Reclaimer reclaimer;
  IndexedTable t(&reclaimer);
  constexpr int kStaying = 6, kChurning = 26;
  std::vector<size_t> ms;
  for (int i = 0; i < kStaying + kChurning; ++i) {
    ms.push_back(
        t.AddMatcher(static_cast<uint16_t>(i), Acl(Prefix(32), Prefix(16 + i % 3 * 8), 0xffff, 0xff)));
  }
  t.Build();
  std::vector<MatchParams> staying;
  for (int i = 0; i < kStaying; ++i) {
    staying.push_back(
        Acl(0x0a000001 + static_cast<uint32_t>(i), 0x0b000000, static_cast<uint16_t>(80 + i), 6));
    t.AddRule(ms[i], staying.back());
  }
  StayingRulesReader reader(t, &reclaimer, staying, ms);
  std::mt19937 rng(11);
  std::vector<std::pair<size_t, MatchParams>> added;
  int compiled = 0;
  for (int round = 0; round < 3; ++round) {
    ChurnRules(
        &t, &rng, 2000, 48,
        [&] {
          const size_t m = ms[kStaying + rng() % kChurning];
          return std::make_pair(m, Acl(0x0a000001 + rng() % 8, 0x0b000000 + (rng() % 4 << 8),
                                       static_cast<uint16_t>(1000 + rng() % 64), 6));
        },
        &added);
    // Quiet until the reader compiled the index (or a while), then twice as long again: the compiled form
    // serves more lookups than the index waited for, so the next one waits no longer.
    const auto quiet = std::chrono::steady_clock::now();
    for (int wait = 0; wait < 6000 && !t.index().IsCompiled(); ++wait) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    compiled += t.index().IsCompiled();
    std::this_thread::sleep_for(2 * (std::chrono::steady_clock::now() - quiet));
  }
  EXPECT_EQ(reader.Stop(), 0);
  EXPECT_GT(compiled, 0);
}

// A reader looking a rule up while the entries of its node split into a trie under it (the writer adds
// rules of other matchers beside it, the node's seventeenth splits it) finds the rule's matcher throughout.
TEST(TableIndexTest, ReadersFindEntriesWhileTheirNodeSplits) {
  Reclaimer reclaimer;
  IndexedTable t(&reclaimer);
  constexpr int kMatchers = 40, kNodes = 3000;
  const std::vector<size_t> ms = ExactMatchers(&t, kMatchers);
  t.Build();
  // Node n: the addresses (n, n); its first rule (matcher 0, port 1) is the one the reader looks up.
  auto rule = [](int node, int port) {
    return Acl(0x0a000000 + static_cast<uint32_t>(node), 0x0b000000 + static_cast<uint32_t>(node),
               static_cast<uint16_t>(port), 6);
  };
  std::atomic<int> ready{0};  // nodes whose first rule is in
  std::atomic<bool> done{false};
  std::atomic<int> misses{0};
  std::thread reader([&] {
    Reclaimer::Reader r(&reclaimer);
    std::vector<TableIndex::Candidate> out(TableIndex::kMaxCandidates);
    std::mt19937 rng(11);
    while (!done.load(std::memory_order_acquire)) {
      const int n = ready.load(std::memory_order_acquire);
      if (n == 0) continue;
      const int node = n - 1 - static_cast<int>(rng() % std::min(n, 4));  // the newest: splitting now
      r.Enter();
      const size_t count = t.index().Candidates(rule(node, 1).bytes(), 0, out.data());
      bool found = count > TableIndex::kMaxCandidates;
      for (size_t c = 0; c < count && c < out.size(); ++c) found |= out[c].matcher == t.matcher(ms[0]);
      r.Leave();
      if (!found) misses.fetch_add(1, std::memory_order_relaxed);
    }
  });
  for (int node = 0; node < kNodes; ++node) {
    t.AddRule(ms[0], rule(node, 1));
    ready.store(node + 1, std::memory_order_release);
    for (int m = 1; m <= static_cast<int>(TableIndex::kFatNode) + 1; ++m)
      t.AddRule(ms[m], rule(node, 100 + m));
  }
  done.store(true, std::memory_order_release);
  reader.join();
  EXPECT_EQ(misses.load(), 0);
}

// A reader looking rules up while the nodes around theirs come and go: other rules keep moving to keys on
// the same paths (nodes part them from the staying rules' paths, and go again), and the writer uses the
// memory of nodes gone once the reader is past them. The staying rules' matchers are always found.
TEST(TableIndexTest, ReadersFindRulesThatStayWhileNodesAroundThemComeAndGo) {
  Reclaimer reclaimer;
  IndexedTable t(&reclaimer);
  constexpr int kStaying = 8, kMoving = 24;
  const std::vector<size_t> ms = ExactMatchers(&t, kStaying + kMoving);
  t.Build();
  std::vector<MatchParams> staying;
  for (int i = 0; i < kStaying; ++i) {
    staying.push_back(
        Acl(0x0a000000 + static_cast<uint32_t>(i) * 0x10000, 0x0b000000 + static_cast<uint32_t>(i), 80, 6));
    t.AddRule(ms[i], staying.back());
  }
  StayingRulesReader reader(t, &reclaimer, staying, ms);
  std::mt19937 rng(13);
  // Near a staying rule's source (its /16, or further), with its destination or beside it.
  auto near = [&] {
    const uint32_t i = rng() % kStaying;
    return Acl(0x0a000000 + i * 0x10000 + (rng() % 4 == 0 ? 0 : rng() % 0x10000 << (rng() % 3 * 4)),
               0x0b000000 + i + (rng() % 2) * (rng() % 64), static_cast<uint16_t>(rng() % 4), 6);
  };
  std::vector<MatchParams> now;
  for (int i = 0; i < kMoving; ++i) {
    now.push_back(near());
    t.AddRule(ms[kStaying + i], now.back());
  }
  const size_t nodes_at_start = t.index().nodes();
  for (int step = 0; step < 20000; ++step) {
    const size_t i = rng() % kMoving;
    t.RemoveValue(ms[kStaying + i], now[i]);
    now[i] = near();
    t.AddRule(ms[kStaying + i], now[i]);
  }
  EXPECT_EQ(reader.Stop(), 0);
  EXPECT_LT(t.index().nodes(), 4 * nodes_at_start);  // (20000 moves: nodes went as they came)
}

}  // namespace
}  // namespace drsim::hw
