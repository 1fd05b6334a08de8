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

// The same layers and tunnel (the push-VLAN defaults, which may follow a VLAN id slot, apart).
bool SameLayout(const PatternInfo& a, const PatternInfo& b) {
  return SameLayers(a.outer, b.outer) && SameLayers(a.inner, b.inner) && a.tunnel == b.tunnel &&
         a.vlan_vid.has_value() == b.vlan_vid.has_value() && a.vlan_pcp.has_value() == b.vlan_pcp.has_value();
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

bool IsTemplateItem(ItemType type) {
  switch (type) {
    case ItemType::kVoid:
    case ItemType::kEth:
    case ItemType::kVlan:
    case ItemType::kIpv4:
    case ItemType::kIpv6:
    case ItemType::kIcmp:
    case ItemType::kIcmp6:
    case ItemType::kUdp:
    case ItemType::kTcp:
    case ItemType::kVxlan:
    case ItemType::kVxlanGpe:
    case ItemType::kGre:
      return true;
    default:
      return false;
  }
}

bool CanBeSlot(const ItemDef& item, const FieldDef& field) {
  return item.type != ItemType::kVoid && IsTemplateItem(item.type) && IsSlotFieldName(field.name);
}

absl::StatusOr<PatternTemplate> PatternTemplate::Make(absl::Span<const Item> items,
                                                      absl::Span<const PatternSlot> slots,
                                                      const PatternContext& ctx) {
  // (No slots: every flow has the pattern's one value, and what varies is in its actions, a mark's id.)
  if (slots.size() > 255) return NoTemplate("more than 255 slots");
  for (size_t i = 0; i < slots.size(); ++i) {
    const PatternSlot& s = slots[i];
    if (s.item >= items.size() || s.field == nullptr || !CanBeSlot(*items[s.item].def, *s.field) ||
        s.field < items[s.item].def->fields.data() ||
        s.field >= items[s.item].def->fields.data() + items[s.item].def->fields.size()) {
      return NoTemplate("a slot is no address, port, VLAN id, VNI, TOS or TTL of a template item");
    }
    for (size_t j = 0; j < i; ++j) {
      if (slots[j].item == s.item && slots[j].field == s.field) return NoTemplate("a field is two slots");
    }
  }
  for (const Item& item : items) {
    if (!IsTemplateItem(item.def->type))
      return NoTemplate(
          "an item other than eth, vlan, ipv4, ipv6, icmp, icmp6, udp, tcp, vxlan, vxlan-gpe, gre or void");
    for (const ItemWord& w : item.words) {
      if (w.last_set) return NoTemplate("a range (last)");
    }
  }

  std::vector<Item> probe(items.begin(), items.end());
  for (const PatternSlot& s : slots) SetSlot(probe, s, 0);
  TranslatedPattern base;
  DRSIM_RETURN_IF_ERROR(TranslatePatternInto(probe, ctx, &base));
  if (base.geneve_option) return NoTemplate("a GENEVE option");

  // Which slot bit lands on each value bit (byte * 8 + bit, bit 0 the byte's least significant). For each
  // slot, one probe sets all its bits, and probe k those whose index has bit k set: a value bit the first
  // sets came from the slot bit whose index the others spell.
  std::vector<std::optional<std::pair<uint8_t, int>>> source(hw::kMatchParamBytes * 8);
  TranslatedPattern one;
  bool vlan_defaults_follow_slots = false;
  // The value bits slot `i` set to `value` sets beyond base's, byte by byte, into `set` (kMatchParamBytes),
  // compared eight bytes a step.
  constexpr size_t kWords = hw::kMatchParamBytes / 8;
  static_assert(hw::kMatchParamBytes % 8 == 0);
  auto word = [](const uint8_t* bytes, size_t w) {
    uint64_t v;
    std::memcpy(&v, bytes + 8 * w, 8);
    return v;
  };
  auto probe_diff = [&](size_t i, absl::uint128 value, std::vector<uint8_t>* set) -> absl::Status {
    SetSlot(probe, slots[i], value);
    absl::Status s = TranslatePatternInto(probe, ctx, &one);
    SetSlot(probe, slots[i], 0);
    if (!s.ok()) return NoTemplate(absl::StrCat("a slot value does not translate: ", s.message()));
    if (std::memcmp(one.mask.bytes(), base.mask.bytes(), hw::kMatchParamBytes) != 0 ||
        !SameLayout(one.info, base.info) || one.geneve_option) {
      return NoTemplate("a slot's value changes the mask");
    }
    vlan_defaults_follow_slots |=
        one.info.vlan_vid != base.info.vlan_vid || one.info.vlan_pcp != base.info.vlan_pcp;
    set->resize(hw::kMatchParamBytes);
    for (size_t w = 0; w < kWords; ++w) {
      const uint64_t was = word(base.value.bytes(), w), diff = word(one.value.bytes(), w) ^ was;
      if ((diff & was) != 0) return NoTemplate("a slot value clears a value bit");
      std::memcpy(set->data() + 8 * w, &diff, 8);
    }
    return absl::OkStatus();
  };
  std::vector<uint8_t> all;
  std::vector<std::vector<uint8_t>> by_index_bit;
  for (size_t i = 0; i < slots.size(); ++i) {
    const int width = slots[i].field->width;
    DRSIM_RETURN_IF_ERROR(probe_diff(i, Ones(width), &all));
    const int index_bits = width > 1 ? 32 - __builtin_clz(static_cast<unsigned>(width - 1)) : 0;
    by_index_bit.resize(index_bits);
    for (int k = 0; k < index_bits; ++k) {
      absl::uint128 value = 0;
      for (int bit = 0; bit < width; ++bit) {
        if ((bit >> k) & 1) value |= absl::uint128(1) << bit;
      }
      DRSIM_RETURN_IF_ERROR(probe_diff(i, value, &by_index_bit[k]));
      for (size_t w = 0; w < kWords; ++w) {
        if ((word(by_index_bit[k].data(), w) & ~word(all.data(), w)) != 0) {
          return NoTemplate("a slot's bits do not add up");
        }
      }
    }
    std::vector<bool> used(width);
    for (size_t byte = 0; byte < hw::kMatchParamBytes; ++byte) {
      if (byte % 8 == 0 && word(all.data(), byte / 8) == 0) {
        byte += 7;
        continue;
      }
      if (all[byte] == 0) continue;
      for (int bit = 0; bit < 8; ++bit) {
        if (((all[byte] >> bit) & 1) == 0) continue;
        int from = 0;
        for (int k = 0; k < index_bits; ++k) from |= ((by_index_bit[k][byte] >> bit) & 1) << k;
        if (from >= width || used[from]) return NoTemplate("a slot bit does not set one value bit");
        used[from] = true;
        std::optional<std::pair<uint8_t, int>>& landed = source[byte * 8 + bit];
        if (landed) return NoTemplate("two slot bits set one value bit");
        landed = std::make_pair(static_cast<uint8_t>(i), from);
      }
    }
  }

  PatternTemplate t;
  t.base_value_ = base.value;
  t.mask_ = base.mask;
  t.slots_ = slots.size();
  t.vlan_defaults_follow_slots_ = vlan_defaults_follow_slots;
  for (size_t byte = 0; byte < hw::kMatchParamBytes; ++byte) {
    // The bits of this byte, grouped by (slot, slot bit - byte bit): each group one shift and mask.
    std::map<std::pair<uint8_t, int>, uint8_t> groups;
    for (int bit = 0; bit < 8; ++bit) {
      if (const auto& from = source[byte * 8 + bit]) groups[{from->first, from->second - bit}] |= 1u << bit;
    }
    for (const auto& [key, bits] : groups) {
      const auto [slot, shift] = key;
      ByteStep* run = t.steps_.empty() ? nullptr : &t.steps_.back();
      // Whole bytes of one slot, each the next eight bits down: one run.
      if (run != nullptr && bits == 0xff && run->bits == 0xff && run->slot == slot && run->bytes < 16 &&
          run->byte + run->bytes == byte && run->shift - 8 == shift && shift >= 0) {
        ++run->bytes;
        run->shift = static_cast<int16_t>(shift);
        continue;
      }
      t.steps_.push_back(ByteStep{static_cast<uint16_t>(byte), slot, bits, static_cast<int16_t>(shift), 1});
    }
  }

  // The template must give back the pattern's own translation, and that of two more sets of values.
  std::vector<absl::uint128> values;
  for (const PatternSlot& s : slots) values.push_back(SlotValue(items, s));
  uint64_t state = 0x9e3779b97f4a7c15u;
  auto next = [&state] {  // splitmix64
    uint64_t z = (state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
  };
  TranslatedPattern expected;
  hw::MatchParams value;
  for (int round = 0; round < 3; ++round) {
    if (round > 0) {
      for (size_t i = 0; i < slots.size(); ++i) {
        values[i] = absl::MakeUint128(next(), next()) & Ones(slots[i].field->width);
      }
    }
    for (size_t i = 0; i < slots.size(); ++i) SetSlot(probe, slots[i], values[i]);
    DRSIM_RETURN_IF_ERROR(TranslatePatternInto(probe, ctx, &expected));
    t.ValueInto(values, &value);
    if (std::memcmp(value.bytes(), expected.value.bytes(), hw::kMatchParamBytes) != 0 ||
        std::memcmp(t.mask_.bytes(), expected.mask.bytes(), hw::kMatchParamBytes) != 0) {
      return NoTemplate("the template does not give back the pattern's translation");
    }
  }
  return t;
}

void PatternTemplate::ValueInto(absl::Span<const absl::uint128> values, hw::MatchParams* out) const {
  uint8_t* v = out->bytes();
  std::memcpy(v, base_value_.bytes(), hw::kMatchParamBytes);
  out->set_match_sz(base_value_.match_sz());
  for (const ByteStep& step : steps_) {
    const absl::uint128 x = values[step.slot];
    if (step.bytes == 1) {
      const absl::uint128 moved = step.shift >= 0 ? x >> step.shift : x << -step.shift;
      v[step.byte] |= static_cast<uint8_t>(absl::Uint128Low64(moved)) & step.bits;
      continue;
    }
    const absl::uint128 y = x >> step.shift;
    uint8_t big_endian[16];
    const uint64_t high = __builtin_bswap64(absl::Uint128High64(y)),
                   low = __builtin_bswap64(absl::Uint128Low64(y));
    std::memcpy(big_endian, &high, 8);
    std::memcpy(big_endian + 8, &low, 8);
    const uint8_t* from = big_endian + 16 - step.bytes;
    uint8_t* to = v + step.byte;
    int k = 0;
    for (; k + 8 <= step.bytes; k += 8) {  // (an IPv6 address in two words)
      uint64_t word, bits;
      std::memcpy(&word, to + k, 8);
      std::memcpy(&bits, from + k, 8);
      word |= bits;
      std::memcpy(to + k, &word, 8);
    }
    for (; k < step.bytes; ++k) to[k] |= from[k];
  }
}

absl::StatusOr<PatternTemplate> PatternTemplateCache::Make(absl::Span<const Item> items,
                                                           absl::Span<const PatternSlot> slots,
                                                           const PatternContext& ctx) {
  for (const PatternSlot& s : slots) {
    if (s.field == nullptr || s.item >= items.size())
      return PatternTemplate::Make(items, slots, ctx);  // (refused)
  }
  key_.clear();
  auto put = [this](const auto& v) { key_.append(reinterpret_cast<const char*>(&v), sizeof v); };
  put(ctx.domain);
  put(ctx.root_table);
  put(ctx.implicit_source_vport.has_value());
  put(ctx.implicit_source_vport.value_or(0));
  put(slots.size());
  for (const PatternSlot& s : slots) {
    put(s.item);
    put(s.field);
  }
  put(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    const Item& item = items[i];
    put(item.def);
    put(item.mask_given);
    put(item.words.size());
    for (size_t w = 0; w < item.words.size(); ++w) {
      const ItemWord& word = item.words[w];
      absl::uint128 spec = word.spec;
      for (const PatternSlot& s : slots) {
        if (s.item == i && s.field->storage == w) spec &= ~(Ones(s.field->width) << s.field->shift);
      }
      put(spec);
      put(word.last);
      put(word.mask);
      put(word.spec_set);
      put(word.last_set);
      put(word.mask_set);
    }
  }
  if (auto found = templates_.find(key_); found != templates_.end()) return found->second;
  DRSIM_ASSIGN_OR_RETURN(PatternTemplate made, PatternTemplate::Make(items, slots, ctx));
  ++made_;
  if (templates_.size() >= kMaxTemplates) templates_.clear();
  templates_.emplace(key_, made);
  return made;
}

}  // namespace drsim::testpmd
