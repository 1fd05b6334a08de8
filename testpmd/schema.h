// What testpmd's `flow` grammar knows: the pattern items and actions this front end accepts, spelled as
// testpmd spells them (app/test-pmd/cmdline_flow.c), with their fields and parameters; and the items and
// actions testpmd has that the software NIC cannot express, with the reason.
//
// Item fields follow rte_flow's item structures: each item has "storage words" (the structure's fields,
// e.g. vlan's TCI) and named fields that are bit ranges of one word (vlan's pcp, dei and vid are bits
// 13..15, 12 and 0..11 of the TCI), exactly as testpmd's ARGS_ENTRY_MASK_HTON/BF descriptions place them.
// Each storage word carries rte_flow's default mask (rte_flow_item_<type>_mask), which applies when an item
// has a spec but no mask.
//
// Static tables; thread-safe.
#ifndef DRSIM_TESTPMD_SCHEMA_H_
#define DRSIM_TESTPMD_SCHEMA_H_

#include <cstdint>
#include <cstring>

#include "absl/numeric/int128.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace drsim::testpmd {

// How a value is written.
enum class ValueKind : uint8_t {
  kUnsigned,      // decimal, 0x hex or 0 octal (C's strtoumax with base 0, as testpmd)
  kMac,           // 00:11:22:33:44:55
  kIpv4,          // 10.0.0.1
  kIpv6,          // 2001:db8::1
  kHex,           // a byte string in hex, with or without 0x (in an item field: its first bytes)
  kBool,          // true/false, on/off, yes/no, set/unset, 1/0
  kColor,         // green, yellow, red
  kKeyword,       // one of ParamDef::keywords
  kKeywordList,   // keywords up to `end`
  kUnsignedList,  // unsigned numbers up to `end`
};

enum class ItemType : uint8_t {
  kVoid,
  kEth,
  kVlan,
  kIpv4,
  kIpv6,
  kIcmp,
  kIcmp6,
  kUdp,
  kTcp,
  kVxlan,
  kVxlanGpe,
  kGeneve,
  kGeneveOpt,
  kGre,
  kGreKey,
  kNvgre,
  kMpls,
  kGtp,
  kGtpPsc,
  kIbBth,
  kMeta,
  kTag,
  kPortId,
  kRepresentedPort,
  kMeterColor,
  kConntrack,  // conntrack is FLAGS: the CT result an earlier rule's conntrack action wrote (bare field)
};

// One storage word of an item (a field of the rte_flow item structure).
struct StorageDef {
  absl::string_view name;
  uint8_t width;               // bits, up to 128
  absl::uint128 default_mask;  // rte_flow's default mask for this word
};

// One named field of an item: bits [shift, shift + width) of storage word `storage`.
struct FieldDef {
  absl::string_view name;
  ValueKind kind;
  uint8_t storage;
  uint8_t shift;
  uint8_t width;
  bool is_only = false;  // testpmd accepts only `is` (tag's index)
};

struct ItemDef {
  absl::string_view name;       // as in testpmd: "vxlan-gpe"
  absl::string_view list_name;  // as `flow list` prints it: "VXLAN_GPE"
  ItemType type;
  absl::Span<const StorageDef> storage;
  absl::Span<const FieldDef> fields;
};

enum class ActionType : uint8_t {
  kVoid,
  kDrop,
  kQueue,
  kRss,
  kMark,
  kFlag,
  kJump,
  kCount,
  kMeter,
  kPortId,
  kRepresentedPort,
  kRawEncap,
  kRawDecap,
  kVxlanEncap,
  kVxlanDecap,
  kNvgreEncap,
  kNvgreDecap,
  kOfPushVlan,
  kOfSetVlanVid,
  kOfSetVlanPcp,
  kOfPopVlan,
  kOfSetNwTtl,
  kOfDecNwTtl,
  kSetMacSrc,
  kSetMacDst,
  kSetIpv4Src,
  kSetIpv4Dst,
  kSetIpv6Src,
  kSetIpv6Dst,
  kSetTpSrc,
  kSetTpDst,
  kSetTtl,
  kDecTtl,
  kSetIpv4Dscp,
  kSetIpv6Dscp,
  kIncTcpSeq,
  kDecTcpSeq,
  kIncTcpAck,
  kDecTcpAck,
  kSetTag,
  kSetMeta,
  kModifyField,
  kSample,
  kAge,              // age timeout N: flow aging
  kIndirect,         // indirect ID: an indirect action (flow indirect_action), its id written bare
  kConntrack,        // conntrack: the context of `set conntrack` (an indirect action on mlx5)
  kConntrackUpdate,  // conntrack_update [dir] [ctx]: what an indirect conntrack update takes (bare flags)
};

struct ParamDef {
  absl::string_view name;
  ValueKind kind;
  uint8_t width = 0;                               // kUnsigned, kUnsignedList: bits
  absl::Span<const absl::string_view> keywords{};  // kKeyword, kKeywordList
};

struct ActionDef {
  absl::string_view name;       // as in testpmd: "of_push_vlan"
  absl::string_view list_name;  // as `flow list` prints it: "OF_PUSH_VLAN"
  ActionType type;
  absl::Span<const ParamDef> params;
};

// Whether `text` is the word `word`. The size and the first byte settle most mismatches (names and
// keywords mostly differ there); the rest of a word that short is compared a byte at a time, inline, and
// only a long one with memcmp (a call costs more than the few bytes of a name).
inline bool SameWord(absl::string_view text, absl::string_view word) {
  if (text.size() != word.size()) return false;
  if (text.size() > 16) return std::memcmp(text.data(), word.data(), text.size()) == 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != word[i]) return false;
  }
  return true;
}

// The item or action called `name`, or nullptr.
const ItemDef* FindItem(absl::string_view name);
const ActionDef* FindAction(absl::string_view name);
// The field or parameter of `def` called `name`, or nullptr.
const FieldDef* FindField(const ItemDef& def, absl::string_view name);
const ParamDef* FindParam(const ActionDef& def, absl::string_view name);

// Why testpmd's item or action `name` cannot be expressed on DR, or nullptr when `name` is not one of
// those.
const char* UnsupportedItemReason(absl::string_view name);
const char* UnsupportedActionReason(absl::string_view name);

}  // namespace drsim::testpmd

#endif  // DRSIM_TESTPMD_SCHEMA_H_
