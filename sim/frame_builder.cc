#include "sim/frame_builder.h"

#include <cstring>

#include "hw/byte_order.h"

namespace drsim::sim {
namespace {

using hw::StoreBe16;
using hw::StoreBe32;

// One's-complement sum of 16-bit words (RFC 1071), not yet folded or inverted.
uint32_t SumWords(const uint8_t* p, size_t n, uint32_t sum = 0) {
  for (; n >= 2; p += 2, n -= 2) sum += hw::LoadBe16(p);
  if (n) sum += static_cast<uint32_t>(p[0]) << 8;
  return sum;
}

uint16_t Fold(uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

void Append(std::vector<uint8_t>& f, size_t n) { f.resize(f.size() + n, 0); }

// Writes the L4 header + payload at f[l4..] and its checksum. `pseudo` is the pseudo-header sum.
void FillL4(const FrameSpec& s, std::vector<uint8_t>& f, size_t l4, uint32_t pseudo) {
  uint8_t* p = f.data() + l4;
  const size_t l4_len = f.size() - l4;
  size_t checksum_at = 0;
  switch (s.protocol) {
    case kIpProtoTcp:
      StoreBe16(p, s.sport);
      StoreBe16(p + 2, s.dport);
      StoreBe32(p + 4, s.seq);
      StoreBe32(p + 8, s.ack);
      p[12] = static_cast<uint8_t>(5 << 4 | ((s.tcp_flags >> 8) & 1));
      p[13] = static_cast<uint8_t>(s.tcp_flags);
      StoreBe16(p + 14, 65535);
      checksum_at = 16;
      break;
    case kIpProtoUdp:
      StoreBe16(p, s.sport);
      StoreBe16(p + 2, s.dport);
      StoreBe16(p + 4, static_cast<uint16_t>(l4_len));
      checksum_at = 6;
      break;
    case kIpProtoIcmp:
    case kIpProtoIcmpv6:
      p[0] = s.icmp_type;
      p[1] = s.icmp_code;
      StoreBe32(p + 4, s.icmp_data);
      checksum_at = 2;
      if (s.protocol == kIpProtoIcmp) pseudo = 0;  // ICMPv4 has no pseudo-header
      break;
    default:
      return;
  }
  uint16_t sum = Fold(SumWords(p, l4_len, pseudo));
  if (s.protocol == kIpProtoUdp && sum == 0) sum = 0xffff;
  StoreBe16(p + checksum_at, sum);
}

size_t L4HeaderLen(uint8_t protocol) {
  switch (protocol) {
    case kIpProtoTcp:
      return 20;
    case kIpProtoUdp:
    case kIpProtoIcmp:
    case kIpProtoIcmpv6:
      return 8;
    default:
      return 0;
  }
}

}  // namespace

std::vector<uint8_t> BuildFrame(const FrameSpec& s) {
  std::vector<uint8_t> f(14);
  std::memcpy(f.data(), s.dmac.bytes.data(), 6);
  std::memcpy(f.data() + 6, s.smac.bytes.data(), 6);
  size_t type_at = 12;
  for (const VlanTag& tag : s.vlans) {
    StoreBe16(f.data() + type_at, tag.tpid);
    Append(f, 4);
    StoreBe16(f.data() + type_at + 2, tag.tci);
    type_at += 4;
  }
  const uint16_t ethertype = s.l3 == L3Kind::kIpv4 ? 0x0800 : s.l3 == L3Kind::kIpv6 ? 0x86dd : s.ethertype;
  StoreBe16(f.data() + type_at, ethertype);
  const size_t l3 = f.size();
  const bool has_l4 = s.fragment_offset == 0;  // later fragments carry payload only
  const size_t l4_len = (has_l4 ? L4HeaderLen(s.protocol) : 0) + s.payload_len;

  if (s.l3 == L3Kind::kIpv4) {
    const size_t ihl = 5 + s.ipv4_option_words;
    Append(f, ihl * 4);
    uint8_t* ip = f.data() + l3;
    ip[0] = static_cast<uint8_t>(0x40 | ihl);
    ip[1] = static_cast<uint8_t>(s.dscp << 2 | (s.ecn & 3));
    StoreBe16(ip + 2, static_cast<uint16_t>(ihl * 4 + l4_len));
    StoreBe16(ip + 4, 0x1234);
    StoreBe16(ip + 6, static_cast<uint16_t>((s.more_fragments ? 0x2000 : 0) | (s.fragment_offset & 0x1fff)));
    ip[8] = s.ttl;
    ip[9] = s.protocol;
    StoreBe32(ip + 12, s.ipv4_src.value);
    StoreBe32(ip + 16, s.ipv4_dst.value);
    std::memset(ip + 20, 1, s.ipv4_option_words * 4);  // NOP options
    StoreBe16(ip + 10, Fold(SumWords(ip, ihl * 4)));
    const size_t l4 = f.size();
    Append(f, l4_len);
    std::memset(f.data() + l4 + (l4_len - s.payload_len), 0xab, s.payload_len);
    if (has_l4) {
      uint32_t pseudo = SumWords(f.data() + l3 + 12, 8) + s.protocol + static_cast<uint32_t>(l4_len);
      FillL4(s, f, l4, pseudo);
    }
  } else if (s.l3 == L3Kind::kIpv6) {
    Append(f, 40);
    // Extension headers: each 8 bytes, chained by their first byte.
    uint8_t first_next = s.ipv6_extensions.empty() ? s.protocol : s.ipv6_extensions[0];
    for (size_t i = 0; i < s.ipv6_extensions.size(); ++i) {
      const size_t at = f.size();
      Append(f, 8);
      f[at] = i + 1 < s.ipv6_extensions.size() ? s.ipv6_extensions[i + 1] : s.protocol;
      if (s.ipv6_extensions[i] == 44) {
        StoreBe16(f.data() + at + 2,
                  static_cast<uint16_t>(s.fragment_offset << 3 | (s.more_fragments ? 1 : 0)));
        StoreBe32(f.data() + at + 4, 0xcafe);
      } else if (s.ipv6_extensions[i] == 51) {
        f[at + 1] = 0;  // AH: (0 + 2) * 4 = 8 bytes
      } else {
        f[at + 1] = 0;  // (0 + 1) * 8 = 8 bytes
        f[at + 2] = 1;  // options: PadN filling the rest; routing: type 1
        // Routing: segments left 0, so every node skips the header (RFC 8200 4.4); with a non-zero
        // count and a type it does not know, the destination must discard the packet.
        f[at + 3] = s.ipv6_extensions[i] == 43 ? 0 : 4;
      }
    }
    const size_t l4 = f.size();
    Append(f, l4_len);
    std::memset(f.data() + l4 + (l4_len - s.payload_len), 0xab, s.payload_len);
    uint8_t* ip = f.data() + l3;
    const uint32_t traffic_class = static_cast<uint32_t>(s.dscp << 2 | (s.ecn & 3));
    StoreBe32(ip, 6u << 28 | traffic_class << 20 | (s.flow_label & 0xfffff));
    StoreBe16(ip + 4, static_cast<uint16_t>(f.size() - l3 - 40));
    ip[6] = first_next;
    ip[7] = s.ttl;
    std::memcpy(ip + 8, s.ipv6_src.bytes.data(), 16);
    std::memcpy(ip + 24, s.ipv6_dst.bytes.data(), 16);
    if (has_l4) {
      uint32_t pseudo = SumWords(ip + 8, 32) + s.protocol + static_cast<uint32_t>(l4_len);
      FillL4(s, f, l4, pseudo);
    }
  } else {
    Append(f, s.payload_len);
    std::memset(f.data() + l3, 0xab, s.payload_len);
  }
  if (f.size() < 60) f.resize(60, 0);  // Ethernet minimum (without FCS)
  return f;
}

}  // namespace drsim::sim
