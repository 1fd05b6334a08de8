// Builds well-formed Ethernet frames from a description: VLAN tags, IPv4 (options, fragments) or IPv6
// (extension headers), TCP/UDP/ICMP/ICMPv6, payload — with correct lengths and IPv4, TCP, UDP, ICMP and
// ICMPv6 checksums, so the frames are ones a real stack (and Wireshark) accepts. Used by examples, tests
// and benches to make traffic for the software NIC.
//
// Tunnels and RoCE v2: a TunnelFrameSpec is an outer FrameSpec, a TunnelSpec and an inner FrameSpec.
//  - The outer spec gives L2 and, for IP tunnels, L3; the builder makes its L4 what the tunnel needs
//    (protocol 47 for GRE; UDP to the tunnel's IANA port: VXLAN 4789, VXLAN-GPE 4790, GENEVE 6081,
//    MPLS-over-UDP 6635, GTP-U 2152, RoCE v2 4791; the outer sport is kept). Its payload_len is ignored
//    (the tunnel is the payload), except for RoCE v2 where it is the IB payload between BTH and ICRC.
//    For MPLS over Ethernet only the outer L2 is used. Outer fragmentation fields are honoured: in a later
//    fragment the tunnel bytes are plain IP payload.
//  - The inner spec is a whole Ethernet frame (its L2 and up, without the 60-byte minimum padding) when the
//    tunnel carries Ethernet: VXLAN, VXLAN-GPE next protocol 3, GENEVE and GRE protocol 0x6558. Otherwise
//    only its L3 and up (its L2 fields are ignored): GRE and GENEVE 0x0800/0x86dd, VXLAN-GPE 1/2, MPLS
//    (after the label stack) and GTP-U. The tunnel's protocol field is written as given, so a mismatch with
//    the inner L3 can be built on purpose.
//  - Checksums: the outer UDP checksum is always computed (valid for IPv4 and IPv6; real VXLAN/GENEVE
//    senders often send 0 over IPv4), the GRE checksum when gre_checksum is set, inner checksums as for a
//    plain frame. The RoCE v2 ICRC is the fixed value kRoceIcrc, not a computed CRC.
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
inline constexpr uint8_t kIpProtoGre = 47;
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
  uint16_t tcp_window = 65535;  // the TCP header's (unscaled) window field
  uint8_t icmp_type = 8;
  uint8_t icmp_code = 0;
  uint32_t icmp_data = 0;

  size_t payload_len = 0;  // bytes of 0xab after the L4 header
  // The IPv4 header and TCP/UDP/ICMP checksums left 0, as rdma-core's tests send their frames
  // (tests/utils.py gen_packet): a frame a device must not "fix" unless it changed bytes they cover.
  bool zero_checksums = false;
};

std::vector<uint8_t> BuildFrame(const FrameSpec& spec);

// ---- Tunnels and RoCE v2 ------------------------------------------------------------------------

// What follows the outer headers.
// The transport a RoCE v2 frame's QPs use, for its UDP source port.
enum class RoceQpType : uint8_t { kRc, kUd };

enum class Encap : uint8_t {
  kNone,         // nothing: the frame is BuildFrame(outer)
  kVxlan,        // UDP 4789, VXLAN header, inner Ethernet
  kVxlanGpe,     // UDP 4790, VXLAN-GPE header, inner per gpe_next_protocol
  kGeneve,       // UDP 6081, GENEVE header and options, inner per geneve_protocol
  kGre,          // IP protocol 47, GRE header (optional checksum/key/sequence), inner per gre_protocol
  kMpls,         // MPLS over Ethernet: ethertype mpls_ethertype, label stack, inner IP
  kMplsOverUdp,  // UDP 6635, label stack, inner IP
  kGtpu,         // UDP 2152, GTP-U header (optional fields, extension headers), inner IP (the T-PDU)
  kRoceV2,       // not a tunnel: UDP 4791, IB BTH, payload, pad, ICRC; no inner frame
};

inline constexpr uint16_t kUdpPortVxlan = 4789;
inline constexpr uint16_t kUdpPortVxlanGpe = 4790;
inline constexpr uint16_t kUdpPortGeneve = 6081;
inline constexpr uint16_t kUdpPortMplsOverUdp = 6635;
inline constexpr uint16_t kUdpPortGtpu = 2152;
inline constexpr uint16_t kUdpPortRoceV2 = 4791;
inline constexpr uint32_t kRoceIcrc = 0x1cc2c0de;  // the fixed ICRC trailer written after RoCE v2 payloads

// One MPLS label stack entry; the builder sets the bottom-of-stack bit on the last entry only.
struct MplsLabel {
  uint32_t label = 0;  // 20 bits
  uint8_t tc = 0;      // 3 bits (the layout's "exp")
  uint8_t ttl = 64;
};

// One GENEVE TLV option: class, type (its top bit is the critical bit) and up to 31 data words.
struct GeneveOption {
  uint16_t option_class = 0x0102;
  uint8_t type = 0x01;
  std::vector<uint32_t> data;
};

// One GTP-U extension header: its type (announced by the previous header's next-type byte) and content.
// The builder pads the content with zeros so that length byte + content + next-type byte fill whole
// 4-byte units. 0x85 is the 5G PDU session container (content {PDU type << 4, QFI}).
struct GtpuExtension {
  uint8_t type = 0x85;
  std::vector<uint8_t> content;
};

struct TunnelSpec {
  Encap kind = Encap::kNone;

  uint32_t vni = 0;  // VXLAN, VXLAN-GPE and GENEVE (24 bits)
  // VXLAN-GPE: flags byte (I 0x08, P 0x04; the version bits 0x30 are 0) and next protocol
  // (1 IPv4, 2 IPv6, 3 Ethernet).
  uint8_t gpe_flags = 0x0c;
  uint8_t gpe_next_protocol = 3;
  // GENEVE: O and C bits, protocol type (0x6558 Ethernet, 0x0800, 0x86dd) and options, in order.
  bool geneve_oam = false;
  bool geneve_critical = false;
  uint16_t geneve_protocol = 0x6558;
  std::vector<GeneveOption> geneve_options;
  // GRE: protocol (0x6558 Ethernet, 0x0800, 0x86dd, 0x8847/0x8848 MPLS with `mpls`), version (0; 1 is
  // PPTP's enhanced GRE, RFC 2637), and which optional fields are present, in their order: checksum, key,
  // sequence number, then acknowledgment number (the A bit, 0x0080, which only version 1 defines; it is
  // written as asked whatever the version). The checksum is computed over the GRE header and its payload.
  uint16_t gre_protocol = 0x0800;
  uint8_t gre_version = 0;
  bool gre_checksum = false;
  bool gre_key_present = false;
  uint32_t gre_key = 0;
  bool gre_seq_present = false;
  uint32_t gre_seq = 0;
  bool gre_ack_present = false;
  uint32_t gre_ack = 0;
  // MPLS label stack, outermost first: kMpls, kMplsOverUdp, and kGre with an MPLS protocol.
  std::vector<MplsLabel> mpls;
  uint16_t mpls_ethertype = 0x8847;  // kMpls: 0x8847 unicast or 0x8848 multicast
  // GTP-U (version 1, PT 1). The optional 4-byte field (sequence number, N-PDU number, next extension
  // type) is present when the sequence number or an extension header is; flags S and E say which.
  uint8_t gtpu_msg_type = 0xff;  // 0xff G-PDU: the only type that carries an inner packet
  uint32_t gtpu_teid = 0;
  bool gtpu_seq_present = false;
  uint16_t gtpu_seq = 0;
  std::vector<GtpuExtension> gtpu_extensions;
  // RoCE v2 base transport header. When `outer.sport` is 0, the UDP source port is the RoCE v2 entropy
  // of the QP numbers (sim/roce_entropy.h): RC or UD by `bth_qp_type`, from `bth_src_qp` to `bth_dst_qp`.
  RoceQpType bth_qp_type = RoceQpType::kRc;
  uint32_t bth_src_qp = 0;    // 24 bits
  uint8_t bth_opcode = 0x04;  // RC SEND only
  uint16_t bth_pkey = 0xffff;
  uint32_t bth_dst_qp = 0;  // 24 bits
  bool bth_ack_req = false;
  uint32_t bth_psn = 0;  // 24 bits
};

struct TunnelFrameSpec {
  FrameSpec outer;
  TunnelSpec tunnel;
  FrameSpec inner;
};

// Does the tunnel carry a whole inner Ethernet frame (rather than an inner L3 packet)?
bool CarriesEthernet(const TunnelSpec& tunnel);

std::vector<uint8_t> BuildFrame(const TunnelFrameSpec& spec);

}  // namespace drsim::sim

#endif  // DRSIM_SIM_FRAME_BUILDER_H_
