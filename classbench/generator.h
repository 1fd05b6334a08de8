// ClassBench-style filter sets and traces of our own, so the benches need no external files (and can be
// pointed at real ClassBench files instead, filter.h).
//
// The three profiles follow the shape ClassBench's seeds give the acl, fw and ipc families — which fields
// are wildcards, how long the prefixes are, which port-range classes (wildcard, the ephemeral range
// 1024:65535, an exact port, an arbitrary range) and which protocols appear — with the proportions written
// in generator.cc. They are approximations drawn from a seeded generator, not ClassBench's own generator
// and seed files, and they differ where it matters to a classifier walking filters in order: broad
// filters come early here and take most packets (first matches ~15 matchers deep), whereas real ClassBench
// sets are mostly specific filters, so a packet's first filter is usually the one it was drawn from.
//
// A trace is headers each drawn inside one filter chosen at random (uniformly), so most packets hit a real
// filter somewhere in the set; FirstMatch gives the verdict a classifier must reproduce.
//
// Pure functions of their arguments; thread-safe.
#ifndef DRSIM_CLASSBENCH_GENERATOR_H_
#define DRSIM_CLASSBENCH_GENERATOR_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "classbench/filter.h"

namespace drsim::classbench {

enum class Profile { kAcl, kFw, kIpc };

// "acl", "fw" or "ipc"; InvalidArgument naming the choices otherwise.
absl::StatusOr<Profile> ParseProfile(const std::string& name);

// `n` filters of `profile`, the last one the catch-all (0.0.0.0/0 both ways, all ports, any protocol).
std::vector<Filter> Generate(Profile profile, size_t n, uint32_t seed);

// `n` headers, each inside a filter of `filters` chosen uniformly (TCP or UDP where the filter takes any
// protocol).
std::vector<Header> GenerateTrace(const std::vector<Filter>& filters, size_t n, uint32_t seed);

// Writes `filters` in ClassBench's format (ReadFilterFile reads them back).
absl::Status WriteFilterFile(const std::string& path, const std::vector<Filter>& filters);

}  // namespace drsim::classbench

#endif  // DRSIM_CLASSBENCH_GENERATOR_H_
