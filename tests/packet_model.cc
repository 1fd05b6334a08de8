#include "tests/packet_model.h"

#include <algorithm>
#include <vector>

#include "tests/packet_model_bytes.h"

namespace drsim::testing {
namespace {

using hw::Field;
using hw::Headers;
using hw::kInner;
using hw::kOuter;
using hw::MatchBuilder;
using sim::Encap;
using sim::FrameSpec;
using sim::L3Kind;

// The second-tag fields have no inner.*-twin arithmetic: they live in misc under their own names.
Field SecondField(Headers h, Field outer) {
  if (h == kOuter) return outer;
  switch (outer) {
    case Field::kOuterSecondCvlanTag:
      return Field::kInnerSecondCvlanTag;
    case Field::kOuterSecondSvlanTag:
      return Field::kInnerSecondSvlanTag;
    case Field::kOuterSecondPrio:
      return Field::kInnerSecondPrio;
    default:
      return Field::kInnerSecondCfi;
  }
}

// Ethernet and VLAN tags of one header stack, ending with `ethertype`. False when a third tag (not
// parsed: its TPID is the ethertype) hides what follows.
bool StateL2(MatchBuilder& b, Headers h, const FrameSpec& s, uint16_t ethertype) {
  b.Smac(h, s.smac).Dmac(h, s.dmac);
  // At most two tags are parsed; the first fills first_*, the second misc.*_second_*.
  for (size_t i = 0; i < s.vlans.size() && i < 2; ++i) {
    const sim::VlanTag& t = s.vlans[i];
    const bool svlan = t.tpid == 0x88a8;
    if (i == 0) {
      (svlan ? b.SvlanTag(h, 1) : b.CvlanTag(h, 1));
      b.FirstPrio(h, t.tci >> 13).FirstCfi(h, (t.tci >> 12) & 1).FirstVid(h, t.tci & 0xfff);
    } else {
      b.Set(SecondField(h, svlan ? Field::kOuterSecondSvlanTag : Field::kOuterSecondCvlanTag), 1);
      b.Set(SecondField(h, Field::kOuterSecondPrio), t.tci >> 13);
      b.Set(SecondField(h, Field::kOuterSecondCfi), (t.tci >> 12) & 1);
      b.SecondVid(h, t.tci & 0xfff);
    }
  }
  if (s.vlans.size() > 2) {
    b.Ethertype(h, s.vlans[2].tpid);
    return false;
  }
  b.Ethertype(h, ethertype);
  return true;
}

uint16_t FrameEthertype(const FrameSpec& s) {
  return s.l3 == L3Kind::kIpv4 ? 0x0800 : s.l3 == L3Kind::kIpv6 ? 0x86dd : s.ethertype;
}

// IPv4/IPv6 and L4 of one header stack. The misc3 ICMP fields are the outer packet's only.
void StateL3(MatchBuilder& b, Headers h, const FrameSpec& s) {
  const bool v4 = s.l3 == L3Kind::kIpv4;
  b.IpVersion(h, v4 ? 4 : 6);
  b.Dscp(h, s.dscp).Ecn(h, s.ecn).TtlHoplimit(h, s.ttl).IpProtocol(h, s.protocol);
  if (v4) {
    b.Ihl(h, 5 + s.ipv4_option_words).Ipv4Src(h, s.ipv4_src).Ipv4Dst(h, s.ipv4_dst);
  } else {
    b.Ipv6Src(h, s.ipv6_src).Ipv6Dst(h, s.ipv6_dst).Ipv6FlowLabel(h, s.flow_label);
  }
  if (IsFragmented(s)) b.Frag(h, 1);
  if (s.fragment_offset != 0) return;  // later fragments carry no L4 header
  switch (s.protocol) {
    case sim::kIpProtoTcp:
      b.TcpSport(h, s.sport).TcpDport(h, s.dport).TcpFlags(h, s.tcp_flags);
      b.Set(h == kOuter ? Field::kOuterTcpSeqNum : Field::kInnerTcpSeqNum, s.seq);
      b.Set(h == kOuter ? Field::kOuterTcpAckNum : Field::kInnerTcpAckNum, s.ack);
      break;
    case sim::kIpProtoUdp:
      b.UdpSport(h, s.sport).UdpDport(h, s.dport);
      break;
    case sim::kIpProtoIcmp:
      if (h == kOuter) b.IcmpType(s.icmp_type).IcmpCode(s.icmp_code).Set(Field::kIcmpHeaderData, s.icmp_data);
      break;
    case sim::kIpProtoIcmpv6:
      if (h == kOuter) {
        b.Icmpv6Type(s.icmp_type).Icmpv6Code(s.icmp_code).Set(Field::kIcmpv6HeaderData, s.icmp_data);
      }
      break;
    default:
      break;
  }
}

// ---- Tunnels -------------------------------------------------------------------------------------

enum class Inner { kNone, kEthernet, kIpv4, kIpv6, kIpByVersion };

// What the tunnel announces it carries.
Inner ByEthertype(uint16_t type) {
  return type == 0x6558   ? Inner::kEthernet
         : type == 0x0800 ? Inner::kIpv4
         : type == 0x86dd ? Inner::kIpv6
                          : Inner::kNone;
}

void StateInner(MatchBuilder& b, const FrameSpec& in, Inner kind) {
  switch (kind) {
    case Inner::kEthernet:
      if (StateL2(b, kInner, in, FrameEthertype(in)) && in.l3 != L3Kind::kNone) StateL3(b, kInner, in);
      return;
    case Inner::kIpv4:
    case Inner::kIpv6:
      // The inner packet is parsed only when it is what the tunnel says.
      if (in.l3 == (kind == Inner::kIpv4 ? L3Kind::kIpv4 : L3Kind::kIpv6)) StateL3(b, kInner, in);
      return;
    case Inner::kIpByVersion:
      if (in.l3 != L3Kind::kNone) StateL3(b, kInner, in);  // filler (0xab) has version nibble 0xa
      return;
    case Inner::kNone:
      return;
  }
}

void StateTunnelWords(MatchBuilder& b, std::vector<uint8_t> bytes) {
  bytes.resize(std::max<size_t>(bytes.size(), 16), 0);  // past the frame, or Ethernet padding: zero
  for (int w = 0; w < 4; ++w) {
    const uint8_t* p = bytes.data() + 4 * w;
    b.Set(static_cast<Field>(static_cast<int>(Field::kTunnelHeader0) + w),
          uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3]);
  }
}

// The first MPLS label into a run of fields; returns what follows the stack.
Inner StateMpls(MatchBuilder& b, const std::vector<sim::MplsLabel>& labels, Field label_field) {
  const sim::MplsLabel& top = labels.front();
  b.Set(label_field, top.label & 0xfffff);
  b.Set(static_cast<Field>(static_cast<int>(label_field) + 1), top.tc & 7);
  b.Set(static_cast<Field>(static_cast<int>(label_field) + 2), labels.size() == 1 ? 1 : 0);
  b.Set(static_cast<Field>(static_cast<int>(label_field) + 3), top.ttl);
  return labels.size() <= 8 ? Inner::kIpByVersion : Inner::kNone;  // the parser looks at 8 labels at most
}

// The fields of a recognised tunnel (or RoCE v2 BTH) after the outer headers, and what it carries.
Inner StateTunnel(MatchBuilder& b, const sim::TunnelFrameSpec& t) {
  const sim::TunnelSpec& tn = t.tunnel;
  switch (tn.kind) {
    case Encap::kVxlan:
      b.VxlanVni(tn.vni & 0xffffff);
      return Inner::kEthernet;
    case Encap::kVxlanGpe:
      if (tn.gpe_flags & 0x30) return Inner::kNone;  // a version we do not know: not recognised
      b.Set(Field::kOuterVxlanGpeFlags, tn.gpe_flags)
          .Set(Field::kOuterVxlanGpeNextProtocol, tn.gpe_next_protocol)
          .Set(Field::kOuterVxlanGpeVni, tn.vni & 0xffffff);
      return tn.gpe_next_protocol == 1   ? Inner::kIpv4
             : tn.gpe_next_protocol == 2 ? Inner::kIpv6
             : tn.gpe_next_protocol == 3 ? Inner::kEthernet
                                         : Inner::kNone;
    case Encap::kGeneve: {
      size_t words = 0;
      for (const sim::GeneveOption& o : tn.geneve_options) words += 1 + std::min<size_t>(o.data.size(), 31);
      b.GeneveVni(tn.vni & 0xffffff).Set(Field::kGeneveOam, tn.geneve_oam);
      b.Set(Field::kGeneveOptLen, words).Set(Field::kGeneveProtocolType, tn.geneve_protocol);
      for (const sim::GeneveOption& o : tn.geneve_options) {  // option 0: the first of the model's option
        if (o.option_class != kModelGeneveOptionClass || o.type != kModelGeneveOptionType) continue;
        b.Set(Field::kGeneveTlvOption0Exist, 1);
        if (!o.data.empty()) b.Set(Field::kGeneveTlvOption0Data, o.data[0]);
        break;
      }
      return ByEthertype(tn.geneve_protocol);
    }
    case Encap::kGre: {
      b.Set(Field::kGreCPresent, tn.gre_checksum).Set(Field::kGreKPresent, tn.gre_key_present);
      b.Set(Field::kGreSPresent, tn.gre_seq_present).GreProtocol(tn.gre_protocol);
      if (tn.gre_key_present) b.GreKey(tn.gre_key);
      if (tn.gre_protocol == 0x8847 || tn.gre_protocol == 0x8848) {
        return StateMpls(b, tn.mpls, Field::kOuterFirstMplsOverGreLabel);
      }
      return ByEthertype(tn.gre_protocol);
    }
    case Encap::kMpls:
      return StateMpls(b, tn.mpls, Field::kOuterFirstMplsLabel);
    case Encap::kMplsOverUdp:
      return StateMpls(b, tn.mpls, Field::kOuterFirstMplsOverUdpLabel);
    case Encap::kGtpu: {
      const GtpuLayout g = GtpuLayoutOf(t);
      b.Set(Field::kGtpuMsgFlags, g.flags).Set(Field::kGtpuMsgType, tn.gtpu_msg_type);
      b.Set(Field::kGtpuTeid, tn.gtpu_teid).Set(Field::kGtpuDw0, g.dw0);
      if (g.optional) b.Set(Field::kGtpuDw2, g.dw2);
      if (!tn.gtpu_extensions.empty()) b.Set(Field::kGtpuFirstExtDw0, g.first_ext_dw0);
      return tn.gtpu_msg_type == 0xff ? Inner::kIpByVersion : Inner::kNone;  // only G-PDUs carry a packet
    }
    case Encap::kRoceV2:
      b.Set(Field::kBthOpcode, tn.bth_opcode).Set(Field::kBthDstQp, tn.bth_dst_qp & 0xffffff);
      b.Set(Field::kBthA, tn.bth_ack_req);
      return Inner::kNone;
    case Encap::kNone:
      return Inner::kNone;
  }
  return Inner::kNone;
}

// A plain frame's filler payload after UDP port 4789 or IP protocol 47, read as a tunnel header.
void StateFillerTunnel(MatchBuilder& b, const FrameSpec& o) {
  const std::vector<uint8_t> tail = WireL4Payload(o);  // 0xab filler, then Ethernet padding zeros
  auto at = [&](size_t i) -> uint32_t { return i < tail.size() ? tail[i] : 0; };
  if (o.protocol == sim::kIpProtoUdp && o.dport == sim::kUdpPortVxlan && tail.size() >= 8) {
    b.VxlanVni(at(4) << 16 | at(5) << 8 | at(6));
    StateTunnelWords(b, tail);
    // An inner Ethernet header needs 22 bytes: then it is all filler, and 0xabab is no VLAN or IP type.
    if (tail.size() >= 22) {
      const hw::MacAddress filler{{0xab, 0xab, 0xab, 0xab, 0xab, 0xab}};
      b.Dmac(kInner, filler).Smac(kInner, filler).Ethertype(kInner, 0xabab);
    }
  }
  if (o.protocol == sim::kIpProtoGre && tail.size() >= 4) {
    const uint32_t flags = at(0) << 8 | at(1);
    if (flags & 0x4000) return;  // routing: not GRE the parser reads (any version is, as on a ConnectX)
    const bool c = flags & 0x8000, k = flags & 0x2000, s = flags & 0x1000;
    const size_t header = 4 + 4 * (c + k + s);
    if (tail.size() < header) return;
    b.Set(Field::kGreCPresent, c).Set(Field::kGreKPresent, k).Set(Field::kGreSPresent, s);
    b.GreProtocol(at(2) << 8 | at(3));
    const size_t key = c ? 8 : 4;
    if (k) b.GreKey(at(key) << 24 | at(key + 1) << 16 | at(key + 2) << 8 | at(key + 3));
    StateTunnelWords(b, tail);
    // The protocol is filler or zero: no inner packet we know.
  }
}

}  // namespace

hw::MatchParams ExpectedFields(const FrameSpec& s) {
  sim::TunnelFrameSpec t;
  t.outer = s;
  return ExpectedFields(t);
}

hw::MatchParams ExpectedFields(const sim::TunnelFrameSpec& t) {
  MatchBuilder b;
  b.SourcePort(0xffff);
  const FrameSpec o = EffectiveOuter(t);
  const Encap kind = t.tunnel.kind;
  if (kind == Encap::kMpls) {
    if (!StateL2(b, kOuter, o, t.tunnel.mpls_ethertype)) return *b.Build();
    StateInner(b, t.inner, StateTunnel(b, t));
    StateTunnelWords(b, TunnelBytes(t));
    return *b.Build();
  }
  if (!StateL2(b, kOuter, o, FrameEthertype(o)) || o.l3 == L3Kind::kNone) return *b.Build();
  StateL3(b, kOuter, o);
  if (IsFragmented(o)) return *b.Build();  // no tunnel in a fragment
  if (kind == Encap::kNone) {
    StateFillerTunnel(b, o);
    return *b.Build();
  }
  const Inner inner = StateTunnel(b, t);
  const bool recognised = !(kind == Encap::kVxlanGpe && (t.tunnel.gpe_flags & 0x30));
  if (recognised && kind != Encap::kRoceV2) StateTunnelWords(b, TunnelBytes(t));
  StateInner(b, t.inner, inner);
  return *b.Build();
}

}  // namespace drsim::testing
