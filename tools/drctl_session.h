// What drctl's commands share: the parsed command line, and a software NIC programmed from a rule file.
#ifndef DRSIM_TOOLS_DRCTL_SESSION_H_
#define DRSIM_TOOLS_DRCTL_SESSION_H_

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sim/nic.h"
#include "sim/pcap_file.h"
#include "testpmd/engine.h"
#include "testpmd/runner.h"
#include "tools/drctl_progress.h"

namespace drsim::tools {

// Exit statuses (drctl.h).
inline constexpr int kExitOk = 0;
inline constexpr int kExitRejected = 1;
inline constexpr int kExitUsage = 2;

struct Options {
  std::string command;  // validate, run, trace, dump
  std::string rules;
  std::string pcap;
  std::optional<int> from_vport;  // nullopt: from the wire
  std::string out_dir;
  std::string verdicts;
  bool json = false;
  std::optional<long> frame;  // trace
  bool stable_ids = false;    // dump
  int vfs = 4;
  int queues = 16;
  std::string after;             // run: testpmd commands to run after the last frame
  std::optional<double> wait_s;  // run: seconds the NIC clock runs on after the last frame
  bool leave_to_exit = false;    // sessions are left to the process's exit (drctl.h)
};

// Parses drctl's arguments; InvalidArgument naming the culprit (kExitUsage).
absl::StatusOr<Options> ParseOptions(const std::vector<std::string>& args);

// The usage text.
const char* Usage();

// A NIC with `options.vfs` VFs and a testpmd engine on it that ran the rule file.
// With `leave_to_exit` its destructor lets the NIC and the engine go without tearing them down.
struct Session {
  Session() = default;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session();

  std::unique_ptr<sim::Nic> nic;
  std::unique_ptr<testpmd::FlowEngine> engine;
  testpmd::FileReport report;  // the commands run (their outcomes are not kept)
  bool leave_to_exit = false;
};

// Streams the rule file into a NIC whose clock reads `start_ns` (the first frame's time: rules are made as
// the capture begins), one command at a time (testpmd/runner.h); `progress` (if given) counts the rules.
// The engine keeps a history only when --after will check commands against it. Where the process may run on
// two CPUs, a second thread faults in the load's huge pages meanwhile (hw/huge_page_stock.h). On failure,
// writes the diagnostics (or the read error) to `err` and returns nullptr with *exit_status set.
std::unique_ptr<Session> LoadRules(const Options& options, std::ostream& err, int* exit_status,
                                   uint64_t start_ns = 0, Progress* progress = nullptr);

// The text of the file at `path`; nullopt, with "drctl: PATH: cannot open the WHAT" on `err`, when it
// cannot be read.
std::optional<std::string> ReadTextFile(const std::string& path, absl::string_view what, std::ostream& err);

// The NIC time of a frame: its pcap timestamp in nanoseconds (0 before the epoch).
uint64_t FrameTimeNs(const sim::PcapFrame& frame);

// The command of a command file's `text` starting on `line` (1-based) as the lexer reads it: its words
// joined by one blank (continuation lines joined, comments left out); "" when no command starts there.
std::string CommandText(absl::string_view text, int line);

}  // namespace drsim::tools

#endif  // DRSIM_TOOLS_DRCTL_SESSION_H_
