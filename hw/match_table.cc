#include "hw/match_table.h"

#include <algorithm>
#include <cstring>

namespace drsim::hw {
namespace {

constexpr uint64_t kMul1 = 0x9e3779b97f4a7c15ull;
constexpr uint64_t kMul2 = 0xbf58476d1ce4e5b9ull;

inline uint64_t Mix(uint64_t h) {
  h ^= h >> 31;
  h *= kMul2;
  h ^= h >> 29;
  return h;
}

size_t NextPowerOfTwo(size_t n) {
  size_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

}  // namespace

MatchTable::MatchTable(size_t key_words)
    : key_words_(key_words), stride_(key_words + sizeof(const RuleRecord*) / sizeof(uint32_t)) {
  Rebuild(1);
}

uint64_t MatchTable::Hash(const uint32_t* key) const {
  uint64_t h = key_words_ * kMul1;
  size_t i = 0;
  for (; i + 1 < key_words_; i += 2) {
    uint64_t w;
    std::memcpy(&w, key + i, sizeof w);
    h = Mix(h ^ (w * kMul1));
  }
  if (i < key_words_) h = Mix(h ^ (key[i] * kMul1));
  return Mix(h + kMul2);
}

const RuleRecord* MatchTable::RecordRule(uint32_t record) const {
  const RuleRecord* rule;
  std::memcpy(&rule, RecordKey(record) + key_words_, sizeof rule);
  return rule;
}

void MatchTable::SetRecordRule(uint32_t record, const RuleRecord* rule) {
  std::memcpy(RecordKey(record) + key_words_, &rule, sizeof rule);
}

bool MatchTable::KeyEquals(uint32_t record, const uint32_t* key) const {
  // (A zero-length key may come as a null pointer, which memcmp must not be given.)
  return key_words_ == 0 || std::memcmp(RecordKey(record), key, key_words_ * sizeof(uint32_t)) == 0;
}

bool MatchTable::FindSlot(const uint32_t* key, uint64_t hash, size_t* bucket, int* slot) const {
  const uint16_t sig = Signature(hash);
  size_t b = hash & bucket_mask_;
  for (size_t probes = 0; probes <= bucket_mask_; ++probes) {
    const Bucket& bk = buckets_[b];
    for (int s = 0; s < kSlotsPerBucket; ++s) {
      if (bk.sig[s] == sig && bk.record[s] != kNone && KeyEquals(bk.record[s], key)) {
        *bucket = b;
        *slot = s;
        return true;
      }
    }
    if (bk.overflow == 0) return false;
    b = (b + 1) & bucket_mask_;
  }
  return false;
}

const RuleRecord* MatchTable::Find(const uint32_t* key, uint64_t hash) const {
  size_t bucket;
  int slot;
  if (!FindSlot(key, hash, &bucket, &slot)) return nullptr;
  return RecordRule(buckets_[bucket].record[slot]);
}

uint32_t MatchTable::AllocateRecord(const uint32_t* key, const RuleRecord* rule, uint64_t hash) {
  uint32_t record;
  if (!free_records_.empty()) {
    record = free_records_.back();
    free_records_.pop_back();
  } else {
    record = static_cast<uint32_t>(meta_.size());
    meta_.push_back({});
    records_.resize(records_.size() + stride_);
  }
  if (key_words_ != 0) std::memcpy(RecordKey(record), key, key_words_ * sizeof(uint32_t));
  SetRecordRule(record, rule);
  meta_[record] = {hash, kNone, true};
  ++live_records_;
  return record;
}

bool MatchTable::Place(uint32_t record, uint64_t hash) {
  size_t b = hash & bucket_mask_;
  for (size_t probes = 0; probes <= bucket_mask_; ++probes) {
    Bucket& bk = buckets_[b];
    for (int s = 0; s < kSlotsPerBucket; ++s) {
      if (bk.record[s] == kNone) {
        bk.record[s] = record;
        bk.sig[s] = Signature(hash);
        // Every bucket passed on the way now has one more key beyond it.
        for (size_t p = hash & bucket_mask_; p != b; p = (p + 1) & bucket_mask_) ++buckets_[p].overflow;
        return true;
      }
    }
    b = (b + 1) & bucket_mask_;
  }
  return false;
}

void MatchTable::Rebuild(size_t buckets) {
  std::unique_ptr<Bucket[]> old = std::move(buckets_);
  size_t old_count = old ? bucket_mask_ + 1 : 0;
  buckets_.reset(new Bucket[buckets]);
  for (size_t i = 0; i < buckets; ++i) {
    std::memset(buckets_[i].sig, 0, sizeof buckets_[i].sig);
    std::fill(std::begin(buckets_[i].record), std::end(buckets_[i].record), kNone);
    buckets_[i].overflow = 0;
  }
  bucket_mask_ = buckets - 1;
  // Re-place every primary record; duplicate chains hang off their primary and move with it.
  for (size_t i = 0; i < old_count; ++i) {
    for (int s = 0; s < kSlotsPerBucket; ++s) {
      uint32_t record = old[i].record[s];
      if (record != kNone) Place(record, meta_[record].hash);
    }
  }
}

void MatchTable::Reserve(size_t rules) {
  size_t needed = NextPowerOfTwo((rules * 4 / 3 + kSlotsPerBucket - 1) / kSlotsPerBucket);
  if (needed > bucket_count()) Rebuild(needed);
}

MatchTable::Handle MatchTable::Insert(const uint32_t* key, const RuleRecord* rule) {
  const uint64_t hash = Hash(key);
  size_t bucket;
  int slot;
  if (FindSlot(key, hash, &bucket, &slot)) {
    // Duplicate: queue behind the existing rules with this key.
    uint32_t record = AllocateRecord(key, rule, hash);
    uint32_t tail = buckets_[bucket].record[slot];
    while (meta_[tail].next_duplicate != kNone) tail = meta_[tail].next_duplicate;
    meta_[tail].next_duplicate = record;
    return record;
  }
  if (!fixed_size_ && (distinct_keys_ + 1) * 4 > slot_capacity() * 3) Rebuild(bucket_count() * 2);
  uint32_t record = AllocateRecord(key, rule, hash);
  while (!Place(record, hash)) Rebuild(bucket_count() * 2);  // only a full fixed-size table gets here
  ++distinct_keys_;
  return record;
}

void MatchTable::Erase(Handle handle) {
  if (handle >= meta_.size() || !meta_[handle].live) return;
  const uint64_t hash = meta_[handle].hash;
  size_t bucket;
  int slot;
  // The key of `handle` is the key of its chain's primary, which is always placed.
  FindSlot(RecordKey(handle), hash, &bucket, &slot);
  Bucket& bk = buckets_[bucket];
  uint32_t primary = bk.record[slot];
  if (primary == handle) {
    uint32_t next = meta_[handle].next_duplicate;
    if (next != kNone) {
      bk.record[slot] = next;  // the next-oldest duplicate takes over the slot
    } else {
      bk.record[slot] = kNone;
      bk.sig[slot] = 0;
      for (size_t p = hash & bucket_mask_; p != bucket; p = (p + 1) & bucket_mask_) --buckets_[p].overflow;
      --distinct_keys_;
    }
  } else {
    uint32_t prev = primary;
    while (meta_[prev].next_duplicate != handle) prev = meta_[prev].next_duplicate;
    meta_[prev].next_duplicate = meta_[handle].next_duplicate;
  }
  meta_[handle] = {0, kNone, false};
  free_records_.push_back(handle);
  --live_records_;
}

}  // namespace drsim::hw
