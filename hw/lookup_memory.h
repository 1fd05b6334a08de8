// Memory for what the data path reads on every lookup: match-table buckets and records, index nodes and
// entries, matchers, and the rule objects behind them. A million-rule table read through 4 KiB pages spends
// its lookups on TLB misses and page walks, so large blocks come straight from the kernel, 2 MiB aligned and
// advised as transparent huge pages (advice only: where the kernel has none, they are ordinary pages). While
// a HugePageStocking lives (huge_page_stock.h), those pages come from a stock another thread faults in.
//
// Small blocks come from a process-wide SmallBlockArena on such pages too: an ACL's thousands of small
// matchers otherwise spread their objects and tables over tens of megabytes of 4 KiB heap pages, and every
// rule update and lookup in them pays a TLB miss besides each cache miss (huge pages spare those:
// bench/README.md measures rule updates both ways). Under AddressSanitizer small blocks come from the heap
// instead, so that its overflow and leak checks cover them.
//
// SlabPool hands out objects of one size packed into such 2 MiB slabs, so objects created together
// (a table's rules) share a few huge pages instead of scattering over the heap. Freed objects go back to
// the pool for reuse; slabs are returned to the kernel only when the pool is destroyed. Under
// AddressSanitizer a freed object is poisoned until it is handed out again, so use after free is still
// caught.
#ifndef DRSIM_HW_LOOKUP_MEMORY_H_
#define DRSIM_HW_LOOKUP_MEMORY_H_

#include <array>
#include <cstddef>
#include <mutex>
#include <vector>

namespace drsim::hw {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// `bytes` of uninitialised memory, 64-byte aligned: below kHugePageBytes a block of the process's
// SmallBlockArena (of the heap, under AddressSanitizer); from it on, freshly mapped, huge-page aligned and
// advised. Throws std::bad_alloc when out of memory. Release with FreeLookupMemory and the same `bytes`.
void* AllocateLookupMemory(size_t bytes);
void FreeLookupMemory(void* p, size_t bytes);
// Bytes of lookup memory allocated and not freed, in the process (blocks at 64-byte steps, huge pages
// whole; what the arena keeps for reuse not counted): for benches that report memory.
size_t LookupMemoryInUse();

// An allocator of lookup memory for standard containers (a match table's bookkeeping of its records, the
// index's pair map).
template <typename T>
struct LookupAllocator {
  using value_type = T;
  LookupAllocator() = default;
  template <typename U>
  LookupAllocator(const LookupAllocator<U>&) {}  // NOLINT: converting, as allocators are
  T* allocate(size_t n) { return static_cast<T*>(AllocateLookupMemory(n * sizeof(T))); }
  void deallocate(T* p, size_t n) { FreeLookupMemory(p, n * sizeof(T)); }
  friend bool operator==(const LookupAllocator&, const LookupAllocator&) { return true; }
  friend bool operator!=(const LookupAllocator&, const LookupAllocator&) { return false; }
};
static_assert(alignof(std::max_align_t) <= 64, "lookup memory is 64-byte aligned");
// A base that puts the objects a class makes with `new` in lookup memory (an empty base: no bytes).
struct InLookupMemory {
  static void* operator new(size_t bytes) { return AllocateLookupMemory(bytes); }
  static void operator delete(void* p, size_t bytes) { FreeLookupMemory(p, bytes); }
};

// Writes to every page of the `bytes` at `p` (memory no one reads yet), so that their page faults and the
// kernel's zeroing happen now rather than on the data path's first use: for memory reserved ahead of rules
// the caller announced.
void TouchPages(void* p, size_t bytes);

// Blocks of 64 bytes up to kHugePageBytes, in size classes (64-byte steps to 1 KiB, then four a doubling:
// less than a fifth of a block past 1 KiB is padding), cut in the order they are asked for from 2 MiB slabs
// (AllocateLookupMemory's), so that the blocks of an object made at once (a matcher, its table and its index
// state) lie together. A freed block serves the next block of its class; what a slab has left when a block
// does not fit goes to the free lists, in blocks of the largest classes it holds. Slabs go back to the kernel
// only with the arena, which for the process-wide one is never. Thread-safe (one mutex: blocks are taken when
// tables and index nodes grow, not per lookup).
class SmallBlockArena {
 public:
  static constexpr size_t kMaxBytes = kHugePageBytes;
  SmallBlockArena() = default;
  ~SmallBlockArena();  // every block goes with it
  SmallBlockArena(const SmallBlockArena&) = delete;
  SmallBlockArena& operator=(const SmallBlockArena&) = delete;

  // `bytes` (1 to kMaxBytes) of uninitialised memory, 64-byte aligned; throws std::bad_alloc when out of
  // memory. Give it back with Free and the same `bytes`.
  void* Allocate(size_t bytes);
  void Free(void* p, size_t bytes);
  // The bytes a block of `bytes` takes (its class's size).
  static size_t BlockBytes(size_t bytes) { return ClassBytes(ClassOf(bytes)); }

 private:
  static constexpr int kClasses = 16 + 4 * 11;  // to 1 KiB by 64, then 4 classes for each doubling to 2 MiB
  static int ClassOf(size_t bytes);
  static size_t ClassBytes(int c);
  struct FreeBlock {
    FreeBlock* next;
  };
  void PushFree(void* p, int c);

  std::mutex mu_;
  std::array<FreeBlock*, kClasses> free_{};
  char* next_ = nullptr;  // the rest of the newest slab
  char* end_ = nullptr;
  std::vector<void*> slabs_;
};

// Objects of `object_size` bytes (rounded up to 16-byte alignment) in huge-page slabs. Not thread-safe: its
// owner serialises the calls (a domain's rule pool is used under the domain's lock, which rule creation
// holds anyway: a lock of its own would cost every rule made or destroyed two more atomic operations).
class SlabPool {
 public:
  explicit SlabPool(size_t object_size);
  // Every object must have been freed (their memory goes with the slabs).
  ~SlabPool();
  SlabPool(const SlabPool&) = delete;
  SlabPool& operator=(const SlabPool&) = delete;

  // Uninitialised memory for one object; throws std::bad_alloc when out of memory.
  void* Allocate();
  // Maps and touches slabs now for `objects` more objects than the newest slab has left (freed objects
  // are not counted), so that that many Allocate() calls map no memory. Throws std::bad_alloc.
  void Reserve(size_t objects);
  // Returns memory from Allocate() of this pool.
  void Free(void* p);

 private:
  struct FreeObject {
    FreeObject* next;
  };

  // A new slab, kept for the destructor.
  char* MapSlab();

  const size_t object_size_;
  FreeObject* free_ = nullptr;  // freed objects, most recent first
  char* next_ = nullptr;        // the rest of the newest slab
  char* end_ = nullptr;
  std::vector<void*> slabs_;  // every slab, for the destructor
  std::vector<char*> spare_;  // reserved slabs not started yet
};

}  // namespace drsim::hw

#endif  // DRSIM_HW_LOOKUP_MEMORY_H_
