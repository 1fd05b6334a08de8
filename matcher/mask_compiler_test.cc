#include "matcher/mask_compiler.h"

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "hw/match_params.h"
#include "hw/parsed_fields.h"
#include "matcher/mask_bits.h"

namespace drsim::matcher {
namespace {

using hw::Field;
using hw::kInner;
using hw::kOuter;
using hw::MatchBuilder;
using hw::MatchParams;

constexpr auto kRx = MLX5DV_DR_DOMAIN_TYPE_NIC_RX;
constexpr auto kTx = MLX5DV_DR_DOMAIN_TYPE_NIC_TX;
constexpr auto kFdb = MLX5DV_DR_DOMAIN_TYPE_FDB;

// A parser that fills every field, so that these tests see rdma-core's checks alone.
const hw::ParsedFields& AllParsed() {
  static const hw::ParsedFields* const all = new hw::ParsedFields(hw::ParsedFields::All("test parser"));
  return *all;
}

absl::Status Compile(const MatchBuilder& b, uint8_t criteria = 0xff, mlx5dv_dr_domain_type domain = kRx) {
  MatchParams p = *b.Build();
  if (criteria == 0xff) criteria = p.criteria();
  return CompileMask(domain, criteria, p.get(), AllParsed()).status();
}

void ExpectError(const absl::Status& s, absl::StatusCode code, const std::string& needle) {
  EXPECT_EQ(s.code(), code) << s;
  EXPECT_NE(s.message().find(needle), absl::string_view::npos) << "'" << needle << "' not in: " << s;
}

std::vector<std::string> BuilderNames(const std::vector<SteBuilder>& builders) {
  std::vector<std::string> names;
  for (const SteBuilder& b : builders) names.emplace_back(b.name);
  return names;
}

TEST(CompileMaskTest, CriteriaAndSizeErrors) {
  MatchParams p;
  ExpectError(CompileMask(kRx, 0x80, p.get(), AllParsed()).status(), absl::StatusCode::kInvalidArgument,
              "match_criteria_enable 0x80");
  p.set_match_sz(452);
  ExpectError(CompileMask(kRx, 1, p.get(), AllParsed()).status(), absl::StatusCode::kInvalidArgument,
              "match_sz 452");
}

TEST(CompileMaskTest, IpVersionMustBeFourOrSix) {
  ExpectError(Compile(MatchBuilder().IpVersion(kOuter, 0xf)), absl::StatusCode::kUnimplemented,
              "outer.ip_version is 0xf");
  ExpectError(Compile(MatchBuilder().IpVersion(kInner, 5)), absl::StatusCode::kUnimplemented,
              "inner.ip_version is 0x5");
  EXPECT_TRUE(Compile(MatchBuilder().IpVersion(kOuter, 6)).ok());
}

TEST(CompileMaskTest, PartialSourcePortIsNotSupported) {
  ExpectError(Compile(MatchBuilder().SourcePort(0xff)), absl::StatusCode::kUnimplemented,
              "partial source_port");
  EXPECT_TRUE(Compile(MatchBuilder().SourcePort(0xffff)).ok());
  ExpectError(Compile(MatchBuilder().SourcePort(0xffff).GreProtocol(0xffff), 0xff, kTx),
              absl::StatusCode::kUnimplemented,
              "misc.source_port cannot be matched: not matchable in a NIC_TX domain");
  // With nothing else to build a lookup from, rdma-core fails earlier, with EINVAL.
  ExpectError(Compile(MatchBuilder().SourcePort(0xffff), 0xff, kTx), absl::StatusCode::kInvalidArgument,
              "no steering lookup can be built: mask field misc.source_port");
}

TEST(CompileMaskTest, L3FieldsNeedIpVersion) {
  ExpectError(
      Compile(MatchBuilder().Ethertype(kOuter, 0xffff).Ipv4Dst(kOuter, hw::Ipv4Address::PrefixMask(32))),
      absl::StatusCode::kUnimplemented,
      "outer.dst_ip_31_0 cannot be matched: IP and L4 fields need outer.ip_version");
  ExpectError(Compile(MatchBuilder().TcpDport(kInner, 0xffff)), absl::StatusCode::kInvalidArgument,
              "inner.tcp_dport cannot be matched: IP and L4 fields need inner.ip_version");
  ExpectError(Compile(MatchBuilder().IpVersion(kOuter, 4).Ipv6Src(kOuter, hw::Ipv6Address::PrefixMask(128))),
              absl::StatusCode::kUnimplemented,
              "outer.src_ip_127_96 cannot be matched: not matchable with outer.ip_version 4");
  ExpectError(Compile(MatchBuilder().IpVersion(kOuter, 6).Ihl(kOuter, 0xf)), absl::StatusCode::kUnimplemented,
              "outer.ipv4_ihl");
  ExpectError(Compile(MatchBuilder().IpVersion(kOuter, 4).Ipv6FlowLabel(kOuter, 0xfffff)),
              absl::StatusCode::kUnimplemented, "misc.outer_ipv6_flow_label");
}

TEST(CompileMaskTest, UnconsumableFieldsAreNamed) {
  const hw::MacAddress all = hw::MacAddress::AllOnes();
  ExpectError(Compile(MatchBuilder().Smac(kOuter, all).Set(Field::kOuterL3Ok, 1)),
              absl::StatusCode::kUnimplemented, "outer.l3_ok cannot be matched");
  ExpectError(Compile(MatchBuilder().GreProtocol(1).Set(Field::kOuterEspSpi, 1)),
              absl::StatusCode::kUnimplemented, "misc.outer_esp_spi");
  ExpectError(Compile(MatchBuilder().Set(Field::kTunnelHeader0, 1).Set(Field::kMacsecTag2, 1)),
              absl::StatusCode::kUnimplemented, "misc5.macsec_tag_2");
  ExpectError(Compile(MatchBuilder().Set(Field::kProgSampleFieldValue0, 1)),
              absl::StatusCode::kInvalidArgument, "flex-parser");
  MatchParams p = *MatchBuilder().Smac(kOuter, all).Build();
  p.bytes()[24] = 0x01;  // outer bits 0xc0..0xcf are reserved
  ExpectError(CompileMask(kRx, hw::kCriteriaOuter, p.get(), AllParsed()).status(),
              absl::StatusCode::kUnimplemented, "outer.reserved_at_c0");
}

TEST(CompileMaskTest, OneTunnelFamilyAndOneIcmpVersionPerMatcher) {
  ExpectError(Compile(MatchBuilder().Set(Field::kOuterVxlanGpeVni, 1).GeneveVni(0xffffff)),
              absl::StatusCode::kUnimplemented, "misc.geneve_vni");
  ExpectError(Compile(MatchBuilder().IcmpType(0xff).Icmpv6Type(0xff)), absl::StatusCode::kUnimplemented,
              "misc3.icmpv6_type");
  // One family, two builders: the GENEVE header and its option 0.
  EXPECT_TRUE(Compile(MatchBuilder().GeneveVni(0xffffff).Set(Field::kGeneveTlvOption0Data, 1)).ok());
}

TEST(CompileMaskTest, FieldsTheDevicesParserDoesNotFillAreRefused) {
  hw::ParsedFields parsed = hw::ParsedFields::All("small parser");
  parsed.Remove(Field::kInnerFirstMplsLabel).Remove(Field::kBthDstQp).set_limits("one tunnel level");
  auto compile = [&](const MatchBuilder& b) {
    MatchParams p = *b.Build();
    return CompileMask(kRx, p.criteria(), p.get(), parsed).status();
  };
  ExpectError(
      compile(MatchBuilder().Set(Field::kInnerFirstMplsLabel, 0xfffff)), absl::StatusCode::kUnimplemented,
      "mask field misc2.inner_first_mpls_label is matchable on a ConnectX, but the small parser does not "
      "parse it (one tunnel level); a rule on it would never match");
  ExpectError(compile(MatchBuilder().Set(Field::kBthDstQp, 0xffffff)), absl::StatusCode::kUnimplemented,
              "bth_dst_qp");
  // The fields the parser fills pass.
  EXPECT_TRUE(compile(MatchBuilder().Set(Field::kOuterFirstMplsOverGreLabel, 0xfffff)).ok());
  EXPECT_TRUE(compile(MatchBuilder().VxlanVni(0xffffff)).ok());
  EXPECT_TRUE(compile(MatchBuilder().IpVersion(kInner, 4)).ok());
}

TEST(CompileMaskTest, FragNeedsAnL2OrL3Builder) {
  // smac+dmac is one eth_l2_src_dst builder, which does not take frag: rdma-core rejects the mask.
  ExpectError(Compile(MatchBuilder()
                          .Smac(kOuter, hw::MacAddress::AllOnes())
                          .Dmac(kOuter, hw::MacAddress::AllOnes())
                          .Frag(kOuter, 1)),
              absl::StatusCode::kUnimplemented,
              "outer.frag cannot be matched: frag is matched by an L2 lookup");
  EXPECT_TRUE(Compile(MatchBuilder().Smac(kOuter, hw::MacAddress::AllOnes()).Frag(kOuter, 1)).ok());
}

TEST(CompileMaskTest, EmptyMasks) {
  // Criteria 0: a match-all matcher, whatever the buffer holds.
  MatchParams garbage = *MatchBuilder().TcpDport(kOuter, 1).Build();
  absl::StatusOr<CompiledMask> all = CompileMask(kRx, 0, garbage.get(), AllParsed());
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->definer.key_words(), 0u);
  EXPECT_EQ(BuilderNames(all->rx_builders), std::vector<std::string>{"empty_always_hit"});
  EXPECT_TRUE(CompileMask(kRx, 0, nullptr, AllParsed()).ok());
  // Sections enabled but nothing masked: no builder can be made.
  MatchParams zero;
  ExpectError(CompileMask(kRx, hw::kCriteriaOuter, zero.get(), AllParsed()).status(),
              absl::StatusCode::kInvalidArgument, "sets no bit");
  ExpectError(CompileMask(kRx, hw::kCriteriaOuter, nullptr, AllParsed()).status(),
              absl::StatusCode::kInvalidArgument, "sets no bit");
}

TEST(CompileMaskTest, DisabledSectionsAreIgnored) {
  MatchParams p = *MatchBuilder().Smac(kOuter, hw::MacAddress::AllOnes()).Set(Field::kOuterEspSpi, 7).Build();
  absl::StatusOr<CompiledMask> m = CompileMask(kRx, hw::kCriteriaOuter, p.get(), AllParsed());
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(hw::GetField(m->mask.data(), Field::kOuterEspSpi), 0u);
}

TEST(CompileMaskTest, BuildersFollowRdmaCore) {
  MatchParams five_tuple = *MatchBuilder()
                                .IpVersion(kOuter, 4)
                                .IpProtocol(kOuter, 0xff)
                                .Ipv4Src(kOuter, hw::Ipv4Address::PrefixMask(32))
                                .Ipv4Dst(kOuter, hw::Ipv4Address::PrefixMask(32))
                                .TcpSport(kOuter, 0xffff)
                                .TcpDport(kOuter, 0xffff)
                                .Build();
  absl::StatusOr<CompiledMask> m = CompileMask(kRx, hw::kCriteriaOuter, five_tuple.get(), AllParsed());
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(BuilderNames(m->rx_builders), (std::vector<std::string>{"eth_l2_dst", "eth_l3_ipv4_5_tuple"}));
  EXPECT_EQ(m->rx_builders[1].lu_type, 0x0007);
  EXPECT_TRUE(m->tx_builders.empty());

  MatchParams l2 = *MatchBuilder()
                        .Smac(kOuter, hw::MacAddress::AllOnes())
                        .Dmac(kOuter, hw::MacAddress::AllOnes())
                        .Ethertype(kOuter, 0xffff)
                        .Build();
  m = CompileMask(kRx, hw::kCriteriaOuter, l2.get(), AllParsed());
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(BuilderNames(m->rx_builders), (std::vector<std::string>{"eth_l2_src_dst", "eth_l2_dst"}));
}

TEST(CompileMaskTest, FdbRxPipeDropsSourcePort) {
  MatchParams p = *MatchBuilder().SourcePort(0xffff).Build();
  absl::StatusOr<CompiledMask> m = CompileMask(kFdb, hw::kCriteriaMisc, p.get(), AllParsed());
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(BuilderNames(m->rx_builders), std::vector<std::string>{"empty_always_hit"});
  EXPECT_EQ(BuilderNames(m->tx_builders), std::vector<std::string>{"src_gvmi_qpn"});
}

// Keys of a value and of a "packet" (any filled layout buffer) under one compiled mask.
class KeyTest : public ::testing::Test {
 protected:
  void Compile(const MatchBuilder& mask, RulePath path = RulePath::kSoftwareSteering) {
    MatchParams p = *mask.Build();
    absl::StatusOr<CompiledMask> m = CompileMask(kRx, p.criteria(), p.get(), AllParsed(), path);
    ASSERT_TRUE(m.ok()) << m.status();
    compiled_ = *std::move(m);
  }
  std::vector<uint32_t> ValueKey(const MatchBuilder& value) {
    std::vector<uint32_t> key(compiled_.definer.key_words());
    MatchParams v = *value.Build();
    absl::Status s = BuildRuleKey(compiled_, v.get(), key.data());
    EXPECT_TRUE(s.ok()) << s;
    return key;
  }
  std::vector<uint32_t> PacketKey(const MatchBuilder& packet) {
    std::vector<uint32_t> key(compiled_.definer.key_words());
    compiled_.definer.Extract(packet.Build()->bytes(), key.data());
    return key;
  }
  absl::Status ValueStatus(const MatchParams& v) {
    std::vector<uint32_t> key(compiled_.definer.key_words());
    return BuildRuleKey(compiled_, v.get(), key.data());
  }
  CompiledMask compiled_;
};

// BitsOutside finds a bit the mask leaves out wherever it lies: in its vector steps, its 8-byte words or its
// last bytes, at every size up to past two vector steps, and at every offset.
TEST(MaskBitsTest, BitsOutsideFindsABitAnywhere) {
  std::mt19937 random(20261130);
  for (size_t size = 0; size <= 160; ++size) {
    std::vector<uint8_t> value(size), mask(size);
    for (size_t i = 0; i < size; ++i) {
      mask[i] = static_cast<uint8_t>(random());
      value[i] = static_cast<uint8_t>(random()) & mask[i];
    }
    EXPECT_EQ(BitsOutside(value.data(), mask.data(), size), 0u) << size;
    for (size_t at = 0; at < size; ++at) {
      std::vector<uint8_t> outside = value;
      const uint8_t left_out = static_cast<uint8_t>(~mask[at]);
      if (left_out == 0) continue;
      outside[at] |= left_out & static_cast<uint8_t>(-left_out);  // its lowest bit the mask leaves out
      EXPECT_NE(BitsOutside(outside.data(), mask.data(), size), 0u) << size << " " << at;
    }
  }
}

TEST_F(KeyTest, ValueErrors) {
  Compile(MatchBuilder().IpVersion(kOuter, 4).TcpDport(kOuter, 0xff00));
  MatchParams v = *MatchBuilder().IpVersion(kOuter, 4).TcpDport(kOuter, 0x1234).Build();
  ExpectError(ValueStatus(v), absl::StatusCode::kInvalidArgument,
              "rule value sets outer.tcp_dport bits outside the matcher's mask");
  v = *MatchBuilder().IpVersion(kOuter, 6).Build();
  ExpectError(ValueStatus(v), absl::StatusCode::kInvalidArgument, "outer.ip_version");
  v = *MatchBuilder().TcpDport(kOuter, 0x1200).Build();
  ExpectError(ValueStatus(v), absl::StatusCode::kUnimplemented,
              "rule value outer.ip_version is 0 but the matcher's mask says 4");
  v = *MatchBuilder().IpVersion(kOuter, 4).Build();
  v.set_match_sz(6);
  ExpectError(ValueStatus(v), absl::StatusCode::kInvalidArgument, "match_sz 6");
  v.set_match_sz(452);
  ExpectError(ValueStatus(v), absl::StatusCode::kInvalidArgument, "match_sz 452");
  v.set_match_sz(64);  // covers the enabled outer section only
  EXPECT_TRUE(ValueStatus(v).ok());
  std::vector<uint32_t> key(compiled_.definer.key_words());
  ExpectError(BuildRuleKey(compiled_, nullptr, key.data()), absl::StatusCode::kInvalidArgument, "null");
}

// A value holding every enabled section is read in place, a shorter one from a zero-padded copy; the
// sections the criteria leave out are ignored either way, whatever they hold.
TEST_F(KeyTest, DisabledSectionsOfAValueAreIgnoredInPlaceToo) {
  Compile(MatchBuilder().IpVersion(kOuter, 4).TcpDport(kOuter, 0xffff).RegC(0, 0xffffffff));  // outer, misc2
  MatchParams v = *MatchBuilder().IpVersion(kOuter, 4).TcpDport(kOuter, 80).RegC(0, 7).Build();
  const std::vector<uint32_t> clean =
      ValueKey(MatchBuilder().IpVersion(kOuter, 4).TcpDport(kOuter, 80).RegC(0, 7));
  for (hw::Section s : {hw::Section::kMisc, hw::Section::kInner, hw::Section::kMisc3, hw::Section::kMisc5}) {
    std::memset(v.bytes() + hw::SectionOffset(s), 0xa5, hw::kSectionBytes);
  }
  std::vector<uint32_t> key(compiled_.definer.key_words());
  ASSERT_TRUE(BuildRuleKey(compiled_, v.get(), key.data()).ok());
  EXPECT_EQ(key, clean);
  v.set_match_sz(4 * hw::kSectionBytes);  // just up to the end of misc2
  ASSERT_TRUE(BuildRuleKey(compiled_, v.get(), key.data()).ok());
  EXPECT_EQ(key, clean);
  v.set_match_sz(3 * hw::kSectionBytes);  // misc2 cut off: reg_c_0 reads as 0
  ASSERT_TRUE(BuildRuleKey(compiled_, v.get(), key.data()).ok());
  EXPECT_EQ(key, ValueKey(MatchBuilder().IpVersion(kOuter, 4).TcpDport(kOuter, 80)));
  // In place, a bit outside the mask is still found and named.
  v.set_match_sz(hw::kMatchParamBytes);
  hw::SetField(v.bytes(), hw::Field::kOuterTcpSport, 1);
  ExpectError(ValueStatus(v), absl::StatusCode::kInvalidArgument,
              "rule value sets outer.tcp_sport bits outside the matcher's mask");
}

TEST_F(KeyTest, EmptyValueMatchesZeroFields) {
  Compile(MatchBuilder().Smac(kOuter, hw::MacAddress::AllOnes()));
  MatchParams zero;
  zero.set_match_sz(0);
  std::vector<uint32_t> key(compiled_.definer.key_words());
  ASSERT_TRUE(BuildRuleKey(compiled_, zero.get(), key.data()).ok());
  EXPECT_EQ(key, PacketKey(MatchBuilder()));
}

// A mask or value buffer of any match_sz up to 640 bytes (the uverbs attribute's bound), its first 448
// bytes those of `p`.
class RawParams {
 public:
  RawParams(const MatchParams& p, size_t size)
      : storage_((sizeof(mlx5dv_flow_match_parameters) + kRoom) / sizeof(uint64_t) + 1) {
    std::memcpy(bytes(), p.bytes(), hw::kMatchParamBytes);
    get()->match_sz = size;
  }
  mlx5dv_flow_match_parameters* get() {
    return reinterpret_cast<mlx5dv_flow_match_parameters*>(storage_.data());
  }
  uint8_t* bytes() { return reinterpret_cast<uint8_t*>(get()->match_buf); }

 private:
  static constexpr size_t kRoom = 640;
  std::vector<uint64_t> storage_;
};

// rdma-core's tests match the smac with a 6-byte mask and 6-byte values (test_mlx5_dr.py).
MatchParams SixByteSmac(const hw::MacAddress& mac) {
  MatchParams p = *MatchBuilder().Smac(kOuter, mac).Build();
  p.set_match_sz(6);
  return p;
}

// Root tables: rdma-core hands mask and value to the kernel as they are, which takes 1 to 512 bytes of each.
TEST(KernelPathTest, MaskSizesAreTheKernels) {
  const MatchParams smac = SixByteSmac(hw::MacAddress::AllOnes());
  ASSERT_TRUE(CompileMask(kTx, hw::kCriteriaOuter, smac.get(), AllParsed(), RulePath::kKernel).ok());
  // (The software-steering path takes a 6-byte mask too: dr_matcher_copy_param checks only the maximum.)
  ASSERT_TRUE(CompileMask(kTx, hw::kCriteriaOuter, smac.get(), AllParsed()).ok());
  RawParams raw(smac, 0);
  ExpectError(CompileMask(kTx, hw::kCriteriaOuter, raw.get(), AllParsed(), RulePath::kKernel).status(),
              absl::StatusCode::kInvalidArgument,
              "root-table matcher mask match_sz 0: the kernel takes 1 to 512");
  raw.get()->match_sz = 513;
  ExpectError(CompileMask(kTx, hw::kCriteriaOuter, raw.get(), AllParsed(), RulePath::kKernel).status(),
              absl::StatusCode::kInvalidArgument, "match_sz 513");
  raw.get()->match_sz = 512;  // the reserved tail, all zero
  ASSERT_TRUE(CompileMask(kTx, hw::kCriteriaOuter, raw.get(), AllParsed(), RulePath::kKernel).ok());
  // A bit in the tail: the kernel stores the mask as it stores any other (flow_matcher_create), and the
  // firmware refuses the flow group of every rule (BAD_PARAM -> EINVAL).
  raw.bytes()[500] = 1;
  absl::StatusOr<CompiledMask> tail =
      CompileMask(kTx, hw::kCriteriaOuter, raw.get(), AllParsed(), RulePath::kKernel);
  ASSERT_TRUE(tail.ok()) << tail.status();
  std::vector<uint32_t> key(tail->definer.key_words());
  ExpectError(BuildRuleKey(*tail, SixByteSmac(hw::MacAddress::AllOnes()).get(), key.data()),
              absl::StatusCode::kInvalidArgument,
              "root-table mask sets reserved_at_e00 (byte 500 of the kernel's fte_match_param): the firmware "
              "refuses the rule's flow group (BAD_PARAM)");
  // The same bit in the value is under the mask: check_valid_spec passes it, and the firmware refuses.
  RawParams value(smac, 512);
  value.bytes()[500] = 1;
  ExpectError(BuildRuleKey(*tail, value.get(), key.data()), absl::StatusCode::kInvalidArgument,
              "root-table mask sets reserved_at_e00 (byte 500");
}

TEST(KernelPathTest, ValuesOfAnySizeAreZeroExtended) {
  const hw::MacAddress mac = *hw::MacAddress::Parse("00:11:22:33:44:55");
  const MatchParams mask = SixByteSmac(hw::MacAddress::AllOnes());
  absl::StatusOr<CompiledMask> root =
      CompileMask(kTx, hw::kCriteriaOuter, mask.get(), AllParsed(), RulePath::kKernel);
  absl::StatusOr<CompiledMask> non_root = CompileMask(kTx, hw::kCriteriaOuter, mask.get(), AllParsed());
  ASSERT_TRUE(root.ok() && non_root.ok());
  std::vector<uint32_t> key(root->definer.key_words()), want(root->definer.key_words());
  root->definer.Extract(MatchBuilder().Smac(kOuter, mac).Build()->bytes(), want.data());
  const MatchParams six = SixByteSmac(mac);
  ASSERT_TRUE(BuildRuleKey(*root, six.get(), key.data()).ok());
  EXPECT_EQ(key, want);
  ExpectError(BuildRuleKey(*non_root, six.get(), key.data()), absl::StatusCode::kInvalidArgument,
              "rule value match_sz 6 must be a multiple of 4");
  for (size_t size : {size_t{1}, size_t{7}, size_t{445}, size_t{448}, size_t{512}}) {
    RawParams v(six, size);
    key.assign(key.size(), 0);
    ASSERT_TRUE(BuildRuleKey(*root, v.get(), key.data()).ok()) << size;
    if (size >= 6) {
      EXPECT_EQ(key, want) << size;
    }
  }
  RawParams v(six, 0);
  ExpectError(BuildRuleKey(*root, v.get(), key.data()), absl::StatusCode::kInvalidArgument,
              "root-table rule value match_sz 0: the kernel takes 1 to 512 bytes");
  v.get()->match_sz = 513;
  ExpectError(BuildRuleKey(*root, v.get(), key.data()), absl::StatusCode::kInvalidArgument,
              "root-table rule value match_sz 513");
  v.get()->match_sz = 512;
  v.bytes()[hw::kMatchParamBytes] = 0x80;  // the reserved tail, not under the mask: check_valid_spec
  ExpectError(BuildRuleKey(*root, v.get(), key.data()), absl::StatusCode::kInvalidArgument,
              "rule value sets reserved_at_e00 (byte 448 of the kernel's fte_match_param) bits outside the "
              "matcher's mask (the kernel's check_valid_spec)");
}

// The kernel checks every value bit against the mask as given (mlx5_core's check_valid_spec), sections the
// criteria leave out included; software steering ignores those sections.
TEST(KernelPathTest, ValueBitsOfDisabledSectionsMustBeMasked) {
  const MatchParams mask = *MatchBuilder()
                                .Smac(kOuter, hw::MacAddress::AllOnes())
                                .Smac(kInner, hw::MacAddress::AllOnes())
                                .Build();  // inner masked, but only outer enabled
  absl::StatusOr<CompiledMask> root =
      CompileMask(kRx, hw::kCriteriaOuter, mask.get(), AllParsed(), RulePath::kKernel);
  absl::StatusOr<CompiledMask> non_root = CompileMask(kRx, hw::kCriteriaOuter, mask.get(), AllParsed());
  ASSERT_TRUE(root.ok() && non_root.ok());
  const hw::MacAddress mac = *hw::MacAddress::Parse("00:11:22:33:44:55");
  std::vector<uint32_t> key(root->definer.key_words()), want(root->definer.key_words());
  root->definer.Extract(MatchBuilder().Smac(kOuter, mac).Build()->bytes(), want.data());
  // An inner smac under the mask: accepted, and not matched on (its section is disabled).
  const MatchParams masked = *MatchBuilder().Smac(kOuter, mac).Smac(kInner, mac).Build();
  ASSERT_TRUE(BuildRuleKey(*root, masked.get(), key.data()).ok());
  EXPECT_EQ(key, want);
  // An inner dmac is not under it: the kernel refuses the value, software steering ignores the bits.
  const MatchParams unmasked = *MatchBuilder().Smac(kOuter, mac).Dmac(kInner, mac).Build();
  ExpectError(BuildRuleKey(*root, unmasked.get(), key.data()), absl::StatusCode::kInvalidArgument,
              "rule value sets inner.dmac");
  ASSERT_TRUE(BuildRuleKey(*non_root, unmasked.get(), key.data()).ok());
  EXPECT_EQ(key, want);
}

TEST_F(KeyTest, IpVersionIsTheWholeL3Type) {
  Compile(MatchBuilder().IpVersion(kOuter, 4));
  std::vector<uint32_t> v4 = ValueKey(MatchBuilder().IpVersion(kOuter, 4));
  EXPECT_EQ(v4, PacketKey(MatchBuilder().IpVersion(kOuter, 4)));
  EXPECT_NE(v4, PacketKey(MatchBuilder().IpVersion(kOuter, 6)));  // 6 & 4 == 4, yet no match
}

TEST_F(KeyTest, VlanTagBitsFormOneQualifier) {
  Compile(MatchBuilder().CvlanTag(kOuter, 1));
  std::vector<uint32_t> untagged = ValueKey(MatchBuilder());
  EXPECT_EQ(untagged, PacketKey(MatchBuilder()));
  EXPECT_NE(untagged, PacketKey(MatchBuilder().SvlanTag(kOuter, 1)));  // an S-tag is a tag too
  EXPECT_EQ(ValueKey(MatchBuilder().CvlanTag(kOuter, 1)), PacketKey(MatchBuilder().CvlanTag(kOuter, 1)));
}

TEST_F(KeyTest, TcpAndUdpPortsAreOneL4Field) {
  Compile(MatchBuilder().IpVersion(kOuter, 4).TcpDport(kOuter, 0xffff));
  std::vector<uint32_t> k = ValueKey(MatchBuilder().IpVersion(kOuter, 4).TcpDport(kOuter, 80));
  EXPECT_EQ(k, PacketKey(MatchBuilder().IpVersion(kOuter, 4).TcpDport(kOuter, 80)));
  EXPECT_EQ(k, PacketKey(MatchBuilder().IpVersion(kOuter, 4).UdpDport(kOuter, 80)));
  EXPECT_NE(k, PacketKey(MatchBuilder().IpVersion(kOuter, 4).UdpDport(kOuter, 81)));
}

// The masks DPDK's mlx5 PMD writes for group 0, and others the STE builders refuse: root tables take them,
// as the kernel and the firmware do; non-root tables refuse them as rdma-core does.
TEST(KernelPathTest, SteBuilderChecksDoNotApply) {
  const struct {
    const char* name;
    MatchBuilder mask;
    absl::StatusCode non_root;
  } kCases[] = {
      {"ip_version 0xf + udp dport", MatchBuilder().IpVersion(kOuter, 0xf).UdpDport(kOuter, 0xffff),
       absl::StatusCode::kUnimplemented},
      {"ethertype + dst ip + udp dport",
       MatchBuilder()
           .Ethertype(kOuter, 0xffff)
           .Ipv4Dst(kOuter, hw::Ipv4Address::PrefixMask(32))
           .UdpDport(kOuter, 0xffff),
       absl::StatusCode::kUnimplemented},
      {"udp dport alone", MatchBuilder().UdpDport(kOuter, 0xffff), absl::StatusCode::kInvalidArgument},
      {"partial source_port", MatchBuilder().SourcePort(0xff), absl::StatusCode::kUnimplemented},
      {"vxlan-gpe and geneve", MatchBuilder().Set(Field::kOuterVxlanGpeVni, 0xffffff).GeneveVni(0xffffff),
       absl::StatusCode::kUnimplemented},
      {"icmp and icmpv6", MatchBuilder().IcmpType(0xff).Icmpv6Type(0xff), absl::StatusCode::kUnimplemented},
  };
  for (const auto& c : kCases) {
    MatchParams p = *c.mask.Build();
    absl::StatusOr<CompiledMask> root =
        CompileMask(kRx, p.criteria(), p.get(), AllParsed(), RulePath::kKernel);
    EXPECT_TRUE(root.ok()) << c.name << ": " << root.status();
    if (root.ok()) {
      EXPECT_TRUE(root->root_rule_refusal.ok()) << c.name;
      EXPECT_TRUE(root->rx_builders.empty()) << c.name;  // no STE lookups: the kernel's table
    }
    EXPECT_EQ(CompileMask(kRx, p.criteria(), p.get(), AllParsed()).status().code(), c.non_root) << c.name;
  }
}

// What the firmware refuses (a field the device does not match, a reserved bit) fails each rule with EINVAL,
// after the kernel's value check; the matcher is accepted, as the kernel only stores its mask.
TEST(KernelPathTest, FirmwareRefusalsComeAtTheRule) {
  hw::ParsedFields parsed = hw::ParsedFields::All("small parser");
  parsed.Remove(Field::kOuterL3Ok).set_limits("no integrity bits");
  MatchParams mask = *MatchBuilder().IpVersion(kOuter, 0xf).Set(Field::kOuterL3Ok, 1).Build();
  absl::StatusOr<CompiledMask> m = CompileMask(kRx, mask.criteria(), mask.get(), parsed, RulePath::kKernel);
  ASSERT_TRUE(m.ok()) << m.status();
  std::vector<uint32_t> key(m->definer.key_words());
  MatchParams value = *MatchBuilder().IpVersion(kOuter, 4).Set(Field::kOuterL3Ok, 1).Build();
  ExpectError(
      BuildRuleKey(*m, value.get(), key.data()), absl::StatusCode::kInvalidArgument,
      "root-table mask field outer.l3_ok: the firmware refuses the rule's flow group (BAD_PARAM): the "
      "device's flow tables do not match it, as the small parser does not parse it (no integrity bits)");
  value = *MatchBuilder().IpVersion(kOuter, 4).TcpDport(kOuter, 1).Build();
  ExpectError(BuildRuleKey(*m, value.get(), key.data()), absl::StatusCode::kInvalidArgument,
              "rule value sets outer.tcp_dport bits outside the matcher's mask");

  MatchParams reserved;
  reserved.bytes()[0xc0 / 8] = 0x80;  // outer bit 0xc0: between tcp_dport and ipv4_ihl
  m = CompileMask(kRx, hw::kCriteriaOuter, reserved.get(), AllParsed(), RulePath::kKernel);
  ASSERT_TRUE(m.ok()) << m.status();
  ExpectError(BuildRuleKey(*m, MatchParams().get(), key.data()), absl::StatusCode::kInvalidArgument,
              "reserved bits must be zero");
}

// Root tables compare the mask as given, bit for bit, as the firmware compares fte_match_param.
TEST_F(KeyTest, RootTablesCompareBitForBit) {
  Compile(MatchBuilder().IpVersion(kOuter, 0xf), RulePath::kKernel);
  std::vector<uint32_t> v4 = ValueKey(MatchBuilder().IpVersion(kOuter, 4));
  EXPECT_EQ(v4, PacketKey(MatchBuilder().IpVersion(kOuter, 4)));
  EXPECT_NE(v4, PacketKey(MatchBuilder().IpVersion(kOuter, 6)));
  EXPECT_NE(v4, PacketKey(MatchBuilder()));  // not IP
  Compile(MatchBuilder().IpVersion(kOuter, 4), RulePath::kKernel);
  EXPECT_EQ(ValueKey(MatchBuilder().IpVersion(kOuter, 4)), PacketKey(MatchBuilder().IpVersion(kOuter, 6)));
  Compile(MatchBuilder().CvlanTag(kOuter, 1), RulePath::kKernel);
  EXPECT_EQ(ValueKey(MatchBuilder()), PacketKey(MatchBuilder().SvlanTag(kOuter, 1)));  // not a C-tag
  Compile(MatchBuilder().TcpDport(kOuter, 0xffff), RulePath::kKernel);
  std::vector<uint32_t> tcp80 = ValueKey(MatchBuilder().TcpDport(kOuter, 80));
  EXPECT_EQ(tcp80, PacketKey(MatchBuilder().TcpDport(kOuter, 80)));
  EXPECT_NE(tcp80, PacketKey(MatchBuilder().UdpDport(kOuter, 80)));  // UDP's port is a field of its own
}

}  // namespace
}  // namespace drsim::matcher
