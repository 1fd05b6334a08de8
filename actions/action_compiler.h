// The action compiler: checks a rule's action list the way rdma-core's dr_actions_build_ste_arr does and
// turns it into the device's action program.
//
// For each pipe of the rule's domain (FDB rules are checked for both), actions are taken in the user's
// order: first the per-type checks (a destination table of another domain is EINVAL), then the
// multiplicity rule (each type at most once, push/pop VLAN at most twice: EINVAL), then the state machine
// (an illegal order is EOPNOTSUPP). Per-type checks: a destination table of another domain, a queue of
// another device (EINVAL). The program itself is order-independent: the device applies actions in
// its fixed order. Errors name the action's index and type.
//
// Stateless and thread-safe.
#ifndef DRSIM_ACTIONS_ACTION_COMPILER_H_
#define DRSIM_ACTIONS_ACTION_COMPILER_H_

#include <infiniband/mlx5dv.h>

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "actions/action_type.h"
#include "hw/flow_table.h"

namespace drsim::actions {

// What the compiler needs to know of one action object.
struct ActionSpec {
  ActionType type = ActionType::kDrop;
  uint32_t tag = 0;                      // kTag, 24 bits
  uint32_t qp_num = 0;                   // kQp
  const hw::FlowTable* table = nullptr;  // kFt
  const void* table_domain = nullptr;    // kFt: identity of the destination table's domain
  const void* queue_device = nullptr;    // kQp: identity of the device owning the queue
};

// Where the rule is being inserted.
struct RuleContext {
  mlx5dv_dr_domain_type domain_type = MLX5DV_DR_DOMAIN_TYPE_NIC_RX;
  const void* domain = nullptr;  // identity of the rule's domain
  const void* device = nullptr;  // identity of the domain's device
};

absl::StatusOr<hw::ActionProgram> CompileActions(const RuleContext& rule,
                                                 absl::Span<const ActionSpec* const> actions);

}  // namespace drsim::actions

#endif  // DRSIM_ACTIONS_ACTION_COMPILER_H_
