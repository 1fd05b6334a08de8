#include "matcher/kernel_path.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "hw/match_layout.h"

namespace drsim::matcher {
namespace {

// The abs bit of the first bit set in `bytes[0, size)` under ~`allowed` (nullptr: nothing allowed), if any.
std::optional<size_t> FirstBitOutside(const uint8_t* bytes, const uint8_t* allowed, size_t size) {
  size_t byte = 0;
  // Eight bytes at a time up to the first word with a bit outside (a root-table rule's value is checked on
  // every insert), then byte by byte from there.
  for (; byte + 8 <= size; byte += 8) {
    uint64_t word, allowed_word = 0;
    std::memcpy(&word, bytes + byte, 8);
    if (allowed != nullptr) std::memcpy(&allowed_word, allowed + byte, 8);
    if ((word & ~allowed_word) != 0) break;
  }
  for (; byte < size; ++byte) {
    const uint8_t outside = bytes[byte] & (allowed == nullptr ? 0xff : ~allowed[byte]);
    if (outside != 0) return byte * 8 + __builtin_clz(static_cast<unsigned>(outside) << 24);
  }
  return std::nullopt;
}

}  // namespace

absl::Status CheckKernelSize(const char* what, const mlx5dv_flow_match_parameters& param) {
  const size_t size = param.match_sz;
  if (size == 0 || size > kKernelMatchParamBytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "root-table %s match_sz %d: the kernel takes 1 to %d bytes", what, size, kKernelMatchParamBytes));
  }
  const auto* bytes = reinterpret_cast<const uint8_t*>(param.match_buf);
  if (size > hw::kMatchParamBytes) {
    if (std::optional<size_t> bit =
            FirstBitOutside(bytes + hw::kMatchParamBytes, nullptr, size - hw::kMatchParamBytes)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "root-table %s byte %d is set: bytes %d to %d of the kernel's match parameters are reserved", what,
          hw::kMatchParamBytes + *bit / 8, hw::kMatchParamBytes, kKernelMatchParamBytes - 1));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckKernelValue(const uint8_t* kernel_mask, const mlx5dv_flow_match_parameters& value) {
  DRSIM_RETURN_IF_ERROR(CheckKernelSize("rule value", value));
  const auto* v = reinterpret_cast<const uint8_t*>(value.match_buf);
  const size_t n = std::min<size_t>(value.match_sz, hw::kMatchParamBytes);
  if (std::optional<size_t> bit = FirstBitOutside(v, kernel_mask, n)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("rule value sets %s bits outside the matcher's mask (the kernel's check_valid_spec)",
                        hw::BitOwnerName(*bit)));
  }
  return absl::OkStatus();
}

absl::Status RootRuleRefusal(const uint8_t* mask, const hw::ParsedFields& parsed) {
  for (size_t byte = 0; byte < hw::kMatchParamBytes; ++byte) {
    for (unsigned bits = mask[byte]; bits != 0;) {
      const int msb = __builtin_clz(bits << 24);  // MSB first, as the layout counts
      bits &= ~(0x80u >> msb);
      const size_t bit = byte * 8 + msb;
      const std::optional<hw::Field> f = hw::FieldAtBit(bit);
      if (!f.has_value()) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "root-table mask sets %s: the firmware refuses the rule's flow group (BAD_PARAM), reserved bits "
            "must be zero",
            hw::BitOwnerName(bit)));
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
