#include "matcher/kernel_path.h"

#include <cstring>
#include <optional>
#include <string>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "hw/match_layout.h"
#include "matcher/mask_bits.h"

namespace drsim::matcher {
namespace {

// The abs bit of the first bit set in `bytes[0, size)` under ~`allowed`, if any.
std::optional<size_t> FirstBitOutside(const uint8_t* bytes, const uint8_t* allowed, size_t size) {
  if (BitsOutside(bytes, allowed, size) == 0) return std::nullopt;  // (mostly: then no byte is looked at)
  for (size_t byte = 0; byte < size; ++byte) {
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
