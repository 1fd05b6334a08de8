// acl_churn_check: a ClassBench filter set and trace through the software NIC while a control thread
// churns the set's rules, every verdict compared with a first-match scan (classbench/churn_check.h).
//
//   acl_churn_check [--filters=PATH | --profile=acl|fw|ipc --size=N] [--trace=PATH | --trace_size=N]
//                   [--seconds=S] [--workers=W] [--seed=N] [--move_keys=true|false]
//                   [--batch_updates=true|false] [--quiet_every=S --quiet_for=S]
//
// Without --filters a ClassBench-style set of --size filters (default 10000) is generated; without --trace
// a trace of --trace_size headers (default 100000) is drawn from the set. With --move_keys=true each churn
// puts the filter's rules back with other addresses first (updates that change a rule's match); with
// --batch_updates=true a churn changes them in dr::Rule::UpdateMany calls. With --quiet_every the churn
// stops for --quiet_for seconds (default 0.25) every --quiet_every seconds, so that the ACL's table compiles
// itself and frames meanwhile are looked up compiled (hw::TableIndex). Exits 0 when every verdict matched,
// 1 on a mismatch, 2 on bad arguments or files.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/string_view.h"
#include "classbench/churn_check.h"
#include "classbench/filter.h"
#include "classbench/generator.h"

namespace {

using drsim::classbench::ChurnCheckOptions;
using drsim::classbench::Filter;
using drsim::classbench::Header;

int Usage(const std::string& why) {
  std::fprintf(
      stderr,
      "acl_churn_check: %s\n"
      "usage: acl_churn_check [--filters=PATH | --profile=acl|fw|ipc --size=N]\n"
      "                       [--trace=PATH | --trace_size=N] [--seconds=S] [--workers=W] [--seed=N]\n"
      "                       [--move_keys=true|false] [--batch_updates=true|false]\n"
      "                       [--quiet_every=S --quiet_for=S]\n",
      why.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string filters_path, trace_path, profile_name = "acl";
  size_t size = 10000, trace_size = 100000;
  ChurnCheckOptions options;
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    const size_t eq = arg.find('=');
    if (!absl::StartsWith(arg, "--") || eq == absl::string_view::npos)
      return Usage("bad argument " + std::string(arg));
    const absl::string_view name = arg.substr(2, eq - 2), value = arg.substr(eq + 1);
    bool ok = true;
    if (name == "filters") {
      filters_path = std::string(value);
    } else if (name == "trace") {
      trace_path = std::string(value);
    } else if (name == "profile") {
      profile_name = std::string(value);
    } else if (name == "size") {
      ok = absl::SimpleAtoi(value, &size) && size > 0;
    } else if (name == "trace_size") {
      ok = absl::SimpleAtoi(value, &trace_size) && trace_size > 0;
    } else if (name == "seconds") {
      ok = absl::SimpleAtod(value, &options.seconds) && options.seconds >= 0;
    } else if (name == "workers") {
      ok = absl::SimpleAtoi(value, &options.workers);
    } else if (name == "seed") {
      ok = absl::SimpleAtoi(value, &options.seed);
    } else if (name == "move_keys") {
      ok = absl::SimpleAtob(value, &options.move_keys);
    } else if (name == "batch_updates") {
      ok = absl::SimpleAtob(value, &options.batch_updates);
    } else if (name == "quiet_every") {
      ok = absl::SimpleAtod(value, &options.quiet_every) && options.quiet_every >= 0;
    } else if (name == "quiet_for") {
      ok = absl::SimpleAtod(value, &options.quiet_for) && options.quiet_for >= 0;
    } else {
      return Usage("unknown flag --" + std::string(name));
    }
    if (!ok) return Usage("bad value for --" + std::string(name) + ": '" + std::string(value) + "'");
  }

  std::vector<Filter> filters;
  if (!filters_path.empty()) {
    absl::StatusOr<std::vector<Filter>> read = drsim::classbench::ReadFilterFile(filters_path);
    if (!read.ok()) return Usage(std::string(read.status().message()));
    filters = *std::move(read);
  } else {
    absl::StatusOr<drsim::classbench::Profile> profile = drsim::classbench::ParseProfile(profile_name);
    if (!profile.ok()) return Usage(std::string(profile.status().message()));
    filters = drsim::classbench::Generate(*profile, size, options.seed);
  }
  std::vector<Header> trace;
  if (!trace_path.empty()) {
    absl::StatusOr<std::vector<Header>> read = drsim::classbench::ReadTraceFile(trace_path);
    if (!read.ok()) return Usage(std::string(read.status().message()));
    trace = *std::move(read);
  } else {
    trace = drsim::classbench::GenerateTrace(filters, trace_size, options.seed + 1);
  }

  absl::StatusOr<drsim::classbench::ChurnCheckReport> report =
      drsim::classbench::RunChurnCheck(filters, trace, options);
  if (!report.ok()) return Usage(std::string(report.status().message()));
  std::printf(
      "%zu filters, %zu trace headers, %d workers, %.1f s: %llu verdicts checked (%llu unbounded, not "
      "checked), %llu filters churned (%llu rule deletes and inserts, %llu quiet spells), %llu mismatches\n"
      "compiled trees: %llu folds, %llu retired by a change too wide or too large, %s at the end\n",
      filters.size(), trace.size(), options.workers, options.seconds,
      static_cast<unsigned long long>(report->frames), static_cast<unsigned long long>(report->unchecked),
      static_cast<unsigned long long>(report->filter_churns),
      static_cast<unsigned long long>(report->rule_updates),
      static_cast<unsigned long long>(report->quiet_spells),
      static_cast<unsigned long long>(report->mismatches),
      static_cast<unsigned long long>(report->tree_folds),
      static_cast<unsigned long long>(report->tree_overflows),
      report->compiled_at_end ? "serving" : "not serving");
  for (const std::string& e : report->examples) std::printf("  %s\n", e.c_str());
  return report->mismatches == 0 ? 0 : 1;
}
