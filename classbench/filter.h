// ClassBench filter sets (Taylor and Turner's packet-classification benchmark): the five-field IPv4 rules
// that ACL, firewall and IP-chain benches are made of, read from ClassBench's text format.
//
// A filter file has one filter per line, earlier filters taking precedence:
//   @<src ip>/<len> <dst ip>/<len> <sport lo> : <sport hi> <dport lo> : <dport hi> <proto>/<mask>
//   [<flags>/<mask>]
// Fields are separated by tabs or runs of blanks; the optional sixth field (TCP flags in some sets) is read
// and ignored. Blank lines and lines starting with '#' are skipped. Errors name file:line:col and what was
// expected. A filter keeps its prefixes' address bits (the host bits are cleared) and its protocol under
// its mask (0x00/0x00 is any protocol).
//
// DR matches exact values under a mask, so a filter becomes rules under one or more masks: RangeToPrefixes
// splits a port range into the aligned blocks (value, mask) that cover it exactly, at most 30 for 16 bits.
//
// Pure functions of their arguments (ReadFilterFile reads the file); thread-safe.
#ifndef DRSIM_CLASSBENCH_FILTER_H_
#define DRSIM_CLASSBENCH_FILTER_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace drsim::classbench {

struct PortRange {
  uint16_t lo = 0, hi = 0xffff;
  bool all() const { return lo == 0 && hi == 0xffff; }
  bool operator==(const PortRange& o) const { return lo == o.lo && hi == o.hi; }
};

// A packet's five fields, host order.
struct Header {
  uint32_t src = 0, dst = 0;
  uint16_t sport = 0, dport = 0;
  uint8_t proto = 0;
};

struct Filter {
  uint32_t src = 0, src_mask = 0;  // the prefix, host order; mask 0: any
  uint32_t dst = 0, dst_mask = 0;
  PortRange sport, dport;
  uint8_t proto = 0, proto_mask = 0;  // mask 0xff or 0

  bool operator==(const Filter& o) const {
    return src == o.src && src_mask == o.src_mask && dst == o.dst && dst_mask == o.dst_mask &&
           sport == o.sport && dport == o.dport && proto == o.proto && proto_mask == o.proto_mask;
  }
  bool Matches(const Header& h) const {
    return (h.src & src_mask) == src && (h.dst & dst_mask) == dst && h.sport >= sport.lo &&
           h.sport <= sport.hi && h.dport >= dport.lo && h.dport <= dport.hi &&
           (h.proto & proto_mask) == proto;
  }
};

// One filter line, with its leading '@'. InvalidArgument "file:line:col: what was expected".
absl::StatusOr<Filter> ParseFilterLine(absl::string_view line, absl::string_view file, int line_number);

// Every filter of a ClassBench file, in order. NotFound when it cannot be read; InvalidArgument for the
// first bad line, or a file without filters.
absl::StatusOr<std::vector<Filter>> ReadFilterFile(const std::string& path);

// A ClassBench trace (trace_generator's output): one header per line, whitespace-separated decimal
// fields "<src> <dst> <sport> <dport> <proto>" with the addresses as 32-bit integers, optionally followed by
// the filter the generator drew it from, or by the TCP flags and that filter (later trace_generators): any
// fields after the fifth are ignored. Blank and '#' lines are skipped.
// InvalidArgument "file:line:col: what was expected" for a bad line.
absl::StatusOr<Header> ParseTraceLine(absl::string_view line, absl::string_view file, int line_number);
// Every header of a trace file. NotFound when it cannot be read; InvalidArgument for the first bad line,
// or a file without headers.
absl::StatusOr<std::vector<Header>> ReadTraceFile(const std::string& path);

// ClassBench's text for `filter` (ParseFilterLine reads it back to the same filter).
std::string FormatFilter(const Filter& filter);

// The aligned blocks (value, mask) that cover [range.lo, range.hi] exactly, lowest first.
struct PortPrefix {
  uint16_t value = 0, mask = 0;
};
std::vector<PortPrefix> RangeToPrefixes(PortRange range);

// The index of the first filter `header` fits (the set's verdict), or nullopt.
std::optional<size_t> FirstMatch(const std::vector<Filter>& filters, const Header& header);

}  // namespace drsim::classbench

#endif  // DRSIM_CLASSBENCH_FILTER_H_
