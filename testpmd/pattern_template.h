// A translated pattern whose slots (fields given with `is` or `spec`) take new values rule after rule: what
// lets a rule file of a million rules that differ only in addresses and ports skip the parse and the
// translation of all but the first rules of each shape.
//
// What
//   PatternTemplate::Make takes a parsed pattern, its slots and its context, and finds which bit of the
//   rule's match value each bit of each slot's value sets. ValueInto then writes the match value of the same
//   pattern with other values in its slots; it equals what TranslatePattern makes of the pattern so written.
//
// How
//   The mapping is found by translating the pattern itself (pattern.h): once with every slot zero, then for
//   each slot once with all its bits set and once for each bit of a bit's index, setting the slot bits
//   whose index has that bit set (log2 of the width probes, not one a bit). Each slot bit must set one value
//   bit, or none (a bit outside the field's mask), and leave the mask, the pattern's info and every other
//   bit as they were. Slots are taken only in items whose translation copies the field's bits (eth, ipv4,
//   ipv6, tcp and udp addresses and ports; a value that means something, as an ethertype does, is no
//   slot). A pattern that breaks any of this, or whose template does not give back its own translation and
//   that of two sets of random values, is refused (FailedPrecondition). The bits are then written by
//   steps: each match-value byte takes, by shift and mask, the slot bits that land on it in order, and
//   whole bytes of one slot in a row (an address, a port) go as one run of big-endian bytes.
//
// Thread-safety
//   A made template is immutable; ValueInto may run concurrently into different outputs.
#ifndef DRSIM_TESTPMD_PATTERN_TEMPLATE_H_
#define DRSIM_TESTPMD_PATTERN_TEMPLATE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/numeric/int128.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "hw/match_params.h"
#include "testpmd/ast.h"
#include "testpmd/pattern.h"

namespace drsim::testpmd {

// Whether a pattern with items of `type` can be a template: eth, vlan, ipv4, ipv6, icmp, icmp6, udp, tcp,
// vxlan, vxlan-gpe, gre and void, whose translation copies the bits of the fields that can be slots and
// depends on nothing but the item's own values and masks. (PatternTemplate::Make still proves each
// template: a field whose bits do not land one for one refuses it.)
bool IsTemplateItem(ItemType type);
// The names of fields that can be slots, in whichever template item has them: src and dst (addresses and
// ports), vid and tci (VLAN), vni (VXLAN), tos and ttl (IPv4). Item-blind, so that a line's slots are found
// before its items are known (flow_template_cache.h). Eth's type is none (an ethertype of VLAN matches a
// tag, not a value), nor is IP's proto (a value of 0 conflicts with a TCP or UDP item after it, so a
// template with it as a slot could not be made).
// Each is kSlotFieldNameBytes long, which the cache's search of a line for slots relies on.
inline constexpr size_t kSlotFieldNameBytes = 3;
inline bool IsSlotFieldName(absl::string_view name) {
  return name.size() == kSlotFieldNameBytes &&
         (name == "src" || name == "dst" || name == "vid" || name == "tci" || name == "vni" ||
          name == "tos" || name == "ttl");
}
// Whether `field` of `item` can be a template's slot: a field named so (IsSlotFieldName) of a template item
// but void.
bool CanBeSlot(const ItemDef& item, const FieldDef& field);

class PatternTemplate {
 public:
  // The template of `items` with `slots` (each a CanBeSlot field given with `is` or `spec` in its item, at
  // most once a field), translated in `ctx`. FailedPrecondition when the pattern is no template (above);
  // the pattern's own errors as TranslatePattern gives them.
  static absl::StatusOr<PatternTemplate> Make(absl::Span<const Item> items,
                                              absl::Span<const PatternSlot> slots, const PatternContext& ctx);

  // The match value of the pattern with slot i's field set to `values[i]` (a value of the field's width).
  void ValueInto(absl::Span<const absl::uint128> values, hw::MatchParams* out) const;
  // The matcher mask, the same for every value.
  const hw::MatchParams& mask() const { return mask_; }
  size_t slots() const { return slots_; }
  // Whether the pattern's push-VLAN defaults (PatternInfo::vlan_vid, vlan_pcp: what an of_push_vlan action
  // without its own VID or PCP pushes) follow a slot's value. A flow whose actions read them then cannot
  // share its actions with the flows of other values (FlowEngine::TemplateOfFlow refuses it).
  bool vlan_defaults_follow_slots() const { return vlan_defaults_follow_slots_; }

 private:
  // Bytes [byte, byte + bytes) of the value |= the big-endian bytes of (slot value >> shift), each masked
  // by `bits` (a run of whole bytes, as an address or a port is laid out, takes 0xff); a lone byte's shift
  // may be negative (<< -shift).
  struct ByteStep {
    uint16_t byte;
    uint8_t slot;
    uint8_t bits;
    int16_t shift;
    uint8_t bytes;
  };

  PatternTemplate() = default;

  hw::MatchParams base_value_;  // the value with every slot zero
  hw::MatchParams mask_;
  std::vector<ByteStep> steps_;
  size_t slots_ = 0;
  bool vlan_defaults_follow_slots_ = false;
};

// PatternTemplate::Make, remembered. Commands of many shapes (rules spread over priorities, queues and
// marks) mostly share a few patterns, which differ only in their slots' values: their templates are made
// once. A template is a pure function of the pattern's items, its slots and the context, so it is found by
// the items with their slots' values cleared (positions left out), the slots, and the context's domain,
// root-ness and implicit source vport (a template's items name no port, so the context's vport map plays
// no part). Only templates made are remembered, at most kMaxTemplates; past that it starts over. Not
// thread-safe.
class PatternTemplateCache {
 public:
  static constexpr size_t kMaxTemplates = 4096;

  // PatternTemplate::Make's template of the same arguments, made unless one was before.
  absl::StatusOr<PatternTemplate> Make(absl::Span<const Item> items, absl::Span<const PatternSlot> slots,
                                       const PatternContext& ctx);
  // Templates made so far (not found).
  size_t made() const { return made_; }

 private:
  std::string key_;  // the last Make's key, its room kept
  absl::flat_hash_map<std::string, PatternTemplate> templates_;
  size_t made_ = 0;
};

}  // namespace drsim::testpmd

#endif  // DRSIM_TESTPMD_PATTERN_TEMPLATE_H_
