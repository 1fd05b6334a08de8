#include "hw/net_addr.h"

#include <arpa/inet.h>

#include <array>
#include <string>

#include "absl/strings/str_format.h"
#include "hw/byte_order.h"

namespace drsim::hw {
namespace {

// Each byte's value as a hex digit; 16 or more for a byte that is none.
constexpr std::array<uint8_t, 256> kHexValue = [] {
  std::array<uint8_t, 256> value{};
  for (uint8_t& v : value) v = 0xff;
  for (int c = 0; c < 10; ++c) value['0' + c] = static_cast<uint8_t>(c);
  for (int c = 0; c < 6; ++c) value['a' + c] = value['A' + c] = static_cast<uint8_t>(10 + c);
  return value;
}();

int HexDigit(char c) {
  const uint8_t value = kHexValue[static_cast<unsigned char>(c)];
  return value < 16 ? value : -1;
}

}  // namespace

absl::StatusOr<MacAddress> MacAddress::Parse(absl::string_view text) {
  MacAddress mac;
  // Exactly six two-digit hex groups separated by ':' or '-'.
  bool ok = text.size() == 17;
  for (size_t i = 0; ok && i < 6; ++i) {
    int hi = HexDigit(text[3 * i]), lo = HexDigit(text[3 * i + 1]);
    if (hi < 0 || lo < 0 || (i < 5 && text[3 * i + 2] != ':' && text[3 * i + 2] != '-'))
      ok = false;
    else
      mac.bytes[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  if (!ok) return absl::InvalidArgumentError(absl::StrFormat("bad MAC address \"%s\"", text));
  return mac;
}

std::string MacAddress::ToString() const {
  return absl::StrFormat("%02x:%02x:%02x:%02x:%02x:%02x", bytes[0], bytes[1], bytes[2], bytes[3], bytes[4],
                         bytes[5]);
}

absl::StatusOr<Ipv4Address> Ipv4Address::Parse(absl::string_view text) {
  // inet_pton's dotted quad: four decimal parts of 0..255 with no leading zero, read in place.
  uint32_t value = 0;
  int parts = 0;
  size_t i = 0;
  bool ok = true;
  while (ok && parts < 4) {
    size_t start = i;
    uint32_t part = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9' && i - start < 3)
      part = part * 10 + (text[i++] - '0');
    ok = i > start && part <= 255 && (text[start] != '0' || i - start == 1);
    value = value << 8 | part;
    if (++parts < 4) ok = ok && i < text.size() && text[i++] == '.';
  }
  if (!ok || i != text.size()) {
    return absl::InvalidArgumentError(absl::StrFormat("bad IPv4 address \"%s\"", text));
  }
  return Ipv4Address{value};
}

Ipv4Address Ipv4Address::PrefixMask(int prefix_len) {
  if (prefix_len <= 0) return {0};
  if (prefix_len >= 32) return {0xffffffffu};
  return {~0u << (32 - prefix_len)};
}

std::string Ipv4Address::ToString() const {
  return absl::StrFormat("%d.%d.%d.%d", value >> 24, (value >> 16) & 0xff, (value >> 8) & 0xff, value & 0xff);
}

namespace {

// inet_pton's reading of a form of hex groups only ("2001:db8::1"), read in place: groups of one to four
// hex digits between single colons, eight of them or fewer with one "::" standing for at least one zero
// group. False for anything else (which inet_pton then reads: a dotted quad at the end, or bad text).
bool ParseHexGroups(absl::string_view text, std::array<uint8_t, 16>* bytes) {
  const auto* at = reinterpret_cast<const unsigned char*>(text.data());
  const auto* const end = at + text.size();
  uint16_t groups[8];
  int count = 0, gap = -1;  // gap: the groups before "::"
  if (end - at >= 2 && at[0] == ':' && at[1] == ':') {
    gap = 0;
    at += 2;
  }
  while (at < end) {
    uint32_t group = kHexValue[*at];
    if (group > 15 || count == 8) return false;
    const auto* const stop = end - at > 4 ? at + 4 : end;
    for (++at; at < stop && kHexValue[*at] < 16; ++at) group = group << 4 | kHexValue[*at];
    groups[count++] = static_cast<uint16_t>(group);
    if (at == end) break;
    if (*at != ':' || ++at == end) return false;  // (a fifth digit, a '.', a colon at the end)
    if (*at == ':') {
      if (gap >= 0) return false;
      gap = count;
      ++at;
    }
  }
  if (gap < 0 ? count != 8 : count == 8) return false;
  // The groups before the gap, zeros, then the groups after it.
  const int after = gap < 0 ? 0 : count - gap, before = count - after;
  bytes->fill(0);
  for (int g = 0; g < count; ++g) {
    const int to = g < before ? g : 8 - count + g;
    (*bytes)[2 * to] = static_cast<uint8_t>(groups[g] >> 8);
    (*bytes)[2 * to + 1] = static_cast<uint8_t>(groups[g]);
  }
  return true;
}

}  // namespace

absl::StatusOr<Ipv6Address> Ipv6Address::Parse(absl::string_view text) {
  Ipv6Address a;
  if (ParseHexGroups(text, &a.bytes)) return a;
  if (inet_pton(AF_INET6, std::string(text).c_str(), a.bytes.data()) != 1) {
    return absl::InvalidArgumentError(absl::StrFormat("bad IPv6 address \"%s\"", text));
  }
  return a;
}

Ipv6Address Ipv6Address::PrefixMask(int prefix_len) {
  Ipv6Address a;
  for (int i = 0; i < 16; ++i) {
    int bits = prefix_len - 8 * i;
    a.bytes[i] = bits >= 8 ? 0xff : bits <= 0 ? 0 : static_cast<uint8_t>(0xff << (8 - bits));
  }
  return a;
}

uint32_t Ipv6Address::word(int i) const { return LoadBe32(bytes.data() + 4 * i); }

std::string Ipv6Address::ToString() const {
  char buf[INET6_ADDRSTRLEN];
  inet_ntop(AF_INET6, bytes.data(), buf, sizeof buf);
  return buf;
}

}  // namespace drsim::hw
