#include "sim/toeplitz.h"

#include <infiniband/verbs.h>

#include <random>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace drsim::sim {
namespace {

// Microsoft's RSS verification suite ("Verifying the RSS Hash Calculation"; the same table is in Intel's
// 82599 datasheet, section 7.1.2.8.3, and in DPDK's app/test/test_thash.c): the hash of each connection
// under kMicrosoftRssKey, addresses only and with the ports.
struct RssVector {
  const char* src;
  uint16_t sport;
  const char* dst;
  uint16_t dport;
  uint32_t hash_ip;
  uint32_t hash_ip_ports;
};

constexpr RssVector kRssVectors[] = {
    {"66.9.149.187", 2794, "161.142.100.80", 1766, 0x323e8fc2, 0x51ccc178},
    {"199.92.111.2", 14230, "65.69.140.83", 4739, 0xd718262a, 0xc626b0ea},
    {"24.19.198.95", 12898, "12.22.207.184", 38024, 0xd2d0a5de, 0x5c2b394a},
    {"38.27.205.30", 48228, "209.142.163.6", 2217, 0x82989176, 0xafc7327f},
    {"153.39.163.191", 44251, "202.188.127.2", 1303, 0x5d1809c5, 0x10e828a2},
};

constexpr RssVector kV6Vectors[] = {
    {"3ffe:2501:200:1fff::7", 2794, "3ffe:2501:200:3::1", 1766, 0x2cc18cd5, 0x40207d3d},
    {"3ffe:501:8::260:97ff:fe40:efab", 14230, "ff02::1", 4739, 0x0f0c461c, 0xdde51bbf},
    {"3ffe:1900:4545:3:200:f8ff:fe21:67cf", 44251, "fe80::200:f8ff:fe21:67cf", 38024, 0x4b61e985, 0x02d1feef},
};

constexpr uint64_t kIpv4 = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4;
constexpr uint64_t kIpv6 = IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6;
constexpr uint64_t kTcp = IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP;
constexpr uint64_t kUdp = IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP;

RssHeaderFields V4Fields(const RssVector& v, uint8_t protocol) {
  RssHeaderFields f;
  f.ip_version = 4;
  f.ipv4_src = *hw::Ipv4Address::Parse(v.src);
  f.ipv4_dst = *hw::Ipv4Address::Parse(v.dst);
  f.ip_protocol = protocol;
  f.sport = v.sport;
  f.dport = v.dport;
  return f;
}

RssHeaderFields V6Fields(const RssVector& v, uint8_t protocol) {
  RssHeaderFields f;
  f.ip_version = 6;
  f.ipv6_src = *hw::Ipv6Address::Parse(v.src);
  f.ipv6_dst = *hw::Ipv6Address::Parse(v.dst);
  f.ip_protocol = protocol;
  f.sport = v.sport;
  f.dport = v.dport;
  return f;
}

TEST(ToeplitzTest, MicrosoftVerificationSuiteIpv4) {
  for (const RssVector& v : kRssVectors) {
    SCOPED_TRACE(v.src);
    const hw::Ipv4Address src = *hw::Ipv4Address::Parse(v.src), dst = *hw::Ipv4Address::Parse(v.dst);
    EXPECT_EQ(*ToeplitzHash(RssInputIpv4(src, dst)), v.hash_ip);
    EXPECT_EQ(*ToeplitzHash(RssInputIpv4L4(src, dst, v.sport, v.dport)), v.hash_ip_ports);
    // The same through the TIR field selection, TCP and UDP alike.
    EXPECT_EQ(*RssHash(V4Fields(v, 6), kIpv4), v.hash_ip);
    EXPECT_EQ(*RssHash(V4Fields(v, 6), kIpv4 | kTcp), v.hash_ip_ports);
    EXPECT_EQ(*RssHash(V4Fields(v, 17), kIpv4 | kUdp), v.hash_ip_ports);
  }
}

TEST(ToeplitzTest, MicrosoftVerificationSuiteIpv6) {
  for (const RssVector& v : kV6Vectors) {
    SCOPED_TRACE(v.src);
    const hw::Ipv6Address src = *hw::Ipv6Address::Parse(v.src), dst = *hw::Ipv6Address::Parse(v.dst);
    EXPECT_EQ(*ToeplitzHash(RssInputIpv6(src, dst)), v.hash_ip);
    EXPECT_EQ(*ToeplitzHash(RssInputIpv6L4(src, dst, v.sport, v.dport)), v.hash_ip_ports);
    EXPECT_EQ(*RssHash(V6Fields(v, 6), kIpv6), v.hash_ip);
    EXPECT_EQ(*RssHash(V6Fields(v, 17), kIpv6 | kUdp), v.hash_ip_ports);
  }
}

TEST(ToeplitzTest, InputsAreNetworkOrderConcatenations) {
  const std::vector<uint8_t> in = RssInputIpv4L4(*hw::Ipv4Address::Parse("10.1.2.3"),
                                                 *hw::Ipv4Address::Parse("10.4.5.6"), 0x1234, 0xabcd);
  EXPECT_EQ(in, (std::vector<uint8_t>{10, 1, 2, 3, 10, 4, 5, 6, 0x12, 0x34, 0xab, 0xcd}));
  EXPECT_EQ(RssInputIpv6L4({}, {}, 1, 2).size(), 36u);
}

TEST(ToeplitzTest, SingleBitsPickKeyWindows) {
  // Input bit k selects key bits k..k+31.
  const std::vector<uint8_t> key = {0x80, 0, 0, 0, 0x02, 0xff, 0xff, 0xff, 0xff};
  EXPECT_EQ(*ToeplitzHash(std::vector<uint8_t>{0x80}, key), 0x80000000u);
  EXPECT_EQ(*ToeplitzHash(std::vector<uint8_t>{0x01}, key), 0x00000001u);        // key bits 7..38: bit 38 set
  EXPECT_EQ(*ToeplitzHash(std::vector<uint8_t>{0x00, 0x80}, key), 0x00000002u);  // bits 8..39
  EXPECT_EQ(*ToeplitzHash(std::vector<uint8_t>{0x00, 0x00, 0x00, 0x00, 0x01}, key), 0x7fffffffu);  // 39..70
  EXPECT_EQ(*ToeplitzHash(std::vector<uint8_t>{0x81}, key), 0x80000001u);  // windows XOR
  EXPECT_EQ(*ToeplitzHash(std::vector<uint8_t>{}, key), 0u);
}

TEST(ToeplitzTest, KeyMustBeFourBytesLongerThanInput) {
  const std::vector<uint8_t> input(37, 1);
  absl::StatusOr<uint32_t> h = ToeplitzHash(input);
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(h.status().message().find("40 bytes"), absl::string_view::npos) << h.status();
  EXPECT_NE(h.status().message().find("37-byte"), absl::string_view::npos) << h.status();
  EXPECT_TRUE(ToeplitzHash(std::vector<uint8_t>(36, 1)).ok());
  // Longer keys are fine: the extra bytes only matter for longer inputs.
  std::vector<uint8_t> long_key(kMicrosoftRssKey.begin(), kMicrosoftRssKey.end());
  long_key.resize(52, 0x5a);
  EXPECT_EQ(*ToeplitzHash(RssInputIpv4L4(*hw::Ipv4Address::Parse("66.9.149.187"),
                                         *hw::Ipv4Address::Parse("161.142.100.80"), 2794, 1766),
                          long_key),
            0x51ccc178u);
  EXPECT_TRUE(ToeplitzHash(std::vector<uint8_t>(48, 1), long_key).ok());
  EXPECT_FALSE(ToeplitzHash(std::vector<uint8_t>{}, std::vector<uint8_t>(3)).ok());
}

TEST(ToeplitzTest, FieldSelectionLeavesOutUnselectedFields) {
  const RssHeaderFields f = V4Fields(kRssVectors[0], 17);
  EXPECT_EQ(*RssInput(f, IBV_RX_HASH_DST_IPV4 | IBV_RX_HASH_SRC_PORT_UDP),
            (std::vector<uint8_t>{161, 142, 100, 80, 2794 >> 8, 2794 & 0xff}));
  EXPECT_EQ(*RssInput(f, 0), std::vector<uint8_t>{});
  EXPECT_EQ(*RssHash(f, 0), 0u);
  // INNER names the header stack the fields came from; the input is the same.
  EXPECT_EQ(*RssInput(f, IBV_RX_HASH_DST_IPV4 | IBV_RX_HASH_INNER), *RssInput(f, IBV_RX_HASH_DST_IPV4));
}

TEST(ToeplitzTest, FieldSelectionErrorsNameTheCulprit) {
  const RssHeaderFields v4 = V4Fields(kRssVectors[0], 17);
  const RssHeaderFields v6 = V6Fields(kV6Vectors[0], 6);
  struct Case {
    const RssHeaderFields* packet;
    uint64_t fields;
    const char* expect;
  };
  const Case cases[] = {
      {&v4, kIpv4 | IBV_RX_HASH_IPSEC_SPI, "IBV_RX_HASH_IPSEC_SPI"},
      {&v4, IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV6, "both IPv4 and IPv6"},
      {&v4, IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_UDP, "both TCP and UDP"},
      {&v4, kIpv6, "packet is IPv4"},
      {&v6, kIpv4, "packet is IPv6"},
      {&v4, kTcp, "ip_protocol is 17"},
      {&v6, kUdp, "ip_protocol is 6"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<uint32_t> h = RssHash(*c.packet, c.fields);
    ASSERT_FALSE(h.ok()) << c.expect;
    EXPECT_EQ(h.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(h.status().message().find(c.expect), absl::string_view::npos) << h.status();
  }
  RssHeaderFields bad = v4;
  bad.ip_version = 5;
  EXPECT_FALSE(RssHash(bad, 0).ok());
}

TEST(ToeplitzTest, SymmetricTransformsFollowEthtool) {
  const RssHeaderFields f = V4Fields(kRssVectors[0], 6);
  // symmetric-or-xor: (src | dst, src ^ dst, sport | dport, sport ^ dport).
  const uint8_t s[4] = {66, 9, 149, 187}, d[4] = {161, 142, 100, 80};
  std::vector<uint8_t> or_xor, xor_xor;
  for (int i = 0; i < 4; ++i) or_xor.push_back(s[i] | d[i]);
  for (int i = 0; i < 4; ++i) or_xor.push_back(s[i] ^ d[i]);
  for (int i = 0; i < 4; ++i) xor_xor.push_back(s[i] ^ d[i]);
  xor_xor.insert(xor_xor.end(), xor_xor.begin(), xor_xor.end());
  const uint16_t sp = 2794, dp = 1766;
  for (uint16_t v : {static_cast<uint16_t>(sp | dp), static_cast<uint16_t>(sp ^ dp)}) {
    or_xor.push_back(v >> 8);
    or_xor.push_back(v & 0xff);
  }
  for (int i = 0; i < 2; ++i) {
    xor_xor.push_back((sp ^ dp) >> 8);
    xor_xor.push_back((sp ^ dp) & 0xff);
  }
  EXPECT_EQ(*RssInput(f, kIpv4 | kTcp, RssSymmetry::kOrXor), or_xor);
  EXPECT_EQ(*RssInput(f, kIpv4 | kTcp, RssSymmetry::kXor), xor_xor);
  EXPECT_EQ(*RssHash(f, kIpv4 | kTcp, kMicrosoftRssKey, RssSymmetry::kOrXor), *ToeplitzHash(or_xor));
}

TEST(ToeplitzTest, SymmetricHashesAgreeBothWays) {
  std::mt19937 rng(7);
  for (int i = 0; i < 1000; ++i) {
    RssHeaderFields f;
    f.ip_version = i % 2 ? 6 : 4;
    f.ip_protocol = i % 3 ? 17 : 6;
    f.ipv4_src.value = rng();
    f.ipv4_dst.value = rng();
    for (auto& b : f.ipv6_src.bytes) b = rng();
    for (auto& b : f.ipv6_dst.bytes) b = rng();
    f.sport = rng();
    f.dport = rng();
    RssHeaderFields r = f;
    std::swap(r.ipv4_src, r.ipv4_dst);
    std::swap(r.ipv6_src, r.ipv6_dst);
    std::swap(r.sport, r.dport);
    const uint64_t fields = (f.ip_version == 4 ? kIpv4 : kIpv6) | (f.ip_protocol == 6 ? kTcp : kUdp);
    for (RssSymmetry sym : {RssSymmetry::kXor, RssSymmetry::kOrXor}) {
      EXPECT_EQ(*RssHash(f, fields, kMicrosoftRssKey, sym), *RssHash(r, fields, kMicrosoftRssKey, sym));
    }
    // Without a symmetric transform the two directions differ (for these random flows).
    EXPECT_NE(*RssHash(f, fields), *RssHash(r, fields));
  }
}

TEST(ToeplitzTest, SymmetricNeedsBothHalvesOfAPair) {
  const RssHeaderFields f = V4Fields(kRssVectors[0], 6);
  absl::StatusOr<uint32_t> h = RssHash(f, IBV_RX_HASH_SRC_IPV4 | kTcp, kMicrosoftRssKey, RssSymmetry::kOrXor);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("IBV_RX_HASH_DST_IPV4 with IBV_RX_HASH_SRC_IPV4"),
            absl::string_view::npos)
      << h.status();
  EXPECT_TRUE(RssHash(f, IBV_RX_HASH_SRC_IPV4).ok());  // fine without symmetry
}

}  // namespace
}  // namespace drsim::sim
