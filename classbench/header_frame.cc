#include "classbench/header_frame.h"

#include "hw/match_layout.h"
#include "sim/frame_builder.h"

namespace drsim::classbench {

Header AsParsed(Header h) {
  if (h.proto != sim::kIpProtoTcp && h.proto != sim::kIpProtoUdp) h.sport = h.dport = 0;
  return h;
}

std::vector<uint8_t> FrameOf(const Header& header) {
  const Header h = AsParsed(header);
  sim::FrameSpec f;
  f.ipv4_src.value = h.src;
  f.ipv4_dst.value = h.dst;
  f.protocol = h.proto;
  f.sport = h.sport;
  f.dport = h.dport;
  return sim::BuildFrame(f);
}

void FillHeaderVector(const Header& header, uint8_t* hv) {
  using hw::Field;
  const Header h = AsParsed(header);
  const bool udp = h.proto == sim::kIpProtoUdp;
  hw::SetField(hv, Field::kOuterIpVersion, 4);
  hw::SetField(hv, Field::kOuterSrcIp31_0, h.src);
  hw::SetField(hv, Field::kOuterDstIp31_0, h.dst);
  hw::SetField(hv, Field::kOuterIpProtocol, h.proto);
  hw::SetField(hv, Field::kOuterTcpSport, udp ? 0 : h.sport);
  hw::SetField(hv, Field::kOuterTcpDport, udp ? 0 : h.dport);
  hw::SetField(hv, Field::kOuterUdpSport, udp ? h.sport : 0);
  hw::SetField(hv, Field::kOuterUdpDport, udp ? h.dport : 0);
}

}  // namespace drsim::classbench
