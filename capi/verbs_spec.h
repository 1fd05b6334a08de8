// A verbs flow request (struct ibv_flow_attr and the specs after it, <infiniband/verbs.h>) read and checked
// the way libibverbs and the Linux mlx5_ib driver take it, and turned into the kernel flow-table entries it
// asks for: where each goes (NIC_RX or NIC_TX, a kernel namespace, a priority) and its mask and value in
// the mlx5 match layout. docs/verbs_flow.md has the spec-to-field table and every deliberate difference.
//
// The request is read as bytes, as libibverbs' ibv_cmd_create_flow walks it: the attribute, then
// num_of_specs specs right after it, each as long as its own size field says (attr->size is not read;
// pyverbs sets it to sizeof(struct ibv_flow_attr) alone). C enum fields are read as integers (a C caller
// may pass any value). Errors are absl::Status codes (docs/errors.md: EINVAL malformed, EOPNOTSUPP valid
// but not supported, ENOMEM no such priority) whose messages name the spec index and field.
//
// What the result means:
//  - NORMAL: one entry per variant of the match (two, IPv4 and IPv6, for each header stack whose TCP, UDP
//    or GRE spec comes without an IP spec: the kernel matches either version, the layout needs one), in
//    NIC_RX (NIC_TX with EGRESS), namespace kDontTrap with DONT_TRAP, kMulticast when the kernel deems
//    the flow multicast-only, else kBypass, at the flow's priority.
//  - ALL_DEFAULT: NIC_RX leftovers entries for multicast and unicast destination MACs; MC_DEFAULT: the
//    multicast one only. SNIFFER: a match-all entry in the NIC_RX and NIC_TX sniffer namespaces (NIC_TX
//    only with EGRESS), as mlx5_ib installs them.
//  - The actions: drop, a flow tag, a counters object (its pointer, unchecked here).
//
// Stateless and thread-safe.
#ifndef DRSIM_CAPI_VERBS_SPEC_H_
#define DRSIM_CAPI_VERBS_SPEC_H_

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "hw/flow_table.h"
#include "hw/match_params.h"

namespace drsim::capi {

// The verbs priorities the kernel's bypass namespace has (Linux mlx5: MLX5_IB_FLOW_LAST_PRIO is 15).
inline constexpr uint16_t kMaxVerbsPriority = 15;
// At most this many specs (the kernel's IB_FLOW_SPEC_SUPPORT_LAYERS).
inline constexpr unsigned kMaxVerbsSpecs = 10;

// One kernel flow-table entry a flow joins.
struct KernelRule {
  mlx5dv_dr_domain_type domain = MLX5DV_DR_DOMAIN_TYPE_NIC_RX;  // NIC_RX or NIC_TX
  hw::RootNamespace ns = hw::RootNamespace::kBypass;
  uint16_t priority = 0;
  hw::MatchParams mask;
  hw::MatchParams value;
};

struct VerbsFlowRequest {
  unsigned type = IBV_FLOW_ATTR_NORMAL;
  bool egress = false;
  std::vector<KernelRule> rules;
  bool drop = false;
  std::optional<uint32_t> tag;       // 24 bits
  ibv_counters* counters = nullptr;  // from an ACTION_COUNT spec
};

// Reads `attr` (NULL: InvalidArgument) and the num_of_specs specs that follow it, which the caller must
// provide as for ibv_create_flow. Checks, in this order: the attribute header (comp_mask, type, flags,
// DONT_TRAP and EGRESS against the type, number of specs, port, priority), then each spec in turn (header,
// size, type, INNER, fields, duplicates and conflicts), then the combination (specs on a type that takes
// none, ether_type against the IP spec, a tag on EGRESS).
absl::StatusOr<VerbsFlowRequest> ReadFlowAttr(const ibv_flow_attr* attr);

}  // namespace drsim::capi

#endif  // DRSIM_CAPI_VERBS_SPEC_H_
