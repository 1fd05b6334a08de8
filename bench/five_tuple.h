// The software NIC set up the way the lookup benches use it: one NIC_RX table holding one five-tuple
// matcher whose rules drop (bench/flows.h flows), the trace of those flows as frames, and the timed loop
// that sends them in bursts.
#ifndef DRSIM_BENCH_FIVE_TUPLE_H_
#define DRSIM_BENCH_FIVE_TUPLE_H_

#include <infiniband/mlx5dv.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "bench/flows.h"
#include "benchmark/benchmark.h"
#include "dr/dr.h"
#include "hw/match_layout.h"
#include "hw/match_params.h"
#include "sim/nic.h"

namespace drsim::bench {

// ip_version 4, ip_protocol, both IPv4 addresses and both UDP ports, all bits.
hw::MatchParams FiveTupleMask();
// The rule value matching `f` (UDP).
hw::MatchParams FiveTupleValue(const Flow& f);
// Writes the rule value matching `f` into `v` (match_sz 64, the outer-header section), field by field, as a
// datapath that offloads flows builds each rule's value from its own flow key.
void WriteFiveTupleValue(const Flow& f, mlx5dv_flow_match_parameters* v);

// One rule value in the shape WriteFiveTupleValue writes, to be reused from rule to rule.
struct alignas(8) FiveTupleValueBuffer {
  mlx5dv_flow_match_parameters* get() { return reinterpret_cast<mlx5dv_flow_match_parameters*>(bytes); }
  uint8_t bytes[sizeof(mlx5dv_flow_match_parameters) + hw::kSectionBytes];
};

// The rule values of `flows` in one array, each cut to the outer-header section it sets (match_sz 64:
// rdma-core reads the sections past match_sz as zero), kept the way the peer benches keep their keys rather
// than as a million separate 448-byte buffers.
class PackedValues {
 public:
  explicit PackedValues(const std::vector<Flow>& flows);
  const mlx5dv_flow_match_parameters* operator[](size_t i) const {
    return reinterpret_cast<const mlx5dv_flow_match_parameters*>(&storage_[i * kWords]);
  }

 private:
  static constexpr size_t kWords = sizeof(FiveTupleValueBuffer) / 8;
  std::vector<uint64_t> storage_;
};

// UDP frames of the trace (kTraceLength frames, kTraceSeed) over `flows`.
std::vector<std::vector<uint8_t>> TraceFrames(const std::vector<Flow>& flows);

// Sends `frames` (a multiple of kBurst of them) in bursts, round and round, on `worker` while `state` runs
// and reports items/s. Every frame must be dropped by its rule; false when one was not (or a burst was
// refused), after telling `state` so.
bool SendDroppedBursts(benchmark::State& state, sim::Worker& worker, absl::Span<const sim::Frame> frames);

// A NIC with one NIC_RX table of `level` holding one five-tuple matcher, and a drop action for its rules.
struct FiveTupleTable {
  explicit FiveTupleTable(uint32_t level);
  sim::Nic nic;
  dr::Domain domain;
  dr::Table table;
  dr::Matcher matcher;
  dr::Action drop;
};

}  // namespace drsim::bench

#endif  // DRSIM_BENCH_FIVE_TUPLE_H_
