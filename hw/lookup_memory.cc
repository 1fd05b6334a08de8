#include "hw/lookup_memory.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>

#include "absl/base/config.h"
#include "hw/huge_page_map.h"

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

#ifndef ABSL_HAVE_ADDRESS_SANITIZER
// Never destroyed: blocks may be freed by static destructors of any order.
SmallBlockArena& ProcessArena() {
  static auto* const arena = new SmallBlockArena;
  return *arena;
}
#endif

// Bytes of lookup memory handed out and not given back (LookupMemoryInUse).
std::atomic<size_t> lookup_memory_in_use{0};

}  // namespace

size_t LookupMemoryInUse() { return lookup_memory_in_use.load(std::memory_order_relaxed); }

void* AllocateLookupMemory(size_t bytes) {
  lookup_memory_in_use.fetch_add(
      bytes < kHugePageBytes ? RoundUp(std::max<size_t>(bytes, 1), 64) : RoundUp(bytes, kHugePageBytes),
      std::memory_order_relaxed);
  if (bytes < kHugePageBytes) {
#ifdef ABSL_HAVE_ADDRESS_SANITIZER
    void* p = std::aligned_alloc(64, RoundUp(std::max<size_t>(bytes, 1), 64));
    if (p == nullptr) throw std::bad_alloc();
    return p;
#else
    return ProcessArena().Allocate(std::max<size_t>(bytes, 1));
#endif
  }
  return internal::MapHugePages(RoundUp(bytes, kHugePageBytes));
}

void FreeLookupMemory(void* p, size_t bytes) {
  if (p == nullptr) return;
  lookup_memory_in_use.fetch_sub(
      bytes < kHugePageBytes ? RoundUp(std::max<size_t>(bytes, 1), 64) : RoundUp(bytes, kHugePageBytes),
      std::memory_order_relaxed);
  if (bytes < kHugePageBytes) {
#ifdef ABSL_HAVE_ADDRESS_SANITIZER
    std::free(p);
#else
    ProcessArena().Free(p, std::max<size_t>(bytes, 1));
#endif
  } else {
    munmap(p, RoundUp(bytes, kHugePageBytes));
  }
}

void TouchPages(void* p, size_t bytes) {
  constexpr size_t kPage = 4096;
  auto* bytes_at = static_cast<volatile char*>(p);
  for (size_t at = 0; at < bytes; at += kPage) bytes_at[at] = 0;
}

int SmallBlockArena::ClassOf(size_t bytes) {
  if (bytes <= 1024) return static_cast<int>((bytes + 63) / 64) - 1;
  const size_t last = bytes - 1;
  const int power = 63 - __builtin_clzll(last);  // 10 or more
  return 16 + (power - 10) * 4 + static_cast<int>(last >> (power - 2) & 3);
}

size_t SmallBlockArena::ClassBytes(int c) {
  if (c < 16) return size_t(c + 1) * 64;
  const int power = 10 + (c - 16) / 4;
  return size_t(5 + (c - 16) % 4) << (power - 2);
}

SmallBlockArena::~SmallBlockArena() {
  for (void* slab : slabs_) {
    DRSIM_UNPOISON(slab, kHugePageBytes);
    munmap(slab, kHugePageBytes);
  }
}

void SmallBlockArena::PushFree(void* p, int c) {
  auto* block = static_cast<FreeBlock*>(p);
  block->next = free_[c];
  free_[c] = block;
  DRSIM_POISON(block, ClassBytes(c));
}

void* SmallBlockArena::Allocate(size_t bytes) {
  const int c = ClassOf(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  if (FreeBlock* block = free_[c]; block != nullptr) {
    DRSIM_UNPOISON(block, ClassBytes(c));
    free_[c] = block->next;
    // The next allocation of the class reads that block's link: it loads meanwhile (a block freed long ago
    // is cold, and a rule update allocates a block or two).
    __builtin_prefetch(free_[c]);
    return block;
  }
  const size_t size = ClassBytes(c);
  if (static_cast<size_t>(end_ - next_) < size) {
    // The rest of the slab serves smaller classes (it is a multiple of 64 bytes, below 2 MiB).
    while (end_ - next_ >= 64) {
      const auto rest = static_cast<size_t>(end_ - next_);
      const int fits = ClassBytes(ClassOf(rest)) > rest ? ClassOf(rest) - 1 : ClassOf(rest);
      PushFree(next_, fits);
      next_ += ClassBytes(fits);
    }
    slabs_.reserve(slabs_.size() + 1);  // before the slab: nothing leaks if this throws
    next_ =
        static_cast<char*>(internal::MapHugePages(kHugePageBytes));  // (its blocks are counted as handed out)
    end_ = next_ + kHugePageBytes;
    slabs_.push_back(next_);
  }
  void* p = next_;
  next_ += size;
  return p;
}

void SmallBlockArena::Free(void* p, size_t bytes) {
  if (p == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  PushFree(p, ClassOf(bytes));
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
