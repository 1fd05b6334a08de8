// rdma-core's own definitions of the exports this library interposes, for devices and objects that are
// not the software device's (a real ConnectX passes through untouched).
//
// How
//   RealSymbol looks the versioned name up after this library in the process's search order
//   (dlvsym with RTLD_NEXT: libibverbs.so.1 or libmlx5.so.1 when the program links them), or failing
//   that in libibverbs.so.1 / libmlx5.so.1 loaded privately. DRSIM_REAL_FUNCTION caches the answer.
//
// Thread-safety
//   Safe: the cache is a function-local static.
#ifndef DRSIM_SOFT_MLX5_REAL_H_
#define DRSIM_SOFT_MLX5_REAL_H_

namespace drsim::soft_mlx5 {

// The definition of `name` at symbol version `version` ("IBVERBS_1.1", "MLX5_1.7", ...), or nullptr.
void* RealSymbol(const char* name, const char* version);

}  // namespace drsim::soft_mlx5

// The real `name` at `version`, typed as the header declares it; nullptr when there is none. The cache's
// name is one no caller uses: clang 14 rejects `if (auto* fn = DRSIM_REAL_FUNCTION(...))` when the
// lambda's static has the name of the variable being declared ("redefinition of 'fn'").
#define DRSIM_REAL_FUNCTION(name, version)                                                   \
  ([]() {                                                                                    \
    static auto* real_fn_ =                                                                  \
        reinterpret_cast<decltype(&::name)>(::drsim::soft_mlx5::RealSymbol(#name, version)); \
    return real_fn_;                                                                         \
  }())

#endif  // DRSIM_SOFT_MLX5_REAL_H_
