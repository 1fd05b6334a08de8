#include "testpmd/runner.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "testpmd/parser.h"

namespace drsim::testpmd {
namespace {

void SortByPosition(std::vector<Diagnostic>& diagnostics) {
  std::stable_sort(diagnostics.begin(), diagnostics.end(), [](const Diagnostic& a, const Diagnostic& b) {
    return std::make_pair(a.pos.line, a.pos.column) < std::make_pair(b.pos.line, b.pos.column);
  });
}

}  // namespace

FileReport CheckFile(const FlowEngine& engine, absl::string_view file, absl::string_view text) {
  FileReport report;
  ParsedText parsed = ParseText(text);
  for (const absl::Status& e : parsed.errors) report.diagnostics.push_back(MakeDiagnostic(file, e));

  sim::Nic scratch_nic(engine.nic().num_vfs());
  FlowEngine scratch(scratch_nic, engine.options());
  for (const Command& past : engine.history()) {
    absl::StatusOr<CommandResult> r = scratch.Execute(past);
    if (!r.ok()) {  // the engine ran it once; replaying it must not fail
      report.diagnostics.push_back(
          MakeDiagnostic(file, absl::InternalError(absl::StrCat("replaying the engine's history failed: ",
                                                                r.status().ToString()))));
      return report;
    }
  }
  for (const Command& command : parsed.commands) {
    absl::StatusOr<CommandResult> r = scratch.Execute(command);
    if (!r.ok()) report.diagnostics.push_back(MakeDiagnostic(file, r.status()));
  }
  SortByPosition(report.diagnostics);
  return report;
}

FileReport RunFile(FlowEngine& engine, absl::string_view file, absl::string_view text) {
  FileReport report = CheckFile(engine, file, text);
  if (!report.ok()) return report;
  for (const Command& command : ParseText(text).commands) {
    absl::StatusOr<CommandResult> r = engine.Execute(command);
    if (!r.ok()) {  // the check passed, so this means the engine's state changed behind the file's back
      report.diagnostics.push_back(MakeDiagnostic(file, r.status()));
      return report;
    }
    report.outcomes.push_back({command.pos, *std::move(r)});
  }
  return report;
}

}  // namespace drsim::testpmd
