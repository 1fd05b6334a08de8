// Which masks a matcher can be built from, decided the way rdma-core's SW steering decides it
// (dr_matcher_set_ste_builders, legacy "STE builder" path of a ConnectX-6 Dx): a copy of the mask is
// consumed by a fixed sequence of builders, each built when its trigger fields are still set and clearing
// the fields it matches on; any masked bit left over is unsupported and named.
//
// Consequences users meet (all as in rdma-core):
//  - IP addresses, protocol, DSCP/ECN, TTL, TCP flags and L4 ports need ip_version 4 or 6 in the mask of
//    the same header; IPv4 consumes only the low address words, IPv6 the flow label but not the IHL;
//  - source_port/source_sqn are not matchable in NIC_TX domains;
//  - only one tunnel family per matcher (VXLAN-GPE, else GENEVE, else GTP-U, else raw tunnel header);
//  - ICMPv4 and ICMPv6 fields cannot be mixed;
//  - l3_ok/l4_ok/checksum_ok bits, ESP SPIs, MACsec tags, vhca fields and reserved bits are never matchable.
// The device model has every flex parser the steering layer can use (GENEVE option 0, GTP-U, MPLS over
// GRE/UDP, full tunnel header) except the user-programmable samples of misc4, which it does not model.
//
// Stateless and thread-safe.
#ifndef DRSIM_MATCHER_MASK_CONSUMPTION_H_
#define DRSIM_MATCHER_MASK_CONSUMPTION_H_

#include <infiniband/mlx5dv.h>

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace drsim::matcher {

// One steering-entry builder the mask needs (for dumps and traces).
struct SteBuilder {
  absl::string_view name;  // rdma-core's builder name, e.g. "eth_l3_ipv4_5_tuple"
  bool inner;              // built from the inner header block
  uint16_t lu_type;        // the ConnectX-6 Dx (STE v1) lookup type
};

// The builders for `mask` (448 bytes, PRM layout, sections not in `criteria` already zeroed) on one pipe
// of a domain (rx: the NIC_RX domain, or the FDB RX pipe). Errors:
//  - Unimplemented (EOPNOTSUPP) naming the first masked field no builder consumes, with the reason;
//  - InvalidArgument (EINVAL) when `criteria` is nonzero but no builder applies (nothing masked).
absl::StatusOr<std::vector<SteBuilder>> ConsumeMask(mlx5dv_dr_domain_type domain, bool rx, uint8_t criteria,
                                                    const uint8_t* mask);

}  // namespace drsim::matcher

#endif  // DRSIM_MATCHER_MASK_CONSUMPTION_H_
