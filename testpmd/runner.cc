#include "testpmd/runner.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "dr/status_errno.h"
#include "testpmd/flow_template_cache.h"
#include "testpmd/lexer.h"
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
    absl::StatusOr<CommandResult> r = scratch.Execute(past, false);
    if (!r.ok()) {  // the engine ran it once; replaying it must not fail
      report.diagnostics.push_back(
          MakeDiagnostic(file, absl::InternalError(absl::StrCat("replaying the engine's history failed: ",
                                                                r.status().ToString()))));
      return report;
    }
  }
  for (const Command& command : parsed.commands) {
    absl::StatusOr<CommandResult> r = scratch.Execute(command, false);
    if (!r.ok()) report.diagnostics.push_back(MakeDiagnostic(file, r.status()));
  }
  SortByPosition(report.diagnostics);
  return report;
}

FileReport RunFile(FlowEngine& engine, absl::string_view file, absl::string_view text) {
  std::istringstream in{std::string(text)};
  return RunStream(engine, file, in);
}

namespace {

// The checked path: the whole file checked against a scratch copy of the engine's state, then run.
FileReport CheckThenRun(FlowEngine& engine, absl::string_view file, const std::string& text,
                        const StreamOptions& options) {
  FileReport report = CheckFile(engine, file, text);
  if (!report.ok()) return report;
  for (const Command& command : ParseText(text).commands) {
    absl::StatusOr<CommandResult> r = engine.Execute(command, options.keep_outcomes);
    if (!r.ok()) {  // the check passed, so this means the engine's state changed behind the file's back
      report.diagnostics.push_back(MakeDiagnostic(file, r.status()));
      return report;
    }
    ++report.commands;
    if (options.keep_outcomes) report.outcomes.push_back({command.pos, *std::move(r)});
    if (options.on_command) options.on_command(report.commands);
  }
  return report;
}

}  // namespace

FileReport RunStream(FlowEngine& engine, absl::string_view file, std::istream& in,
                     const StreamOptions& options) {
  if (!engine.pristine()) {
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    return CheckThenRun(engine, file, text, options);
  }
  FileReport report;
  CommandStream stream(in);
  CommandTokens tokens;
  CommandParser parser;
  std::vector<absl::Status> errors;
  // Commands of a shape seen before skip the parse (flow_template_cache.h), unless each command's outcome
  // or history is kept.
  std::optional<FlowTemplateCache> templates;
  if (!options.keep_outcomes && !engine.options().keep_history) templates.emplace(engine);
  auto ran_from_template = [&]() {
    ++report.commands;
    ++report.templated;
    if (options.on_command) options.on_command(report.commands);
    return true;
  };
  auto take_line = [&](absl::string_view line, int line_number) {
    return templates && templates->TryLine(line, line_number) && ran_from_template();
  };
  while (stream.Next(&tokens, take_line)) {
    if (templates && templates->TryCreate(tokens)) {
      ran_from_template();
      continue;
    }
    errors.clear();
    Command* command = parser.Parse(tokens, &errors);
    for (const absl::Status& e : errors) report.diagnostics.push_back(MakeDiagnostic(file, e));
    if (command == nullptr) continue;
    absl::StatusOr<CommandResult> r = engine.Execute(*command, options.keep_outcomes);
    if (templates) templates->Ran(*command, r.ok() ? &*r : nullptr);
    if (!r.ok()) {
      report.diagnostics.push_back(MakeDiagnostic(file, r.status()));
      continue;
    }
    ++report.commands;
    if (options.keep_outcomes && report.diagnostics.empty()) {
      report.outcomes.push_back({command->pos, *std::move(r)});
    }
    if (options.on_command) options.on_command(report.commands);
  }
  if (stream.read_error() != 0) {  // at the line the failed read was to give
    report.diagnostics.push_back(
        MakeDiagnostic(file, WithPos(dr::StatusFromErrno(stream.read_error(), "reading the file"),
                                     SourcePos{stream.lines() + 1, 1})));
  }
  templates.reset();   // (its templates hold the engine's objects)
  if (!report.ok()) {  // nothing of a file with errors stays installed
    engine.Reset();
    report.outcomes.clear();
    report.commands = 0;
    report.templated = 0;
    SortByPosition(report.diagnostics);
  }
  return report;
}

}  // namespace drsim::testpmd
