// The plain UDP frame many tests send: IPv4 10.0.0.1 -> 10.0.0.2, the given ports and `payload` bytes of
// payload, built by sim::BuildFrame.
#ifndef DRSIM_TESTS_UDP_FRAME_H_
#define DRSIM_TESTS_UDP_FRAME_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "hw/net_addr.h"
#include "sim/frame_builder.h"

namespace drsim::tests {

inline std::vector<uint8_t> UdpFrame(uint16_t sport, uint16_t dport, size_t payload) {
  sim::FrameSpec s;
  s.ipv4_src = *hw::Ipv4Address::Parse("10.0.0.1");
  s.ipv4_dst = *hw::Ipv4Address::Parse("10.0.0.2");
  s.protocol = sim::kIpProtoUdp;
  s.sport = sport;
  s.dport = dport;
  s.payload_len = payload;
  return sim::BuildFrame(s);
}

}  // namespace drsim::tests

#endif  // DRSIM_TESTS_UDP_FRAME_H_
