#include "tools/drctl.h"

#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "dr/dump.h"
#include "tools/drctl_run.h"
#include "tools/drctl_session.h"

namespace drsim::tools {
namespace {

// "1 flow", "2 flows".
std::string Count(size_t n, absl::string_view noun) { return absl::StrCat(n, " ", noun, n == 1 ? "" : "s"); }

int Validate(const Options& options, std::ostream& out, std::ostream& err, bool progress) {
  int status;
  Progress rules(err, progress);
  std::unique_ptr<Session> session = LoadRules(options, err, &status, 0, &rules);
  if (session == nullptr) return status;
  const testpmd::EngineCounts c = session->engine->counts();
  out << options.rules << ": OK, " << Count(session->report.commands, "command") << ": "
      << Count(c.flows, "flow") << " on " << Count(c.rules, "DR rule") << " in "
      << Count(c.matchers, "matcher") << ", " << Count(c.tables, "table") << ", "
      << Count(c.domains, "domain") << "\n";
  return kExitOk;
}

int Dump(const Options& options, std::ostream& out, std::ostream& err) {
  int status;
  std::unique_ptr<Session> session = LoadRules(options, err, &status);
  if (session == nullptr) return status;
  // rdma-core's dump writes to a FILE*; collect it in memory, then copy it to `out`.
  char* buffer = nullptr;
  size_t size = 0;
  std::FILE* f = open_memstream(&buffer, &size);
  if (f == nullptr) {
    err << "drctl: cannot open a memory stream\n";
    return kExitUsage;
  }
  dr::DumpOptions dump_options;
  dump_options.stable_ids = options.stable_ids;
  absl::Status s;
  for (const dr::Domain* d : session->engine->Domains()) {
    s = dr::DumpDomain(*d, f, dump_options);
    if (!s.ok()) break;
  }
  std::fclose(f);
  out.write(buffer, static_cast<std::streamsize>(size));
  std::free(buffer);
  if (!s.ok()) {
    err << "drctl: dump: " << s.message() << "\n";
    return kExitUsage;
  }
  return kExitOk;
}

}  // namespace

int Drctl(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, bool progress,
          bool leave_to_exit) {
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h" || args[0] == "help")) {
    out << Usage();
    return kExitOk;
  }
  absl::StatusOr<Options> options = ParseOptions(args);
  if (!options.ok()) {
    err << "drctl: " << options.status().message() << "\n" << Usage();
    return kExitUsage;
  }
  options->leave_to_exit = leave_to_exit;
  if (options->command == "validate") return Validate(*options, out, err, progress);
  if (options->command == "run") return RunFrames(*options, out, err, progress);
  if (options->command == "trace") return TraceFrame(*options, out, err);
  return Dump(*options, out, err);
}

}  // namespace drsim::tools
