// MatchTable: the hashed exact-match table of one matcher.
//
// What
//   Keys are definer outputs (a fixed number of 32-bit words per table); each key maps to the rules
//   (RuleRecords) inserted with it, oldest first. Duplicates (equal keys) follow rdma-core: the newer rule
//   waits behind the older one, which keeps winning until it is erased. The table grows by doubling at 4/5
//   load; it never loses or reorders rules. A fixed-size table (set_layout without RESIZABLE) keeps its size
//   until it is completely full.
//
// How
//   The layout is built for the lookup path:
//    - buckets are one cache line: 10 slots, each a 16-bit signature and a 32-bit record index (the
//      signatures first, then an overflow count, then the record indexes), so a million keys at 4/5 load
//      fill 8 MiB of buckets, the size of rte_hash's; a key lives in its home bucket or, when that is full,
//      in the next ones (linear probing over buckets; the overflow count of each bucket passed says whether
//      a lookup must continue past it);
//    - records (the RuleRecord itself, then the key words) sit in chunks that double in size (8 records,
//      then 16, 32, ...), so a matcher holding a handful of rules costs a few hundred bytes while a hit
//      costs the bucket line and one record line; the signature filters other keys (all but one in
//      65,535) before any key compare. Bucket arrays and chunks of 2 MiB or more are backed by transparent
//      huge pages where the kernel offers them (madvise), as a million-rule table otherwise spends its
//      lookups on TLB misses;
//    - a 64-bit summary in the table's first line, one bit per group of values of one chosen key word (the
//      summary word): Find refuses a key whose bit no key sets without loading a bucket, and a walk through
//      an ACL's thousands of small matchers, which misses in most of them, refuses a packet on that one
//      word (MayHold) without extracting or hashing the whole key. A bit whose last key went is cleared when
//      the table next sets a bit, so that a rule deleted and put back (an update) writes no line lookups
//      read first.
//
//   Queued inserts (InsertQueued, in tables of 2^14 buckets or more): a rule's record is written at once,
//   its bucket slot by a later write call into the table, once the bucket (requested now) has loaded;
//   meanwhile lookups that miss in the buckets find it in the table's queue of such records (at most
//   kQueueCapacity, one a key). A million inserts in a row then overlap their bucket misses, as rte_hash's
//   shorter inserts do, instead of each waiting on its own.
//
// Thread-safety
//   One writer at a time (the caller serialises Insert, InsertQueued, FlushQueue, Erase and Reserve), any
//   number of concurrent Find()s inside read sections of `reclaimer` (hw/reclaimer.h). A writer fills a
//   record before publishing it with one store of its slot's record index, so a reader finds a rule
//   completely or not at all (the signature, stored after it, only filters: a reader compares the record's
//   key); growing builds a new bucket array and publishes it whole; erased records and replaced arrays are
//   reused or freed only once no reader can still hold them. A queued record is published the same way, by
//   the store of its queue slot, and leaves the queue only after its bucket slot is written and the queue's
//   count of flushed records moves on: a lookup that misses in both reads that count before and after, and
//   looks again if it moved, so a rule once found is never missed again. Without a reclaimer, Find() must
//   not overlap writes.
#ifndef DRSIM_HW_MATCH_TABLE_H_
#define DRSIM_HW_MATCH_TABLE_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <utility>
#include <vector>

#include "hw/action_program.h"
#include "hw/lookup_memory.h"
#include "hw/reclaimer.h"

namespace drsim::hw {

class MatchTable {
 public:
  using Handle = uint32_t;
  static constexpr int kSlotsPerBucket = 10;
  // The table grows when a new key would take it past kMaxLoadNumerator / kMaxLoadDenominator of its slots.
  static constexpr size_t kMaxLoadNumerator = 4;
  static constexpr size_t kMaxLoadDenominator = 5;

  // `key_words`: at most kMatchParamBytes / 4 (a definer's key). `reclaimer`: where replaced arrays and
  // erased records wait for readers (nullptr: no concurrent readers). `summary_word`: the index of the key
  // word the summary is built on (below key_words, or 0 for an empty key, whose summary word reads as 0).
  explicit MatchTable(size_t key_words, Reclaimer* reclaimer = nullptr, size_t summary_word = 0);
  ~MatchTable();
  MatchTable(const MatchTable&) = delete;
  MatchTable& operator=(const MatchTable&) = delete;

  size_t key_words() const { return key_words_; }
  size_t size() const { return live_records_; }  // rules, duplicates included
  size_t distinct_keys() const {
    return distinct_keys_;
  }  // of the rules placed (InsertQueued's, once flushed)
  size_t bucket_count() const { return buckets_.load(std::memory_order_relaxed)->mask + 1; }
  size_t slot_capacity() const { return bucket_count() * kSlotsPerBucket; }

  uint64_t Hash(const uint32_t* key) const;

  // The rule that wins for `key` (the oldest inserted with it), or nullptr; it stays valid while the
  // caller's read section lasts (or until the next write, without a reclaimer). `hash` must be Hash(key).
  // A key whose summary bit (below) is clear is refused before any bucket is loaded: a walk through many
  // small matchers (an ACL's) mostly misses, and then reads only the matchers themselves.
  const RuleRecord* Find(const uint32_t* key, uint64_t hash) const;
  // False when no key in the table has `word` as its summary word (then Find misses every key with it);
  // true when one may. Valid in a read section like Find.
  bool MayHold(uint32_t word) const { return MayHoldIn(summary(), word); }
  // MayHold in two steps, for many words against one instant of the table: MayHoldIn(summary(), word).
  uint64_t summary() const { return summary_.load(std::memory_order_acquire); }
  static bool MayHoldIn(uint64_t summary, uint32_t word) { return (summary >> SummaryBit(word) & 1) != 0; }
  // Starts loading the bucket `hash` falls in, for a Find() soon after (a burst's lookups overlap).
  inline void Prefetch(uint64_t hash) const;
  // The same for the writer, before an Insert or a writer's Find: through its own copy of the bucket array's
  // place, not the published array's header (one cold line fewer for a rule insert into a cold matcher).
  void PrefetchForWrite(uint64_t hash) const { __builtin_prefetch(&written_.buckets[hash & written_.mask]); }
  // A record PrefetchRecords found, for FindFrom: where its words are (nullptr: none).
  using Candidate = const uint32_t*;
  // Starts loading the first record the home bucket of `hash` holds under its signature (after Prefetch),
  // and returns it.
  Candidate PrefetchRecords(uint64_t hash) const;
  // Find(key, hash), trying first `candidate` from PrefetchRecords(hash) in the same read section: the bucket
  // is not scanned again when it holds the key (a burst's lookups end here).
  const RuleRecord* FindFrom(const uint32_t* key, uint64_t hash, Candidate candidate) const {
    return FindFrom(key, hash, candidate, key_words_);
  }
  const RuleRecord* Find(const uint32_t* key) const { return Find(key, Hash(key)); }
  // Find for the writer (Insert's caller, as Insert's are serialised): through the writer's copy of the
  // bucket array, without the summary, so that a rule's insert reads no line a lookup reads first.
  const RuleRecord* FindForWriter(const uint32_t* key, uint64_t hash) const;
  // Writers only: how many rules the table holds with `key` (hashed `hash`), duplicates included.
  size_t CountForWriter(const uint32_t* key, uint64_t hash) const;
  // Find() of `n` keys, key i at keys + i * key_words(), with their loads overlapped as a NIC's burst
  // overlaps them: every key hashed and its bucket requested, then every bucket scanned and the record
  // under the key's signature requested, then every record compared; hits[i] = Find(key i). The table's
  // layout and key length are read once for the whole burst. Valid in a read section, like Find.
  void FindBurst(const uint32_t* keys, size_t n, const RuleRecord** hits) const;

  // Adds a copy of `rule` under `key`; an older rule with the same key keeps precedence. Throws
  // std::bad_alloc only when out of memory (a table holds at most 2^28 - 8 records).
  Handle Insert(const uint32_t* key, const RuleRecord& rule) { return Insert(key, Hash(key), rule); }
  // The same with `hash` = Hash(key) already known (and its bucket perhaps prefetched), and `owner`, the
  // caller's object for the rule (the driver's rule), kept with the writer's bookkeeping of its record:
  // owner() and ForEachRule give it back, so that the caller need not list its rules itself.
  Handle Insert(const uint32_t* key, uint64_t hash, const RuleRecord& rule, void* owner = nullptr);
  // Insert, the rule's bucket slot written later: by the kQueueCapacity-th queued insert after it, or by the
  // next other write call (Insert, Erase, Reserve, FlushQueue). Lookups find the rule as soon as this
  // returns, as after Insert, and it takes precedence as after Insert. The caller requests the bucket first
  // (PrefetchForWrite), a while before if it can: the insert that writes the slot then finds it loaded.
  // A table of fewer than kQueueFromBuckets buckets, whose buckets the caches hold, inserts at once.
  Handle InsertQueued(const uint32_t* key, uint64_t hash, const RuleRecord& rule, void* owner);
  // Writes the slots of every queued insert (a writer's call, like Insert). Never grows the table (each
  // queued key had its room when it was queued), so never throws; Erase calls it first.
  void FlushQueue();

  // The key `handle` was inserted with (key_words() words). `handle` must not have been erased.
  const uint32_t* key(Handle handle) const { return RecordKey(handle); }
  // The rule `handle` stands for, as lookups return it (its record: it never moves, and is reused only once
  // no reader can still hold it after the rule is erased). `handle` must not have been erased.
  const RuleRecord* rule(Handle handle) const { return RecordRule(handle); }
  // The number of `handle`'s record in the table (records are numbered from 0 as the table first takes them;
  // an erased rule's record comes back with its number), as a dump prints it.
  static uint32_t RecordNumber(Handle handle) { return NumberOf(handle); }
  // Writers only (like Insert): the owner `handle` (not erased) was inserted with; f(handle, owner) for each
  // rule in the table, duplicates included, by record number; and the rules' handles in the order they were
  // inserted (as a dump lists them).
  void* owner(Handle handle) const { return meta_[NumberOf(handle)].owner; }
  template <typename F>
  void ForEachRule(F f) const {
    for (uint32_t number = 0; number < meta_.size(); ++number) {
      if (meta_[number].live) f(Handle{IndexOf(number)}, meta_[number].owner);
    }
  }
  std::vector<Handle> InInsertionOrder() const;

  // Removes one inserted rule. The next rule queued under the same key, if any, takes its place.
  void Erase(Handle handle);
  // Writers only (like Erase): starts loading what Erase(handle) reads first, the record's bookkeeping and
  // the bucket of `hash` (the key's Hash, or its low 32 bits), so that a delete waits on them together.
  // `handle` must not have been erased.
  void PrefetchForErase(Handle handle, uint64_t hash) const {
    __builtin_prefetch(&meta_[NumberOf(handle)]);
    PrefetchForWrite(hash);
  }

  // Writers only: starts loading the record and bookkeeping the next Insert takes when the table reuses a
  // retired record, and the bookkeeping the next Erase links its record to (the last retired one's).
  void PrefetchForReuse() const {
    if (retired_head_ == kNone) return;
    __builtin_prefetch(&meta_[NumberOf(retired_head_)]);
    __builtin_prefetch(RecordWords(retired_head_), 1);
    __builtin_prefetch(&meta_[NumberOf(retired_tail_)]);
  }

  // Sizes the table for `rules` distinct keys at the target load (never shrinks below what it holds), and
  // allocates and faults in the records of that many rules.
  void Reserve(size_t rules);
  // A fixed-size table does not grow at 4/5 load, only when no slot is left.
  void set_fixed_size(bool fixed) { fixed_size_ = fixed; }
  bool fixed_size() const { return fixed_size_; }

 private:
  static constexpr uint32_t kNone = 0xffffffffu;  // an empty slot's record index
  // Chunk c holds 8 << c records: those numbered [ChunkBase(c), ChunkBase(c + 1)) in the order they were
  // first taken. A record's index (in slots, handles and duplicate chains) is its chunk and its place there,
  // c << kPlaceBits | place, so that a lookup finds it with a shift, a mask and a multiply.
  static constexpr int kFirstChunkShift = 3;
  static constexpr int kPlaceBits = 27;
  static constexpr uint32_t kPlaceMask = (1u << kPlaceBits) - 1;
  static constexpr int kMaxChunks = kPlaceBits - kFirstChunkShift + 1;  // 2^28 - 8 records
  static constexpr size_t kRuleWords = sizeof(RuleRecord) / sizeof(uint32_t);
  static_assert(sizeof(RuleRecord) % 8 == 0 && alignof(RuleRecord) <= 8);
  static int ChunkOf(uint32_t number) { return 31 - __builtin_clz((number >> kFirstChunkShift) + 1); }
  static uint32_t ChunkBase(int chunk) { return ((1u << chunk) - 1) << kFirstChunkShift; }
  static uint32_t ChunkRecords(int chunk) { return 1u << (chunk + kFirstChunkShift); }
  // The index of the record numbered `number`, and back.
  static uint32_t IndexOf(uint32_t number) {
    const int chunk = ChunkOf(number);
    return static_cast<uint32_t>(chunk) << kPlaceBits | (number - ChunkBase(chunk));
  }
  static uint32_t NumberOf(uint32_t record) {
    return ChunkBase(record >> kPlaceBits) + (record & kPlaceMask);
  }
  size_t ChunkBytes(int chunk) const { return size_t{ChunkRecords(chunk)} * stride_ * sizeof(uint32_t); }
  // Allocates the next chunk (kMaxChunks must not be reached), its pages faulted in when `fault_in`.
  void AddChunk(bool fault_in);

  // A slot is empty when its signature is 0; its record index is then kNone, or that of a record being
  // placed there (Publish stores the index first).
  struct alignas(64) Bucket {
    std::atomic<uint16_t> signature[kSlotsPerBucket];
    std::atomic<uint32_t> overflow;  // keys whose probe passed this bucket
    std::atomic<uint32_t> record[kSlotsPerBucket];
  };
  static_assert(sizeof(Bucket) == 64 && offsetof(Bucket, overflow) == 2 * kSlotsPerBucket);
  // Where a bucket array is and its size.
  struct BucketView {
    size_t mask;
    Bucket* buckets;
  };
  // The records InsertQueued wrote whose slots are not written yet, oldest first from `head`; a key has at
  // most one. One line: lookups read the records, signatures and count, the writer all of it.
  static constexpr uint32_t kQueueCapacity = 8;
  // Tables of fewer buckets (1 MiB of them, a core's second-level cache here) file every insert at once.
  static constexpr size_t kQueueFromBuckets = size_t{1} << 14;
  struct alignas(64) Queue {
    Queue();
    std::atomic<uint32_t> record[kQueueCapacity];  // kNone: no record
    std::atomic<uint16_t> signature[kQueueCapacity];
    // Queued records placed so far (modulo 2^32), counted after each one's slot is written and before it
    // leaves the queue: a lookup that missed both between two equal readings of it missed no placed record.
    std::atomic<uint32_t> flushed{0};
    uint32_t head = 0;
    uint32_t count = 0;
  };
  static_assert(sizeof(Queue) == 64);
  // One published array (buckets_); it owns its buckets. In lookup memory: a lookup reads it before the
  // bucket. `queue`: the table's (set by the first InsertQueued, and passed on to each new array), or
  // nullptr.
  struct BucketArray : BucketView, InLookupMemory {
    explicit BucketArray(size_t count);
    ~BucketArray();
    BucketArray(const BucketArray&) = delete;
    BucketArray& operator=(const BucketArray&) = delete;
    std::atomic<Queue*> queue{nullptr};
  };
  // Control-path bookkeeping of a record, kept apart from the lookup-path records.
  struct alignas(32) Meta {
    uint64_t hash;            // retired: the reclaimer stamp taken when it was erased
    void* owner;              // Insert's
    uint32_t inserted;        // the rules inserted into the table before it (modulo 2^32)
    uint32_t next_duplicate;  // FIFO chain of rules with the same key; retired: the next retired record
    bool live;
    uint8_t summary_bit;  // SummaryBit of the key's summary word (an erase need not load the key)
    // The chain backwards: a duplicate's previous record; the primary's is the chain's last record (itself
    // when alone), so that a duplicate is appended, and any record erased, without walking the chain.
    uint32_t prev_duplicate;
  };
  static_assert(sizeof(Meta) == 32, "a record's bookkeeping stays half a cache line");

  // The summary bit of a summary word: the top bits of a multiplicative hash, which every bit of the word
  // moves (prefixes and ports differ in any of them).
  static int SummaryBit(uint32_t word) {
    return static_cast<int>(uint64_t{word} * 0x9e3779b97f4a7c15u >> 58);
  }
  int KeySummaryBit(const uint32_t* key) const {
    return SummaryBit(key_words_ == 0 ? 0 : key[summary_word_]);
  }
  // The top 16 bits of the hash (the low ones pick the bucket), never 0, an empty slot's signature.
  static uint16_t Signature(uint64_t hash) {
    const auto top = static_cast<uint16_t>(hash >> 48);
    return top + (top == 0);
  }
  // Which slots of `bk` hold signature `sig` (0: which are empty), as bit 2s for slot s.
  static uint32_t SlotsWithSignature(const Bucket& bk, uint16_t sig);
  // Makes `record` (filled) the one slot `s` of `bk` holds under `hash`: its index first, which publishes it,
  // then the signature lookups filter on.
  static void Publish(Bucket& bk, int s, uint64_t hash, uint32_t record) {
    bk.record[s].store(record, std::memory_order_release);
    bk.signature[s].store(Signature(hash), std::memory_order_release);
  }

  // A record's first word (its RuleRecord); the key follows the RuleRecord.
  uint32_t* RecordWords(uint32_t record) const {
    return chunks_[record >> kPlaceBits].load(std::memory_order_acquire) +
           size_t{record & kPlaceMask} * stride_;
  }
  // The rule and the key of the record at `words`.
  static const RuleRecord* RuleOf(const uint32_t* words) {
    return std::launder(reinterpret_cast<const RuleRecord*>(words));
  }
  static const uint32_t* KeyOf(const uint32_t* words) { return words + kRuleWords; }
  const RuleRecord* RecordRule(uint32_t record) const { return RuleOf(RecordWords(record)); }
  const uint32_t* RecordKey(uint32_t record) const { return KeyOf(RecordWords(record)); }
  // Two words at a time, without branches on the words: keys are a few words, and a call to memcmp costs
  // more than comparing them. `words`: a record's.
  bool KeyEquals(const uint32_t* words, const uint32_t* key) const {
    return KeysEqual(KeyOf(words), key, key_words_);
  }
  // Whether the `count`-word keys at `a` and `b` are equal (unrolled where `count` is a constant).
  static bool KeysEqual(const uint32_t* a, const uint32_t* b, size_t count) {
    auto pair = [](const uint32_t* at) {
      uint64_t v;
      std::memcpy(&v, at, sizeof v);
      return v;
    };
    uint64_t differ = 0;
    size_t i = 0;
    for (; i + 2 <= count; i += 2) differ |= pair(a + i) ^ pair(b + i);
    if (i < count) differ |= a[i] ^ b[i];
    return differ == 0;
  }

  // FindFrom with the key's length given (key_words(); a constant where the caller knows it).
  const RuleRecord* FindFrom(const uint32_t* key, uint64_t hash, Candidate candidate, size_t words) const {
    if (candidate != nullptr && KeysEqual(KeyOf(candidate), key, words)) return RuleOf(candidate);
    return Find(key, hash);
  }
  // Starts loading the first record `bk` (a bucket of an array loaded in the caller's read section) holds
  // under the signature of `hash`, and returns it.
  Candidate PrefetchRecordsIn(const Bucket& bk, uint64_t hash) const;

  // FindBurst for keys of `kWords` words (0: key_words_, read at run time), up to kMaxFindBurst keys.
  static constexpr size_t kMaxFindBurst = 64;
  template <size_t kWords>
  void FindBurstOf(const uint32_t* keys, size_t n, const RuleRecord** hits) const;

  // Starts loading the record at `words`: its line, and the next one only when the record reaches into it
  // (records of 8 or 16 words never do: chunks start on a line). A second prefetch of the same line is not
  // free: on a TLB miss it waits for the first one's page walk.
  void PrefetchRecord(const uint32_t* words) const {
    __builtin_prefetch(words);
    const uint32_t* last = words + stride_ - 1;
    if (((reinterpret_cast<uintptr_t>(words) ^ reinterpret_cast<uintptr_t>(last)) >> 6) != 0) {
      __builtin_prefetch(last);
    }
  }

  uint32_t AllocateRecord(const uint32_t* key, const RuleRecord& rule, uint64_t hash, void* owner);
  // A record for AllocateRecord: a retired one no reader can see any more, or a new one; `number` receives
  // its number.
  uint32_t TakeRecord(uint32_t* number);
  // The primary record holding `key` in `array` (a concurrent Rebuild may publish another: callers load
  // the array once), its bucket index and slot; kNone when absent.
  uint32_t Probe(const BucketView& array, const uint32_t* key, uint64_t hash, size_t* bucket,
                 int* slot) const;
  // Bucket index and slot of `array` holding `record` as a primary record placed under `hash`, or false.
  // Writers only (no acquire loads).
  static bool SlotHolding(const BucketView& array, uint32_t record, uint64_t hash, size_t* bucket, int* slot);
  // Bucket index and slot of the primary record holding `key`, or false.
  bool FindSlot(const uint32_t* key, uint64_t hash, size_t* bucket, int* slot) const;
  // The record `queue` holds under `key` (hashed `hash`), or kNone; for lookups and the writer.
  uint32_t QueuedHolding(const Queue& queue, const uint32_t* key, uint64_t hash) const;
  // Find for a table with a queue, on the buckets and then the queue, until no record was flushed meanwhile.
  const RuleRecord* FindWithQueue(const Queue& queue, const uint32_t* key, uint64_t hash) const;
  // The writer's queue, or nullptr (the published array's, which never changes once set).
  Queue* WrittenQueue() const {
    return has_queue_ ? buckets_.load(std::memory_order_relaxed)->queue.load(std::memory_order_relaxed)
                      : nullptr;
  }
  // Writes the slot of the oldest queued record (the queue holds one).
  void FlushOldestQueued(Queue& queue);
  // Writes the slot of `record` (filled by AllocateRecord), under the hash its bookkeeping keeps: behind the
  // rules of its key, if the table has any; else in a free slot, the table growing first if the key takes it
  // past its load.
  void PlaceRecord(uint32_t record);
  // Places a primary record (distinct key) in the first free slot from its home bucket of `array`; false
  // when full.
  static bool PlaceInFreeSlot(const BucketView& array, uint32_t record, uint64_t hash);
  void Rebuild(size_t buckets);

  // What lookups read first shares the table's first line, and what a writer reads of a small table (a rule
  // insert or delete in a cold matcher, which waits on each line it touches) the two after it, the first
  // record chunks' pointers included: in a CompiledMatcher (48 bytes into its first line) that is three
  // lines in all (CompiledMatcher checks where it puts the table, the constructor where chunks_ lies).
  // Bit SummaryBit(w) is set while a key with summary word w is in the table (first: a walk through many
  // matchers reads only this of most of their tables). Set before a key's slot is published, so a lookup
  // refused by it sees the table as it was before an insert or after an erase. A bit whose last key went
  // stays set (stale_summary_) until the table next sets a bit: a rule deleted and put back with its key, an
  // update of its actions, writes no line a lookup reads first (a stale bit only lets a lookup probe a
  // bucket in vain).
  std::atomic<uint64_t> summary_{0};
  std::atomic<BucketArray*> buckets_;
  uint16_t key_words_;
  uint16_t summary_word_;
  uint16_t stride_;          // 32-bit words per record: the RuleRecord, the key, padding to 8 bytes
  uint8_t chunk_count_ = 0;  // chunks allocated (the first entries)
  bool fixed_size_ : 1;
  bool has_queue_ : 1;  // InsertQueued has made the queue (a writer with none reads no further line)
  Reclaimer* reclaimer_;
  std::vector<Meta, LookupAllocator<Meta>> meta_;  // by record number (beside the records it keeps)
  Meta& MetaOf(uint32_t record) { return meta_[NumberOf(record)]; }
  // Whether `handle` is a record index this table has handed out.
  bool IsRecord(uint32_t handle) const {
    const uint32_t chunk = handle >> kPlaceBits;
    return chunk < static_cast<uint32_t>(chunk_count_) && (handle & kPlaceMask) < ChunkRecords(chunk) &&
           NumberOf(handle) < meta_.size();
  }
  // The writer's copy of *buckets_ (writers never wait on loading the published array's header).
  BucketView written_{};
  uint64_t stale_summary_ = 0;  // summary bits set that no key has any more
  uint32_t live_records_ = 0;   // (a table holds at most 2^28 - 8 records)
  uint32_t inserted_ = 0;       // rules inserted so far (modulo 2^32)
  uint32_t distinct_keys_ = 0;
  // Erased records, oldest first, linked through their Meta: reused once no reader can still hold them.
  uint32_t retired_head_ = kNone;
  uint32_t retired_tail_ = kNone;
  // Distinct keys per summary bit, four bits each (bit b in the low half of byte b / 2 when b is even),
  // saturating: a count that reaches kSummaryStuck stays, its bit set. (A large table's bits all stick; the
  // keys of a small matcher seldom share one bit fifteen times.)
  static constexpr int kSummaryStuck = 15;
  std::array<uint8_t, 32> summary_keys_{};
  // Adds `delta` (+1, or -1 for a key the count holds) to bit `bit`'s count unless it is stuck, and returns
  // the count before.
  int CountSummaryKey(int bit, int delta) {
    uint8_t& pair = summary_keys_[bit / 2];
    const int shift = bit % 2 * 4;
    const int keys = pair >> shift & 0xf;
    if (keys != kSummaryStuck) pair = static_cast<uint8_t>(pair + delta * (1 << shift));
    return keys;
  }
  // Record chunks; each pointer is written before any record of its chunk is published, and never changes.
  std::atomic<uint32_t*> chunks_[kMaxChunks] = {};
};

inline void MatchTable::Prefetch(uint64_t hash) const {
  const BucketArray& array = *buckets_.load(std::memory_order_acquire);
  __builtin_prefetch(&array.buckets[hash & array.mask]);
}

}  // namespace drsim::hw

#endif  // DRSIM_HW_MATCH_TABLE_H_
