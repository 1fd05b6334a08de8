// Tunnelled frames the parser tests share (sim/packet_parser_tunnel_test.cc, sim/outer_parse_test.cc).
//
// What: Spec, a plain frame of one L3 kind with fixed addresses; Tunnel, an outer IPv4 packet carrying a
// tunnel of one kind around an inner IPv4/TCP packet to 192.168.0.2:80; EveryTunnelKind, one such frame of
// every kind with its optional fields; Damaged, a frame with bits flipped and its end cut off.
// How: sim/frame_builder.h specs, built by the caller.
// Thread-safety: pure functions (Damaged draws from the caller's generator).
#ifndef DRSIM_SIM_TUNNEL_FRAMES_TESTING_H_
#define DRSIM_SIM_TUNNEL_FRAMES_TESTING_H_

#include <cstdint>
#include <random>
#include <vector>

#include "sim/frame_builder.h"

namespace drsim::sim {

FrameSpec Spec(L3Kind l3);
// An outer IPv4 packet carrying `kind`, with an inner IPv4/TCP packet to 192.168.0.2:80.
TunnelFrameSpec Tunnel(Encap kind);
// One frame of every tunnel kind (and RoCE v2), with optional fields, options and extensions.
std::vector<TunnelFrameSpec> EveryTunnelKind();
// `f` with 1 to 3 bits flipped and up to 15 bytes cut off its end.
std::vector<uint8_t> Damaged(std::vector<uint8_t> f, std::mt19937& rng);

}  // namespace drsim::sim

#endif  // DRSIM_SIM_TUNNEL_FRAMES_TESTING_H_
