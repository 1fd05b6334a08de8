// MatchTable: the hashed exact-match table of one matcher. Keys are definer outputs (a fixed number of
// 32-bit words per table); each key maps to the rules inserted with it, oldest first.
//
// Layout, built for the lookup path:
//  - buckets are one cache line: 8 slots of (16-bit signature, 32-bit record index) and an overflow count;
//    a key lives in its home bucket or, when that is full, in the next ones (linear probing over buckets;
//    the overflow count of each bucket passed says whether a lookup must continue past it);
//  - records are contiguous (key words, then the rule pointer), so a hit costs the bucket line and one
//    record line; the 16-bit signature filters other keys before any key compare.
//
// Duplicates (equal keys) follow rdma-core: the newer rule is queued behind the older one, which keeps
// winning until it is erased. The table grows by doubling at 3/4 load; it never loses or reorders rules.
// A fixed-size table (set_layout without RESIZABLE) keeps its size until it is completely full.
//
// Not thread-safe: callers serialise mutations, and lookups must not run concurrently with them.
#ifndef DRSIM_HW_MATCH_TABLE_H_
#define DRSIM_HW_MATCH_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace drsim::hw {

struct RuleRecord;

class MatchTable {
 public:
  using Handle = uint32_t;

  explicit MatchTable(size_t key_words);
  MatchTable(const MatchTable&) = delete;
  MatchTable& operator=(const MatchTable&) = delete;

  size_t key_words() const { return key_words_; }
  size_t size() const { return live_records_; }  // rules, duplicates included
  size_t distinct_keys() const { return distinct_keys_; }
  size_t bucket_count() const { return bucket_mask_ + 1; }
  size_t slot_capacity() const { return bucket_count() * kSlotsPerBucket; }

  uint64_t Hash(const uint32_t* key) const;

  // The rule that wins for `key` (the oldest inserted with it), or nullptr. `hash` must be Hash(key).
  const RuleRecord* Find(const uint32_t* key, uint64_t hash) const;
  const RuleRecord* Find(const uint32_t* key) const { return Find(key, Hash(key)); }

  // Adds `rule` under `key`; an older rule with the same key keeps precedence. Never fails.
  Handle Insert(const uint32_t* key, const RuleRecord* rule);

  // The key `handle` was inserted with (key_words() words). `handle` must not have been erased.
  const uint32_t* key(Handle handle) const { return RecordKey(handle); }

  // Removes one inserted rule. The next rule queued under the same key, if any, takes its place.
  void Erase(Handle handle);

  // Sizes the table for `rules` distinct keys at the target load (never shrinks below what it holds).
  void Reserve(size_t rules);
  // A fixed-size table does not grow at 3/4 load, only when no slot is left.
  void set_fixed_size(bool fixed) { fixed_size_ = fixed; }
  bool fixed_size() const { return fixed_size_; }

 private:
  static constexpr int kSlotsPerBucket = 8;
  static constexpr uint32_t kNone = 0xffffffffu;

  struct alignas(64) Bucket {
    uint16_t sig[kSlotsPerBucket];
    uint32_t record[kSlotsPerBucket];  // kNone = empty
    uint32_t overflow;                 // keys whose probe passed this bucket
  };
  // Control-path bookkeeping of a record, kept apart from the lookup-path records.
  struct Meta {
    uint64_t hash;
    uint32_t next_duplicate;  // FIFO chain of rules with the same key
    bool live;
  };

  uint32_t* RecordKey(uint32_t record) { return &records_[record * stride_]; }
  const uint32_t* RecordKey(uint32_t record) const { return &records_[record * stride_]; }
  const RuleRecord* RecordRule(uint32_t record) const;
  void SetRecordRule(uint32_t record, const RuleRecord* rule);
  bool KeyEquals(uint32_t record, const uint32_t* key) const;
  static uint16_t Signature(uint64_t hash) { return static_cast<uint16_t>(hash >> 48); }

  uint32_t AllocateRecord(const uint32_t* key, const RuleRecord* rule, uint64_t hash);
  // Bucket index and slot of the primary record holding `key`, or false.
  bool FindSlot(const uint32_t* key, uint64_t hash, size_t* bucket, int* slot) const;
  // Places a primary record (distinct key) in the first free slot from its home bucket; false when full.
  bool Place(uint32_t record, uint64_t hash);
  void Rebuild(size_t buckets);

  size_t key_words_;
  size_t stride_;  // 32-bit words per record: key, then the rule pointer (2 words)
  std::unique_ptr<Bucket[]> buckets_;
  size_t bucket_mask_ = 0;
  std::vector<uint32_t> records_;
  std::vector<Meta> meta_;
  std::vector<uint32_t> free_records_;
  size_t live_records_ = 0;
  size_t distinct_keys_ = 0;
  bool fixed_size_ = false;
};

}  // namespace drsim::hw

#endif  // DRSIM_HW_MATCH_TABLE_H_
