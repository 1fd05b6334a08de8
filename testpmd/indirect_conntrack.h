// Internal to the engine: the conntrack kind of indirect action (indirect_actions.h), as the mlx5 PMD maps
// it (mlx5_flow_dv.c).
//
// What. `flow indirect_action P create ... action conntrack / end` makes a one-context CT object on the
// NIC, programmed from the engine's `set conntrack` profile (peer port and direction stay with the object,
// as mlx5 keeps them beside the context). A rule using it (`indirect ID`) gets a DR aso action of the
// object's direction writing the CT result to reg_c_5, the register mlx5 gives ASO results; a later
// rule's `conntrack is FLAGS` item matches that register.
//   update ... conntrack_update dir: the direction of rules created afterwards (the profile's is_orig);
//   update ... conntrack_update ctx: reprograms the context from the profile;
//   query: reads the context back and prints it as testpmd's port_action_handle_query.
//
// How. Restrictions are mlx5's, each error naming its reason. flow_dv_validate_action_aso_ct: not in root
// tables (group 0), not after drop, queue, rss or jump, not after a meter or an age (own or indirect), not
// after an encap, only on outer TCP; flow_dv_validate_action_sample: no sample after it; a meter or an ASO
// age after it is flow_dv_validate's one-ASO check (ActionLowering::CheckAsoActions). The DR action is made
// in the port's NIC_RX domain, as flow_dv_aso_ct_alloc makes it, so DR refuses it in egress and transfer
// rules. mlx5_validate_action_ct: a context with an unknown state or last_index is refused at create and
// update; flow_dv_translate_create_conntrack: only ports 0..15 own a CT. The peer port is kept for queries.
//
// Not thread-safe.
#ifndef DRSIM_TESTPMD_INDIRECT_CONNTRACK_H_
#define DRSIM_TESTPMD_INDIRECT_CONNTRACK_H_

#include <memory>

#include "absl/status/statusor.h"
#include "testpmd/indirect_actions.h"

namespace drsim::testpmd {

// The CT object of `action` (a conntrack action) on `port`, from ctx.conntrack.
absl::StatusOr<std::shared_ptr<IndirectObject>> MakeIndirectConntrack(EngineContext& ctx, uint16_t port,
                                                                      const Action& action);

}  // namespace drsim::testpmd

#endif  // DRSIM_TESTPMD_INDIRECT_CONNTRACK_H_
