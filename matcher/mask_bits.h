// Whether a value sets bits its mask leaves out: the check every rule value meets (the kernel's
// check_valid_spec on a root table, DR's own elsewhere), on every insert.
//
// Pure functions; thread-safe.
#ifndef DRSIM_MATCHER_MASK_BITS_H_
#define DRSIM_MATCHER_MASK_BITS_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace drsim::matcher {

// The bits of `value[0, size)` that `mask` leaves out, ORed together a byte position at a time (0: none).
// 64 bytes a step in SSE2 vectors where the CPU has them, then eight, without a branch inside; a caller that
// finds any looks for the first such byte afterwards, to name its field.
inline uint64_t BitsOutside(const uint8_t* value, const uint8_t* mask, size_t size) {
  uint64_t outside = 0;
  size_t at = 0;
#if defined(__SSE2__)
  __m128i wide = _mm_setzero_si128();
  for (; at + 64 <= size; at += 64) {  // (four vectors a step: the loop's own work is the rest)
    for (size_t q = at; q < at + 64; q += 16) {
      const __m128i value_bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(value + q));
      const __m128i mask_bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(mask + q));
      wide = _mm_or_si128(wide, _mm_andnot_si128(mask_bytes, value_bytes));
    }
  }
  outside = static_cast<uint64_t>(_mm_cvtsi128_si64(_mm_or_si128(wide, _mm_unpackhi_epi64(wide, wide))));
#endif
  for (; at + 8 <= size; at += 8) {
    uint64_t value_word, mask_word;
    std::memcpy(&value_word, value + at, 8);
    std::memcpy(&mask_word, mask + at, 8);
    outside |= value_word & ~mask_word;
  }
  for (; at < size; ++at) outside |= static_cast<uint8_t>(value[at] & ~mask[at]);
  return outside;
}

}  // namespace drsim::matcher

#endif  // DRSIM_MATCHER_MASK_BITS_H_
