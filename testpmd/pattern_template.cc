#include "testpmd/pattern_template.h"

#include <cstring>
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "testpmd/values.h"

namespace drsim::testpmd {
namespace {

bool SameLayers(const HeaderLayers& a, const HeaderLayers& b) {
  return a.eth == b.eth && a.vlans == b.vlans && a.l3 == b.l3 && a.l4 == b.l4;
}

bool SameInfo(const PatternInfo& a, const PatternInfo& b) {
  return SameLayers(a.outer, b.outer) && SameLayers(a.inner, b.inner) && a.tunnel == b.tunnel &&
         a.vlan_vid == b.vlan_vid && a.vlan_pcp == b.vlan_pcp;
}

absl::Status NoTemplate(absl::string_view why) {
  return absl::FailedPreconditionError(absl::StrCat("the pattern is no template: ", why));
}

// The value of `slot`'s field in `items`.
absl::uint128 SlotValue(absl::Span<const Item> items, const PatternSlot& slot) {
  const FieldDef& f = *slot.field;
  return (items[slot.item].words[f.storage].spec >> f.shift) & Ones(f.width);
}

// Sets `slot`'s field in `items` to `value` (the spec only: the slot's op set the mask already).
void SetSlot(std::vector<Item>& items, const PatternSlot& slot, absl::uint128 value) {
  const FieldDef& f = *slot.field;
  absl::uint128& spec = items[slot.item].words[f.storage].spec;
  spec = (spec & ~(Ones(f.width) << f.shift)) | (value << f.shift);
}

}  // namespace

bool CanBeSlot(const ItemDef& item, const FieldDef& field) {
  const bool address_or_port = field.name == "src" || field.name == "dst";
  switch (item.type) {
    case ItemType::kEth:
    case ItemType::kIpv4:
    case ItemType::kIpv6:
    case ItemType::kTcp:
    case ItemType::kUdp:
      return address_or_port;
    default:
      return false;
  }
}

absl::StatusOr<PatternTemplate> PatternTemplate::Make(absl::Span<const Item> items,
                                                      absl::Span<const PatternSlot> slots,
                                                      const PatternContext& ctx) {
  if (slots.empty() || slots.size() > 255) return NoTemplate("no slots, or too many");
  for (size_t i = 0; i < slots.size(); ++i) {
    const PatternSlot& s = slots[i];
    if (s.item >= items.size() || s.field == nullptr || !CanBeSlot(*items[s.item].def, *s.field) ||
        s.field < items[s.item].def->fields.data() ||
        s.field >= items[s.item].def->fields.data() + items[s.item].def->fields.size()) {
      return NoTemplate("a slot is not an address or port of an eth, ipv4, ipv6, tcp or udp item");
    }
    for (size_t j = 0; j < i; ++j) {
      if (slots[j].item == s.item && slots[j].field == s.field) return NoTemplate("a field is two slots");
    }
  }
  for (const Item& item : items) {
    const ItemType t = item.def->type;
    if (t != ItemType::kVoid && t != ItemType::kEth && t != ItemType::kIpv4 && t != ItemType::kIpv6 &&
        t != ItemType::kTcp && t != ItemType::kUdp) {
      return NoTemplate("an item other than eth, ipv4, ipv6, tcp, udp or void");
    }
    for (const ItemWord& w : item.words) {
      if (w.last_set) return NoTemplate("a range (last)");
    }
  }

  std::vector<Item> probe(items.begin(), items.end());
  for (const PatternSlot& s : slots) SetSlot(probe, s, 0);
  TranslatedPattern base;
  DRSIM_RETURN_IF_ERROR(TranslatePatternInto(probe, ctx, &base));
  if (base.geneve_option) return NoTemplate("a GENEVE option");

  // Which slot bit lands on each value bit (byte * 8 + bit, bit 0 the byte's least significant).
  std::vector<std::optional<std::pair<uint8_t, int>>> source(hw::kMatchParamBytes * 8);
  TranslatedPattern one;
  for (size_t i = 0; i < slots.size(); ++i) {
    for (int bit = 0; bit < slots[i].field->width; ++bit) {
      SetSlot(probe, slots[i], absl::uint128(1) << bit);
      absl::Status s = TranslatePatternInto(probe, ctx, &one);
      SetSlot(probe, slots[i], 0);
      if (!s.ok()) return NoTemplate(absl::StrCat("a slot value does not translate: ", s.message()));
      if (std::memcmp(one.mask.bytes(), base.mask.bytes(), hw::kMatchParamBytes) != 0 ||
          !SameInfo(one.info, base.info) || one.geneve_option) {
        return NoTemplate("a slot's value changes the mask");
      }
      std::optional<size_t> landed;
      for (size_t byte = 0; byte < hw::kMatchParamBytes; ++byte) {
        const uint8_t diff = one.value.bytes()[byte] ^ base.value.bytes()[byte];
        if (diff == 0) continue;
        if ((diff & (diff - 1)) != 0 || landed || (base.value.bytes()[byte] & diff) != 0) {
          return NoTemplate("a slot bit does not set one value bit");
        }
        landed = byte * 8 + __builtin_ctz(diff);
      }
      if (!landed) continue;  // outside the field's mask
      if (source[*landed]) return NoTemplate("two slot bits set one value bit");
      source[*landed] = std::make_pair(static_cast<uint8_t>(i), bit);
    }
  }

  PatternTemplate t;
  t.base_value_ = base.value;
  t.mask_ = base.mask;
  t.slots_ = slots.size();
  for (size_t byte = 0; byte < hw::kMatchParamBytes; ++byte) {
    // The bits of this byte, grouped by (slot, slot bit - byte bit): each group one shift and mask.
    std::map<std::pair<uint8_t, int>, uint8_t> groups;
    for (int bit = 0; bit < 8; ++bit) {
      if (const auto& from = source[byte * 8 + bit]) groups[{from->first, from->second - bit}] |= 1u << bit;
    }
    for (const auto& [key, bits] : groups) {
      t.steps_.push_back(
          ByteStep{static_cast<uint16_t>(byte), key.first, static_cast<int16_t>(key.second), bits});
    }
  }

  // The template must give back the pattern's own translation.
  std::vector<absl::uint128> own;
  for (const PatternSlot& s : slots) own.push_back(SlotValue(items, s));
  TranslatedPattern expected;
  DRSIM_RETURN_IF_ERROR(TranslatePatternInto(items, ctx, &expected));
  hw::MatchParams value;
  t.ValueInto(own, &value);
  if (std::memcmp(value.bytes(), expected.value.bytes(), hw::kMatchParamBytes) != 0 ||
      std::memcmp(t.mask_.bytes(), expected.mask.bytes(), hw::kMatchParamBytes) != 0) {
    return NoTemplate("the template does not give back the pattern's translation");
  }
  return t;
}

void PatternTemplate::ValueInto(absl::Span<const absl::uint128> values, hw::MatchParams* out) const {
  uint8_t* v = out->bytes();
  std::memcpy(v, base_value_.bytes(), hw::kMatchParamBytes);
  out->set_match_sz(base_value_.match_sz());
  for (const ByteStep& step : steps_) {
    const absl::uint128 x = values[step.slot];
    const absl::uint128 moved = step.shift >= 0 ? x >> step.shift : x << -step.shift;
    v[step.byte] |= static_cast<uint8_t>(absl::Uint128Low64(moved)) & step.bits;
  }
}

}  // namespace drsim::testpmd
