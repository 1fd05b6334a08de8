// Small value types for the addresses users write rules with: MAC, IPv4 and IPv6, each parsed from and
// printed to its usual text form. Bytes are kept in network order.
#ifndef DRSIM_HW_NET_ADDR_H_
#define DRSIM_HW_NET_ADDR_H_

#include <array>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace drsim::hw {

struct MacAddress {
  std::array<uint8_t, 6> bytes{};

  // "00:11:22:aa:bb:cc" (also '-' separated). InvalidArgument naming the text otherwise.
  static absl::StatusOr<MacAddress> Parse(absl::string_view text);
  static MacAddress AllOnes() { return {{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}; }
  std::string ToString() const;
  friend bool operator==(const MacAddress& a, const MacAddress& b) { return a.bytes == b.bytes; }
};

struct Ipv4Address {
  uint32_t value = 0;  // host order: 10.0.0.1 is 0x0a000001

  // Dotted quad. InvalidArgument naming the text otherwise.
  static absl::StatusOr<Ipv4Address> Parse(absl::string_view text);
  // The netmask of a prefix length 0..32 (clamped).
  static Ipv4Address PrefixMask(int prefix_len);
  std::string ToString() const;
  friend bool operator==(Ipv4Address a, Ipv4Address b) { return a.value == b.value; }
};

struct Ipv6Address {
  std::array<uint8_t, 16> bytes{};

  // Any RFC 4291 text form ("2001:db8::1"). InvalidArgument naming the text otherwise.
  static absl::StatusOr<Ipv6Address> Parse(absl::string_view text);
  // The netmask of a prefix length 0..128 (clamped).
  static Ipv6Address PrefixMask(int prefix_len);
  // The 32-bit word `i` (0 = most significant, bits 127..96), host order.
  uint32_t word(int i) const;
  std::string ToString() const;
  friend bool operator==(const Ipv6Address& a, const Ipv6Address& b) { return a.bytes == b.bytes; }
};

}  // namespace drsim::hw

#endif  // DRSIM_HW_NET_ADDR_H_
