#include "sim/checksum.h"

#include <vector>

#include "gtest/gtest.h"

namespace drsim::sim {
namespace {

TEST(ChecksumTest, Rfc1071Example) {
  // RFC 1071 section 3: 00 01 f2 03 f4 f5 f6 f7 sums to 0xddf2 (folded).
  const uint8_t data[] = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
  EXPECT_EQ(ChecksumAdd(data, sizeof data), 0xddf2u);
  EXPECT_EQ(ChecksumFinish(ChecksumAdd(data, sizeof data)), 0x220d);
}

TEST(ChecksumTest, KnownIpv4Header) {
  // A classic example header; its checksum field (bytes 10-11) holds 0xb861.
  std::vector<uint8_t> ip = {0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
                             0x00, 0x00, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7};
  EXPECT_EQ(ChecksumFinish(ChecksumAdd(ip.data(), ip.size())), 0xb861);
}

TEST(ChecksumTest, IncrementalUpdateMatchesRecomputation) {
  std::vector<uint8_t> d = {0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x11, 0x22};
  const uint16_t before = ChecksumFinish(ChecksumAdd(d.data(), d.size()));
  const uint32_t old_words = ChecksumAdd(d.data() + 2, 4);
  d[2] = 0xff;
  d[5] = 0x01;
  const uint32_t new_words = ChecksumAdd(d.data() + 2, 4);
  EXPECT_EQ(ChecksumUpdate(before, old_words, new_words), ChecksumFinish(ChecksumAdd(d.data(), d.size())));
}

}  // namespace
}  // namespace drsim::sim
