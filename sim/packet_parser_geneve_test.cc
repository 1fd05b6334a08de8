// The packet parser on GENEVE options: option 0 is the option of the configured class and type, wherever
// it sits among the options (OVN's tunnel key behind other options), and nothing without a configured
// option; malformed and truncated option areas.
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "sim/frame_builder.h"
#include "sim/packet_parser.h"

namespace drsim::sim {
namespace {

using hw::Field;

constexpr GeneveOptionSelector kOvnKey = GeneveOptionSelector::For(0x0102, 0x80);
constexpr size_t kGeneveAt = 14 + 20 + 8;  // Ethernet, IPv4, UDP

uint32_t Get(const hw::HeaderVector& hv, Field f) { return hw::GetField(hv.bytes, f); }

// An OVN-style frame: IPv4/UDP/GENEVE with `options`, carrying Ethernet/IPv4/UDP.
std::vector<uint8_t> OvnFrame(std::vector<GeneveOption> options) {
  TunnelFrameSpec t;
  t.outer.l3 = L3Kind::kIpv4;
  t.tunnel.kind = Encap::kGeneve;
  t.tunnel.vni = 7;
  t.tunnel.geneve_options = std::move(options);
  t.inner.l3 = L3Kind::kIpv4;
  t.inner.protocol = kIpProtoUdp;
  return BuildFrame(t);
}

hw::HeaderVector Parse(const std::vector<uint8_t>& f, GeneveOptionSelector selector,
                       PacketLayers* layers = nullptr) {
  hw::HeaderVector hv;
  PacketLayers l = ParsePacket(f.data(), f.size(), 0xffff, &hv, selector);
  if (layers != nullptr) *layers = l;
  return hv;
}

TEST(PacketParserGeneveTest, TheConfiguredOptionAtAnyPosition) {
  const GeneveOption key{0x0102, 0x80, {0x00010002}};
  const GeneveOption other_class{0xffff, 0x80, {0x11111111, 0x22222222}};
  const GeneveOption other_type{0x0102, 0x81, {0x33333333}};
  const std::vector<std::vector<GeneveOption>> layouts = {
      {key}, {other_class, key}, {other_type, other_class, key}, {key, other_class}};
  for (const std::vector<GeneveOption>& options : layouts) {
    PacketLayers l;
    hw::HeaderVector hv = Parse(OvnFrame(options), kOvnKey, &l);
    EXPECT_EQ(Get(hv, Field::kGeneveTlvOption0Exist), 1u) << options.size();
    EXPECT_EQ(Get(hv, Field::kGeneveTlvOption0Data), 0x00010002u) << options.size();
    EXPECT_EQ(Get(hv, Field::kGeneveVni), 7u);
    EXPECT_NE(l.inner_l3, 0);  // the inner packet still follows all the options
  }
}

TEST(PacketParserGeneveTest, OtherClassesAndTypesAreNotTheOption) {
  // Same type, another class; same class, another type (0x00: the critical bit clear).
  for (const GeneveOption& o : {GeneveOption{0x0103, 0x80, {5}}, GeneveOption{0x0102, 0x00, {5}}}) {
    hw::HeaderVector hv = Parse(OvnFrame({o}), kOvnKey);
    EXPECT_EQ(Get(hv, Field::kGeneveTlvOption0Exist), 0u);
    EXPECT_EQ(Get(hv, Field::kGeneveTlvOption0Data), 0u);
  }
}

TEST(PacketParserGeneveTest, TheFirstOfTwoOccurrencesIsTaken) {
  hw::HeaderVector hv = Parse(OvnFrame({{0x0102, 0x80, {1}}, {0x0102, 0x80, {2}}}), kOvnKey);
  EXPECT_EQ(Get(hv, Field::kGeneveTlvOption0Data), 1u);
}

TEST(PacketParserGeneveTest, NoConfiguredOptionReportsNone) {
  hw::HeaderVector hv = Parse(OvnFrame({{0x0102, 0x80, {0x00010002}}}), GeneveOptionSelector());
  EXPECT_EQ(Get(hv, Field::kGeneveTlvOption0Exist), 0u);
  EXPECT_EQ(Get(hv, Field::kGeneveTlvOption0Data), 0u);
  EXPECT_EQ(Get(hv, Field::kGeneveOptLen), 2u);  // the header fields are there all the same
}

TEST(PacketParserGeneveTest, AnOptionWithoutDataExistsWithDataZero) {
  hw::HeaderVector hv = Parse(OvnFrame({{0xffff, 0x01, {9}}, {0x0102, 0x80, {}}}), kOvnKey);
  EXPECT_EQ(Get(hv, Field::kGeneveTlvOption0Exist), 1u);
  EXPECT_EQ(Get(hv, Field::kGeneveTlvOption0Data), 0u);
}

TEST(PacketParserGeneveTest, MalformedOptionAreas) {
  std::vector<uint8_t> f = OvnFrame({{0xffff, 0x01, {1, 2}}, {0x0102, 0x80, {0x5a5a5a5a}}});
  ASSERT_EQ(f[kGeneveAt], 5);  // 3 + 2 words of options
  // The option area ends inside the key option: the scan stops before it.
  f[kGeneveAt] = 4;
  hw::HeaderVector hv = Parse(f, kOvnKey);
  EXPECT_EQ(Get(hv, Field::kGeneveOptLen), 4u);
  EXPECT_EQ(Get(hv, Field::kGeneveTlvOption0Exist), 0u);
  // The first option claims more words than the area holds: nothing after it is read.
  f[kGeneveAt] = 5;
  f[kGeneveAt + 8 + 3] = 0x1f;
  hv = Parse(f, kOvnKey);
  EXPECT_EQ(Get(hv, Field::kGeneveTlvOption0Exist), 0u);
  EXPECT_EQ(Get(hv, Field::kGeneveTlvOption0Data), 0u);
}

TEST(PacketParserGeneveTest, TruncatedFramesNeverReadPastTheEnd) {
  const std::vector<uint8_t> full = OvnFrame({{0xffff, 0x01, {1}}, {0x0102, 0x80, {0x5a5a5a5a}}});
  const size_t key_data_end = kGeneveAt + 8 + 8 + 8;  // header, first option, key option
  for (size_t len = 0; len <= full.size(); ++len) {
    const std::vector<uint8_t> cut(full.begin(), full.begin() + len);
    hw::HeaderVector hv;
    ParsePacket(len ? cut.data() : nullptr, len, 0xffff, &hv, kOvnKey);
    EXPECT_EQ(Get(hv, Field::kGeneveTlvOption0Exist), len >= key_data_end ? 1u : 0u) << len;
    EXPECT_EQ(Get(hv, Field::kGeneveTlvOption0Data), len >= key_data_end ? 0x5a5a5a5au : 0u) << len;
  }
}

}  // namespace
}  // namespace drsim::sim
