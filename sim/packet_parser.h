// The software NIC's packet parser: fills a header vector (the 448-byte match layout) from a frame, as
// the NIC's hardware parser does before the steering lookup.
//
// Layers parsed: Ethernet II; up to two VLAN tags (802.1Q C-tag 0x8100, 802.1ad S-tag 0x88a8) into
// first_* / misc.*_second_*; IPv4 (options, fragments); IPv6 with the hop-by-hop, routing, fragment,
// destination-options and AH extension headers; TCP (ports, flags, seq/ack), UDP, ICMP and ICMPv6
// (type, code, the 4 bytes after the checksum); then one level of tunnel and the inner packet, or RoCE v2.
//
// Field semantics follow the mlx5 layout: ethertype is the one after the last parsed VLAN tag;
// ip_version is the parsed L3 type (4/6), set only for a complete, well-formed IP header; frag is set for
// any fragment (IPv4 MF or offset, IPv6 fragment header), and L4 is parsed only in first fragments;
// ip_protocol is the final next-header after IPv6 extensions.
//
// Tunnels are recognised after an unfragmented outer packet only, by UDP destination port, IP protocol
// or ethertype; a tunnel header whose version field is not the one we know is not recognised:
//  - VXLAN (UDP 4789): misc.vxlan_vni; inner Ethernet.
//  - VXLAN-GPE (UDP 4790, version 0): misc3.outer_vxlan_gpe_flags/_next_protocol/_vni; inner by next
//    protocol (1 IPv4, 2 IPv6, 3 Ethernet).
//  - GENEVE (UDP 6081, version 0): misc.geneve_vni/_oam/_opt_len/_protocol_type. "Option 0" is the option
//    the device's GENEVE TLV option parser is configured for (GeneveOptionSelector: its class and type, as
//    mlx5's GENEVE_TLV_OPTION object sets the firmware's flex parser): the first option of that class and
//    type, wherever it sits among the options; the options before it are stepped over by their lengths.
//    misc.geneve_tlv_option_0_exist is set when it lies whole inside the option area and the frame,
//    misc3.geneve_tlv_option_0_data is its first data word (0 when it has none). With no option
//    configured, or when the scan meets an option that does not fit before it, neither is set. Inner by
//    protocol type (0x6558 Ethernet, 0x0800 IPv4, 0x86dd IPv6), after the options.
//  - GRE (IP protocol 47, any version, as the ConnectX parser; no routing bit; the whole header with the
//    optional words its C/K/S bits, and in version 1 its A bit (acknowledgment), announce must fit):
//    misc.gre_c/k/s_present, gre_protocol, gre_key_h/_l (key[31:8]/[7:0]);
//    inner by protocol (0x6558, 0x0800, 0x86dd, 0x8847/0x8848 MPLS: misc2.outer_first_mpls_over_gre_*).
//  - MPLS over Ethernet (ethertype 0x8847/0x8848 after the VLAN tags): misc2.outer_first_mpls_*; over UDP
//    (port 6635): misc2.outer_first_mpls_over_udp_*. The fields are the first (top) label's. After the
//    bottom-of-stack label (at most 8 labels), an inner IPv4/IPv6 packet chosen by its version nibble.
//  - GTP-U (UDP 2152, version 1, PT 1): misc3.gtpu_msg_flags/_msg_type/_teid, gtpu_dw_0 (first dword),
//    gtpu_dw_2 (third dword, when the E, S or PN flag announces it), gtpu_first_ext_dw_0 (first dword of
//    the first extension header, when E is set and the next-type byte is not 0). G-PDUs (type 0xff)
//    carry an inner IPv4/IPv6 packet (by version nibble) after the extension headers (at most 8).
//  - misc5.tunnel_header_0..3: the first four 32-bit words of a recognised tunnel's header, starting at
//    PacketLayers::tunnel (right after the UDP header; at the GRE header's first word; at the first MPLS
//    label) and running on into what follows; words past the end of the frame stay 0.
// RoCE v2 (UDP 4791, BTH transport version 0) is not a tunnel: misc.bth_opcode, bth_dst_qp, bth_a.
//
// Inner headers use the outer code paths with the inner fields: inner.* (ethertype only when there is an
// inner Ethernet header; ip_version, frag and L4-in-first-fragments as for the outer), misc.inner_second_*,
// misc.inner_ipv6_flow_label, misc3.inner_tcp_seq_num/ack_num. The misc3 ICMP fields are the outer
// packet's only (rdma-core builds them from the outer block), so an inner ICMP header sets no field.
// One level of tunnel only: a tunnel, MPLS label or RoCE header inside the inner packet is not parsed.
//
// Malformed or truncated frames are parsed as far as they are valid and never read past `len`: a layer
// that does not fit leaves its fields zero and stops the parse. Header length fields (IP total length,
// UDP length, GTP-U length) are not checked against the frame.
//
// Stateless and thread-safe.
#ifndef DRSIM_SIM_PACKET_PARSER_H_
#define DRSIM_SIM_PACKET_PARSER_H_

#include <cstddef>
#include <cstdint>

#include "hw/match_layout.h"

namespace drsim::sim {

enum class TunnelType : uint8_t { kNone, kVxlan, kVxlanGpe, kGeneve, kGre, kMpls, kMplsOverUdp, kGtpu };

// Where the parsed layers start in the frame (0 = not present/parsed).
struct PacketLayers {
  uint16_t l3 = 0;       // outer IPv4/IPv6 header
  uint16_t l4 = 0;       // outer TCP/UDP/ICMP header
  uint16_t payload = 0;  // after the outer L4 header
  TunnelType tunnel_type = TunnelType::kNone;
  uint16_t tunnel = 0;         // the tunnel header: after the UDP header, the GRE header, the first label
  uint16_t inner_l2 = 0;       // inner Ethernet header (tunnels carrying Ethernet)
  uint16_t inner_l3 = 0;       // inner IPv4/IPv6 header
  uint16_t inner_l4 = 0;       // inner TCP/UDP/ICMP header
  uint16_t inner_payload = 0;  // after the inner L4 header
  uint16_t bth = 0;            // RoCE v2 base transport header (right after the outer UDP header)
};

// Which GENEVE TLV option the parser reports as option 0: a class and type, or none (the default). A
// value, packed in one word, so that the NIC can publish it atomically and each parse reads it once.
class GeneveOptionSelector {
 public:
  constexpr GeneveOptionSelector() = default;
  static constexpr GeneveOptionSelector For(uint16_t option_class, uint8_t type) {
    return GeneveOptionSelector(kConfigured | uint32_t{option_class} << 8 | type);
  }
  static constexpr GeneveOptionSelector FromPacked(uint32_t packed) { return GeneveOptionSelector(packed); }

  constexpr bool configured() const { return packed_ & kConfigured; }
  // Whether an option header's class and type (its first three bytes, big-endian) are the configured ones.
  constexpr bool Selects(uint32_t class_and_type) const { return packed_ == (kConfigured | class_and_type); }
  constexpr uint32_t packed() const { return packed_; }

 private:
  static constexpr uint32_t kConfigured = 1u << 24;
  constexpr explicit GeneveOptionSelector(uint32_t packed) : packed_(packed) {}
  uint32_t packed_ = 0;
};

// Clears `hv` and fills it from `frame[0, len)`. `source_port` is the vport the frame came from
// (0xffff = the wire), written to misc.source_port; `geneve_option` is the GENEVE option reported as
// option 0.
PacketLayers ParsePacket(const uint8_t* frame, size_t len, uint16_t source_port, hw::HeaderVector* hv,
                         GeneveOptionSelector geneve_option = {});

// Fills the words of `hv` that the outer Ethernet, VLAN, IP and L4 headers and the source port give (those
// FilledByOuterParse accepts) exactly as ParsePacket does, and leaves the rest of `hv` unspecified: for a
// lookup whose key lies in those words, without clearing the whole vector or parsing tunnels. Plain IPv4
// frames — Ethernet II without VLAN tags, IPv4 without options and not a fragment, a TCP or UDP header
// inside the datagram: most traffic — have their headers at fixed places, and their words are copied
// straight from them. Returns the outer layers (l3, l4, payload) as ParsePacket finds them; the tunnel and
// inner fields stay 0 (not parsed).
PacketLayers ParseOuterHeaders(const uint8_t* frame, size_t len, uint16_t source_port, hw::HeaderVector* hv);

// The word holding misc.source_port (misc.source_eswitch_owner_vhca_id, which no parse sets, is the rest).
inline constexpr size_t kSourcePortWord = hw::Info(hw::Field::kSourcePort).word_offset();

// Whether ParseOuterHeaders fills the 32-bit word at byte `word_offset` of the layout: the outer headers
// section, and the word of misc.source_port. Inline: a walk asks it of each matcher it tries.
inline bool FilledByOuterParse(size_t word_offset) {
  return word_offset < hw::SectionOffset(hw::Section::kOuter) + hw::kSectionBytes ||
         word_offset == kSourcePortWord;
}

}  // namespace drsim::sim

#endif  // DRSIM_SIM_PACKET_PARSER_H_
