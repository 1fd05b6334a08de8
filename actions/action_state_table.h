// rdma-core's per-domain action-order state machine (dr_action.c next_action_state): a rule's actions are
// checked in the user's order, each moving the state; an action with no transition is rejected.
#ifndef DRSIM_ACTIONS_ACTION_STATE_TABLE_H_
#define DRSIM_ACTIONS_ACTION_STATE_TABLE_H_

#include "actions/action_type.h"

namespace drsim::actions {

// The state after `type` is applied in `state` on `domain`'s pipe; ActionState::kErr when not allowed.
ActionState NextActionState(ActionDomain domain, ActionState state, ActionType type);

}  // namespace drsim::actions

#endif  // DRSIM_ACTIONS_ACTION_STATE_TABLE_H_
