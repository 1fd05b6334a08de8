// Header bytes for the encapsulation actions, built as testpmd and the mlx5 PMD build them.
//
//  - `set raw_encap` / `set raw_decap` items -> bytes (testpmd's cmd_set_raw): each item contributes its
//    header with the spec's values, or with rte_flow's default mask as the values when the item has no spec
//    (testpmd's quirk: a bare `ipv4` becomes 255.255.255.255 -> 255.255.255.255); testpmd then fills only
//    what the command line cannot: the Ethernet type from the next item, the IPv4 version/IHL (when 0) and
//    protocol (when 0), the IPv6 version and next header (when 0), VXLAN flags 0x08 (when 0), VXLAN-GPE
//    flags 0x0c, and NVGRE's K bit and protocol 0x6558. Nothing else: a VLAN item needs its inner_type and a
//    UDP item before vxlan its dst port, as in testpmd.
//  - vxlan_encap / nvgre_encap from `set vxlan` / `set nvgre` (testpmd's item list, then mlx5's
//    flow_dv_convert_encap_data defaults: types and protocols from the next header, IPv4 version/IHL 0x45
//    and TTL 64 when 0, IPv6 version 6 and hop limit 255 when 0, UDP destination 4789, VXLAN flags 0x08).
// Lengths and checksums stay 0: the device fills them when it encapsulates (docs/semantics.md).
//
// Pure functions; thread-safe.
#ifndef DRSIM_TESTPMD_ENCAP_H_
#define DRSIM_TESTPMD_ENCAP_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "testpmd/ast.h"

namespace drsim::testpmd {

// mlx5's MLX5_ENCAPSULATION_DECISION_SIZE: an encap or decap header up to this size (Ethernet + IPv4) is
// an L2 header only; a larger one is a tunnel.
inline constexpr size_t kEncapDecisionSize = 14 + 20;

// The header bytes of `set raw_encap/raw_decap` items. Errors (at the item) for an item that is not a
// header testpmd can build (eth, vlan, ipv4, ipv6, udp, tcp, vxlan, vxlan-gpe, gre, gre_key, nvgre, mpls,
// geneve, gtp).
absl::StatusOr<std::vector<uint8_t>> RawHeaderBytes(absl::Span<const Item> items);

// testpmd's configuration before any `set vxlan` / `set nvgre`.
SetTunnelCmd DefaultVxlanConf();
SetTunnelCmd DefaultNvgreConf();

// The outer headers vxlan_encap (conf.kind kVxlan) or nvgre_encap (kNvgre) prepend.
std::vector<uint8_t> TunnelEncapHeader(const SetTunnelCmd& conf);

}  // namespace drsim::testpmd

#endif  // DRSIM_TESTPMD_ENCAP_H_
