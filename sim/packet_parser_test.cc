#include "sim/packet_parser.h"

#include <vector>

#include "gtest/gtest.h"
#include "hw/byte_order.h"
#include "hw/match_params.h"
#include "sim/frame_builder.h"

namespace drsim::sim {
namespace {

using hw::Field;

uint32_t Get(const hw::HeaderVector& hv, Field f) { return hw::GetField(hv.bytes, f); }

FrameSpec BaseSpec() {
  FrameSpec s;
  s.dmac = *hw::MacAddress::Parse("02:00:00:00:00:01");
  s.smac = *hw::MacAddress::Parse("02:00:00:00:00:02");
  s.ipv4_src = *hw::Ipv4Address::Parse("10.0.0.1");
  s.ipv4_dst = *hw::Ipv4Address::Parse("10.0.0.2");
  s.ipv6_src = *hw::Ipv6Address::Parse("2001:db8::1");
  s.ipv6_dst = *hw::Ipv6Address::Parse("2001:db8::2");
  return s;
}

hw::HeaderVector Parse(const std::vector<uint8_t>& f, PacketLayers* layers = nullptr) {
  hw::HeaderVector hv;
  PacketLayers l = ParsePacket(f.data(), f.size(), 0xffff, &hv);
  if (layers) *layers = l;
  return hv;
}

TEST(PacketParserTest, EthernetAndTwoVlanTags) {
  FrameSpec s = BaseSpec();
  s.vlans = {{0x88a8, 0x6123}, {0x8100, 0x2456}};
  hw::HeaderVector hv = Parse(BuildFrame(s));
  EXPECT_EQ(Get(hv, Field::kOuterSmac47_16), 0x02000000u);
  EXPECT_EQ(Get(hv, Field::kOuterSmac15_0), 0x0002u);
  EXPECT_EQ(Get(hv, Field::kOuterDmac15_0), 0x0001u);
  EXPECT_EQ(Get(hv, Field::kOuterSvlanTag), 1u);
  EXPECT_EQ(Get(hv, Field::kOuterCvlanTag), 0u);
  EXPECT_EQ(Get(hv, Field::kOuterFirstPrio), 3u);
  EXPECT_EQ(Get(hv, Field::kOuterFirstCfi), 0u);
  EXPECT_EQ(Get(hv, Field::kOuterFirstVid), 0x123u);
  EXPECT_EQ(Get(hv, Field::kOuterSecondCvlanTag), 1u);
  EXPECT_EQ(Get(hv, Field::kOuterSecondSvlanTag), 0u);
  EXPECT_EQ(Get(hv, Field::kOuterSecondPrio), 1u);
  EXPECT_EQ(Get(hv, Field::kOuterSecondVid), 0x456u);
  EXPECT_EQ(Get(hv, Field::kOuterEthertype), 0x0800u);  // after the last tag
  EXPECT_EQ(Get(hv, Field::kOuterIpVersion), 4u);
  EXPECT_EQ(Get(hv, Field::kSourcePort), 0xffffu);
}

TEST(PacketParserTest, Ipv4WithOptionsAndTcp) {
  FrameSpec s = BaseSpec();
  s.ipv4_option_words = 3;
  s.dscp = 46;
  s.ecn = 1;
  s.ttl = 17;
  s.protocol = kIpProtoTcp;
  s.sport = 1234;
  s.dport = 80;
  s.tcp_flags = 0x1c2;  // NS, ECE, CWR... plus SYN
  s.seq = 0x11223344;
  s.ack = 0x55667788;
  PacketLayers layers;
  hw::HeaderVector hv = Parse(BuildFrame(s), &layers);
  EXPECT_EQ(layers.l3, 14);
  EXPECT_EQ(layers.l4, 14 + 32);
  EXPECT_EQ(Get(hv, Field::kOuterIpv4Ihl), 8u);
  EXPECT_EQ(Get(hv, Field::kOuterIpDscp), 46u);
  EXPECT_EQ(Get(hv, Field::kOuterIpEcn), 1u);
  EXPECT_EQ(Get(hv, Field::kOuterIpTtlHoplimit), 17u);
  EXPECT_EQ(Get(hv, Field::kOuterIpProtocol), 6u);
  EXPECT_EQ(Get(hv, Field::kOuterSrcIp31_0), 0x0a000001u);
  EXPECT_EQ(Get(hv, Field::kOuterDstIp31_0), 0x0a000002u);
  EXPECT_EQ(Get(hv, Field::kOuterSrcIp127_96), 0u);
  EXPECT_EQ(Get(hv, Field::kOuterTcpSport), 1234u);
  EXPECT_EQ(Get(hv, Field::kOuterTcpDport), 80u);
  EXPECT_EQ(Get(hv, Field::kOuterUdpDport), 0u);
  EXPECT_EQ(Get(hv, Field::kOuterTcpFlags), 0x1c2u);
  EXPECT_EQ(Get(hv, Field::kOuterTcpSeqNum), 0x11223344u);
  EXPECT_EQ(Get(hv, Field::kOuterTcpAckNum), 0x55667788u);
  EXPECT_EQ(Get(hv, Field::kOuterFrag), 0u);
}

TEST(PacketParserTest, Ipv4Fragments) {
  FrameSpec s = BaseSpec();
  s.protocol = kIpProtoUdp;
  s.dport = 53;
  s.more_fragments = true;  // first fragment: L4 is there
  hw::HeaderVector hv = Parse(BuildFrame(s));
  EXPECT_EQ(Get(hv, Field::kOuterFrag), 1u);
  EXPECT_EQ(Get(hv, Field::kOuterUdpDport), 53u);
  s.more_fragments = false;
  s.fragment_offset = 100;  // last fragment: no L4
  s.payload_len = 40;
  PacketLayers layers;
  hv = Parse(BuildFrame(s), &layers);
  EXPECT_EQ(Get(hv, Field::kOuterFrag), 1u);
  EXPECT_EQ(Get(hv, Field::kOuterUdpDport), 0u);
  EXPECT_EQ(Get(hv, Field::kOuterIpProtocol), 17u);
  EXPECT_EQ(layers.l4, 0);
}

TEST(PacketParserTest, Ipv6ExtensionHeadersAndUdp) {
  FrameSpec s = BaseSpec();
  s.l3 = L3Kind::kIpv6;
  s.ipv6_extensions = {0, 43, 60, 51};
  s.protocol = kIpProtoUdp;
  s.sport = 4791;
  s.dport = 4789;
  s.flow_label = 0xabcde;
  s.dscp = 10;
  s.ttl = 9;
  PacketLayers layers;
  hw::HeaderVector hv = Parse(BuildFrame(s), &layers);
  EXPECT_EQ(Get(hv, Field::kOuterIpVersion), 6u);
  EXPECT_EQ(Get(hv, Field::kOuterEthertype), 0x86ddu);
  EXPECT_EQ(Get(hv, Field::kOuterIpProtocol), 17u);  // the upper layer, past the extensions
  EXPECT_EQ(Get(hv, Field::kOuterIpv6FlowLabel), 0xabcdeu);
  EXPECT_EQ(Get(hv, Field::kOuterIpDscp), 10u);
  EXPECT_EQ(Get(hv, Field::kOuterIpTtlHoplimit), 9u);
  EXPECT_EQ(Get(hv, Field::kOuterSrcIp127_96), 0x20010db8u);
  EXPECT_EQ(Get(hv, Field::kOuterDstIp31_0), 2u);
  EXPECT_EQ(Get(hv, Field::kOuterUdpSport), 4791u);
  EXPECT_EQ(Get(hv, Field::kOuterUdpDport), 4789u);
  EXPECT_EQ(layers.l4, 14 + 40 + 32);
}

TEST(PacketParserTest, Ipv6Fragments) {
  FrameSpec s = BaseSpec();
  s.l3 = L3Kind::kIpv6;
  s.ipv6_extensions = {44};
  s.protocol = kIpProtoTcp;
  s.dport = 22;
  s.more_fragments = true;
  hw::HeaderVector hv = Parse(BuildFrame(s));
  EXPECT_EQ(Get(hv, Field::kOuterFrag), 1u);
  EXPECT_EQ(Get(hv, Field::kOuterTcpDport), 22u);
  s.fragment_offset = 3;
  hv = Parse(BuildFrame(s));
  EXPECT_EQ(Get(hv, Field::kOuterFrag), 1u);
  EXPECT_EQ(Get(hv, Field::kOuterTcpDport), 0u);
  EXPECT_EQ(Get(hv, Field::kOuterIpProtocol), 6u);
}

TEST(PacketParserTest, IcmpAndIcmpv6) {
  FrameSpec s = BaseSpec();
  s.protocol = kIpProtoIcmp;
  s.icmp_type = 8;
  s.icmp_code = 0;
  s.icmp_data = 0x00010002;
  hw::HeaderVector hv = Parse(BuildFrame(s));
  EXPECT_EQ(Get(hv, Field::kIcmpType), 8u);
  EXPECT_EQ(Get(hv, Field::kIcmpHeaderData), 0x00010002u);
  EXPECT_EQ(Get(hv, Field::kIcmpv6Type), 0u);
  s.l3 = L3Kind::kIpv6;
  s.protocol = kIpProtoIcmpv6;
  s.icmp_type = 135;
  s.icmp_code = 0;
  hv = Parse(BuildFrame(s));
  EXPECT_EQ(Get(hv, Field::kIcmpv6Type), 135u);
  EXPECT_EQ(Get(hv, Field::kIcmpType), 0u);
}

TEST(PacketParserTest, TruncatedFramesParseOnlyWhatIsThere) {
  FrameSpec s = BaseSpec();
  s.vlans = {{0x8100, 5}};
  s.protocol = kIpProtoTcp;
  s.dport = 443;
  std::vector<uint8_t> full = BuildFrame(s);
  const size_t l3 = 18, l4 = 18 + 20;
  for (size_t len = 0; len <= full.size(); ++len) {
    // A heap copy of exactly `len` bytes, so reading past it is caught by ASan.
    std::vector<uint8_t> cut(full.begin(), full.begin() + len);
    hw::HeaderVector hv;
    PacketLayers layers = ParsePacket(len ? cut.data() : nullptr, len, 0xffff, &hv);
    EXPECT_EQ(Get(hv, Field::kOuterCvlanTag), len >= 18 ? 1u : 0u) << len;
    EXPECT_EQ(Get(hv, Field::kOuterIpVersion), len >= l3 + 20 ? 4u : 0u) << len;
    EXPECT_EQ(Get(hv, Field::kOuterTcpDport), len >= l4 + 20 ? 443u : 0u) << len;
    EXPECT_EQ(layers.l4 != 0, len >= l4 + 20) << len;
  }
}

TEST(PacketParserTest, MalformedHeadersStopTheParse) {
  FrameSpec s = BaseSpec();
  std::vector<uint8_t> f = BuildFrame(s);
  f[14] = 0x44;  // IHL 4 < 5
  hw::HeaderVector hv = Parse(f);
  EXPECT_EQ(Get(hv, Field::kOuterEthertype), 0x0800u);
  EXPECT_EQ(Get(hv, Field::kOuterIpVersion), 0u);
  f[14] = 0x4f;  // IHL 15: 60 bytes, past the end of a short frame
  f.resize(14 + 40);
  hv = Parse(f);
  EXPECT_EQ(Get(hv, Field::kOuterIpVersion), 0u);
  f[14] = 0x65;  // version 6 under ethertype 0x0800
  hv = Parse(f);
  EXPECT_EQ(Get(hv, Field::kOuterIpVersion), 0u);
  // A TCP header whose data offset points past the frame.
  s.protocol = kIpProtoTcp;
  f = BuildFrame(s);
  f[14 + 20 + 12] = 0xf0;
  hv = Parse(f);
  EXPECT_EQ(Get(hv, Field::kOuterIpProtocol), 6u);
  EXPECT_EQ(Get(hv, Field::kOuterTcpDport), 0u);
}

}  // namespace
}  // namespace drsim::sim

namespace drsim::sim {
namespace {

TEST(PacketParserTest, LaterIpv6FragmentsCarryNoExtensionHeaders) {
  // Fragment header (next header 60, offset 1) followed by payload bytes that look like a header.
  FrameSpec s = BaseSpec();
  s.l3 = L3Kind::kIpv6;
  s.protocol = 60;
  std::vector<uint8_t> f = BuildFrame(s);
  // Rewrite by hand: IPv6 next header 44, then a fragment header with offset 1 and next header 60.
  const size_t ip = 14;
  f[ip + 6] = 44;
  std::vector<uint8_t> frag = {60, 0, 0x00, 0x08, 0, 0, 0, 1, 0x06, 0x00, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa};
  f.insert(f.begin() + ip + 40, frag.begin(), frag.end());
  hw::StoreBe16(f.data() + ip + 4, static_cast<uint16_t>(f.size() - ip - 40));
  hw::HeaderVector hv = Parse(f);
  EXPECT_EQ(Get(hv, Field::kOuterFrag), 1u);
  EXPECT_EQ(Get(hv, Field::kOuterIpProtocol), 60u);  // not the payload's 6
}

TEST(PacketParserTest, TheIpLengthBoundsTheDatagramNotThePadding) {
  // An IPv4 header of total length 20 announcing TCP, in a frame padded to 60 bytes with 0x50.
  FrameSpec s = BaseSpec();
  s.protocol = kIpProtoTcp;
  std::vector<uint8_t> f = BuildFrame(s);
  f.resize(14 + 20);
  hw::StoreBe16(f.data() + 16, 20);
  f.resize(60, 0x50);
  PacketLayers layers;
  hw::HeaderVector hv = Parse(f, &layers);
  EXPECT_EQ(Get(hv, Field::kOuterIpProtocol), 6u);
  EXPECT_EQ(Get(hv, Field::kOuterTcpSport), 0u);  // the padding is not a TCP header
  EXPECT_EQ(layers.l4, 0);
  // The same for IPv6's payload length.
  s.l3 = L3Kind::kIpv6;
  f = BuildFrame(s);
  f.resize(14 + 40);
  hw::StoreBe16(f.data() + 14 + 4, 1);  // payload length 1: no room for a TCP header inside the datagram
  f.resize(80, 0x50);
  hv = Parse(f, &layers);
  EXPECT_EQ(Get(hv, Field::kOuterTcpSport), 0u);
}

}  // namespace
}  // namespace drsim::sim
