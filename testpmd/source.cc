#include "testpmd/source.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace drsim::testpmd {
namespace {

constexpr absl::string_view kPosPayload = "drsim.testpmd/source_pos";

}  // namespace

absl::Status WithPos(absl::Status status, SourcePos pos) {
  if (status.ok() || !pos.known() || PosOf(status)) return status;
  status.SetPayload(kPosPayload, absl::Cord(absl::StrCat(pos.line, ":", pos.column)));
  return status;
}

absl::Status ErrorAt(SourcePos pos, absl::StatusCode code, absl::string_view message) {
  return WithPos(absl::Status(code, message), pos);
}

std::optional<SourcePos> PosOf(const absl::Status& status) {
  const auto payload = status.GetPayload(kPosPayload);
  if (!payload) return std::nullopt;
  std::pair<std::string, std::string> parts = absl::StrSplit(std::string(*payload), ':');
  SourcePos pos;
  if (!absl::SimpleAtoi(parts.first, &pos.line) || !absl::SimpleAtoi(parts.second, &pos.column)) {
    return std::nullopt;
  }
  return pos;
}

std::string Diagnostic::ToString() const {
  std::string out = file;
  if (pos.known()) absl::StrAppend(&out, out.empty() ? "" : ":", pos.line, ":", pos.column);
  absl::StrAppend(&out, out.empty() ? "" : ": ", "error: ", message);
  return out;
}

Diagnostic MakeDiagnostic(absl::string_view file, const absl::Status& status) {
  Diagnostic d;
  d.file = std::string(file);
  d.pos = PosOf(status).value_or(SourcePos{});
  d.code = status.code();
  d.message = std::string(status.message());
  return d;
}

}  // namespace drsim::testpmd
