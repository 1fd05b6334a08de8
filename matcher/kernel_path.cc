#include "matcher/kernel_path.h"

#include <cstring>
#include <optional>
#include <string>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "hw/match_layout.h"

namespace drsim::matcher {
namespace {

// The abs bit of the first bit set in `bytes[0, size)` under ~`allowed`, if any.
std::optional<size_t> FirstBitOutside(const uint8_t* bytes, const uint8_t* allowed, size_t size) {
  size_t byte = 0;
  // 64 bytes at a time, without a branch inside (it compiles to vector ops), up to the first block with a
  // bit outside (a root-table rule's value is checked on every insert), then byte by byte from there.
  constexpr size_t kBlock = 64;
  for (; byte + kBlock <= size; byte += kBlock) {
#if defined(__SSE2__)
    __m128i outside = _mm_setzero_si128();
    for (size_t at = byte; at < byte + kBlock; at += 16) {
      const __m128i word = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes + at));
      const __m128i allowed_word = _mm_loadu_si128(reinterpret_cast<const __m128i*>(allowed + at));
      outside = _mm_or_si128(outside, _mm_andnot_si128(allowed_word, word));
    }
    if (_mm_movemask_epi8(_mm_cmpeq_epi8(outside, _mm_setzero_si128())) != 0xffff) break;
#else
    uint64_t outside = 0;
    for (size_t at = byte; at < byte + kBlock; at += 8) {
      uint64_t word, allowed_word;
      std::memcpy(&word, bytes + at, 8);
      std::memcpy(&allowed_word, allowed + at, 8);
      outside |= word & ~allowed_word;
    }
    if (outside != 0) break;
#endif
  }
  for (; byte < size; ++byte) {
    const uint8_t outside = bytes[byte] & ~allowed[byte];
    if (outside != 0) return byte * 8 + __builtin_clz(static_cast<unsigned>(outside) << 24);
  }
  return std::nullopt;
}

// The name of `bit` of the kernel's fte_match_param: the layout's field or reserved run, or the PRM's
// reserved tail past the layout.
std::string KernelBitName(size_t bit) {
  if (bit < hw::kMatchParamBytes * 8) return hw::BitOwnerName(bit);
  return absl::StrFormat("reserved_at_%x (byte %d of the kernel's fte_match_param)", hw::kMatchParamBytes * 8,
                         bit / 8);
}

}  // namespace

absl::Status CheckKernelSize(const char* what, const mlx5dv_flow_match_parameters& param) {
  const size_t size = param.match_sz;
  if (size == 0 || size > kKernelMatchParamBytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "root-table %s match_sz %d: the kernel takes 1 to %d bytes", what, size, kKernelMatchParamBytes));
  }
  return absl::OkStatus();
}

absl::Status CheckKernelValue(const uint8_t* kernel_mask, const mlx5dv_flow_match_parameters& value) {
  DRSIM_RETURN_IF_ERROR(CheckKernelSize("rule value", value));
  const auto* v = reinterpret_cast<const uint8_t*>(value.match_buf);
  if (std::optional<size_t> bit = FirstBitOutside(v, kernel_mask, value.match_sz)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("rule value sets %s bits outside the matcher's mask (the kernel's check_valid_spec)",
                        KernelBitName(*bit)));
  }
  return absl::OkStatus();
}

absl::Status RootRuleRefusal(const uint8_t* kernel_mask, uint8_t criteria, const hw::ParsedFields& parsed) {
  for (size_t byte = 0; byte < kKernelMatchParamBytes; ++byte) {
    const size_t section = byte / hw::kSectionBytes;
    if (section < hw::kNumSections && !(criteria & hw::CriteriaBit(static_cast<hw::Section>(section)))) {
      byte += hw::kSectionBytes - 1;  // the firmware reads the enabled sections only
      continue;
    }
    for (unsigned bits = kernel_mask[byte]; bits != 0;) {
      const int msb = __builtin_clz(bits << 24);  // MSB first, as the layout counts
      bits &= ~(0x80u >> msb);
      const size_t bit = byte * 8 + msb;
      const std::optional<hw::Field> f =
          section < hw::kNumSections ? hw::FieldAtBit(bit) : std::optional<hw::Field>();
      if (!f.has_value()) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "root-table mask sets %s: the firmware refuses the rule's flow group (BAD_PARAM), reserved bits "
            "must be zero",
            KernelBitName(bit)));
      }
      if (!parsed.Contains(*f)) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "root-table mask field %s: the firmware refuses the rule's flow group (BAD_PARAM): the device's "
            "flow tables do not match it, as the %s does not parse it%s",
            hw::Info(*f).name, parsed.parser(), parsed.limits().empty() ? "" : " (" + parsed.limits() + ")"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace drsim::matcher
