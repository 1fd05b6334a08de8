// Memory for what the data path reads on every lookup: match-table buckets and records, and the rule
// objects behind them. A million-rule table read through 4 KiB pages spends its lookups on TLB misses
// and page walks, so large blocks come straight from the kernel, 2 MiB aligned and advised as
// transparent huge pages (advice only: where the kernel has none, they are ordinary pages).
//
// SlabPool hands out objects of one size packed into such 2 MiB slabs, so objects created together
// (a table's rules) share a few huge pages instead of scattering over the heap. Freed objects go back to
// the pool for reuse; slabs are returned to the kernel only when the pool is destroyed. Under
// AddressSanitizer a freed object is poisoned until it is handed out again, so use after free is still
// caught.
#ifndef DRSIM_HW_LOOKUP_MEMORY_H_
#define DRSIM_HW_LOOKUP_MEMORY_H_

#include <cstddef>
#include <vector>

namespace drsim::hw {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// `bytes` of uninitialised memory, 64-byte aligned; from kHugePageBytes on, freshly mapped, huge-page
// aligned and advised. Throws std::bad_alloc when out of memory. Release with FreeLookupMemory and the
// same `bytes`.
void* AllocateLookupMemory(size_t bytes);
void FreeLookupMemory(void* p, size_t bytes);
// Writes to every page of the `bytes` at `p` (memory no one reads yet), so that their page faults and the
// kernel's zeroing happen now rather than on the data path's first use: for memory reserved ahead of rules
// the caller announced.
void TouchPages(void* p, size_t bytes);

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
