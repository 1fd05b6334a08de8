// Typed literals of testpmd commands: each parser takes one token and returns its value, or an error at the
// token saying what was expected ("expected an IPv4 address (a.b.c.d) for 'src', found '10.0.0'").
//
// Addresses and numbers become absl::uint128 in host order (an IPv6 address is its 128-bit number), which
// is what the item fields and masks are computed with. Hex strings keep their bytes.
//
// Pure functions; thread-safe.
#ifndef DRSIM_TESTPMD_VALUES_H_
#define DRSIM_TESTPMD_VALUES_H_

#include <cstdint>
#include <vector>

#include "absl/numeric/int128.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "testpmd/lexer.h"
#include "testpmd/schema.h"

namespace drsim::testpmd {

// An unsigned number as C's strtoumax with base 0 reads it (decimal, 0x hex, leading-0 octal) that fits
// `width` bits (1..64). `what` names the value in the error.
absl::StatusOr<uint64_t> ParseUnsigned(const Token& token, int width, absl::string_view what);

// A value of `kind` (kUnsigned, kMac, kIpv4, kIpv6, kBool, kColor) as a number that fits `width` bits.
// Colours are rte_color's numbers: green 0, yellow 1, red 2.
absl::StatusOr<absl::uint128> ParseScalar(const Token& token, ValueKind kind, int width,
                                          absl::string_view what);

// ParseScalar with the value's name made by `what()` only when there is an error to name it in: a rule
// file's values are mostly right, and formatting names for them all costs more than parsing them.
template <typename WhatFn>
absl::StatusOr<absl::uint128> ParseScalarNamed(const Token& token, ValueKind kind, int width, WhatFn what) {
  absl::StatusOr<absl::uint128> value = ParseScalar(token, kind, width, "");
  if (value.ok()) return value;
  return ParseScalar(token, kind, width, what());
}

// A hex byte string ("0a0b0c" or "0x0a0b0c"); an odd number of digits gets a leading zero.
absl::StatusOr<std::vector<uint8_t>> ParseHex(const Token& token, absl::string_view what);

// All ones in the low `width` bits of a `Bits` (uint64_t or absl::uint128; width 0 to its bits).
template <typename Bits>
Bits OnesIn(int width) {
  if (width <= 0) return 0;
  if (width >= static_cast<int>(8 * sizeof(Bits))) return ~Bits{0};
  return (Bits{1} << width) - 1;
}
inline absl::uint128 Ones(int width) { return OnesIn<absl::uint128>(width); }

}  // namespace drsim::testpmd

#endif  // DRSIM_TESTPMD_VALUES_H_
