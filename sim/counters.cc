#include "sim/counters.h"

#include "absl/strings/str_format.h"

namespace drsim::sim {

CounterBank::CounterBank() : chunks_(new std::atomic<Counter*>[kMaxChunks]) {
  for (uint32_t i = 0; i < kMaxChunks; ++i) chunks_[i].store(nullptr, std::memory_order_relaxed);
}

CounterBank::~CounterBank() {
  for (uint32_t i = 0; i < kMaxChunks; ++i) delete[] chunks_[i].load(std::memory_order_relaxed);
}

absl::StatusOr<uint32_t> CounterBank::Allocate(uint32_t bulk, uint64_t now_ns) {
  if (bulk == 0 || bulk > (1u << 23)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("flow counter bulk of %d: must be 1..%d", bulk, 1 << 23));
  }
  if (bulk > kMaxCounters - next_id_) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("flow counter bulk of %d: %d of the device's %d counter ids are left", bulk,
                        kMaxCounters - next_id_, kMaxCounters));
  }
  const uint32_t base = next_id_;
  next_id_ += bulk;
  for (uint32_t chunk = base >> kChunkShift; chunk <= (next_id_ - 1) >> kChunkShift; ++chunk) {
    if (chunks_[chunk].load(std::memory_order_relaxed) == nullptr) {
      chunks_[chunk].store(new Counter[kChunkSize], std::memory_order_release);
    }
  }
  for (uint32_t id = base; id < next_id_; ++id) CounterAt(id).last_ns.store(now_ns, std::memory_order_relaxed);
  bulks_[base] = {bulk, now_ns, 0};
  return base;
}

std::optional<uint32_t> CounterBank::BulkOf(uint32_t id) const {
  auto it = bulks_.upper_bound(id);
  if (it == bulks_.begin()) return std::nullopt;
  --it;
  if (id >= it->first + it->second.size) return std::nullopt;
  return it->first;
}

absl::Status CounterBank::Free(uint32_t base) {
  auto it = bulks_.find(base);
  if (it == bulks_.end()) return absl::NotFoundError(absl::StrFormat("no flow counter bulk at id %d", base));
  if (it->second.references > 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "flow counter bulk %d is used by %d flow_counter action(s)", base, it->second.references));
  }
  bulks_.erase(it);  // the ids are not reused
  return absl::OkStatus();
}

absl::Status CounterBank::Retain(uint32_t id) {
  std::optional<uint32_t> base = BulkOf(id);
  if (!base) return absl::NotFoundError(absl::StrFormat("no flow counter with id %d", id));
  ++bulks_[*base].references;
  return absl::OkStatus();
}

void CounterBank::Release(uint32_t id) {
  if (std::optional<uint32_t> base = BulkOf(id)) --bulks_[*base].references;
}

absl::Status CounterBank::Query(uint32_t id, uint64_t* packets, uint64_t* bytes) const {
  if (!BulkOf(id)) return absl::NotFoundError(absl::StrFormat("no flow counter with id %d", id));
  *packets = CounterAt(id).packets.load(std::memory_order_relaxed);
  *bytes = CounterAt(id).bytes.load(std::memory_order_relaxed);
  return absl::OkStatus();
}

absl::Status CounterBank::QueryAndClear(uint32_t id, uint64_t* packets, uint64_t* bytes) {
  if (!BulkOf(id)) return absl::NotFoundError(absl::StrFormat("no flow counter with id %d", id));
  *packets = CounterAt(id).packets.exchange(0, std::memory_order_relaxed);
  *bytes = CounterAt(id).bytes.exchange(0, std::memory_order_relaxed);
  return absl::OkStatus();
}

absl::StatusOr<hw::CounterActivity> CounterBank::Activity(uint32_t id, uint64_t now_ns) const {
  const std::optional<uint32_t> base = BulkOf(id);
  if (!base) return absl::NotFoundError(absl::StrFormat("no flow counter with id %d", id));
  const Counter& c = CounterAt(id);
  return hw::CounterActivity::At(now_ns, bulks_.at(*base).since_ns, c.hit.load(std::memory_order_relaxed),
                                 c.last_ns.load(std::memory_order_relaxed),
                                 c.longest_idle_ns.load(std::memory_order_relaxed));
}

}  // namespace drsim::sim
