// The handlers of the DevX commands that the dispatcher (devx_commands.cc) runs.
//
// What
//   One file per concern: capability pages (devx_caps.cc), flow counters (devx_counters.cc), RQ tables
//   and TIRs (devx_tir.cc), ASO general objects (devx_aso.cc) and GENEVE TLV option objects
//   (devx_geneve.cc).
//
// How
//   Each handler gets mailboxes whose headers the dispatcher checked (the input holds 8 bytes; the
//   output holds 16 and is zeroed), checks that the input holds the fields it reads, and returns how the
//   command ended. A create handler sets *created only when it is done.
//
// Thread-safety
//   Callers hold the context's lock (capi::Context::mu).
#ifndef DRSIM_SOFT_MLX5_DEVX_HANDLERS_H_
#define DRSIM_SOFT_MLX5_DEVX_HANDLERS_H_

#include <infiniband/mlx5dv.h>

#include "capi/objects.h"
#include "soft_mlx5/devx_commands.h"

namespace drsim::soft_mlx5 {

// QUERY_HCA_CAP, for function `fn` (or, from the eSwitch manager, the function other_function names).
Outcome QueryHcaCap(const drsim_function_context& fn, Mailbox m);

// ALLOC_FLOW_COUNTER and QUERY_FLOW_COUNTER.
Outcome AllocFlowCounter(const drsim_function_context& fn, Mailbox m, mlx5dv_devx_obj** created);
Outcome QueryFlowCounter(mlx5dv_devx_obj& counters, Mailbox m);

// ALLOC_Q_COUNTER, and QUERY_Q_COUNTER of one (`counter`), or by counter_set_id through general_cmd.
Outcome AllocQueueCounter(const drsim_function_context& fn, Mailbox m, mlx5dv_devx_obj** created);
Outcome QueryQueueCounter(capi::Context& ctx, uint16_t vport, mlx5dv_devx_obj* counter, Mailbox m);

// CREATE_RQT and CREATE_TIR, on function `fn`'s receive queues.
Outcome CreateRqt(const drsim_function_context& fn, Mailbox m, mlx5dv_devx_obj** created);
Outcome CreateTir(const drsim_function_context& fn, Mailbox m, mlx5dv_devx_obj** created);

// The general-object commands on ASO flow meter and flow-hit objects.
Outcome CreateGeneralObject(const drsim_function_context& fn, Mailbox m, mlx5dv_devx_obj** created);
Outcome QueryGeneralObject(mlx5dv_devx_obj& obj, Mailbox m);
Outcome ModifyGeneralObject(mlx5dv_devx_obj& obj, Mailbox m);
// The general-object commands on GENEVE TLV option parser objects (obj_type 0x0b, devx_geneve.cc).
bool IsGeneveTlvOptionCreate(const Mailbox& m);
Outcome CreateGeneveTlvOption(const drsim_function_context& fn, Mailbox m, mlx5dv_devx_obj** created);
Outcome QueryGeneveTlvOption(mlx5dv_devx_obj& obj, Mailbox m);
Outcome ModifyGeneveTlvOption();

}  // namespace drsim::soft_mlx5

#endif  // DRSIM_SOFT_MLX5_DEVX_HANDLERS_H_
