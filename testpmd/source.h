// Where things are in a testpmd rule file, and errors that say so.
//
// Every token, item, field and action the parser produces carries a SourcePos (1-based line and column).
// Errors are ordinary absl::Status values; the position of the culprit travels with the status as a
// payload (WithPos / PosOf), so engine code returns plain absl::Status and a front end turns it into
// "file:line:col: error: message" (Diagnostic) without parsing messages.
//
// Plain values; thread-compatible.
#ifndef DRSIM_TESTPMD_SOURCE_H_
#define DRSIM_TESTPMD_SOURCE_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace drsim::testpmd {

struct SourcePos {
  int line = 0;    // 1-based; 0 = unknown
  int column = 0;  // 1-based, in bytes
  bool known() const { return line > 0; }
  friend bool operator==(SourcePos a, SourcePos b) { return a.line == b.line && a.column == b.column; }
};

// `status` with `pos` attached, unless it is OK or already carries a position (the innermost, most
// precise position wins).
absl::Status WithPos(absl::Status status, SourcePos pos);

// An error of `code` saying `message`, at `pos`.
absl::Status ErrorAt(SourcePos pos, absl::StatusCode code, absl::string_view message);

// The position attached to `status`, if any.
std::optional<SourcePos> PosOf(const absl::Status& status);

// One reported problem.
struct Diagnostic {
  std::string file;
  SourcePos pos;
  absl::StatusCode code = absl::StatusCode::kInvalidArgument;
  std::string message;

  // "file:line:col: error: message" (without the position parts that are unknown).
  std::string ToString() const;
};

// The diagnostic for a failed `status` of a command read from `file`.
Diagnostic MakeDiagnostic(absl::string_view file, const absl::Status& status);

}  // namespace drsim::testpmd

#endif  // DRSIM_TESTPMD_SOURCE_H_
