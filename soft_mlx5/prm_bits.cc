#include "soft_mlx5/prm_bits.h"

namespace drsim::soft_mlx5 {

uint64_t PrmGet(absl::Span<const uint8_t> buf, PrmField f) {
  uint64_t value = 0;
  for (uint32_t i = 0; i < f.width; ++i) {
    const uint32_t bit = f.bit + i;
    const size_t byte = bit / 8;
    const uint64_t set = byte < buf.size() ? (buf[byte] >> (7 - bit % 8)) & 1 : 0;
    value = (value << 1) | set;
  }
  return value;
}

void PrmSet(absl::Span<uint8_t> buf, PrmField f, uint64_t value) {
  for (uint32_t i = 0; i < f.width; ++i) {
    const uint32_t bit = f.bit + i;
    const size_t byte = bit / 8;
    if (byte >= buf.size()) return;  // the rest of the field lies past the end as well
    const uint8_t mask = static_cast<uint8_t>(1u << (7 - bit % 8));
    const bool set = (value >> (f.width - 1 - i)) & 1;
    buf[byte] = set ? (buf[byte] | mask) : (buf[byte] & ~mask);
  }
}

}  // namespace drsim::soft_mlx5
