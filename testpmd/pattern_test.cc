#include "testpmd/pattern.h"

#include <optional>
#include <string>
#include <variant>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hw/match_layout.h"
#include "testpmd/parser.h"
#include "testpmd/registers.h"

namespace drsim::testpmd {
namespace {

using hw::Field;
using hw::GetField;
using ::testing::HasSubstr;

absl::StatusOr<TranslatedPattern> Translate(const std::string& pattern,
                                            mlx5dv_dr_domain_type domain = MLX5DV_DR_DOMAIN_TYPE_FDB,
                                            std::optional<uint16_t> implicit_source_vport = std::nullopt,
                                            bool root_table = false) {
  DRSIM_ASSIGN_OR_RETURN(Command c, ParseOne(absl::StrCat("flow create 0 transfer pattern ", pattern,
                                                          " / end actions drop / end")));
  PatternContext ctx;
  ctx.domain = domain;
  ctx.vport_of_port = [](uint32_t port) -> absl::StatusOr<uint16_t> {
    if (port > 2) return absl::InvalidArgumentError("no such port");
    return static_cast<uint16_t>(port);
  };
  ctx.implicit_source_vport = implicit_source_vport;
  ctx.root_table = root_table;
  return TranslatePattern(std::get<FlowCreateCmd>(c.body).rule.pattern, ctx);
}

// mask and value of one field.
struct MV {
  uint32_t mask, value;
  friend bool operator==(MV a, MV b) { return a.mask == b.mask && a.value == b.value; }
  friend std::ostream& operator<<(std::ostream& os, MV mv) {
    return os << "{mask 0x" << std::hex << mv.mask << ", value 0x" << mv.value << "}";
  }
};
MV Get(const TranslatedPattern& t, Field f) {
  return {GetField(t.mask.bytes(), f), GetField(t.value.bytes(), f)};
}

// Every field the pattern sets, for checking that nothing else is touched.
int CountMasked(const TranslatedPattern& t) {
  int n = 0;
  for (size_t i = 0; i < hw::kNumFields; ++i) n += GetField(t.mask.bytes(), hw::FieldAt(i)) != 0;
  return n;
}

TEST(PatternTest, Ipv4TcpForms) {
  absl::StatusOr<TranslatedPattern> t =
      Translate("eth / ipv4 src is 10.0.0.1 dst spec 10.0.0.0 dst mask 255.255.255.0 / tcp dst is 80");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(Get(*t, Field::kOuterIpVersion), (MV{4, 4}));
  EXPECT_EQ(Get(*t, Field::kOuterSrcIp31_0), (MV{0xffffffff, 0x0a000001}));
  EXPECT_EQ(Get(*t, Field::kOuterDstIp31_0), (MV{0xffffff00, 0x0a000000}));
  EXPECT_EQ(Get(*t, Field::kOuterIpProtocol), (MV{0xff, 6}));
  EXPECT_EQ(Get(*t, Field::kOuterTcpDport), (MV{0xffff, 80}));
  EXPECT_EQ(CountMasked(*t), 5);
  EXPECT_EQ(t->info.outer.l3, L3::kIpv4);
  EXPECT_EQ(t->info.outer.l4, L4::kTcp);

  t = Translate("eth / ipv4 src spec 10.1.2.3 src prefix 16");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(Get(*t, Field::kOuterSrcIp31_0), (MV{0xffff0000, 0x0a010000}));
  // A last equal to the spec (or 0) is no range.
  t = Translate("eth / ipv4 src is 10.1.1.1 src last 10.1.1.1 dst is 1.1.1.1 dst last 0");
  ASSERT_TRUE(t.ok()) << t.status();
}

TEST(PatternTest, SpecWithoutMaskTakesTheDefaultMask) {
  // rte_flow: no mask given -> rte_flow_item_udp_mask (both ports), so src must be 0.
  absl::StatusOr<TranslatedPattern> t = Translate("eth / ipv4 / udp dst spec 53");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(Get(*t, Field::kOuterUdpDport), (MV{0xffff, 53}));
  EXPECT_EQ(Get(*t, Field::kOuterUdpSport), (MV{0xffff, 0}));
  // An item without spec matches presence only.
  t = Translate("eth / ipv6 / udp");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(CountMasked(*t), 2);  // ip_version, ip_protocol
}

TEST(PatternTest, RangesAreRejected) {
  absl::StatusOr<TranslatedPattern> t = Translate("eth / ipv4 / tcp dst is 80 dst last 90");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(t.status().message(), HasSubstr("tcp field 'dst': ranges (last) are not supported"));
  EXPECT_EQ(PosOf(t.status())->column, 59);  // the field's last mention
}

TEST(PatternTest, FragmentOffsetIdioms) {
  absl::StatusOr<TranslatedPattern> t =
      Translate("eth / ipv4 fragment_offset spec 1 fragment_offset last 0x3fff fragment_offset mask 0x3fff");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(Get(*t, Field::kOuterFrag), (MV{1, 1}));
  t = Translate("eth / ipv4 fragment_offset is 0");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(Get(*t, Field::kOuterFrag), (MV{1, 0}));
  EXPECT_FALSE(Translate("eth / ipv4 fragment_offset is 8").ok());
}

TEST(PatternTest, VlansAndEthertype) {
  absl::StatusOr<TranslatedPattern> t = Translate(
      "eth type is 0x88a8 / vlan vid is 10 pcp is 5 inner_type is 0x8100 / vlan vid is 20 inner_type is "
      "0x0800 / ipv4");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(Get(*t, Field::kOuterSvlanTag), (MV{1, 1}));
  EXPECT_EQ(Get(*t, Field::kOuterCvlanTag), (MV{0, 0}));
  EXPECT_EQ(Get(*t, Field::kOuterFirstVid), (MV{0xfff, 10}));
  EXPECT_EQ(Get(*t, Field::kOuterFirstPrio), (MV{7, 5}));
  EXPECT_EQ(Get(*t, Field::kOuterSecondCvlanTag), (MV{1, 1}));
  EXPECT_EQ(Get(*t, Field::kOuterSecondVid), (MV{0xfff, 20}));
  // mlx5 matches an IPv4 type as ip_version, not as the ethertype.
  EXPECT_EQ(Get(*t, Field::kOuterEthertype), (MV{0, 0}));
  EXPECT_EQ(Get(*t, Field::kOuterIpVersion), (MV{4, 4}));
  EXPECT_EQ(t->info.vlan_vid, 10);
  EXPECT_EQ(t->info.vlan_pcp, 5);

  t = Translate("eth has_vlan is 0 / ipv4");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(Get(*t, Field::kOuterCvlanTag), (MV{1, 0}));
  EXPECT_FALSE(Translate("eth type is 0x0800 / vlan").ok());
  EXPECT_FALSE(Translate("eth / vlan / vlan / vlan").ok());
}

// flow_dv_set_match_ip_version: on a root table the mask's ip_version is 0xf, elsewhere the version; the
// value is the version either way, and an IPv4/IPv6 ethertype becomes ip_version (the ethertype is dropped).
TEST(PatternTest, IpVersionAsMlx5LowersIt) {
  for (bool root : {true, false}) {
    SCOPED_TRACE(root ? "root table" : "non-root table");
    const uint32_t v4_mask = root ? 0xf : 4, v6_mask = root ? 0xf : 6;
    absl::StatusOr<TranslatedPattern> t =
        Translate("eth / ipv4 / udp dst is 4789", MLX5DV_DR_DOMAIN_TYPE_NIC_RX, std::nullopt, root);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(Get(*t, Field::kOuterIpVersion), (MV{v4_mask, 4}));
    t = Translate("eth type is 0x86dd", MLX5DV_DR_DOMAIN_TYPE_NIC_RX, std::nullopt, root);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(Get(*t, Field::kOuterIpVersion), (MV{v6_mask, 6}));
    EXPECT_EQ(Get(*t, Field::kOuterEthertype), (MV{0, 0}));
    EXPECT_EQ(CountMasked(*t), 1);
    t = Translate("eth type is 0x0800 / ipv4 dst is 10.0.0.1 / udp / vxlan / eth / ipv6",
                  MLX5DV_DR_DOMAIN_TYPE_NIC_RX, std::nullopt, root);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(Get(*t, Field::kOuterIpVersion), (MV{v4_mask, 4}));
    EXPECT_EQ(Get(*t, Field::kInnerIpVersion), (MV{v6_mask, 6}));
    EXPECT_EQ(Get(*t, Field::kOuterEthertype), (MV{0, 0}));
    // Other ethertypes, and partial masks, stay ethertypes.
    t = Translate("eth type is 0x88cc", MLX5DV_DR_DOMAIN_TYPE_NIC_RX, std::nullopt, root);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(Get(*t, Field::kOuterEthertype), (MV{0xffff, 0x88cc}));
    EXPECT_EQ(Get(*t, Field::kOuterIpVersion), (MV{0, 0}));
    // A type and an L3 item that disagree are an error naming both versions, at the item.
    t = Translate("eth type is 0x86dd / ipv4", MLX5DV_DR_DOMAIN_TYPE_NIC_RX, std::nullopt, root);
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(t.status().message(), HasSubstr("IPv6 there and IPv4 here"));
  }
}

TEST(PatternTest, VxlanInnerHeaders) {
  absl::StatusOr<TranslatedPattern> t = Translate(
      "eth / ipv4 / udp / vxlan vni is 42 / eth dst is 00:11:22:33:44:55 / ipv6 dst is 2001:db8::1 / udp dst "
      "is "
      "53");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(Get(*t, Field::kOuterUdpDport), (MV{0xffff, 4789}));  // implicit
  EXPECT_EQ(Get(*t, Field::kVxlanVni), (MV{0xffffff, 42}));
  EXPECT_EQ(Get(*t, Field::kInnerDmac47_16), (MV{0xffffffff, 0x00112233}));
  EXPECT_EQ(Get(*t, Field::kInnerDmac15_0), (MV{0xffff, 0x4455}));
  EXPECT_EQ(Get(*t, Field::kInnerIpVersion), (MV{6, 6}));
  EXPECT_EQ(Get(*t, Field::kInnerDstIp127_96), (MV{0xffffffff, 0x20010db8}));
  EXPECT_EQ(Get(*t, Field::kInnerDstIp31_0), (MV{0xffffffff, 1}));
  EXPECT_EQ(Get(*t, Field::kInnerUdpDport), (MV{0xffff, 53}));
  EXPECT_EQ(Get(*t, Field::kInnerIpProtocol), (MV{0xff, 17}));
  EXPECT_TRUE(t->info.tunnel);
  EXPECT_EQ(t->info.inner.l3, L3::kIpv6);
  // The udp item's own port wins over the implicit one.
  t = Translate("eth / ipv4 / udp dst is 8472 / vxlan");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(Get(*t, Field::kOuterUdpDport), (MV{0xffff, 8472}));
  // VXLAN flags go to the tunnel header words.
  t = Translate("eth / ipv4 / udp / vxlan flag_i is 1 last_rsvd is 0");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(Get(*t, Field::kTunnelHeader0), (MV{0x08000000, 0x08000000}));
  EXPECT_EQ(Get(*t, Field::kTunnelHeader1), (MV{0xff, 0}));
}

TEST(PatternTest, OtherTunnels) {
  absl::StatusOr<TranslatedPattern> t = Translate("eth / ipv6 / udp / vxlan-gpe vni is 7 protocol is 3");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(Get(*t, Field::kOuterUdpDport), (MV{0xffff, 4790}));
  EXPECT_EQ(Get(*t, Field::kOuterVxlanGpeVni), (MV{0xffffff, 7}));
  EXPECT_EQ(Get(*t, Field::kOuterVxlanGpeNextProtocol), (MV{0xff, 3}));

  t = Translate("eth / ipv4 / udp / geneve vni is 9 protocol is 0x6558");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(Get(*t, Field::kOuterUdpDport), (MV{0xffff, 6081}));
  EXPECT_EQ(Get(*t, Field::kGeneveVni), (MV{0xffffff, 9}));
  EXPECT_EQ(Get(*t, Field::kGeneveProtocolType), (MV{0xffff, 0x6558}));

  t = Translate("eth / ipv4 / gre k_bit is 1 protocol is 0x6558 / gre_key value is 0x12345678 / eth");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(Get(*t, Field::kOuterIpProtocol), (MV{0xff, 47}));
  EXPECT_EQ(Get(*t, Field::kGreKPresent), (MV{1, 1}));
  EXPECT_EQ(Get(*t, Field::kGreProtocol), (MV{0xffff, 0x6558}));
  EXPECT_EQ(Get(*t, Field::kGreKeyH), (MV{0xffffff, 0x123456}));
  EXPECT_EQ(Get(*t, Field::kGreKeyL), (MV{0xff, 0x78}));

  t = Translate("eth / ipv4 / nvgre tni is 77");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(Get(*t, Field::kGreProtocol), (MV{0xffff, 0x6558}));
  EXPECT_EQ(Get(*t, Field::kGreKeyH), (MV{0xffffff, 77}));

  t = Translate("eth / ipv4 / udp / mpls label is 100 / ipv4 dst is 1.2.3.4");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(Get(*t, Field::kOuterUdpDport), (MV{0xffff, 6635}));
  EXPECT_EQ(Get(*t, Field::kOuterFirstMplsOverUdpLabel), (MV{0xfffff, 100}));
  EXPECT_EQ(Get(*t, Field::kInnerDstIp31_0), (MV{0xffffffff, 0x01020304}));

  t = Translate("eth / ipv4 / gre / mpls label is 5 s is 1");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(Get(*t, Field::kGreProtocol), (MV{0xffff, 0x8847}));
  EXPECT_EQ(Get(*t, Field::kOuterFirstMplsOverGreLabel), (MV{0xfffff, 5}));
  EXPECT_EQ(Get(*t, Field::kOuterFirstMplsOverGreSBos), (MV{1, 1}));

  t = Translate("eth / mpls label is 16 / mpls / ipv4");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(Get(*t, Field::kOuterFirstMplsLabel), (MV{0xfffff, 16}));
  EXPECT_EQ(Get(*t, Field::kInnerIpVersion), (MV{4, 4}));

  t = Translate("eth / ipv4 / udp / gtp teid is 5 msg_type is 255 / gtp_psc qfi is 9 / ipv4");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(Get(*t, Field::kOuterUdpDport), (MV{0xffff, 2152}));
  EXPECT_EQ(Get(*t, Field::kGtpuTeid), (MV{0xffffffff, 5}));
  EXPECT_EQ(Get(*t, Field::kGtpuMsgType), (MV{0xff, 255}));
  EXPECT_EQ(Get(*t, Field::kGtpuFirstExtDw0), (MV{0x3f00, 0x0900}));
  EXPECT_EQ(Get(*t, Field::kGtpuMsgFlags), (MV{0x04, 0x04}));

  t = Translate("eth / ipv4 / udp / ib_bth opcode is 4 dst_qp is 0x12");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(Get(*t, Field::kOuterUdpDport), (MV{0xffff, 4791}));
  EXPECT_EQ(Get(*t, Field::kBthDstQp), (MV{0xffffff, 0x12}));
}

TEST(PatternTest, IcmpAndMetadata) {
  absl::StatusOr<TranslatedPattern> t = Translate("eth / ipv4 / icmp type is 8 ident is 1 seq is 2");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(Get(*t, Field::kOuterIpProtocol), (MV{0xff, 1}));
  EXPECT_EQ(Get(*t, Field::kIcmpType), (MV{0xff, 8}));
  EXPECT_EQ(Get(*t, Field::kIcmpHeaderData), (MV{0xffffffff, 0x00010002}));
  t = Translate("eth / ipv6 / icmp6 type is 135");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(Get(*t, Field::kIcmpv6Type), (MV{0xff, 135}));
  EXPECT_EQ(Get(*t, Field::kOuterIpProtocol), (MV{0xff, 58}));

  t = Translate("meta data is 7 / tag data spec 0x1200 data mask 0xff00 index is 2 / meter color is yellow");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(Get(*t, RegCMatchField(kMetaRegC)), (MV{0xffffffff, 7}));
  EXPECT_EQ(Get(*t, RegCMatchField(kFirstTagRegC + 2)), (MV{0xff00, 0x1200}));
  EXPECT_EQ(Get(*t, RegCMatchField(kMeterRegC)), (MV{0xff, 1}));
  EXPECT_FALSE(Translate("tag data is 1 index is 3").ok());
}

TEST(PatternTest, SourcePortItems) {
  absl::StatusOr<TranslatedPattern> t = Translate("represented_port ethdev_port_id is 2 / eth");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(Get(*t, Field::kSourcePort), (MV{0xffff, 2}));
  t = Translate("port_id id is 1");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(Get(*t, Field::kSourcePort), (MV{0xffff, 1}));
  t = Translate("port_id id is 9");
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(), HasSubstr("no such port"));
  t = Translate("port_id id is 1", MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(), HasSubstr("only transfer rules"));
  // mlx5's implicit source: the creating port's vport unless an item names one.
  t = Translate("eth", MLX5DV_DR_DOMAIN_TYPE_FDB, 0xffff);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(Get(*t, Field::kSourcePort), (MV{0xffff, 0xffff}));
  t = Translate("eth / represented_port ethdev_port_id is 2", MLX5DV_DR_DOMAIN_TYPE_FDB, 0xffff);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(Get(*t, Field::kSourcePort), (MV{0xffff, 2}));
}

TEST(PatternTest, LayerOrderErrors) {
  struct Case {
    const char* pattern;
    const char* message;
  } cases[] = {
      {"eth / tcp", "tcp needs an ipv4 or ipv6 item before it"},
      {"eth / ipv4 / vxlan", "vxlan needs an outer udp item before it"},
      {"eth / ipv4 / udp / vxlan / eth / ipv4 / udp / vxlan", "only one tunnel level"},
      {"eth / ipv4 / udp / vxlan / eth / ipv4 / icmp", "ICMP fields of an inner packet cannot be matched"},
      {"eth / ipv6 / icmp", "icmp needs an ipv4 item before it"},
      {"eth / ipv4 proto is 17 / tcp",
       "conflicts with an earlier item: outer.ip_protocol is 0x11 there and 0x6 here"},
      {"eth / ipv4 / ipv4", "a second L3 item"},
      {"eth / ipv4 / udp / gre_key value is 1", "gre_key must follow a gre item"},
      {"eth / ipv4 length is 20", "ipv4 field 'length' cannot be matched"},
      {"eth / udp dst mask 0xffff", "has a mask or last but no spec"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<TranslatedPattern> t = Translate(c.pattern);
    ASSERT_FALSE(t.ok()) << c.pattern;
    EXPECT_THAT(t.status().message(), HasSubstr(c.message)) << c.pattern;
    EXPECT_TRUE(PosOf(t.status()).has_value()) << c.pattern;
  }
}

}  // namespace
}  // namespace drsim::testpmd
