// The machine's memory, as the other benches meet it: how long a load waits that depends on the one
// before (a walk down a trie, a rule's object then its matcher), and how many such waits overlap when
// independent chains of them run side by side (what a prefetch or a burst's interleaved walks can win).
// Rule updates and lookups in sets beyond the caches are bound by these waits, and this guest's speed
// swings from one minute to the next: run this beside the other benches to tell a slower machine from
// slower code. Linked into memory_bench, and into acl_bench so that a rule update's rate and the wait it
// is bound by come from the same minutes (--benchmark_enable_random_interleaving).
//
//   BM_DependentLoads/MIB/CHAINS  CHAINS independent chains of dependent loads, each load one 64-byte line
//                                 at random in MIB MiB of lookup memory (huge pages, as the data path's).
//                                 items/s counts lines; `ns_per_step` is the wait of one load of a chain.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "benchmark/benchmark.h"
#include "hw/lookup_memory.h"

namespace drsim::bench {
namespace {

struct alignas(64) Line {
  const Line* next;
};

void BM_DependentLoads(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0)) << 20;
  const auto chains = static_cast<size_t>(state.range(1));
  const size_t lines = bytes / sizeof(Line);
  auto* line = static_cast<Line*>(hw::AllocateLookupMemory(bytes));
  // One cycle through every line in random order; the chains start evenly spaced along it.
  std::vector<uint32_t> order(lines);
  std::iota(order.begin(), order.end(), 0u);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(20261128));
  for (size_t i = 0; i < lines; ++i) line[order[i]].next = &line[order[(i + 1) % lines]];
  std::vector<const Line*> at(chains);
  for (size_t c = 0; c < chains; ++c) at[c] = &line[order[c * (lines / chains)]];
  constexpr size_t kSteps = 1024;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    for (size_t s = 0; s < kSteps; ++s) {
      for (size_t c = 0; c < chains; ++c) at[c] = at[c]->next;
    }
    benchmark::DoNotOptimize(at.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kSteps * chains));
  const std::chrono::duration<double, std::nano> spent = std::chrono::steady_clock::now() - start;
  state.counters["ns_per_step"] = spent.count() / static_cast<double>(state.iterations() * kSteps);
  hw::FreeLookupMemory(line, bytes);
}
BENCHMARK(BM_DependentLoads)->ArgsProduct({{1, 8, 64}, {1, 4, 16}});

}  // namespace
}  // namespace drsim::bench
