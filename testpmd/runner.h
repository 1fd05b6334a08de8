// Whole rule files: one testpmd command per line (a trailing backslash continues a line, `#` starts a
// comment), checked and run against a FlowEngine — what a CLI's `validate RULES` and `run RULES` do.
//
// What
//   CheckFile reports every error of a file without touching the engine. RunFile and RunStream install a
//   file only when it is clean: on any error, the engine is left as it was and every error is reported.
//   Diagnostics read "file:line:col: error: what was expected / what is wrong", in file order.
//
// How
//   On a pristine engine (engine.h: nothing ran on it yet), RunStream reads, parses and runs one command
//   at a time on the engine itself, keeping nothing of a command once it ran: a million-rule file is never
//   held whole, as text or parsed. A command that fails (or does not parse) simply does not happen and the
//   file goes on, so later errors are found in the state the file would be in; at the end, a file with an
//   error is undone whole by resetting the engine (FlowEngine::Reset), which was pristine. When neither
//   outcomes nor the engine's history are kept, a `flow create` of a shape already run twice is made from
//   the template of an earlier flow (flow_template_cache.h), without being parsed: the same flow, faster.
//   On an engine that already holds state, a file is checked first: CheckFile parses it all, replays the
//   engine's history (EngineOptions::keep_history) on a scratch NIC and engine of the same shape, and
//   runs every command there, each judged in the state the real engine would be in. Then the file runs. A
//   command that fails anyway (possible only when the NIC was changed behind the engine's back) stops the
//   run there and is reported.
//
// Thread-safety
//   Not thread-safe (the engine is not).
#ifndef DRSIM_TESTPMD_RUNNER_H_
#define DRSIM_TESTPMD_RUNNER_H_

#include <cstddef>
#include <functional>
#include <istream>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "testpmd/engine.h"
#include "testpmd/source.h"

namespace drsim::testpmd {

struct CommandOutcome {
  SourcePos pos;         // where the command starts
  CommandResult result;  // what it did, and what testpmd prints
};

struct FileReport {
  std::vector<Diagnostic> diagnostics;   // every problem, in file order
  std::vector<CommandOutcome> outcomes;  // RunFile: each command's result, when the file ran (and kept)
  size_t commands = 0;                   // the commands that ran, when the file ran
  size_t templated = 0;                  // of those, the flows made from a template (RunStream, below)
  bool ok() const { return diagnostics.empty(); }
};

struct StreamOptions {
  // Keep each command's outcome and text in the report (a million-rule file's would cost more than its
  // flows); without it, commands make no text.
  bool keep_outcomes = true;
  // Called after each command that ran, with the number run so far (progress lines).
  std::function<void(size_t commands)> on_command;
};

FileReport CheckFile(const FlowEngine& engine, absl::string_view file, absl::string_view text);
FileReport RunFile(FlowEngine& engine, absl::string_view file, absl::string_view text);
// RunFile on a stream, one command at a time.
FileReport RunStream(FlowEngine& engine, absl::string_view file, std::istream& in,
                     const StreamOptions& options = {});

}  // namespace drsim::testpmd

#endif  // DRSIM_TESTPMD_RUNNER_H_
