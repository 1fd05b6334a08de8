#include "bench/acl_sets.h"

#include <cstring>
#include <map>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "bench/flows.h"
#include "classbench/filter.h"
#include "classbench/generator.h"

namespace drsim::bench {
namespace {

std::string* FiltersPath() {
  static auto* path = new std::string();
  return path;
}

std::string* ProfileName() {
  static auto* name = new std::string("acl");
  return name;
}

std::string* TracePath() {
  static auto* path = new std::string();
  return path;
}

}  // namespace

void TakeAclFlags(int* argc, char** argv) {
  int kept = 0;
  for (int i = 0; i < *argc; ++i) {
    if (std::strncmp(argv[i], "--filters=", 10) == 0) {
      *FiltersPath() = argv[i] + 10;
    } else if (std::strncmp(argv[i], "--profile=", 10) == 0) {
      *ProfileName() = argv[i] + 10;
    } else if (std::strncmp(argv[i], "--trace=", 8) == 0) {
      *TracePath() = argv[i] + 8;
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
      const absl::StatusOr<classbench::Profile> profile = classbench::ParseProfile(*ProfileName());
      if (!profile.ok()) {
        state.SkipWithError(absl::StrFormat("--profile: %s", profile.status().message()).c_str());
        return set;
      }
      set = classbench::Generate(*profile, n, 1);
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

std::vector<classbench::Header> AclTrace(const std::vector<classbench::Filter>& set,
                                         benchmark::State& state) {
  std::vector<classbench::Header> trace;
  if (TracePath()->empty()) {
    trace = classbench::GenerateTrace(set, kTraceLength, kAclTraceSeed);
  } else {
    static auto* file = new std::vector<classbench::Header>();
    if (file->empty()) {
      absl::StatusOr<std::vector<classbench::Header>> read = classbench::ReadTraceFile(*TracePath());
      if (!read.ok()) {
        state.SkipWithError(std::string(read.status().message()).c_str());
        return {};
      }
      if (read->size() < kBurst) {
        state.SkipWithError(
            absl::StrFormat("%s: %d headers, less than a burst of %d", *TracePath(), read->size(), kBurst)
                .c_str());
        return {};
      }
      read->resize(read->size() / kBurst * kBurst);  // the benches send whole bursts, round and round
      *file = *std::move(read);
    }
    trace = *file;
  }
  state.counters["trace"] = static_cast<double>(trace.size());
  return trace;
}

}  // namespace drsim::bench
