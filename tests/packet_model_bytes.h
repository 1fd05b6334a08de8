// The packet model's own view of a frame's bytes, for the fields that are raw header words
// (misc5.tunnel_header_*, misc3.gtpu_dw_*): lengths, the tunnel header serialised from a TunnelSpec, and
// the filler a plain frame carries after its L4 header. Written from the protocol formats, separately
// from sim/frame_builder's tunnel encoder; only the inner packet's bytes come from the plain
// sim::BuildFrame(inner).
#ifndef DRSIM_TESTS_PACKET_MODEL_BYTES_H_
#define DRSIM_TESTS_PACKET_MODEL_BYTES_H_

#include <cstdint>
#include <vector>

#include "sim/frame_builder.h"

namespace drsim::testing {

// Any fragment: IPv4 MF or offset, or an IPv6 fragment header.
bool IsFragmented(const sim::FrameSpec& s);

// The outer spec as the tunnel makes it: protocol 47 for GRE, UDP to the tunnel's port otherwise.
sim::FrameSpec EffectiveOuter(const sim::TunnelFrameSpec& t);

// What follows a plain frame's L4 header on the wire: its filler payload, then the Ethernet padding.
std::vector<uint8_t> WireL4Payload(const sim::FrameSpec& s);

// The tunnel header (for GRE with its checksum) followed by the inner packet.
std::vector<uint8_t> TunnelBytes(const sim::TunnelFrameSpec& t);

// The GTP-U header's flags and raw dwords.
struct GtpuLayout {
  uint8_t flags = 0;
  bool optional = false;  // the sequence / N-PDU / next-type dword is present
  uint32_t dw0 = 0;
  uint32_t dw2 = 0;
  uint32_t first_ext_dw0 = 0;
};
GtpuLayout GtpuLayoutOf(const sim::TunnelFrameSpec& t);

}  // namespace drsim::testing

#endif  // DRSIM_TESTS_PACKET_MODEL_BYTES_H_
