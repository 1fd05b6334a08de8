#include "capi/real_mlx5.h"

#include <dlfcn.h>

namespace drsim::capi {
namespace {

const RealMlx5* Load() {
  void* lib = dlopen("libmlx5.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return nullptr;
  static RealMlx5 real;
  bool complete = true;
#define DRSIM_REAL(name)                                                \
  real.name = reinterpret_cast<decltype(real.name)>(dlsym(lib, #name)); \
  complete = complete && real.name != nullptr;
#include "capi/real_mlx5_functions.inc"
  DRSIM_REAL(mlx5dv_dr_domain_create)
  DRSIM_REAL(mlx5dv_dr_action_create_packet_reformat)
#undef DRSIM_REAL
  return complete ? &real : nullptr;
}

}  // namespace

const RealMlx5* Real() {
  static const RealMlx5* real = Load();
  return real;
}

}  // namespace drsim::capi
