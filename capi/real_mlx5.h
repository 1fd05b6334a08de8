// rdma-core's own libmlx5, for contexts and objects that are not the software NIC's (a real ConnectX).
//
// What
//   RealMlx5 holds libmlx5's definitions of every function the C API forwards (real_mlx5_functions.inc
//   lists them with their symbol versions). Real() gives all of them or none.
//
// How
//   This library exports the mlx5dv_dr_* names itself, so each is found through RealSymbol
//   (real_symbol.h), which never answers with drsim's own definition. The table is filled on first use.
//
// Thread-safety
//   Safe: the table is a function-local static, read-only once filled.
#ifndef DRSIM_CAPI_REAL_MLX5_H_
#define DRSIM_CAPI_REAL_MLX5_H_

#include <infiniband/mlx5dv.h>

namespace drsim::capi {

// The functions of libmlx5 the C API forwards to; each member is named after its function and has its
// exact type.
struct RealMlx5 {
#define DRSIM_REAL(name, version) decltype(&::name) name = nullptr;
#define DRSIM_REAL_RAW_ENUM(name, version)
#include "capi/real_mlx5_functions.inc"
#undef DRSIM_REAL_RAW_ENUM
#undef DRSIM_REAL
  // The functions taking an enum by value, typed with the enum's underlying `unsigned int` (the same
  // argument passing): C callers may pass any value, and forwarding it must not load it as a C++ enum.
  mlx5dv_dr_domain* (*mlx5dv_dr_domain_create)(ibv_context* ctx, unsigned type) = nullptr;
  mlx5dv_dr_action* (*mlx5dv_dr_action_create_packet_reformat)(mlx5dv_dr_domain* domain, uint32_t flags,
                                                               unsigned reformat_type, size_t data_sz,
                                                               void* data) = nullptr;
};

// libmlx5's functions, or nullptr when libmlx5.so.1 cannot be found or lacks one of them (then the caller
// fails with EOPNOTSUPP: there is no real device to hand the call to).
const RealMlx5* Real();

}  // namespace drsim::capi

#endif  // DRSIM_CAPI_REAL_MLX5_H_
