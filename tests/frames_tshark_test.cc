// Wireshark as an independent judge of sim/frame_builder: frames of every kind the builder makes are
// written to a pcap file (sim/pcap_file) and dissected by tshark (tests/tshark_check), which must decode
// each with the expected protocol stack, good checksums, and no malformed or bad-checksum report.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/frame_builder.h"
#include "sim/pcap_file.h"
#include "tests/tshark_check.h"

namespace drsim::testing {
namespace {

using sim::FrameSpec;
using sim::L3Kind;
using ::testing::IsEmpty;

struct Case {
  std::string name;
  FrameSpec spec;
  std::string protocols;                   // tshark's frame.protocols
  std::vector<std::string> warnings = {};  // expert warnings expected on a valid frame
};

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

FrameSpec Base() {
  FrameSpec s;
  s.dmac = *hw::MacAddress::Parse("02:00:00:00:00:01");
  s.smac = *hw::MacAddress::Parse("02:00:00:00:00:02");
  s.ipv4_src = *hw::Ipv4Address::Parse("192.0.2.1");
  s.ipv4_dst = *hw::Ipv4Address::Parse("198.51.100.7");
  s.ipv6_src = *hw::Ipv6Address::Parse("2001:db8::1");
  s.ipv6_dst = *hw::Ipv6Address::Parse("2001:db8:0:1::2");
  s.sport = 40000;  // ports no Wireshark dissector claims, so the payload stays "data"
  s.dport = 50000;
  s.payload_len = 32;
  return s;
}

FrameSpec With(FrameSpec s, void (*edit)(FrameSpec&)) {
  edit(s);
  return s;
}

std::vector<Case> Cases() {
  const std::string v4 = "eth:ethertype:ip:", v6 = "eth:ethertype:ipv6:";
  return {
      {"ipv4_udp", Base(), v4 + "udp:data"},
      {"ipv4_udp_empty", With(Base(), [](FrameSpec& s) { s.payload_len = 0; }), v4 + "udp"},
      {"ipv4_udp_odd", With(Base(), [](FrameSpec& s) { s.payload_len = 33; }), v4 + "udp:data"},
      {"ipv4_udp_1500", With(Base(), [](FrameSpec& s) { s.payload_len = 1472; }), v4 + "udp:data"},
      {"ipv4_tcp", With(Base(), [](FrameSpec& s) { s.protocol = sim::kIpProtoTcp; }), v4 + "tcp:data"},
      {"ipv4_tcp_syn",
       With(Base(),
            [](FrameSpec& s) {
              s.protocol = sim::kIpProtoTcp;
              s.tcp_flags = 0x002;
              s.seq = 0x12345678;
              s.payload_len = 0;
            }),
       v4 + "tcp"},
      {"ipv4_icmp_echo", With(Base(), [](FrameSpec& s) { s.protocol = sim::kIpProtoIcmp; }),
       v4 + "icmp:data"},
      {"ipv4_icmp_odd",
       With(Base(),
            [](FrameSpec& s) {
              s.protocol = sim::kIpProtoIcmp;
              s.icmp_data = 0x00010002;
              s.payload_len = 7;
            }),
       v4 + "icmp:data"},
      {"ipv4_dscp_ecn_ttl",
       With(Base(),
            [](FrameSpec& s) {
              s.dscp = 46;
              s.ecn = 2;
              s.ttl = 1;
            }),
       v4 + "udp:data"},
      {"vlan",
       With(Base(),
            [](FrameSpec& s) {
              s.vlans = {{0x8100, 0x2064}};
            }),
       "eth:ethertype:vlan:ethertype:ip:udp:data"},
      {"qinq",
       With(Base(),
            [](FrameSpec& s) {
              s.vlans = {{0x88a8, 0x6123}, {0x8100, 0x2456}};
            }),
       "eth:ethertype:ieee8021ad:ethertype:vlan:ethertype:ip:udp:data"},
      {"vlan_ipv6_tcp",
       With(Base(),
            [](FrameSpec& s) {
              s.vlans = {{0x8100, 0x0005}};
              s.l3 = L3Kind::kIpv6;
              s.protocol = sim::kIpProtoTcp;
            }),
       "eth:ethertype:vlan:ethertype:ipv6:tcp:data"},
      // NOP-only options are legal (RFC 791); Wireshark warns that a router may have removed options.
      {"ipv4_options",
       With(Base(), [](FrameSpec& s) { s.ipv4_option_words = 3; }),
       v4 + "udp:data",
       {"Protocol/Warning: 4 NOP in a row - a router may have removed some options"}},
      {"ipv4_options_tcp",
       With(Base(),
            [](FrameSpec& s) {
              s.ipv4_option_words = 10;  // IHL 15, the maximum
              s.protocol = sim::kIpProtoTcp;
            }),
       v4 + "tcp:data",
       {"Protocol/Warning: 4 NOP in a row - a router may have removed some options"}},
      // A first fragment alone cannot be reassembled, so Wireshark stops at IP (data = the fragment).
      {"ipv4_first_fragment", With(Base(), [](FrameSpec& s) { s.more_fragments = true; }), v4 + "data"},
      {"ipv4_last_fragment", With(Base(), [](FrameSpec& s) { s.fragment_offset = 185; }), v4 + "data"},
      {"ipv6_udp", With(Base(), [](FrameSpec& s) { s.l3 = L3Kind::kIpv6; }), v6 + "udp:data"},
      {"ipv6_tcp",
       With(Base(),
            [](FrameSpec& s) {
              s.l3 = L3Kind::kIpv6;
              s.protocol = sim::kIpProtoTcp;
              s.flow_label = 0xabcde;
              s.dscp = 10;
            }),
       v6 + "tcp:data"},
      {"ipv6_icmpv6_echo",
       With(Base(),
            [](FrameSpec& s) {
              s.l3 = L3Kind::kIpv6;
              s.protocol = sim::kIpProtoIcmpv6;
              s.icmp_type = 128;
            }),
       v6 + "icmpv6:data"},
      {"ipv6_hop_by_hop",
       With(Base(),
            [](FrameSpec& s) {
              s.l3 = L3Kind::kIpv6;
              s.ipv6_extensions = {0};
            }),
       v6 + "ipv6.hopopts:udp:data"},
      {"ipv6_routing",
       With(Base(),
            [](FrameSpec& s) {
              s.l3 = L3Kind::kIpv6;
              s.ipv6_extensions = {43};
            }),
       v6 + "ipv6.routing:udp:data"},
      {"ipv6_destination_options",
       With(Base(),
            [](FrameSpec& s) {
              s.l3 = L3Kind::kIpv6;
              s.ipv6_extensions = {60};
            }),
       v6 + "ipv6.dstopts:udp:data"},
      {"ipv6_extension_chain_tcp",
       With(Base(),
            [](FrameSpec& s) {
              s.l3 = L3Kind::kIpv6;
              s.ipv6_extensions = {0, 43, 60};
              s.protocol = sim::kIpProtoTcp;
            }),
       v6 + "ipv6.hopopts:ipv6.routing:ipv6.dstopts:tcp:data"},
      {"ipv6_extensions_icmpv6",
       With(Base(),
            [](FrameSpec& s) {
              s.l3 = L3Kind::kIpv6;
              s.ipv6_extensions = {0, 60};
              s.protocol = sim::kIpProtoIcmpv6;
              s.icmp_type = 129;
            }),
       v6 + "ipv6.hopopts:ipv6.dstopts:icmpv6:data"},
      // An atomic fragment (offset 0, no more fragments; RFC 6946) is a whole datagram.
      {"ipv6_atomic_fragment",
       With(Base(),
            [](FrameSpec& s) {
              s.l3 = L3Kind::kIpv6;
              s.ipv6_extensions = {44};
            }),
       v6 + "ipv6.fraghdr:udp:data"},
      {"ipv6_first_fragment",
       With(Base(),
            [](FrameSpec& s) {
              s.l3 = L3Kind::kIpv6;
              s.ipv6_extensions = {44};
              s.more_fragments = true;
            }),
       v6 + "ipv6.fraghdr:data"},
      {"ipv6_last_fragment",
       With(Base(),
            [](FrameSpec& s) {
              s.l3 = L3Kind::kIpv6;
              s.ipv6_extensions = {0, 44};
              s.fragment_offset = 185;
            }),
       v6 + "ipv6.hopopts:ipv6.fraghdr:data"},
  };
}

// Writes `frames` to a capture and dissects it; the frame count must match.
std::vector<TsharkFrame> Dissect(const std::string& name, const std::vector<std::vector<uint8_t>>& frames) {
  const std::string path = TempPath(name);
  absl::Status written = sim::WritePcapFile(path, frames);
  EXPECT_TRUE(written.ok()) << written;
  absl::StatusOr<std::vector<TsharkFrame>> dissected = TsharkCheck(path);
  EXPECT_TRUE(dissected.ok()) << dissected.status();
  if (!dissected.ok()) return {};
  EXPECT_EQ(dissected->size(), frames.size());
  return *std::move(dissected);
}

TEST(FramesTsharkTest, EveryBuiltFrameDecodesCleanly) {
  const std::vector<Case> cases = Cases();
  std::vector<std::vector<uint8_t>> frames;
  for (const Case& c : cases) frames.push_back(sim::BuildFrame(c.spec));
  const std::vector<TsharkFrame> dissected = Dissect("frames.pcap", frames);
  ASSERT_EQ(dissected.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].name);
    const TsharkFrame& f = dissected[i];
    EXPECT_EQ(f.number, static_cast<int>(i + 1));
    EXPECT_EQ(f.protocols, cases[i].protocols);
    EXPECT_THAT(f.Problems(), IsEmpty());
    EXPECT_EQ(f.Warnings(), cases[i].warnings);
    // Every layer with a checksum that tshark decoded was verified, and good.
    for (const std::string layer : {"ip", "tcp", "udp", "icmp", "icmpv6"}) {
      const std::vector<std::string> stack = absl::StrSplit(f.protocols, ':');
      const bool present = std::find(stack.begin(), stack.end(), layer) != stack.end();
      const auto it = f.checksums.find(layer);
      if (present) {
        ASSERT_NE(it, f.checksums.end()) << layer;
        EXPECT_EQ(it->second, "Good") << layer;
      } else {
        EXPECT_EQ(it, f.checksums.end()) << layer;
      }
    }
  }
}

// OVN-style GENEVE frames: the tunnel key option (class 0x0102, type 0x80) alone, behind options of other
// classes, and without options, carrying Ethernet/IPv4/UDP.
TEST(FramesTsharkTest, GeneveFramesWithSeveralOptionsDecodeCleanly) {
  const sim::GeneveOption key{0x0102, 0x80, {0x00010002}};
  const std::vector<std::vector<sim::GeneveOption>> layouts = {
      {key}, {{0xffff, 0x01, {1, 2}}, key}, {{0x0103, 0x80, {3}}, {0xffff, 0x02, {}}, key}, {}};
  std::vector<std::vector<uint8_t>> frames;
  for (const std::vector<sim::GeneveOption>& options : layouts) {
    sim::TunnelFrameSpec t;
    t.outer = Base();
    t.outer.protocol = sim::kIpProtoUdp;
    t.tunnel.kind = sim::Encap::kGeneve;
    t.tunnel.vni = 5;
    t.tunnel.geneve_options = options;
    t.inner = Base();
    t.inner.protocol = sim::kIpProtoUdp;
    frames.push_back(sim::BuildFrame(t));
  }
  const std::vector<TsharkFrame> dissected = Dissect("geneve.pcap", frames);
  ASSERT_EQ(dissected.size(), layouts.size());
  for (const TsharkFrame& f : dissected) {
    SCOPED_TRACE(f.number);
    EXPECT_EQ(f.protocols, "eth:ethertype:ip:udp:geneve:eth:ethertype:ip:udp:data");
    EXPECT_THAT(f.Problems(), IsEmpty());
    EXPECT_EQ(f.checksums.at("ip"), "Good,Good");  // the outer and inner headers
    EXPECT_EQ(f.checksums.at("udp"), "Good,Good");
  }
}

// The oracle itself: corrupted frames must be reported.
TEST(FramesTsharkTest, TsharkCheckReportsBadChecksumsAndMalformedFrames) {
  std::vector<uint8_t> bad_udp = sim::BuildFrame(Base());
  bad_udp[14 + 20 + 6] ^= 0x01;  // UDP checksum
  std::vector<uint8_t> bad_ip = sim::BuildFrame(Base());
  bad_ip[14 + 10] ^= 0x80;  // IPv4 header checksum
  std::vector<uint8_t> bad_icmpv6 = sim::BuildFrame(With(Base(), [](FrameSpec& s) {
    s.l3 = L3Kind::kIpv6;
    s.protocol = sim::kIpProtoIcmpv6;
    s.icmp_type = 128;
  }));
  bad_icmpv6[14 + 40 + 2] ^= 0x10;  // ICMPv6 checksum
  std::vector<uint8_t> short_udp = sim::BuildFrame(Base());
  short_udp.resize(14 + 20 + 4);  // cut inside the UDP header
  const std::vector<TsharkFrame> d = Dissect("bad.pcap", {bad_udp, bad_ip, bad_icmpv6, short_udp});
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(d[0].checksums.at("udp"), "Bad");
  EXPECT_THAT(d[0].Problems(), ::testing::Contains(::testing::HasSubstr("Checksum/Error: Bad checksum")));
  EXPECT_EQ(d[1].checksums.at("ip"), "Bad");
  EXPECT_THAT(d[1].Problems(), ::testing::Contains(::testing::HasSubstr("ip checksum Bad")));
  EXPECT_EQ(d[2].checksums.at("icmpv6"), "Bad");
  EXPECT_THAT(d[2].Problems(), ::testing::Not(IsEmpty()));
  EXPECT_TRUE(d[3].malformed || !d[3].Problems().empty()) << d[3].protocols;
  EXPECT_THAT(d[3].Problems(), ::testing::Not(IsEmpty()));
}

TEST(FramesTsharkTest, TsharkCheckNamesAMissingCapture) {
  absl::StatusOr<std::vector<TsharkFrame>> r = TsharkCheck(TempPath("no_such.pcap"));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(r.status().message()), ::testing::HasSubstr("no_such.pcap"));
}

}  // namespace
}  // namespace drsim::testing
