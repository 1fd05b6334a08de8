// Unit tests of the pure translations: encap headers, modify-header words, RSS plans, meter profiles.
#include <infiniband/verbs.h>

#include <string>
#include <variant>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hw/modify_header.h"
#include "testpmd/encap.h"
#include "testpmd/meter_profile.h"
#include "testpmd/modify.h"
#include "testpmd/parser.h"
#include "testpmd/registers.h"
#include "testpmd/rss.h"

namespace drsim::testpmd {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<Item> RawItems(const std::string& items) {
  absl::StatusOr<Command> c = ParseOne(absl::StrCat("set raw_encap ", items, " / end_set"));
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? std::get<SetRawCmd>(c->body).items : std::vector<Item>{};
}

Action OneAction(const std::string& action) {
  absl::StatusOr<Command> c =
      ParseOne(absl::StrCat("flow create 0 ingress pattern end actions ", action, " / end"));
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? std::get<FlowCreateCmd>(c->body).rule.actions.at(0) : Action{};
}

std::vector<hw::ModifyAction> Decode(const std::vector<uint64_t>& words) {
  std::vector<hw::ModifyAction> out;
  for (uint64_t w : words) out.push_back(hw::DecodeModifyWord(w));
  return out;
}

MATCHER_P4(IsSet, field, offset, length, data, "") {
  return arg.op == static_cast<uint8_t>(hw::ModifyOp::kSet) && arg.field == static_cast<uint16_t>(field) &&
         arg.offset == offset && arg.length == length && arg.data == static_cast<uint32_t>(data);
}
MATCHER_P2(IsAdd, field, data, "") {
  return arg.op == static_cast<uint8_t>(hw::ModifyOp::kAdd) && arg.field == static_cast<uint16_t>(field) &&
         arg.data == static_cast<uint32_t>(data);
}
MATCHER_P5(IsCopy, src, src_offset, dst, dst_offset, length, "") {
  return arg.op == static_cast<uint8_t>(hw::ModifyOp::kCopy) && arg.field == static_cast<uint16_t>(src) &&
         arg.offset == src_offset && arg.dst_field == static_cast<uint16_t>(dst) &&
         arg.dst_offset == dst_offset && arg.length == length;
}

TEST(EncapTest, RawEncapLikeTestpmd) {
  // testpmd's documented example.
  absl::StatusOr<std::vector<uint8_t>> h =
      RawHeaderBytes(RawItems("eth src is 10:11:22:33:44:55 / vlan tci is 1 inner_type is 0x0800 / ipv4 / "
                              "udp dst is 4789 / vxlan vni is 2"));
  ASSERT_TRUE(h.ok()) << h.status();
  ASSERT_EQ(h->size(), 14u + 4 + 20 + 8 + 8);
  const std::vector<uint8_t> eth(h->begin(), h->begin() + 14);
  EXPECT_THAT(eth, ElementsAre(0, 0, 0, 0, 0, 0, 0x10, 0x11, 0x22, 0x33, 0x44, 0x55, 0x81, 0x00));
  EXPECT_EQ((*h)[14], 0x00);  // TCI 1
  EXPECT_EQ((*h)[15], 0x01);
  EXPECT_EQ((*h)[16], 0x08);  // inner_type as written
  const uint8_t* ip = h->data() + 18;
  EXPECT_EQ(ip[0], 0x45);
  EXPECT_EQ(ip[9], 17);  // from the udp item
  EXPECT_EQ(ip[8], 0);   // testpmd leaves the TTL as written
  // No spec on ipv4: testpmd copies the default mask, all-ones addresses.
  EXPECT_EQ(ip[12], 0xff);
  EXPECT_EQ(ip[19], 0xff);
  const uint8_t* udp = h->data() + 38;
  EXPECT_EQ(udp[2], 0x12);  // 4789
  EXPECT_EQ(udp[3], 0xb5);
  const uint8_t* vxlan = h->data() + 46;
  EXPECT_EQ(vxlan[0], 0x08);
  EXPECT_EQ(vxlan[6], 2);

  h = RawHeaderBytes(RawItems("eth / ipv6 / gre protocol is 0x6558"));
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ((*h)[12], 0x86);
  EXPECT_EQ((*h)[14 + 6], 47);
  EXPECT_EQ((*h)[14] >> 4, 6);
  EXPECT_FALSE(RawHeaderBytes(RawItems("eth / meta data is 1")).ok());
}

TEST(EncapTest, VxlanAndNvgreEncap) {
  std::vector<uint8_t> h = TunnelEncapHeader(DefaultVxlanConf());
  ASSERT_EQ(h.size(), 50u);
  EXPECT_EQ(h[0], 0xff);  // eth dst broadcast
  EXPECT_EQ(h[12], 0x08);
  EXPECT_EQ(h[14], 0x45);
  EXPECT_EQ(h[22], 64);  // mlx5's TTL default
  EXPECT_EQ(h[23], 17);
  EXPECT_EQ(h[26], 127);
  EXPECT_EQ(h[36], 0x12);  // 4789
  EXPECT_EQ(h[42], 0x08);

  absl::StatusOr<Command> c = ParseOne(
      "set vxlan-with-vlan ip-version ipv6 vni 0x123456 udp-src 7 udp-dst 4789 ip-src ::1 ip-dst ::2 "
      "vlan-tci 34 "
      "eth-src 11:11:11:11:11:11 eth-dst 22:22:22:22:22:22");
  ASSERT_TRUE(c.ok()) << c.status();
  h = TunnelEncapHeader(std::get<SetTunnelCmd>(c->body));
  ASSERT_EQ(h.size(), 14u + 4 + 40 + 8 + 8);
  EXPECT_EQ(h[12], 0x81);
  EXPECT_EQ(h[17], 0xdd);
  EXPECT_EQ(h[18] >> 4, 6);
  EXPECT_EQ(h[18 + 6], 17);
  EXPECT_EQ(h[18 + 7], 255);
  EXPECT_EQ(h[58 + 1], 7);
  EXPECT_EQ(h[66 + 4], 0x12);
  EXPECT_EQ(h[66 + 6], 0x56);

  h = TunnelEncapHeader(DefaultNvgreConf());
  ASSERT_EQ(h.size(), 14u + 20 + 8);
  EXPECT_EQ(h[23], 47);
  EXPECT_EQ(h[34], 0x20);
  EXPECT_EQ(h[36], 0x65);
}

TEST(ModifyTest, SetActions) {
  HeaderLayers v4_tcp{true, 0, L3::kIpv4, L4::kTcp};
  std::vector<uint64_t> w;
  ASSERT_TRUE(AppendModifyWords(OneAction("set_mac_src mac_addr 02:00:00:00:00:01"), v4_tcp, &w).ok());
  ASSERT_TRUE(AppendModifyWords(OneAction("set_ipv4_dst ipv4_addr 10.0.0.9"), v4_tcp, &w).ok());
  ASSERT_TRUE(AppendModifyWords(OneAction("set_tp_dst port 8080"), v4_tcp, &w).ok());
  ASSERT_TRUE(AppendModifyWords(OneAction("dec_ttl"), v4_tcp, &w).ok());
  ASSERT_TRUE(AppendModifyWords(OneAction("dec_tcp_seq value 1"), v4_tcp, &w).ok());
  ASSERT_TRUE(AppendModifyWords(OneAction("set_tag data 0xabcd index 1 mask 0xff0f"), v4_tcp, &w).ok());
  using MF = hw::ModifyField;
  EXPECT_THAT(Decode(w),
              ElementsAre(IsSet(MF::kSmac15_0, 0, 16, 0x0001), IsSet(MF::kSmac47_16, 0, 32, 0x02000000),
                          IsSet(MF::kDipv4, 0, 32, 0x0a000009), IsSet(MF::kTcpDport, 0, 16, 8080),
                          IsAdd(MF::kIpTtl, 0xff), IsAdd(MF::kTcpSeqNum, 0xffffffff),
                          IsSet(RegCModifyField(3), 0, 4, 0xd), IsSet(RegCModifyField(3), 8, 8, 0xab)));

  w.clear();
  HeaderLayers v6_udp{true, 0, L3::kIpv6, L4::kUdp};
  ASSERT_TRUE(AppendModifyWords(OneAction("set_tp_src port 1"), v6_udp, &w).ok());
  ASSERT_TRUE(AppendModifyWords(OneAction("set_ttl ttl_value 9"), v6_udp, &w).ok());
  EXPECT_THAT(Decode(w), ElementsAre(IsSet(MF::kUdpSport, 0, 16, 1), IsSet(MF::kIpv6Hoplimit, 0, 8, 9)));

  absl::Status s = AppendModifyWords(OneAction("set_ipv4_src ipv4_addr 1.1.1.1"), v6_udp, &w);
  EXPECT_THAT(s.message(), HasSubstr("set_ipv4_src needs an ipv4 item in the pattern"));
  s = AppendModifyWords(OneAction("set_meta data 1"), v6_udp, &w);
  EXPECT_THAT(s.message(), HasSubstr("zero mask has no effect"));
}

TEST(ModifyTest, ModifyField) {
  HeaderLayers none;
  std::vector<uint64_t> w;
  using MF = hw::ModifyField;
  ASSERT_TRUE(
      AppendModifyWords(
          OneAction("modify_field op set dst_type ipv4_ttl src_type value src_value 0x40 width 8"), none, &w)
          .ok());
  // MAC bits 8..39 span both PRM words.
  ASSERT_TRUE(AppendModifyWords(OneAction("modify_field op set dst_type mac_dst dst_offset 8 src_type value "
                                          "src_value 0x112233445566 width 32"),
                                none, &w)
                  .ok());
  ASSERT_TRUE(
      AppendModifyWords(
          OneAction("modify_field op set dst_type tag dst_tag_index 0 src_type ipv4_src width 32"), none, &w)
          .ok());
  ASSERT_TRUE(
      AppendModifyWords(
          OneAction("modify_field op sub dst_type ipv4_ttl src_type value src_value 0x02 width 8"), none, &w)
          .ok());
  EXPECT_THAT(Decode(w),
              ElementsAre(IsSet(MF::kIpTtl, 0, 8, 0x40), IsSet(MF::kDmac15_0, 8, 8, 0x55),
                          IsSet(MF::kDmac47_16, 0, 24, 0x223344),
                          IsCopy(MF::kSipv4, 0, RegCModifyField(2), 0, 32), IsAdd(MF::kIpTtl, 0xfe)));

  absl::Status s = AppendModifyWords(
      OneAction("modify_field op add dst_type ipv4_src src_type value src_value 0x01 width 32"), none, &w);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  s = AppendModifyWords(
      OneAction("modify_field op set dst_type vxlan_vni src_type value src_value 1 width 24"), none, &w);
  EXPECT_THAT(s.message(), HasSubstr("vxlan_vni is not a field DR's modify-header can rewrite"));
  s = AppendModifyWords(
      OneAction("modify_field op set dst_type ipv4_ttl dst_level 2 src_type value src_value 1 width 8"), none,
      &w);
  EXPECT_THAT(s.message(), HasSubstr("outermost headers only"));
}

TEST(RssTest, ExpansionCases) {
  PatternInfo any;
  absl::StatusOr<RssPlan> p = PlanRss(OneAction("rss types ipv4-tcp ipv4 end queues 0 1 2 end"), any, 4);
  ASSERT_TRUE(p.ok()) << p.status();
  const uint64_t v4 = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4;
  const uint64_t tcp = IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP;
  ASSERT_EQ(p->cases.size(), 3u);  // (v4, tcp), (v4, any), (any)
  EXPECT_EQ(p->cases[0].l3, L3::kIpv4);
  EXPECT_EQ(p->cases[0].l4, L4::kTcp);
  EXPECT_EQ(p->cases[0].hash_fields, v4 | tcp);
  EXPECT_EQ(p->cases[1].hash_fields, v4);
  EXPECT_EQ(p->cases[2].hash_fields, 0u);
  EXPECT_EQ(p->queues, (std::vector<uint16_t>{0, 1, 2, 0}));
  EXPECT_EQ(p->key, Mlx5DefaultRssKey());

  // Pinned by the pattern: one TIR.
  PatternInfo v4_udp;
  v4_udp.outer = {true, 0, L3::kIpv4, L4::kUdp};
  p = PlanRss(OneAction("rss types udp l4-dst-only end"), v4_udp, 4);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->cases.size(), 1u);
  EXPECT_EQ(p->cases[0].hash_fields, v4 | IBV_RX_HASH_DST_PORT_UDP);
  EXPECT_EQ(p->queues, (std::vector<uint16_t>{0, 1, 2, 3}));

  // Default types: ip.
  p = PlanRss(OneAction("rss"), any, 2);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->cases.size(), 3u);  // v4, v6, non-IP

  EXPECT_EQ(PlanRss(OneAction("rss types sctp end"), any, 4).status().code(),
            absl::StatusCode::kUnimplemented);
  EXPECT_EQ(PlanRss(OneAction("rss func simple_xor"), any, 4).status().code(),
            absl::StatusCode::kUnimplemented);
  EXPECT_THAT(PlanRss(OneAction("rss level 2"), any, 4).status().message(), HasSubstr("no tunnel item"));
  EXPECT_EQ(PlanRss(OneAction("rss level 3"), any, 4).status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(PlanRss(OneAction("rss queues 4 end"), any, 4).status().message(), HasSubstr("out of range"));
  EXPECT_THAT(PlanRss(OneAction("rss key 0x1234"), any, 4).status().message(), HasSubstr("40-byte key"));
  p = PlanRss(OneAction("rss key 0x1234 key_len 40 func symmetric_toeplitz"), any, 4);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->key.size(), 40u);
  EXPECT_EQ(p->key[1], 0x34);
  EXPECT_EQ(p->symmetry, sim::RssSymmetry::kOrXor);
}

TEST(RssTest, LevelTwoHashesAndDispatchesOnTheInnerHeaders) {
  PatternInfo vxlan;  // eth / ipv4 / udp / vxlan / eth / ipv6 / end
  vxlan.outer = {true, 0, L3::kIpv4, L4::kUdp};
  vxlan.inner = {true, 0, L3::kIpv6, L4::kNone};
  vxlan.tunnel = true;
  absl::StatusOr<RssPlan> p = PlanRss(OneAction("rss level 2 types ipv6-tcp ipv6 end"), vxlan, 4);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->inner);
  const uint64_t v6 = IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6;
  const uint64_t tcp = IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP;
  ASSERT_EQ(p->cases.size(), 2u);  // the inner (v6, tcp) and (v6, any); the outer IPv4/UDP plays no part
  EXPECT_EQ(p->cases[0].l3, L3::kIpv6);
  EXPECT_EQ(p->cases[0].l4, L4::kTcp);
  EXPECT_EQ(p->cases[0].hash_fields, v6 | tcp | IBV_RX_HASH_INNER);
  EXPECT_EQ(p->cases[1].hash_fields, v6 | IBV_RX_HASH_INNER);
}

TEST(MeterProfileTest, PrmParameters) {
  AddMeterProfileCmd srtcm;
  srtcm.algorithm = MeterAlgorithm::kSrTcmRfc2697;
  srtcm.cir = 1000000;  // 1 MB/s
  srtcm.cbs = 2000;
  srtcm.ebs = 3000;
  absl::StatusOr<sim::MeterParams> p = MeterProfileParams(srtcm);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->valid);
  EXPECT_TRUE(p->bucket_overflow);
  EXPECT_FALSE(p->both_buckets_on_green);
  EXPECT_NEAR(p->cir_per_second(), 1e6, 1e6 * 0.01);
  EXPECT_EQ(p->eir_per_second(), 0);
  EXPECT_GE(p->cbs(), 2000);
  EXPECT_LE(p->cbs(), 2000 * 1.01);
  EXPECT_GE(p->ebs(), 3000);

  AddMeterProfileCmd trtcm = srtcm;
  trtcm.algorithm = MeterAlgorithm::kTrTcmRfc2698;
  trtcm.eir = 2000000;
  p = MeterProfileParams(trtcm);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->both_buckets_on_green);
  EXPECT_NEAR(p->eir_per_second(), 2e6, 2e6 * 0.01);
  trtcm.eir = 10;
  EXPECT_FALSE(MeterProfileParams(trtcm).ok());
}

}  // namespace
}  // namespace drsim::testpmd
