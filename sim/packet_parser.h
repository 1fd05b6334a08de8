// The software NIC's packet parser: fills a header vector (the 448-byte match layout) from a frame, as
// the NIC's hardware parser does before the steering lookup.
//
// Layers parsed: Ethernet II; up to two VLAN tags (802.1Q C-tag 0x8100, 802.1ad S-tag 0x88a8) into
// first_* / misc.outer_second_*; IPv4 (options, fragments); IPv6 with the hop-by-hop, routing, fragment,
// destination-options and AH extension headers; TCP (ports, flags, seq/ack), UDP, ICMP and ICMPv6
// (type, code, the 4 bytes after the checksum).
//
// Field semantics follow the mlx5 layout: ethertype is the one after the last parsed VLAN tag;
// ip_version is the parsed L3 type (4/6), set only for a complete, well-formed IP header; frag is set for
// any fragment (IPv4 MF or offset, IPv6 fragment header), and L4 is parsed only in first fragments;
// ip_protocol is the final next-header after IPv6 extensions.
//
// Malformed or truncated frames are parsed as far as they are valid and never read past `len`: a layer
// that does not fit leaves its fields zero and stops the parse.
//
// Stateless and thread-safe.
#ifndef DRSIM_SIM_PACKET_PARSER_H_
#define DRSIM_SIM_PACKET_PARSER_H_

#include <cstddef>
#include <cstdint>

#include "hw/match_layout.h"

namespace drsim::sim {

// Where the parsed layers start in the frame (0 = not present/parsed).
struct PacketLayers {
  uint16_t l3 = 0;       // IPv4/IPv6 header
  uint16_t l4 = 0;       // TCP/UDP/ICMP header
  uint16_t payload = 0;  // after the L4 header
};

// Clears `hv` and fills it from `frame[0, len)`. `source_port` is the vport the frame came from
// (0xffff = the wire), written to misc.source_port.
PacketLayers ParsePacket(const uint8_t* frame, size_t len, uint16_t source_port, hw::HeaderVector* hv);

}  // namespace drsim::sim

#endif  // DRSIM_SIM_PACKET_PARSER_H_
