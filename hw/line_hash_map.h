// LineHashMap: a hash map for a writer that requests its lookups ahead, one cache line a slot.
//
// A writer that knows its next keys a few steps ahead (a batch of rule updates) starts loading each key's
// slot early, so that the find or erase that comes later does not wait for memory. That takes knowing which
// line the key is in from its hash alone. In absl::flat_hash_map a probe spans a group of sixteen slots, and
// its prefetch loads the group's first slot: a key is mostly in another line of the group. Here every slot is
// a line of its own, probed linearly, and the table is at most half full, so that a key is mostly in the line
// its hash names, or the next (Request loads both). Erase moves the slots after the erased one back (no
// tombstones), so that the table stays as short to probe as if filled afresh while keys come and go.
//
// The slots are in lookup memory (huge pages). Not thread-safe: one writer, no concurrent readers. `Key`
// and `Value` are trivially copyable; a slot holds both and a flag in 64 bytes.
#ifndef DRSIM_HW_LINE_HASH_MAP_H_
#define DRSIM_HW_LINE_HASH_MAP_H_

#include <cstddef>
#include <new>
#include <type_traits>

#include "absl/hash/hash.h"
#include "hw/lookup_memory.h"

namespace drsim::hw {

template <typename Key, typename Value, typename Hash = absl::Hash<Key>>
class LineHashMap {
 public:
  LineHashMap() = default;
  LineHashMap(const LineHashMap&) = delete;
  LineHashMap& operator=(const LineHashMap&) = delete;
  ~LineHashMap() {
    if (slots_ != nullptr) FreeLookupMemory(slots_, capacity_ * sizeof(Slot));
  }

  size_t size() const { return size_; }
  // Starts loading the line where `key`'s slot mostly is, and the next one (an erase reads the slot after
  // the key's, and a find goes on there when the key's home holds another). Changes nothing.
  void Request(const Key& key) const {
    if (capacity_ == 0) return;
    const size_t home = Home(key);
    __builtin_prefetch(&slots_[home]);
    __builtin_prefetch(&slots_[Next(home)]);
  }
  // `key`'s value, or nullptr. Valid until the next call that adds or erases a key.
  Value* Find(const Key& key) {
    const size_t at = SlotOf(key);
    return at == kNone ? nullptr : &slots_[at].value;
  }
  // `key`'s value, a value-initialised one added if it had none. Valid until the next call that adds or
  // erases a key. Throws std::bad_alloc when the table must grow and memory is out (nothing changes then).
  Value& At(const Key& key) {
    if (Value* value = Find(key)) return *value;
    if (2 * (size_ + 1) > capacity_) Grow();
    return Add(key, Value{});
  }
  // Removes `key` if it is in.
  void Erase(const Key& key) {
    size_t gap = SlotOf(key);
    if (gap == kNone) return;
    // A slot after the gap, up to the first empty one, moves into it when its home is not after the gap:
    // every key stays reachable from its home without passing an empty slot.
    const size_t mask = capacity_ - 1;
    for (size_t at = Next(gap); slots_[at].used; at = Next(at)) {
      if (((at - Home(slots_[at].key)) & mask) >= ((at - gap) & mask)) {
        slots_[gap] = slots_[at];
        gap = at;
      }
    }
    slots_[gap].used = false;
    --size_;
  }

 private:
  struct alignas(64) Slot {
    Key key;
    bool used;
    Value value;
  };
  static_assert(sizeof(Slot) == 64, "a slot is one cache line: Key and Value take 63 bytes at most");
  static_assert(std::is_trivially_copyable_v<Slot> && std::is_trivially_destructible_v<Slot>);
  static constexpr size_t kNone = ~size_t{0};
  static constexpr size_t kFirstCapacity = 64;

  size_t Home(const Key& key) const { return Hash{}(key) & (capacity_ - 1); }
  size_t Next(size_t at) const { return (at + 1) & (capacity_ - 1); }
  size_t SlotOf(const Key& key) const {
    if (capacity_ == 0) return kNone;
    for (size_t at = Home(key);; at = Next(at)) {
      if (!slots_[at].used) return kNone;
      if (slots_[at].key == key) return at;
    }
  }
  // Files `key` (not in; there is room) with `value`.
  Value& Add(const Key& key, const Value& value) {
    size_t at = Home(key);
    while (slots_[at].used) at = Next(at);
    slots_[at].key = key;
    slots_[at].used = true;
    slots_[at].value = value;
    ++size_;
    return slots_[at].value;
  }
  // Twice the slots (kFirstCapacity at first), every key filed again.
  void Grow() {
    const size_t capacity = capacity_ == 0 ? kFirstCapacity : 2 * capacity_;
    auto* fresh = static_cast<Slot*>(AllocateLookupMemory(capacity * sizeof(Slot)));
    for (size_t i = 0; i < capacity; ++i) new (&fresh[i]) Slot{};
    Slot* old = slots_;
    const size_t old_capacity = capacity_;
    slots_ = fresh;
    capacity_ = capacity;
    size_ = 0;
    for (size_t i = 0; i < old_capacity; ++i) {
      if (old[i].used) Add(old[i].key, old[i].value);
    }
    if (old != nullptr) FreeLookupMemory(old, old_capacity * sizeof(Slot));
  }

  Slot* slots_ = nullptr;
  size_t capacity_ = 0;  // a power of two, or 0
  size_t size_ = 0;
};

}  // namespace drsim::hw

#endif  // DRSIM_HW_LINE_HASH_MAP_H_
