#include "capi/real_mlx5.h"

#include "capi/real_symbol.h"

namespace drsim::capi {
namespace {

const RealMlx5* Load() {
  static RealMlx5 real;
  bool complete = true;
#define DRSIM_REAL(name, version)                                                \
  real.name = reinterpret_cast<decltype(real.name)>(RealSymbol(#name, version)); \
  complete = complete && real.name != nullptr;
#define DRSIM_REAL_RAW_ENUM DRSIM_REAL
#include "capi/real_mlx5_functions.inc"
#undef DRSIM_REAL_RAW_ENUM
#undef DRSIM_REAL
  return complete ? &real : nullptr;
}

}  // namespace

const RealMlx5* Real() {
  static const RealMlx5* real = Load();
  return real;
}

}  // namespace drsim::capi
