// The software NIC's action engine: applies an action program's operations to a packet, in the
// program's (the hardware's) order — flow tag, VLAN pop/push, modify-header SET/ADD/COPY, counters,
// encapsulation — and keeps the frame one a real stack accepts:
//  - modify-header: an action whose header is absent from the packet (a TCP field on a UDP packet, an
//    IPv4 field on IPv6) does nothing; after the list runs, only the checksums over the fields the list
//    writes are fixed (hw::ModifyProgram::checksums, decided when the list was compiled): a list writing
//    an IPv4 header field gets the IPv4 header checksum recomputed, one writing addresses, ports, TCP
//    flags, sequence or acknowledgment numbers gets the TCP/UDP checksum updated incrementally (RFC 1624;
//    a zero IPv4 UDP checksum stays zero). A list of MAC, VLAN and register writes leaves the frame's
//    bytes other than those fields as they came, a wrong checksum included: the hardware "recalcs
//    checksums only if re-writing headers" (Linux mlx5e, en/tc/act/csum.c, csum_offload_supported);
//  - encapsulation: the new outer IPv4 total length and header checksum, IPv6 payload length and UDP
//    length are set from the frame (the user's header template cannot know the inner size), and a nonzero
//    outer UDP checksum is recomputed;
//  - decapsulation removes everything before the inner Ethernet header (L2_TUNNEL_TO_L2) or before the
//    inner IP header, which gets the action's 14- or 18-byte L2 header (L3_TUNNEL_TO_L2); a frame with no
//    such inner header (not a tunnel the parser knows) stops the program, and the caller drops it, as
//    rdma-core's STE v0 decap (fail_on_error set) asks of the hardware;
//  - pop_vlan on an untagged frame does nothing;
//  - aso flow meter: the colour (red 0, yellow 1, green 2) replaces the low 8 bits of reg_c[return_reg_c];
//    aso first hit: reg_c[return_reg_c] becomes 1 if the context had been hit before, else 0;
//    aso connection tracking: the outer TCP segment goes through the CT context in the action's direction
//    and the packet state (sim/conntrack.h CtRegisterByte) replaces the low 8 bits of reg_c[return_reg_c].
//
// The parse the operations read (the outer layers, and the whole packet for decapsulation) is the caller's
// when the caller has one (KnownParse), until an operation changes the headers; else the executor's own.
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

// A parse of the packet as ActionExecutor::Run finds it, which the caller made and Run starts from instead
// of parsing again: ParsePacket's header vector and layers (`whole`), or what ParseOuterHeaders gives (the
// outer words of `hv`, the outer layers). `hv` null: none.
struct KnownParse {
  const hw::HeaderVector* hv = nullptr;
  const PacketLayers* layers = nullptr;
  bool whole = false;
};

class ActionExecutor {
 public:
  // What Run changed: nothing, only metadata (registers a later lookup may match), or headers (and
  // perhaps metadata); or kNoTunnel: a decap action found no tunnel to remove, and Run stopped there (the
  // caller drops the frame; the actions before it may have run).
  enum class Change : uint8_t { kNothing, kMetadata, kHeaders, kNoTunnel };

  ActionExecutor(CounterBank* counters, AsoBank* aso) : counters_(counters), aso_(aso) {}

  // Runs `ops` on the packet at time `now_ns`, from the parse `known` if any; a kTagOfRule op sets
  // `rule_tag`, the flow tag of the rule whose ops they are. Returns what changed, so the next lookup knows
  // what it must parse again.
  Change Run(absl::Span<const hw::Op> ops, PacketBuffer& packet, PacketMeta& meta, uint64_t now_ns = 0,
             const KnownParse& known = {}, uint32_t rule_tag = 0);

 private:
  enum class Parsed : uint8_t { kNo, kOuter, kWhole };
  // Makes hv() and layers() describe the packet as it is now: its outer headers (the outer words of hv(), the
  // outer layers), or with `whole` all of it; parses it into the executor's own only when they do not.
  void EnsureParsed(const PacketBuffer& packet, const PacketMeta& meta, bool whole = false) {
    if (parsed_ == Parsed::kWhole || (parsed_ == Parsed::kOuter && !whole)) return;
    Parse(packet, meta, whole);
  }
  // Parses into the executor's own: the outer headers, or with `whole` all of it.
  void Parse(const PacketBuffer& packet, const PacketMeta& meta, bool whole);
  // Runs a modify-header list; true if it may have changed the headers, false if it wrote registers only.
  bool Modify(const hw::ModifyProgram& program, PacketBuffer& packet, PacketMeta& meta);
  void PushVlan(uint32_t vlan_header, PacketBuffer& packet);
  bool PopVlan(PacketBuffer& packet);
  void Encap(const std::vector<uint8_t>& headers, bool l3, PacketBuffer& packet, const PacketMeta& meta);
  // L2 decap (`l2_header` null) or L3 decap; false (and nothing done) for a frame without the inner header.
  bool Decap(const std::vector<uint8_t>* l2_header, PacketBuffer& packet, const PacketMeta& meta);
  void FixOuterLengths(PacketBuffer& packet, const PacketMeta& meta);

  CounterBank* counters_;
  AsoBank* aso_;
  // The parse the operations read (as far as parsed_ says): the caller's while it holds, else the own.
  // (Read through known_, not copied out of it: the caller has just stored it field by field.)
  const hw::HeaderVector& hv() const { return known_ != nullptr ? *known_->hv : own_hv_; }
  const PacketLayers& layers() const { return known_ != nullptr ? *known_->layers : own_layers_; }

  const KnownParse* known_ = nullptr;  // the caller's parse, during Run and until the headers change
  Parsed parsed_ = Parsed::kNo;
  hw::HeaderVector own_hv_;
  PacketLayers own_layers_;
};

}  // namespace drsim::sim

#endif  // DRSIM_SIM_ACTION_EXECUTOR_H_
