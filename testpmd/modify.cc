#include "testpmd/modify.h"

#include <algorithm>
#include <array>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "hw/modify_header.h"
#include "testpmd/registers.h"
#include "testpmd/values.h"

namespace drsim::testpmd {
namespace {

using absl::StatusCode;
using MF = hw::ModifyField;

// A rewritable field as consecutive PRM fields, least significant first.
struct Part {
  MF id;
  uint8_t width;
};
struct RteField {
  absl::string_view name;
  std::array<Part, 4> parts;
  int num_parts;
  bool addable;  // DR's ADD takes only TTL, hop limit and TCP sequence/acknowledgment numbers
  int width() const {
    int w = 0;
    for (int i = 0; i < num_parts; ++i) w += parts[i].width;
    return w;
  }
};

constexpr RteField kRteFields[] = {
    {"mac_dst", {{{MF::kDmac15_0, 16}, {MF::kDmac47_16, 32}}}, 2, false},
    {"mac_src", {{{MF::kSmac15_0, 16}, {MF::kSmac47_16, 32}}}, 2, false},
    {"vlan_id", {{{MF::kFirstVid, 12}}}, 1, false},
    {"mac_type", {{{MF::kEthertype, 16}}}, 1, false},
    {"ipv4_dscp", {{{MF::kIpDscp, 6}}}, 1, false},
    {"ipv4_ttl", {{{MF::kIpTtl, 8}}}, 1, true},
    {"ipv4_src", {{{MF::kSipv4, 32}}}, 1, false},
    {"ipv4_dst", {{{MF::kDipv4, 32}}}, 1, false},
    {"ipv4_ecn", {{{MF::kIpEcn, 2}}}, 1, false},
    {"ipv6_dscp", {{{MF::kIpDscp, 6}}}, 1, false},
    {"ipv6_hoplimit", {{{MF::kIpv6Hoplimit, 8}}}, 1, true},
    {"ipv6_src",
     {{{MF::kSipv6_31_0, 32}, {MF::kSipv6_63_32, 32}, {MF::kSipv6_95_64, 32}, {MF::kSipv6_127_96, 32}}},
     4,
     false},
    {"ipv6_dst",
     {{{MF::kDipv6_31_0, 32}, {MF::kDipv6_63_32, 32}, {MF::kDipv6_95_64, 32}, {MF::kDipv6_127_96, 32}}},
     4,
     false},
    {"ipv6_ecn", {{{MF::kIpEcn, 2}}}, 1, false},
    {"tcp_port_src", {{{MF::kTcpSport, 16}}}, 1, false},
    {"tcp_port_dst", {{{MF::kTcpDport, 16}}}, 1, false},
    {"tcp_seq_num", {{{MF::kTcpSeqNum, 32}}}, 1, true},
    {"tcp_ack_num", {{{MF::kTcpAckNum, 32}}}, 1, true},
    {"tcp_flags", {{{MF::kTcpFlags, 9}}}, 1, false},
    {"udp_port_src", {{{MF::kUdpSport, 16}}}, 1, false},
    {"udp_port_dst", {{{MF::kUdpDport, 16}}}, 1, false},
    {"gtp_teid", {{{MF::kGtpuTeid, 32}}}, 1, false},
    {"meta", {{{RegCModifyField(kMetaRegC), 32}}}, 1, false},
};

// One piece of a bit range [offset, offset + width) of a field: `len` bits at `local` in part `id`,
// starting `global` bits into the field.
struct Chunk {
  MF id;
  int local, len, global;
};

std::vector<Chunk> Chunks(const RteField& f, int offset, int width) {
  std::vector<Chunk> out;
  int base = 0;
  for (int i = 0; i < f.num_parts; ++i) {
    const int lo = std::max(offset, base), hi = std::min(offset + width, base + f.parts[i].width);
    if (lo < hi) out.push_back({f.parts[i].id, lo - base, hi - lo, lo});
    base += f.parts[i].width;
  }
  return out;
}

absl::Status Invalid(SourcePos pos, absl::string_view message) {
  return ErrorAt(pos, StatusCode::kInvalidArgument, message);
}

uint32_t Number(const Action& a, absl::string_view param, uint32_t fallback = 0) {
  const ActionArg* arg = a.Find(param);
  return arg == nullptr ? fallback : static_cast<uint32_t>(arg->value.number);
}

SourcePos ParamPos(const Action& a, absl::string_view param) {
  const ActionArg* arg = a.Find(param);
  return arg == nullptr ? a.pos : arg->pos;
}

void SetAll(const RteField& f, absl::uint128 value, std::vector<uint64_t>* words) {
  for (const Chunk& c : Chunks(f, 0, f.width())) {
    words->push_back(hw::ModifySetWord(c.id, static_cast<uint8_t>(c.local), static_cast<uint8_t>(c.len),
                                       static_cast<uint32_t>((value >> c.global) & Ones(c.len))));
  }
}

const RteField& FieldNamed(absl::string_view name) {
  for (const RteField& f : kRteFields) {
    if (f.name == name) return f;
  }
  return kRteFields[0];  // callers pass names of the table only
}

absl::Status NeedL3(const Action& a, const HeaderLayers& l, L3 l3) {
  if (l.l3 == l3) return absl::OkStatus();
  return Invalid(a.pos,
                 absl::StrFormat("%s needs an %s item in the pattern (mlx5 checks the layer it rewrites)",
                                 a.def->name, l3 == L3::kIpv4 ? "ipv4" : "ipv6"));
}

// The rewritable field `type` of modify_field (with its tag index), or an error at `pos`.
absl::StatusOr<RteField> ResolveField(const Action& a, absl::string_view side) {
  const ActionArg* type = a.Find(absl::StrCat(side, "_type"));
  const std::string name = type->value.text;
  if (type->value.text == "tag") {
    const uint32_t index = Number(a, absl::StrCat(side, "_tag_index"));
    if (index > kMaxTagIndex) {
      return Invalid(
          ParamPos(a, absl::StrCat(side, "_tag_index")),
          absl::StrFormat("tag index %d: the software NIC has tag registers 0..%d", index, kMaxTagIndex));
    }
    return RteField{"tag", {{{RegCModifyField(kFirstTagRegC + static_cast<int>(index)), 32}}}, 1, false};
  }
  for (const RteField& f : kRteFields) {
    if (f.name == name) return f;
  }
  return ErrorAt(
      type->value.pos, StatusCode::kUnimplemented,
      absl::StrFormat("modify_field %s_type %s is not a field DR's modify-header can rewrite", side, name));
}

absl::Status ModifyField(const Action& a, std::vector<uint64_t>* words) {
  for (absl::string_view level : {"dst_level", "src_level"}) {
    if (Number(a, level) > 1) {
      return ErrorAt(ParamPos(a, level), StatusCode::kUnimplemented,
                     "DR's modify-header rewrites the outermost headers only (level 0 or 1)");
    }
  }
  DRSIM_ASSIGN_OR_RETURN(RteField dst, ResolveField(a, "dst"));
  const int width = static_cast<int>(Number(a, "width"));
  const int dst_offset = static_cast<int>(Number(a, "dst_offset"));
  const SourcePos width_pos = ParamPos(a, "width");
  if (width == 0 || dst_offset + width > dst.width()) {
    return Invalid(width_pos,
                   absl::StrFormat("dst_offset %d + width %d must be within %s (%d bits), width > 0",
                                   dst_offset, width, dst.name, dst.width()));
  }
  const std::string op = a.Find("op")->value.text;
  const ActionArg* src_type = a.Find("src_type");
  if (src_type->value.text == "value") {
    const ActionArg* src_value = a.Find("src_value");
    if (src_value == nullptr) return Invalid(src_type->pos, "src_type value needs src_value");
    const size_t field_bytes = (dst.width() + 7) / 8;
    if (src_value->value.bytes.size() > field_bytes) {
      return Invalid(src_value->value.pos,
                     absl::StrFormat("src_value has %d bytes; %s is %d bytes", src_value->value.bytes.size(),
                                     dst.name, field_bytes));
    }
    // rte_flow: the value in the field's byte order and length; its bits at dst_offset are used.
    absl::uint128 v = 0;
    for (size_t i = 0; i < field_bytes; ++i) {
      v = v << 8 | (i < src_value->value.bytes.size() ? src_value->value.bytes[i] : 0);
    }
    if (op == "set") {
      for (const Chunk& c : Chunks(dst, dst_offset, width)) {
        words->push_back(hw::ModifySetWord(c.id, static_cast<uint8_t>(c.local), static_cast<uint8_t>(c.len),
                                           static_cast<uint32_t>((v >> c.global) & Ones(c.len))));
      }
      return absl::OkStatus();
    }
    if (!dst.addable || dst_offset != 0 || width != dst.width()) {
      return ErrorAt(a.Find("op")->value.pos, StatusCode::kUnimplemented,
                     "DR's modify-header adds only to a whole TTL, hop limit or TCP sequence/acknowledgment "
                     "number");
    }
    const uint32_t add = static_cast<uint32_t>(v & Ones(width));
    words->push_back(hw::ModifyAddWord(dst.parts[0].id,
                                       op == "add" ? add : static_cast<uint32_t>(Ones(width)) & (0u - add)));
    return absl::OkStatus();
  }
  if (src_type->value.text == "pointer") {
    return ErrorAt(src_type->value.pos, StatusCode::kUnimplemented,
                   "src_type pointer needs application memory; use src_type value with src_value");
  }
  if (op != "set") {
    return ErrorAt(a.Find("op")->value.pos, StatusCode::kUnimplemented,
                   "DR's modify-header adds immediates only: op add/sub needs src_type value");
  }
  DRSIM_ASSIGN_OR_RETURN(RteField src, ResolveField(a, "src"));
  const int src_offset = static_cast<int>(Number(a, "src_offset"));
  if (src_offset + width > src.width()) {
    return Invalid(width_pos, absl::StrFormat("src_offset %d + width %d must be within %s (%d bits)",
                                              src_offset, width, src.name, src.width()));
  }
  // COPY in pieces that stay inside one PRM field on both sides.
  for (int done = 0; done < width;) {
    const Chunk s = Chunks(src, src_offset + done, width - done).front();
    const Chunk d = Chunks(dst, dst_offset + done, width - done).front();
    const int len = std::min(s.len, d.len);
    words->push_back(hw::ModifyCopyWord(s.id, static_cast<uint8_t>(s.local), d.id,
                                        static_cast<uint8_t>(d.local), static_cast<uint8_t>(len)));
    done += len;
  }
  return absl::OkStatus();
}

}  // namespace

bool IsModifyAction(ActionType type) {
  switch (type) {
    case ActionType::kSetMacSrc:
    case ActionType::kSetMacDst:
    case ActionType::kSetIpv4Src:
    case ActionType::kSetIpv4Dst:
    case ActionType::kSetIpv6Src:
    case ActionType::kSetIpv6Dst:
    case ActionType::kSetTpSrc:
    case ActionType::kSetTpDst:
    case ActionType::kSetTtl:
    case ActionType::kOfSetNwTtl:
    case ActionType::kDecTtl:
    case ActionType::kOfDecNwTtl:
    case ActionType::kSetIpv4Dscp:
    case ActionType::kSetIpv6Dscp:
    case ActionType::kIncTcpSeq:
    case ActionType::kDecTcpSeq:
    case ActionType::kIncTcpAck:
    case ActionType::kDecTcpAck:
    case ActionType::kOfSetVlanVid:
    case ActionType::kOfSetVlanPcp:
    case ActionType::kSetTag:
    case ActionType::kSetMeta:
    case ActionType::kModifyField:
      return true;
    default:
      return false;
  }
}

std::vector<uint64_t> SetRegisterWords(int reg, uint32_t value, uint32_t mask) {
  std::vector<uint64_t> words;
  for (int bit = 0; bit < 32;) {
    if ((mask >> bit & 1) == 0) {
      ++bit;
      continue;
    }
    int len = 0;
    while (bit + len < 32 && (mask >> (bit + len) & 1)) ++len;
    const uint32_t data = static_cast<uint32_t>((uint64_t{value} >> bit) & ((uint64_t{1} << len) - 1));
    words.push_back(
        hw::ModifySetWord(RegCModifyField(reg), static_cast<uint8_t>(bit), static_cast<uint8_t>(len), data));
    bit += len;
  }
  return words;
}

absl::Status AppendModifyWords(const Action& a, const HeaderLayers& l, std::vector<uint64_t>* words) {
  switch (a.def->type) {
    case ActionType::kSetMacSrc:
    case ActionType::kSetMacDst: {
      const ActionArg* mac = a.Find("mac_addr");
      SetAll(FieldNamed(a.def->type == ActionType::kSetMacSrc ? "mac_src" : "mac_dst"),
             mac == nullptr ? 0 : mac->value.number, words);
      return absl::OkStatus();
    }
    case ActionType::kSetIpv4Src:
    case ActionType::kSetIpv4Dst: {
      DRSIM_RETURN_IF_ERROR(NeedL3(a, l, L3::kIpv4));
      const bool src = a.def->type == ActionType::kSetIpv4Src;
      words->push_back(hw::ModifySetWord(src ? MF::kSipv4 : MF::kDipv4, 0, 32, Number(a, "ipv4_addr")));
      return absl::OkStatus();
    }
    case ActionType::kSetIpv6Src:
    case ActionType::kSetIpv6Dst: {
      DRSIM_RETURN_IF_ERROR(NeedL3(a, l, L3::kIpv6));
      const ActionArg* addr = a.Find("ipv6_addr");
      SetAll(FieldNamed(a.def->type == ActionType::kSetIpv6Src ? "ipv6_src" : "ipv6_dst"),
             addr == nullptr ? 0 : addr->value.number, words);
      return absl::OkStatus();
    }
    case ActionType::kSetTpSrc:
    case ActionType::kSetTpDst: {
      const bool src = a.def->type == ActionType::kSetTpSrc;
      MF field;
      if (l.l4 == L4::kTcp) {
        field = src ? MF::kTcpSport : MF::kTcpDport;
      } else if (l.l4 == L4::kUdp) {
        field = src ? MF::kUdpSport : MF::kUdpDport;
      } else {
        return Invalid(a.pos, absl::StrFormat("%s needs a tcp or udp item in the pattern", a.def->name));
      }
      words->push_back(hw::ModifySetWord(field, 0, 16, Number(a, "port")));
      return absl::OkStatus();
    }
    case ActionType::kSetTtl:
    case ActionType::kOfSetNwTtl:
    case ActionType::kDecTtl:
    case ActionType::kOfDecNwTtl: {
      if (l.l3 == L3::kNone) {
        return Invalid(a.pos, absl::StrFormat("%s needs an ipv4 or ipv6 item in the pattern", a.def->name));
      }
      const MF field = l.l3 == L3::kIpv4 ? MF::kIpTtl : MF::kIpv6Hoplimit;
      if (a.def->type == ActionType::kDecTtl || a.def->type == ActionType::kOfDecNwTtl) {
        words->push_back(hw::ModifyAddWord(field, 0xff));  // -1 in the 8-bit field
      } else {
        const uint32_t ttl = Number(a, a.def->type == ActionType::kSetTtl ? "ttl_value" : "nw_ttl");
        words->push_back(hw::ModifySetWord(field, 0, 8, ttl));
      }
      return absl::OkStatus();
    }
    case ActionType::kSetIpv4Dscp:
    case ActionType::kSetIpv6Dscp: {
      if (absl::Status s = NeedL3(a, l, a.def->type == ActionType::kSetIpv4Dscp ? L3::kIpv4 : L3::kIpv6);
          !s.ok()) {
        return s;
      }
      const uint32_t dscp = Number(a, "dscp_value");
      if (dscp > 63) return Invalid(ParamPos(a, "dscp_value"), "dscp_value must be 0..63");
      words->push_back(hw::ModifySetWord(MF::kIpDscp, 0, 6, dscp));
      return absl::OkStatus();
    }
    case ActionType::kIncTcpSeq:
    case ActionType::kDecTcpSeq:
    case ActionType::kIncTcpAck:
    case ActionType::kDecTcpAck: {
      if (l.l4 != L4::kTcp) {
        return Invalid(a.pos, absl::StrFormat("%s needs a tcp item in the pattern", a.def->name));
      }
      const bool seq = a.def->type == ActionType::kIncTcpSeq || a.def->type == ActionType::kDecTcpSeq;
      const bool dec = a.def->type == ActionType::kDecTcpSeq || a.def->type == ActionType::kDecTcpAck;
      const uint32_t v = Number(a, "value");
      words->push_back(hw::ModifyAddWord(seq ? MF::kTcpSeqNum : MF::kTcpAckNum, dec ? 0u - v : v));
      return absl::OkStatus();
    }
    case ActionType::kOfSetVlanVid: {
      const uint32_t vid = Number(a, "vlan_vid");
      if (vid > 0xfff) return Invalid(ParamPos(a, "vlan_vid"), "vlan_vid must be 0..4095");
      words->push_back(hw::ModifySetWord(MF::kFirstVid, 0, 12, vid));
      return absl::OkStatus();
    }
    case ActionType::kOfSetVlanPcp: {
      const uint32_t pcp = Number(a, "vlan_pcp");
      if (pcp > 7) return Invalid(ParamPos(a, "vlan_pcp"), "vlan_pcp must be 0..7");
      words->push_back(hw::ModifySetWord(MF::kFirstVid, 13, 3, pcp));
      return absl::OkStatus();
    }
    case ActionType::kSetTag:
    case ActionType::kSetMeta: {
      const uint32_t mask = Number(a, "mask");
      if (mask == 0) {
        return Invalid(
            ParamPos(a, "mask"),
            absl::StrFormat("%s with a zero mask has no effect (mlx5 rejects it): give 'mask'", a.def->name));
      }
      int reg = kMetaRegC;
      if (a.def->type == ActionType::kSetTag) {
        const uint32_t index = Number(a, "index");
        if (index > kMaxTagIndex) {
          return Invalid(ParamPos(a, "index"),
                         absl::StrFormat("set_tag index %d: the software NIC has tag registers 0..%d", index,
                                         kMaxTagIndex));
        }
        reg = kFirstTagRegC + static_cast<int>(index);
      }
      for (uint64_t w : SetRegisterWords(reg, Number(a, "data"), mask)) words->push_back(w);
      return absl::OkStatus();
    }
    case ActionType::kModifyField:
      return ModifyField(a, words);
    default:
      return Invalid(a.pos, absl::StrFormat("%s is not a header rewrite", a.def->name));
  }
}

}  // namespace drsim::testpmd
