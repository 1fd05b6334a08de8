// rdma-core's own definitions of the names drsim exports itself, for devices and objects that are not
// the software NIC's (a real ConnectX passes through untouched).
//
// What
//   RealSymbol finds the definition of a versioned name in libibverbs.so.1 or libmlx5.so.1, never drsim's
//   own: libdrsim.so and libdrsim_mlx5dv.so export rdma-core's names under rdma-core's versions.
//   DRSIM_REAL_FUNCTION gives it the type the header declares and caches it. Every call drsim hands to
//   rdma-core goes through these two, the C API's (real_mlx5.h) and the software mlx5 device's alike.
//
// How
//   The name is looked up after this library in the process's search order (dlvsym with RTLD_NEXT:
//   libibverbs.so.1 or libmlx5.so.1 when the program links them), or failing that in libibverbs.so.1 or
//   libmlx5.so.1 (by the version's prefix) loaded privately with RTLD_LOCAL. RTLD_NEXT skips the object
//   holding RealSymbol and those before it, and drsim's definitions are among them: in the same shared
//   object, or in a Bazel test's per-library ones, in a library that depends on this one and so is loaded
//   before it. The private handle's scope is rdma-core's library and its dependencies alone.
//
// Thread-safety
//   Safe: dlvsym and dlopen are, and DRSIM_REAL_FUNCTION's cache is a function-local static.
#ifndef DRSIM_CAPI_REAL_SYMBOL_H_
#define DRSIM_CAPI_REAL_SYMBOL_H_

namespace drsim::capi {

// The definition of `name` at symbol version `version` ("IBVERBS_1.1", "MLX5_1.7", ...), or nullptr.
void* RealSymbol(const char* name, const char* version);

}  // namespace drsim::capi

// The real `name` at `version`, typed as the header declares it; nullptr when there is none. The cache's
// name is one no caller uses: clang 14 rejects `if (auto* fn = DRSIM_REAL_FUNCTION(...))` when the
// lambda's static has the name of the variable being declared ("redefinition of 'fn'").
#define DRSIM_REAL_FUNCTION(name, version)                                                                  \
  ([]() {                                                                                                   \
    static auto* real_fn_ = reinterpret_cast<decltype(&::name)>(::drsim::capi::RealSymbol(#name, version)); \
    return real_fn_;                                                                                        \
  }())

#endif  // DRSIM_CAPI_REAL_SYMBOL_H_
