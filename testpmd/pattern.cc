#include "testpmd/pattern.h"

#include <cstring>
#include <string>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "hw/match_layout.h"
#include "sim/conntrack.h"
#include "sim/geneve_option.h"
#include "testpmd/registers.h"
#include "testpmd/values.h"

namespace drsim::testpmd {
namespace {

using absl::StatusCode;
using absl::uint128;
using hw::Field;
using hw::Headers;

// One storage word of an item as the PMD sees it: rte_flow's effective mask and the spec under it.
struct Word {
  uint128 mask = 0;
  uint128 spec = 0;
  SourcePos pos;
  // The `width` bits at `shift` (width 0..32).
  uint32_t mask_bits(int shift, int width) const { return Bits(mask, shift, width); }
  uint32_t spec_bits(int shift, int width) const { return Bits(spec, shift, width); }
  static uint32_t Bits(uint128 word, int shift, int width) {
    const uint32_t low = width >= 32 ? ~0u : (1u << width) - 1;
    return static_cast<uint32_t>(word >> shift) & low;
  }
};

bool HasSpec(const Item& item) {
  for (const ItemWord& w : item.words) {
    if (w.spec_set) return true;
  }
  return false;
}

// The name of the first field of `item` touched by `mask` bits of storage word `index`.
absl::string_view FieldName(const Item& item, int index, uint128 mask) {
  for (const FieldDef& f : item.def->fields) {
    if (f.storage == index && ((mask >> f.shift) & Ones(f.width)) != 0) return f.name;
  }
  return item.def->storage[index].name;
}

class PatternBuilder {
 public:
  // Translates into `out`, whose mask and value start all zero.
  PatternBuilder(absl::Span<const Item> items, const PatternContext& ctx, TranslatedPattern& out)
      : items_(items), ctx_(ctx), out_(out) {}

  absl::Status Build() {
    for (size_t i = 0; i < items_.size(); ++i) {
      const Item& item = items_[i];
      DRSIM_RETURN_IF_ERROR(CheckSpecAndRanges(item));
      DRSIM_RETURN_IF_ERROR(WithPos(Translate(i), item.pos));
      if (item.def->type != ItemType::kVoid) previous_ = item.def->type;
      source_given_ |= item.def->type == ItemType::kPortId || item.def->type == ItemType::kRepresentedPort;
    }
    if (ctx_.implicit_source_vport && !source_given_) {
      DRSIM_RETURN_IF_ERROR(PutExact(Field::kSourcePort, *ctx_.implicit_source_vport, SourcePos{}));
    }
    return absl::OkStatus();
  }

 private:
  // ---- item helpers ----

  Word W(const Item& item, int index) const {
    const ItemWord& w = item.words[index];
    Word out;
    out.pos = w.pos.known() ? w.pos : item.pos;
    if (&item != spec_checked_) {  // (each item's words are read one after another)
      spec_checked_ = &item;
      has_spec_ = HasSpec(item);
    }
    if (!has_spec_) return out;
    out.mask = item.mask_given ? w.mask : item.def->storage[index].default_mask;
    out.spec = w.spec & out.mask;
    return out;
  }

  absl::Status CheckSpecAndRanges(const Item& item) const {
    const bool has_spec = HasSpec(item);
    for (size_t i = 0; i < item.words.size(); ++i) {
      const ItemWord& w = item.words[i];
      if (!has_spec && (w.mask_set || w.last_set)) {
        return ErrorAt(
            w.pos, StatusCode::kInvalidArgument,
            absl::StrFormat("item '%s' has a mask or last but no spec: rte_flow ignores them without "
                            "a spec; give the value with 'is' or 'spec'",
                            item.def->name));
      }
      if (!w.last_set || IsFragmentRange(item, i)) continue;
      const Word e = W(item, i);
      const uint128 last = w.last & e.mask;
      if (last != 0 && last != e.spec) {
        return ErrorAt(
            w.pos, StatusCode::kUnimplemented,
            absl::StrFormat("%s field '%s': ranges (last) are not supported; DR matchers compare exact "
                            "values under a mask",
                            item.def->name, FieldName(item, i, e.mask)));
      }
    }
    return absl::OkStatus();
  }

  // ipv4 fragment_offset spec 1 last 0x3fff mask 0x3fff: "any fragment", which DR's frag bit expresses.
  static bool IsFragmentRange(const Item& item, size_t index) {
    return item.def->type == ItemType::kIpv4 && item.def->storage[index].name == "fragment_offset";
  }

  absl::Status Unmatchable(const Item& item, int index, const Word& w, absl::string_view why) const {
    return ErrorAt(w.pos, StatusCode::kUnimplemented,
                   absl::StrFormat("%s field '%s' cannot be matched: %s", item.def->name,
                                   FieldName(item, index, w.mask), why));
  }

  // ---- match-field writes ----

  absl::Status Put(Field f, uint32_t mask, uint32_t value, SourcePos pos) {
    if (mask == 0) return absl::OkStatus();
    uint8_t* m = out_.mask.bytes();
    uint8_t* v = out_.value.bytes();
    const uint32_t old_mask = hw::GetField(m, f), old_value = hw::GetField(v, f);
    const uint32_t overlap = old_mask & mask;
    if ((old_value & overlap) != (value & overlap)) {
      return ErrorAt(pos, StatusCode::kInvalidArgument,
                     absl::StrFormat("conflicts with an earlier item: %s is 0x%x there and 0x%x here",
                                     hw::Info(f).name, old_value & overlap, value & overlap));
    }
    hw::SetField(m, f, old_mask | mask);
    hw::SetField(v, f, (old_value & ~mask) | (value & mask));
    return absl::OkStatus();
  }
  absl::Status PutExact(Field f, uint32_t value, SourcePos pos) {
    return Put(f, hw::Info(f).max_value(), value, pos);
  }
  // An implicit value mlx5 adds only when nothing masked the field yet.
  absl::Status PutIfOpen(Field f, uint32_t value, SourcePos pos) {
    if (hw::GetField(out_.mask.bytes(), f) != 0) return absl::OkStatus();
    return PutExact(f, value, pos);
  }
  Field H(Field outer) const { return hw::HeaderField(inner() ? Headers::kInner : Headers::kOuter, outer); }
  bool inner() const { return out_.info.tunnel; }
  HeaderLayers& level() { return inner() ? out_.info.inner : out_.info.outer; }

  // A 48-bit MAC into its 47_16 / 15_0 fields.
  absl::Status PutMac(Field hi, Field lo, const Word& w) {
    DRSIM_RETURN_IF_ERROR(Put(hi, w.mask_bits(16, 32), w.spec_bits(16, 32), w.pos));
    return Put(lo, w.mask_bits(0, 16), w.spec_bits(0, 16), w.pos);
  }
  // A 128-bit IPv6 address into four 32-bit fields, most significant first.
  absl::Status PutIpv6(Field first, const Word& w) {
    for (int i = 0; i < 4; ++i) {
      DRSIM_RETURN_IF_ERROR(Put(static_cast<Field>(static_cast<int>(first) + i), w.mask_bits(96 - 32 * i, 32),
                                w.spec_bits(96 - 32 * i, 32), w.pos));
    }
    return absl::OkStatus();
  }

  // The next non-void item after `index`, or nullptr.
  const Item* NextItem(size_t index) const {
    for (size_t i = index + 1; i < items_.size(); ++i) {
      if (items_[i].def->type != ItemType::kVoid) return &items_[i];
    }
    return nullptr;
  }

  absl::Status Error(const Item& item, absl::string_view message) const {
    return ErrorAt(item.pos, StatusCode::kInvalidArgument, message);
  }

  // ---- items ----

  absl::Status Translate(size_t index) {
    const Item& item = items_[index];
    switch (item.def->type) {
      case ItemType::kVoid:
        return absl::OkStatus();
      case ItemType::kEth:
        return Eth(index);
      case ItemType::kVlan:
        return Vlan(index);
      case ItemType::kIpv4:
        return Ipv4(item);
      case ItemType::kIpv6:
        return Ipv6(item);
      case ItemType::kIcmp:
      case ItemType::kIcmp6:
        return Icmp(item);
      case ItemType::kUdp:
      case ItemType::kTcp:
        return TcpUdp(item);
      case ItemType::kVxlan:
      case ItemType::kVxlanGpe:
      case ItemType::kGeneve:
      case ItemType::kGtp:
        return UdpTunnel(item);
      case ItemType::kGre:
      case ItemType::kNvgre:
        return Gre(item);
      case ItemType::kGeneveOpt:
        return GeneveOpt(item);
      case ItemType::kGreKey:
        return GreKey(item);
      case ItemType::kMpls:
        return Mpls(item);
      case ItemType::kGtpPsc:
        return GtpPsc(item);
      case ItemType::kIbBth:
        return IbBth(item);
      case ItemType::kMeta:
      case ItemType::kTag:
        return Metadata(item);
      case ItemType::kPortId:
      case ItemType::kRepresentedPort:
        return SourcePort(item);
      case ItemType::kMeterColor:
        return MeterColor(item);
      case ItemType::kConntrack:
        return Conntrack(item);
    }
    return absl::OkStatus();
  }

  absl::Status Eth(size_t index) {
    const Item& item = items_[index];
    HeaderLayers& l = level();
    if (l.eth)
      return Error(item, "a second eth item at the same header level (a tunnel item must come between)");
    if (l.vlans > 0 || l.l3 != L3::kNone)
      return Error(item, "eth must come before the vlan and L3 items of its level");
    l.eth = true;
    DRSIM_RETURN_IF_ERROR(PutMac(H(Field::kOuterDmac47_16), H(Field::kOuterDmac15_0), W(item, 0)));
    DRSIM_RETURN_IF_ERROR(PutMac(H(Field::kOuterSmac47_16), H(Field::kOuterSmac15_0), W(item, 1)));
    const Word type = W(item, 2);
    const Item* next = NextItem(index);
    if (next != nullptr && next->def->type == ItemType::kVlan) {
      // The type is the first tag's TPID; the vlan item turns it into the cvlan/svlan qualifier.
      if (type.mask != 0 && type.spec != 0x8100 && type.spec != 0x88a8) {
        return ErrorAt(
            type.pos, StatusCode::kInvalidArgument,
            absl::StrFormat("eth type 0x%x before a vlan item must be a VLAN TPID (0x8100 or 0x88a8)",
                            type.mask_bits(0, 16) & type.spec_bits(0, 16)));
      }
      svlan_next_ = type.mask != 0 && type.spec == 0x88a8;
    } else {
      DRSIM_RETURN_IF_ERROR(PutEthertype(type));
    }
    const Word has_vlan = W(item, 3);
    return Put(H(Field::kOuterCvlanTag), has_vlan.mask_bits(0, 1), has_vlan.spec_bits(0, 1), has_vlan.pos);
  }

  absl::Status Vlan(size_t index) {
    const Item& item = items_[index];
    HeaderLayers& l = level();
    if (l.l3 != L3::kNone) return Error(item, "vlan must come before the L3 item of its level");
    if (l.vlans == 2)
      return Error(item, "at most two vlan items per header level (the match layout has two tags)");
    const bool first = l.vlans++ == 0;
    const bool svlan = svlan_next_;
    svlan_next_ = false;
    const Word tci = W(item, 0);
    if (first) {
      DRSIM_RETURN_IF_ERROR(PutExact(H(svlan ? Field::kOuterSvlanTag : Field::kOuterCvlanTag), 1, item.pos));
      DRSIM_RETURN_IF_ERROR(
          Put(H(Field::kOuterFirstPrio), tci.mask_bits(13, 3), tci.spec_bits(13, 3), tci.pos));
      DRSIM_RETURN_IF_ERROR(
          Put(H(Field::kOuterFirstCfi), tci.mask_bits(12, 1), tci.spec_bits(12, 1), tci.pos));
      DRSIM_RETURN_IF_ERROR(
          Put(H(Field::kOuterFirstVid), tci.mask_bits(0, 12), tci.spec_bits(0, 12), tci.pos));
      if (!inner()) {
        if (tci.mask_bits(0, 12) == 0xfff) out_.info.vlan_vid = tci.spec_bits(0, 12);
        if (tci.mask_bits(13, 3) == 0x7) out_.info.vlan_pcp = tci.spec_bits(13, 3);
      }
    } else {
      const Field qualifier = inner() ? (svlan ? Field::kInnerSecondSvlanTag : Field::kInnerSecondCvlanTag)
                                      : (svlan ? Field::kOuterSecondSvlanTag : Field::kOuterSecondCvlanTag);
      DRSIM_RETURN_IF_ERROR(PutExact(qualifier, 1, item.pos));
      const Field prio = inner() ? Field::kInnerSecondPrio : Field::kOuterSecondPrio;
      const Field cfi = inner() ? Field::kInnerSecondCfi : Field::kOuterSecondCfi;
      const Field vid = inner() ? Field::kInnerSecondVid : Field::kOuterSecondVid;
      DRSIM_RETURN_IF_ERROR(Put(prio, tci.mask_bits(13, 3), tci.spec_bits(13, 3), tci.pos));
      DRSIM_RETURN_IF_ERROR(Put(cfi, tci.mask_bits(12, 1), tci.spec_bits(12, 1), tci.pos));
      DRSIM_RETURN_IF_ERROR(Put(vid, tci.mask_bits(0, 12), tci.spec_bits(0, 12), tci.pos));
    }
    const Word inner_type = W(item, 1);
    const Item* next = NextItem(index);
    if (next != nullptr && next->def->type == ItemType::kVlan) {
      if (inner_type.mask != 0 && inner_type.spec != 0x8100 && inner_type.spec != 0x88a8) {
        return ErrorAt(inner_type.pos, StatusCode::kInvalidArgument,
                       "vlan inner_type before another vlan item must be a VLAN TPID (0x8100 or 0x88a8)");
      }
      svlan_next_ = inner_type.mask != 0 && inner_type.spec == 0x88a8;
    } else {
      // The layout's ethertype is the one after the last tag.
      DRSIM_RETURN_IF_ERROR(PutEthertype(inner_type));
    }
    const Word more = W(item, 2);
    const Field second = inner() ? Field::kInnerSecondCvlanTag : Field::kOuterSecondCvlanTag;
    if (more.mask != 0 && !first) {
      return Unmatchable(item, 2, more, "the match layout describes two tags; a third is not matchable");
    }
    return Put(second, more.mask_bits(0, 1), more.spec_bits(0, 1), more.pos);
  }

  absl::Status StartL3(const Item& item, L3 kind) {
    HeaderLayers& l = level();
    if (l.l3 != L3::kNone) {
      return Error(item, "a second L3 item at the same header level (a tunnel item must come between)");
    }
    l.l3 = kind;
    return MatchIpVersion(kind == L3::kIpv4 ? 4 : 6, item.pos);
  }

  // mlx5's flow_dv_set_match_ip_version: the L3 type as ip_version, in place of the level's ethertype. The
  // mask is 0xf on a root table (the firmware compares the field bit for bit) and the version itself
  // elsewhere (rdma-core's STE builders take only 4 or 6).
  absl::Status MatchIpVersion(uint32_t version, SourcePos pos) {
    const Field ip_version = H(Field::kOuterIpVersion);
    const uint32_t earlier = hw::GetField(out_.value.bytes(), ip_version);
    if (hw::GetField(out_.mask.bytes(), ip_version) != 0 && earlier != version) {
      return ErrorAt(
          pos, StatusCode::kInvalidArgument,
          absl::StrFormat("conflicts with an earlier item: the L3 type is IPv%d there and IPv%d here",
                          earlier, version));
    }
    DRSIM_RETURN_IF_ERROR(Put(ip_version, ctx_.root_table ? 0xf : version, version, pos));
    hw::SetField(out_.mask.bytes(), H(Field::kOuterEthertype), 0);
    hw::SetField(out_.value.bytes(), H(Field::kOuterEthertype), 0);
    return absl::OkStatus();
  }

  // The ethertype after the level's last tag; a full-mask IPv4 or IPv6 type is matched as ip_version, as
  // mlx5 does (flow_dv_translate_item_eth / _vlan).
  absl::Status PutEthertype(const Word& type) {
    const uint32_t mask = type.mask_bits(0, 16), spec = type.spec_bits(0, 16);
    if (mask == 0xffff && (spec == 0x0800 || spec == 0x86dd)) {
      return MatchIpVersion(spec == 0x0800 ? 4 : 6, type.pos);
    }
    return Put(H(Field::kOuterEthertype), mask, spec, type.pos);
  }

  absl::Status Ipv4(const Item& item) {
    DRSIM_RETURN_IF_ERROR(StartL3(item, L3::kIpv4));
    const Word version_ihl = W(item, 0);
    if (version_ihl.mask_bits(4, 4) != 0 && version_ihl.spec_bits(4, 4) != 4) {
      return ErrorAt(version_ihl.pos, StatusCode::kInvalidArgument,
                     "ipv4 version_ihl: the version must be 4");
    }
    DRSIM_RETURN_IF_ERROR(Put(H(Field::kOuterIpv4Ihl), version_ihl.mask_bits(0, 4),
                              version_ihl.spec_bits(0, 4), version_ihl.pos));
    DRSIM_RETURN_IF_ERROR(Tos(W(item, 1)));
    for (int i : {2, 3}) {
      const Word w = W(item, i);
      if (w.mask != 0) return Unmatchable(item, i, w, "the mlx5 match layout has no such IPv4 field");
    }
    DRSIM_RETURN_IF_ERROR(FragmentOffset(item));
    const Word ttl = W(item, 5), proto = W(item, 6), src = W(item, 7), dst = W(item, 8);
    DRSIM_RETURN_IF_ERROR(
        Put(H(Field::kOuterIpTtlHoplimit), ttl.mask_bits(0, 8), ttl.spec_bits(0, 8), ttl.pos));
    DRSIM_RETURN_IF_ERROR(
        Put(H(Field::kOuterIpProtocol), proto.mask_bits(0, 8), proto.spec_bits(0, 8), proto.pos));
    DRSIM_RETURN_IF_ERROR(
        Put(H(Field::kOuterSrcIp31_0), src.mask_bits(0, 32), src.spec_bits(0, 32), src.pos));
    return Put(H(Field::kOuterDstIp31_0), dst.mask_bits(0, 32), dst.spec_bits(0, 32), dst.pos);
  }

  // TOS / traffic class: DSCP in the upper six bits, ECN in the lower two.
  absl::Status Tos(const Word& tos) {
    DRSIM_RETURN_IF_ERROR(Put(H(Field::kOuterIpDscp), tos.mask_bits(2, 6), tos.spec_bits(2, 6), tos.pos));
    return Put(H(Field::kOuterIpEcn), tos.mask_bits(0, 2), tos.spec_bits(0, 2), tos.pos);
  }

  // DR's frag bit says "is a fragment". mlx5 accepts the two rte_flow idioms for it: offset and MF masked
  // (0x3fff) with spec 0 (not a fragment), or spec 1 last 0x3fff (any fragment).
  absl::Status FragmentOffset(const Item& item) {
    const Word w = W(item, 4);
    if (w.mask == 0) return absl::OkStatus();
    const ItemWord& raw = item.words[4];
    const uint32_t mask = w.mask_bits(0, 16), spec = w.spec_bits(0, 16);
    const uint32_t last = raw.last_set ? static_cast<uint32_t>(raw.last) & mask : 0;
    bool fragment;
    if ((mask & 0x3fff) == 0x3fff && spec == 0 && last == 0) {
      fragment = false;
    } else if (mask == 0x3fff && spec == 1 && last == 0x3fff) {
      fragment = true;
    } else {
      return ErrorAt(
          w.pos, StatusCode::kUnimplemented,
          "ipv4 fragment_offset: DR matches only whether a packet is a fragment; use 'fragment_offset "
          "spec 0 fragment_offset mask 0x3fff' (not a fragment) or 'fragment_offset spec 1 "
          "fragment_offset last 0x3fff fragment_offset mask 0x3fff' (a fragment)");
    }
    return PutExact(H(Field::kOuterFrag), fragment ? 1 : 0, w.pos);
  }

  absl::Status Ipv6(const Item& item) {
    DRSIM_RETURN_IF_ERROR(StartL3(item, L3::kIpv6));
    const Word vtc = W(item, 0);
    DRSIM_RETURN_IF_ERROR(Put(H(Field::kOuterIpDscp), vtc.mask_bits(22, 6), vtc.spec_bits(22, 6), vtc.pos));
    DRSIM_RETURN_IF_ERROR(Put(H(Field::kOuterIpEcn), vtc.mask_bits(20, 2), vtc.spec_bits(20, 2), vtc.pos));
    DRSIM_RETURN_IF_ERROR(Put(inner() ? Field::kInnerIpv6FlowLabel : Field::kOuterIpv6FlowLabel,
                              vtc.mask_bits(0, 20), vtc.spec_bits(0, 20), vtc.pos));
    const Word length = W(item, 1);
    if (length.mask != 0)
      return Unmatchable(item, 1, length, "the mlx5 match layout has no IPv6 payload length");
    const Word proto = W(item, 2), hop = W(item, 3), frag = W(item, 6);
    DRSIM_RETURN_IF_ERROR(
        Put(H(Field::kOuterIpProtocol), proto.mask_bits(0, 8), proto.spec_bits(0, 8), proto.pos));
    DRSIM_RETURN_IF_ERROR(
        Put(H(Field::kOuterIpTtlHoplimit), hop.mask_bits(0, 8), hop.spec_bits(0, 8), hop.pos));
    DRSIM_RETURN_IF_ERROR(PutIpv6(H(Field::kOuterSrcIp127_96), W(item, 4)));
    DRSIM_RETURN_IF_ERROR(PutIpv6(H(Field::kOuterDstIp127_96), W(item, 5)));
    return Put(H(Field::kOuterFrag), frag.mask_bits(0, 1), frag.spec_bits(0, 1), frag.pos);
  }

  absl::Status StartL4(const Item& item, L4 kind) {
    HeaderLayers& l = level();
    if (l.l4 != L4::kNone) return Error(item, "a second L4 item at the same header level");
    if (l.l3 == L3::kNone) {
      return Error(item, absl::StrFormat("%s needs an ipv4 or ipv6 item before it at its level (mlx5: L3 is "
                                         "mandatory to filter on L4)",
                                         item.def->name));
    }
    l.l4 = kind;
    static constexpr uint32_t kProtocols[] = {0, 6, 17, 1, 58};
    return PutExact(H(Field::kOuterIpProtocol), kProtocols[static_cast<int>(kind)], item.pos);
  }

  absl::Status Icmp(const Item& item) {
    const bool v6 = item.def->type == ItemType::kIcmp6;
    if (inner()) {
      return Error(item,
                   "ICMP fields of an inner packet cannot be matched: the match layout's ICMP fields are "
                   "the outer packet's");
    }
    if (level().l3 != (v6 ? L3::kIpv6 : L3::kIpv4)) {
      return Error(item, v6 ? "icmp6 needs an ipv6 item before it" : "icmp needs an ipv4 item before it");
    }
    DRSIM_RETURN_IF_ERROR(StartL4(item, v6 ? L4::kIcmp6 : L4::kIcmp));
    const Word type = W(item, 0), code = W(item, 1);
    DRSIM_RETURN_IF_ERROR(Put(v6 ? Field::kIcmpv6Type : Field::kIcmpType, type.mask_bits(0, 8),
                              type.spec_bits(0, 8), type.pos));
    DRSIM_RETURN_IF_ERROR(Put(v6 ? Field::kIcmpv6Code : Field::kIcmpCode, code.mask_bits(0, 8),
                              code.spec_bits(0, 8), code.pos));
    if (v6) return absl::OkStatus();
    const Word ident = W(item, 2), seq = W(item, 3);  // the header's second word: identifier, sequence
    return Put(Field::kIcmpHeaderData, ident.mask_bits(0, 16) << 16 | seq.mask_bits(0, 16),
               ident.spec_bits(0, 16) << 16 | seq.spec_bits(0, 16), ident.mask != 0 ? ident.pos : seq.pos);
  }

  absl::Status TcpUdp(const Item& item) {
    const bool tcp = item.def->type == ItemType::kTcp;
    DRSIM_RETURN_IF_ERROR(StartL4(item, tcp ? L4::kTcp : L4::kUdp));
    const Word src = W(item, 0), dst = W(item, 1);
    DRSIM_RETURN_IF_ERROR(Put(H(tcp ? Field::kOuterTcpSport : Field::kOuterUdpSport), src.mask_bits(0, 16),
                              src.spec_bits(0, 16), src.pos));
    DRSIM_RETURN_IF_ERROR(Put(H(tcp ? Field::kOuterTcpDport : Field::kOuterUdpDport), dst.mask_bits(0, 16),
                              dst.spec_bits(0, 16), dst.pos));
    if (!tcp) return absl::OkStatus();
    const Word flags = W(item, 2);
    return Put(H(Field::kOuterTcpFlags), flags.mask_bits(0, 8), flags.spec_bits(0, 8), flags.pos);
  }

  absl::Status StartTunnel(const Item& item) {
    if (inner()) return Error(item, "only one tunnel level can be matched (the software NIC parses one)");
    out_.info.tunnel = true;
    return absl::OkStatus();
  }

  // VXLAN, VXLAN-GPE, GENEVE and GTP-U: after the outer UDP header, whose destination port mlx5 fills in.
  absl::Status UdpTunnel(const Item& item) {
    if (inner()) return StartTunnel(item);
    if (out_.info.outer.l4 != L4::kUdp) {
      return Error(item, absl::StrFormat("%s needs an outer udp item before it", item.def->name));
    }
    uint16_t port = 0;
    switch (item.def->type) {
      case ItemType::kVxlan:
        port = 4789;
        break;
      case ItemType::kVxlanGpe:
        port = 4790;
        break;
      case ItemType::kGeneve:
        port = 6081;
        break;
      default:
        port = 2152;
        break;
    }
    DRSIM_RETURN_IF_ERROR(PutIfOpen(Field::kOuterUdpDport, port, item.pos));
    DRSIM_RETURN_IF_ERROR(StartTunnel(item));
    switch (item.def->type) {
      case ItemType::kVxlan: {
        const Word w0 = W(item, 0), w1 = W(item, 1);
        DRSIM_RETURN_IF_ERROR(Put(Field::kVxlanVni, w1.mask_bits(8, 24), w1.spec_bits(8, 24), w1.pos));
        // Flags, the reserved / GBP / GPE bytes and the last reserved byte are tunnel header words.
        DRSIM_RETURN_IF_ERROR(Put(Field::kTunnelHeader0, w0.mask_bits(0, 32), w0.spec_bits(0, 32), w0.pos));
        return Put(Field::kTunnelHeader1, w1.mask_bits(0, 8), w1.spec_bits(0, 8), w1.pos);
      }
      case ItemType::kVxlanGpe: {
        const Word flags = W(item, 0), rsvd0 = W(item, 1), proto = W(item, 2), vni = W(item, 3),
                   rsvd1 = W(item, 4);
        if (rsvd0.mask != 0)
          return Unmatchable(item, 1, rsvd0, "reserved VXLAN-GPE bits are not in the match layout");
        if (rsvd1.mask != 0)
          return Unmatchable(item, 4, rsvd1, "reserved VXLAN-GPE bits are not in the match layout");
        DRSIM_RETURN_IF_ERROR(
            Put(Field::kOuterVxlanGpeFlags, flags.mask_bits(0, 8), flags.spec_bits(0, 8), flags.pos));
        DRSIM_RETURN_IF_ERROR(
            Put(Field::kOuterVxlanGpeNextProtocol, proto.mask_bits(0, 8), proto.spec_bits(0, 8), proto.pos));
        return Put(Field::kOuterVxlanGpeVni, vni.mask_bits(0, 24), vni.spec_bits(0, 24), vni.pos);
      }
      case ItemType::kGeneve: {
        const Word opt = W(item, 0), proto = W(item, 1), vni = W(item, 2);
        DRSIM_RETURN_IF_ERROR(Put(Field::kGeneveOptLen, opt.mask_bits(8, 6), opt.spec_bits(8, 6), opt.pos));
        DRSIM_RETURN_IF_ERROR(
            Put(Field::kGeneveProtocolType, proto.mask_bits(0, 16), proto.spec_bits(0, 16), proto.pos));
        return Put(Field::kGeneveVni, vni.mask_bits(0, 24), vni.spec_bits(0, 24), vni.pos);
      }
      default: {  // GTP-U
        const Word flags = W(item, 0), type = W(item, 1), teid = W(item, 2);
        DRSIM_RETURN_IF_ERROR(
            Put(Field::kGtpuMsgFlags, flags.mask_bits(0, 8), flags.spec_bits(0, 8), flags.pos));
        DRSIM_RETURN_IF_ERROR(Put(Field::kGtpuMsgType, type.mask_bits(0, 8), type.spec_bits(0, 8), type.pos));
        return Put(Field::kGtpuTeid, teid.mask_bits(0, 32), teid.spec_bits(0, 32), teid.pos);
      }
    }
  }

  absl::Status Gre(const Item& item) {
    if (inner()) return StartTunnel(item);
    if (out_.info.outer.l3 == L3::kNone || out_.info.outer.l4 != L4::kNone) {
      return Error(item, absl::StrFormat("%s needs an outer ipv4 or ipv6 item (and no L4 item) before it",
                                         item.def->name));
    }
    DRSIM_RETURN_IF_ERROR(PutExact(Field::kOuterIpProtocol, 47, item.pos));
    DRSIM_RETURN_IF_ERROR(StartTunnel(item));
    if (item.def->type == ItemType::kNvgre) {
      // NVGRE is GRE with the K bit, protocol 0x6558 (transparent Ethernet) and the TNI in the key's upper
      // 24 bits.
      DRSIM_RETURN_IF_ERROR(PutExact(Field::kGreKPresent, 1, item.pos));
      DRSIM_RETURN_IF_ERROR(PutExact(Field::kGreProtocol, 0x6558, item.pos));
      const Word tni = W(item, 0);
      return Put(Field::kGreKeyH, tni.mask_bits(0, 24), tni.spec_bits(0, 24), tni.pos);
    }
    const Word flags = W(item, 0), proto = W(item, 1);
    if ((flags.mask_bits(0, 16) & ~0xb000u) != 0) {
      return Unmatchable(item, 0, flags, "only the C, K and S bits of the GRE flags are in the match layout");
    }
    DRSIM_RETURN_IF_ERROR(
        Put(Field::kGreCPresent, flags.mask_bits(15, 1), flags.spec_bits(15, 1), flags.pos));
    DRSIM_RETURN_IF_ERROR(
        Put(Field::kGreKPresent, flags.mask_bits(13, 1), flags.spec_bits(13, 1), flags.pos));
    DRSIM_RETURN_IF_ERROR(
        Put(Field::kGreSPresent, flags.mask_bits(12, 1), flags.spec_bits(12, 1), flags.pos));
    return Put(Field::kGreProtocol, proto.mask_bits(0, 16), proto.spec_bits(0, 16), proto.pos);
  }

  // mlx5's checks of a geneve-opt item (flow_dv_validate_item_geneve_opt), its reasons in the messages.
  absl::Status GeneveOpt(const Item& item) {
    if (out_.geneve_option) return Error(item, "a second geneve-opt item: mlx5 matches one GENEVE option");
    if (previous_ != ItemType::kGeneve) return Error(item, "geneve-opt must follow a geneve item");
    if (!HasSpec(item)) {
      return ErrorAt(item.pos, StatusCode::kUnimplemented,
                     "geneve-opt needs its class, type and length (mlx5 matches the one option they name)");
    }
    const Word cls = W(item, 0), type = W(item, 1), len = W(item, 2), data = W(item, 3);
    if (cls.mask_bits(0, 16) != 0xffff || type.mask_bits(0, 8) != 0xff || len.mask_bits(0, 5) != 0x1f) {
      const Word& w = cls.mask_bits(0, 16) != 0xffff ? cls : type.mask_bits(0, 8) != 0xff ? type : len;
      return ErrorAt(w.pos, StatusCode::kUnimplemented,
                     "geneve-opt class, type and length must be matched whole ('is'): mlx5 configures its "
                     "parser for one exact option");
    }
    const uint32_t length = len.spec_bits(0, 5);
    if (length == 0 || data.mask == 0) {
      return ErrorAt(length == 0 ? len.pos : item.pos, StatusCode::kUnimplemented,
                     "geneve-opt without data, or of length 0, is not supported (mlx5 matches the option's "
                     "data)");
    }
    if (length > sim::GeneveOptionParser::kMaxDataWords) {
      return ErrorAt(len.pos, StatusCode::kUnimplemented,
                     absl::StrFormat("geneve-opt length %d is not supported: the device parses options of at "
                                     "most %d data words (max_geneve_tlv_option_data_len)",
                                     length, sim::GeneveOptionParser::kMaxDataWords));
    }
    const uint32_t optlen_mask = hw::GetField(out_.mask.bytes(), Field::kGeneveOptLen);
    const uint32_t optlen = hw::GetField(out_.value.bytes(), Field::kGeneveOptLen);
    if (optlen_mask != 0 && (optlen & optlen_mask) <= length) {
      return ErrorAt(len.pos, StatusCode::kInvalidArgument,
                     absl::StrFormat("geneve-opt length %d exceeds the geneve item's optlen %d (the option "
                                     "takes its header word and %d data words)",
                                     length, optlen & optlen_mask, length));
    }
    if (data.spec == 0) {
      return ErrorAt(data.pos, StatusCode::kUnimplemented,
                     "geneve-opt data is 0 under its mask: mlx5 cannot match option data 0");
    }
    out_.geneve_option =
        GeneveOptionUse{static_cast<uint16_t>(cls.spec_bits(0, 16)),
                        static_cast<uint8_t>(type.spec_bits(0, 8)), static_cast<uint8_t>(length), item.pos};
    return Put(Field::kGeneveTlvOption0Data, data.mask_bits(0, 32), data.spec_bits(0, 32), data.pos);
  }

  absl::Status GreKey(const Item& item) {
    if (previous_ != ItemType::kGre) return Error(item, "gre_key must follow a gre item");
    DRSIM_RETURN_IF_ERROR(PutExact(Field::kGreKPresent, 1, item.pos));
    const Word key = W(item, 0);
    DRSIM_RETURN_IF_ERROR(Put(Field::kGreKeyH, key.mask_bits(8, 24), key.spec_bits(8, 24), key.pos));
    return Put(Field::kGreKeyL, key.mask_bits(0, 8), key.spec_bits(0, 8), key.pos);
  }

  // MPLS: the top label only, over Ethernet, UDP (port 6635) or GRE (protocol 0x8847).
  absl::Status Mpls(const Item& item) {
    const Word label = W(item, 0), ttl = W(item, 1);
    if (previous_ == ItemType::kMpls) {
      if (label.mask != 0 || ttl.mask != 0) {
        return Error(item,
                     "only the top MPLS label's fields are in the match layout; further mpls items can "
                     "only say that a label is there");
      }
      return absl::OkStatus();
    }
    Field first;
    if (previous_ == ItemType::kGre || previous_ == ItemType::kGreKey) {
      // The gre item opened the tunnel already.
      DRSIM_RETURN_IF_ERROR(PutIfOpen(Field::kGreProtocol, 0x8847, item.pos));
      first = Field::kOuterFirstMplsOverGreLabel;
    } else if (inner()) {
      return Error(item,
                   "MPLS inside a tunnel's inner packet is a second tunnel level, which the software NIC "
                   "does not parse");
    } else if (out_.info.outer.l4 == L4::kUdp) {
      DRSIM_RETURN_IF_ERROR(PutIfOpen(Field::kOuterUdpDport, 6635, item.pos));
      DRSIM_RETURN_IF_ERROR(StartTunnel(item));
      first = Field::kOuterFirstMplsOverUdpLabel;
    } else if (out_.info.outer.l3 == L3::kNone && out_.info.outer.l4 == L4::kNone) {
      DRSIM_RETURN_IF_ERROR(StartTunnel(item));
      first = Field::kOuterFirstMplsLabel;
    } else {
      return Error(item, "mpls must follow eth/vlan, an outer udp item or a gre item");
    }
    const auto field = [first](int offset) { return static_cast<Field>(static_cast<int>(first) + offset); };
    DRSIM_RETURN_IF_ERROR(Put(field(0), label.mask_bits(4, 20), label.spec_bits(4, 20), label.pos));
    DRSIM_RETURN_IF_ERROR(Put(field(1), label.mask_bits(1, 3), label.spec_bits(1, 3), label.pos));
    DRSIM_RETURN_IF_ERROR(Put(field(2), label.mask_bits(0, 1), label.spec_bits(0, 1), label.pos));
    return Put(field(3), ttl.mask_bits(0, 8), ttl.spec_bits(0, 8), ttl.pos);
  }

  // The PDU session container: the first extension header's first word is length, PDU type << 4, QFI and
  // the next type; the E flag announces it.
  absl::Status GtpPsc(const Item& item) {
    if (previous_ != ItemType::kGtp) return Error(item, "gtp_psc must follow a gtp item");
    DRSIM_RETURN_IF_ERROR(Put(Field::kGtpuMsgFlags, 0x04, 0x04, item.pos));
    const Word pdu = W(item, 0), qfi = W(item, 1);
    return Put(Field::kGtpuFirstExtDw0, pdu.mask_bits(0, 4) << 20 | qfi.mask_bits(0, 6) << 8,
               pdu.spec_bits(0, 4) << 20 | qfi.spec_bits(0, 6) << 8, pdu.mask != 0 ? pdu.pos : qfi.pos);
  }

  absl::Status IbBth(const Item& item) {
    if (inner() || out_.info.outer.l4 != L4::kUdp)
      return Error(item, "ib_bth needs an outer udp item before it");
    DRSIM_RETURN_IF_ERROR(PutIfOpen(Field::kOuterUdpDport, 4791, item.pos));
    const Word opcode = W(item, 0), pkey = W(item, 1), qp = W(item, 2), psn = W(item, 3);
    if (pkey.mask != 0)
      return Unmatchable(item, 1, pkey, "the match layout has BTH opcode, dst QP and A bit only");
    if (psn.mask != 0)
      return Unmatchable(item, 3, psn, "the match layout has BTH opcode, dst QP and A bit only");
    DRSIM_RETURN_IF_ERROR(Put(Field::kBthOpcode, opcode.mask_bits(0, 8), opcode.spec_bits(0, 8), opcode.pos));
    return Put(Field::kBthDstQp, qp.mask_bits(0, 24), qp.spec_bits(0, 24), qp.pos);
  }

  absl::Status Metadata(const Item& item) {
    const Word data = W(item, 0);
    int reg = kMetaRegC;
    if (item.def->type == ItemType::kTag) {
      const Word index = W(item, 1);
      const uint32_t i = index.spec_bits(0, 8);
      if (i > kMaxTagIndex) {
        return ErrorAt(
            index.pos, StatusCode::kInvalidArgument,
            absl::StrFormat("tag index %d: the software NIC has tag registers 0..%d (reg_c_%d..%d)", i,
                            kMaxTagIndex, kFirstTagRegC, kFirstTagRegC + kMaxTagIndex));
      }
      reg = kFirstTagRegC + static_cast<int>(i);
    }
    return Put(RegCMatchField(reg), data.mask_bits(0, 32), data.spec_bits(0, 32), data.pos);
  }

  absl::Status SourcePort(const Item& item) {
    if (ctx_.domain != MLX5DV_DR_DOMAIN_TYPE_FDB) {
      return Error(item, absl::StrFormat("%s matches the eSwitch source port: only transfer rules can use it",
                                         item.def->name));
    }
    const Word port = W(item, 0);
    const int width = item.def->storage[0].width;
    if (port.mask == 0) return Error(item, absl::StrFormat("%s needs the port id", item.def->name));
    if (port.mask != Ones(width)) {
      return ErrorAt(port.pos, StatusCode::kUnimplemented,
                     "a partial source port mask is not supported (rdma-core matches source_port whole)");
    }
    absl::StatusOr<uint16_t> vport = ctx_.vport_of_port(port.spec_bits(0, width));
    if (!vport.ok()) return WithPos(vport.status(), port.pos);
    return PutExact(Field::kSourcePort, *vport, port.pos);
  }

  absl::Status MeterColor(const Item& item) {
    const Word color = W(item, 0);
    if (color.mask == 0) return absl::OkStatus();
    if (color.mask != Ones(32)) {
      return ErrorAt(color.pos, StatusCode::kInvalidArgument,
                     "meter color must be matched whole ('color is')");
    }
    return Put(RegCMatchField(kMeterRegC), kMeterColorMask, PrmColor(color.spec_bits(0, 32)), color.pos);
  }

  // The CT result the conntrack action wrote to reg_c_5's low byte (mlx5's ASO register), as mlx5 matches
  // rte_flow_item_conntrack (sim::CtResultMatch).
  absl::Status Conntrack(const Item& item) {
    if (conntrack_given_) {
      return ErrorAt(item.pos, StatusCode::kInvalidArgument,
                     "Only one CT is supported (a second conntrack item)");
    }
    conntrack_given_ = true;
    if (!HasSpec(item)) {
      return ErrorAt(item.pos, StatusCode::kInvalidArgument,
                     "Conntrack item spec is required ('conntrack is FLAGS')");
    }
    // The mask's bits above the five states mean nothing (rte_flow's default mask is all ones); the spec's
    // must not be set.
    const ItemWord& word = item.words[0];
    const Word flags = W(item, 0);
    absl::StatusOr<sim::CtRegisterMatch> match =
        sim::CtResultMatch(static_cast<uint32_t>(word.spec), flags.mask_bits(0, 32) & sim::kCtPktAll);
    if (!match.ok()) {  // flow_dv_validate_item_aso_ct's words, then sim's detail
      const bool unknown = (word.spec & ~absl::uint128(sim::kCtPktAll)) != 0;
      return ErrorAt(flags.pos, match.status().code(),
                     absl::StrFormat("%s (%s)", unknown ? "Invalid CT item flags" : "Conflict status bits",
                                     match.status().message()));
    }
    return Put(RegCMatchField(kMeterRegC), match->mask, match->value, flags.pos);
  }

  absl::Span<const Item> items_;
  const PatternContext& ctx_;
  TranslatedPattern& out_;
  ItemType previous_ = ItemType::kVoid;
  bool source_given_ = false;  // a port_id / represented_port item
  bool svlan_next_ = false;    // the next vlan item's tag is an S-tag (0x88a8)
  bool conntrack_given_ = false;
  mutable const Item* spec_checked_ = nullptr;  // the item W last read, and whether it has a spec
  mutable bool has_spec_ = false;
};

}  // namespace

absl::StatusOr<TranslatedPattern> TranslatePattern(absl::Span<const Item> items, const PatternContext& ctx) {
  TranslatedPattern out;
  DRSIM_RETURN_IF_ERROR(PatternBuilder(items, ctx, out).Build());
  return out;
}

absl::Status TranslatePatternInto(absl::Span<const Item> items, const PatternContext& ctx,
                                  TranslatedPattern* out) {
  for (hw::MatchParams* params : {&out->mask, &out->value}) {
    std::memset(params->bytes(), 0, hw::kMatchParamBytes);
    params->set_match_sz(hw::kMatchParamBytes);
  }
  out->info = PatternInfo{};
  out->geneve_option.reset();
  return PatternBuilder(items, ctx, *out).Build();
}

}  // namespace drsim::testpmd
