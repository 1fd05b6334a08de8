// The rte_hash peer: DPDK 22.11's cuckoo hash, from Debian's libdpdk-dev, on the five-tuple keys
// and the lookup trace of nic_bench (bench/flows.h), so its numbers and ours read side by side:
//   BM_RteHashInsert/N      rte_hash_add_key of N keys into a table sized for them (keys/s)
//   BM_RteHashLookupBulk/N  rte_hash_lookup_bulk in bursts of 32 over the 4096-entry trace (lookups/s)
//   BM_RteHashInsertLF/N, BM_RteHashLookupBulkLF/N
//                           the same on a table created with RTE_HASH_EXTRA_FLAGS_RW_CONCURRENCY_LF: lookups
//                           on other threads may run while keys are added and deleted, without locks, the
//                           guarantee drsim's match tables give (hw/match_table.h); the plain table gives
//                           none, and bench/README.md's ratios are taken against it
// The hash function is rte_hash_crc (SSE4.2 CRC32), the one DPDK's own flow-table examples use. The EAL
// runs without hugepages or PCI devices, so any Linux box runs it. These benches run alone in rte_hash_bench,
// and in nic_bench next to drsim's, so that a ratio can be taken between runs in one process (a shared
// VM's speed can differ widely from one process to the next, far less within one):
//
//   bazel run --config=opt //bench:rte_hash_bench -- --benchmark_format=json
//   bazel run --config=opt //bench:nic_bench -- --benchmark_filter='(NicLookup|RteHashLookupBulk)/1000000'
#include <rte_errno.h>
#include <rte_hash.h>
#include <rte_hash_crc.h>

#include <cstring>
#include <vector>

#include "bench/flows.h"
#include "benchmark/benchmark.h"

namespace drsim::bench {
namespace {

// The five-tuple as a 16-byte key (UDP, zero padding), the layout DPDK's l3fwd uses for IPv4 flows.
struct Key {
  uint32_t src, dst;
  uint16_t sport, dport;
  uint8_t proto;
  uint8_t pad[3];
};
static_assert(sizeof(Key) == 16);

std::vector<Key> Keys(const std::vector<Flow>& flows) {
  std::vector<Key> keys(flows.size());
  for (size_t i = 0; i < flows.size(); ++i) {
    keys[i] = Key{flows[i].src, flows[i].dst, flows[i].sport, flows[i].dport, 17, {0, 0, 0}};
  }
  return keys;
}

// A table for `n` keys, with `extra_flags` (RTE_HASH_EXTRA_FLAGS_*); nullptr (with the bench skipped) when
// DPDK refuses.
rte_hash* Create(size_t n, uint8_t extra_flags, benchmark::State& state) {
  rte_hash_parameters params;
  std::memset(&params, 0, sizeof(params));
  params.name = "bench";
  params.entries = static_cast<uint32_t>(n < 64 ? 64 : n);
  params.key_len = sizeof(Key);
  params.hash_func = rte_hash_crc;
  params.socket_id = 0;
  params.extra_flag = extra_flags;
  rte_hash* h = rte_hash_create(&params);
  if (h == nullptr) state.SkipWithError(rte_strerror(rte_errno));
  return h;
}

void Insert(benchmark::State& state, uint8_t extra_flags) {
  const size_t n = state.range(0);
  const std::vector<Key> keys = Keys(Flows(n, 1));  // nic_bench's BM_RuleInsert inserts these flows
  for (auto _ : state) {
    state.PauseTiming();
    rte_hash* h = Create(n, extra_flags, state);
    if (h == nullptr) break;
    state.ResumeTiming();
    for (const Key& k : keys) {
      if (rte_hash_add_key(h, &k) < 0) {
        state.SkipWithError("rte_hash_add_key failed");
        break;
      }
    }
    state.PauseTiming();
    rte_hash_free(h);
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * n);
}

void BM_RteHashInsert(benchmark::State& state) { Insert(state, 0); }
BENCHMARK(BM_RteHashInsert)->Arg(1000)->Arg(100000)->Arg(1000000)->Unit(benchmark::kMillisecond);

void BM_RteHashInsertLF(benchmark::State& state) { Insert(state, RTE_HASH_EXTRA_FLAGS_RW_CONCURRENCY_LF); }
BENCHMARK(BM_RteHashInsertLF)->Arg(1000)->Arg(100000)->Arg(1000000)->Unit(benchmark::kMillisecond);

void LookupBulk(benchmark::State& state, uint8_t extra_flags) {
  const size_t n = state.range(0);
  const std::vector<Key> keys = Keys(Flows(n, kRuleSeed));
  rte_hash* h = Create(n, extra_flags, state);
  if (h == nullptr) return;
  for (const Key& k : keys) {
    if (rte_hash_add_key(h, &k) < 0) {
      state.SkipWithError("rte_hash_add_key failed");
      rte_hash_free(h);
      return;
    }
  }
  std::vector<const void*> trace;
  for (size_t i : Trace(n, kTraceLength, kTraceSeed)) trace.push_back(&keys[i]);
  int32_t positions[kBurst];
  size_t at = 0;
  bool missed = false;
  for (auto _ : state) {
    rte_hash_lookup_bulk(h, trace.data() + at, kBurst, positions);
    for (int32_t p : positions) missed |= p < 0;
    at = (at + kBurst) % trace.size();
  }
  if (missed) state.SkipWithError("a key of the trace was not found");
  state.SetItemsProcessed(state.iterations() * kBurst);
  rte_hash_free(h);
}

void BM_RteHashLookupBulk(benchmark::State& state) { LookupBulk(state, 0); }
BENCHMARK(BM_RteHashLookupBulk)->Arg(1000)->Arg(100000)->Arg(1000000);

void BM_RteHashLookupBulkLF(benchmark::State& state) {
  LookupBulk(state, RTE_HASH_EXTRA_FLAGS_RW_CONCURRENCY_LF);
}
BENCHMARK(BM_RteHashLookupBulkLF)->Arg(1000)->Arg(100000)->Arg(1000000);

}  // namespace
}  // namespace drsim::bench
