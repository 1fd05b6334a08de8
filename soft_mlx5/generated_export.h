// The helpers of the generated exports (exports_generated_*.cc, written by gen_exports.py).
//
// What
//   Every export of libibverbs.so.1 and libmlx5.so.1 that the software mlx5 device does not implement by
//   hand is still interposed: rdma-core's definition would read provider data that the software device's
//   objects do not have. Called on such an object, the export fails cleanly with EOPNOTSUPP; called on
//   anything else, it passes through to rdma-core untouched.
//
// How
//   A generated export asks AnySoftwareObject about its arguments that can hold a device object. If one
//   is the software device's, it returns Unsupported(...): the failure recorded for drsim_last_error()
//   and DRSIM_DEBUG, errno set, and the export's own failure value returned. Otherwise it calls
//   DRSIM_REAL_FUNCTION (capi/real_symbol.h), or returns Missing(...) when rdma-core's definition cannot
//   be found. Enum arguments are forwarded as their raw integers (RawEnum, WithRawEnums): C callers may
//   pass any value, and loading an out-of-range one as a C++ enum would be undefined.
//
// Thread-safety
//   Safe: the registry has its own lock, and failures are recorded per thread.
#ifndef DRSIM_SOFT_MLX5_GENERATED_EXPORT_H_
#define DRSIM_SOFT_MLX5_GENERATED_EXPORT_H_

#include <cerrno>
#include <string>
#include <type_traits>

#include "capi/errors.h"
#include "capi/objects.h"
#include "capi/raw_enum.h"

namespace drsim::soft_mlx5 {

// Whether any of `objects` is one of the software device's objects; NULL never is.
template <typename... T>
bool AnySoftwareObject(const T*... objects) {
  return ((objects != nullptr && capi::Registry::Get().Known(objects)) || ...);
}

// Records that `function` is not supported by the software mlx5 device (EOPNOTSUPP, errno set) and
// returns `failure`, the function's own way of saying so.
inline void Unsupported(const char* function) {
  capi::RecordFailure(function, EOPNOTSUPP,
                      std::string(function) + " is not supported by the software mlx5 device");
}
template <typename T>
T Unsupported(const char* function, T failure) {
  Unsupported(function);
  return failure;
}

// Records that rdma-core's own `function` could not be found (neither after libdrsim.so in the search
// order nor in libibverbs.so.1 / libmlx5.so.1), sets errno to EOPNOTSUPP and returns `failure`.
inline void Missing(const char* function) {
  capi::RecordFailure(function, EOPNOTSUPP, "rdma-core's definition of it cannot be loaded");
}
template <typename T>
T Missing(const char* function, T failure) {
  Missing(function);
  return failure;
}

namespace internal {
template <typename T, bool = std::is_enum_v<T>>
struct Raw {
  using type = T;
};
template <typename T>
struct Raw<T, true> {
  using type = std::underlying_type_t<T>;
};
}  // namespace internal

using capi::RawEnum;

// `real` typed with each enum parameter replaced by its underlying integer type (the same argument
// passing), so that RawEnum values can be forwarded to it.
template <typename R, typename... P>
auto WithRawEnums(R (*real)(P...)) {
  return reinterpret_cast<R (*)(typename internal::Raw<P>::type...)>(real);
}

}  // namespace drsim::soft_mlx5

#endif  // DRSIM_SOFT_MLX5_GENERATED_EXPORT_H_
