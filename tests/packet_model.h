// Test oracle: the header-vector fields a frame described by a FrameSpec or TunnelFrameSpec must produce,
// stated directly from the mlx5 layout semantics and the frame description, independently of
// sim/packet_parser and of the tunnel encoder in sim/frame_builder.
//
// Tunnel fields come from the TunnelSpec; misc5.tunnel_header_0..3 from the model's own serialisation of
// the tunnel header followed by the inner packet, whose bytes it takes from the plain BuildFrame(inner)
// (the GRE checksum is computed over them here).
//
// GENEVE option 0 is the first option of class kModelGeneveOptionClass and type kModelGeneveOptionType
// (OVN's tunnel key): the option the NIC's GENEVE TLV option parser must be configured for.
//
// Domain (what the builder can describe but the model does not state): an IP tunnel needs an IPv4/IPv6
// outer; MPLS label stacks are not empty; GENEVE options total at most 63 words; an l3 == kNone spec's
// ethertype is not a VLAN TPID or MPLS. A plain FrameSpec whose filler payload follows UDP port 4789 or
// IP protocol 47 is modelled as the parser must read it (a VXLAN or GRE header made of 0xab bytes and
// Ethernet padding); after the other tunnel ports it is not (describe such frames with a TunnelFrameSpec).
#ifndef DRSIM_TESTS_PACKET_MODEL_H_
#define DRSIM_TESTS_PACKET_MODEL_H_

#include <cstdint>

#include "hw/match_params.h"
#include "sim/frame_builder.h"

namespace drsim::testing {

inline constexpr uint16_t kModelGeneveOptionClass = 0x0102;
inline constexpr uint8_t kModelGeneveOptionType = 0x80;

// The fields of BuildFrame(spec) as received from the wire (source_port 0xffff).
hw::MatchParams ExpectedFields(const sim::FrameSpec& spec);
hw::MatchParams ExpectedFields(const sim::TunnelFrameSpec& spec);

}  // namespace drsim::testing

#endif  // DRSIM_TESTS_PACKET_MODEL_H_
