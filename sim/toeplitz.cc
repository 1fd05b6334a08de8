#include "sim/toeplitz.h"

#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "hw/byte_order.h"

namespace drsim::sim {
namespace {

constexpr uint8_t kProtoTcp = 6;
constexpr uint8_t kProtoUdp = 17;

constexpr uint64_t kIpv4Bits = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4;
constexpr uint64_t kIpv6Bits = IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6;
constexpr uint64_t kTcpBits = IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP;
constexpr uint64_t kUdpBits = IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP;
// IBV_RX_HASH_INNER picks the header stack the fields come from (the caller's business); it adds no input.
constexpr uint64_t kModelledBits = kIpv4Bits | kIpv6Bits | kTcpBits | kUdpBits | IBV_RX_HASH_INNER;

void AppendBytes(std::vector<uint8_t>& out, const uint8_t* p, size_t n) { out.insert(out.end(), p, p + n); }

std::array<uint8_t, 4> Be32(uint32_t v) {
  std::array<uint8_t, 4> b;
  hw::StoreBe32(b.data(), v);
  return b;
}

std::array<uint8_t, 2> Be16(uint16_t v) {
  std::array<uint8_t, 2> b;
  hw::StoreBe16(b.data(), v);
  return b;
}

// Appends one src/dst field pair (n bytes each) as `fields` selects it, transformed for `symmetry`.
void AppendPair(std::vector<uint8_t>& out, const uint8_t* src, const uint8_t* dst, size_t n, bool use_src,
                bool use_dst, RssSymmetry symmetry) {
  if (symmetry == RssSymmetry::kNone) {
    if (use_src) AppendBytes(out, src, n);
    if (use_dst) AppendBytes(out, dst, n);
    return;
  }
  if (!use_src) return;  // the caller checked that src and dst come together
  for (size_t i = 0; i < n; ++i) {
    out.push_back(symmetry == RssSymmetry::kXor ? src[i] ^ dst[i] : src[i] | dst[i]);
  }
  for (size_t i = 0; i < n; ++i) out.push_back(src[i] ^ dst[i]);
}

const char* BitName(uint64_t bit) {
  switch (bit) {
    case IBV_RX_HASH_SRC_IPV4:
      return "IBV_RX_HASH_SRC_IPV4";
    case IBV_RX_HASH_DST_IPV4:
      return "IBV_RX_HASH_DST_IPV4";
    case IBV_RX_HASH_SRC_IPV6:
      return "IBV_RX_HASH_SRC_IPV6";
    case IBV_RX_HASH_DST_IPV6:
      return "IBV_RX_HASH_DST_IPV6";
    case IBV_RX_HASH_SRC_PORT_TCP:
      return "IBV_RX_HASH_SRC_PORT_TCP";
    case IBV_RX_HASH_DST_PORT_TCP:
      return "IBV_RX_HASH_DST_PORT_TCP";
    case IBV_RX_HASH_SRC_PORT_UDP:
      return "IBV_RX_HASH_SRC_PORT_UDP";
    case IBV_RX_HASH_DST_PORT_UDP:
      return "IBV_RX_HASH_DST_PORT_UDP";
    case IBV_RX_HASH_IPSEC_SPI:
      return "IBV_RX_HASH_IPSEC_SPI";
    case IBV_RX_HASH_INNER:
      return "IBV_RX_HASH_INNER";
    default:
      return "an unknown bit";
  }
}

absl::Status CheckFields(const RssHeaderFields& packet, uint64_t fields, RssSymmetry symmetry) {
  if (uint64_t extra = fields & ~kModelledBits) {
    const uint64_t bit = extra & ~(extra - 1);
    return absl::InvalidArgumentError(absl::StrFormat(
        "rx_hash_fields_mask 0x%x: %s (0x%x) is not modelled; only the IPv4/IPv6 address and TCP/UDP port "
        "bits and IBV_RX_HASH_INNER are",
        fields, BitName(bit), bit));
  }
  if ((fields & kIpv4Bits) && (fields & kIpv6Bits)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("rx_hash_fields_mask 0x%x selects both IPv4 and IPv6 addresses", fields));
  }
  if ((fields & kTcpBits) && (fields & kUdpBits)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("rx_hash_fields_mask 0x%x selects both TCP and UDP ports", fields));
  }
  if (packet.ip_version != 4 && packet.ip_version != 6) {
    return absl::InvalidArgumentError(
        absl::StrFormat("RSS header fields: ip_version %d is neither 4 nor 6", packet.ip_version));
  }
  if ((fields & kIpv4Bits) && packet.ip_version != 4) {
    return absl::InvalidArgumentError(
        absl::StrFormat("rx_hash_fields_mask 0x%x selects IPv4 addresses but the packet is IPv%d", fields,
                        packet.ip_version));
  }
  if ((fields & kIpv6Bits) && packet.ip_version != 6) {
    return absl::InvalidArgumentError(
        absl::StrFormat("rx_hash_fields_mask 0x%x selects IPv6 addresses but the packet is IPv%d", fields,
                        packet.ip_version));
  }
  if ((fields & kTcpBits) && packet.ip_protocol != kProtoTcp) {
    return absl::InvalidArgumentError(
        absl::StrFormat("rx_hash_fields_mask 0x%x selects TCP ports but the packet's ip_protocol is %d",
                        fields, packet.ip_protocol));
  }
  if ((fields & kUdpBits) && packet.ip_protocol != kProtoUdp) {
    return absl::InvalidArgumentError(
        absl::StrFormat("rx_hash_fields_mask 0x%x selects UDP ports but the packet's ip_protocol is %d",
                        fields, packet.ip_protocol));
  }
  if (symmetry != RssSymmetry::kNone) {
    for (uint64_t pair : {kIpv4Bits, kIpv6Bits, kTcpBits, kUdpBits}) {
      const uint64_t selected = fields & pair;
      if (selected != 0 && selected != pair) {
        return absl::InvalidArgumentError(
            absl::StrFormat("rx_hash_fields_mask 0x%x: a symmetric hash needs %s with %s", fields,
                            BitName(pair & ~selected), BitName(selected)));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<uint32_t> ToeplitzHash(absl::Span<const uint8_t> input, absl::Span<const uint8_t> key) {
  if (key.size() < input.size() + 4) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Toeplitz key of %d bytes is too short for a %d-byte input (needs at least %d)",
                        key.size(), input.size(), input.size() + 4));
  }
  uint32_t result = 0;
  for (size_t i = 0; i < input.size(); ++i) {
    // The 40 key bits starting at input byte i's first bit; key[i + 4] exists since key >= input + 4.
    const uint64_t window = static_cast<uint64_t>(hw::LoadBe32(key.data() + i)) << 8 | key[i + 4];
    for (int bit = 0; bit < 8; ++bit) {
      if (input[i] & (0x80 >> bit)) result ^= static_cast<uint32_t>(window >> (8 - bit));
    }
  }
  return result;
}

std::vector<uint8_t> RssInputIpv4(hw::Ipv4Address src, hw::Ipv4Address dst) {
  std::vector<uint8_t> out;
  out.reserve(8);  // (and GCC 12 at -O3 no longer warns of a write past the empty vector's end)
  AppendBytes(out, Be32(src.value).data(), 4);
  AppendBytes(out, Be32(dst.value).data(), 4);
  return out;
}

std::vector<uint8_t> RssInputIpv4L4(hw::Ipv4Address src, hw::Ipv4Address dst, uint16_t sport,
                                    uint16_t dport) {
  std::vector<uint8_t> out = RssInputIpv4(src, dst);
  AppendBytes(out, Be16(sport).data(), 2);
  AppendBytes(out, Be16(dport).data(), 2);
  return out;
}

std::vector<uint8_t> RssInputIpv6(const hw::Ipv6Address& src, const hw::Ipv6Address& dst) {
  std::vector<uint8_t> out;
  AppendBytes(out, src.bytes.data(), 16);
  AppendBytes(out, dst.bytes.data(), 16);
  return out;
}

std::vector<uint8_t> RssInputIpv6L4(const hw::Ipv6Address& src, const hw::Ipv6Address& dst, uint16_t sport,
                                    uint16_t dport) {
  std::vector<uint8_t> out = RssInputIpv6(src, dst);
  AppendBytes(out, Be16(sport).data(), 2);
  AppendBytes(out, Be16(dport).data(), 2);
  return out;
}

absl::StatusOr<std::vector<uint8_t>> RssInput(const RssHeaderFields& packet, uint64_t fields,
                                              RssSymmetry symmetry) {
  DRSIM_RETURN_IF_ERROR(CheckFields(packet, fields, symmetry));
  std::vector<uint8_t> out;
  if (fields & kIpv4Bits) {
    AppendPair(out, Be32(packet.ipv4_src.value).data(), Be32(packet.ipv4_dst.value).data(), 4,
               fields & IBV_RX_HASH_SRC_IPV4, fields & IBV_RX_HASH_DST_IPV4, symmetry);
  } else if (fields & kIpv6Bits) {
    AppendPair(out, packet.ipv6_src.bytes.data(), packet.ipv6_dst.bytes.data(), 16,
               fields & IBV_RX_HASH_SRC_IPV6, fields & IBV_RX_HASH_DST_IPV6, symmetry);
  }
  const uint64_t src_port_bit = IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_SRC_PORT_UDP;
  const uint64_t dst_port_bit = IBV_RX_HASH_DST_PORT_TCP | IBV_RX_HASH_DST_PORT_UDP;
  if (fields & (src_port_bit | dst_port_bit)) {
    AppendPair(out, Be16(packet.sport).data(), Be16(packet.dport).data(), 2, fields & src_port_bit,
               fields & dst_port_bit, symmetry);
  }
  return out;
}

absl::StatusOr<uint32_t> RssHash(const RssHeaderFields& packet, uint64_t fields,
                                 absl::Span<const uint8_t> key, RssSymmetry symmetry) {
  DRSIM_ASSIGN_OR_RETURN(std::vector<uint8_t> input, RssInput(packet, fields, symmetry));
  return ToeplitzHash(input, key);
}

}  // namespace drsim::sim
