#include "sim/rss.h"

#include <vector>

#include "gtest/gtest.h"
#include "sim/frame_builder.h"

namespace drsim::sim {
namespace {

std::vector<uint8_t> Udp(uint32_t src, uint16_t sport) {
  FrameSpec s;
  s.protocol = kIpProtoUdp;
  s.ipv4_src = {src};
  s.sport = sport;
  return BuildFrame(s);
}

TEST(RssTest, DefaultFieldsFollowTheTrafficType) {
  RssHeaderFields f;
  f.ip_version = 4;
  f.ip_protocol = 17;
  EXPECT_EQ(DefaultRssFields(f), uint64_t{IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 |
                                          IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP});
  f.ip_version = 6;
  f.ip_protocol = 6;
  EXPECT_EQ(DefaultRssFields(f), uint64_t{IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6 |
                                          IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP});
  f.ip_protocol = 1;
  EXPECT_EQ(DefaultRssFields(f), uint64_t{IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6});
  f.ip_version = 0;
  EXPECT_EQ(DefaultRssFields(f), 0u);
}

// The share of a frame is its Toeplitz hash modulo the workers: computed here from the specification's
// input for the same five-tuple.
TEST(RssTest, SpreadsByTheToeplitzHashOfTheFiveTuple) {
  std::vector<std::vector<uint8_t>> frames;
  for (uint16_t i = 0; i < 64; ++i) frames.push_back(Udp(0x0a000000 + i, 1000 + i));
  frames.push_back({0x01, 0x02});  // a runt: no IP, worker 0
  std::vector<absl::Span<const uint8_t>> views(frames.begin(), frames.end());
  std::vector<std::vector<size_t>> shares = SpreadByRss(views, 3);
  ASSERT_EQ(shares.size(), 3u);
  size_t total = 0;
  for (size_t w = 0; w < shares.size(); ++w) {
    total += shares[w].size();
    EXPECT_FALSE(shares[w].empty()) << "worker " << w;
    for (size_t k = 1; k < shares[w].size(); ++k) EXPECT_LT(shares[w][k - 1], shares[w][k]);  // in order
    for (size_t i : shares[w]) {
      if (i == 64) {
        EXPECT_EQ(w, 0u);
        continue;
      }
      const FrameSpec def;
      const uint32_t hash =
          *ToeplitzHash(RssInputIpv4L4({0x0a000000u + static_cast<uint32_t>(i)}, def.ipv4_dst,
                                       static_cast<uint16_t>(1000 + i), def.dport));
      EXPECT_EQ(hash % 3, w) << "frame " << i;
    }
  }
  EXPECT_EQ(total, frames.size());
}

}  // namespace
}  // namespace drsim::sim
