// The value a C caller put in an enum argument or field, read as its integer: C lets any int through, and
// loading an out-of-range value as a C++ enum would be undefined (UBSan's -fsanitize=enum reports it).
#ifndef DRSIM_CAPI_RAW_ENUM_H_
#define DRSIM_CAPI_RAW_ENUM_H_

#include <cstring>

namespace drsim::capi {

template <typename Enum>
unsigned RawEnum(const Enum& e) {
  static_assert(sizeof(Enum) == sizeof(unsigned));
  unsigned raw;
  std::memcpy(&raw, &e, sizeof raw);
  return raw;
}

}  // namespace drsim::capi

#endif  // DRSIM_CAPI_RAW_ENUM_H_
