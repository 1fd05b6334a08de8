#include "sim/rss.h"

#include <cstring>

#include "hw/action_program.h"
#include "hw/match_params.h"
#include "sim/packet_parser.h"

namespace drsim::sim {

RssHeaderFields RssFieldsOf(const hw::HeaderVector& hv, bool inner) {
  using hw::Field;
  const hw::Headers stack = inner ? hw::kInner : hw::kOuter;
  auto get = [&](Field outer) { return hw::GetField(hv.bytes, hw::HeaderField(stack, outer)); };
  auto bytes = [&](Field outer) { return hv.bytes + hw::Info(hw::HeaderField(stack, outer)).abs_bit() / 8; };
  RssHeaderFields f;
  f.ip_version = static_cast<int>(get(Field::kOuterIpVersion));
  f.ipv4_src.value = get(Field::kOuterSrcIp31_0);
  f.ipv4_dst.value = get(Field::kOuterDstIp31_0);
  std::memcpy(f.ipv6_src.bytes.data(), bytes(Field::kOuterSrcIp127_96), 16);
  std::memcpy(f.ipv6_dst.bytes.data(), bytes(Field::kOuterDstIp127_96), 16);
  f.ip_protocol = static_cast<uint8_t>(get(Field::kOuterIpProtocol));
  const bool tcp = f.ip_protocol == 6;
  f.sport = static_cast<uint16_t>(get(tcp ? Field::kOuterTcpSport : Field::kOuterUdpSport));
  f.dport = static_cast<uint16_t>(get(tcp ? Field::kOuterTcpDport : Field::kOuterUdpDport));
  return f;
}

uint64_t DefaultRssFields(const RssHeaderFields& f) {
  uint64_t fields;
  if (f.ip_version == 4) {
    fields = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4;
  } else if (f.ip_version == 6) {
    fields = IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6;
  } else {
    return 0;
  }
  if (f.ip_protocol == 6) fields |= IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP;
  if (f.ip_protocol == 17) fields |= IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP;
  return fields;
}

std::vector<std::vector<size_t>> SpreadByRss(absl::Span<const absl::Span<const uint8_t>> frames,
                                             size_t workers, absl::Span<const uint8_t> key) {
  if (workers == 0) workers = 1;
  std::vector<std::vector<size_t>> shares(workers);
  hw::HeaderVector hv;
  for (size_t i = 0; i < frames.size(); ++i) {
    ParsePacket(frames[i].data(), frames[i].size(), hw::kWireVport, &hv);
    const RssHeaderFields f = RssFieldsOf(hv, /*inner=*/false);
    const uint32_t hash = RssHash(f, DefaultRssFields(f), key).value_or(0);
    shares[hash % workers].push_back(i);
  }
  return shares;
}

}  // namespace drsim::sim
