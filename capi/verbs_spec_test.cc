// ibv_create_flow's specs on the software NIC: each spec type matched on frames (full and partial masks,
// INNER, tunnels, MPLS by position), what is refused and why, and every malformed request, with the errno
// and the message naming the spec and field.
#include <arpa/inet.h>

#include <functional>
#include <string>

#include "capi/verbs_test_support.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/frame_builder.h"

namespace drsim::capi::testing {
namespace {

using ::testing::HasSubstr;

ibv_flow_spec_eth EthDst(const char* dmac, uint32_t type = IBV_FLOW_SPEC_ETH) {
  auto eth = NewSpec<ibv_flow_spec_eth>(type);
  std::memcpy(eth.val.dst_mac, Mac(dmac).bytes.data(), 6);
  std::memset(eth.mask.dst_mac, 0xff, 6);
  return eth;
}

ibv_flow_spec_ipv4 Ipv4Dst(const char* dst, uint32_t type = IBV_FLOW_SPEC_IPV4) {
  auto ip = NewSpec<ibv_flow_spec_ipv4>(type);
  ip.val.dst_ip = htonl(Ip4(dst).value);
  ip.mask.dst_ip = 0xffffffff;
  return ip;
}

ibv_flow_spec_tcp_udp L4Port(uint32_t type, uint16_t dport) {
  auto l4 = NewSpec<ibv_flow_spec_tcp_udp>(type);
  l4.val.dst_port = htons(dport);
  l4.mask.dst_port = 0xffff;
  return l4;
}

class VerbsSpecTest : public VerbsTest {
 protected:
  // Whether `frame` from the wire reaches qp_.
  bool Hits(const sim::FrameSpec& frame) { return Hits(sim::BuildFrame(frame)); }
  bool Hits(const sim::TunnelFrameSpec& frame) { return Hits(sim::BuildFrame(frame)); }
  bool Hits(const std::vector<uint8_t>& frame) {
    Send(frame);
    return Count(qp_) == 1;
  }
  // The error of `attr` on qp_, expecting `err` and a message with `part`.
  void ExpectError(FlowAttr& attr, int err, const std::string& part) {
    std::string message;
    EXPECT_EQ(Error(qp_, attr, &message), err) << message;
    EXPECT_THAT(message, HasSubstr(part));
  }
};

TEST_F(VerbsSpecTest, EthMatchesMacsTheEthertypeAfterTheVlansAndTheFirstVlanTag) {
  auto eth = EthDst("02:00:00:00:00:0a");
  std::memcpy(eth.val.src_mac, Mac("02:00:00:00:00:0b").bytes.data(), 6);
  std::memset(eth.mask.src_mac, 0xff, 6);
  eth.val.ether_type = htons(0x0800);
  eth.mask.ether_type = 0xffff;
  eth.val.vlan_tag = htons(3 << 13 | 5);  // PCP 3, VID 5; DEI not masked
  eth.mask.vlan_tag = htons(0xefff);
  FlowAttr attr;
  attr.Add(eth);
  Flow(qp_, attr);

  sim::FrameSpec f = Udp4(53);
  f.vlans = {{0x8100, 3 << 13 | 1 << 12 | 5}};
  EXPECT_TRUE(Hits(f));
  f.vlans = {{0x8100, 3 << 13 | 6}};
  EXPECT_FALSE(Hits(f));
  f.vlans = {{0x8100, 2 << 13 | 5}};
  EXPECT_FALSE(Hits(f));
  f.vlans = {{0x88a8, 3 << 13 | 5}};  // an S-tag: mlx5_ib asks for a C-tag
  EXPECT_FALSE(Hits(f));
  f.vlans.clear();
  EXPECT_FALSE(Hits(f));
  f.vlans = {{0x8100, 3 << 13 | 5}};
  f.smac = Mac("02:00:00:00:00:0c");
  EXPECT_FALSE(Hits(f));
  f = Udp4(53);
  f.vlans = {{0x8100, 3 << 13 | 5}};
  f.l3 = sim::L3Kind::kIpv6;
  EXPECT_FALSE(Hits(f));
}

TEST_F(VerbsSpecTest, PartialMasksAreHonoured) {
  auto eth = NewSpec<ibv_flow_spec_eth>(IBV_FLOW_SPEC_ETH);
  std::memcpy(eth.val.dst_mac, Mac("02:00:00:00:00:00").bytes.data(), 6);
  std::memcpy(eth.mask.dst_mac, Mac("ff:ff:ff:00:00:00").bytes.data(), 6);
  auto ip = NewSpec<ibv_flow_spec_ipv4>(IBV_FLOW_SPEC_IPV4);
  ip.val.src_ip = htonl(Ip4("10.0.0.0").value);
  ip.mask.src_ip = htonl(0xffffff00);
  auto udp = NewSpec<ibv_flow_spec_tcp_udp>(IBV_FLOW_SPEC_UDP);
  udp.val.dst_port = htons(0x1200);
  udp.mask.dst_port = htons(0xff00);
  FlowAttr attr;
  attr.Add(eth).Add(ip).Add(udp);
  Flow(qp_, attr);

  sim::FrameSpec f = Udp4(0x1234);
  f.dmac = Mac("02:00:00:12:34:56");
  f.ipv4_src = Ip4("10.0.0.77");
  EXPECT_TRUE(Hits(f));
  f.dmac = Mac("02:00:01:12:34:56");
  EXPECT_FALSE(Hits(f));
  f.dmac = Mac("02:00:00:12:34:56");
  f.ipv4_src = Ip4("10.0.1.77");
  EXPECT_FALSE(Hits(f));
  f.ipv4_src = Ip4("10.0.0.77");
  f.dport = 0x1334;
  EXPECT_FALSE(Hits(f));
}

TEST_F(VerbsSpecTest, Ipv4ExtMatchesProtocolTosAndTtl) {
  auto ip = NewSpec<ibv_flow_spec_ipv4_ext>(IBV_FLOW_SPEC_IPV4_EXT);
  ip.val.dst_ip = htonl(Ip4("10.0.0.2").value);
  ip.mask.dst_ip = 0xffffffff;
  ip.val.proto = IPPROTO_TCP;
  ip.mask.proto = 0xff;
  ip.val.tos = 46 << 2 | 1;  // DSCP EF, ECN 1
  ip.mask.tos = 0xff;
  ip.val.ttl = 7;
  ip.mask.ttl = 0xff;
  FlowAttr attr;
  attr.Add(ip);
  Flow(qp_, attr);

  sim::FrameSpec f = Udp4(80, sim::kIpProtoTcp);
  f.dscp = 46;
  f.ecn = 1;
  f.ttl = 7;
  EXPECT_TRUE(Hits(f));
  f.ttl = 8;
  EXPECT_FALSE(Hits(f));
  f.ttl = 7;
  f.ecn = 2;
  EXPECT_FALSE(Hits(f));
  f.ecn = 1;
  f.protocol = sim::kIpProtoUdp;
  EXPECT_FALSE(Hits(f));
}

TEST_F(VerbsSpecTest, Ipv6MatchesAddressesFlowLabelNextHeaderTrafficClassAndHopLimit) {
  auto ip = NewSpec<ibv_flow_spec_ipv6>(IBV_FLOW_SPEC_IPV6);
  std::memcpy(ip.val.src_ip, Ip6("2001:db8::1").bytes.data(), 16);
  std::memset(ip.mask.src_ip, 0xff, 16);
  std::memcpy(ip.val.dst_ip, Ip6("2001:db8:1::").bytes.data(), 16);
  std::memset(ip.mask.dst_ip, 0xff, 8);  // a /64
  ip.val.flow_label = htonl(0x12345);
  ip.mask.flow_label = htonl(0xfffff);
  ip.val.next_hdr = IPPROTO_UDP;
  ip.mask.next_hdr = 0xff;
  ip.val.traffic_class = 10 << 2;
  ip.mask.traffic_class = 0xfc;
  ip.val.hop_limit = 9;
  ip.mask.hop_limit = 0xff;
  FlowAttr attr;
  attr.Add(ip);
  Flow(qp_, attr);

  sim::FrameSpec f = Udp4(53);
  f.l3 = sim::L3Kind::kIpv6;
  f.ipv6_src = Ip6("2001:db8::1");
  f.ipv6_dst = Ip6("2001:db8:1::99");
  f.flow_label = 0x12345;
  f.dscp = 10;
  f.ecn = 3;
  f.ttl = 9;
  EXPECT_TRUE(Hits(f));
  f.flow_label = 0x12346;
  EXPECT_FALSE(Hits(f));
  f.flow_label = 0x12345;
  f.ipv6_dst = Ip6("2001:db8:2::99");
  EXPECT_FALSE(Hits(f));
  f.ipv6_dst = Ip6("2001:db8:1::99");
  f.ttl = 10;
  EXPECT_FALSE(Hits(f));
  f.ttl = 9;
  f.protocol = sim::kIpProtoTcp;
  EXPECT_FALSE(Hits(f));
}

TEST_F(VerbsSpecTest, TcpAndUdpSpecsMatchPortsOfTheirProtocol) {
  FlowAttr attr;
  attr.Add(NewSpec<ibv_flow_spec_ipv4>(IBV_FLOW_SPEC_IPV4)).Add(L4Port(IBV_FLOW_SPEC_TCP, 80));
  Flow(qp_, attr);
  EXPECT_TRUE(Hits(Udp4(80, sim::kIpProtoTcp)));
  EXPECT_FALSE(Hits(Udp4(80, sim::kIpProtoUdp)));
  EXPECT_FALSE(Hits(Udp4(81, sim::kIpProtoTcp)));
  auto src = NewSpec<ibv_flow_spec_tcp_udp>(IBV_FLOW_SPEC_UDP);
  src.val.src_port = htons(1000);
  src.mask.src_port = 0xffff;
  FlowAttr by_source(IBV_FLOW_ATTR_NORMAL, 1);
  by_source.Add(src);
  Flow(qp_, by_source);
  EXPECT_TRUE(Hits(Udp4(7, sim::kIpProtoUdp)));
}

TEST_F(VerbsSpecTest, AnL4SpecWithoutAnIpSpecMatchesBothVersionsUnlessTheEthertypeSaysWhich) {
  FlowAttr attr;
  attr.Add(L4Port(IBV_FLOW_SPEC_TCP, 443));
  Flow(qp_, attr);
  sim::FrameSpec v4 = Udp4(443, sim::kIpProtoTcp), v6 = v4;
  v6.l3 = sim::L3Kind::kIpv6;
  EXPECT_TRUE(Hits(v4));
  EXPECT_TRUE(Hits(v6));
  EXPECT_FALSE(Hits(Udp4(443, sim::kIpProtoUdp)));

  Drop(flows_.back());
  auto eth = NewSpec<ibv_flow_spec_eth>(IBV_FLOW_SPEC_ETH);
  eth.val.ether_type = htons(0x0800);
  eth.mask.ether_type = 0xffff;
  FlowAttr v4_only;
  v4_only.Add(eth).Add(L4Port(IBV_FLOW_SPEC_TCP, 443));
  Flow(qp_, v4_only);
  EXPECT_TRUE(Hits(v4));
  EXPECT_FALSE(Hits(v6));
}

// The kernel masks ip_version whole (0xf) for an IP spec: an empty IPV4 spec matches IPv4 frames only, an
// IPV6 spec IPv6 ones, whatever else the stack has.
TEST_F(VerbsSpecTest, AnIpSpecMatchesItsVersionOnly) {
  sim::FrameSpec v4 = Udp4(443), v6 = v4, arp = v4;
  v6.l3 = sim::L3Kind::kIpv6;
  arp.l3 = sim::L3Kind::kNone;
  arp.ethertype = 0x0806;
  FlowAttr ipv4;
  ipv4.Add(NewSpec<ibv_flow_spec_ipv4>(IBV_FLOW_SPEC_IPV4)).Add(L4Port(IBV_FLOW_SPEC_UDP, 443));
  Flow(qp_, ipv4);
  EXPECT_TRUE(Hits(v4));
  EXPECT_FALSE(Hits(v6));
  Drop(flows_.back());
  FlowAttr ipv6;
  ipv6.Add(NewSpec<ibv_flow_spec_ipv6>(IBV_FLOW_SPEC_IPV6));
  Flow(qp_, ipv6);
  EXPECT_FALSE(Hits(v4));
  EXPECT_TRUE(Hits(v6));
  EXPECT_FALSE(Hits(arp));
}

sim::TunnelFrameSpec Vxlan(uint32_t vni, uint16_t inner_dport) {
  sim::TunnelFrameSpec t;
  t.outer = Udp4(0);
  t.tunnel.kind = sim::Encap::kVxlan;
  t.tunnel.vni = vni;
  t.inner = Udp4(inner_dport);
  t.inner.dmac = Mac("02:00:00:00:01:01");
  t.inner.ipv4_dst = Ip4("192.168.0.1");
  return t;
}

TEST_F(VerbsSpecTest, VxlanTunnelIdIsTheVniInNetworkOrderAndInnerSpecsMatchTheInnerPacket) {
  auto vxlan = NewSpec<ibv_flow_spec_tunnel>(IBV_FLOW_SPEC_VXLAN_TUNNEL);
  vxlan.val.tunnel_id = htonl(0x123456);
  vxlan.mask.tunnel_id = 0xffffffff;  // bits 31:24 are ignored, as mlx5_ib ignores them
  FlowAttr attr;
  attr.Add(vxlan)
      .Add(EthDst("02:00:00:00:01:01", IBV_FLOW_SPEC_ETH | IBV_FLOW_SPEC_INNER))
      .Add(Ipv4Dst("192.168.0.1", IBV_FLOW_SPEC_IPV4 | IBV_FLOW_SPEC_INNER))
      .Add(L4Port(IBV_FLOW_SPEC_UDP | IBV_FLOW_SPEC_INNER, 53));
  Flow(qp_, attr);
  EXPECT_TRUE(Hits(Vxlan(0x123456, 53)));
  EXPECT_FALSE(Hits(Vxlan(0x123457, 53)));
  EXPECT_FALSE(Hits(Vxlan(0x123456, 54)));
  sim::TunnelFrameSpec other_mac = Vxlan(0x123456, 53);
  other_mac.inner.dmac = Mac("02:00:00:00:01:02");
  EXPECT_FALSE(Hits(other_mac));
  EXPECT_FALSE(Hits(Udp4(53)));  // the outer packet is not the inner one

  // tunnel_id is htonl(VNI), not the VNI shifted into the header's top bytes.
  Drop(flows_.back());
  vxlan.val.tunnel_id = htonl(0x123456 << 8);
  vxlan.mask.tunnel_id = htonl(0xffffff00);
  FlowAttr shifted;
  shifted.Add(vxlan);
  Flow(qp_, shifted);
  EXPECT_FALSE(Hits(Vxlan(0x123456, 53)));
  EXPECT_TRUE(Hits(Vxlan(0x345600, 53)));
}

sim::TunnelFrameSpec Gre(uint16_t protocol, std::optional<uint32_t> key) {
  sim::TunnelFrameSpec t;
  t.outer = Udp4(0);
  t.tunnel.kind = sim::Encap::kGre;
  t.tunnel.gre_protocol = protocol;
  t.tunnel.gre_key_present = key.has_value();
  t.tunnel.gre_key = key.value_or(0);
  t.inner = Udp4(53);
  return t;
}

TEST_F(VerbsSpecTest, GreMatchesProtocolKeyAndTheCksBits) {
  auto gre = NewSpec<ibv_flow_spec_gre>(IBV_FLOW_SPEC_GRE);
  gre.val.protocol = htons(0x0800);
  gre.mask.protocol = 0xffff;
  gre.val.key = htonl(0xabcdef12);
  gre.mask.key = 0xffffffff;
  gre.val.c_ks_res0_ver = htons(0x2000);  // K set, C clear
  gre.mask.c_ks_res0_ver = htons(0xa000);
  FlowAttr attr;
  attr.Add(gre);
  Flow(qp_, attr);
  EXPECT_TRUE(Hits(Gre(0x0800, 0xabcdef12)));
  EXPECT_FALSE(Hits(Gre(0x0800, 0xabcdef13)));
  EXPECT_FALSE(Hits(Gre(0x0800, std::nullopt)));
  sim::TunnelFrameSpec with_checksum = Gre(0x0800, 0xabcdef12);
  with_checksum.tunnel.gre_checksum = true;
  EXPECT_FALSE(Hits(with_checksum));
  sim::TunnelFrameSpec v6 = Gre(0x0800, 0xabcdef12);
  v6.outer.l3 = sim::L3Kind::kIpv6;  // no IP spec: GRE over either version
  EXPECT_TRUE(Hits(v6));
}

sim::TunnelFrameSpec Mpls(sim::Encap kind, uint32_t label) {
  sim::TunnelFrameSpec t;
  t.outer = Udp4(0);
  t.tunnel.kind = kind;
  t.tunnel.gre_protocol = 0x8847;
  t.tunnel.mpls = {{label, 0, 64}};
  t.inner = Udp4(53);
  return t;
}

ibv_flow_spec_mpls MplsLabel(uint32_t label, uint32_t type = IBV_FLOW_SPEC_MPLS) {
  auto mpls = NewSpec<ibv_flow_spec_mpls>(type);
  mpls.val.label = htonl(label << 12);
  mpls.mask.label = htonl(0xfffff000);
  return mpls;
}

TEST_F(VerbsSpecTest, MplsIsPlacedByPosition) {
  FlowAttr over_ethernet(IBV_FLOW_ATTR_NORMAL, 0), over_udp(IBV_FLOW_ATTR_NORMAL, 1),
      over_gre(IBV_FLOW_ATTR_NORMAL, 2);
  over_ethernet.Add(MplsLabel(100));
  over_udp.Add(NewSpec<ibv_flow_spec_tcp_udp>(IBV_FLOW_SPEC_UDP)).Add(MplsLabel(200));
  over_gre.Add(NewSpec<ibv_flow_spec_gre>(IBV_FLOW_SPEC_GRE)).Add(MplsLabel(300));
  Flow(qp_, over_ethernet);
  Flow(qp_, over_udp);
  Flow(qp_, over_gre);
  EXPECT_TRUE(Hits(Mpls(sim::Encap::kMpls, 100)));
  EXPECT_FALSE(Hits(Mpls(sim::Encap::kMpls, 200)));
  EXPECT_TRUE(Hits(Mpls(sim::Encap::kMplsOverUdp, 200)));
  EXPECT_FALSE(Hits(Mpls(sim::Encap::kMplsOverUdp, 100)));
  EXPECT_TRUE(Hits(Mpls(sim::Encap::kGre, 300)));
  EXPECT_FALSE(Hits(Mpls(sim::Encap::kGre, 200)));

  // MPLS inside a tunnel's inner packet is a second tunnel level, which the software NIC does not parse.
  FlowAttr inner;
  inner.Add(NewSpec<ibv_flow_spec_tunnel>(IBV_FLOW_SPEC_VXLAN_TUNNEL))
      .Add(MplsLabel(1, IBV_FLOW_SPEC_MPLS | IBV_FLOW_SPEC_INNER));
  ExpectError(inner, EOPNOTSUPP, "inner_first_mpls");
}

TEST_F(VerbsSpecTest, EspSpisAreNotMatchable) {
  auto esp = NewSpec<ibv_flow_spec_esp>(IBV_FLOW_SPEC_ESP);
  esp.val.spi = htonl(0x100);
  esp.mask.spi = 0xffffffff;
  FlowAttr spi;
  spi.Add(NewSpec<ibv_flow_spec_ipv4>(IBV_FLOW_SPEC_IPV4)).Add(esp);
  ExpectError(spi, EOPNOTSUPP, "spec[1] (ESP): spi: misc.outer_esp_spi");
  esp = NewSpec<ibv_flow_spec_esp>(IBV_FLOW_SPEC_ESP);
  esp.mask.seq = 1;
  FlowAttr seq;
  seq.Add(esp);
  ExpectError(seq, EOPNOTSUPP, "spec[0] (ESP): seq");
  FlowAttr unmasked;  // an ESP spec that masks nothing adds nothing to the match
  unmasked.Add(NewSpec<ibv_flow_spec_esp>(IBV_FLOW_SPEC_ESP));
  Flow(qp_, unmasked);
  EXPECT_TRUE(Hits(Udp4(1)));
}

TEST_F(VerbsSpecTest, ExtensibleSpecsTakeLibibverbsFilterSizes) {
  // An IPv6 spec whose filters are 48 bytes (a newer library's): the extra mask bytes must be zero.
  struct {
    uint32_t type = IBV_FLOW_SPEC_IPV6;
    uint16_t size = 8 + 2 * 48;
    uint16_t pad = 0;
    uint8_t val[48] = {};
    uint8_t mask[48] = {};
  } wide;
  std::memcpy(wide.val + offsetof(ibv_flow_ipv6_filter, dst_ip), Ip6("2001:db8::2").bytes.data(), 16);
  std::memset(wide.mask + offsetof(ibv_flow_ipv6_filter, dst_ip), 0xff, 16);
  FlowAttr attr;
  attr.Add(wide);
  Flow(qp_, attr);
  sim::FrameSpec f = Udp4(1);
  f.l3 = sim::L3Kind::kIpv6;
  f.ipv6_dst = Ip6("2001:db8::2");
  EXPECT_TRUE(Hits(f));
  wide.mask[45] = 1;
  FlowAttr unknown_field;
  unknown_field.Add(wide);
  ExpectError(unknown_field, EOPNOTSUPP, "spec[0] (IPV6): mask byte 45 is set");
  // A VXLAN spec of the minimum size (4-byte filters) and one that is too small.
  auto vxlan = NewSpec<ibv_flow_spec_tunnel>(IBV_FLOW_SPEC_VXLAN_TUNNEL);
  FlowAttr small;
  small.Add(vxlan).Set(sizeof(ibv_flow_attr) + offsetof(ibv_flow_spec_tunnel, size), uint16_t{8 + 2 * 2});
  ExpectError(small, EINVAL, "at least 4 bytes each");
}

// libibverbs' ibv_cmd_create_flow never reads attr->size: it walks num_of_specs specs after the attribute,
// each by its own size. pyverbs sets size to sizeof(struct ibv_flow_attr) alone, the man page's example to
// the whole request; both steer alike, and so does any other size.
TEST_F(VerbsSpecTest, SpecsAreWalkedByNumOfSpecsNotAttrSize) {
  const sim::FrameSpec both = Udp4(53);  // to 02:00:00:00:00:0a and 10.0.0.2 (verbs_test_support.h)
  sim::FrameSpec other_mac = both, other_ip = both;
  other_mac.dmac = Mac("02:00:00:00:00:0c");
  other_ip.ipv4_dst = Ip4("10.0.0.9");
  for (uint16_t size : {uint16_t{sizeof(ibv_flow_attr)}, uint16_t{0}, uint16_t{0xffff}}) {
    SCOPED_TRACE(size);
    FlowAttr attr;
    attr.Add(EthDst("02:00:00:00:00:0a")).Add(Ipv4Dst("10.0.0.2"));
    attr.Set(offsetof(ibv_flow_attr, size), size);
    ibv_flow* flow = Flow(qp_, attr);
    EXPECT_TRUE(Hits(both));  // the two specs together: both must match
    EXPECT_FALSE(Hits(other_mac));
    EXPECT_FALSE(Hits(other_ip));
    Drop(flow);
  }
  // Bytes after num_of_specs specs are not read: a second spec there matches nothing.
  FlowAttr first_only;
  first_only.Add(EthDst("02:00:00:00:00:0a")).Add(Ipv4Dst("10.0.0.2"));
  first_only.Set(offsetof(ibv_flow_attr, num_of_specs), uint8_t{1});
  Flow(qp_, first_only);
  EXPECT_TRUE(Hits(other_ip));
  EXPECT_FALSE(Hits(other_mac));
}

TEST_F(VerbsSpecTest, MalformedRequestsNameTheirFault) {
  struct Case {
    const char* name;
    std::function<void(FlowAttr&)> build;
    int err;
    const char* message;
  };
  const auto eth = EthDst("02:00:00:00:00:0a");
  const Case cases[] = {
      {"comp_mask", [](FlowAttr& a) { a.Set(offsetof(ibv_flow_attr, comp_mask), 1u); }, EINVAL,
       "comp_mask 0x1"},
      {"type", [](FlowAttr& a) { a.Set(offsetof(ibv_flow_attr, type), 4u); }, EINVAL, "type 4"},
      {"allow loop back", [](FlowAttr& a) { a.Set(offsetof(ibv_flow_attr, flags), 1u); }, EINVAL,
       "flags 0x1"},
      {"unknown flag", [](FlowAttr& a) { a.Set(offsetof(ibv_flow_attr, flags), 8u); }, EINVAL, "flags 0x8"},
      {"dont trap sniffer",
       [](FlowAttr& a) {
         a.Set(offsetof(ibv_flow_attr, type), uint32_t{IBV_FLOW_ATTR_SNIFFER});
         a.Set(offsetof(ibv_flow_attr, flags), uint32_t{IBV_FLOW_ATTR_FLAGS_DONT_TRAP});
       },
       EINVAL, "DONT_TRAP is for NORMAL rules only, not SNIFFER"},
      {"egress mc default",
       [](FlowAttr& a) {
         a.Set(offsetof(ibv_flow_attr, type), uint32_t{IBV_FLOW_ATTR_MC_DEFAULT});
         a.Set(offsetof(ibv_flow_attr, flags), uint32_t{IBV_FLOW_ATTR_FLAGS_EGRESS});
       },
       EINVAL, "EGRESS does not apply to MC_DEFAULT"},
      {"too many specs", [](FlowAttr& a) { a.Set(offsetof(ibv_flow_attr, num_of_specs), uint8_t{11}); },
       EINVAL, "num_of_specs 11: at most 10"},
      {"port", [](FlowAttr& a) { a.Set(offsetof(ibv_flow_attr, port), uint8_t{2}); }, EINVAL, "port 2"},
      {"priority", [](FlowAttr& a) { a.Set(offsetof(ibv_flow_attr, priority), uint16_t{16}); }, ENOMEM,
       "priority 16"},
      {"spec size below a header",
       [&](FlowAttr& a) { a.Add(eth).Set(sizeof(ibv_flow_attr) + 4, uint16_t{4}); }, EINVAL,
       "spec[0]: size 4 is smaller than a spec header (8 bytes)"},
      {"second spec size below a header",
       [&](FlowAttr& a) { a.Add(eth).Add(eth).Set(sizeof(ibv_flow_attr) + sizeof eth + 4, uint16_t{0}); },
       EINVAL, "spec[1]: size 0 is smaller than a spec header"},
      {"unknown spec type", [](FlowAttr& a) { a.Add(NewSpec<ibv_flow_spec_eth>(0x77)); }, EINVAL,
       "spec[0]: unknown type 0x77"},
      {"wrong spec size", [](FlowAttr& a) { a.Add(NewSpec<ibv_flow_spec_ipv4>(IBV_FLOW_SPEC_ETH)); }, EINVAL,
       "spec[0] (ETH): size 24; struct ibv_flow_spec_eth is 40 bytes"},
      {"inner tunnel spec",
       [](FlowAttr& a) {
         a.Add(NewSpec<ibv_flow_spec_tunnel>(IBV_FLOW_SPEC_VXLAN_TUNNEL | IBV_FLOW_SPEC_INNER));
       },
       EINVAL, "spec[0] (VXLAN_TUNNEL|INNER): IBV_FLOW_SPEC_INNER applies to"},
      {"inner action",
       [](FlowAttr& a) {
         a.Add(NewSpec<ibv_flow_spec_action_drop>(IBV_FLOW_SPEC_ACTION_DROP | IBV_FLOW_SPEC_INNER));
       },
       EINVAL, "(ACTION_DROP|INNER)"},
      {"value outside the mask",
       [](FlowAttr& a) {
         auto e = NewSpec<ibv_flow_spec_eth>(IBV_FLOW_SPEC_ETH);
         e.val.src_mac[5] = 1;
         a.Add(e);
       },
       EINVAL, "spec[0] (ETH): val.src_mac has bits outside mask.src_mac"},
      {"two eth specs", [&](FlowAttr& a) { a.Add(eth).Add(eth); }, EINVAL,
       "spec[1] (ETH): a second ETH spec (spec[0] is one)"},
      {"ipv4 and ipv6",
       [](FlowAttr& a) {
         a.Add(NewSpec<ibv_flow_spec_ipv4>(IBV_FLOW_SPEC_IPV4))
             .Add(NewSpec<ibv_flow_spec_ipv6>(IBV_FLOW_SPEC_IPV6));
       },
       EINVAL, "spec[1] (IPV6): a second IP spec"},
      {"tcp and udp",
       [](FlowAttr& a) { a.Add(L4Port(IBV_FLOW_SPEC_TCP, 1)).Add(L4Port(IBV_FLOW_SPEC_UDP, 1)); }, EINVAL,
       "spec[1] (UDP): a second TCP/UDP spec"},
      {"protocol conflict",
       [](FlowAttr& a) {
         auto ip = NewSpec<ibv_flow_spec_ipv4_ext>(IBV_FLOW_SPEC_IPV4_EXT);
         ip.val.proto = IPPROTO_UDP;
         ip.mask.proto = 0xff;
         a.Add(ip).Add(L4Port(IBV_FLOW_SPEC_TCP, 1));
       },
       EINVAL, "spec[1] (TCP): IP protocol 6/0xff contradicts 17/0xff of spec[0]"},
      {"gre after udp",
       [](FlowAttr& a) {
         a.Add(L4Port(IBV_FLOW_SPEC_UDP, 1)).Add(NewSpec<ibv_flow_spec_gre>(IBV_FLOW_SPEC_GRE));
       },
       EINVAL, "spec[1] (GRE): IP protocol 47/0xff contradicts 17/0xff"},
      {"ethertype against ip",
       [](FlowAttr& a) {
         auto e = NewSpec<ibv_flow_spec_eth>(IBV_FLOW_SPEC_ETH);
         e.val.ether_type = htons(0x86dd);
         e.mask.ether_type = 0xffff;
         a.Add(e).Add(NewSpec<ibv_flow_spec_ipv4>(IBV_FLOW_SPEC_IPV4));
       },
       EINVAL, "spec[0] (ETH): ether_type 0x86dd/0xffff contradicts spec[1] (IPV4)"},
      {"partial ethertype with ip",
       [](FlowAttr& a) {
         auto e = NewSpec<ibv_flow_spec_eth>(IBV_FLOW_SPEC_ETH);
         e.val.ether_type = htons(0x0800);
         e.mask.ether_type = htons(0xff00);
         a.Add(e).Add(NewSpec<ibv_flow_spec_ipv4>(IBV_FLOW_SPEC_IPV4));
       },
       EINVAL, "ether_type 0x0800/0xff00 contradicts"},
      {"ipv4 flags",
       [](FlowAttr& a) {
         auto ip = NewSpec<ibv_flow_spec_ipv4_ext>(IBV_FLOW_SPEC_IPV4_EXT);
         ip.mask.flags = 2;
         a.Add(ip);
       },
       EOPNOTSUPP, "spec[0] (IPV4_EXT): flags"},
      {"flow label width",
       [](FlowAttr& a) {
         auto ip = NewSpec<ibv_flow_spec_ipv6>(IBV_FLOW_SPEC_IPV6);
         ip.mask.flow_label = htonl(0x100000);
         a.Add(ip);
       },
       EINVAL, "mask.flow_label 0x100000: the flow label is 20 bits"},
      {"gre version",
       [](FlowAttr& a) {
         auto gre = NewSpec<ibv_flow_spec_gre>(IBV_FLOW_SPEC_GRE);
         gre.mask.c_ks_res0_ver = htons(0x0007);
         a.Add(gre);
       },
       EOPNOTSUPP, "spec[0] (GRE): mask.c_ks_res0_ver 0x0007"},
      {"two vxlan",
       [](FlowAttr& a) {
         auto v = NewSpec<ibv_flow_spec_tunnel>(IBV_FLOW_SPEC_VXLAN_TUNNEL);
         a.Add(v).Add(v);
       },
       EINVAL, "a second VXLAN_TUNNEL spec"},
      {"two mpls at one place", [](FlowAttr& a) { a.Add(MplsLabel(1)).Add(MplsLabel(2)); }, EINVAL,
       "spec[1] (MPLS): a second MPLS spec at the same place"},
      {"tag width",
       [](FlowAttr& a) {
         auto t = NewSpec<ibv_flow_spec_action_tag>(IBV_FLOW_SPEC_ACTION_TAG);
         t.tag_id = 1 << 24;
         a.Add(t);
       },
       EINVAL, "tag_id 0x1000000: a flow tag is 24 bits"},
      {"two tags",
       [](FlowAttr& a) {
         auto t = NewSpec<ibv_flow_spec_action_tag>(IBV_FLOW_SPEC_ACTION_TAG);
         a.Add(t).Add(t);
       },
       EINVAL, "spec[1] (ACTION_TAG): a second ACTION_TAG spec"},
      {"two drops",
       [](FlowAttr& a) {
         auto d = NewSpec<ibv_flow_spec_action_drop>(IBV_FLOW_SPEC_ACTION_DROP);
         a.Add(d).Add(d);
       },
       EINVAL, "a second ACTION_DROP spec"},
      {"counters null",
       [](FlowAttr& a) { a.Add(NewSpec<ibv_flow_spec_counter_action>(IBV_FLOW_SPEC_ACTION_COUNT)); }, EINVAL,
       "spec[0] (ACTION_COUNT): counters is NULL"},
      {"flow action handle",
       [](FlowAttr& a) { a.Add(NewSpec<ibv_flow_spec_action_handle>(IBV_FLOW_SPEC_ACTION_HANDLE)); },
       EOPNOTSUPP, "spec[0] (ACTION_HANDLE): flow actions"},
      {"specs on a sniffer",
       [&](FlowAttr& a) { a.Set(offsetof(ibv_flow_attr, type), uint32_t{IBV_FLOW_ATTR_SNIFFER}).Add(eth); },
       EINVAL, "SNIFFER rules take no specs"},
      {"tag on egress",
       [](FlowAttr& a) {
         a.Set(offsetof(ibv_flow_attr, flags), uint32_t{IBV_FLOW_ATTR_FLAGS_EGRESS});
         a.Add(NewSpec<ibv_flow_spec_action_tag>(IBV_FLOW_SPEC_ACTION_TAG));
       },
       EOPNOTSUPP, "spec[0] (ACTION_TAG): a flow tag has no meaning on EGRESS"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    FlowAttr attr;
    c.build(attr);
    ExpectError(attr, c.err, c.message);
  }
}

TEST_F(VerbsSpecTest, TwoCountsNameTheFirst) {
  ibv_counters* c = Counters();
  auto count = NewSpec<ibv_flow_spec_counter_action>(IBV_FLOW_SPEC_ACTION_COUNT);
  count.counters = c;
  FlowAttr attr;
  attr.Add(count).Add(count);
  ExpectError(attr, EINVAL, "spec[1] (ACTION_COUNT): a second ACTION_COUNT spec (spec[0] is one");
}

TEST_F(VerbsSpecTest, OnlyObjectsOfThisNicAreTaken) {
  FlowAttr attr;
  errno = 0;
  EXPECT_EQ(ibv_create_flow(qp_, nullptr), nullptr);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_THAT(drsim_last_error(), HasSubstr("flow_attr is NULL"));
  ibv_qp fake{};
  fake.context = ctx_;  // a QP drsim did not make, on a drsim context
  EXPECT_EQ(ibv_create_flow(&fake, attr.get()), nullptr);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_THAT(drsim_last_error(), HasSubstr("qp is not a QP of a software NIC"));
  ibv_flow fake_flow{0, ctx_, 0};
  EXPECT_EQ(ibv_destroy_flow(&fake_flow), EINVAL);
  // Counters of another NIC.
  ibv_context* other = drsim_open(0);
  ibv_counters_init_attr init{};
  ibv_counters* foreign = ibv_create_counters(other, &init);
  ibv_counter_attach_attr point{IBV_COUNTER_PACKETS, 0, 0};
  ASSERT_EQ(ibv_attach_counters_point_flow(foreign, &point, nullptr), 0);
  auto count = NewSpec<ibv_flow_spec_counter_action>(IBV_FLOW_SPEC_ACTION_COUNT);
  count.counters = foreign;
  FlowAttr counted;
  counted.Add(count);
  ExpectError(counted, EINVAL, "not a counters object of this software NIC");
  EXPECT_EQ(ibv_destroy_counters(foreign), 0);
  EXPECT_EQ(drsim_close(other), 0);
}

}  // namespace
}  // namespace drsim::capi::testing
