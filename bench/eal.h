// DPDK's EAL for the peer benches: no hugepages, no PCI scan, no shared runtime files, quiet logs, so any
// Linux box (and a CI container) runs them. The EAL only provides memory to rte_hash and rte_acl.
#ifndef DRSIM_BENCH_EAL_H_
#define DRSIM_BENCH_EAL_H_

namespace drsim::bench {

// Initialises the EAL once, with `memory_mb` of ordinary memory; false (with the reason on stderr) when it
// cannot.
bool InitEal(int memory_mb);

// Runs the benchmarks of this binary with argv (Google Benchmark's flags) after InitEal; returns main's
// status.
int RunBenchmarksWithEal(int argc, char** argv, int memory_mb);

}  // namespace drsim::bench

#endif  // DRSIM_BENCH_EAL_H_
