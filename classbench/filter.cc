#include "classbench/filter.h"

#include <fstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "hw/net_addr.h"

namespace drsim::classbench {
namespace {

absl::Status Bad(absl::string_view file, int line, size_t column, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrFormat("%s:%d:%d: %s", file, line, column + 1, why));
}

struct Field {
  absl::string_view text;
  size_t column;  // 0-based
};

// Splits on tabs and runs of blanks, keeping "lo : hi" port ranges together.
std::vector<Field> SplitFields(absl::string_view line) {
  std::vector<Field> fields;
  size_t i = 1;  // past the '@'
  auto blank = [](char c) { return c == ' ' || c == '\t'; };
  while (i < line.size()) {
    while (i < line.size() && blank(line[i])) ++i;
    if (i >= line.size()) break;
    const size_t start = i;
    while (i < line.size() && line[i] != '\t') {
      if (line[i] == ' ') {
        // A blank next to a ':' belongs to a port range.
        size_t next = i;
        while (next < line.size() && line[next] == ' ') ++next;
        const bool joins = (next < line.size() && line[next] == ':') || (i > start && line[i - 1] == ':');
        if (!joins) break;
        i = next;
        continue;
      }
      ++i;
    }
    fields.push_back({line.substr(start, i - start), start});
  }
  return fields;
}

// Every line of `path` but blank and '#' ones, through `parse(line, path, line_number)`. NotFound when
// the file cannot be read; the first parse error; InvalidArgument "no <what>" for a file without items.
template <typename T, typename Parse>
absl::StatusOr<std::vector<T>> ReadItems(const std::string& path, const char* what, Parse parse) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrFormat("%s: cannot open", path));
  std::vector<T> items;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (absl::StripAsciiWhitespace(line).empty() || line[0] == '#') continue;
    DRSIM_ASSIGN_OR_RETURN(T item, parse(line, path, n));
    items.push_back(std::move(item));
  }
  if (items.empty()) return absl::InvalidArgumentError(absl::StrFormat("%s: no %s", path, what));
  return items;
}

}  // namespace

absl::StatusOr<Filter> ParseFilterLine(absl::string_view line, absl::string_view file, int line_number) {
  if (line.empty() || line[0] != '@') return Bad(file, line_number, 0, "a filter line starts with '@'");
  const std::vector<Field> fields = SplitFields(line);
  if (fields.size() < 5 || fields.size() > 6) {
    return Bad(file, line_number, 0,
               absl::StrFormat(
                   "expected 5 or 6 fields (src, dst, sport range, dport range, proto[, flags]), found %d",
                   fields.size()));
  }
  Filter f;
  auto prefix = [&](const Field& field, uint32_t* addr, uint32_t* mask) -> absl::Status {
    std::pair<absl::string_view, absl::string_view> parts =
        absl::StrSplit(field.text, absl::MaxSplits('/', 1));
    absl::StatusOr<hw::Ipv4Address> a = hw::Ipv4Address::Parse(parts.first);
    if (!a.ok()) {
      return Bad(file, line_number, field.column, absl::StrFormat("bad IPv4 address '%s'", parts.first));
    }
    int len;
    if (!absl::SimpleAtoi(parts.second, &len) || len < 0 || len > 32) {
      return Bad(file, line_number, field.column + parts.first.size() + 1,
                 absl::StrFormat("bad prefix length '%s' (0 to 32)", parts.second));
    }
    *mask = hw::Ipv4Address::PrefixMask(len).value;
    *addr = a->value & *mask;
    return absl::OkStatus();
  };
  auto range = [&](const Field& field, PortRange* r) -> absl::Status {
    std::vector<absl::string_view> parts = absl::StrSplit(field.text, ':');
    int lo, hi;
    if (parts.size() != 2 || !absl::SimpleAtoi(absl::StripAsciiWhitespace(parts[0]), &lo) ||
        !absl::SimpleAtoi(absl::StripAsciiWhitespace(parts[1]), &hi) || lo < 0 || hi > 0xffff || lo > hi) {
      return Bad(file, line_number, field.column,
                 absl::StrFormat("bad port range '%s' (lo : hi, 0 <= lo <= hi <= 65535)", field.text));
    }
    *r = {static_cast<uint16_t>(lo), static_cast<uint16_t>(hi)};
    return absl::OkStatus();
  };
  DRSIM_RETURN_IF_ERROR(prefix(fields[0], &f.src, &f.src_mask));
  DRSIM_RETURN_IF_ERROR(prefix(fields[1], &f.dst, &f.dst_mask));
  DRSIM_RETURN_IF_ERROR(range(fields[2], &f.sport));
  DRSIM_RETURN_IF_ERROR(range(fields[3], &f.dport));
  std::pair<absl::string_view, absl::string_view> pm =
      absl::StrSplit(fields[4].text, absl::MaxSplits('/', 1));
  uint32_t p, m;
  if (!absl::SimpleHexAtoi(pm.first, &p) || !absl::SimpleHexAtoi(pm.second, &m) || p > 0xff ||
      (m != 0 && m != 0xff)) {
    return Bad(file, line_number, fields[4].column,
               absl::StrFormat("bad protocol '%s' (0xPP/0xFF or 0x00/0x00)", fields[4].text));
  }
  f.proto = static_cast<uint8_t>(p & m);
  f.proto_mask = static_cast<uint8_t>(m);
  return f;
}

absl::StatusOr<std::vector<Filter>> ReadFilterFile(const std::string& path) {
  return ReadItems<Filter>(path, "filters", ParseFilterLine);
}

absl::StatusOr<Header> ParseTraceLine(absl::string_view line, absl::string_view file, int line_number) {
  struct Limit {
    const char* name;
    uint64_t max;
  };
  static constexpr Limit kFields[] = {
      {"source address", 0xffffffff},
      {"destination address", 0xffffffff},
      {"source port", 0xffff},
      {"destination port", 0xffff},
      {"protocol", 0xff},
  };
  uint64_t values[5];
  size_t i = 0;
  auto blank = [](char c) { return c == ' ' || c == '\t'; };
  for (size_t f = 0; f < 5; ++f) {
    while (i < line.size() && blank(line[i])) ++i;
    const size_t start = i;
    while (i < line.size() && !blank(line[i])) ++i;
    const absl::string_view text = line.substr(start, i - start);
    if (text.empty()) {
      return Bad(file, line_number, start,
                 absl::StrFormat("expected the %s (a trace line is: src dst sport dport proto [filter])",
                                 kFields[f].name));
    }
    if (!absl::SimpleAtoi(text, &values[f]) || values[f] > kFields[f].max) {
      return Bad(
          file, line_number, start,
          absl::StrFormat("bad %s '%s' (a decimal number up to %d)", kFields[f].name, text, kFields[f].max));
    }
  }
  Header h;
  h.src = static_cast<uint32_t>(values[0]);
  h.dst = static_cast<uint32_t>(values[1]);
  h.sport = static_cast<uint16_t>(values[2]);
  h.dport = static_cast<uint16_t>(values[3]);
  h.proto = static_cast<uint8_t>(values[4]);
  return h;
}

absl::StatusOr<std::vector<Header>> ReadTraceFile(const std::string& path) {
  return ReadItems<Header>(path, "headers", ParseTraceLine);
}

std::string FormatFilter(const Filter& f) {
  auto prefix = [](uint32_t addr, uint32_t mask) {
    return absl::StrFormat("%s/%d", hw::Ipv4Address{addr}.ToString(), __builtin_popcount(mask));
  };
  return absl::StrFormat("@%s\t%s\t%d : %d\t%d : %d\t0x%02X/0x%02X", prefix(f.src, f.src_mask),
                         prefix(f.dst, f.dst_mask), f.sport.lo, f.sport.hi, f.dport.lo, f.dport.hi, f.proto,
                         f.proto_mask);
}

std::vector<PortPrefix> RangeToPrefixes(PortRange r) {
  std::vector<PortPrefix> out;
  uint32_t lo = r.lo;
  const uint32_t hi = r.hi;
  while (lo <= hi) {
    uint32_t size = lo == 0 ? 0x10000 : lo & -lo;  // the largest aligned block starting at lo...
    while (lo + size - 1 > hi) size >>= 1;         // ...that stays inside the range
    out.push_back({static_cast<uint16_t>(lo), static_cast<uint16_t>(~(size - 1) & 0xffff)});
    lo += size;
  }
  return out;
}

std::optional<size_t> FirstMatch(const std::vector<Filter>& filters, const Header& header) {
  for (size_t i = 0; i < filters.size(); ++i) {
    if (filters[i].Matches(header)) return i;
  }
  return std::nullopt;
}

}  // namespace drsim::classbench
