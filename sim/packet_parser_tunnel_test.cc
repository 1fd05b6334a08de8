// The packet parser on tunnelled frames (VXLAN, VXLAN-GPE, GENEVE, GRE, MPLS, GTP-U) and RoCE v2: fields,
// layer offsets, truncation and malformed tunnel headers.
#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "absl/types/span.h"
#include "gtest/gtest.h"
#include "hw/byte_order.h"
#include "sim/frame_builder.h"
#include "sim/packet_parser.h"
#include "sim/plain_ipv4.h"

namespace drsim::sim {
namespace {

using hw::Field;

uint32_t Get(const hw::HeaderVector& hv, Field f) { return hw::GetField(hv.bytes, f); }

FrameSpec Spec(L3Kind l3) {
  FrameSpec s;
  s.dmac = *hw::MacAddress::Parse("02:00:00:00:00:01");
  s.smac = *hw::MacAddress::Parse("02:00:00:00:00:02");
  s.l3 = l3;
  s.ipv4_src = *hw::Ipv4Address::Parse("10.0.0.1");
  s.ipv4_dst = *hw::Ipv4Address::Parse("10.0.0.2");
  s.ipv6_src = *hw::Ipv6Address::Parse("2001:db8::1");
  s.ipv6_dst = *hw::Ipv6Address::Parse("2001:db8::2");
  s.sport = 49152;
  return s;
}

// An outer IPv4 packet carrying `kind`, with an inner IPv4/TCP packet to 192.168.0.2:80.
TunnelFrameSpec Tunnel(Encap kind) {
  TunnelFrameSpec t;
  t.outer = Spec(L3Kind::kIpv4);
  t.tunnel.kind = kind;
  t.inner = Spec(L3Kind::kIpv4);
  t.inner.dmac = *hw::MacAddress::Parse("0a:00:00:00:00:0a");
  t.inner.ipv4_src = *hw::Ipv4Address::Parse("192.168.0.1");
  t.inner.ipv4_dst = *hw::Ipv4Address::Parse("192.168.0.2");
  t.inner.protocol = kIpProtoTcp;
  t.inner.sport = 1234;
  t.inner.dport = 80;
  t.inner.seq = 0x01020304;
  t.inner.ack = 0x05060708;
  t.inner.payload_len = 10;
  return t;
}

hw::HeaderVector Parse(const std::vector<uint8_t>& f, PacketLayers* layers = nullptr) {
  hw::HeaderVector hv;
  PacketLayers l = ParsePacket(f.data(), f.size(), 0xffff, &hv);
  if (layers) *layers = l;
  return hv;
}

void ExpectInnerTcpV4(const hw::HeaderVector& hv) {
  EXPECT_EQ(Get(hv, Field::kInnerIpVersion), 4u);
  EXPECT_EQ(Get(hv, Field::kInnerSrcIp31_0), 0xc0a80001u);
  EXPECT_EQ(Get(hv, Field::kInnerDstIp31_0), 0xc0a80002u);
  EXPECT_EQ(Get(hv, Field::kInnerIpProtocol), 6u);
  EXPECT_EQ(Get(hv, Field::kInnerTcpSport), 1234u);
  EXPECT_EQ(Get(hv, Field::kInnerTcpDport), 80u);
  EXPECT_EQ(Get(hv, Field::kInnerTcpFlags), 0x10u);
  EXPECT_EQ(Get(hv, Field::kInnerTcpSeqNum), 0x01020304u);
  EXPECT_EQ(Get(hv, Field::kInnerTcpAckNum), 0x05060708u);
}

TEST(PacketParserTunnelTest, VxlanWithInnerQinqAndTcp) {
  TunnelFrameSpec t = Tunnel(Encap::kVxlan);
  t.tunnel.vni = 0x123456;
  t.inner.vlans = {{0x88a8, 0x2064}, {0x8100, 0xe0c8}};
  PacketLayers l;
  hw::HeaderVector hv = Parse(BuildFrame(t), &l);
  EXPECT_EQ(Get(hv, Field::kOuterUdpDport), 4789u);
  EXPECT_EQ(Get(hv, Field::kOuterUdpSport), 49152u);
  EXPECT_EQ(Get(hv, Field::kVxlanVni), 0x123456u);
  EXPECT_EQ(Get(hv, Field::kInnerDmac47_16), 0x0a000000u);
  EXPECT_EQ(Get(hv, Field::kInnerDmac15_0), 0x000au);
  EXPECT_EQ(Get(hv, Field::kInnerSmac15_0), 0x0002u);
  EXPECT_EQ(Get(hv, Field::kInnerSvlanTag), 1u);
  EXPECT_EQ(Get(hv, Field::kInnerFirstPrio), 1u);
  EXPECT_EQ(Get(hv, Field::kInnerFirstVid), 0x064u);
  EXPECT_EQ(Get(hv, Field::kInnerSecondCvlanTag), 1u);
  EXPECT_EQ(Get(hv, Field::kInnerSecondPrio), 7u);
  EXPECT_EQ(Get(hv, Field::kInnerSecondVid), 0x0c8u);
  EXPECT_EQ(Get(hv, Field::kInnerEthertype), 0x0800u);
  ExpectInnerTcpV4(hv);
  // The outer stack is untouched by the inner one.
  EXPECT_EQ(Get(hv, Field::kOuterSvlanTag), 0u);
  EXPECT_EQ(Get(hv, Field::kOuterSecondVid), 0u);
  EXPECT_EQ(Get(hv, Field::kOuterTcpSeqNum), 0u);
  // tunnel_header_0..3: the VXLAN header, then the inner destination MAC and the start of the source.
  EXPECT_EQ(Get(hv, Field::kTunnelHeader0), 0x08000000u);
  EXPECT_EQ(Get(hv, Field::kTunnelHeader1), 0x12345600u);
  EXPECT_EQ(Get(hv, Field::kTunnelHeader2), 0x0a000000u);
  EXPECT_EQ(Get(hv, Field::kTunnelHeader3), 0x000a0200u);
  EXPECT_EQ(l.l3, 14);
  EXPECT_EQ(l.l4, 34);
  EXPECT_EQ(l.payload, 42);
  EXPECT_EQ(l.tunnel_type, TunnelType::kVxlan);
  EXPECT_EQ(l.tunnel, 42);
  EXPECT_EQ(l.inner_l2, 50);
  EXPECT_EQ(l.inner_l3, 50 + 22);
  EXPECT_EQ(l.inner_l4, 50 + 22 + 20);
  EXPECT_EQ(l.inner_payload, 50 + 22 + 40);
  EXPECT_EQ(l.bth, 0);
}

TEST(PacketParserTunnelTest, VxlanGpeByNextProtocol) {
  TunnelFrameSpec t = Tunnel(Encap::kVxlanGpe);
  t.outer = Spec(L3Kind::kIpv6);
  t.tunnel.vni = 0xabcdef;
  t.tunnel.gpe_next_protocol = 1;
  PacketLayers l;
  hw::HeaderVector hv = Parse(BuildFrame(t), &l);
  EXPECT_EQ(Get(hv, Field::kOuterIpVersion), 6u);
  EXPECT_EQ(Get(hv, Field::kOuterVxlanGpeFlags), 0x0cu);
  EXPECT_EQ(Get(hv, Field::kOuterVxlanGpeNextProtocol), 1u);
  EXPECT_EQ(Get(hv, Field::kOuterVxlanGpeVni), 0xabcdefu);
  EXPECT_EQ(Get(hv, Field::kVxlanVni), 0u);
  EXPECT_EQ(Get(hv, Field::kInnerEthertype), 0u);  // no inner Ethernet header
  ExpectInnerTcpV4(hv);
  EXPECT_EQ(l.tunnel_type, TunnelType::kVxlanGpe);
  EXPECT_EQ(l.tunnel, 14 + 40 + 8);
  EXPECT_EQ(l.inner_l2, 0);
  EXPECT_EQ(l.inner_l3, 14 + 40 + 16);

  t.tunnel.gpe_next_protocol = 2;
  t.inner.l3 = L3Kind::kIpv6;
  t.inner.flow_label = 0x54321;
  hv = Parse(BuildFrame(t), &l);
  EXPECT_EQ(Get(hv, Field::kInnerIpVersion), 6u);
  EXPECT_EQ(Get(hv, Field::kInnerIpv6FlowLabel), 0x54321u);
  EXPECT_EQ(Get(hv, Field::kOuterIpv6FlowLabel), 0u);
  EXPECT_EQ(Get(hv, Field::kInnerDstIp127_96), 0x20010db8u);

  t.tunnel.gpe_next_protocol = 3;
  hv = Parse(BuildFrame(t), &l);
  EXPECT_EQ(Get(hv, Field::kInnerEthertype), 0x86ddu);
  EXPECT_EQ(Get(hv, Field::kInnerIpVersion), 6u);
  EXPECT_EQ(l.inner_l2, 14 + 40 + 16);

  t.tunnel.gpe_next_protocol = 4;  // NSH: not parsed
  hv = Parse(BuildFrame(t), &l);
  EXPECT_EQ(Get(hv, Field::kOuterVxlanGpeNextProtocol), 4u);
  EXPECT_EQ(Get(hv, Field::kInnerIpVersion), 0u);
  EXPECT_EQ(l.inner_l3, 0);

  t.tunnel.gpe_flags = 0x2c;  // version 2: not recognised
  hv = Parse(BuildFrame(t), &l);
  EXPECT_EQ(Get(hv, Field::kOuterVxlanGpeVni), 0u);
  EXPECT_EQ(Get(hv, Field::kTunnelHeader0), 0u);
  EXPECT_EQ(l.tunnel_type, TunnelType::kNone);
  EXPECT_EQ(l.tunnel, 0);
}

TEST(PacketParserTunnelTest, GeneveHeaderAndInnerPacket) {
  TunnelFrameSpec t = Tunnel(Encap::kGeneve);
  t.tunnel.vni = 0x010203;
  t.tunnel.geneve_oam = true;
  t.tunnel.geneve_critical = true;
  t.tunnel.geneve_options = {{0x0102, 0x80, {0xdeadbeef, 0x1}}, {0xffff, 0x03, {0x2}}};
  PacketLayers l;
  hw::HeaderVector hv = Parse(BuildFrame(t), &l);
  EXPECT_EQ(Get(hv, Field::kGeneveVni), 0x010203u);
  EXPECT_EQ(Get(hv, Field::kGeneveOam), 1u);
  EXPECT_EQ(Get(hv, Field::kGeneveOptLen), 5u);
  EXPECT_EQ(Get(hv, Field::kGeneveProtocolType), 0x6558u);
  // No option parser configured: no option is option 0 (packet_parser_geneve_test.cc has the options).
  EXPECT_EQ(Get(hv, Field::kGeneveTlvOption0Exist), 0u);
  EXPECT_EQ(Get(hv, Field::kGeneveTlvOption0Data), 0u);
  EXPECT_EQ(Get(hv, Field::kTunnelHeader0), 0x05c06558u);
  EXPECT_EQ(Get(hv, Field::kTunnelHeader2), 0x01028002u);  // the first option's header
  EXPECT_EQ(Get(hv, Field::kInnerEthertype), 0x0800u);
  ExpectInnerTcpV4(hv);
  EXPECT_EQ(l.inner_l2, 42 + 8 + 20);

  t.tunnel.geneve_options = {{0x0102, 0x01, {}}};  // an option without data
  t.tunnel.geneve_protocol = 0x0800;
  hv = Parse(BuildFrame(t), &l);
  EXPECT_EQ(Get(hv, Field::kGeneveOptLen), 1u);
  ExpectInnerTcpV4(hv);
  EXPECT_EQ(l.inner_l2, 0);
  EXPECT_EQ(l.inner_l3, 42 + 8 + 4);

  t.tunnel.geneve_options.clear();
  t.tunnel.geneve_protocol = 0x86dd;
  t.inner.l3 = L3Kind::kIpv6;
  hv = Parse(BuildFrame(t), &l);
  EXPECT_EQ(Get(hv, Field::kGeneveTlvOption0Exist), 0u);
  EXPECT_EQ(Get(hv, Field::kInnerIpVersion), 6u);
  EXPECT_EQ(l.inner_l3, 42 + 8);
}

TEST(PacketParserTunnelTest, GreFlagsKeyAndInnerProtocols) {
  TunnelFrameSpec t = Tunnel(Encap::kGre);
  t.tunnel.gre_checksum = true;
  t.tunnel.gre_key_present = true;
  t.tunnel.gre_key = 0x11223344;
  PacketLayers l;
  hw::HeaderVector hv = Parse(BuildFrame(t), &l);
  EXPECT_EQ(Get(hv, Field::kOuterIpProtocol), 47u);
  EXPECT_EQ(Get(hv, Field::kGreCPresent), 1u);
  EXPECT_EQ(Get(hv, Field::kGreKPresent), 1u);
  EXPECT_EQ(Get(hv, Field::kGreSPresent), 0u);
  EXPECT_EQ(Get(hv, Field::kGreProtocol), 0x0800u);
  EXPECT_EQ(Get(hv, Field::kGreKeyH), 0x112233u);
  EXPECT_EQ(Get(hv, Field::kGreKeyL), 0x44u);
  EXPECT_EQ(Get(hv, Field::kTunnelHeader0), 0xa0000800u);
  EXPECT_EQ(Get(hv, Field::kTunnelHeader2), 0x11223344u);
  EXPECT_EQ(Get(hv, Field::kTunnelHeader3) >> 24, 0x45u);  // the inner IPv4 header follows
  ExpectInnerTcpV4(hv);
  EXPECT_EQ(l.l4, 0);  // GRE is not an L4 header
  EXPECT_EQ(l.tunnel_type, TunnelType::kGre);
  EXPECT_EQ(l.tunnel, 34);
  EXPECT_EQ(l.inner_l3, 34 + 12);

  t.tunnel.gre_checksum = false;
  t.tunnel.gre_seq_present = true;
  t.tunnel.gre_protocol = 0x6558;
  t.inner.vlans = {{0x8100, 7}};
  hv = Parse(BuildFrame(t), &l);
  EXPECT_EQ(Get(hv, Field::kGreCPresent), 0u);
  EXPECT_EQ(Get(hv, Field::kGreSPresent), 1u);
  EXPECT_EQ(Get(hv, Field::kGreKeyH), 0x112233u);
  EXPECT_EQ(Get(hv, Field::kInnerFirstVid), 7u);
  EXPECT_EQ(Get(hv, Field::kInnerCvlanTag), 1u);
  ExpectInnerTcpV4(hv);
  EXPECT_EQ(l.inner_l2, 34 + 12);

  t.tunnel.gre_protocol = 0x8847;
  t.tunnel.mpls = {{1000, 5, 9}, {2000, 1, 8}};
  t.inner.l3 = L3Kind::kIpv6;
  hv = Parse(BuildFrame(t), &l);
  EXPECT_EQ(Get(hv, Field::kOuterFirstMplsOverGreLabel), 1000u);
  EXPECT_EQ(Get(hv, Field::kOuterFirstMplsOverGreExp), 5u);
  EXPECT_EQ(Get(hv, Field::kOuterFirstMplsOverGreSBos), 0u);
  EXPECT_EQ(Get(hv, Field::kOuterFirstMplsOverGreTtl), 9u);
  EXPECT_EQ(Get(hv, Field::kOuterFirstMplsLabel), 0u);
  EXPECT_EQ(Get(hv, Field::kInnerIpVersion), 6u);
  EXPECT_EQ(l.inner_l2, 0);
  EXPECT_EQ(l.inner_l3, 34 + 12 + 8);

  t.tunnel.gre_protocol = 0x0800;  // says IPv4, carries IPv6: the inner packet is not parsed
  hv = Parse(BuildFrame(t), &l);
  EXPECT_EQ(Get(hv, Field::kGreProtocol), 0x0800u);
  EXPECT_EQ(Get(hv, Field::kInnerIpVersion), 0u);
  EXPECT_EQ(l.inner_l3, 0);
}

TEST(PacketParserTunnelTest, GreMalformedHeaders) {
  TunnelFrameSpec t = Tunnel(Encap::kGre);
  t.tunnel.gre_key_present = true;
  t.tunnel.gre_key = 0xffffffff;
  std::vector<uint8_t> f = BuildFrame(t);
  std::vector<uint8_t> cut(f.begin(), f.begin() + 34 + 6);  // the key is cut short
  PacketLayers l;
  hw::HeaderVector hv = Parse(cut, &l);
  EXPECT_EQ(Get(hv, Field::kGreKPresent), 0u);
  EXPECT_EQ(Get(hv, Field::kGreKeyH), 0u);
  EXPECT_EQ(l.tunnel_type, TunnelType::kNone);
  f[34] = 0x60;  // routing present
  hv = Parse(f, &l);
  EXPECT_EQ(Get(hv, Field::kGreKPresent), 0u);
  EXPECT_EQ(l.tunnel, 0);
}

// The ConnectX parser reads GRE of any version by its C, K and S bits: rdma-core's tests send version 1
// with a key (flags 0x2001, tests/utils.py gen_gre_header) and decap it on hardware.
TEST(PacketParserTunnelTest, GreOfAnyVersionIsATunnel) {
  for (uint16_t protocol : {0x6558, 0x0800}) {
    TunnelFrameSpec t = Tunnel(Encap::kGre);
    t.tunnel.gre_protocol = protocol;
    t.tunnel.gre_key_present = true;
    t.tunnel.gre_key = 0x12345678;
    std::vector<uint8_t> f = BuildFrame(t);
    ASSERT_EQ(hw::LoadBe16(f.data() + 34), 0x2000);
    for (uint8_t version = 0; version < 8; ++version) {
      f[35] = version;
      PacketLayers l;
      const hw::HeaderVector hv = Parse(f, &l);
      EXPECT_EQ(l.tunnel_type, TunnelType::kGre) << "version " << int{version};
      EXPECT_EQ(Get(hv, Field::kGreKPresent), 1u);
      EXPECT_EQ(Get(hv, Field::kGreKeyH), 0x123456u);
      EXPECT_EQ(Get(hv, Field::kGreKeyL), 0x78u);
      EXPECT_EQ(Get(hv, Field::kGreProtocol), protocol);
      EXPECT_EQ(l.inner_l3, protocol == 0x6558 ? 34 + 8 + 14 : 34 + 8);
      EXPECT_EQ(l.inner_l2, protocol == 0x6558 ? 34 + 8 : 0);
    }
  }
}

// Every combination of GRE's optional words, in both versions: checksum (C), key (K), sequence (S) and, in
// version 1 (PPTP's enhanced GRE, RFC 2637 4.1), acknowledgment (A, 0x0080), in that order. The inner
// packet starts after the words present, as Linux's flow dissector finds it (__skb_flow_dissect_gre); the
// PRM's gre_c/k/s_present say which of C, K and S were there, and the key is read wherever it lies.
TEST(PacketParserTunnelTest, GreOptionalWordsInEveryCombination) {
  for (uint16_t protocol : {0x6558, 0x0800}) {
    for (uint8_t version : {0, 1}) {
      for (int bits = 0; bits < (version == 1 ? 16 : 8); ++bits) {
        TunnelFrameSpec t = Tunnel(Encap::kGre);
        t.tunnel.gre_protocol = protocol;
        t.tunnel.gre_version = version;
        t.tunnel.gre_checksum = bits & 1;
        t.tunnel.gre_key_present = bits & 2;
        t.tunnel.gre_key = 0x0040abcd;  // PPTP's key: payload length 0x0040, call ID 0xabcd
        t.tunnel.gre_seq_present = bits & 4;
        t.tunnel.gre_seq = 0x11111111;
        t.tunnel.gre_ack_present = bits & 8;
        t.tunnel.gre_ack = 0x22222222;
        const std::vector<uint8_t> f = BuildFrame(t);
        SCOPED_TRACE(testing::Message()
                     << "protocol 0x" << std::hex << protocol << " flags 0x" << hw::LoadBe16(f.data() + 34));
        const size_t words = __builtin_popcount(bits);
        PacketLayers l;
        const hw::HeaderVector hv = Parse(f, &l);
        EXPECT_EQ(l.tunnel_type, TunnelType::kGre);
        EXPECT_EQ(l.tunnel, 34);
        EXPECT_EQ(Get(hv, Field::kGreCPresent), bits & 1 ? 1u : 0u);
        EXPECT_EQ(Get(hv, Field::kGreKPresent), bits & 2 ? 1u : 0u);
        EXPECT_EQ(Get(hv, Field::kGreSPresent), bits & 4 ? 1u : 0u);
        EXPECT_EQ(Get(hv, Field::kGreProtocol), protocol);
        EXPECT_EQ(Get(hv, Field::kGreKeyH), bits & 2 ? 0x0040abu : 0u);
        EXPECT_EQ(Get(hv, Field::kGreKeyL), bits & 2 ? 0xcdu : 0u);
        const size_t inner = 34 + 4 + 4 * words;
        EXPECT_EQ(l.inner_l2, protocol == 0x6558 ? inner : 0);
        EXPECT_EQ(l.inner_l3, protocol == 0x6558 ? inner + 14 : inner);
        ExpectInnerTcpV4(hv);
      }
    }
  }
}

// In version 0 the A bit's place is reserved (RFC 2784: ignored on receipt): it announces no word.
TEST(PacketParserTunnelTest, GreVersion0ReservedBitsAddNoWord) {
  TunnelFrameSpec t = Tunnel(Encap::kGre);
  t.tunnel.gre_key_present = true;
  t.tunnel.gre_key = 0x12345678;
  std::vector<uint8_t> f = BuildFrame(t);
  f[35] |= 0x80;
  PacketLayers l;
  hw::HeaderVector hv = Parse(f, &l);
  EXPECT_EQ(l.inner_l3, 34 + 8);
  ExpectInnerTcpV4(hv);
  // Cut 10 bytes into GRE: version 0 needs 8 of them, version 1 with A set 12, so it is no tunnel.
  std::vector<uint8_t> cut(f.begin(), f.begin() + 34 + 10);
  Parse(cut, &l);
  EXPECT_EQ(l.tunnel_type, TunnelType::kGre);
  cut[35] = 0x81;
  hv = Parse(cut, &l);
  EXPECT_EQ(l.tunnel_type, TunnelType::kNone);
  EXPECT_EQ(Get(hv, Field::kGreKPresent), 0u);
}

TEST(PacketParserTunnelTest, MplsOverEthernetAndUdp) {
  TunnelFrameSpec t = Tunnel(Encap::kMpls);
  t.outer.vlans = {{0x8100, 3}};
  t.tunnel.mpls = {{0xfffff, 7, 1}, {16, 0, 64}};
  t.tunnel.mpls_ethertype = 0x8848;
  PacketLayers l;
  hw::HeaderVector hv = Parse(BuildFrame(t), &l);
  EXPECT_EQ(Get(hv, Field::kOuterEthertype), 0x8848u);
  EXPECT_EQ(Get(hv, Field::kOuterIpVersion), 0u);
  EXPECT_EQ(Get(hv, Field::kOuterFirstMplsLabel), 0xfffffu);
  EXPECT_EQ(Get(hv, Field::kOuterFirstMplsExp), 7u);
  EXPECT_EQ(Get(hv, Field::kOuterFirstMplsSBos), 0u);
  EXPECT_EQ(Get(hv, Field::kOuterFirstMplsTtl), 1u);
  EXPECT_EQ(Get(hv, Field::kTunnelHeader0), 0xfffffe01u);
  EXPECT_EQ(Get(hv, Field::kTunnelHeader1), 0x00010140u);
  ExpectInnerTcpV4(hv);
  EXPECT_EQ(l.l3, 0);
  EXPECT_EQ(l.tunnel_type, TunnelType::kMpls);
  EXPECT_EQ(l.tunnel, 18);
  EXPECT_EQ(l.inner_l3, 26);

  t = Tunnel(Encap::kMplsOverUdp);
  t.outer = Spec(L3Kind::kIpv6);
  t.tunnel.mpls = {{77, 2, 33}};
  t.inner.l3 = L3Kind::kIpv6;
  hv = Parse(BuildFrame(t), &l);
  EXPECT_EQ(Get(hv, Field::kOuterUdpDport), 6635u);
  EXPECT_EQ(Get(hv, Field::kOuterFirstMplsOverUdpLabel), 77u);
  EXPECT_EQ(Get(hv, Field::kOuterFirstMplsOverUdpExp), 2u);
  EXPECT_EQ(Get(hv, Field::kOuterFirstMplsOverUdpSBos), 1u);
  EXPECT_EQ(Get(hv, Field::kOuterFirstMplsOverUdpTtl), 33u);
  EXPECT_EQ(Get(hv, Field::kInnerIpVersion), 6u);
  EXPECT_EQ(Get(hv, Field::kInnerTcpDport), 80u);
  EXPECT_EQ(l.tunnel_type, TunnelType::kMplsOverUdp);
  EXPECT_EQ(l.inner_l3, 14 + 40 + 8 + 4);
}

TEST(PacketParserTunnelTest, MplsStackWithoutBottomOrIp) {
  TunnelFrameSpec t = Tunnel(Encap::kMpls);
  t.tunnel.mpls = std::vector<MplsLabel>(9, MplsLabel{5, 0, 64});  // bottom of stack is the 9th label
  PacketLayers l;
  hw::HeaderVector hv = Parse(BuildFrame(t), &l);
  EXPECT_EQ(Get(hv, Field::kOuterFirstMplsLabel), 5u);
  EXPECT_EQ(Get(hv, Field::kInnerIpVersion), 0u);
  EXPECT_EQ(l.inner_l3, 0);
  t.tunnel.mpls.resize(8);
  hv = Parse(BuildFrame(t), &l);
  EXPECT_EQ(Get(hv, Field::kInnerIpVersion), 4u);
  EXPECT_EQ(l.inner_l3, 14 + 32);
  // After the stack, neither IPv4 nor IPv6.
  std::vector<uint8_t> f = BuildFrame(t);
  f[14 + 32] = 0x55;
  hv = Parse(f, &l);
  EXPECT_EQ(Get(hv, Field::kInnerIpVersion), 0u);
  EXPECT_EQ(l.tunnel_type, TunnelType::kMpls);
  EXPECT_EQ(l.inner_l3, 0);
}

TEST(PacketParserTunnelTest, GtpuHeaderDwordsAndExtensions) {
  TunnelFrameSpec t = Tunnel(Encap::kGtpu);
  t.tunnel.gtpu_teid = 0xcafef00d;
  PacketLayers l;
  std::vector<uint8_t> f = BuildFrame(t);
  hw::HeaderVector hv = Parse(f, &l);
  const uint32_t length = static_cast<uint32_t>(f.size() - 42 - 8);
  EXPECT_EQ(Get(hv, Field::kGtpuMsgFlags), 0x30u);
  EXPECT_EQ(Get(hv, Field::kGtpuMsgType), 0xffu);
  EXPECT_EQ(Get(hv, Field::kGtpuTeid), 0xcafef00du);
  EXPECT_EQ(Get(hv, Field::kGtpuDw0), 0x30ff0000u | length);
  EXPECT_EQ(Get(hv, Field::kGtpuDw2), 0u);
  EXPECT_EQ(Get(hv, Field::kGtpuFirstExtDw0), 0u);
  ExpectInnerTcpV4(hv);
  EXPECT_EQ(l.tunnel_type, TunnelType::kGtpu);
  EXPECT_EQ(l.inner_l3, 42 + 8);

  t.tunnel.gtpu_seq_present = true;
  t.tunnel.gtpu_seq = 0x4242;
  t.tunnel.gtpu_extensions = {{0x85, {0x10, 0x09}}, {0x40, {1, 2, 3, 4, 5}}};
  t.inner.l3 = L3Kind::kIpv6;
  hv = Parse(BuildFrame(t), &l);
  EXPECT_EQ(Get(hv, Field::kGtpuMsgFlags), 0x36u);
  EXPECT_EQ(Get(hv, Field::kGtpuDw2), 0x42420085u);
  EXPECT_EQ(Get(hv, Field::kGtpuFirstExtDw0), 0x01100940u);
  EXPECT_EQ(Get(hv, Field::kInnerIpVersion), 6u);
  EXPECT_EQ(l.inner_l3, 42 + 12 + 4 + 8);

  t.tunnel.gtpu_msg_type = 1;  // echo request: no T-PDU
  hv = Parse(BuildFrame(t), &l);
  EXPECT_EQ(Get(hv, Field::kGtpuMsgType), 1u);
  EXPECT_EQ(Get(hv, Field::kGtpuFirstExtDw0), 0x01100940u);
  EXPECT_EQ(Get(hv, Field::kInnerIpVersion), 0u);
  EXPECT_EQ(l.inner_l3, 0);
}

TEST(PacketParserTunnelTest, GtpuMalformedHeaders) {
  TunnelFrameSpec t = Tunnel(Encap::kGtpu);
  t.tunnel.gtpu_extensions = {{0x85, {0x00, 0x01}}};
  std::vector<uint8_t> f = BuildFrame(t);
  const size_t gtpu = 42;
  PacketLayers l;
  f[gtpu + 12] = 0;  // extension length 0
  hw::HeaderVector hv = Parse(f, &l);
  EXPECT_EQ(Get(hv, Field::kGtpuFirstExtDw0), 0x00000100u);
  EXPECT_EQ(Get(hv, Field::kInnerIpVersion), 0u);
  EXPECT_EQ(l.tunnel_type, TunnelType::kGtpu);
  f[gtpu + 12] = 200;  // extension past the end of the frame
  hv = Parse(f, &l);
  EXPECT_EQ(l.inner_l3, 0);
  f[gtpu + 12] = 1;
  f[gtpu + 15] = 0x85;  // the chain runs on into the inner packet
  hv = Parse(f, &l);
  EXPECT_EQ(l.inner_l3, 0);
  f[gtpu] = 0x20;  // protocol type 0 (GTP'): not recognised
  hv = Parse(f, &l);
  EXPECT_EQ(Get(hv, Field::kGtpuTeid), 0u);
  EXPECT_EQ(l.tunnel_type, TunnelType::kNone);
  std::vector<uint8_t> cut(f.begin(), f.begin() + gtpu + 10);  // optional field cut short
  cut[gtpu] = 0x34;
  hv = Parse(cut, &l);
  EXPECT_EQ(Get(hv, Field::kGtpuMsgFlags), 0x34u);
  EXPECT_EQ(Get(hv, Field::kGtpuDw2), 0u);
}

TEST(PacketParserTunnelTest, RoceV2Bth) {
  TunnelFrameSpec t = Tunnel(Encap::kRoceV2);
  t.tunnel.bth_opcode = 0x0a;  // RC RDMA WRITE only
  t.tunnel.bth_dst_qp = 0xabcdef;
  t.tunnel.bth_ack_req = true;
  t.tunnel.bth_psn = 0x123456;
  t.outer.payload_len = 13;
  PacketLayers l;
  std::vector<uint8_t> f = BuildFrame(t);
  hw::HeaderVector hv = Parse(f, &l);
  EXPECT_EQ(f.size(), 42u + 12 + 13 + 3 + 4);
  EXPECT_EQ(hw::LoadBe32(f.data() + f.size() - 4), kRoceIcrc);
  EXPECT_EQ(Get(hv, Field::kOuterUdpDport), 4791u);
  EXPECT_EQ(Get(hv, Field::kBthOpcode), 0x0au);
  EXPECT_EQ(Get(hv, Field::kBthDstQp), 0xabcdefu);
  EXPECT_EQ(Get(hv, Field::kBthA), 1u);
  EXPECT_EQ(Get(hv, Field::kTunnelHeader0), 0u);  // RoCE is not a tunnel
  EXPECT_EQ(l.bth, 42);
  EXPECT_EQ(l.tunnel_type, TunnelType::kNone);
  EXPECT_EQ(l.tunnel, 0);
  f[42 + 1] |= 1;  // transport header version 1: not recognised
  hv = Parse(f, &l);
  EXPECT_EQ(Get(hv, Field::kBthDstQp), 0u);
  EXPECT_EQ(l.bth, 0);
}

TEST(PacketParserTunnelTest, InnerFragmentsExtensionsAndIcmp) {
  TunnelFrameSpec t = Tunnel(Encap::kVxlan);
  t.inner.l3 = L3Kind::kIpv6;
  t.inner.ipv6_extensions = {0, 44};
  t.inner.more_fragments = true;
  t.inner.protocol = kIpProtoUdp;
  PacketLayers l;
  hw::HeaderVector hv = Parse(BuildFrame(t), &l);
  EXPECT_EQ(Get(hv, Field::kInnerFrag), 1u);
  EXPECT_EQ(Get(hv, Field::kOuterFrag), 0u);
  EXPECT_EQ(Get(hv, Field::kInnerIpProtocol), 17u);
  EXPECT_EQ(Get(hv, Field::kInnerUdpDport), 80u);
  EXPECT_EQ(l.inner_l4, 50 + 14 + 40 + 16);
  t.inner.fragment_offset = 8;  // a later fragment: no inner L4
  hv = Parse(BuildFrame(t), &l);
  EXPECT_EQ(Get(hv, Field::kInnerFrag), 1u);
  EXPECT_EQ(Get(hv, Field::kInnerUdpDport), 0u);
  EXPECT_EQ(l.inner_l3, 50 + 14);
  EXPECT_EQ(l.inner_l4, 0);
  // An inner ICMP header is found but fills no field: misc3's ICMP fields are the outer packet's.
  t.inner = Tunnel(Encap::kVxlan).inner;
  t.inner.protocol = kIpProtoIcmp;
  t.inner.icmp_type = 8;
  hv = Parse(BuildFrame(t), &l);
  EXPECT_EQ(Get(hv, Field::kIcmpType), 0u);
  EXPECT_EQ(Get(hv, Field::kInnerIpProtocol), 1u);
  EXPECT_EQ(l.inner_l4, 50 + 14 + 20);
  EXPECT_EQ(l.inner_payload, 50 + 14 + 28);
}

TEST(PacketParserTunnelTest, OneLevelOfTunnelAndNoTunnelInFragments) {
  // VXLAN inside VXLAN: the inner UDP ports are parsed, the second VXLAN header is not.
  TunnelFrameSpec t = Tunnel(Encap::kVxlan);
  t.tunnel.vni = 1;
  t.inner.protocol = kIpProtoUdp;
  t.inner.dport = 4789;
  t.inner.payload_len = 8 + 60;
  PacketLayers l;
  hw::HeaderVector hv = Parse(BuildFrame(t), &l);
  EXPECT_EQ(Get(hv, Field::kVxlanVni), 1u);
  EXPECT_EQ(Get(hv, Field::kInnerUdpDport), 4789u);
  EXPECT_EQ(l.inner_payload, 50 + 14 + 20 + 8);
  // A fragmented outer packet carries no recognised tunnel, even in its first fragment.
  t.outer.more_fragments = true;
  hv = Parse(BuildFrame(t), &l);
  EXPECT_EQ(Get(hv, Field::kOuterUdpDport), 4789u);
  EXPECT_EQ(Get(hv, Field::kVxlanVni), 0u);
  EXPECT_EQ(Get(hv, Field::kInnerIpVersion), 0u);
  EXPECT_EQ(l.tunnel, 0);
}

// Cutting a tunnelled frame anywhere parses exactly the layers that are whole.
TEST(PacketParserTunnelTest, TruncatedTunnelsParseOnlyWhatIsThere) {
  TunnelFrameSpec t = Tunnel(Encap::kVxlan);
  t.tunnel.vni = 0x42;
  t.inner.vlans = {{0x8100, 9}};
  const std::vector<uint8_t> full = BuildFrame(t);
  const size_t tunnel = 42, inner_l2 = 50, inner_l3 = 50 + 18, inner_l4 = inner_l3 + 20;
  for (size_t len = 0; len <= full.size(); ++len) {
    std::vector<uint8_t> cut(full.begin(), full.begin() + len);  // exactly `len` bytes, for ASan
    hw::HeaderVector hv;
    PacketLayers l = ParsePacket(len ? cut.data() : nullptr, len, 0xffff, &hv);
    EXPECT_EQ(Get(hv, Field::kOuterUdpDport), len >= tunnel ? 4789u : 0u) << len;
    EXPECT_EQ(Get(hv, Field::kVxlanVni), len >= tunnel + 8 ? 0x42u : 0u) << len;
    EXPECT_EQ(l.tunnel, len >= tunnel + 8 ? tunnel : 0u) << len;
    EXPECT_EQ(Get(hv, Field::kTunnelHeader3) != 0, len >= tunnel + 16) << len;
    EXPECT_EQ(Get(hv, Field::kInnerDmac15_0), len >= inner_l2 + 14 ? 0x000au : 0u) << len;
    EXPECT_EQ(Get(hv, Field::kInnerFirstVid), len >= inner_l2 + 18 ? 9u : 0u) << len;
    EXPECT_EQ(l.inner_l2, len >= inner_l2 + 14 ? inner_l2 : 0u) << len;
    EXPECT_EQ(Get(hv, Field::kInnerIpVersion), len >= inner_l3 + 20 ? 4u : 0u) << len;
    EXPECT_EQ(l.inner_l3, len >= inner_l3 + 20 ? inner_l3 : 0u) << len;
    EXPECT_EQ(Get(hv, Field::kInnerTcpDport), len >= inner_l4 + 20 ? 80u : 0u) << len;
    EXPECT_EQ(l.inner_l4, len >= inner_l4 + 20 ? inner_l4 : 0u) << len;
  }
}

TEST(PacketParserTunnelTest, TruncatedGtpuAndGeneve) {
  TunnelFrameSpec t = Tunnel(Encap::kGtpu);
  t.tunnel.gtpu_teid = 7;
  t.tunnel.gtpu_extensions = {{0x85, {0x00, 0x05}}};
  std::vector<uint8_t> full = BuildFrame(t);
  for (size_t len = 0; len <= full.size(); ++len) {
    std::vector<uint8_t> cut(full.begin(), full.begin() + len);
    hw::HeaderVector hv;
    PacketLayers l = ParsePacket(len ? cut.data() : nullptr, len, 0xffff, &hv);
    EXPECT_EQ(Get(hv, Field::kGtpuTeid), len >= 42 + 8 ? 7u : 0u) << len;
    EXPECT_EQ(Get(hv, Field::kGtpuDw2), len >= 42 + 12 ? 0x85u : 0u) << len;
    EXPECT_EQ(Get(hv, Field::kGtpuFirstExtDw0), len >= 42 + 16 ? 0x01000500u : 0u) << len;
    EXPECT_EQ(l.inner_l3, len >= 42 + 16 + 20 ? 42 + 16 : 0) << len;
  }
  t = Tunnel(Encap::kGeneve);
  t.tunnel.geneve_options = {{0x0102, 0x80, {0x5a5a5a5a}}};
  full = BuildFrame(t);
  for (size_t len = 0; len <= full.size(); ++len) {
    std::vector<uint8_t> cut(full.begin(), full.begin() + len);
    hw::HeaderVector hv;
    PacketLayers l =
        ParsePacket(len ? cut.data() : nullptr, len, 0xffff, &hv, GeneveOptionSelector::For(0x0102, 0x80));
    EXPECT_EQ(Get(hv, Field::kGeneveOptLen), len >= 42 + 8 ? 2u : 0u) << len;
    EXPECT_EQ(Get(hv, Field::kGeneveTlvOption0Data), len >= 42 + 16 ? 0x5a5a5a5au : 0u) << len;
    EXPECT_EQ(l.inner_l2, len >= 42 + 16 + 14 ? 42 + 16 : 0) << len;
  }
}

// Random damage to tunnelled frames: the parser stays inside the frame (ASan) and its layers stay ordered.
// One frame of every tunnel kind (and RoCE v2), with optional fields, options and extensions.
std::vector<TunnelFrameSpec> EveryTunnelKind() {
  std::vector<TunnelFrameSpec> specs;
  for (Encap kind : {Encap::kVxlan, Encap::kVxlanGpe, Encap::kGeneve, Encap::kGre, Encap::kMpls,
                     Encap::kMplsOverUdp, Encap::kGtpu, Encap::kRoceV2}) {
    TunnelFrameSpec t = Tunnel(kind);
    t.tunnel.mpls = {{1, 0, 1}, {2, 0, 2}};
    t.tunnel.geneve_options = {{0x0102, 0x80, {1, 2}}};
    t.tunnel.gtpu_extensions = {{0x85, {0, 1}}};
    t.tunnel.gre_key_present = true;
    t.inner.l3 = kind == Encap::kGtpu ? L3Kind::kIpv6 : L3Kind::kIpv4;
    t.inner.ipv6_extensions = {0};
    specs.push_back(t);
  }
  return specs;
}

// `f` with 1 to 3 bits flipped and up to 15 bytes cut off its end.
std::vector<uint8_t> Damaged(std::vector<uint8_t> f, std::mt19937& rng) {
  for (int flips = 1 + rng() % 3; flips > 0; --flips)
    f[rng() % f.size()] ^= static_cast<uint8_t>(1 << rng() % 8);
  f.resize(f.size() - rng() % 16);
  return f;
}

TEST(PacketParserTunnelTest, DamagedTunnelsKeepLayersOrdered) {
  const std::vector<TunnelFrameSpec> specs = EveryTunnelKind();
  std::mt19937 rng(7);
  for (int i = 0; i < 20000; ++i) {
    std::vector<uint8_t> exact = Damaged(BuildFrame(specs[i % specs.size()]), rng);
    hw::HeaderVector hv;
    PacketLayers l = ParsePacket(exact.data(), exact.size(), 0xffff, &hv);
    const size_t size = exact.size();
    ASSERT_LE(l.tunnel, size);
    ASSERT_LE(l.inner_payload, size);
    ASSERT_TRUE(l.tunnel == 0 || l.tunnel >= l.payload) << i;
    ASSERT_TRUE(l.inner_l2 == 0 || l.inner_l2 > l.tunnel) << i;
    ASSERT_TRUE(l.inner_l3 == 0 || (l.inner_l3 > l.tunnel && l.inner_l3 > l.inner_l2)) << i;
    ASSERT_TRUE(l.inner_l4 == 0 || l.inner_l4 > l.inner_l3) << i;
    ASSERT_TRUE(l.inner_payload == 0 || l.inner_payload > l.inner_l4) << i;
    ASSERT_EQ(l.tunnel != 0, l.tunnel_type != TunnelType::kNone) << i;
    ASSERT_EQ(l.inner_l3 != 0, Get(hv, Field::kInnerIpVersion) != 0) << i;
    ASSERT_TRUE(l.bth == 0 || l.tunnel == 0) << i;
  }
}

// Frames of every kind the outer parse meets: tunnels, VLAN tags, IPv6 extensions, plain TCP, UDP and ICMP,
// fragments, each at every truncation, and damaged copies — among them plain IPv4 frames with random header
// bytes, and frames one flipped bit away from plain.
std::vector<std::vector<uint8_t>> OuterParseFrames() {
  std::vector<TunnelFrameSpec> specs = EveryTunnelKind();
  for (size_t i = 0, n = specs.size(); i < n; ++i) {
    TunnelFrameSpec t = specs[i];
    t.outer.vlans = {{0x88a8, 7}, {0x8100, 9}};
    t.outer.l3 = L3Kind::kIpv6;
    t.outer.ipv6_extensions = {0, 60};
    specs.push_back(t);
  }
  TunnelFrameSpec plain = Tunnel(Encap::kNone);
  for (uint8_t protocol : {kIpProtoTcp, kIpProtoUdp, kIpProtoIcmp}) {
    plain.outer.protocol = protocol;
    specs.push_back(plain);
  }
  plain.outer.more_fragments = true;
  specs.push_back(plain);
  std::vector<std::vector<uint8_t>> frames;
  for (const TunnelFrameSpec& t : specs) {
    const std::vector<uint8_t> f = BuildFrame(t);
    for (size_t len = 0; len <= f.size(); ++len) frames.emplace_back(f.begin(), f.begin() + len);
  }
  std::mt19937 rng(11);
  for (int i = 0; i < 5000; ++i) frames.push_back(Damaged(BuildFrame(specs[i % specs.size()]), rng));
  for (uint8_t protocol : {kIpProtoTcp, kIpProtoUdp}) {
    plain.outer.protocol = protocol;
    plain.outer.more_fragments = false;
    const std::vector<uint8_t> f = BuildFrame(plain);
    for (int i = 0; i < 2000; ++i) {
      std::vector<uint8_t> g = f;
      // Every header byte at random but those that keep a frame plain: the ethertype, IPv4's version and
      // header length, its fragment bits and protocol, TCP's data offset.
      for (size_t b = 0; b < 54 && b < g.size(); ++b) {
        if (b != 14 && b != 46 && b != 12 && b != 13 && b != 20 && b != 23) {
          g[b] = static_cast<uint8_t>(rng());
        }
      }
      frames.push_back(g);
    }
  }
  return frames;
}

// ParseOuterHeaders fills the words FilledByOuterParse names exactly as ParsePacket does, whatever the
// vector held before, and finds the same outer layers: on tunnels, VLAN tags, IPv6 extensions, fragments,
// every truncation and damage.
TEST(PacketParserTunnelTest, OuterParseFillsItsWordsAsTheFullParse) {
  const std::vector<std::vector<uint8_t>> frames = OuterParseFrames();
  size_t words = 0;
  for (const std::vector<uint8_t>& f : frames) {
    const std::vector<uint8_t> exact(f);  // exactly its size on the heap: ASan sees any read past it
    const uint8_t* data = exact.empty() ? nullptr : exact.data();
    hw::HeaderVector full, outer;
    const PacketLayers full_layers = ParsePacket(data, exact.size(), 3, &full);
    std::memset(outer.bytes, 0xa5, sizeof outer.bytes);
    const PacketLayers outer_layers = ParseOuterHeaders(data, exact.size(), 3, &outer);
    EXPECT_EQ(outer_layers.l3, full_layers.l3) << exact.size() << "-byte frame";
    EXPECT_EQ(outer_layers.l4, full_layers.l4) << exact.size() << "-byte frame";
    EXPECT_EQ(outer_layers.payload, full_layers.payload) << exact.size() << "-byte frame";
    EXPECT_EQ(outer_layers.tunnel_type, TunnelType::kNone);
    EXPECT_EQ(outer_layers.inner_l2 | outer_layers.inner_l3 | outer_layers.inner_l4, 0);
    for (size_t w = 0; w < hw::kMatchParamBytes; w += 4) {
      if (!FilledByOuterParse(w)) continue;
      ++words;
      ASSERT_EQ(std::memcmp(full.bytes + w, outer.bytes + w, 4), 0)
          << "word at byte " << w << " of a " << exact.size() << "-byte frame";
    }
  }
  EXPECT_EQ(words, frames.size() * (hw::kSectionBytes / 4 + 1));
}

// PlainIpv4KeyReader reads from each plain IPv4 frame the key Definer::Extract takes from its outer parse,
// and refuses every other frame: for single words, the five-tuple with TCP and UDP ports folded, and random
// masks over every word the outer parse fills (with the port fold either way round).
TEST(PacketParserTunnelTest, PlainKeysAreTheOuterParsesKeys) {
  std::vector<size_t> outer_words;
  for (size_t w = 0; w < hw::kMatchParamBytes; w += 4) {
    if (FilledByOuterParse(w)) outer_words.push_back(w);
  }
  const uint32_t tcp_ports = hw::Info(Field::kOuterTcpSport).word_offset();
  const uint32_t udp_ports = hw::Info(Field::kOuterUdpSport).word_offset();
  std::vector<hw::Definer> definers;
  for (size_t w : outer_words) {
    uint8_t mask[hw::kMatchParamBytes] = {};
    std::memset(mask + w, 0xff, 4);
    definers.push_back(hw::Definer::FromMask(mask));
  }
  {
    uint8_t mask[hw::kMatchParamBytes] = {};
    for (Field f : {Field::kOuterIpVersion, Field::kOuterIpProtocol, Field::kOuterSrcIp31_0,
                    Field::kOuterDstIp31_0, Field::kOuterTcpSport, Field::kOuterTcpDport}) {
      hw::SetFieldAllOnes(mask, f);
    }
    const hw::Definer::Fold fold{tcp_ports, udp_ports};
    definers.push_back(hw::Definer::FromMask(mask, {&fold, 1}));
  }
  std::mt19937 rng(12);
  for (int i = 0; i < 200; ++i) {
    uint8_t mask[hw::kMatchParamBytes] = {};
    for (size_t w : outer_words) {
      if (rng() % 3 == 0) hw::StoreBe32(mask + w, static_cast<uint32_t>(rng()));
    }
    std::vector<hw::Definer::Fold> folds;
    if (i % 3 == 1) folds.push_back({tcp_ports, udp_ports});
    if (i % 3 == 2) folds.push_back({udp_ports, tcp_ports});
    definers.push_back(hw::Definer::FromMask(mask, folds));
  }
  size_t plain = 0, keys = 0;
  const std::vector<std::vector<uint8_t>> frames = OuterParseFrames();
  // Each way of reading, one reader through every definer: Prepare must compile each anew, and find the
  // one it has when asked again.
  for (const bool byte_shuffle : {true, false}) {
    PlainIpv4KeyReader reader(byte_shuffle);
    for (const hw::Definer& d : definers) {
      ASSERT_TRUE(reader.Prepare(d)) << d.key_words() << " words";
      ASSERT_TRUE(reader.Prepare(d));
      ASSERT_EQ(reader.key_words(), d.key_words());
      for (const std::vector<uint8_t>& f : frames) {
        const std::vector<uint8_t> exact(f);  // exactly its size on the heap: ASan sees any read past it
        const uint8_t* data = exact.empty() ? nullptr : exact.data();
        uint32_t read[hw::kMatchParamBytes / 4], want[hw::kMatchParamBytes / 4];
        std::memset(read, 0xa5, sizeof read);
        const bool was_plain = reader.Read(data, exact.size(), 7, read);
        ASSERT_EQ(was_plain, IsPlainIpv4Frame(data, exact.size()));
        if (!was_plain) {
          EXPECT_EQ(read[0], 0xa5a5a5a5u) << "a refused frame's key was written";
          continue;
        }
        EXPECT_EQ(read[d.key_words()], 0xa5a5a5a5u) << "written past the key";
        ++plain;
        hw::HeaderVector hv;
        ParseOuterHeaders(data, exact.size(), 7, &hv);
        d.Extract(hv.bytes, want);
        for (size_t k = 0; k < d.key_words(); ++k, ++keys) {
          ASSERT_EQ(read[k], want[k]) << "key word " << k << " (layout byte " << d.word(k).offset << ") of a "
                                      << exact.size() << "-byte frame, byte shuffle " << byte_shuffle;
        }
      }
    }
  }
  EXPECT_GT(plain, 2 * definers.size() * 1000);  // the random plain frames mostly stay plain
  EXPECT_GT(keys, plain);
}

// ReadBurst writes the keys of a burst's plain frames end to end, each where its frame's place says, marks
// them in its result, and leaves the other frames' places as they were: for keys that end in every part of
// a 16-byte block (1, 3, 4 and 6 words) and the longest key (the outer section and the source port, 17).
TEST(PacketParserTunnelTest, PlainKeysOfABurstLieEndToEnd) {
  const hw::Definer::Fold fold{static_cast<uint32_t>(hw::Info(Field::kOuterTcpSport).word_offset()),
                               static_cast<uint32_t>(hw::Info(Field::kOuterUdpSport).word_offset())};
  std::vector<hw::Definer> definers;
  for (const std::vector<Field>& fields : std::vector<std::vector<Field>>{
           {Field::kOuterDstIp31_0},
           {Field::kOuterIpProtocol, Field::kOuterSrcIp31_0, Field::kOuterTcpSport},
           {Field::kOuterIpVersion, Field::kOuterIpProtocol, Field::kOuterSrcIp31_0, Field::kOuterDstIp31_0,
            Field::kOuterTcpSport, Field::kOuterTcpDport},
           {Field::kOuterIpVersion, Field::kOuterIpProtocol, Field::kOuterSrcIp31_0, Field::kOuterDstIp31_0,
            Field::kOuterTcpSport, Field::kOuterTcpDport, Field::kOuterIpTtlHoplimit, Field::kSourcePort}}) {
    uint8_t mask[hw::kMatchParamBytes] = {};
    for (Field f : fields) hw::SetFieldAllOnes(mask, f);
    definers.push_back(hw::Definer::FromMask(mask, {&fold, 1}));
  }
  {
    uint8_t mask[hw::kMatchParamBytes] = {};
    std::memset(mask + hw::SectionOffset(hw::Section::kOuter), 0xff, hw::kSectionBytes);
    hw::SetFieldAllOnes(mask, Field::kSourcePort);
    definers.push_back(hw::Definer::FromMask(mask));
  }
  std::vector<size_t> lengths;
  for (const hw::Definer& d : definers) lengths.push_back(d.key_words());
  ASSERT_EQ(lengths, (std::vector<size_t>{1, 3, 4, 6, 17}));
  // Each frame exactly its size on the heap: ASan sees any read past it.
  std::vector<std::unique_ptr<uint8_t[]>> copies;
  std::vector<absl::Span<const uint8_t>> views;
  for (const std::vector<uint8_t>& f : OuterParseFrames()) {
    copies.push_back(std::make_unique<uint8_t[]>(f.size()));
    std::copy(f.begin(), f.end(), copies.back().get());
    views.emplace_back(f.empty() ? nullptr : copies.back().get(), f.size());
  }
  for (const bool byte_shuffle : {true, false}) {
    PlainIpv4KeyReader reader(byte_shuffle);
    for (const hw::Definer& d : definers) {
      ASSERT_TRUE(reader.Prepare(d));
      const size_t words = d.key_words();
      size_t bursts_with_both = 0;
      for (size_t at = 0; at < views.size(); at += 64) {
        const size_t n = std::min<size_t>(64, views.size() - at);
        std::vector<uint32_t> keys(n * words + 1, 0xa5a5a5a5u);
        const uint64_t plain = reader.ReadBurst(views.data() + at, n, 0x1f2, keys.data());
        EXPECT_EQ(keys.back(), 0xa5a5a5a5u) << "written past the last key";
        size_t plain_frames = 0;
        for (size_t j = 0; j < n; ++j) {
          const absl::Span<const uint8_t> f = views[at + j];
          const bool is_plain = IsPlainIpv4Frame(f.data(), f.size());
          ASSERT_EQ((plain >> j & 1) != 0, is_plain) << "frame " << at + j;
          plain_frames += is_plain;
          uint32_t want[hw::kMatchParamBytes / 4];
          if (is_plain) {
            hw::HeaderVector hv;
            ParseOuterHeaders(f.data(), f.size(), 0x1f2, &hv);
            d.Extract(hv.bytes, want);
          } else {
            std::fill(want, want + words, 0xa5a5a5a5u);
          }
          for (size_t k = 0; k < words; ++k) {
            ASSERT_EQ(keys[j * words + k], want[k]) << "frame " << at + j << " key word " << k << " of "
                                                    << words << ", byte shuffle " << byte_shuffle;
          }
        }
        bursts_with_both += plain_frames > 0 && plain_frames < n;
      }
      EXPECT_GT(bursts_with_both, 10u);
    }
  }
}

// The byte shuffle runs wherever the CPU has one: a reader asked for it says so, and one asked for the
// portable loop takes it.
TEST(PacketParserTunnelTest, PlainKeysUseTheByteShuffleWhereThereIsOne) {
#if defined(__x86_64__)
  EXPECT_EQ(PlainIpv4KeyReader(true).byte_shuffle(), __builtin_cpu_supports("ssse3") != 0);
#else
  EXPECT_FALSE(PlainIpv4KeyReader(true).byte_shuffle());
#endif
  EXPECT_FALSE(PlainIpv4KeyReader(false).byte_shuffle());
}

// A definer that reads beyond the outer headers gets no plain reader: its key needs a parse.
TEST(PacketParserTunnelTest, KeysBeyondTheOuterHeadersHaveNoPlainReader) {
  uint8_t mask[hw::kMatchParamBytes] = {};
  hw::SetFieldAllOnes(mask, Field::kOuterSrcIp31_0);
  hw::SetFieldAllOnes(mask, Field::kInnerSrcIp31_0);
  PlainIpv4KeyReader reader;
  EXPECT_FALSE(reader.Prepare(hw::Definer::FromMask(mask)));
}

// An empty key (a catch-all matcher's) is read from every plain frame, as nothing, on a fresh reader and
// after a refused definer.
TEST(PacketParserTunnelTest, AnEmptyKeyIsReadFromEveryPlainFrame) {
  FrameSpec spec;
  const std::vector<uint8_t> plain = BuildFrame(spec);
  spec.vlans = {{0x8100, 5}};
  const std::vector<uint8_t> tagged = BuildFrame(spec);
  uint8_t inner[hw::kMatchParamBytes] = {};
  hw::SetFieldAllOnes(inner, Field::kInnerSrcIp31_0);
  for (const bool refused_first : {false, true}) {
    PlainIpv4KeyReader reader;
    if (refused_first) {
      ASSERT_FALSE(reader.Prepare(hw::Definer::FromMask(inner)));
    }
    ASSERT_TRUE(reader.Prepare(hw::Definer()));
    EXPECT_EQ(reader.key_words(), 0u);
    uint32_t key = 0xa5a5a5a5u;
    EXPECT_TRUE(reader.Read(plain.data(), plain.size(), 1, &key));
    EXPECT_FALSE(reader.Read(tagged.data(), tagged.size(), 1, &key));
    EXPECT_EQ(key, 0xa5a5a5a5u);
  }
}

// Nor does one that folds two words a plain frame fills from different bytes (no matcher compiles such a
// fold; a parse serves it all the same).
TEST(PacketParserTunnelTest, FoldsOfDifferentBytesHaveNoPlainReader) {
  uint8_t mask[hw::kMatchParamBytes] = {};
  hw::SetFieldAllOnes(mask, Field::kOuterSrcIp31_0);
  hw::SetFieldAllOnes(mask, Field::kOuterDstIp31_0);
  const hw::Definer::Fold fold{static_cast<uint32_t>(hw::Info(Field::kOuterSrcIp31_0).word_offset()),
                               static_cast<uint32_t>(hw::Info(Field::kOuterDstIp31_0).word_offset())};
  PlainIpv4KeyReader reader;
  EXPECT_FALSE(reader.Prepare(hw::Definer::FromMask(mask, {&fold, 1})));
  // Refused, then a definer it takes: the keys are that definer's.
  const hw::Definer unfolded = hw::Definer::FromMask(mask);
  ASSERT_TRUE(reader.Prepare(unfolded));
  FrameSpec spec;
  spec.ipv4_src = {0x0a000001};
  spec.ipv4_dst = {0xc0a80102};
  const std::vector<uint8_t> frame = BuildFrame(spec);
  uint32_t read[2], want[2];
  ASSERT_TRUE(reader.Read(frame.data(), frame.size(), 3, read));
  hw::HeaderVector hv;
  ParseOuterHeaders(frame.data(), frame.size(), 3, &hv);
  unfolded.Extract(hv.bytes, want);
  EXPECT_EQ(read[0], want[0]);
  EXPECT_EQ(read[1], want[1]);
  EXPECT_EQ(hw::LoadBe32(reinterpret_cast<const uint8_t*>(&read[0])), 0x0a000001u);
}

}  // namespace
}  // namespace drsim::sim
