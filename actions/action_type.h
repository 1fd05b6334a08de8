// The kinds of steering actions, numbered as rdma-core numbers them internally (enum dr_action_type), the
// states of its per-domain action-order state machine, and the "action domains" (a domain's pipe) the
// machine is kept for.
#ifndef DRSIM_ACTIONS_ACTION_TYPE_H_
#define DRSIM_ACTIONS_ACTION_TYPE_H_

#include <infiniband/mlx5dv.h>

#include <cstdint>

#include "absl/strings/string_view.h"

namespace drsim::actions {

enum class ActionType : uint8_t {
  kTnlL2ToL2 = 0,  // packet reformat L2_TUNNEL_TO_L2 (decap)
  kL2ToTnlL2,      // packet reformat L2_TO_L2_TUNNEL (encap)
  kTnlL3ToL2,      // packet reformat L3_TUNNEL_TO_L2 (decap)
  kL2ToTnlL3,      // packet reformat L2_TO_L3_TUNNEL (encap)
  kDrop,
  kQp,   // dest QP or dest DEVX TIR
  kFt,   // dest table
  kCtr,  // flow counter
  kTag,
  kModifyHdr,
  kVport,  // dest vport / dest IB port
  kMeter,
  kMiss,  // default miss
  kSampler,
  kDestArray,
  kPopVlan,
  kPushVlan,
  kAsoFirstHit,
  kAsoFlowMeter,
  kAsoCt,
  kRootFt,  // dest root table
};
inline constexpr int kNumActionTypes = static_cast<int>(ActionType::kRootFt) + 1;

// The name users know the action by: the mlx5dv_dr_action_create_* suffix ("drop", "dest_table", ...).
absl::string_view ActionTypeName(ActionType type);

// Terminating actions decide where the packet goes; after one, only a counter may follow.
bool IsTerminating(ActionType type);

enum class ActionState : uint8_t {
  kErr = 0,
  kNoAction,
  kEncap,
  kDecap,
  kModifyHdr,
  kPopVlan,
  kPushVlan,
  kNonTerm,
  kTerm,
  kAso,
};
inline constexpr int kNumActionStates = static_cast<int>(ActionState::kAso) + 1;

// A domain's pipe, as the state machine sees it.
enum class ActionDomain : uint8_t { kNicIngress = 0, kNicEgress, kFdbIngress, kFdbEgress };
inline constexpr int kNumActionDomains = 4;

absl::string_view ActionDomainName(ActionDomain domain);

// The pipe(s) of a domain type: NIC_RX has only ingress, NIC_TX only egress, FDB both.
struct DomainPipes {
  ActionDomain pipes[2];
  int count;
};
DomainPipes PipesOf(mlx5dv_dr_domain_type domain);

}  // namespace drsim::actions

#endif  // DRSIM_ACTIONS_ACTION_TYPE_H_
