// The software NIC's action engine: applies an action program's operations to a packet, in the
// program's (the hardware's) order — flow tag, VLAN pop/push, modify-header SET/ADD/COPY, counters,
// encapsulation — and keeps the frame one a real stack accepts:
//  - modify-header: an action whose header is absent from the packet (a TCP field on a UDP packet, an
//    IPv4 field on IPv6) does nothing; after the list runs, a checksum is fixed only if bytes it covers
//    changed: an IPv4 header with a changed byte gets its checksum recomputed, and a TCP/UDP checksum is
//    updated incrementally (RFC 1624) for changed addresses, ports, flags, sequence and acknowledgment
//    numbers (a zero IPv4 UDP checksum stays zero). MAC, VLAN and register rewrites touch no checksum;
//  - encapsulation: the new outer IPv4 total length and header checksum, IPv6 payload length and UDP
//    length are set from the frame (the user's header template cannot know the inner size), and a nonzero
//    outer UDP checksum is recomputed;
//  - decapsulation removes everything before the inner Ethernet header (L2_TUNNEL_TO_L2) or before the
//    inner IP header, which gets the action's 14- or 18-byte L2 header (L3_TUNNEL_TO_L2); a frame with no
//    such inner header (not a tunnel the parser knows) is left as it is;
//  - pop_vlan on an untagged frame does nothing;
//  - aso flow meter: the colour (red 0, yellow 1, green 2) replaces the low 8 bits of reg_c[return_reg_c];
//    aso first hit: reg_c[return_reg_c] becomes 1 if the context had been hit before, else 0;
//    aso connection tracking: the outer TCP segment goes through the CT context in the action's direction
//    and the packet state (sim/conntrack.h CtRegisterByte) replaces the low 8 bits of reg_c[return_reg_c].
//
// Not thread-safe (keeps a scratch parse); use one executor per processing thread.
#ifndef DRSIM_SIM_ACTION_EXECUTOR_H_
#define DRSIM_SIM_ACTION_EXECUTOR_H_

#include "absl/types/span.h"
#include "hw/action_program.h"
#include "hw/match_layout.h"
#include "sim/aso.h"
#include "sim/counters.h"
#include "sim/packet.h"
#include "sim/packet_parser.h"

namespace drsim::sim {

class ActionExecutor {
 public:
  ActionExecutor(CounterBank* counters, AsoBank* aso) : counters_(counters), aso_(aso) {}

  // Runs `ops` on the packet at time `now_ns`. Returns true when headers changed, so the next lookup
  // must parse again.
  bool Run(absl::Span<const hw::Op> ops, PacketBuffer& packet, PacketMeta& meta, uint64_t now_ns = 0);

 private:
  // Parses the packet again if an operation changed it since the last parse.
  void EnsureParsed(const PacketBuffer& packet, const PacketMeta& meta);
  void Modify(const std::vector<hw::ModifyAction>& actions, PacketBuffer& packet, PacketMeta& meta);
  void PushVlan(uint32_t vlan_header, PacketBuffer& packet);
  bool PopVlan(PacketBuffer& packet);
  void Encap(const std::vector<uint8_t>& headers, bool l3, PacketBuffer& packet, const PacketMeta& meta);
  // L2 decap (`l2_header` null) or L3 decap; false (and nothing done) for a frame without the inner header.
  bool Decap(const std::vector<uint8_t>* l2_header, PacketBuffer& packet, const PacketMeta& meta);
  void FixOuterLengths(PacketBuffer& packet, const PacketMeta& meta);

  CounterBank* counters_;
  AsoBank* aso_;
  hw::HeaderVector hv_;
  PacketLayers layers_;
  bool parsed_ = false;
};

}  // namespace drsim::sim

#endif  // DRSIM_SIM_ACTION_EXECUTOR_H_
