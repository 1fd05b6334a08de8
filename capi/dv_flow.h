// The DV flow API of <infiniband/mlx5dv.h> on the software NIC: mlx5dv_create_flow_matcher,
// mlx5dv_destroy_flow_matcher, mlx5dv_create_flow, mlx5dv_create_flow_action_packet_reformat and
// mlx5dv_create_flow_action_modify_header, exported by capi with rdma-core's signatures; for contexts and
// objects that are not a software NIC's they hand the call to rdma-core's libmlx5 (real_symbol.h).
//
// What
//   A DV flow is kernel-managed steering, as ibv_create_flow's verbs flows are: it goes into the kernel's
//   root flow table of its matcher's ft_type on the matcher's function, the same tables verbs flows use
//   (capi/verbs_steering.h), where it merges with the user's own DR root tables. The request is read by
//   capi/dv_flow_request.h; the objects it names (QP, TIR, DEVX counter, flow actions) are checked here,
//   with mlx5_ib's rules (drivers/infiniband/hw/mlx5/fs.c, mlx5 fs_core).
//
//   mlx5dv_create_flow returns a struct ibv_flow, destroyed with ibv_destroy_flow, and the flow actions a
//   struct ibv_flow_action, destroyed with ibv_destroy_flow_action: verbs.h's inline functions, which call
//   the context's verbs_context ops. InstallVerbsFlowOps (capi/verbs_flow.h) installs DestroyFlowAction and
//   an ibv_destroy_flow op that hands DV flows to DestroyDvFlow.
//
// Lifetimes, as the kernel's: a matcher is EBUSY while flows use it, a flow action while flows use it, a
// QP while flows send to it (drsim_destroy_qp); TIRs and counters are held by the rules (EBUSY from
// mlx5dv_devx_obj_destroy). All of them count as open objects of the NIC for drsim_close.
//
// Conventions, as libmlx5's: creators return NULL and set errno; the others return 0 or a positive errno.
// drsim_last_error() names the culprit. Every call takes the context's lock. docs/verbs_flow.md has the
// details and every difference from mlx5_ib.
#ifndef DRSIM_CAPI_DV_FLOW_H_
#define DRSIM_CAPI_DV_FLOW_H_

#include <infiniband/verbs.h>

namespace drsim::capi {

// Whether `flow` is a DV flow of a software NIC.
bool IsDvFlow(const ibv_flow* flow);
// ibv_destroy_flow for a DV flow: 0, EINVAL for anything else.
int DestroyDvFlow(ibv_flow* flow);
// The destroy_flow_action op of a software NIC's contexts: 0, EBUSY while flows use the action, EINVAL for
// anything but a flow action of a software NIC.
int DestroyFlowAction(ibv_flow_action* action);

}  // namespace drsim::capi

#endif  // DRSIM_CAPI_DV_FLOW_H_
