// Whole rule files: one testpmd command per line (a trailing backslash continues a line, `#` starts a
// comment), checked and run against a FlowEngine — what a CLI's `validate RULES` and `run RULES` do.
//
// CheckFile reports every error of the file without touching the engine: every syntax error of every line
// (the parser resumes after errors, lexer.h/parser.h), then every command executed in order on a scratch
// NIC and engine of the same shape that first replayed the engine's history, so each command is judged in
// the state the real engine would be in when the file runs (flow ids, set buffers, meters, earlier lines
// of the file). A command that fails there simply does not happen, and the check goes on.
// RunFile runs the file only when CheckFile found nothing. A command that then fails anyway (possible only
// when the NIC was changed behind the engine's back) stops the run there and is reported.
//
// Diagnostics read "file:line:col: error: what was expected / what is wrong", in file order.
//
// Not thread-safe (the engine is not).
#ifndef DRSIM_TESTPMD_RUNNER_H_
#define DRSIM_TESTPMD_RUNNER_H_

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
  std::vector<CommandOutcome> outcomes;  // RunFile: each command's result, when the file ran
  bool ok() const { return diagnostics.empty(); }
};

FileReport CheckFile(const FlowEngine& engine, absl::string_view file, absl::string_view text);
FileReport RunFile(FlowEngine& engine, absl::string_view file, absl::string_view text);

}  // namespace drsim::testpmd

#endif  // DRSIM_TESTPMD_RUNNER_H_
