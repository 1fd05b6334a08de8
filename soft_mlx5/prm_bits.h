// One field of an mlx5 PRM layout: a command mailbox or a capability page.
//
// What
//   The PRM (and mlx5_ifc.h, which spells it as arrays `u8 name[width]`) lays every structure out as a
//   string of bits: a field is a bit offset and a width, counted from the most significant bit of byte 0,
//   so a multi-byte field is big-endian. PrmField names one; PrmGet and PrmSet read and write it.
//
// How
//   Bit by bit, most significant first: fields are few and the paths that use them (commands) are not hot.
//   A field reaching past the end of the buffer reads as 0 and is not written there, so a length check
//   forgotten by a caller can never touch memory outside the buffer.
//
// Thread-safety
//   Plain functions on the caller's buffers.
#ifndef DRSIM_SOFT_MLX5_PRM_BITS_H_
#define DRSIM_SOFT_MLX5_PRM_BITS_H_

#include <cstddef>
#include <cstdint>

#include "absl/types/span.h"

namespace drsim::soft_mlx5 {

struct PrmField {
  uint32_t bit;    // offset of the field's most significant bit
  uint32_t width;  // 1 to 64 bits

  // The same field in a structure placed `bits` further on (a member of a larger layout).
  constexpr PrmField At(uint32_t bits) const { return {bit + bits, width}; }
  // The byte offset of the field's first byte, and the buffer size that holds all of it.
  constexpr size_t first_byte() const { return bit / 8; }
  constexpr size_t end_byte() const { return (bit + width + 7) / 8; }
};

uint64_t PrmGet(absl::Span<const uint8_t> buf, PrmField f);
void PrmSet(absl::Span<uint8_t> buf, PrmField f, uint64_t value);

}  // namespace drsim::soft_mlx5

#endif  // DRSIM_SOFT_MLX5_PRM_BITS_H_
