#include "bench/acl_sets.h"

#include <cstring>
#include <map>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "bench/flows.h"
#include "classbench/generator.h"

namespace drsim::bench {
namespace {

std::string* FiltersPath() {
  static auto* path = new std::string();
  return path;
}

}  // namespace

void TakeFiltersFlag(int* argc, char** argv) {
  int kept = 0;
  for (int i = 0; i < *argc; ++i) {
    if (std::strncmp(argv[i], "--filters=", 10) == 0) {
      *FiltersPath() = argv[i] + 10;
    } else {
      argv[kept++] = argv[i];
    }
  }
  *argc = kept;
}

const std::vector<classbench::Filter>& AclFilterSet(size_t n, benchmark::State& state) {
  static auto* cache = new std::map<size_t, std::vector<classbench::Filter>>();
  std::vector<classbench::Filter>& set = (*cache)[n];
  if (set.empty()) {
    if (FiltersPath()->empty()) {
      set = classbench::Generate(classbench::Profile::kAcl, n, 1);
    } else {
      absl::StatusOr<std::vector<classbench::Filter>> read = classbench::ReadFilterFile(*FiltersPath());
      if (!read.ok()) {
        state.SkipWithError(std::string(read.status().message()).c_str());
      } else {
        set = *std::move(read);
      }
    }
  }
  state.counters["filters"] = static_cast<double>(set.size());
  return set;
}

std::vector<classbench::Header> AclTrace(const std::vector<classbench::Filter>& set) {
  return classbench::GenerateTrace(set, kTraceLength, kAclTraceSeed);
}

}  // namespace drsim::bench
