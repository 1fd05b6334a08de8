// Flow counters of the software NIC: allocated in bulks (as DEVX flow-counter objects are), addressed
// by id = bulk base + offset, shared by any number of rules, counting packets and bytes. Each also keeps
// its hit history on the NIC's clock (hw::CounterActivity), which flow aging reads.
//
// Thread-safety: allocation and freeing are serialised by the owner; Add() and Query() may run on any
// thread, concurrently with each other and with allocation (counters are atomic and never move: they sit
// in fixed chunks, so no increment is lost). The hit history is exact when one worker counts into a
// counter at a time; with several, a stretch between two hits may be measured from a hit a few
// nanoseconds older.
#ifndef DRSIM_SIM_COUNTERS_H_
#define DRSIM_SIM_COUNTERS_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hw/device.h"

namespace drsim::sim {

class CounterBank {
 public:
  static constexpr uint32_t kMaxCounters = 1u << 24;  // ids ever allocated (they are not reused)

  CounterBank();
  ~CounterBank();
  CounterBank(const CounterBank&) = delete;
  CounterBank& operator=(const CounterBank&) = delete;

  // A bulk of `bulk` counters (1..2^23), counting from `now_ns` on the NIC's clock; returns its base id.
  // InvalidArgument for a bad size, ResourceExhausted once kMaxCounters ids have been handed out.
  absl::StatusOr<uint32_t> Allocate(uint32_t bulk, uint64_t now_ns = 0);
  // Frees the bulk starting at `base`: NotFound if there is none, FailedPrecondition (EBUSY) while
  // actions reference one of its counters.
  absl::Status Free(uint32_t base);
  // A reference from a flow_counter action. NotFound for an id outside every bulk.
  absl::Status Retain(uint32_t id);
  void Release(uint32_t id);

  // Counts one packet of `bytes` bytes, arriving at `now_ns`. `id` must be retained.
  void Add(uint32_t id, uint64_t bytes, uint64_t now_ns = 0) {
    Counter& c = CounterAt(id);
    c.packets.fetch_add(1, std::memory_order_relaxed);
    c.bytes.fetch_add(bytes, std::memory_order_relaxed);
    const uint64_t last = c.last_ns.load(std::memory_order_relaxed);
    if (now_ns > last) {
      if (now_ns - last > c.longest_idle_ns.load(std::memory_order_relaxed)) {
        c.longest_idle_ns.store(now_ns - last, std::memory_order_relaxed);
      }
      c.last_ns.store(now_ns, std::memory_order_relaxed);
    }
    if (!c.hit.load(std::memory_order_relaxed)) c.hit.store(true, std::memory_order_relaxed);
  }
  // The counter's packets and bytes; NotFound for an id outside every bulk.
  absl::Status Query(uint32_t id, uint64_t* packets, uint64_t* bytes) const;
  // As Query, and sets the counter back to zero in the same step: a hit counted meanwhile is either in
  // the values returned or left in the counter, never lost (QUERY_FLOW_COUNTER's clear bit).
  absl::Status QueryAndClear(uint32_t id, uint64_t* packets, uint64_t* bytes);
  // The counter's hit history up to `now_ns` (clearing its packets does not clear it); NotFound for an id
  // outside every bulk.
  absl::StatusOr<hw::CounterActivity> Activity(uint32_t id, uint64_t now_ns) const;

 private:
  struct Counter {
    std::atomic<uint64_t> packets{0};
    std::atomic<uint64_t> bytes{0};
    std::atomic<uint64_t> last_ns{0};  // the last hit, or (before one) when the bulk was allocated
    std::atomic<uint64_t> longest_idle_ns{0};  // between hits (and from the allocation to the first)
    std::atomic<bool> hit{false};
  };
  struct Bulk {
    uint32_t size;
    uint64_t since_ns;  // when it was allocated
    int references = 0;
  };
  static constexpr int kChunkShift = 12;
  static constexpr uint32_t kChunkSize = 1u << kChunkShift;
  static constexpr uint32_t kMaxChunks = kMaxCounters / kChunkSize;

  // The base id of the bulk holding `id`, if any.
  std::optional<uint32_t> BulkOf(uint32_t id) const;
  Counter& CounterAt(uint32_t id) const {
    return chunks_[id >> kChunkShift].load(std::memory_order_acquire)[id & (kChunkSize - 1)];
  }

  std::unique_ptr<std::atomic<Counter*>[]> chunks_;  // kMaxChunks, allocated as ids are handed out
  uint32_t next_id_ = 0;
  std::map<uint32_t, Bulk> bulks_;  // by base id
};

}  // namespace drsim::sim

#endif  // DRSIM_SIM_COUNTERS_H_
