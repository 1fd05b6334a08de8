// A DV flow request — mlx5dv_create_flow_matcher's attributes, then mlx5dv_create_flow's match value and
// action list (<infiniband/mlx5dv.h>) — read and checked the way rdma-core 44's libmlx5 and Linux mlx5_ib
// (drivers/infiniband/hw/mlx5/fs.c) take them, before any object the request names is looked up.
//
// What
//   A DV matcher is kernel-managed steering: a root flow table chosen by ft_type (NIC_RX, the kernel's
//   bypass namespace, by default; NIC_TX with IBV_FLOW_ATTR_FLAGS_EGRESS or ft_type), a priority,
//   match_criteria_enable and a mask in the PRM fte_match_param layout (512 bytes: hw/match_layout.h's 448
//   and 64 reserved; a shorter buffer is zero-extended). The kernel stores the matcher as given and reaches
//   the device with its first flow, so the mask's contents are checked per flow: ReadMatchValue turns a
//   flow's match value into the one KernelRule (capi/verbs_spec.h) the flow joins.
//
// How
//   - The device ignores the sections match_criteria_enable leaves out: the rule's mask and value keep the
//     enabled sections only, so its criteria are those of the sections that mask something. An
//     ip_version mask of 0xf (the kernel's) with a value of 4 or 6 becomes the layout's mask 4 or 6, which
//     compares the same (capi/verbs_spec.h writes verbs flows' so).
//   - Namespace and priority are the kernel's: the bypass namespace (its NIC_TX twin for NIC_TX) at the
//     matcher's priority, or the multicast priority when mlx5_ib's raw_fs_is_multicast holds (outer
//     headers enabled, and a multicast destination MAC in value and mask, or a 224.0.0.0/4 IPv4
//     destination in value and mask).
//   - ReadActionList runs libmlx5's loop over the actions (one destination, one tag, one DEVX counter,
//     at most 8 flow actions, known types only); the kernel's checks that need the objects are the
//     caller's (capi/dv_flow.cc).
//
// Errors are absl::Status codes (docs/errors.md) naming the field, the byte or the action index.
// Stateless and thread-safe.
#ifndef DRSIM_CAPI_DV_FLOW_REQUEST_H_
#define DRSIM_CAPI_DV_FLOW_REQUEST_H_

#include <infiniband/mlx5dv.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "capi/verbs_spec.h"

namespace drsim::capi {

// The kernel's match buffer (struct mlx5_ib_match_params, PRM fte_match_param).
inline constexpr size_t kFteMatchParamBytes = 512;

// A DV matcher as mlx5_ib keeps it.
struct DvMatcherSpec {
  unsigned ft_type = MLX5DV_FLOW_TABLE_TYPE_NIC_RX;
  uint16_t priority = 0;
  uint8_t criteria = 0;  // match_criteria_enable as given
  std::array<uint8_t, kFteMatchParamBytes> mask{};
};

// "NIC_RX", "NIC_TX", "FDB", "RDMA_RX", "RDMA_TX" or "ft_type N".
std::string FlowTableTypeName(unsigned ft_type);

// Checks, in this order: NULL attr (EINVAL); libmlx5's comp_mask beyond FT_TYPE and a type other than
// NORMAL (EOPNOTSUPP); then mlx5_ib's: a NULL mask or one of 0 or more than 512 bytes, flags together with
// FT_TYPE, an unknown ft_type, flags other than EGRESS (EINVAL).
absl::StatusOr<DvMatcherSpec> ReadMatcherAttr(const mlx5dv_flow_matcher_attr* attr);

// The entry a flow of `matcher` with `value` joins (in NIC_TX for a NIC_TX matcher, else NIC_RX). EINVAL
// for a NULL value, one of 0 or more than 512 bytes, a value bit outside the mask (named), or reserved
// mask bits (match_criteria_enable bit 7, the last 64 bytes).
absl::StatusOr<KernelRule> ReadMatchValue(const DvMatcherSpec& matcher,
                                          const mlx5dv_flow_match_parameters* value);

// mlx5dv_create_flow's actions as libmlx5 accepts them; pointers are the caller's, unchecked.
struct DvActionList {
  enum class Dest : uint8_t { kNone, kQp, kDevx, kDrop, kDefaultMiss };
  Dest dest = Dest::kNone;
  size_t dest_index = 0;
  ibv_qp* qp = nullptr;                 // kQp
  mlx5dv_devx_obj* dest_obj = nullptr;  // kDevx
  std::optional<uint32_t> tag;          // as given (the kernel takes 24 bits)
  size_t tag_index = 0;
  mlx5dv_devx_obj* counters = nullptr;  // COUNTERS_DEVX
  size_t counters_index = 0;
  struct FlowAction {
    size_t index;
    ibv_flow_action* action;
  };
  std::vector<FlowAction> flow_actions;  // IBV_FLOW_ACTION, in order
};

// The action's name: "DEST_IBV_QP", ..., or "type N".
std::string DvActionTypeName(unsigned type);

// libmlx5's checks, action by action: a second destination (DEST_IBV_QP, DEST_DEVX, DROP, DEFAULT_MISS)
// or a second COUNTERS_DEVX, a ninth IBV_FLOW_ACTION, and any other type — IBV_COUNTER included, which
// libmlx5 44 has no case for — are EOPNOTSUPP; a second TAG is EINVAL. A NULL `actions` with actions to
// read, and a NULL object, are EINVAL.
absl::StatusOr<DvActionList> ReadActionList(size_t num_actions, const mlx5dv_flow_action_attr* actions);

}  // namespace drsim::capi

#endif  // DRSIM_CAPI_DV_FLOW_REQUEST_H_
