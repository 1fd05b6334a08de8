#include "hw/match_table.h"

#include <algorithm>
#include <deque>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "hw/flow_table.h"

namespace drsim::hw {
namespace {

using Key = std::vector<uint32_t>;

// How a test inserts: Insert, InsertQueued, or either by the toss of a coin.
enum class Inserts { kFiled, kQueued, kMixed };

// Reserved for this many rules, a table has 2^14 buckets: InsertQueued queues in it (a smaller one inserts
// at once).
constexpr size_t kQueuingTable = 131072;

// Inserts `rule` under `key` into `table` as `inserts` says (kMixed: queued when `coin` is odd).
MatchTable::Handle InsertAs(MatchTable& table, Inserts inserts, uint32_t coin, const uint32_t* key,
                            const RuleRecord& rule, void* owner) {
  const uint64_t hash = table.Hash(key);
  const bool queued = inserts == Inserts::kQueued || (inserts == Inserts::kMixed && coin % 2 == 1);
  return queued ? table.InsertQueued(key, hash, rule, owner) : table.Insert(key, hash, rule, owner);
}

// Checks the table against a plain model: for every key, the FIFO of rules (by rule id) inserted with it.
class TableModel {
 public:
  explicit TableModel(size_t key_words, size_t summary_word = 0, Inserts inserts = Inserts::kFiled)
      : table_(key_words, nullptr, summary_word), summary_word_(summary_word), inserts_(inserts) {
    if (inserts != Inserts::kFiled) table_.Reserve(kQueuingTable);
  }

  void Insert(const Key& key) {
    const uint32_t rule_id = next_rule_id_++;
    MatchTable::Handle h =
        InsertAs(table_, inserts_, rng_(), key.data(), RuleRecord{&programs_, rule_id}, OwnerOf(rule_id));
    model_[key].push_back({h, rule_id});
    live_.push_back({key, h});
  }

  void EraseAt(size_t i) {
    auto [key, handle] = live_[i];
    live_.erase(live_.begin() + i);
    table_.Erase(handle);
    auto& fifo = model_[key];
    for (auto it = fifo.begin(); it != fifo.end(); ++it) {
      if (it->first == handle) {
        fifo.erase(it);
        break;
      }
    }
    if (fifo.empty()) model_.erase(key);
  }

  // Checks lookups and the writer's views first, with any queued inserts still queued, then files them and
  // checks the lookups again.
  void Verify(const std::vector<Key>& probes) {
    VerifyLookups(probes);
    table_.FlushQueue();
    EXPECT_EQ(table_.distinct_keys(), model_.size());
    VerifyLookups(probes);
  }

  void VerifyLookups(const std::vector<Key>& probes) const {
    size_t total = 0;
    for (const auto& [key, fifo] : model_) {
      const RuleRecord* found = table_.Find(key.data());
      ASSERT_NE(found, nullptr);
      ASSERT_EQ(found->rule_id, fifo.front().second);
      ASSERT_EQ(found->programs, &programs_);
      ASSERT_EQ(table_.CountForWriter(key.data(), table_.Hash(key.data())), fifo.size());
      if (!key.empty()) {
        ASSERT_TRUE(table_.MayHold(key[summary_word_]));  // never refuses a key it holds
      }
      total += fifo.size();
    }
    EXPECT_EQ(table_.size(), total);
    for (const auto& [key, handle] : live_) {
      ASSERT_EQ(Key(table_.key(handle), table_.key(handle) + key.size()), key);  // survives growth and erases
    }
    // Every rule is listed once with its owner, whatever records were reused: by record, and by insertion
    // (the rule ids' order).
    std::map<MatchTable::Handle, uint32_t> rule_of;
    for (const auto& [key, fifo] : model_) {
      for (const auto& [handle, rule_id] : fifo) rule_of[handle] = rule_id;
    }
    std::map<MatchTable::Handle, uint32_t> listed;
    table_.ForEachRule([&](MatchTable::Handle handle, void* owner) {
      EXPECT_TRUE(listed.emplace(handle, RuleIdOf(owner)).second) << "listed twice: " << handle;
    });
    EXPECT_EQ(listed, rule_of);
    std::vector<uint32_t> in_order;
    for (const MatchTable::Handle handle : table_.InInsertionOrder()) {
      EXPECT_EQ(RuleIdOf(table_.owner(handle)), rule_of[handle]);
      in_order.push_back(rule_of[handle]);
    }
    EXPECT_EQ(in_order.size(), rule_of.size());
    EXPECT_TRUE(std::is_sorted(in_order.begin(), in_order.end()));
    for (const Key& k : probes) {
      if (!model_.count(k)) {
        ASSERT_EQ(table_.Find(k.data()), nullptr);
        ASSERT_EQ(table_.CountForWriter(k.data(), table_.Hash(k.data())), 0u);
      }
    }
    // FindBurst of every held key and every probe at once (more than one of its inner bursts) finds what
    // Find finds.
    std::vector<uint32_t> keys;
    std::vector<const RuleRecord*> want;
    for (const auto& [key, fifo] : model_) {
      keys.insert(keys.end(), key.begin(), key.end());
      want.push_back(table_.Find(key.data()));
    }
    for (const Key& k : probes) {
      keys.insert(keys.end(), k.begin(), k.end());
      want.push_back(table_.Find(k.data()));
    }
    std::vector<const RuleRecord*> got(want.size(), &unset_);
    table_.FindBurst(keys.data(), want.size(), got.data());
    ASSERT_EQ(got, want);
  }

  MatchTable& table() { return table_; }
  size_t live() const { return live_.size(); }

 private:
  // A rule's owner, as the table keeps it (never dereferenced): its rule id.
  static void* OwnerOf(uint32_t rule_id) { return reinterpret_cast<void*>(uintptr_t{rule_id}); }
  static uint32_t RuleIdOf(void* owner) { return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(owner)); }

  MatchTable table_;
  size_t summary_word_;
  Inserts inserts_;
  std::mt19937 rng_{7};
  PipePrograms programs_;
  RuleRecord unset_;  // FindBurst must overwrite every result
  uint32_t next_rule_id_ = 1;
  std::map<Key, std::deque<std::pair<MatchTable::Handle, uint32_t>>> model_;
  std::vector<std::pair<Key, MatchTable::Handle>> live_;
};

Key RandomKey(std::mt19937& rng, size_t words, uint32_t range) {
  Key k(words);
  for (auto& w : k) w = rng() % range;
  return k;
}

TEST(MatchTableTest, DuplicatesAreFifoAndSurviveGrowth) {
  TableModel m(3);
  Key k = {1, 2, 3};
  m.Insert(k);
  m.Insert(k);
  m.Insert(k);
  for (uint32_t i = 0; i < 1000; ++i) m.Insert({i, i * 7, 5});  // forces several doublings
  m.Verify({});
  m.EraseAt(0);  // the oldest rule with key k: the second one now wins
  m.Verify({});
  m.EraseAt(1);  // the newest duplicate
  m.Verify({});
  m.EraseAt(0);
  m.Verify({k});
}

// A long chain of duplicates is appended to and erased from at either end and in the middle without a
// walk down it: 200,000 copies of one key, the oldest winning throughout (a walk a rule would make this
// 2 * 10^10 steps).
TEST(MatchTableTest, LongDuplicateChainsKeepTheirOrderAtEveryEnd) {
  constexpr uint32_t kCopies = 200000;
  MatchTable table(2, nullptr, 0);
  PipePrograms programs;
  const uint32_t key[2] = {7, 9};
  const uint64_t hash = table.Hash(key);
  std::vector<MatchTable::Handle> handles;
  for (uint32_t i = 0; i < kCopies; ++i)
    handles.push_back(table.Insert(key, hash, RuleRecord{&programs, i}, nullptr));
  EXPECT_EQ(table.size(), kCopies);
  EXPECT_EQ(table.distinct_keys(), 1u);
  ASSERT_EQ(table.Find(key)->rule_id, 0u);
  table.Erase(handles[kCopies / 2]);                                                // the middle
  for (uint32_t i = kCopies - 1; i > kCopies - 1000; --i) table.Erase(handles[i]);  // the newest first
  ASSERT_EQ(table.Find(key)->rule_id, 0u);
  for (uint32_t i = 0; i < 1000; ++i) {  // the oldest first: the next-oldest wins each time
    table.Erase(handles[i]);
    ASSERT_EQ(table.Find(key)->rule_id, i + 1) << i;
  }
  // Appending after erases at the tail still goes to the end.
  table.Insert(key, hash, RuleRecord{&programs, kCopies}, nullptr);
  EXPECT_EQ(table.CountForWriter(key, hash), kCopies - 1000 - 999 - 1 + 1);
  for (uint32_t i = 1000; i < kCopies - 999; ++i) {
    if (i != kCopies / 2) table.Erase(handles[i]);
  }
  ASSERT_NE(table.Find(key), nullptr);
  EXPECT_EQ(table.Find(key)->rule_id, kCopies);
  EXPECT_EQ(table.size(), 1u);
}

// Keys that differ in few bits, as rule sets' keys do (consecutive addresses and ports, the same protocol
// word), still get distinct hashes, and spread evenly over buckets and signatures.
TEST(MatchTableTest, StructuredKeysSpreadEvenly) {
  constexpr uint32_t kKeys = 1 << 18;
  constexpr uint32_t kBuckets = 1 << 12;  // the low bits pick the bucket
  for (size_t words : {1, 2, 5, 9}) {
    MatchTable table(words);
    std::set<uint64_t> hashes;
    std::set<uint32_t> signatures;
    std::vector<uint32_t> per_bucket(kBuckets);
    for (uint32_t i = 0; i < kKeys; ++i) {
      Key k(words, 0x11000000);  // a word every key shares
      k[0] = 0x0a000000 + i;     // consecutive addresses
      if (words > 1) k[1] = (i & 0xff) << 16 | 53;
      if (words > 4) k[4] = i >> 8;
      const uint64_t h = table.Hash(k.data());
      hashes.insert(h);
      signatures.insert(static_cast<uint32_t>(h >> 48));  // the signature (0 becomes 1)
      ++per_bucket[h & (kBuckets - 1)];
    }
    EXPECT_EQ(hashes.size(), kKeys) << words << " words";
    // 2^18 keys over 2^16 signatures: each taken with probability 1 - e^-4, 64,336 of them on average.
    EXPECT_GT(signatures.size(), 63500u) << words << " words";
    // 64 keys per bucket on average; a uniform hash stays within +-40 (five standard deviations).
    const auto [low, high] = std::minmax_element(per_bucket.begin(), per_bucket.end());
    EXPECT_GT(*low, 24u) << words << " words";
    EXPECT_LT(*high, 104u) << words << " words";
  }
}

TEST(MatchTableTest, ZeroLengthKeysAllCollide) {
  TableModel m(0);
  m.Insert({});
  m.Insert({});
  m.Verify({});
  EXPECT_EQ(m.table().distinct_keys(), 1u);
  m.EraseAt(0);
  m.Verify({});
}

class MatchTableInsertsTest : public testing::TestWithParam<Inserts> {};

TEST_P(MatchTableInsertsTest, RandomizedAgainstModel) {
  // Keys of 1 to 3 words, and of 6 and 9 (FindBurst's longest unrolled length and its general loop); with
  // queued inserts, whose checks run twice, of 3, 6 and 9 (the test runs under ThreadSanitizer in CI).
  const std::vector<uint32_t> seeds =
      GetParam() == Inserts::kFiled ? std::vector<uint32_t>{1, 2, 3, 4, 5} : std::vector<uint32_t>{2, 4, 5};
  for (uint32_t seed : seeds) {
    std::mt19937 rng(seed);
    const size_t words = seed <= 3 ? 1 + seed % 3 : seed == 4 ? 6 : 9;
    // The summary on the last of two, the middle of three, the only word.
    TableModel m(words, words / 2, GetParam());
    std::vector<Key> probes;
    for (int step = 0; step < 20000; ++step) {
      // Narrow key ranges so duplicates and probe sequences are common.
      Key k = RandomKey(rng, words, 64);
      if (m.live() > 0 && rng() % 3 == 0) {
        m.EraseAt(rng() % m.live());
      } else {
        m.Insert(k);
      }
      if (step % 997 == 0) probes.push_back(k);
      if (step % 2500 == 0) m.Verify(probes);
    }
    m.Verify(probes);
  }
}

// The summary is built on one chosen word of the keys: a table holding a few keys refuses most other values
// of that word whatever the other words hold, and refuses everything once empty.
TEST(MatchTableTest, TheSummaryRefusesMostWordsNoKeyHas) {
  TableModel m(3, 1);
  m.Insert({5, 0x0a000001, 9});
  m.Insert({6, 0x0a000002, 9});
  m.Verify({});
  int may_hold = 0;
  for (uint32_t w = 0x0a000000; w < 0x0a000400; ++w) may_hold += m.table().MayHold(w);
  EXPECT_GE(may_hold, 2);
  EXPECT_LE(may_hold, 1024 * 2 / 64 * 3);  // two bits of 64 set: about 32 of 1024 pass
  // A key whose summary word is refused is not found, without a bucket probe to say so.
  uint32_t refused = 0x0a000003;
  while (m.table().MayHold(refused)) ++refused;
  const uint32_t other[3] = {5, refused, 9};
  EXPECT_EQ(m.table().Find(other), nullptr);
  m.EraseAt(1);
  m.EraseAt(0);
  m.Verify({{5, 0x0a000001, 9}, {6, 0x0a000002, 9}});  // gone, whatever their bits say
  // Their bits go when the table next sets one (a key put back with the same bit would set none): then only
  // the new key's word, and those sharing its bit, pass.
  m.Insert({5, refused, 9});
  m.Verify({{5, 0x0a000001, 9}, {6, 0x0a000002, 9}});
  EXPECT_TRUE(m.table().MayHold(refused));
  EXPECT_FALSE(m.table().MayHold(0x0a000001));
  EXPECT_FALSE(m.table().MayHold(0x0a000002));
  may_hold = 0;
  for (uint32_t w = 0x0a000000; w < 0x0a000400; ++w) may_hold += m.table().MayHold(w);
  EXPECT_LE(may_hold, 1024 / 64 * 3);
}

// A key erased and put back (an update of a rule's actions) leaves the summary as it was, and a bit whose
// last key went stays set until the table next sets one.
TEST(MatchTableTest, AKeyPutBackLeavesTheSummaryAsItWas) {
  TableModel m(2, 1);
  for (uint32_t i = 0; i < 6; ++i) m.Insert({i, 0x0b000000 + i});
  m.Verify({});
  std::vector<bool> before;
  for (uint32_t w = 0x0b000000; w < 0x0b000400; ++w) before.push_back(m.table().MayHold(w));
  for (uint32_t round = 0; round < 20; ++round) {
    m.EraseAt(0);
    m.Insert({round % 6, 0x0b000000 + round % 6});
  }
  m.Verify({{9, 0x0b000009}});
  std::vector<bool> after;
  for (uint32_t w = 0x0b000000; w < 0x0b000400; ++w) after.push_back(m.table().MayHold(w));
  EXPECT_EQ(after, before);
  // Erased for good (the oldest rule, key 2 after 20 rounds): its bit stays set (it passes the summary, and
  // is not found) until a bit is set.
  m.EraseAt(0);
  const uint32_t gone[2] = {2, 0x0b000002};
  EXPECT_TRUE(m.table().MayHold(gone[1]));
  EXPECT_EQ(m.table().Find(gone), nullptr);
}

TEST(MatchTableTest, FixedSizeTableKeepsItsSizeUntilFull) {
  TableModel m(2);
  m.table().Reserve(8 * MatchTable::kSlotsPerBucket * MatchTable::kMaxLoadNumerator /
                    MatchTable::kMaxLoadDenominator);  // 8 buckets
  m.table().set_fixed_size(true);
  size_t buckets = m.table().bucket_count();
  for (uint32_t i = 0; i < buckets * MatchTable::kSlotsPerBucket; ++i) m.Insert({i, 0});
  EXPECT_EQ(m.table().bucket_count(), buckets);  // 100% full, no growth yet
  m.Verify({{99999, 0}});
  m.Insert({12345, 1});  // no slot left: grows rather than failing
  EXPECT_GT(m.table().bucket_count(), buckets);
  m.Verify({});
}

// A full fixed-size table holds many keys past their home bucket, in the next one or further (and from the
// last bucket round to the first): a burst finds each as Find does, as keys leave and others take their
// slots.
TEST(MatchTableTest, BurstsFindKeysPastTheirHomeBucket) {
  TableModel m(4);
  m.table().Reserve(64 * MatchTable::kSlotsPerBucket * MatchTable::kMaxLoadNumerator /
                    MatchTable::kMaxLoadDenominator);
  m.table().set_fixed_size(true);
  const size_t slots = m.table().bucket_count() * MatchTable::kSlotsPerBucket;
  std::mt19937 rng(7);
  for (size_t i = 0; i < slots; ++i) m.Insert(RandomKey(rng, 4, 1u << 30));
  std::vector<Key> absent;
  for (int i = 0; i < 100; ++i) absent.push_back(RandomKey(rng, 4, 1u << 30));
  m.Verify(absent);
  for (size_t i = 0; i < slots / 2; ++i) m.EraseAt(rng() % m.live());
  m.Verify(absent);
  while (m.live() < slots) m.Insert(RandomKey(rng, 4, 1u << 30));
  EXPECT_EQ(m.table().bucket_count() * MatchTable::kSlotsPerBucket, slots);
  m.Verify(absent);
}

// Two keys whose hashes share the 16-bit signature, in one bucket: each lookup compares the records under
// the signature until the key matches (a burst's candidate may be the other key's record).
TEST(MatchTableTest, KeysSharingASignatureAreToldApartByTheirKeys) {
  TableModel m(1);
  std::map<uint64_t, uint32_t> by_signature;
  Key first, second;
  for (uint32_t w = 0; second.empty(); ++w) {
    const auto [it, fresh] = by_signature.emplace(m.table().Hash(&w) >> 48, w);
    if (!fresh) {
      first = {it->second};
      second = {w};
    }
  }
  m.Insert(first);
  m.Insert(second);
  m.Insert(first);  // a duplicate behind the first
  // One bucket: both keys in it.
  ASSERT_EQ(m.table().bucket_count(), 1u);
  m.Verify({{first[0] + 1}});
  m.EraseAt(0);
  m.Verify({});
  m.EraseAt(1);
  m.Verify({first});
}

// Erase ignores a handle the table never handed out (past its record chunks, or past a chunk's end).
TEST(MatchTableTest, EraseIgnoresHandlesItNeverGaveOut) {
  TableModel m(1);
  for (uint32_t i = 0; i < 20; ++i) m.Insert({i});  // chunks 0 (8 records) and 1 (16)
  for (uint32_t bogus : {8u, 1u << 27 | 16, 2u << 27, 24u << 27, 0xfffffffeu}) m.table().Erase(bogus);
  m.Verify({});
}

TEST(MatchTableTest, ReserveNeverShrinks) {
  MatchTable t(1);
  t.Reserve(1 << 12);
  size_t big = t.bucket_count();
  EXPECT_EQ(big, size_t{1} << 9);  // 2^12 rules in 2^9 buckets: a million fill 8 MiB, as rte_hash's do
  EXPECT_GE(
      big * MatchTable::kSlotsPerBucket * MatchTable::kMaxLoadNumerator / MatchTable::kMaxLoadDenominator,
      size_t{1} << 12);
  t.Reserve(4);
  EXPECT_EQ(t.bucket_count(), big);
}

// Erased records wait for the readers that may hold them, then come back oldest first.
TEST(MatchTableTest, ErasedRecordsAreReusedOldestFirstOnceNoReaderCanHoldThem) {
  Reclaimer reclaimer;
  MatchTable table(1, &reclaimer);
  PipePrograms programs;
  const uint32_t keys[] = {1, 2, 3, 4, 5, 6};
  const MatchTable::Handle a = table.Insert(&keys[0], RuleRecord{&programs, 1});
  const MatchTable::Handle b = table.Insert(&keys[1], RuleRecord{&programs, 2});
  Reclaimer::Reader reader(&reclaimer);
  reader.Enter();
  const RuleRecord* held = table.Find(&keys[0]);
  ASSERT_NE(held, nullptr);
  table.Erase(a);
  table.Erase(b);
  const MatchTable::Handle c = table.Insert(&keys[2], RuleRecord{&programs, 3});
  EXPECT_NE(c, a);
  EXPECT_NE(c, b);
  EXPECT_EQ(held->rule_id, 1u);  // the reader's record is untouched
  EXPECT_EQ(table.Find(&keys[0]), nullptr);
  reader.Leave();
  EXPECT_EQ(table.Insert(&keys[3], RuleRecord{&programs, 4}), a);
  EXPECT_EQ(table.Insert(&keys[4], RuleRecord{&programs, 5}), b);
  EXPECT_NE(table.Insert(&keys[5], RuleRecord{&programs, 6}), c);
  for (uint32_t k = 2; k < 6; ++k) {
    const RuleRecord* r = table.Find(&keys[k]);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->rule_id, k + 1);
  }
  EXPECT_EQ(table.size(), 4u);
}

// Inserts the rule of key {k, ~k} (rule id k) into `table`, with Insert or InsertQueued as `inserts` says
// (kMixed: by a bit of the generator `x`, which it steps).
MatchTable::Handle InsertPair(MatchTable& table, const PipePrograms& programs, Inserts inserts, uint32_t k,
                              uint32_t* x) {
  const Key key{k, ~k};
  *x = *x * 1664525u + 1013904223u;
  return InsertAs(table, inserts, *x >> 16, key.data(), RuleRecord{&programs, k}, nullptr);
}

// Two readers of `table` until `stop`: one looks keys up one by one (Find), the other 32 at a time
// (FindBurst, whose candidate records are taken from a first scan). A burst is the keys {k, ~k} for the 32
// k that pick(&x, ks) writes (x: the reader's generator; false: no burst this time); `errors` counts the
// lookups wrong(k, found) calls wrong.
template <typename Pick, typename Wrong>
std::vector<std::thread> StartReaders(const MatchTable& table, Reclaimer& reclaimer,
                                      const std::atomic<bool>& stop, std::atomic<int>& errors, Pick pick,
                                      Wrong wrong) {
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&, pick, wrong, t] {
      Reclaimer::Reader reader(&reclaimer);
      uint32_t x = t + 1;
      while (!stop.load(std::memory_order_relaxed)) {
        uint32_t ks[32];
        if (!pick(&x, ks)) continue;
        uint32_t keys[2 * 32];
        const RuleRecord* found[32];
        reader.Enter();
        for (int i = 0; i < 32; ++i) {
          keys[2 * i] = ks[i];
          keys[2 * i + 1] = ~ks[i];
          if (t == 0) found[i] = table.Find(&keys[2 * i]);
        }
        if (t == 1) table.FindBurst(keys, 32, found);
        for (int i = 0; i < 32; ++i) {
          if (wrong(ks[i], found[i])) ++errors;
        }
        reader.Leave();
      }
    });
  }
  return readers;
}

// Lookups on other threads while one writer inserts, erases and grows the table: a lookup returns the rule
// of its own key or nothing, and keys that are never erased are always found (queued, the last of them
// stay queued until the churn's first erase).
TEST_P(MatchTableInsertsTest, ConcurrentLookupsSeeWholeRules) {
  constexpr uint32_t kStable = 64, kChurn = 4096;
  Reclaimer reclaimer;
  MatchTable table(2, &reclaimer);
  PipePrograms programs;
  table.Reserve(kQueuingTable);
  uint32_t x = 99;
  for (uint32_t k = 0; k < kStable; ++k) InsertPair(table, programs, GetParam(), k, &x);
  std::atomic<bool> stop{false};
  std::atomic<int> errors{0};
  std::vector<std::thread> readers = StartReaders(
      table, reclaimer, stop, errors,
      [](uint32_t* x, uint32_t* ks) {
        for (int i = 0; i < 32; ++i) {
          *x = *x * 1664525u + 1013904223u;
          ks[i] = (*x >> 8) % (kStable + kChurn);
        }
        return true;
      },
      [](uint32_t k, const RuleRecord* r) {
        return (r != nullptr && r->rule_id != k) || (r == nullptr && k < kStable);
      });
  std::vector<MatchTable::Handle> handles(kChurn);
  std::vector<bool> in(kChurn);
  for (int op = 0; op < 200000; ++op) {
    x = x * 1664525u + 1013904223u;
    const uint32_t i = (x >> 8) % kChurn;
    if (in[i]) {
      table.Erase(handles[i]);
    } else {
      handles[i] = InsertPair(table, programs, GetParam(), kStable + i, &x);
    }
    in[i] = !in[i];
  }
  stop = true;
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(errors.load(), 0);
}

// Inserts only, each key announced once inserted: a reader finds every key announced before its lookup,
// whether its slot is written or queued, or being written as the reader looks (a rule once seen is never
// lost again).
TEST_P(MatchTableInsertsTest, ConcurrentLookupsFindEveryRuleInsertedBefore) {
  constexpr uint32_t kKeys = 2 * kQueuingTable;  // the table grows once
  Reclaimer reclaimer;
  MatchTable table(2, &reclaimer);
  table.Reserve(kQueuingTable);
  PipePrograms programs;
  std::atomic<uint32_t> announced{0};  // keys [0, announced) are in
  std::atomic<bool> stop{false};
  std::atomic<int> errors{0};
  std::vector<std::thread> readers = StartReaders(
      table, reclaimer, stop, errors,
      [&announced](uint32_t* x, uint32_t* ks) {
        const uint32_t in = announced.load(std::memory_order_acquire);
        if (in == 0) return false;
        for (int i = 0; i < 32; ++i) {
          *x = *x * 1664525u + 1013904223u;
          // Half the lookups among the last 16 keys in (queued, or just placed), half among all.
          ks[i] = i % 2 == 0 ? in - 1 - (*x >> 8) % std::min(in, 16u) : (*x >> 8) % in;
        }
        return true;
      },
      [](uint32_t k, const RuleRecord* r) { return r == nullptr || r->rule_id != k; });
  uint32_t x = 5;
  for (uint32_t k = 0; k < kKeys; ++k) {
    InsertPair(table, programs, GetParam(), k, &x);
    announced.store(k + 1, std::memory_order_release);
  }
  stop = true;
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(errors.load(), 0);
}

// What InsertQueued promises before a later call writes the slots: lookups and the writer's views see the
// rule as after Insert, duplicates keep their order, and an erase or an insert files the queue first.
TEST(MatchTableTest, QueuedRulesAreFoundBeforeTheirSlotsAreWritten) {
  MatchTable table(2);
  table.Reserve(kQueuingTable);
  PipePrograms programs;
  auto queue = [&](const Key& key, uint32_t rule_id) {
    return table.InsertQueued(key.data(), table.Hash(key.data()), RuleRecord{&programs, rule_id}, nullptr);
  };
  auto id = [](const RuleRecord* r) { return r == nullptr ? 0 : r->rule_id; };
  auto winner = [&](const Key& key) { return id(table.Find(key.data())); };
  const Key a{1, 2}, b{3, 4}, c{5, 6};
  table.Insert(a.data(), RuleRecord{&programs, 1});
  queue(a, 2);  // a duplicate of a placed rule: the placed one wins
  const MatchTable::Handle b3 = queue(b, 3);
  queue(b, 4);  // a duplicate of a queued rule: the older wins
  const MatchTable::Handle c5 = queue(c, 5);
  EXPECT_EQ(winner(a), 1u);
  EXPECT_EQ(winner(b), 3u);
  EXPECT_EQ(winner(c), 5u);
  EXPECT_EQ(table.CountForWriter(a.data(), table.Hash(a.data())), 2u);
  EXPECT_EQ(table.CountForWriter(b.data(), table.Hash(b.data())), 2u);
  EXPECT_EQ(id(table.FindForWriter(c.data(), table.Hash(c.data()))), 5u);
  EXPECT_TRUE(table.MayHold(c[0]));
  uint32_t keys[] = {a[0], a[1], b[0], b[1], c[0], c[1], 7, 8};
  const RuleRecord* found[4];
  table.FindBurst(keys, 4, found);
  EXPECT_EQ(id(found[0]), 1u);
  EXPECT_EQ(id(found[1]), 3u);
  EXPECT_EQ(id(found[2]), 5u);
  EXPECT_EQ(id(found[3]), 0u);
  EXPECT_EQ(table.size(), 5u);
  // a's and b's: queueing b's second rule flushed the queue up to b's first; c's rule is queued.
  EXPECT_EQ(table.distinct_keys(), 2u);
  table.Erase(c5);  // a queued rule, erased before its slot was written
  EXPECT_EQ(winner(c), 0u);
  table.Erase(b3);
  EXPECT_EQ(winner(b), 4u);
  EXPECT_EQ(table.distinct_keys(), 2u);  // a's and b's (the erases flushed the queue)
  // Many queued in a row: the oldest are placed as the queue fills.
  for (uint32_t k = 100; k < 200; ++k) queue(Key{k, k}, k);
  EXPECT_GT(table.distinct_keys(), 2u);
  EXPECT_LT(table.distinct_keys(), 102u);
  for (uint32_t k = 100; k < 200; ++k) EXPECT_EQ(winner(Key{k, k}), k);
  table.FlushQueue();
  EXPECT_EQ(table.distinct_keys(), 102u);
  for (uint32_t k = 100; k < 200; ++k) EXPECT_EQ(winner(Key{k, k}), k);
}

// Each queued key has its room when it is queued: an erase, which files the queue first, never grows the
// table (growing allocates). Past the load the reserve sized for, inserts grow it themselves.
TEST(MatchTableTest, FlushingQueuedRulesNeverGrowsTheTable) {
  constexpr uint32_t kKeys = kQueuingTable + 4;
  MatchTable table(2);
  table.Reserve(kQueuingTable);
  PipePrograms programs;
  const size_t reserved = table.bucket_count();
  std::vector<MatchTable::Handle> handles;
  for (uint32_t k = 0; k < kKeys; ++k) {
    const Key key{k, ~k};
    handles.push_back(
        table.InsertQueued(key.data(), table.Hash(key.data()), RuleRecord{&programs, k}, nullptr));
  }
  const size_t grown = table.bucket_count();
  EXPECT_EQ(grown, 2 * reserved);
  EXPECT_LT(table.distinct_keys(), kKeys);  // some still queued
  table.Erase(handles[0]);
  EXPECT_EQ(table.bucket_count(), grown);
  EXPECT_EQ(table.distinct_keys(), kKeys - 1);
  for (uint32_t k = 0; k < kKeys; ++k) {
    const Key key{k, ~k};
    const RuleRecord* r = table.Find(key.data());
    ASSERT_EQ(r == nullptr ? 0 : r->rule_id, k == 0 ? 0 : k) << k;
  }
}

INSTANTIATE_TEST_SUITE_P(AllInserts, MatchTableInsertsTest,
                         testing::Values(Inserts::kFiled, Inserts::kQueued, Inserts::kMixed));

}  // namespace
}  // namespace drsim::hw
