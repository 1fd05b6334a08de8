#include "hw/match_layout.h"

#include <array>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"

namespace drsim::hw {
namespace {

// For each bit of the buffer, 1 + the index of the field covering it (0 = reserved).
using BitOwners = std::array<uint16_t, kMatchParamBytes * 8>;

const BitOwners& Owners() {
  static const BitOwners* owners = [] {
    auto* o = new BitOwners{};
    for (size_t i = 0; i < kNumFields; ++i) {
      const FieldInfo& fi = kFieldTable[i];
      for (size_t b = 0; b < fi.width; ++b) (*o)[fi.abs_bit() + b] = static_cast<uint16_t>(i + 1);
    }
    return o;
  }();
  return *owners;
}

}  // namespace

absl::string_view SectionName(Section s) {
  static constexpr absl::string_view kNames[] = {"outer", "misc",  "inner", "misc2",
                                                 "misc3", "misc4", "misc5"};
  return kNames[static_cast<int>(s)];
}

std::optional<Field> FieldByName(absl::string_view name) {
  static const auto* by_name = [] {
    auto* m = new absl::flat_hash_map<absl::string_view, Field>();
    for (size_t i = 0; i < kNumFields; ++i) m->emplace(kFieldTable[i].name, FieldAt(i));
    return m;
  }();
  auto it = by_name->find(name);
  if (it == by_name->end()) return std::nullopt;
  return it->second;
}

std::optional<Field> FieldAtBit(size_t abs_bit) {
  if (abs_bit >= kMatchParamBytes * 8) return std::nullopt;
  uint16_t owner = Owners()[abs_bit];
  if (owner == 0) return std::nullopt;
  return FieldAt(owner - 1);
}

std::string BitOwnerName(size_t abs_bit) {
  if (std::optional<Field> f = FieldAtBit(abs_bit)) return std::string(Info(*f).name);
  // Name the reserved run the way the PRM does: by the offset of its first bit inside the section.
  size_t section_start = abs_bit / (kSectionBytes * 8) * (kSectionBytes * 8);
  size_t start = abs_bit;
  while (start > section_start && !FieldAtBit(start - 1)) --start;
  return absl::StrFormat("%s.reserved_at_%x", SectionName(static_cast<Section>(section_start / 512)),
                         start - section_start);
}

}  // namespace drsim::hw
