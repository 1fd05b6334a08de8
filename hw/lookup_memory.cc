#include "hw/lookup_memory.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <new>

#include "absl/base/config.h"

#ifdef ABSL_HAVE_ADDRESS_SANITIZER
#include <sanitizer/asan_interface.h>
#define DRSIM_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define DRSIM_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define DRSIM_POISON(p, n) ((void)(p), (void)(n))
#define DRSIM_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace drsim::hw {
namespace {

size_t RoundUp(size_t bytes, size_t unit) { return (bytes + unit - 1) / unit * unit; }

}  // namespace

void* AllocateLookupMemory(size_t bytes) {
  if (bytes < kHugePageBytes) {
    void* p = std::aligned_alloc(64, RoundUp(bytes, 64));
    if (p == nullptr) throw std::bad_alloc();
    return p;
  }
  // Fresh pages: memory the heap hands out again is already mapped in 4 KiB pages, which advice does not
  // change. Map a huge page more than needed and trim the ends to an aligned start.
  const size_t length = RoundUp(bytes, kHugePageBytes);
  void* map =
      mmap(nullptr, length + kHugePageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) throw std::bad_alloc();
  const uintptr_t start = RoundUp(reinterpret_cast<uintptr_t>(map), kHugePageBytes);
  const size_t head = start - reinterpret_cast<uintptr_t>(map);
  if (head != 0) munmap(map, head);
  if (head != kHugePageBytes) munmap(reinterpret_cast<void*>(start + length), kHugePageBytes - head);
  void* p = reinterpret_cast<void*>(start);
  madvise(p, length, MADV_HUGEPAGE);
  return p;
}

void FreeLookupMemory(void* p, size_t bytes) {
  if (bytes < kHugePageBytes) {
    std::free(p);
  } else {
    munmap(p, RoundUp(bytes, kHugePageBytes));
  }
}

void TouchPages(void* p, size_t bytes) {
  constexpr size_t kPage = 4096;
  auto* bytes_at = static_cast<volatile char*>(p);
  for (size_t at = 0; at < bytes; at += kPage) bytes_at[at] = 0;
}

SlabPool::SlabPool(size_t object_size)
    : object_size_(RoundUp(std::max(object_size, sizeof(FreeObject)), 16)) {}

SlabPool::~SlabPool() {
  for (void* slab : slabs_) {
    DRSIM_UNPOISON(slab, kHugePageBytes);
    FreeLookupMemory(slab, kHugePageBytes);
  }
}

void* SlabPool::Allocate() {
  if (free_ != nullptr) {
    FreeObject* object = free_;
    DRSIM_UNPOISON(object, object_size_);
    free_ = object->next;
    return object;
  }
  if (next_ == nullptr || static_cast<size_t>(end_ - next_) < object_size_) {
    if (!spare_.empty()) {
      next_ = spare_.back();
      spare_.pop_back();
    } else {
      next_ = MapSlab();
    }
    end_ = next_ + kHugePageBytes;
  }
  void* p = next_;
  next_ += object_size_;
  return p;
}

void SlabPool::Reserve(size_t objects) {
  const size_t per_slab = kHugePageBytes / object_size_;
  const size_t left = next_ == nullptr ? 0 : static_cast<size_t>(end_ - next_) / object_size_;
  for (size_t have = left + spare_.size() * per_slab; have < objects; have += per_slab) {
    spare_.reserve(spare_.size() + 1);  // before the slab: nothing leaks if this throws
    char* slab = MapSlab();
    TouchPages(slab, kHugePageBytes);
    spare_.push_back(slab);
  }
}

char* SlabPool::MapSlab() {
  slabs_.reserve(slabs_.size() + 1);  // before the slab: nothing leaks if this throws
  char* slab = static_cast<char*>(AllocateLookupMemory(kHugePageBytes));
  slabs_.push_back(slab);
  return slab;
}

void SlabPool::Free(void* p) {
  if (p == nullptr) return;
  auto* object = static_cast<FreeObject*>(p);
  object->next = free_;
  free_ = object;
  DRSIM_POISON(object, object_size_);
}

}  // namespace drsim::hw
