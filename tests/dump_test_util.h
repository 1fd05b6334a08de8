// Test support for dr/dump.h: capturing a dump, checking it against the record formats of rdma-core's
// dump (the reference, section 5.2) and the way mlx_steering_dump reads it (section 5.3), and rewriting
// object ids so that dumps can be compared with golden files.
#ifndef DRSIM_TESTS_DUMP_TEST_UTIL_H_
#define DRSIM_TESTS_DUMP_TEST_UTIL_H_

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace drsim::dr::testing {

// What `dump` writes to a memory stream, or its error.
absl::StatusOr<std::string> Capture(const std::function<absl::Status(std::FILE*)>& dump);

// The lines of `dump` (each without its newline). The dump must end with a newline.
std::vector<std::string> Lines(absl::string_view dump);

// OK when `line` is a record of a known type with exactly the fields, in the order and number formats,
// that the reference gives for it; otherwise InvalidArgument naming the line and what is wrong.
absl::Status CheckRecord(absl::string_view line);

// Every record checked with CheckRecord, then the order mlx_steering_dump relies on: it attaches each
// record to the last domain, table, matcher or rule seen, so one domain comes first with its info
// records, and every record names the object it is attached to (a table its domain, a matcher its table,
// a mask/pipe/builder record its matcher, a rule its matcher, an entry or an action its rule).
absl::Status CheckDump(absl::string_view dump);

// `dump` with every object id (domain, table, matcher, matcher pipe, rule and action ids, and the table
// ids of dest table and dest root table actions) replaced by its rank of first appearance (0x1, 0x2, ...).
// Equal ids get equal ranks, so links between records survive.
std::string NormalizeIds(absl::string_view dump);

}  // namespace drsim::dr::testing

#endif  // DRSIM_TESTS_DUMP_TEST_UTIL_H_
