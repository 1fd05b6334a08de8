// The packet parser on tunnelled frames (VXLAN, VXLAN-GPE, GENEVE, GRE, MPLS, GTP-U) and RoCE v2: fields,
// layer offsets, truncation and malformed tunnel headers.
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "hw/byte_order.h"
#include "sim/frame_builder.h"
#include "sim/packet_parser.h"
#include "sim/tunnel_frames_testing.h"

namespace drsim::sim {
namespace {

using hw::Field;

uint32_t Get(const hw::HeaderVector& hv, Field f) { return hw::GetField(hv.bytes, f); }

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

}  // namespace
}  // namespace drsim::sim
