#include "hw/match_table.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <new>

#include "absl/base/config.h"
#include "hw/lookup_memory.h"
#include "hw/match_layout.h"

// Bucket scans compare signatures with SSE2 where there is SSE2 — but not under ThreadSanitizer, which
// sees the vector loads as plain reads of atomic slots.
#if defined(__SSE2__) && !defined(ABSL_HAVE_THREAD_SANITIZER)
#define DRSIM_SIMD_BUCKET_SCAN 1
#include <emmintrin.h>
#else
#define DRSIM_SIMD_BUCKET_SCAN 0
#endif

namespace drsim::hw {
namespace {

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull;

// splitmix64's output function: every bit of `h` reaches every bit of the result.
constexpr uint64_t Finalize(uint64_t h) {
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

// The constants NH (below) adds to each pair of key words: the splitmix64 sequence, one per word.
constexpr size_t kMaxPairs = kMatchParamBytes / 8;
struct PairConstants {
  uint32_t first[kMaxPairs] = {};
  uint32_t second[kMaxPairs] = {};
};
constexpr PairConstants MakePairConstants() {
  PairConstants c;
  uint64_t state = 0;
  for (size_t p = 0; p < kMaxPairs; ++p) {
    state += kGolden;
    const uint64_t r = Finalize(state);
    c.first[p] = static_cast<uint32_t>(r);
    c.second[p] = static_cast<uint32_t>(r >> 32) | 1;  // odd: a lone last word still spreads
  }
  return c;
}
constexpr PairConstants kPairConstants = MakePairConstants();

size_t NextPowerOfTwo(size_t n) {
  size_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

}  // namespace

MatchTable::BucketArray::BucketArray(size_t count)
    : BucketView{count - 1, static_cast<Bucket*>(AllocateLookupMemory(count * sizeof(Bucket)))} {
  for (size_t i = 0; i < count; ++i) {
    new (&buckets[i]) Bucket;
    for (int s = 0; s < kSlotsPerBucket; ++s) {
      buckets[i].signature[s].store(0, std::memory_order_relaxed);
      buckets[i].record[s].store(kNone, std::memory_order_relaxed);
    }
    buckets[i].overflow.store(0, std::memory_order_relaxed);
  }
}

MatchTable::BucketArray::~BucketArray() {
  FreeLookupMemory(buckets, (mask + 1) * sizeof(Bucket));  // Bucket is trivially destructible
}

MatchTable::MatchTable(size_t key_words, Reclaimer* reclaimer, size_t summary_word)
    : buckets_(new BucketArray(1)),
      key_words_(static_cast<uint16_t>(key_words)),
      summary_word_(static_cast<uint16_t>(summary_word)),
      stride_(static_cast<uint16_t>((kRuleWords + key_words + 1) & ~size_t{1})),
      fixed_size_(false),
      has_queue_(false),
      reclaimer_(reclaimer) {
  // A small table's writer fields, the first chunks' pointers among them, end where the third line of a
  // CompiledMatcher ends (the table starts 48 bytes into its first).
  static_assert(offsetof(MatchTable, chunks_) + sizeof(chunks_[0]) <= 3 * 64 - 48);
  written_ = *buckets_.load(std::memory_order_relaxed);
  assert(key_words <= kMatchParamBytes / 4);
  assert(summary_word < key_words || summary_word == 0);
}

MatchTable::~MatchTable() {
  for (int c = 0; c < chunk_count_; ++c)
    FreeLookupMemory(chunks_[c].load(std::memory_order_relaxed), ChunkBytes(c));
  delete WrittenQueue();
  delete buckets_.load(std::memory_order_relaxed);
}

MatchTable::Queue::Queue() {
  for (uint32_t i = 0; i < kQueueCapacity; ++i) {
    record[i].store(kNone, std::memory_order_relaxed);
    signature[i].store(0, std::memory_order_relaxed);
  }
}

namespace {

// NH, the hash of the UMAC family: each pair of words, offset by its own constants, multiplied as two 32-bit
// numbers into an exact 64-bit product. The products do not wait on one another (unlike a chain of mixing
// rounds), and a sum of them differs between two keys except with probability about 2^-32 per pair.
// MatchTable::Hash of the `count`-word `key`; inlined, so a constant `count` picks its case at compile time.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline uint64_t HashKey(const uint32_t* key, size_t count) {
  auto pair = [key](size_t p) {
    return uint64_t{static_cast<uint32_t>(key[2 * p] + kPairConstants.first[p])} *
           static_cast<uint32_t>(key[2 * p + 1] + kPairConstants.second[p]);
  };
  auto last = [key](size_t p) {  // a lone last word, at pair p
    return uint64_t{static_cast<uint32_t>(key[2 * p] + kPairConstants.first[p])} * kPairConstants.second[p];
  };
  const uint64_t sum = count * kGolden;
  // Short keys (an IPv4 5-tuple is four words) without a loop's set-up.
  switch (count) {
    case 1:
      return Finalize(sum + last(0));
    case 2:
      return Finalize(sum + pair(0));
    case 3:
      return Finalize(sum + pair(0) + last(1));
    case 4:
      return Finalize(sum + pair(0) + pair(1));
    default: {
      uint64_t total = sum;
      const size_t pairs = count / 2;
      for (size_t p = 0; p < pairs; ++p) total += pair(p);
      if (count % 2 != 0) total += last(pairs);
      return Finalize(total);
    }
  }
}

}  // namespace

uint64_t MatchTable::Hash(const uint32_t* key) const { return HashKey(key, key_words_); }

// A slot found here may have changed since: lookups load its record index with acquire and compare the
// record's key. Signature 0 finds the empty slots (no key has it).
ABSL_ATTRIBUTE_ALWAYS_INLINE inline uint32_t MatchTable::SlotsWithSignature(const Bucket& bk, uint16_t sig) {
#if DRSIM_SIMD_BUCKET_SCAN
  // All ten signatures at once: which slot holds the key is a coin toss for a branch; a bit mask is not.
  // Slots 0-7 fill the first 16 bytes, slots 8 and 9 the first 4 of the next 8 (the overflow count follows).
  const __m128i want = _mm_set1_epi16(static_cast<short>(sig));
  const auto* bytes = reinterpret_cast<const __m128i*>(&bk);
  const uint32_t low = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi16(_mm_load_si128(bytes), want)));
  const uint32_t high =
      static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi16(_mm_loadl_epi64(bytes + 1), want)));
  return (low | (high & 0xf) << 16) & 0x55555;
#else
  uint32_t match = 0;
  for (int s = 0; s < kSlotsPerBucket; ++s) {
    if (bk.signature[s].load(std::memory_order_relaxed) == sig) match |= 1u << (2 * s);
  }
  return match;
#endif
}

uint32_t MatchTable::Probe(const BucketView& array, const uint32_t* key, uint64_t hash, size_t* bucket,
                           int* slot) const {
  const uint16_t sig = Signature(hash);
  size_t b = hash & array.mask;
  for (size_t probes = 0; probes <= array.mask; ++probes) {
    const Bucket& bk = array.buckets[b];
    for (uint32_t slots = SlotsWithSignature(bk, sig); slots != 0; slots &= slots - 1) {
      const int s = __builtin_ctz(slots) / 2;
      const uint32_t record = bk.record[s].load(std::memory_order_acquire);
      if (record != kNone && KeyEquals(RecordWords(record), key)) {
        *bucket = b;
        *slot = s;
        return record;
      }
    }
    if (bk.overflow.load(std::memory_order_acquire) == 0) return kNone;
    b = (b + 1) & array.mask;
  }
  return kNone;
}

bool MatchTable::SlotHolding(const BucketView& array, uint32_t record, uint64_t hash, size_t* bucket,
                             int* slot) {
  size_t b = hash & array.mask;
  for (size_t probes = 0; probes <= array.mask; ++probes) {
    const Bucket& bk = array.buckets[b];
    for (int s = 0; s < kSlotsPerBucket; ++s) {
      if (bk.record[s].load(std::memory_order_relaxed) == record) {
        *bucket = b;
        *slot = s;
        return true;
      }
    }
    if (bk.overflow.load(std::memory_order_relaxed) == 0) return false;
    b = (b + 1) & array.mask;
  }
  return false;
}

bool MatchTable::FindSlot(const uint32_t* key, uint64_t hash, size_t* bucket, int* slot) const {
  return Probe(written_, key, hash, bucket, slot) != kNone;
}

const RuleRecord* MatchTable::FindForWriter(const uint32_t* key, uint64_t hash) const {
  size_t bucket;
  int slot;
  uint32_t record = Probe(written_, key, hash, &bucket, &slot);
  if (const Queue* queue = WrittenQueue(); record == kNone && queue != nullptr) {
    record = QueuedHolding(*queue, key, hash);
  }
  return record == kNone ? nullptr : RecordRule(record);
}

size_t MatchTable::CountForWriter(const uint32_t* key, uint64_t hash) const {
  size_t bucket;
  int slot;
  size_t count = 0;
  for (uint32_t record = Probe(written_, key, hash, &bucket, &slot); record != kNone;
       record = meta_[NumberOf(record)].next_duplicate) {
    ++count;
  }
  // (The queue holds the newest record of its key, if any.)
  if (const Queue* queue = WrittenQueue(); queue != nullptr && QueuedHolding(*queue, key, hash) != kNone)
    ++count;
  return count;
}

const RuleRecord* MatchTable::Find(const uint32_t* key, uint64_t hash) const {
  if ((summary_.load(std::memory_order_acquire) >> KeySummaryBit(key) & 1) == 0) return nullptr;
  const BucketArray& array = *buckets_.load(std::memory_order_acquire);
  if (const Queue* queue = array.queue.load(std::memory_order_acquire))
    return FindWithQueue(*queue, key, hash);
  size_t bucket;
  int slot;
  const uint32_t record = Probe(array, key, hash, &bucket, &slot);
  return record == kNone ? nullptr : RecordRule(record);
}

uint32_t MatchTable::QueuedHolding(const Queue& queue, const uint32_t* key, uint64_t hash) const {
  const uint16_t sig = Signature(hash);
  for (uint32_t i = 0; i < kQueueCapacity; ++i) {
    // The signature is read after the record: at least as new as it (the writer stores it first), so a
    // record it no longer matches has left the queue, placed (and the newer signature, acquired, shows the
    // flushed count that says so).
    const uint32_t record = queue.record[i].load(std::memory_order_acquire);
    if (record != kNone && queue.signature[i].load(std::memory_order_acquire) == sig &&
        KeyEquals(RecordWords(record), key)) {
      return record;
    }
  }
  return kNone;
}

// A record leaves the queue after its slot is written and `flushed` counted: a lookup that found it in
// neither reads a count that moved since its first reading, and looks again.
const RuleRecord* MatchTable::FindWithQueue(const Queue& queue, const uint32_t* key, uint64_t hash) const {
  for (;;) {
    const uint32_t flushed = queue.flushed.load(std::memory_order_acquire);
    size_t bucket;
    int slot;
    uint32_t record = Probe(*buckets_.load(std::memory_order_acquire), key, hash, &bucket, &slot);
    if (record == kNone) record = QueuedHolding(queue, key, hash);
    if (record != kNone) return RecordRule(record);
    if (queue.flushed.load(std::memory_order_acquire) == flushed) return nullptr;
  }
}

// Inlined into both callers: a burst's lookups call it once a key. Only the first record under the
// signature: FindFrom tries no other (another key's signature matches once in 65,535; Find sorts it out).
ABSL_ATTRIBUTE_ALWAYS_INLINE inline MatchTable::Candidate MatchTable::PrefetchRecordsIn(const Bucket& bk,
                                                                                        uint64_t hash) const {
  const uint32_t slots = SlotsWithSignature(bk, Signature(hash));
  if (slots == 0) return nullptr;
  const uint32_t record = bk.record[__builtin_ctz(slots) / 2].load(std::memory_order_acquire);
  if (record == kNone) return nullptr;
  const uint32_t* words = RecordWords(record);
  PrefetchRecord(words);
  return words;
}

MatchTable::Candidate MatchTable::PrefetchRecords(uint64_t hash) const {
  const BucketView& array = *buckets_.load(std::memory_order_acquire);
  return PrefetchRecordsIn(array.buckets[hash & array.mask], hash);
}

template <size_t kWords>
void MatchTable::FindBurstOf(const uint32_t* keys, size_t n, const RuleRecord** hits) const {
  const size_t words = kWords != 0 ? kWords : key_words_;
  const BucketView array = *buckets_.load(std::memory_order_acquire);
  uint64_t hashes[kMaxFindBurst];
  Candidate candidates[kMaxFindBurst];
  for (size_t i = 0; i < n; ++i) {
    hashes[i] = HashKey(keys + i * words, words);
    __builtin_prefetch(&array.buckets[hashes[i] & array.mask]);
  }
  // A key its home bucket had no room for lies in a bucket after it, most often the next: for a key its home
  // bucket has no candidate for while keys overflow past it, that bucket loads with the others, rather than
  // in a Find after the burst's records.
  uint8_t spilled[kMaxFindBurst];
  size_t spills = 0;
  for (size_t i = 0; i < n; ++i) {
    const Bucket& home = array.buckets[hashes[i] & array.mask];
    candidates[i] = PrefetchRecordsIn(home, hashes[i]);
    if (candidates[i] == nullptr && home.overflow.load(std::memory_order_acquire) != 0) {
      __builtin_prefetch(&array.buckets[(hashes[i] + 1) & array.mask]);
      spilled[spills++] = static_cast<uint8_t>(i);
    }
  }
  for (size_t k = 0; k < spills; ++k) {
    const size_t i = spilled[k];
    candidates[i] = PrefetchRecordsIn(array.buckets[(hashes[i] + 1) & array.mask], hashes[i]);
  }
  for (size_t i = 0; i < n; ++i) hits[i] = FindFrom(keys + i * words, hashes[i], candidates[i], words);
}

void MatchTable::FindBurst(const uint32_t* keys, size_t n, const RuleRecord** hits) const {
  if (key_words_ == 0) {  // every key is the empty key (a catch-all matcher's, as a root jump's often is)
    const RuleRecord* hit = n == 0 ? nullptr : Find(keys);
    std::fill(hits, hits + n, hit);
    return;
  }
  for (size_t at = 0; at < n; at += kMaxFindBurst) {
    const size_t count = std::min(kMaxFindBurst, n - at);
    const uint32_t* from = keys + at * key_words_;
    // Keys of up to six words (every IPv4 lookup of a few fields) with their length known to the compiler.
    switch (key_words_) {
      case 1:
        FindBurstOf<1>(from, count, hits + at);
        break;
      case 2:
        FindBurstOf<2>(from, count, hits + at);
        break;
      case 3:
        FindBurstOf<3>(from, count, hits + at);
        break;
      case 4:
        FindBurstOf<4>(from, count, hits + at);
        break;
      case 5:
        FindBurstOf<5>(from, count, hits + at);
        break;
      case 6:
        FindBurstOf<6>(from, count, hits + at);
        break;
      default:
        FindBurstOf<0>(from, count, hits + at);
        break;
    }
  }
}

void MatchTable::AddChunk(bool fault_in) {
  void* chunk = AllocateLookupMemory(ChunkBytes(chunk_count_));
  if (fault_in) TouchPages(chunk, ChunkBytes(chunk_count_));
  chunks_[chunk_count_++].store(static_cast<uint32_t*>(chunk), std::memory_order_release);
}

uint32_t MatchTable::TakeRecord(uint32_t* number) {
  if (retired_head_ != kNone) {
    const uint32_t record = retired_head_;
    *number = NumberOf(record);
    if (reclaimer_ == nullptr || reclaimer_->Safe(meta_[*number].hash)) {
      retired_head_ = meta_[*number].next_duplicate;
      if (retired_head_ == kNone) retired_tail_ = kNone;
      return record;
    }
  }
  *number = static_cast<uint32_t>(meta_.size());
  if (ChunkOf(*number) == chunk_count_) {
    if (chunk_count_ == kMaxChunks) throw std::bad_alloc();  // 2^28 - 8 records: more than memory holds
    AddChunk(/*fault_in=*/false);
  }
  meta_.push_back({});
  return IndexOf(*number);
}

uint32_t MatchTable::AllocateRecord(const uint32_t* key, const RuleRecord& rule, uint64_t hash, void* owner) {
  uint32_t number;
  const uint32_t record = TakeRecord(&number);
  uint32_t* words = RecordWords(record);
  new (words) RuleRecord(rule);
  if (key_words_ != 0) std::memcpy(words + kRuleWords, key, key_words_ * sizeof(uint32_t));
  meta_[number] = {hash, owner, inserted_++, kNone, true, static_cast<uint8_t>(KeySummaryBit(key)), record};
  ++live_records_;
  return record;
}

bool MatchTable::PlaceInFreeSlot(const BucketView& array, uint32_t record, uint64_t hash) {
  size_t b = hash & array.mask;
  for (size_t probes = 0; probes <= array.mask; ++probes) {
    Bucket& bk = array.buckets[b];
    if (const uint32_t empty = SlotsWithSignature(bk, 0); empty != 0) {  // an empty slot's signature
      // Every bucket passed on the way now has one more key beyond it; then the record goes live.
      for (size_t p = hash & array.mask; p != b; p = (p + 1) & array.mask) {
        array.buckets[p].overflow.fetch_add(1, std::memory_order_release);
      }
      Publish(bk, __builtin_ctz(empty) / 2, hash, record);
      return true;
    }
    b = (b + 1) & array.mask;
  }
  return false;
}

void MatchTable::Rebuild(size_t buckets) {
  BucketArray* old = buckets_.load(std::memory_order_relaxed);
  auto* array = new BucketArray(buckets);
  // Re-place every primary record; duplicate chains hang off their primary and move with it.
  for (size_t i = 0; i <= old->mask; ++i) {
    for (const std::atomic<uint32_t>& slot : old->buckets[i].record) {
      const uint32_t record = slot.load(std::memory_order_relaxed);
      if (record != kNone) PlaceInFreeSlot(*array, record, MetaOf(record).hash);
    }
  }
  array->queue.store(old->queue.load(std::memory_order_relaxed), std::memory_order_relaxed);
  buckets_.store(array, std::memory_order_release);
  written_ = *array;
  Retire(reclaimer_, [old] { delete old; });
}

void MatchTable::Reserve(size_t rules) {
  FlushQueue();
  // The records and their bookkeeping, their pages faulted in now, as rte_hash_create allocates its key
  // store: the rules announced then go in without a page fault or an allocation on the way. (Grown to
  // `rules` and back, meta_ keeps the memory it wrote.)
  const size_t taken = meta_.size();
  if (rules > taken) {
    meta_.resize(rules);
    meta_.resize(taken);
  }
  while (chunk_count_ < kMaxChunks && ChunkBase(chunk_count_) < rules) AddChunk(/*fault_in=*/true);
  // The buckets last, as rte_hash_create writes its own after its key store: the lines inserts read at
  // random are then the ones left in the caches, rather than the records' (written in order, once each).
  const size_t slots = rules * kMaxLoadDenominator / kMaxLoadNumerator;
  size_t needed = NextPowerOfTwo((slots + kSlotsPerBucket - 1) / kSlotsPerBucket);
  if (needed > bucket_count()) Rebuild(needed);
}

MatchTable::Handle MatchTable::Insert(const uint32_t* key, uint64_t hash, const RuleRecord& rule,
                                      void* owner) {
  FlushQueue();
  const uint32_t record = AllocateRecord(key, rule, hash, owner);
  PlaceRecord(record);
  return record;
}

MatchTable::Handle MatchTable::InsertQueued(const uint32_t* key, uint64_t hash, const RuleRecord& rule,
                                            void* owner) {
  // A small table's buckets stay in the caches: its inserts wait on no bucket, and its rules, few, are
  // looked up in the buckets (a lookup that finds a rule in the queue has missed in them first).
  if (written_.mask < kQueueFromBuckets - 1) return Insert(key, hash, rule, owner);
  Queue* queue = WrittenQueue();
  // Every queued key has its room when it is queued: flushing, which an erase does, then never grows the
  // table (growing allocates, and may throw; an erase must not). A table that must grow first, or a
  // fixed-size one nearly full, inserts at once.
  const size_t slots = (written_.mask + 1) * kSlotsPerBucket;
  const size_t queued = queue != nullptr ? queue->count : 0;
  if (fixed_size_ ? distinct_keys_ + kQueueCapacity >= slots
                  : (distinct_keys_ + queued + 1) * kMaxLoadDenominator > slots * kMaxLoadNumerator) {
    return Insert(key, hash, rule, owner);
  }
  if (queue == nullptr) {
    queue = new Queue;
    buckets_.load(std::memory_order_relaxed)->queue.store(queue, std::memory_order_release);
    has_queue_ = true;
  }
  // One record a key: one of this key already queued is placed first (with the older ones), so that a lookup
  // finding a record in the queue need not ask which is older.
  if (QueuedHolding(*queue, key, hash) != kNone) FlushQueue();
  if (queue->count == kQueueCapacity) FlushOldestQueued(*queue);
  const uint32_t record = AllocateRecord(key, rule, hash, owner);
  // Lookups must not refuse the key on the summary before its slot is written (a bit whose key went is set
  // still: then it is no longer stale).
  const uint64_t bit = uint64_t{1} << KeySummaryBit(key);
  stale_summary_ &= ~bit;
  if (const uint64_t summary = summary_.load(std::memory_order_relaxed); (summary & bit) == 0) {
    summary_.store(summary | bit, std::memory_order_release);
  }
  const uint32_t at = (queue->head + queue->count) % kQueueCapacity;
  queue->signature[at].store(Signature(hash), std::memory_order_release);
  queue->record[at].store(record, std::memory_order_release);  // lookups find the rule from here on
  ++queue->count;
  return record;
}

void MatchTable::FlushQueue() {
  Queue* queue = WrittenQueue();
  if (queue == nullptr) return;
  while (queue->count != 0) FlushOldestQueued(*queue);
}

void MatchTable::FlushOldestQueued(Queue& queue) {
  const uint32_t at = queue.head;
  PlaceRecord(queue.record[at].load(std::memory_order_relaxed));
  queue.flushed.store(queue.flushed.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  queue.record[at].store(kNone, std::memory_order_release);
  queue.head = (at + 1) % kQueueCapacity;
  --queue.count;
}

void MatchTable::PlaceRecord(uint32_t record) {
  const uint64_t hash = MetaOf(record).hash;
  size_t bucket;
  int slot;
  if (FindSlot(RecordKey(record), hash, &bucket, &slot)) {
    // Duplicate: behind the existing rules with this key (not visible to lookups until they go).
    Meta& primary = MetaOf(written_.buckets[bucket].record[slot].load(std::memory_order_relaxed));
    MetaOf(primary.prev_duplicate).next_duplicate = record;
    MetaOf(record).prev_duplicate = primary.prev_duplicate;
    primary.prev_duplicate = record;
    return;
  }
  // (The writer's copy of the array's size: the published array's header is one more line to load.)
  const size_t buckets = written_.mask + 1;
  if (!fixed_size_ &&
      (distinct_keys_ + 1) * kMaxLoadDenominator > buckets * kSlotsPerBucket * kMaxLoadNumerator) {
    Rebuild(buckets * 2);
  }
  const int summary_bit = MetaOf(record).summary_bit;
  if (CountSummaryKey(summary_bit, +1) == 0) {
    const uint64_t bit = uint64_t{1} << summary_bit;
    if ((stale_summary_ & bit) != 0) {
      stale_summary_ &= ~bit;  // still set
    } else {
      // The stale bits go with this store (their keys' slots were emptied before).
      summary_.store((summary_.load(std::memory_order_relaxed) & ~stale_summary_) | bit,
                     std::memory_order_release);
      stale_summary_ = 0;
    }
  }
  // Only a full fixed-size table fails to place.
  while (!PlaceInFreeSlot(written_, record, hash)) Rebuild((written_.mask + 1) * 2);
  ++distinct_keys_;
}

std::vector<MatchTable::Handle> MatchTable::InInsertionOrder() const {
  std::vector<Handle> rules;
  rules.reserve(live_records_);
  ForEachRule([&](Handle handle, void*) { rules.push_back(handle); });
  // (Counted back from now, so that the order holds across the counter's wrap: a table never holds rules
  // from 2^32 inserts apart.)
  auto age = [&](Handle h) { return inserted_ - meta_[NumberOf(h)].inserted; };
  std::sort(rules.begin(), rules.end(), [&](Handle a, Handle b) { return age(a) > age(b); });
  return rules;
}

void MatchTable::Erase(Handle handle) {
  FlushQueue();
  if (!IsRecord(handle)) return;
  Meta& meta = MetaOf(handle);  // (meta_ does not grow while erasing)
  if (!meta.live) return;
  const uint64_t hash = meta.hash;
  const BucketView& array = written_;
  size_t bucket;
  int slot;
  // A primary record is found by its record index alone, without loading its key; a duplicate by the key,
  // which is the key of its chain's primary, always placed.
  if (!SlotHolding(array, handle, hash, &bucket, &slot)) FindSlot(RecordKey(handle), hash, &bucket, &slot);
  Bucket& bk = array.buckets[bucket];
  const uint32_t primary = bk.record[slot].load(std::memory_order_relaxed);
  if (primary == handle) {
    const uint32_t next = meta.next_duplicate;
    if (next != kNone) {
      MetaOf(next).prev_duplicate = meta.prev_duplicate;       // the chain's last record
      bk.record[slot].store(next, std::memory_order_release);  // the next-oldest takes over
    } else {
      // No new reader reaches the record once its index is gone; the empty signature frees the slot.
      bk.record[slot].store(kNone, std::memory_order_release);
      bk.signature[slot].store(0, std::memory_order_release);
      for (size_t p = hash & array.mask; p != bucket; p = (p + 1) & array.mask) {
        array.buckets[p].overflow.fetch_sub(1, std::memory_order_release);
      }
      --distinct_keys_;
      if (CountSummaryKey(meta.summary_bit, -1) == 1) stale_summary_ |= uint64_t{1} << meta.summary_bit;
    }
  } else {
    const uint32_t prev = meta.prev_duplicate;
    MetaOf(prev).next_duplicate = meta.next_duplicate;
    MetaOf(meta.next_duplicate != kNone ? meta.next_duplicate : primary).prev_duplicate = prev;
  }
  // A reader may still hold the record: it is reused only once none can.
  meta = {reclaimer_ != nullptr ? reclaimer_->Stamp() : 0, nullptr, 0, kNone, false, 0, kNone};
  (retired_tail_ == kNone ? retired_head_ : MetaOf(retired_tail_).next_duplicate) = handle;
  retired_tail_ = handle;
  --live_records_;
}

}  // namespace drsim::hw
