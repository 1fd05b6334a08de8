// Randomized differential test: rule sets with several tables, matchers, priorities, duplicates and
// deletes are programmed through dr:: into the software NIC and mirrored into the brute-force reference
// classifier; every packet's verdict (fate, queue, flow tag, and the rule hit in each table visited) must
// agree, and so must the parsed header fields and every insertion error. About a third of the packets are
// tunnelled (VXLAN, VXLAN-GPE, GENEVE, GRE, MPLS over Ethernet/UDP/GRE, GTP-U) or RoCE v2, and matchers
// include masks on tunnel, inner and BTH fields. Fixed seeds; 101,376 packets. A second test puts each mask
// template alone in a table and checks that its rules are hit. The lockstep of driver and model (expected
// errors, verdict and parse comparisons) is tests/differential_model.h, shared with
// fuzz/rule_churn_fuzzer.cc; this test chooses what to do at random.
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "hw/match_layout.h"
#include "hw/match_params.h"
#include "sim/frame_builder.h"
#include "tests/differential_model.h"
#include "tests/packet_model.h"
#include "tests/reference_classifier.h"

namespace drsim::testing {
namespace {

using hw::Field;
using hw::kInner;
using hw::kOuter;
using hw::MatchBuilder;
using hw::MatchParams;

constexpr int kPhases = 3;
constexpr int kPacketsPerPhase = 4200;
constexpr uint32_t kSeeds[] = {1, 2, 3, 4, 5, 6, 7, 8};

template <typename T>
const T& Pick(std::mt19937& rng, const std::vector<T>& pool) {
  return pool[rng() % pool.size()];
}
bool Chance(std::mt19937& rng, int percent) { return static_cast<int>(rng() % 100) < percent; }

// ---- Packets -------------------------------------------------------------------------------------

const std::vector<hw::MacAddress> kMacs = {
    *hw::MacAddress::Parse("02:00:00:00:00:01"), *hw::MacAddress::Parse("02:00:00:00:00:02"),
    *hw::MacAddress::Parse("02:00:00:00:01:00"), *hw::MacAddress::Parse("01:00:5e:00:00:01")};
const std::vector<hw::Ipv4Address> kV4 = {
    *hw::Ipv4Address::Parse("10.0.0.1"), *hw::Ipv4Address::Parse("10.0.0.2"),
    *hw::Ipv4Address::Parse("10.0.1.1"), *hw::Ipv4Address::Parse("192.168.1.1")};
const std::vector<hw::Ipv6Address> kV6 = {
    *hw::Ipv6Address::Parse("2001:db8::1"), *hw::Ipv6Address::Parse("2001:db8::2"),
    *hw::Ipv6Address::Parse("2001:db8:0:1::1"), *hw::Ipv6Address::Parse("fe80::1")};
const std::vector<uint16_t> kPorts = {53, 80, 443, 4789, 1234, 65535};
const std::vector<uint16_t> kTcpFlags = {0x002, 0x010, 0x012, 0x011, 0x004, 0x110};
const std::vector<uint8_t> kDscp = {0, 46, 10};
const std::vector<uint8_t> kTtl = {64, 1, 255};
const std::vector<uint16_t> kVids = {10, 20, 100};

sim::FrameSpec RandomPlainSpec(std::mt19937& rng) {
  sim::FrameSpec s;
  s.smac = Pick(rng, kMacs);
  s.dmac = Pick(rng, kMacs);
  int vlan = rng() % 100;
  auto tci = [&] {
    return static_cast<uint16_t>((rng() % 8) << 13 | (Chance(rng, 10) ? 1 << 12 : 0) | Pick(rng, kVids));
  };
  if (vlan < 40) {
  } else if (vlan < 65) {
    s.vlans = {{0x8100, tci()}};
  } else if (vlan < 80) {
    s.vlans = {{0x88a8, tci()}, {0x8100, tci()}};
  } else if (vlan < 92) {
    s.vlans = {{0x88a8, tci()}};
  } else if (vlan < 96) {
    s.vlans = {{0x8100, tci()}, {0x8100, tci()}};
  } else {
    s.vlans = {{0x88a8, tci()}, {0x8100, tci()}, {0x8100, tci()}};
  }
  int l3 = rng() % 100;
  s.l3 = l3 < 60 ? sim::L3Kind::kIpv4 : l3 < 90 ? sim::L3Kind::kIpv6 : sim::L3Kind::kNone;
  s.ethertype = Chance(rng, 50) ? 0x0806 : 0x88cc;
  s.dscp = Pick(rng, kDscp);
  s.ecn = rng() % 4;
  s.ttl = Pick(rng, kTtl);
  s.ipv4_src = Pick(rng, kV4);
  s.ipv4_dst = Pick(rng, kV4);
  s.ipv6_src = Pick(rng, kV6);
  s.ipv6_dst = Pick(rng, kV6);
  s.ipv4_option_words = Chance(rng, 10) ? 2 : 0;
  s.flow_label = Chance(rng, 50) ? 0x12345 : 0;
  int frag = rng() % 100;
  if (frag >= 85) {
    s.more_fragments = frag < 95;
    s.fragment_offset = frag < 95 ? 0 : 64;
    if (s.l3 == sim::L3Kind::kIpv6) s.ipv6_extensions = {44};
  } else if (s.l3 == sim::L3Kind::kIpv6 && Chance(rng, 15)) {
    s.ipv6_extensions = Chance(rng, 50) ? std::vector<uint8_t>{0} : std::vector<uint8_t>{60, 43};
  }
  int proto = rng() % 100;
  bool v6 = s.l3 == sim::L3Kind::kIpv6;
  s.protocol = proto < 40   ? sim::kIpProtoTcp
               : proto < 80 ? sim::kIpProtoUdp
               : proto < 90 ? (v6 ? sim::kIpProtoIcmpv6 : sim::kIpProtoIcmp)
                            : 47;
  s.sport = Pick(rng, kPorts);
  s.dport = Pick(rng, kPorts);
  s.tcp_flags = Pick(rng, kTcpFlags);
  s.seq = Chance(rng, 50) ? 1000 : 0xfffffff0;
  s.icmp_type = Chance(rng, 50) ? 8 : 3;
  s.icmp_code = rng() % 2;
  s.payload_len = Chance(rng, 50) ? 0 : 20;
  return s;
}

const std::vector<uint32_t> kVnis = {1, 100, 0xabcdef};
const std::vector<uint32_t> kKeys = {1, 0x11223344};
const std::vector<uint32_t> kTeids = {1, 0xcafef00d};
const std::vector<uint32_t> kQps = {0x11, 0xabc, 0xffffff};
const std::vector<uint32_t> kLabels = {16, 1000, 0xfffff};
const std::vector<uint32_t> kWords = {0x1, 0xdeadbeef};

uint16_t ProtocolFor(std::mt19937& rng, const sim::FrameSpec& inner) {
  if (Chance(rng, 5)) return 0x1234;  // nothing we parse
  return inner.l3 == sim::L3Kind::kIpv6 ? 0x86dd : 0x0800;
}

std::vector<sim::MplsLabel> RandomLabels(std::mt19937& rng) {
  std::vector<sim::MplsLabel> labels(Chance(rng, 3) ? 9 : 1 + rng() % 3);  // 9: past the parser's 8
  for (sim::MplsLabel& l : labels) l = {Pick(rng, kLabels), static_cast<uint8_t>(rng() % 8), Pick(rng, kTtl)};
  return labels;
}

// A tunnel (or RoCE v2) description for an outer and inner packet, sometimes malformed on purpose.
sim::TunnelSpec RandomTunnel(std::mt19937& rng, const sim::FrameSpec& inner) {
  sim::TunnelSpec t;
  t.kind = static_cast<sim::Encap>(1 + rng() % 8);
  t.vni = Pick(rng, kVnis);
  switch (t.kind) {
    case sim::Encap::kVxlanGpe: {
      const int next = rng() % 100;
      t.gpe_next_protocol = next < 40 ? 3 : next < 95 ? (inner.l3 == sim::L3Kind::kIpv6 ? 2 : 1) : 4;
      t.gpe_flags = Chance(rng, 5) ? 0x2c : Chance(rng, 20) ? 0x08 : 0x0c;  // version 2; P clear
      break;
    }
    case sim::Encap::kGeneve:
      t.geneve_protocol = Chance(rng, 50) ? 0x6558 : ProtocolFor(rng, inner);
      t.geneve_oam = Chance(rng, 20);
      t.geneve_critical = Chance(rng, 20);
      for (int n = rng() % 3; n > 0; --n) {
        sim::GeneveOption o{static_cast<uint16_t>(Chance(rng, 50) ? 0x0102 : 0xffff),
                            static_cast<uint8_t>(Chance(rng, 50) ? 0x80 : 0x01),
                            {}};
        for (int w = rng() % 3; w > 0; --w) o.data.push_back(Pick(rng, kWords));
        t.geneve_options.push_back(o);
      }
      break;
    case sim::Encap::kGre: {
      const int protocol = rng() % 100;
      t.gre_protocol = protocol < 30 ? 0x6558 : protocol < 50 ? 0x8847 : ProtocolFor(rng, inner);
      t.gre_checksum = Chance(rng, 30);
      t.gre_key_present = Chance(rng, 60);
      t.gre_key = Pick(rng, kKeys);
      t.gre_seq_present = Chance(rng, 30);
      t.gre_seq = rng();
      t.mpls = RandomLabels(rng);
      break;
    }
    case sim::Encap::kMpls:
    case sim::Encap::kMplsOverUdp:
      t.mpls = RandomLabels(rng);
      t.mpls_ethertype = Chance(rng, 20) ? 0x8848 : 0x8847;
      break;
    case sim::Encap::kGtpu:
      t.gtpu_msg_type = Chance(rng, 90) ? 0xff : 1;
      t.gtpu_teid = Pick(rng, kTeids);
      t.gtpu_seq_present = Chance(rng, 30);
      t.gtpu_seq = static_cast<uint16_t>(rng());
      for (int n = Chance(rng, 50) ? 0 : 1 + rng() % 2; n > 0; --n) {
        t.gtpu_extensions.push_back({0x85,
                                     {static_cast<uint8_t>(Chance(rng, 50) ? 0x00 : 0x10),
                                      static_cast<uint8_t>(Chance(rng, 50) ? 1 : 9)}});
      }
      break;
    case sim::Encap::kRoceV2:
      t.bth_opcode = Chance(rng, 50) ? 0x04 : 0x0a;
      t.bth_dst_qp = Pick(rng, kQps);
      t.bth_ack_req = Chance(rng, 50);
      t.bth_psn = rng() & 0xffffff;
      break;
    default:
      break;
  }
  return t;
}

// Two thirds plain frames as before; the rest tunnelled or RoCE v2, with a random inner packet.
sim::TunnelFrameSpec RandomSpec(std::mt19937& rng) {
  sim::TunnelFrameSpec t;
  t.outer = RandomPlainSpec(rng);
  if (Chance(rng, 67)) return t;
  t.inner = RandomPlainSpec(rng);
  t.tunnel = RandomTunnel(rng, t.inner);
  if (t.outer.l3 == sim::L3Kind::kNone) t.outer.l3 = sim::L3Kind::kIpv4;  // IP tunnels need an IP outer
  return t;
}

// ---- Masks ---------------------------------------------------------------------------------------

// Valid NIC_RX masks of the kinds users write; criteria 0 means the empty (match-all) matcher. Root-only
// masks are those the kernel and firmware take but rdma-core's STE builders refuse, as DPDK's mlx5 PMD
// writes them for group 0: `off_root` is the refusal (EOPNOTSUPP; EINVAL when no builder applies at all).
struct MaskTemplate {
  const char* name;
  MatchBuilder (*build)();
  absl::StatusCode off_root = absl::StatusCode::kOk;
  bool root_only() const { return off_root != absl::StatusCode::kOk; }
};
constexpr absl::StatusCode kNoBuilder = absl::StatusCode::kInvalidArgument;
constexpr absl::StatusCode kLeftOver = absl::StatusCode::kUnimplemented;

const hw::MacAddress kAllMac = hw::MacAddress::AllOnes();
const std::vector<MaskTemplate> kMasks = {
    {"smac", [] { return MatchBuilder().Smac(kOuter, kAllMac); }},
    {"dmac+vlan",
     [] { return MatchBuilder().Dmac(kOuter, kAllMac).FirstVid(kOuter, 0xfff).CvlanTag(kOuter, 1); }},
    {"v4 dst/24+proto",
     [] {
       return MatchBuilder()
           .IpVersion(kOuter, 4)
           .Ipv4Dst(kOuter, hw::Ipv4Address::PrefixMask(24))
           .IpProtocol(kOuter, 0xff);
     }},
    {"v4 5-tuple",
     [] {
       return MatchBuilder()
           .IpVersion(kOuter, 4)
           .Ipv4Src(kOuter, hw::Ipv4Address::PrefixMask(16))
           .Ipv4Dst(kOuter, hw::Ipv4Address::PrefixMask(32))
           .IpProtocol(kOuter, 0xff)
           .TcpSport(kOuter, 0xffff)
           .TcpDport(kOuter, 0xffff);
     }},
    {"v4 udp dport", [] { return MatchBuilder().IpVersion(kOuter, 4).UdpDport(kOuter, 0xffff); }},
    {"v6 dst/64+proto",
     [] {
       return MatchBuilder()
           .IpVersion(kOuter, 6)
           .Ipv6Dst(kOuter, hw::Ipv6Address::PrefixMask(64))
           .IpProtocol(kOuter, 0xff);
     }},
    {"v6 src+dport+label",
     [] {
       return MatchBuilder()
           .IpVersion(kOuter, 6)
           .Ipv6Src(kOuter, hw::Ipv6Address::PrefixMask(128))
           .UdpDport(kOuter, 0xffff)
           .Ipv6FlowLabel(kOuter, 0xfffff);
     }},
    {"ethertype", [] { return MatchBuilder().Ethertype(kOuter, 0xffff); }},
    {"v4 dscp+ecn", [] { return MatchBuilder().IpVersion(kOuter, 4).Dscp(kOuter, 0x3f).Ecn(kOuter, 3); }},
    {"v4 tcp flags+dport",
     [] { return MatchBuilder().IpVersion(kOuter, 4).TcpFlags(kOuter, 0x012).TcpDport(kOuter, 0xff00); }},
    {"cvlan only", [] { return MatchBuilder().CvlanTag(kOuter, 1); }},
    {"empty", [] { return MatchBuilder(); }},
    {"frag+proto",
     [] { return MatchBuilder().IpVersion(kOuter, 4).Frag(kOuter, 1).IpProtocol(kOuter, 0xff); }},
    {"v6 frag+hoplimit",
     [] { return MatchBuilder().IpVersion(kOuter, 6).Frag(kOuter, 1).TtlHoplimit(kOuter, 0xff); }},
    {"qinq",
     [] {
       return MatchBuilder()
           .SvlanTag(kOuter, 1)
           .FirstVid(kOuter, 0xfff)
           .SecondVid(kOuter, 0xfff)
           .Set(Field::kOuterSecondCvlanTag, 1);
     }},
    {"icmp",
     [] {
       return MatchBuilder().IpVersion(kOuter, 4).IpProtocol(kOuter, 0xff).IcmpType(0xff).IcmpCode(0xff);
     }},
    {"icmpv6", [] { return MatchBuilder().IpVersion(kOuter, 6).Icmpv6Type(0xff); }},
    {"dmac multicast bit",
     [] {
       return MatchBuilder().Dmac(kOuter, {{0x01, 0, 0, 0, 0, 0}});
     }},
    {"source port", [] { return MatchBuilder().SourcePort(0xffff); }},
    {"tcp seq", [] { return MatchBuilder().IpVersion(kOuter, 4).Set(Field::kOuterTcpSeqNum, 0xffff0000); }},
    {"vlan prio", [] { return MatchBuilder().FirstPrio(kOuter, 7).SvlanTag(kOuter, 1); }},
    // Tunnels, inner headers, MPLS and RoCE.
    {"vxlan vni+inner v4 dst",
     [] {
       return MatchBuilder().VxlanVni(0xffffff).IpVersion(kInner, 4).Ipv4Dst(kInner,
                                                                             hw::Ipv4Address::PrefixMask(32));
     }},
    {"gre key",
     [] { return MatchBuilder().GreKey(0xffffffff).Set(Field::kGreKPresent, 1).GreProtocol(0xffff); }},
    {"geneve vni+option 0",
     [] {
       return MatchBuilder()
           .GeneveVni(0xffffff)
           .Set(Field::kGeneveProtocolType, 0xffff)
           .Set(Field::kGeneveTlvOption0Data, 0xffffffff)
           .Set(Field::kGeneveTlvOption0Exist, 1);
     }},
    {"gtpu teid",
     [] { return MatchBuilder().Set(Field::kGtpuTeid, 0xffffffff).Set(Field::kGtpuMsgType, 0xff); }},
    {"gtpu dw2+ext",
     [] { return MatchBuilder().Set(Field::kGtpuDw2, 0xffff00ff).Set(Field::kGtpuFirstExtDw0, 0xffffffff); }},
    {"bth dst qp",
     [] {
       return MatchBuilder()
           .Set(Field::kBthDstQp, 0xffffff)
           .Set(Field::kBthOpcode, 0xff)
           .Set(Field::kBthA, 1);
     }},
    {"mpls label",
     [] {
       return MatchBuilder().Set(Field::kOuterFirstMplsLabel, 0xfffff).Set(Field::kOuterFirstMplsSBos, 1);
     }},
    {"mpls over gre label", [] { return MatchBuilder().Set(Field::kOuterFirstMplsOverGreLabel, 0xfffff); }},
    {"mpls over udp label+exp",
     [] {
       return MatchBuilder()
           .Set(Field::kOuterFirstMplsOverUdpLabel, 0xfffff)
           .Set(Field::kOuterFirstMplsOverUdpExp, 7);
     }},
    {"gpe vni+next protocol",
     [] {
       return MatchBuilder()
           .Set(Field::kOuterVxlanGpeVni, 0xffffff)
           .Set(Field::kOuterVxlanGpeNextProtocol, 0xff);
     }},
    {"tunnel header",
     [] {
       return MatchBuilder().Set(Field::kTunnelHeader0, 0xffffffff).Set(Field::kTunnelHeader1, 0xffffff00);
     }},
    {"inner 5-tuple",
     [] {
       return MatchBuilder()
           .IpVersion(kInner, 4)
           .IpProtocol(kInner, 0xff)
           .TcpSport(kInner, 0xffff)
           .TcpDport(kInner, 0xffff);
     }},
    {"inner v6 dst+label",
     [] {
       return MatchBuilder()
           .IpVersion(kInner, 6)
           .Ipv6Dst(kInner, hw::Ipv6Address::PrefixMask(64))
           .Ipv6FlowLabel(kInner, 0xfffff);
     }},
    {"inner dmac+qinq",
     [] {
       return MatchBuilder()
           .Dmac(kInner, kAllMac)
           .SvlanTag(kInner, 1)
           .FirstVid(kInner, 0xfff)
           .SecondVid(kInner, 0xfff);
     }},
    {"inner ethertype+udp dport",
     [] { return MatchBuilder().Ethertype(kInner, 0xffff).IpVersion(kInner, 4).UdpDport(kInner, 0xffff); }},
    {"inner tcp seq", [] { return MatchBuilder().Set(Field::kInnerTcpSeqNum, 0xffff0000); }},
    {"outer v4 udp+inner frag",
     [] {
       return MatchBuilder()
           .IpVersion(kOuter, 4)
           .UdpDport(kOuter, 0xffff)
           .IpVersion(kInner, 4)
           .Frag(kInner, 1);
     }},
    // Root tables only.
    {"root v4 udp dport (ip_version 0xf)",
     [] { return MatchBuilder().IpVersion(kOuter, 0xf).IpProtocol(kOuter, 0xff).UdpDport(kOuter, 0xffff); },
     kLeftOver},
    {"root ethertype+v4 dst+udp dport",
     [] {
       return MatchBuilder()
           .Ethertype(kOuter, 0xffff)
           .Ipv4Dst(kOuter, hw::Ipv4Address::PrefixMask(32))
           .UdpDport(kOuter, 0xffff);
     },
     kLeftOver},
    {"root udp dport alone", [] { return MatchBuilder().UdpDport(kOuter, 0xffff); }, kNoBuilder},
    {"root v6 src/64 alone", [] { return MatchBuilder().Ipv6Src(kOuter, hw::Ipv6Address::PrefixMask(64)); },
     kNoBuilder},
    {"root vxlan+inner ip_version 0xf+tcp dport",
     [] { return MatchBuilder().VxlanVni(0xffffff).IpVersion(kInner, 0xf).TcpDport(kInner, 0xffff); },
     kLeftOver},
};

// Random bits in every field: ValueFor turns them into a random valid value under a mask.
MatchParams RandomFields(std::mt19937& rng) {
  MatchParams fields;
  for (size_t i = 0; i < hw::kMatchParamBytes; ++i) fields.bytes()[i] = static_cast<uint8_t>(rng());
  return fields;
}

// ---- The test ------------------------------------------------------------------------------------

class DifferentialRun {
 public:
  // `crowded`: a root and one level-1 table holding most of the matchers (an indexed table: lookups past
  // its first hw::TableIndex::chain_first() matchers go through the index); else one or two roots and
  // levels 1..3.
  explicit DifferentialRun(uint32_t seed, bool crowded = false)
      : seed_(seed), crowded_(crowded), rng_(seed), model_(/*queues=*/4, {0x1, 0xabcdef, 0x123}) {}

  void Run() {
    ASSERT_TRUE(model_.SetAllowDuplicates(seed_ % 3 != 0).ok());
    std::vector<uint32_t> levels = {0, 1, 2, 3};
    if (crowded_) {
      levels = {0, 1};
    } else if (seed_ % 2 == 0) {
      levels.push_back(0);
    }
    for (uint32_t level : levels) model_.AddTable(level);
    // The first matchers take the templates in turn (each seed starting further on), so that the seeds
    // together use every template; replacements pick at random.
    const size_t matchers = crowded_ ? 60 : 14;
    for (size_t i = 0; i < matchers && !::testing::Test::HasFatalFailure(); ++i) {
      AddMatcher(&kMasks[(seed_ * matchers + i) % kMasks.size()]);
    }

    for (int phase = 0; phase < kPhases && !::testing::Test::HasFatalFailure(); ++phase) {
      if (phase > 0) {
        UpdateSome();
        DeleteSome();
        for (int i = 0; i < (crowded_ ? 6 : 2); ++i) ReplaceMatcher();
      }
      for (int i = 0; i < (crowded_ ? 600 : 250) && !::testing::Test::HasFatalFailure(); ++i) AddRule();
      SendPackets(phase);
    }
  }

 private:
  // Adds a matcher to a random table.
  void AddMatcher(const MaskTemplate* chosen = nullptr) {
    const MaskTemplate& t = chosen != nullptr ? *chosen : Pick(rng_, kMasks);
    // (Crowded: table 1 takes seven matchers in eight. Table 0 is a root table.)
    const int table = t.root_only() ? 0
                      : crowded_    ? (rng_() % 8 != 0)
                                    : static_cast<int>(rng_() % model_.num_tables());
    // Catch-all matchers (empty, source port) go last in their table, so the others get traffic too.
    const bool catch_all = std::string(t.name) == "empty" || std::string(t.name) == "source port";
    const uint16_t prio = catch_all ? 3 : static_cast<uint16_t>(rng_() % 4);
    absl::StatusOr<int> m = model_.AddMatcher(table, prio, *t.build().Build());
    ASSERT_TRUE(m.ok()) << "seed " << seed_ << ", template " << t.name << ": " << m.status();
    matchers_.push_back(*m);
    matcher_template_[*m] = t.name;
  }

  // Actions for a rule: mostly legal lists, sometimes illegal ones (which must be rejected).
  RuleActions ChooseActions() {
    static constexpr std::pair<int, ActionShape> kShapes[] = {
        {25, ActionShape::kQueue},       {45, ActionShape::kTagQueue}, {55, ActionShape::kDrop},
        {62, ActionShape::kTag},         {72, ActionShape::kTagJump},  {85, ActionShape::kJump},
        {89, ActionShape::kDefaultMiss}, {92, ActionShape::kNone},     {96, ActionShape::kQueueTag},
        {100, ActionShape::kTagTag}};
    const int kind = rng_() % 100;
    RuleActions actions;
    for (const auto& [below, shape] : kShapes) {
      if (kind < below) {
        actions.shape = shape;
        break;
      }
    }
    actions.tag = rng_();
    actions.queue = rng_();
    actions.jump = rng_();
    return actions;
  }

  void AddRule() {
    const int mi = matchers_[rng_() % matchers_.size()];
    const std::vector<MatchParams>& values = model_.matcher_values(mi);
    MatchParams value;
    if (!values.empty() && Chance(rng_, 15)) {
      value = values[rng_() % values.size()];  // a deliberate duplicate
    } else {
      MatchParams fields = ExpectedFields(RandomSpec(rng_));
      if (Chance(rng_, 10)) fields = RandomFields(rng_);
      value = ValueFor(model_.matcher_mask(mi), fields, model_.matcher_on_root(mi));
    }
    absl::StatusOr<int> r = model_.AddRule(mi, value, ChooseActions());
    ASSERT_TRUE(r.ok()) << "seed " << seed_ << ", template " << matcher_template_[mi] << ": " << r.status();
    if (*r >= 0) rule_template_[model_.rule_id(*r)] = matcher_template_[mi];
  }

  // Changes a quarter of the rules in dr::Rule::UpdateMany calls of up to 40: mostly to new values (an update
  // that moves a rule's key), else to the value they have (an update of their actions) or to that of another
  // rule of their matcher (a duplicate); now and then a call also names a destroyed rule or one rule twice,
  // which the driver must refuse whole.
  void UpdateSome() {
    std::vector<NicRxModel::RuleChange> changes;
    auto apply = [&] {
      const absl::StatusOr<bool> applied = model_.UpdateRules(changes);
      ASSERT_TRUE(applied.ok()) << "seed " << seed_ << ": " << applied.status();
      ++(*applied ? update_calls_ : refused_update_calls_);
      for (const NicRxModel::RuleChange& c : changes) {
        if (!*applied) continue;
        rule_template_[model_.rule_id(c.rule)] = matcher_template_[model_.rule_matcher(c.rule)];
        ++updated_;
      }
      changes.clear();
    };
    size_t batch = 1 + rng_() % 40;
    for (int r : model_.LiveRules()) {
      if (!Chance(rng_, 25)) continue;
      const int mi = model_.rule_matcher(r);
      const std::vector<MatchParams>& values = model_.matcher_values(mi);
      MatchParams value;
      if (Chance(rng_, 20)) {
        value = model_.rule_value(r);
      } else if (Chance(rng_, 15)) {
        value = values[rng_() % values.size()];  // another rule's, perhaps
      } else {
        MatchParams fields = ExpectedFields(RandomSpec(rng_));
        if (Chance(rng_, 10)) fields = RandomFields(rng_);
        value = ValueFor(model_.matcher_mask(mi), fields, model_.matcher_on_root(mi));
      }
      RuleActions actions = ChooseActions();
      const bool illegal = actions.shape == ActionShape::kQueueTag || actions.shape == ActionShape::kTagTag;
      if (illegal && !Chance(rng_, 10)) actions.shape = ActionShape::kDrop;  // (one refuses the whole call)
      changes.push_back({r, value, actions});
      if (Chance(rng_, 2)) changes.push_back(changes[rng_() % changes.size()]);  // a rule named twice
      if (changes.size() >= batch) {
        apply();
        batch = 1 + rng_() % 40;
      }
      if (::testing::Test::HasFatalFailure()) return;
    }
    if (!changes.empty() && Chance(rng_, 10) && model_.num_rules() > 0) {
      const int r = static_cast<int>(rng_() % model_.num_rules());
      changes.push_back({r, model_.rule_value(r), ChooseActions()});
    }
    if (!changes.empty()) apply();
  }

  void DeleteSome() {
    for (int r : model_.LiveRules()) {
      if (!Chance(rng_, 30)) continue;
      const absl::Status s = model_.DestroyRule(r);
      ASSERT_TRUE(s.ok()) << "seed " << seed_ << ": " << s;
    }
  }

  // Destroys one matcher (which fails while it has rules, then works after them) and creates another in
  // its slot.
  void ReplaceMatcher() {
    const size_t slot = rng_() % matchers_.size();
    const int mi = matchers_[slot];
    absl::Status s = model_.DestroyMatcher(mi);
    ASSERT_TRUE(s.ok()) << "seed " << seed_ << ": " << s;
    for (int r : model_.LiveRules()) {
      if (model_.rule_matcher(r) != mi) continue;
      s = model_.DestroyRule(r);
      ASSERT_TRUE(s.ok()) << "seed " << seed_ << ": " << s;
    }
    if (model_.matcher_alive(mi)) {
      s = model_.DestroyMatcher(mi);
      ASSERT_TRUE(s.ok()) << "seed " << seed_ << ": " << s;
    }
    // Keep the other slots: this one gets the new matcher.
    AddMatcher();
    if (::testing::Test::HasFatalFailure()) return;
    matchers_[slot] = matchers_.back();
    matchers_.pop_back();
  }

  void SendPackets(int phase) {
    constexpr size_t kBurst = 64;
    for (int sent = 0; sent < kPacketsPerPhase; sent += kBurst) {
      std::vector<sim::TunnelFrameSpec> specs;
      for (size_t i = 0; i < kBurst; ++i) specs.push_back(RandomSpec(rng_));
      absl::StatusOr<std::vector<RefVerdict>> verdicts = model_.Classify(specs);
      ASSERT_TRUE(verdicts.ok()) << "seed " << seed_ << " phase " << phase << ", packets from " << sent
                                 << ": " << verdicts.status();
      for (const RefVerdict& want : *verdicts) {
        ++packets_;
        ++fates_[static_cast<int>(want.fate)];
        if (want.rule_path.size() > 1) ++multi_table_;
        if (want.has_flow_tag) ++tagged_;
        for (uint32_t id : want.rule_path) {
          if (id != 0) ++template_hits_[rule_template_[id]];
        }
      }
    }
  }

 public:
  int packets() const { return packets_; }
  // Packets that hit a rule, per mask template (a packet crossing tables counts in each).
  const std::map<std::string, int>& template_hits() const { return template_hits_; }
  // How the packets were steered, to show the rule sets exercise every outcome.
  std::string Summary() const {
    return absl::StrFormat(
        "seed %d: %d packets, queued %d, dropped %d, default %d, loops %d; "
        "%d crossed tables, %d tagged; %d rules live; %d rules updated in %d calls, %d calls refused",
        seed_, packets_, fates_[0], fates_[1], fates_[2], fates_[4], multi_table_, tagged_,
        model_.LiveRules().size(), updated_, update_calls_, refused_update_calls_);
  }

 private:
  uint32_t seed_;
  bool crowded_;
  std::mt19937 rng_;
  NicRxModel model_;
  std::vector<int> matchers_;                      // the model's live matchers
  std::map<int, const char*> matcher_template_;    // model matcher -> its mask template
  std::map<uint32_t, const char*> rule_template_;  // rule id -> its matcher's mask template
  int packets_ = 0;
  int updated_ = 0;  // rules replaced by UpdateMany calls that applied, and those calls and the others
  int update_calls_ = 0;
  int refused_update_calls_ = 0;
  int fates_[5] = {};
  int multi_table_ = 0;
  int tagged_ = 0;
  std::map<std::string, int> template_hits_;
};

TEST(DifferentialTest, SoftwareNicAgreesWithTheReferenceClassifier) {
  int packets = 0;
  std::map<std::string, int> hits;
  for (uint32_t seed : kSeeds) {
    DifferentialRun run(seed);
    run.Run();
    if (::testing::Test::HasFatalFailure()) return;
    packets += run.packets();
    for (const auto& [name, n] : run.template_hits()) hits[name] += n;
    std::cout << run.Summary() << "\n";
  }
  EXPECT_GE(packets, 100000);
  // How often each template's rules won (0 is possible: other matchers may shadow a template's).
  std::cout << "rule hits per mask template:";
  for (const MaskTemplate& t : kMasks) std::cout << " " << t.name << "=" << hits[t.name] << ";";
  std::cout << "\n";
}

// The same with most matchers in one level-1 table, whose lookups go through its index (hw/table_index.h)
// past its first matchers:
// matchers of every template, broad ones (many rules) and narrow ones, created and destroyed as rules churn.
TEST(DifferentialTest, IndexedTableAgreesWithTheReferenceClassifier) {
  int packets = 0;
  for (uint32_t seed : kSeeds) {
    DifferentialRun run(seed, /*crowded=*/true);
    run.Run();
    if (::testing::Test::HasFatalFailure()) return;
    packets += run.packets();
    std::cout << run.Summary() << "\n";
  }
  EXPECT_GE(packets, 100000);
}

// Each mask template alone in a root table, with rules made from random packets' fields: those packets and
// fresh random ones must be steered as the reference says, and every template's rules must be hit.
TEST(DifferentialTest, EveryMaskTemplateSteersPackets) {
  std::mt19937 rng(11);
  for (const MaskTemplate& t : kMasks) {
    NicRxModel model(/*queues=*/1, /*tags=*/{0x1});
    absl::StatusOr<int> matcher = model.AddMatcher(model.AddTable(0), 0, *t.build().Build());
    ASSERT_TRUE(matcher.ok()) << t.name << ": " << matcher.status();
    std::vector<sim::TunnelFrameSpec> specs;
    for (int i = 0; i < 40; ++i) {
      specs.push_back(RandomSpec(rng));
      MatchParams fields = ExpectedFields(specs.back());
      if (Chance(rng, 10)) fields = RandomFields(rng);
      absl::StatusOr<int> r = model.AddRule(
          *matcher, ValueFor(model.matcher_mask(*matcher), fields, /*root=*/true), {ActionShape::kQueue});
      ASSERT_TRUE(r.ok()) << t.name << ": " << r.status();
      ASSERT_GE(*r, 0) << t.name;
    }
    for (int i = 0; i < 40; ++i) specs.push_back(RandomSpec(rng));
    absl::StatusOr<std::vector<RefVerdict>> verdicts = model.Classify(specs);
    ASSERT_TRUE(verdicts.ok()) << t.name << ": " << verdicts.status();
    int hits = 0;
    for (const RefVerdict& want : *verdicts) hits += want.rule_path[0] != 0;
    EXPECT_GT(hits, 0) << t.name;
  }
}

// The root-only masks on a level-1 table: rdma-core's STE builders refuse them (EOPNOTSUPP, or EINVAL when
// no builder applies) and nothing is installed; the same masks steer packets in a root table (above).
TEST(DifferentialTest, RootOnlyMasksAreRefusedOffRoot) {
  std::mt19937 rng(13);
  int root_only = 0;
  for (const MaskTemplate& t : kMasks) {
    if (!t.root_only()) continue;
    ++root_only;
    NicRxModel model(/*queues=*/1, /*tags=*/{0x1});
    model.AddTable(0);
    const int t1 = model.AddTable(1);
    std::vector<sim::TunnelFrameSpec> specs;
    for (int i = 0; i < 20; ++i) specs.push_back(RandomSpec(rng));
    absl::Status s = model.ExpectMatcherRefused(t1, 0, *t.build().Build(), t.off_root, specs);
    EXPECT_TRUE(s.ok()) << t.name << ": " << s;
  }
  EXPECT_EQ(root_only, 5);
}

// Rule::UpdateMany in an indexed table (hw/table_index.h): 17 matchers of one mask behind a jump, one
// holding 9 rules with 8 values. One call moves the duplicate to a value of its own, a ninth entry, so its
// matcher goes broad during the call, and moves two rules of every other matcher; every frame, of the old
// values and of the new, is then steered as the reference says.
TEST(DifferentialTest, UpdateManyInAnIndexedTable) {
  std::mt19937 rng(5);
  NicRxModel model(/*queues=*/1, /*tags=*/{0x1});
  const int root = model.AddTable(0);
  const int acl = model.AddTable(1);
  absl::StatusOr<int> all = model.AddMatcher(root, 0, MatchParams());
  ASSERT_TRUE(all.ok()) << all.status();
  RuleActions jump;
  jump.shape = ActionShape::kJump;
  ASSERT_GE(*model.AddRule(*all, MatchParams(), jump), 0);
  ASSERT_STREQ(kMasks[3].name, "v4 5-tuple");
  const MatchParams five_tuple = *kMasks[3].build().Build();
  std::vector<sim::TunnelFrameSpec> specs;
  // A frame's spec and the value of a rule its packet hits in a matcher with `five_tuple`.
  auto fresh = [&] {
    specs.push_back(RandomSpec(rng));
    return ValueFor(five_tuple, ExpectedFields(specs.back()));
  };
  std::vector<std::vector<int>> rules_of(17);
  for (uint16_t p = 0; p < 17; ++p) {
    absl::StatusOr<int> m = model.AddMatcher(acl, p, five_tuple);
    ASSERT_TRUE(m.ok()) << m.status();
    for (int r = 0; r < (p == 0 ? 9 : 2); ++r) {
      const MatchParams value = p == 0 && r == 8 ? model.rule_value(rules_of[0][0]) : fresh();
      absl::StatusOr<int> rule = model.AddRule(*m, value, {ActionShape::kQueue});
      ASSERT_TRUE(rule.ok()) << rule.status();
      ASSERT_GE(*rule, 0);
      rules_of[p].push_back(*rule);
    }
  }
  ASSERT_TRUE(model.Classify(specs).ok());
  std::vector<NicRxModel::RuleChange> changes = {{rules_of[0][8], fresh(), {ActionShape::kDrop}}};
  for (uint16_t p = 1; p < 17; ++p) {
    for (int r : rules_of[p]) changes.push_back({r, fresh(), {ActionShape::kQueue}});
  }
  absl::StatusOr<bool> applied = model.UpdateRules(changes);
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_TRUE(*applied);
  absl::StatusOr<std::vector<RefVerdict>> verdicts = model.Classify(specs);
  ASSERT_TRUE(verdicts.ok()) << verdicts.status();
  int hits = 0;
  for (const RefVerdict& want : *verdicts) hits += want.rule_path.size() > 1 && want.rule_path[1] != 0;
  std::cout << hits << " of " << specs.size() << " frames hit a rule of the indexed table\n";
  EXPECT_GT(hits, 20);  // (frames of the old values miss now, or hit another matcher's rule)
}

}  // namespace
}  // namespace drsim::testing
