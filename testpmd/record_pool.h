// Internal to the engine: the records the engine keeps per rule (flows, installed rules), packed in
// huge-page slabs.
//
// What
//   RecordPool<T> makes T objects owned by RecordPool<T>::Ptr, a unique_ptr that gives the memory back to
//   the pool. A T names its pool (`RecordPool<T>& record_pool() const`), so a Ptr is one pointer.
//
// How
//   The memory is an hw::SlabPool's: objects of one size cut from 2 MiB slabs advised as huge pages, freed
//   ones reused first. A large rule file's records then fault in a huge page at a time rather than the
//   heap's 4 KiB pages, and cost no malloc call each (bench/README.md, "Rule files"). Slabs go back to the
//   kernel with the pool, so the pool must outlive its objects.
//
// Thread-safety
//   Not thread-safe: the engine serialises its calls.
#ifndef DRSIM_TESTPMD_RECORD_POOL_H_
#define DRSIM_TESTPMD_RECORD_POOL_H_

#include <memory>
#include <new>
#include <utility>

#include "hw/lookup_memory.h"

namespace drsim::testpmd {

template <typename T>
class RecordPool {
 public:
  struct Deleter {
    void operator()(T* object) const {
      RecordPool& pool = object->record_pool();
      object->~T();
      pool.slabs_.Free(object);
    }
  };
  using Ptr = std::unique_ptr<T, Deleter>;

  RecordPool() : slabs_(sizeof(T)) {}
  RecordPool(const RecordPool&) = delete;
  RecordPool& operator=(const RecordPool&) = delete;

  // A new T made of `args`; throws std::bad_alloc when out of memory.
  template <typename... Args>
  Ptr Make(Args&&... args) {
    static_assert(alignof(T) <= 16, "slab objects are 16-byte aligned");
    void* memory = slabs_.Allocate();
    try {
      return Ptr(new (memory) T(std::forward<Args>(args)...));
    } catch (...) {
      slabs_.Free(memory);
      throw;
    }
  }

 private:
  hw::SlabPool slabs_;
};

}  // namespace drsim::testpmd

#endif  // DRSIM_TESTPMD_RECORD_POOL_H_
