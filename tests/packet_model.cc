#include "tests/packet_model.h"

namespace drsim::testing {

using hw::Field;
using hw::kOuter;

hw::MatchParams ExpectedFields(const sim::FrameSpec& s) {
  hw::MatchBuilder b;
  b.SourcePort(0xffff).Smac(kOuter, s.smac).Dmac(kOuter, s.dmac);
  // At most two tags are parsed; the first fills first_*, the second misc.outer_second_*.
  for (size_t i = 0; i < s.vlans.size() && i < 2; ++i) {
    const sim::VlanTag& t = s.vlans[i];
    const bool svlan = t.tpid == 0x88a8;
    if (i == 0) {
      (svlan ? b.SvlanTag(kOuter, 1) : b.CvlanTag(kOuter, 1));
      b.FirstPrio(kOuter, t.tci >> 13).FirstCfi(kOuter, (t.tci >> 12) & 1).FirstVid(kOuter, t.tci & 0xfff);
    } else {
      b.Set(svlan ? Field::kOuterSecondSvlanTag : Field::kOuterSecondCvlanTag, 1);
      b.Set(Field::kOuterSecondPrio, t.tci >> 13).Set(Field::kOuterSecondCfi, (t.tci >> 12) & 1);
      b.SecondVid(kOuter, t.tci & 0xfff);
    }
  }
  if (s.vlans.size() > 2) {
    b.Ethertype(kOuter, s.vlans[2].tpid);  // a third tag is not parsed: its TPID is the ethertype
    return *b.Build();
  }
  if (s.l3 == sim::L3Kind::kNone) {
    b.Ethertype(kOuter, s.ethertype);
    return *b.Build();
  }
  const bool v4 = s.l3 == sim::L3Kind::kIpv4;
  b.Ethertype(kOuter, v4 ? 0x0800 : 0x86dd).IpVersion(kOuter, v4 ? 4 : 6);
  b.Dscp(kOuter, s.dscp).Ecn(kOuter, s.ecn).TtlHoplimit(kOuter, s.ttl).IpProtocol(kOuter, s.protocol);
  bool fragmented;
  if (v4) {
    b.Ihl(kOuter, 5 + s.ipv4_option_words).Ipv4Src(kOuter, s.ipv4_src).Ipv4Dst(kOuter, s.ipv4_dst);
    fragmented = s.more_fragments || s.fragment_offset != 0;
  } else {
    b.Ipv6Src(kOuter, s.ipv6_src).Ipv6Dst(kOuter, s.ipv6_dst).Ipv6FlowLabel(kOuter, s.flow_label);
    fragmented = false;
    for (uint8_t ext : s.ipv6_extensions) fragmented |= ext == 44;
  }
  if (fragmented) b.Frag(kOuter, 1);
  if (s.fragment_offset != 0) return *b.Build();  // later fragments carry no L4 header
  switch (s.protocol) {
    case sim::kIpProtoTcp:
      b.TcpSport(kOuter, s.sport).TcpDport(kOuter, s.dport).TcpFlags(kOuter, s.tcp_flags);
      b.Set(Field::kOuterTcpSeqNum, s.seq).Set(Field::kOuterTcpAckNum, s.ack);
      break;
    case sim::kIpProtoUdp:
      b.UdpSport(kOuter, s.sport).UdpDport(kOuter, s.dport);
      break;
    case sim::kIpProtoIcmp:
      b.IcmpType(s.icmp_type).IcmpCode(s.icmp_code).Set(Field::kIcmpHeaderData, s.icmp_data);
      break;
    case sim::kIpProtoIcmpv6:
      b.Icmpv6Type(s.icmp_type).Icmpv6Code(s.icmp_code).Set(Field::kIcmpv6HeaderData, s.icmp_data);
      break;
    default:
      break;
  }
  return *b.Build();
}

}  // namespace drsim::testing
