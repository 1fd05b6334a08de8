// Builds well-formed Ethernet frames from a description: VLAN tags, IPv4 (options, fragments) or IPv6
// (extension headers), TCP/UDP/ICMP/ICMPv6, payload — with correct lengths and IPv4, TCP, UDP, ICMP and
// ICMPv6 checksums, so the frames are ones a real stack (and Wireshark) accepts. Used by examples, tests
// and benches to make traffic for the software NIC.
#ifndef DRSIM_SIM_FRAME_BUILDER_H_
#define DRSIM_SIM_FRAME_BUILDER_H_

#include <cstdint>
#include <vector>

#include "hw/net_addr.h"

namespace drsim::sim {

struct VlanTag {
  uint16_t tpid = 0x8100;  // 0x8100 (C-tag) or 0x88a8 (S-tag)
  uint16_t tci = 0;        // PCP(3) DEI(1) VID(12)
};

enum class L3Kind : uint8_t { kNone, kIpv4, kIpv6 };

inline constexpr uint8_t kIpProtoIcmp = 1;
inline constexpr uint8_t kIpProtoTcp = 6;
inline constexpr uint8_t kIpProtoUdp = 17;
inline constexpr uint8_t kIpProtoIcmpv6 = 58;

struct FrameSpec {
  hw::MacAddress dmac;
  hw::MacAddress smac;
  std::vector<VlanTag> vlans;   // outermost first
  uint16_t ethertype = 0x0800;  // used only when l3 == kNone

  L3Kind l3 = L3Kind::kIpv4;
  uint8_t dscp = 0;
  uint8_t ecn = 0;
  uint8_t ttl = 64;  // hop limit for IPv6
  uint8_t protocol = kIpProtoUdp;
  // IPv4
  hw::Ipv4Address ipv4_src;
  hw::Ipv4Address ipv4_dst;
  uint8_t ipv4_option_words = 0;  // 32-bit words of NOP options (IHL = 5 + this)
  bool more_fragments = false;
  uint16_t fragment_offset = 0;  // in 8-byte units
  // IPv6
  hw::Ipv6Address ipv6_src;
  hw::Ipv6Address ipv6_dst;
  uint32_t flow_label = 0;
  std::vector<uint8_t> ipv6_extensions;  // 0 hop-by-hop, 43 routing, 44 fragment, 60 dest-opts, 51 AH

  // L4 (TCP/UDP ports, TCP flags/seq/ack, ICMP type/code/rest-of-header)
  uint16_t sport = 0;
  uint16_t dport = 0;
  uint16_t tcp_flags = 0x10;  // 9 bits, NS..FIN; ACK by default
  uint32_t seq = 0;
  uint32_t ack = 0;
  uint8_t icmp_type = 8;
  uint8_t icmp_code = 0;
  uint32_t icmp_data = 0;

  size_t payload_len = 0;  // bytes of 0xab after the L4 header
};

std::vector<uint8_t> BuildFrame(const FrameSpec& spec);

}  // namespace drsim::sim

#endif  // DRSIM_SIM_FRAME_BUILDER_H_
