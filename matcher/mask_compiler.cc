#include "matcher/mask_compiler.h"

#include <cstring>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "hw/match_params.h"
#include "hw/parsed_fields.h"
#include "matcher/kernel_path.h"
#include "matcher/mask_bits.h"

namespace drsim::matcher {
namespace {

using hw::Field;
using hw::Headers;

// Copies the sections enabled in `criteria` from a caller's buffer of `size` bytes (missing bytes are 0).
// Copies of constant size, a section at a time, compile to vector moves; whole-buffer memset and memcpy
// become `rep` string operations, whose stores the word loads that follow stall on.
void CopyEnabledSections(uint8_t criteria, const uint8_t* src, size_t size, uint8_t* dst) {
  for (int s = 0; s < hw::kNumSections; ++s) {
    const auto section = static_cast<hw::Section>(s);
    const size_t begin = hw::SectionOffset(section);
    uint8_t* out = dst + begin;
    if (!(criteria & hw::CriteriaBit(section))) {
      std::memset(out, 0, hw::kSectionBytes);
    } else if (begin + hw::kSectionBytes <= size) {
      std::memcpy(out, src + begin, hw::kSectionBytes);
    } else {
      std::memset(out, 0, hw::kSectionBytes);
      if (size > begin) std::memcpy(out, src + begin, size - begin);
    }
  }
}

// rdma-core's dr_ste_build_pre_check for a mask (value == nullptr) or a rule value.
absl::Status PreCheck(uint8_t criteria, const uint8_t* mask, const uint8_t* value) {
  // Constant fields, so that each read folds to a load and a shift (this runs for every rule inserted).
  static constexpr struct {
    uint8_t criteria;
    Field field;
  } kIpVersions[] = {{hw::kCriteriaOuter, Field::kOuterIpVersion},
                     {hw::kCriteriaInner, Field::kInnerIpVersion}};
  for (const auto& [bit, f] : kIpVersions) {
    if (!(criteria & bit)) continue;
    const uint32_t m = hw::GetField(mask, f);
    if (m == 0) continue;
    if (m != 4 && m != 6) {
      return absl::UnimplementedError(absl::StrFormat(
          "mask %s is 0x%x: it must be 4 or 6 (the L3 type to match) or 0", hw::Info(f).name, m));
    }
    if (value != nullptr && hw::GetField(value, f) != m) {
      return absl::UnimplementedError(
          absl::StrFormat("rule value %s is %d but the matcher's mask says %d: they must be equal",
                          hw::Info(f).name, hw::GetField(value, f), m));
    }
  }
  if (value == nullptr && (criteria & hw::kCriteriaMisc)) {
    const uint32_t port = hw::GetField(mask, Field::kSourcePort);
    if (port != 0 && port != 0xffff) {
      return absl::UnimplementedError(absl::StrFormat(
          "mask misc.source_port is 0x%x: a partial source_port mask is not supported (use 0xffff)", port));
    }
  }
  return absl::OkStatus();
}

// The mask the definer compares under: the user's, widened where the hardware compares whole fields.
std::array<uint8_t, hw::kMatchParamBytes> EffectiveMask(const uint8_t* user) {
  std::array<uint8_t, hw::kMatchParamBytes> m;
  std::memcpy(m.data(), user, m.size());
  auto widen_if_any = [&](std::initializer_list<Field> group) {
    bool any = false;
    for (Field f : group) any |= hw::GetField(m.data(), f) != 0;
    if (any) {
      for (Field f : group) hw::SetFieldAllOnes(m.data(), f);
    }
  };
  for (Headers h : {Headers::kOuter, Headers::kInner}) {
    widen_if_any({hw::HeaderField(h, Field::kOuterIpVersion)});
    widen_if_any({hw::HeaderField(h, Field::kOuterCvlanTag), hw::HeaderField(h, Field::kOuterSvlanTag)});
  }
  widen_if_any({Field::kOuterSecondCvlanTag, Field::kOuterSecondSvlanTag});
  widen_if_any({Field::kInnerSecondCvlanTag, Field::kInnerSecondSvlanTag});
  widen_if_any({Field::kSourceSqn});
  return m;
}

// TCP and UDP ports share the L4 port field of the hardware's 5-tuple lookups.
std::vector<hw::Definer::Fold> PortFolds() {
  std::vector<hw::Definer::Fold> folds;
  for (Headers h : {Headers::kOuter, Headers::kInner}) {
    folds.push_back(
        {static_cast<uint32_t>(hw::Info(hw::HeaderField(h, Field::kOuterTcpSport)).word_offset()),
         static_cast<uint32_t>(hw::Info(hw::HeaderField(h, Field::kOuterUdpSport)).word_offset())});
  }
  return folds;
}

}  // namespace

absl::StatusOr<CompiledMask> CompileMask(mlx5dv_dr_domain_type domain, uint8_t criteria,
                                         const mlx5dv_flow_match_parameters* mask,
                                         const hw::ParsedFields& parsed, RulePath path) {
  if (criteria >= 0x80) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "match_criteria_enable 0x%02x has bits above the 7 sections (must be < 0x80)", criteria));
  }
  const bool kernel = path == RulePath::kKernel;
  if (kernel) {
    if (mask != nullptr) DRSIM_RETURN_IF_ERROR(CheckKernelSize("matcher mask", *mask));
  } else if (mask != nullptr && mask->match_sz > hw::kMatchParamBytes) {
    return absl::InvalidArgumentError(absl::StrFormat("mask match_sz %d exceeds the %d-byte match layout",
                                                      mask->match_sz, hw::kMatchParamBytes));
  }
  CompiledMask out;
  out.criteria = criteria;
  out.path = path;
  if (mask != nullptr) {
    CopyEnabledSections(criteria, reinterpret_cast<const uint8_t*>(mask->match_buf), mask->match_sz,
                        out.mask.data());
  }
  if (kernel) {
    // The kernel and the firmware check what they check at rule creation (kernel_path.h); the mask the
    // firmware compares under is the user's, bit for bit: no STE builder widens or folds a field.
    out.kernel_mask.assign(kKernelMatchParamBytes, 0);
    if (mask != nullptr) std::memcpy(out.kernel_mask.data(), mask->match_buf, mask->match_sz);
    out.root_rule_refusal = RootRuleRefusal(out.kernel_mask.data(), criteria, parsed);
    out.definer = hw::Definer::FromMask(out.mask.data());
    return out;
  }
  DRSIM_RETURN_IF_ERROR(PreCheck(criteria, out.mask.data(), nullptr));

  const bool has_rx = domain != MLX5DV_DR_DOMAIN_TYPE_NIC_TX;
  const bool has_tx = domain != MLX5DV_DR_DOMAIN_TYPE_NIC_RX;
  if (has_rx) {
    DRSIM_ASSIGN_OR_RETURN(std::vector<SteBuilder> b, ConsumeMask(domain, true, criteria, out.mask.data()));
    out.rx_builders = std::move(b);
  }
  if (has_tx) {
    DRSIM_ASSIGN_OR_RETURN(std::vector<SteBuilder> b, ConsumeMask(domain, false, criteria, out.mask.data()));
    out.tx_builders = std::move(b);
  }
  // Valid for rdma-core, but a field the device's parser does not fill would never match: refuse it.
  for (size_t i = 0; i < hw::kNumFields; ++i) {
    const Field f = hw::FieldAt(i);
    if (hw::GetField(out.mask.data(), f) != 0 && !parsed.Contains(f)) {
      return absl::UnimplementedError(absl::StrFormat(
          "mask field %s is matchable on a ConnectX, but the %s does not parse it%s; a rule on it would "
          "never match",
          hw::Info(f).name, parsed.parser(), parsed.limits().empty() ? "" : " (" + parsed.limits() + ")"));
    }
  }
  std::array<uint8_t, hw::kMatchParamBytes> effective = EffectiveMask(out.mask.data());
  out.definer = hw::Definer::FromMask(effective.data(), PortFolds());
  return out;
}

absl::Status BuildRuleKey(const CompiledMask& compiled, const mlx5dv_flow_match_parameters* value,
                          uint32_t* key, uint8_t* normalized) {
  if (value == nullptr) return absl::InvalidArgumentError("rule value is null");
  const size_t size = value->match_sz;
  const bool kernel = compiled.path == RulePath::kKernel;
  if (kernel) {
    DRSIM_RETURN_IF_ERROR(CheckKernelValue(compiled.kernel_mask.data(), *value));
    DRSIM_RETURN_IF_ERROR(compiled.root_rule_refusal);
  } else if (size != 0 && (size > hw::kMatchParamBytes || size % 4 != 0)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "rule value match_sz %d must be a multiple of 4 and at most %d", size, hw::kMatchParamBytes));
  }
  const uint8_t* src = reinterpret_cast<const uint8_t*>(value->match_buf);
  // The checks and the key read enabled sections only (the definer's words, folds included, lie where
  // the mask does). When the value holds all of them, they read it in place; otherwise from a copy with
  // the sections it lacks zeroed, as they are when `normalized` wants the enabled sections alone.
  const size_t extent =
      compiled.criteria == 0 ? 0 : (32 - __builtin_clz(compiled.criteria)) * hw::kSectionBytes;
  uint8_t copy[hw::kMatchParamBytes];
  const uint8_t* v = src;
  if (size < extent || normalized != nullptr) {
    CopyEnabledSections(compiled.criteria, src, size, copy);
    v = copy;
  }
  // Any bit outside the mask (BitsOutside, section by section)? Only then is the first such byte looked for,
  // to name its field.
  uint64_t outside_any = 0;
  for (uint32_t enabled = compiled.criteria; enabled != 0; enabled &= enabled - 1) {  // bit s: section s
    const size_t begin = hw::SectionOffset(static_cast<hw::Section>(__builtin_ctz(enabled)));
    outside_any |= BitsOutside(v + begin, compiled.mask.data() + begin, hw::kSectionBytes);
  }
  for (int s = 0; outside_any != 0 && s < hw::kNumSections; ++s) {
    const auto section = static_cast<hw::Section>(s);
    if (!(compiled.criteria & hw::CriteriaBit(section))) continue;
    for (size_t byte = hw::SectionOffset(section); byte < hw::SectionOffset(section) + hw::kSectionBytes;
         ++byte) {
      const uint8_t outside = v[byte] & ~compiled.mask[byte];
      if (outside == 0) continue;
      const size_t bit = byte * 8 + __builtin_clz(static_cast<unsigned>(outside) << 24);
      return absl::InvalidArgumentError(
          absl::StrFormat("rule value sets %s bits outside the matcher's mask", hw::BitOwnerName(bit)));
    }
  }
  if (!kernel) DRSIM_RETURN_IF_ERROR(PreCheck(compiled.criteria, compiled.mask.data(), v));
  compiled.definer.Extract(v, key);
  if (normalized != nullptr) std::memcpy(normalized, copy, hw::kMatchParamBytes);
  return absl::OkStatus();
}

}  // namespace drsim::matcher
