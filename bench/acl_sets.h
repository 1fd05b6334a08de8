// The ACL sets and trace the ACL benches share (acl_bench: drsim and rte_acl; ovs_classifier_bench: OVS's
// classifier), so every binary classifies the same filters and the same packets: a generated acl-profile
// set of N filters (classbench/generator.h, seed 1; --profile=fw or ipc for those profiles), or the
// ClassBench file given with --filters=PATH, and a trace of bench/flows.h's length drawn from the set with
// kAclTraceSeed, or the ClassBench trace given with --trace=PATH.
//
// Call TakeAclFlags from main before the benches run; AclFilterSet and AclTrace are then safe to call from
// benches (Google Benchmark runs them one at a time).
#ifndef DRSIM_BENCH_ACL_SETS_H_
#define DRSIM_BENCH_ACL_SETS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "benchmark/benchmark.h"
#include "classbench/filter.h"

namespace drsim::bench {

inline constexpr uint32_t kAclTraceSeed = 2;  // the trace's seed

// Removes --filters=PATH, --profile=NAME and --trace=PATH from argv (keeping the rest, Google Benchmark's, in
// order) and remembers them.
void TakeAclFlags(int* argc, char** argv);

// The set of a bench of `n` filters: the --filters file (whatever `n`), or a generated set of `n` filters of
// the --profile (acl unless given); kept for the process. An empty set, with the bench skipped naming
// file:line:col, when the file cannot be read, or naming the profile when it is none of the three. Sets the
// bench's "filters" counter.
const std::vector<classbench::Filter>& AclFilterSet(size_t n, benchmark::State& state);

// The trace of a bench on `set`: the --trace file's headers, as many whole bursts (kBurst) as it holds, or
// kTraceLength headers drawn from `set`. Empty, with the bench skipped naming the file (file:line:col for a
// bad line), when the file cannot be read or holds less than a burst. Sets the bench's "trace" counter.
std::vector<classbench::Header> AclTrace(const std::vector<classbench::Filter>& set, benchmark::State& state);

}  // namespace drsim::bench

#endif  // DRSIM_BENCH_ACL_SETS_H_
