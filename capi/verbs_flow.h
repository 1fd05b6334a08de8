// The verbs flow steering calls of <infiniband/verbs.h> on the software NIC: ibv_create_flow and
// ibv_destroy_flow, and the flow counters they count with (ibv_create_counters,
// ibv_attach_counters_point_flow, ibv_read_counters, ibv_destroy_counters). verbs.h implements those as
// inline functions that look their operation up in the context's struct verbs_context; drsim_open installs
// these there, so a program calls them exactly as on a ConnectX (docs/verbs_flow.md).
//
// A flow is kernel-managed steering: verbs_spec.h reads the request, verbs_steering.h installs it in the
// kernel's flow tables of the QP's function, which merge with the user's own DR root tables.
//
// Conventions, as libibverbs/mlx5's: creators return NULL and set errno; the others return 0 or a positive
// errno. drsim_last_error() names the culprit. Every call takes the context's lock.
#ifndef DRSIM_CAPI_VERBS_FLOW_H_
#define DRSIM_CAPI_VERBS_FLOW_H_

#include <infiniband/verbs.h>

namespace drsim::capi {

// Sets the flow and counters operations of a software NIC's function context, and those that destroy DV
// flows and flow actions (capi/dv_flow.h): ibv_destroy_flow takes both verbs and DV flows.
void InstallVerbsFlowOps(verbs_context& vctx);

}  // namespace drsim::capi

#endif  // DRSIM_CAPI_VERBS_FLOW_H_
