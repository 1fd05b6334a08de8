#include "sim/roce_entropy.h"

#include <infiniband/verbs.h>

#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace drsim::sim {
namespace {

// IB_ROCE_UDP_ENCAP_VALID_PORT_MIN..MAX; the maximum, 0xFFFF, holds by the type.
bool InRange(uint16_t port) { return port >= IB_ROCE_UDP_ENCAP_VALID_PORT_MIN; }

TEST(RoceEntropyTest, CmServiceHandComputed) {
  // 0x1234 ^ 0xABCD = 0xB9F9; | 0xC000 = 0xF9F9.
  EXPECT_EQ(RoceCmUdpSport(0x1234, 0xABCD), 0xF9F9);
  // 18515 = 0x4853; 0x4853 ^ 0x0001 = 0x4852; | 0xC000 = 0xC852.
  EXPECT_EQ(RoceCmUdpSport(18515, 1), 0xC852);
  // Equal ports XOR to 0: the bottom of the range.
  EXPECT_EQ(RoceCmUdpSport(4791, 4791), 0xC000);
  EXPECT_EQ(RoceCmUdpSport(0xFFFF, 0x0000), 0xFFFF);
}

TEST(RoceEntropyTest, FoldXorsTheTopByteIntoTheBottomByte) {
  EXPECT_EQ(*FoldQpn(0x123456), 0x3444);  // 0x3456 ^ 0x12
  EXPECT_EQ(*FoldQpn(0xABCDEF), 0xCD44);  // 0xCDEF ^ 0xAB
  EXPECT_EQ(*FoldQpn(0x00BEEF), 0xBEEF);  // QPNs under 2^16 fold to themselves
  EXPECT_EQ(*FoldQpn(0xFFFFFF), 0xFF00);
  absl::StatusOr<uint16_t> bad = FoldQpn(0x1000000);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("0x1000000"), absl::string_view::npos) << bad.status();
}

TEST(RoceEntropyTest, RcHandComputed) {
  // Fold 0x3444 ^ Fold 0xCD44 = 0xF900, already in range.
  EXPECT_EQ(*RoceRcUdpSport(0x123456, 0xABCDEF), 0xF900);
  // 0x0011 ^ 0x0022 = 0x0033; | 0xC000 = 0xC033.
  EXPECT_EQ(*RoceRcUdpSport(0x11, 0x22), 0xC033);
  // Same QPN on both ends (two hosts): the folded source alone, not 0.
  EXPECT_EQ(*RoceRcUdpSport(0x000100, 0x000100), 0xC100);
  EXPECT_EQ(*RoceRcUdpSport(0x123456, 0x123456), 0xF444);  // 0x3444 | 0xC000
  // Different QPNs whose folds are equal do XOR to 0 (the formula as written).
  EXPECT_EQ(*RoceRcUdpSport(0x010002, 0x000003), 0xC000);
}

TEST(RoceEntropyTest, UdHandComputed) {
  EXPECT_EQ(*RoceUdUdpSport(0x12, 0x34), 0xC026);               // 0x12 ^ 0x34 = 0x26
  EXPECT_EQ(*RoceUdUdpSport(0x123456, 0xABCDEF), 0xF900);       // as RC
  EXPECT_EQ(*RoceUdUdpSport(0x000777, 0x000777), 0xC777);       // same QPN: folded source
  EXPECT_EQ(*RoceUdUdpSport(0x12, kMulticastQpn), 0xC012);      // multicast: folded source
  EXPECT_EQ(*RoceUdUdpSport(0x123456, kMulticastQpn), 0xF444);  // not 0x3444 ^ 0xFF00
}

TEST(RoceEntropyTest, UdUsesOrNotTheRfcsAnd) {
  // With the mail's literal "AND 0xC000" these would be 0x0000 and 0x4000: outside the ephemeral range.
  EXPECT_EQ(0x0033 & 0xC000, 0x0000);
  EXPECT_EQ(*RoceUdUdpSport(0x11, 0x22), 0xC033);
  EXPECT_EQ((0x1234 ^ 0x0000) & 0xC000, 0x0000);
  EXPECT_EQ(*RoceUdUdpSport(0x001234, 0x000000), 0xD234);
}

TEST(RoceEntropyTest, BadQpnsNameTheCulprit) {
  struct Case {
    absl::StatusOr<uint16_t> result;
    const char* expect;
  };
  const Case cases[] = {
      {RoceRcUdpSport(0x1000000, 1), "RC source QPN 0x1000000 does not fit 24 bits"},
      {RoceRcUdpSport(1, 0xFFFFFFFF), "RC destination QPN 0xffffffff does not fit 24 bits"},
      {RoceRcUdpSport(1, kMulticastQpn), "RC destination QPN 0xffffff is the multicast QPN"},
      {RoceRcUdpSport(kMulticastQpn, 1), "RC source QPN 0xffffff is the multicast QPN"},
      {RoceUdUdpSport(kMulticastQpn, 1), "UD source QPN 0xffffff is the multicast QPN"},
      {RoceUdUdpSport(2, 0x1000000), "UD destination QPN 0x1000000 does not fit 24 bits"},
  };
  for (const Case& c : cases) {
    ASSERT_FALSE(c.result.ok()) << c.expect;
    EXPECT_EQ(c.result.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(c.result.status().message().find(c.expect), absl::string_view::npos) << c.result.status();
  }
}

TEST(RoceEntropyTest, SymmetricAndInRangeOverRandomInputs) {
  std::mt19937 rng(2024);
  std::uniform_int_distribution<uint32_t> qpn(0, kMaxQpn - 1);  // not the multicast QPN
  for (int i = 0; i < 100000; ++i) {
    const uint32_t a = qpn(rng), b = i % 10 == 0 ? a : qpn(rng);
    const uint16_t rc = *RoceRcUdpSport(a, b), ud = *RoceUdUdpSport(a, b);
    ASSERT_EQ(rc, *RoceRcUdpSport(b, a)) << a << " " << b;
    ASSERT_EQ(ud, *RoceUdUdpSport(b, a)) << a << " " << b;
    ASSERT_EQ(rc, ud);  // the two QP types share the formula for unicast
    ASSERT_TRUE(InRange(rc)) << rc;
    ASSERT_TRUE(InRange(*RoceUdUdpSport(a, kMulticastQpn)));
    const uint16_t p = static_cast<uint16_t>(rng()), q = static_cast<uint16_t>(rng());
    ASSERT_EQ(RoceCmUdpSport(p, q), RoceCmUdpSport(q, p));
    ASSERT_TRUE(InRange(RoceCmUdpSport(p, q)));
  }
}

TEST(RoceEntropyTest, EveryPortOfTheRangeIsReachable) {
  // The low 14 bits carry the entropy: every port 0xC000..0xFFFF comes from some QP pair.
  std::vector<bool> seen(0x4000);
  for (uint32_t d = 0; d < 0x4000; ++d) seen[*RoceRcUdpSport(0x4000, 0x4000 | d) & 0x3FFF] = true;
  for (bool s : seen) ASSERT_TRUE(s);
}

}  // namespace
}  // namespace drsim::sim
