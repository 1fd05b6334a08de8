// Big-endian (network order) loads and stores on unaligned bytes. Used by the match layout, the packet
// parser and the frame builders; compiles to a load plus bswap.
#ifndef DRSIM_HW_BYTE_ORDER_H_
#define DRSIM_HW_BYTE_ORDER_H_

#include <cstdint>
#include <cstring>

namespace drsim::hw {

inline uint16_t LoadBe16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return __builtin_bswap16(v);
}
inline uint32_t LoadBe32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return __builtin_bswap32(v);
}
inline void StoreBe16(uint8_t* p, uint16_t v) {
  v = __builtin_bswap16(v);
  std::memcpy(p, &v, sizeof v);
}
inline void StoreBe32(uint8_t* p, uint32_t v) {
  v = __builtin_bswap32(v);
  std::memcpy(p, &v, sizeof v);
}

}  // namespace drsim::hw

#endif  // DRSIM_HW_BYTE_ORDER_H_
