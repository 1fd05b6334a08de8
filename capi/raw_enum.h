// The value a C caller put in an enum argument or field, read as its integer: C lets any int through, and
// loading an out-of-range value as a C++ enum would be undefined (UBSan's -fsanitize=enum reports it).
#ifndef DRSIM_CAPI_RAW_ENUM_H_
#define DRSIM_CAPI_RAW_ENUM_H_

#include <cstring>
#include <type_traits>

namespace drsim::capi {

template <typename Enum>
std::underlying_type_t<Enum> RawEnum(const Enum& e) {
  std::underlying_type_t<Enum> raw;
  static_assert(sizeof raw == sizeof e);
  std::memcpy(&raw, &e, sizeof raw);
  return raw;
}

}  // namespace drsim::capi

#endif  // DRSIM_CAPI_RAW_ENUM_H_
