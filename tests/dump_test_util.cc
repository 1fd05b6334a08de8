#include "tests/dump_test_util.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <regex>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"

namespace drsim::dr::testing {
namespace {

// The format of one field, from the printf formats of the reference (section 5.2).
enum class Kind {
  kHex,        // 0x%x / 0x%lx
  kDec,        // %d
  kUnsigned,   // %u
  kBool,       // %d of a bool: 0 or 1
  kString,     // %s without a comma
  kGvmi,       // 0%x: a literal 0, then hex digits
  kDomain,     // %d of the domain type: 0, 1 or 2
  kTableType,  // %d of FS_FT_NIC_RX 0, FS_FT_NIC_TX 1, FS_FT_FDB 4
  kFlexName,   // icmp_dw0, icmp_dw1, icmpv6_dw0 or icmpv6_dw1
  kHexBytes,   // hex digits of whole bytes, no 0x
};

struct RecordFormat {
  std::vector<Kind> fields;  // after the record type id
  std::vector<int> ids;      // indexes of the fields holding object ids
};

using K = Kind;

const std::map<int, RecordFormat>& Formats() {
  static const auto* formats = new std::map<int, RecordFormat>{
      {3000,
       {{K::kHex, K::kDomain, K::kGvmi, K::kBool, K::kString, K::kString, K::kUnsigned, K::kUnsigned,
         K::kUnsigned, K::kUnsigned, K::kUnsigned},
        {0}}},
      {3001, {{K::kHex, K::kFlexName, K::kHex}, {0}}},
      {3002, {{K::kHex, K::kUnsigned, K::kString, K::kDec}, {0}}},
      {3003, {{K::kHex, K::kDec, K::kHex, K::kHex, K::kHex}, {0}}},
      {3004, {{K::kHex, K::kHex, K::kHex, K::kHex, K::kHex, K::kDec, K::kBool}, {0}}},
      {3100, {{K::kHex, K::kHex, K::kTableType, K::kDec}, {0, 1}}},
      {3101, {{K::kHex, K::kHex}, {0}}},
      {3102, {{K::kHex, K::kHex}, {0}}},
      {3200, {{K::kHex, K::kHex, K::kDec}, {0, 1}}},
      {3202, {{K::kHex, K::kHex, K::kDec, K::kHex, K::kHex, K::kDec}, {0, 1}}},
      {3203, {{K::kHex, K::kHex, K::kDec, K::kHex, K::kHex, K::kDec}, {0, 1}}},
      {3204, {{K::kHex, K::kDec, K::kBool, K::kHex, K::kDec}, {0}}},
      {3300, {{K::kHex, K::kHex}, {0, 1}}},
      {3303, {{K::kHex, K::kHex, K::kHexBytes}, {1}}},
      {3304, {{K::kHex, K::kHex, K::kHexBytes}, {1}}},
      // Actions: the action, the rule, then the action's own fields.
      {3400, {{K::kHex, K::kHex, K::kHex}, {0, 1}}},
      {3401, {{K::kHex, K::kHex, K::kHex}, {0, 1}}},
      {3402, {{K::kHex, K::kHex, K::kHex, K::kDec, K::kHex, K::kHex, K::kHex}, {0, 1}}},
      {3403, {{K::kHex, K::kHex}, {0, 1}}},
      {3404, {{K::kHex, K::kHex, K::kHex}, {0, 1}}},
      {3405, {{K::kHex, K::kHex, K::kHex, K::kHex}, {0, 1, 2, 3}}},
      {3406, {{K::kHex, K::kHex, K::kHex}, {0, 1}}},
      {3407, {{K::kHex, K::kHex, K::kHex}, {0, 1}}},
      {3408, {{K::kHex, K::kHex, K::kHex}, {0, 1}}},
      {3409, {{K::kHex, K::kHex}, {0, 1}}},
      {3410, {{K::kHex, K::kHex, K::kHex}, {0, 1}}},
      {3411, {{K::kHex, K::kHex, K::kHex}, {0, 1}}},
      {3412, {{K::kHex, K::kHex, K::kHex}, {0, 1}}},
      {3413, {{K::kHex, K::kHex}, {0, 1}}},
      {3414, {{K::kHex, K::kHex, K::kHex, K::kHex, K::kHex, K::kHex}, {0, 1, 2}}},
      {3415, {{K::kHex, K::kHex, K::kHex, K::kHex, K::kHex, K::kHex, K::kHex}, {0, 1, 2}}},
      {3416, {{K::kHex, K::kHex, K::kHex, K::kHex, K::kHex}, {0, 1}}},
      {3417, {{K::kHex, K::kHex, K::kHex}, {0, 1}}},
      {3418, {{K::kHex, K::kHex, K::kHex}, {0, 1}}},
      {3419, {{K::kHex, K::kHex, K::kHex}, {0, 1}}},
      {3423, {{K::kHex, K::kHex}, {0, 1}}},
      {3424, {{K::kHex, K::kHex, K::kHex}, {0, 1, 2}}},
  };
  return *formats;
}

const std::regex& PatternOf(Kind kind) {
  static const auto* patterns = new std::map<Kind, std::regex>{
      {K::kHex, std::regex("0x[0-9a-f]+")},
      {K::kDec, std::regex("-?[0-9]+")},
      {K::kUnsigned, std::regex("[0-9]+")},
      {K::kBool, std::regex("[01]")},
      {K::kString, std::regex("[^,]+")},
      {K::kGvmi, std::regex("0[0-9a-f]+")},
      {K::kDomain, std::regex("[012]")},
      {K::kTableType, std::regex("[014]")},
      {K::kFlexName, std::regex("icmp_dw0|icmp_dw1|icmpv6_dw0|icmpv6_dw1")},
      {K::kHexBytes, std::regex("([0-9a-f]{2})+")},
  };
  return patterns->at(kind);
}

// The mask record: the matcher, then outer, inner, misc, misc2, misc3, misc4 and misc5, each 64 bytes in
// hex or empty; when misc5 is empty an extra empty field follows (rdma-core prints ",\n" for it).
absl::Status CheckMaskRecord(absl::string_view line, const std::vector<std::string>& fields) {
  static const std::regex kSection("([0-9a-f]{128})?");
  const bool misc5 = fields.size() == 9 && !fields[8].empty();
  if (!(fields.size() == 10 && fields[8].empty() && fields[9].empty()) && !misc5) {
    return absl::InvalidArgumentError(
        absl::StrCat("3205 needs 7 sections, and a trailing empty field ", "when misc5 is empty: ", line));
  }
  if (!std::regex_match(fields[1], PatternOf(K::kHex))) {
    return absl::InvalidArgumentError(absl::StrCat("3205 matcher id is not hex: ", line));
  }
  for (size_t i = 2; i < fields.size(); ++i) {
    if (!std::regex_match(fields[i], kSection)) {
      return absl::InvalidArgumentError(
          absl::StrCat("3205 section ", i - 2, " is not 128 hex digits: ", line));
    }
  }
  return absl::OkStatus();
}

std::vector<std::string> Fields(absl::string_view line) { return absl::StrSplit(line, ','); }

}  // namespace

absl::StatusOr<std::string> Capture(const std::function<absl::Status(std::FILE*)>& dump) {
  char* data = nullptr;
  size_t size = 0;
  std::FILE* f = open_memstream(&data, &size);
  if (f == nullptr) return absl::InternalError("open_memstream failed");
  absl::Status status = dump(f);
  std::fclose(f);
  std::string out(data, size);
  std::free(data);
  if (!status.ok()) return status;
  return out;
}

std::vector<std::string> Lines(absl::string_view dump) {
  std::vector<std::string> lines = absl::StrSplit(dump, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

absl::Status CheckRecord(absl::string_view line) {
  const std::vector<std::string> fields = Fields(line);
  int type = 0;
  if (!absl::SimpleAtoi(fields[0], &type)) {
    return absl::InvalidArgumentError(absl::StrCat("no record type: ", line));
  }
  if (type == 3205) return CheckMaskRecord(line, fields);
  auto it = Formats().find(type);
  if (it == Formats().end()) return absl::InvalidArgumentError(absl::StrCat("unknown record type: ", line));
  const std::vector<Kind>& kinds = it->second.fields;
  size_t expected = kinds.size() + 1;
  if (type == 3402 && fields.size() > 5) {
    // With a modify-header pattern, one 0x%016lx per pattern action follows.
    int actions = 0;
    if (std::regex_match(fields[5], PatternOf(K::kHex))) actions = std::stoi(fields[5], nullptr, 16);
    expected += actions;
    for (size_t i = kinds.size() + 1; i < fields.size(); ++i) {
      if (!std::regex_match(fields[i], std::regex("0x[0-9a-f]{16}"))) {
        return absl::InvalidArgumentError(absl::StrCat("3402 pattern action ", fields[i], ": ", line));
      }
    }
  }
  if (fields.size() != expected) {
    return absl::InvalidArgumentError(
        absl::StrFormat("record %d has %d fields, not %d: %s", type, fields.size() - 1, expected - 1, line));
  }
  for (size_t i = 0; i < kinds.size(); ++i) {
    if (!std::regex_match(fields[i + 1], PatternOf(kinds[i]))) {
      return absl::InvalidArgumentError(absl::StrFormat("record %d field %d '%s' has the wrong format: %s",
                                                        type, i + 1, fields[i + 1], line));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckDump(absl::string_view dump) {
  if (dump.empty() || dump.back() != '\n') return absl::InvalidArgumentError("the dump does not end a line");
  const std::vector<std::string> lines = Lines(dump);
  if (lines.empty() || !absl::StartsWith(lines[0], "3000,")) {
    return absl::InvalidArgumentError("the dump does not start with a domain (3000) record");
  }
  std::string domain, table, matcher, rule;
  bool matcher_has_mask = false;
  for (const std::string& line : lines) {
    DRSIM_RETURN_IF_ERROR(CheckRecord(line));
    const std::vector<std::string> f = Fields(line);
    const int type = std::stoi(f[0]);
    auto expect = [&](size_t field, const std::string& parent, const char* what) -> absl::Status {
      if (f[field] == parent) return absl::OkStatus();
      return absl::InvalidArgumentError(absl::StrFormat("record %d names %s %s, not the last one (%s): %s",
                                                        type, what, f[field], parent, line));
    };
    absl::Status link;
    if (type == 3000) {
      if (!domain.empty()) return absl::InvalidArgumentError("a second domain record");
      domain = f[1];
    } else if (type > 3000 && type < 3100) {
      if (!table.empty())
        return absl::InvalidArgumentError(absl::StrCat("domain info after a table: ", line));
      link = expect(1, domain, "domain");
    } else if (type == 3100) {
      link = expect(2, domain, "domain");
      table = f[1];
      matcher.clear();
      rule.clear();
    } else if (type == 3101 || type == 3102) {
      link = expect(1, table, "table");
    } else if (type == 3200) {
      link = expect(2, table, "table");
      matcher = f[1];
      matcher_has_mask = false;
      rule.clear();
    } else if (type == 3205 || type == 3204) {
      link = expect(1, matcher, "matcher");
      if (type == 3205) matcher_has_mask = true;
    } else if (type == 3202 || type == 3203) {
      link = expect(2, matcher, "matcher");
    } else if (type == 3300) {
      link = expect(2, matcher, "matcher");
      // mlx_steering_dump's tree view prints the mask of every matcher it shows.
      if (link.ok() && !matcher_has_mask)
        link = absl::InvalidArgumentError("a rule of a matcher without a mask");
      rule = f[1];
    } else {
      link = expect(2, rule, "rule");  // 3303/3304 entries and 34xx actions
    }
    if (!link.ok()) return link;
  }
  return absl::OkStatus();
}

std::string NormalizeIds(absl::string_view dump) {
  std::map<std::string, int> rank;
  std::vector<std::string> out;
  for (const std::string& line : Lines(dump)) {
    std::vector<std::string> f = Fields(line);
    int type = 0;
    auto it = absl::SimpleAtoi(f[0], &type) ? Formats().find(type) : Formats().end();
    const std::vector<int> ids = type == 3205            ? std::vector<int>{0}
                                 : it != Formats().end() ? it->second.ids
                                                         : std::vector<int>{};
    for (int i : ids) {
      if (static_cast<size_t>(i + 1) >= f.size()) continue;
      // Domain ids ((pid or id) << 8 | type) are ranked apart, as they could equal an object's id, and so
      // are the ids of a matcher's pipes, which stable ids print as the matcher's id.
      const bool domain = type < 3100 || (type == 3100 && i == 1);
      const bool pipe = (type == 3202 || type == 3203) && i == 0;
      const std::string key = absl::StrCat(domain ? "d" : pipe ? "p" : "o", f[i + 1]);
      auto [pos, added] = rank.emplace(key, static_cast<int>(rank.size()) + 1);
      f[i + 1] = absl::StrFormat("0x%x", pos->second);
    }
    out.push_back(absl::StrJoin(f, ","));
  }
  return absl::StrCat(absl::StrJoin(out, "\n"), "\n");
}

}  // namespace drsim::dr::testing
