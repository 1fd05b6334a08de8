#include "sim/parser_coverage.h"

#include "gtest/gtest.h"
#include "hw/match_layout.h"
#include "hw/parsed_fields.h"

namespace drsim::sim {
namespace {

using hw::Field;

TEST(SoftwareParserFields, NamesWhatThePacketParserFills) {
  const hw::ParsedFields& parsed = SoftwareParserFields();
  EXPECT_EQ(parsed.parser(), "software NIC");
  EXPECT_NE(parsed.limits().find("one tunnel level"), std::string::npos);
  // One tunnel level, inner headers, MPLS outside the inner frame, RoCE BTH, registers, raw tunnel words.
  for (Field f :
       {Field::kOuterSrcIp31_0, Field::kInnerDstIp31_0, Field::kVxlanVni, Field::kOuterFirstMplsOverGreLabel,
        Field::kBthDstQp, Field::kMetadataRegC0, Field::kTunnelHeader1, Field::kOuterSecondVid}) {
    EXPECT_TRUE(parsed.Contains(f)) << hw::Info(f).name;
  }
  // A second tunnel level, the validity bits, ESP, vhca/EMD, programmable samples, MACsec.
  for (Field f : {Field::kInnerFirstMplsLabel, Field::kOuterL4Ok, Field::kInnerIpv4ChecksumOk,
                  Field::kOuterEspSpi, Field::kSourceVhcaPort, Field::kOuterEmdTag}) {
    EXPECT_FALSE(parsed.Contains(f)) << hw::Info(f).name;
  }
  for (size_t i = 0; i < hw::kNumFields; ++i) {
    const Field f = hw::FieldAt(i);
    if (hw::Info(f).section == hw::Section::kMisc4) {
      EXPECT_FALSE(parsed.Contains(f)) << hw::Info(f).name;
    }
  }
}

}  // namespace
}  // namespace drsim::sim
