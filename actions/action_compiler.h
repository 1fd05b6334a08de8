// The action compiler: checks a rule's action list the way rdma-core does and turns it into the
// device's action programs, one per pipe of the rule's domain.
//
// Non-root tables (dr_actions_build_ste_arr), for each pipe (FDB rules are checked for both), actions in
// the user's order: first the per-type checks (EINVAL: a destination table of another domain, a queue of
// another device, a root-level reformat/modify, a CT action of another domain whose object is not linked
// to the rule's), then multiplicity (each type at most once, push/pop
// VLAN at most twice: EINVAL; a third push_vlan: ENOTSUP), then the state machine (EOPNOTSUPP).
// Root (level 0) tables go through the kernel in rdma-core (dr_actions_build_attr): only drop, tag,
// dest QP/TIR, dest table, dest array, counter, default miss, and reformat/modify created with ROOT_LEVEL are
// accepted (ENOTSUP otherwise), and no state machine applies; the modelled kernel takes one destination per
// rule.
//
// The programs are order-independent: the device applies operations in its fixed per-pipe order
// (hw/action_program.h). Errors name the action's index and type. Stateless and thread-safe.
#ifndef DRSIM_ACTIONS_ACTION_COMPILER_H_
#define DRSIM_ACTIONS_ACTION_COMPILER_H_

#include <infiniband/mlx5dv.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "actions/action_type.h"
#include "hw/action_program.h"
#include "hw/modify_header.h"

namespace drsim::actions {

// What the compiler needs to know of one action object.
struct ActionSpec {
  ActionType type = ActionType::kDrop;
  const void* domain = nullptr;  // the domain the action is bound to (dest/next table: the table's), or null
  const void* device = nullptr;  // kQp (queue or TIR), kAso*: identity of the device owning the object
  bool root_level = false;       // reformat/modify created with MLX5DV_DR_ACTION_FLAGS_ROOT_LEVEL
  uint32_t tag = 0;              // kTag, 24 bits
  uint32_t qp_num = 0;           // kQp: the queue (when !is_tir)
  bool is_tir = false;           // kQp: a DEVX TIR
  uint32_t tir = 0;              // kQp with is_tir
  const hw::FlowTable* table = nullptr;                // kFt, kRootFt; kMeter, kSampler: the next table
  uint16_t root_priority = 0;                          // kRootFt
  uint32_t counter_id = 0;                             // kCtr
  const hw::ModifyProgram* modify = nullptr;           // kModifyHdr
  uint32_t vlan_header = 0;                            // kPushVlan: TPID << 16 | TCI
  const std::vector<uint8_t>* reformat = nullptr;      // encap headers / L3-decap L2 header
  uint16_t vport = 0;                                  // kVport (0xffff: the uplink)
  uint32_t meter = 0;                                  // kMeter: the device's meter
  uint8_t meter_reg = 0;                               // kMeter: reg_c index for the colour
  uint32_t sampler = 0;                                // kSampler: the device's sampler
  const hw::Replica* sample = nullptr;                 // kSampler: the sample path
  const std::vector<hw::Replica>* replicas = nullptr;  // kDestArray
  uint32_t aso_context = 0;                            // kAso*: the device's context
  uint8_t aso_reg = 0;                                 // kAso*: reg_c index for the result
  uint8_t aso_initial_color = 2;                       // kAsoFlowMeter
  bool aso_set = false;                                // kAsoFirstHit
  bool aso_initiator = false;                          // kAsoCt: tracks the initiator's direction
  // kAsoCt used by a rule of another domain than its own: the domain its object is linked to
  // (mlx5dv_dr_aso_other_domain_link), or null. Only a rule of that domain may use it.
  const void* ct_link_domain = nullptr;
};

// The action with its parameters, for messages and traces: "tag 0x123", "dest_ibv_qp 0x100", ...
std::string DescribeAction(const ActionSpec& action);

// Where the rule is being inserted.
struct RuleContext {
  mlx5dv_dr_domain_type domain_type = MLX5DV_DR_DOMAIN_TYPE_NIC_RX;
  const void* domain = nullptr;  // identity of the rule's domain
  const void* device = nullptr;  // identity of the domain's device
  bool root_table = false;       // the matcher's table is level 0
  // Root tables of this domain take reformat actions (hw::RootTablesTakeReformat: the eSwitch encap mode).
  bool root_reformat = true;
  uint32_t table_level = 0;  // the matcher's table level
  // FDB only: pipes the rule is not inserted in (rdma-core's dr_rule_skip: a rule matching source_port
  // 0xffff, the wire, lives only in the RX pipe; one matching another vport only in the TX pipe).
  bool skip_rx = false;
  bool skip_tx = false;
};

// The RX and TX programs (by hw::Pipe); the pipe a domain lacks keeps an empty program.
absl::StatusOr<std::array<hw::ActionProgram, 2>> CompileActions(const RuleContext& rule,
                                                                absl::Span<const ActionSpec* const> actions);

}  // namespace drsim::actions

#endif  // DRSIM_ACTIONS_ACTION_COMPILER_H_
