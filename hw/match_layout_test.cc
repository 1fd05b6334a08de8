#include "hw/match_layout.h"

#include <set>
#include <string>

#include "gtest/gtest.h"

namespace drsim::hw {
namespace {

size_t AbsByte(Field f) { return Info(f).abs_bit() / 8; }

// Spot checks against the reference's field table (section 2.1): absolute byte, width.
TEST(MatchLayoutTest, OffsetsMatchTheReference) {
  EXPECT_EQ(AbsByte(Field::kOuterSmac47_16), 0u);
  EXPECT_EQ(AbsByte(Field::kOuterEthertype), 6u);
  EXPECT_EQ(AbsByte(Field::kOuterDmac15_0), 12u);
  EXPECT_EQ(Info(Field::kOuterFirstVid).abs_bit(), 0x74u);
  EXPECT_EQ(Info(Field::kOuterIpVersion).abs_bit(), 0x93u);
  EXPECT_EQ(Info(Field::kOuterIpVersion).width, 4);
  EXPECT_EQ(Info(Field::kOuterTcpFlags).width, 9);
  EXPECT_EQ(AbsByte(Field::kOuterTcpDport), 22u);
  EXPECT_EQ(AbsByte(Field::kOuterUdpSport), 28u);
  EXPECT_EQ(AbsByte(Field::kOuterSrcIp31_0), 44u);
  EXPECT_EQ(AbsByte(Field::kOuterDstIp31_0), 60u);
  EXPECT_EQ(AbsByte(Field::kSourcePort), 70u);
  EXPECT_EQ(AbsByte(Field::kGreKeyL), 83u);
  EXPECT_EQ(AbsByte(Field::kVxlanVni), 84u);
  EXPECT_EQ(AbsByte(Field::kBthDstQp), 105u);
  EXPECT_EQ(AbsByte(Field::kOuterEspSpi), 112u);
  EXPECT_EQ(AbsByte(Field::kInnerSmac47_16), 128u);
  EXPECT_EQ(AbsByte(Field::kInnerDstIp31_0), 188u);
  EXPECT_EQ(AbsByte(Field::kOuterFirstMplsOverUdpTtl), 207u);
  EXPECT_EQ(AbsByte(Field::kMetadataRegC7), 208u);
  EXPECT_EQ(AbsByte(Field::kMetadataRegC0), 236u);
  EXPECT_EQ(AbsByte(Field::kMetadataRegA), 240u);
  EXPECT_EQ(AbsByte(Field::kOuterVxlanGpeVni), 273u);
  EXPECT_EQ(AbsByte(Field::kGtpuDw0), 312u);
  EXPECT_EQ(AbsByte(Field::kProgSampleFieldId7), 380u);
  EXPECT_EQ(AbsByte(Field::kTunnelHeader3), 412u);
}

TEST(MatchLayoutTest, FieldsDoNotOverlapAndStayInsideOneWord) {
  std::set<size_t> used;
  for (const FieldInfo& fi : AllFields()) {
    ASSERT_GE(fi.width, 1) << fi.name;
    ASSERT_LE(fi.width, 32) << fi.name;
    ASSERT_LE(fi.bit_offset + fi.width, kSectionBytes * 8) << fi.name;
    ASSERT_EQ(fi.abs_bit() / 32, (fi.abs_bit() + fi.width - 1) / 32) << fi.name << " crosses a word";
    for (size_t b = 0; b < fi.width; ++b) {
      ASSERT_TRUE(used.insert(fi.abs_bit() + b).second) << fi.name << " overlaps at bit " << b;
    }
  }
}

TEST(MatchLayoutTest, NamesAreUniqueAndFindable) {
  std::set<std::string> names;
  for (size_t i = 0; i < kNumFields; ++i) {
    const FieldInfo& fi = kFieldTable[i];
    EXPECT_TRUE(names.insert(std::string(fi.name)).second) << fi.name;
    ASSERT_TRUE(FieldByName(fi.name).has_value()) << fi.name;
    EXPECT_EQ(*FieldByName(fi.name), FieldAt(i));
    EXPECT_EQ(fi.name.substr(0, fi.name.find('.')), SectionName(fi.section)) << fi.name;
  }
  EXPECT_FALSE(FieldByName("outer.no_such_field").has_value());
}

TEST(MatchLayoutTest, GetAndSetAreBigEndianMsbFirst) {
  uint8_t buf[kMatchParamBytes] = {};
  SetField(buf, Field::kOuterIpVersion, 4);  // bits 0x93..0x96: byte 18 bit 4..1
  EXPECT_EQ(buf[18], 0x08);
  SetField(buf, Field::kOuterTcpFlags, 0x1ff);
  EXPECT_EQ(GetField(buf, Field::kOuterIpVersion), 4u);
  EXPECT_EQ(GetField(buf, Field::kOuterTcpFlags), 0x1ffu);
  EXPECT_EQ(buf[18], 0x09);
  EXPECT_EQ(buf[19], 0xff);
  SetField(buf, Field::kOuterTcpDport, 0x1234);
  EXPECT_EQ(buf[22], 0x12);
  EXPECT_EQ(buf[23], 0x34);
  SetField(buf, Field::kGreKeyH, 0xabcdef);
  SetField(buf, Field::kGreKeyL, 0x12);
  EXPECT_EQ(buf[80], 0xab);
  EXPECT_EQ(buf[83], 0x12);
  // Values wider than the field are truncated, neighbours untouched.
  SetField(buf, Field::kOuterIpVersion, 0xff);
  EXPECT_EQ(GetField(buf, Field::kOuterIpVersion), 0xfu);
  EXPECT_EQ(GetField(buf, Field::kOuterTcpFlags), 0x1ffu);
  EXPECT_EQ(GetField(buf, Field::kOuterFrag), 0u);
}

TEST(MatchLayoutTest, BitOwnerNamesFieldsAndReservedRuns) {
  EXPECT_EQ(BitOwnerName(Info(Field::kOuterTcpDport).abs_bit() + 3), "outer.tcp_dport");
  // Outer bits 0xc0..0xcf are reserved (between udp... and ipv4_ihl): PRM calls them reserved_at_c0.
  EXPECT_EQ(BitOwnerName(0xc5), "outer.reserved_at_c0");
  // misc5 bytes 416.. are reserved after tunnel_header_3.
  EXPECT_EQ(BitOwnerName(416 * 8 + 7), "misc5.reserved_at_100");
  EXPECT_FALSE(FieldAtBit(kMatchParamBytes * 8).has_value());
}

}  // namespace
}  // namespace drsim::hw
