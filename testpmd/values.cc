#include "testpmd/values.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "hw/net_addr.h"

namespace drsim::testpmd {
namespace {

absl::Status Expected(const Token& token, absl::string_view expected, absl::string_view what) {
  return ErrorAt(token.pos, absl::StatusCode::kInvalidArgument,
                 absl::StrFormat("expected %s for %s, found '%s'", expected, what, token.text));
}

int DigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return 99;
}

}  // namespace

absl::StatusOr<uint64_t> ParseUnsigned(const Token& token, int width, absl::string_view what) {
  absl::string_view s = token.text;
  auto expected = [width] { return absl::StrFormat("an unsigned number of at most %d bits", width); };
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  } else if (s.size() > 1 && s[0] == '0') {
    base = 8;
    s.remove_prefix(1);
  }
  if (s.empty()) return Expected(token, expected(), what);
  uint64_t value = 0;
  if (base == 10 && s.size() <= 19) {  // (19 decimal digits cannot overflow 64 bits)
    for (char c : s) {
      const unsigned d = static_cast<unsigned char>(c) - '0';
      if (d > 9) return Expected(token, expected(), what);
      value = value * 10 + d;
    }
    s = {};
  }
  for (char c : s) {
    const int d = DigitValue(c);
    if (d >= base) return Expected(token, expected(), what);
    if (__builtin_mul_overflow(value, static_cast<uint64_t>(base), &value) ||
        __builtin_add_overflow(value, static_cast<uint64_t>(d), &value)) {
      return Expected(token, expected(), what);  // over 64 bits
    }
  }
  const bool fits = width >= 64 || (width > 0 ? value >> width == 0 : value == 0);
  if (!fits) {
    return ErrorAt(token.pos, absl::StatusCode::kInvalidArgument,
                   absl::StrFormat("%s does not fit %s (%d bits)", token.text, what, width));
  }
  return value;
}

absl::StatusOr<absl::uint128> ParseScalar(const Token& token, ValueKind kind, int width,
                                          absl::string_view what) {
  // testpmd's documentation writes `src last 0` to disable a range: a bare 0 is the zero address.
  const bool address = kind == ValueKind::kMac || kind == ValueKind::kIpv4 || kind == ValueKind::kIpv6;
  if (address && token.text == "0") return absl::uint128(0);
  switch (kind) {
    case ValueKind::kUnsigned: {
      DRSIM_ASSIGN_OR_RETURN(uint64_t v, ParseUnsigned(token, width > 64 ? 64 : width, what));
      return absl::uint128(v);
    }
    case ValueKind::kMac: {
      absl::StatusOr<hw::MacAddress> mac = hw::MacAddress::Parse(token.text);
      if (!mac.ok()) return Expected(token, "a MAC address (00:11:22:33:44:55)", what);
      absl::uint128 v = 0;
      for (uint8_t b : mac->bytes) v = v << 8 | b;
      return v;
    }
    case ValueKind::kIpv4: {
      absl::StatusOr<hw::Ipv4Address> ip = hw::Ipv4Address::Parse(token.text);
      if (!ip.ok()) return Expected(token, "an IPv4 address (a.b.c.d)", what);
      return absl::uint128(ip->value);
    }
    case ValueKind::kIpv6: {
      absl::StatusOr<hw::Ipv6Address> ip = hw::Ipv6Address::Parse(token.text);
      if (!ip.ok()) return Expected(token, "an IPv6 address", what);
      absl::uint128 v = 0;
      for (uint8_t b : ip->bytes) v = v << 8 | b;
      return v;
    }
    case ValueKind::kBool: {
      const std::string s = absl::AsciiStrToLower(token.text);
      if (s == "1" || s == "true" || s == "on" || s == "yes" || s == "set") return absl::uint128(1);
      if (s == "0" || s == "false" || s == "off" || s == "no" || s == "unset") return absl::uint128(0);
      return Expected(token, "a boolean (true/false, on/off, yes/no, set/unset, 1/0)", what);
    }
    case ValueKind::kColor:
      if (token.text == "green") return absl::uint128(0);
      if (token.text == "yellow") return absl::uint128(1);
      if (token.text == "red") return absl::uint128(2);
      return Expected(token, "a meter colour (green, yellow, red)", what);
    case ValueKind::kHex:
    case ValueKind::kKeyword:
    case ValueKind::kKeywordList:
    case ValueKind::kUnsignedList:
      break;
  }
  return Expected(token, "a scalar value", what);
}

absl::StatusOr<std::vector<uint8_t>> ParseHex(const Token& token, absl::string_view what) {
  absl::string_view s = token.text;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
  std::string digits(s);
  if (digits.size() % 2 == 1) digits.insert(digits.begin(), '0');
  std::vector<uint8_t> bytes;
  for (size_t i = 0; i < digits.size(); i += 2) {
    const int hi = DigitValue(digits[i]), lo = DigitValue(digits[i + 1]);
    if (hi > 15 || lo > 15) return Expected(token, "a hex byte string", what);
    bytes.push_back(static_cast<uint8_t>(hi << 4 | lo));
  }
  if (bytes.empty()) return Expected(token, "a hex byte string", what);
  return bytes;
}

}  // namespace drsim::testpmd
