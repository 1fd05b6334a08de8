#include "classbench/header_frame.h"

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

}  // namespace drsim::classbench
