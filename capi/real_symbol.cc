#include "capi/real_symbol.h"

#include <dlfcn.h>

#include <cstring>

namespace drsim::capi {

void* RealSymbol(const char* name, const char* version) {
  if (void* fn = dlvsym(RTLD_NEXT, name, version)) return fn;
  const char* library = std::strncmp(version, "MLX5_", 5) == 0 ? "libmlx5.so.1" : "libibverbs.so.1";
  void* handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  return handle == nullptr ? nullptr : dlvsym(handle, name, version);
}

}  // namespace drsim::capi
