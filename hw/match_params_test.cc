#include "hw/match_params.h"

#include <cstring>

#include "gtest/gtest.h"

namespace drsim::hw {
namespace {

TEST(MatchParamsTest, DefaultsToFullZeroBuffer) {
  MatchParams p;
  EXPECT_EQ(p.match_sz(), kMatchParamBytes);
  EXPECT_EQ(p.criteria(), 0);
  EXPECT_EQ(reinterpret_cast<const uint8_t*>(p.get()->match_buf), p.bytes());
}

TEST(MatchParamsTest, CopiesAreDeep) {
  MatchParams a;
  a.bytes()[5] = 7;
  MatchParams b = a;
  b.bytes()[5] = 9;
  EXPECT_EQ(a.bytes()[5], 7);
  EXPECT_EQ(b.bytes()[5], 9);
}

TEST(MatchBuilderTest, MacsLandAsContiguousNetworkOrderBytes) {
  MacAddress mac = *MacAddress::Parse("00:11:22:aa:bb:cc");
  absl::StatusOr<MatchParams> p = MatchBuilder().Smac(kOuter, mac).Dmac(kInner, mac).Build();
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(std::memcmp(p->bytes() + 0, mac.bytes.data(), 6), 0);
  EXPECT_EQ(std::memcmp(p->bytes() + 128 + 8, mac.bytes.data(), 6), 0);
  EXPECT_EQ(p->criteria(), kCriteriaOuter | kCriteriaInner);
}

TEST(MatchBuilderTest, TypedSettersWriteTheirFields) {
  Ipv6Address v6 = *Ipv6Address::Parse("2001:db8::1:2");
  absl::StatusOr<MatchParams> p = MatchBuilder()
                                      .IpVersion(kOuter, 6)
                                      .Ipv6Src(kOuter, v6)
                                      .TcpDport(kOuter, 443)
                                      .GreKey(0x11223344)
                                      .RegC(0, 0xdead)
                                      .RegC(7, 1)
                                      .VxlanVni(0xabcdef)
                                      .Build();
  ASSERT_TRUE(p.ok()) << p.status();
  const uint8_t* b = p->bytes();
  EXPECT_EQ(std::memcmp(b + 32, v6.bytes.data(), 16), 0);
  EXPECT_EQ(GetField(b, Field::kOuterIpVersion), 6u);
  EXPECT_EQ(GetField(b, Field::kOuterTcpDport), 443u);
  EXPECT_EQ(GetField(b, Field::kGreKeyH), 0x112233u);
  EXPECT_EQ(GetField(b, Field::kGreKeyL), 0x44u);
  EXPECT_EQ(GetField(b, Field::kMetadataRegC0), 0xdeadu);
  EXPECT_EQ(GetField(b, Field::kMetadataRegC7), 1u);
  EXPECT_EQ(GetField(b, Field::kVxlanVni), 0xabcdefu);
  EXPECT_EQ(p->criteria(), kCriteriaOuter | kCriteriaMisc | kCriteriaMisc2);
}

TEST(MatchBuilderTest, BadInputIsReportedByBuildNamingTheField) {
  absl::StatusOr<MatchParams> p = MatchBuilder().IpVersion(kOuter, 4).VxlanVni(1u << 24).Build();
  ASSERT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("misc.vxlan_vni"), absl::string_view::npos) << p.status();

  p = MatchBuilder().SetByName("outer.tcp_port", 1).Build();
  EXPECT_NE(p.status().message().find("outer.tcp_port"), absl::string_view::npos) << p.status();

  p = MatchBuilder().RegC(8, 1).Build();
  EXPECT_NE(p.status().message().find("metadata_reg_c_8"), absl::string_view::npos) << p.status();
}

TEST(MatchBuilderTest, SetByNameAndAllOnes) {
  absl::StatusOr<MatchParams> p =
      MatchBuilder().SetByName("misc.source_port", 0xffff).SetAllOnes(Field::kInnerFirstVid).Build();
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(GetField(p->bytes(), Field::kSourcePort), 0xffffu);
  EXPECT_EQ(GetField(p->bytes(), Field::kInnerFirstVid), 0xfffu);
}

TEST(NetAddrTest, ParseAndPrint) {
  EXPECT_EQ(MacAddress::Parse("00-11-22-33-44-55")->ToString(), "00:11:22:33:44:55");
  EXPECT_FALSE(MacAddress::Parse("00:11:22:33:44").ok());
  EXPECT_FALSE(MacAddress::Parse("00:11:22:33:44:zz").ok());
  EXPECT_EQ(Ipv4Address::Parse("10.1.2.3")->value, 0x0a010203u);
  EXPECT_FALSE(Ipv4Address::Parse("10.1.2").ok());
  EXPECT_EQ(Ipv4Address::PrefixMask(24).value, 0xffffff00u);
  EXPECT_EQ(Ipv4Address::PrefixMask(0).value, 0u);
  EXPECT_EQ(Ipv6Address::Parse("2001:db8::1")->ToString(), "2001:db8::1");
  EXPECT_EQ(Ipv6Address::PrefixMask(36).ToString(), "ffff:ffff:f000::");
  EXPECT_FALSE(Ipv6Address::Parse("2001:::1").ok());
}

}  // namespace
}  // namespace drsim::hw
