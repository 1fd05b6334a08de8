// The five-tuple flows every bench uses, so that drsim and its peers (rte_hash, rte_acl) see the same keys
// and the same traffic: random UDP/IPv4 flows from a seeded generator, and the lookup trace drawn from them.
//
// Pure functions of their arguments; thread-safe.
#ifndef DRSIM_BENCH_FLOWS_H_
#define DRSIM_BENCH_FLOWS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace drsim::bench {

struct Flow {
  uint32_t src, dst;  // host order
  uint16_t sport, dport;
};

// `n` random flows (duplicates possible but, at 2^96 choices, absent in practice).
std::vector<Flow> Flows(size_t n, uint32_t seed);

// The lookup trace: `count` indices into `flows`, drawn uniformly with `seed` (every lookup a hit).
std::vector<size_t> Trace(size_t flows, size_t count, uint32_t seed);

// What every lookup bench uses: the rules' flows come from seed 2, the 4096-entry trace from seed 3, and
// lookups go in bursts of 32.
inline constexpr uint32_t kRuleSeed = 2;
inline constexpr uint32_t kTraceSeed = 3;
inline constexpr size_t kTraceLength = 4096;
inline constexpr size_t kBurst = 32;

}  // namespace drsim::bench

#endif  // DRSIM_BENCH_FLOWS_H_
