// Randomized differential test: rule sets with several tables, matchers, priorities, duplicates and
// deletes are programmed through dr:: into the software NIC and mirrored into the brute-force reference
// classifier; every packet's verdict (fate, queue, flow tag, and the rule hit in each table visited) must
// agree, and so must the parsed header fields and every insertion error. Fixed seeds; 101,376 packets.
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "dr/dr.h"
#include "gtest/gtest.h"
#include "hw/match_params.h"
#include "sim/frame_builder.h"
#include "sim/nic.h"
#include "sim/packet_parser.h"
#include "tests/packet_model.h"
#include "tests/reference_classifier.h"

namespace drsim::testing {
namespace {

using hw::Field;
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

sim::FrameSpec RandomSpec(std::mt19937& rng) {
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

std::string Describe(const sim::FrameSpec& s) {
  return absl::StrFormat("vlans=%d l3=%d proto=%d sport=%d dport=%d frag=%d/%d ext=%d", s.vlans.size(),
                         static_cast<int>(s.l3), s.protocol, s.sport, s.dport, s.more_fragments,
                         s.fragment_offset, s.ipv6_extensions.size());
}

// ---- Masks ---------------------------------------------------------------------------------------

// Valid NIC_RX masks of the kinds users write; criteria 0 means the empty (match-all) matcher.
struct MaskTemplate {
  const char* name;
  MatchBuilder (*build)();
};

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
};

// A rule value under `mask` for a packet like `proto`: its fields under the mask, the hardware's way.
MatchParams ValueFor(const MatchParams& mask, const MatchParams& proto_fields, std::mt19937& rng) {
  MatchParams v;
  const uint8_t* m = mask.bytes();
  const bool random_bits = Chance(rng, 10);
  for (size_t i = 0; i < hw::kNumFields; ++i) {
    Field f = hw::FieldAt(i);
    uint32_t fm = hw::GetField(m, f);
    if (fm == 0) continue;
    uint32_t pv = hw::GetField(proto_fields.bytes(), f);
    auto port_pair = [&](Field tcp, Field udp) {
      if (f == tcp || f == udp)
        pv = hw::GetField(proto_fields.bytes(), tcp) | hw::GetField(proto_fields.bytes(), udp);
    };
    port_pair(Field::kOuterTcpSport, Field::kOuterUdpSport);
    port_pair(Field::kOuterTcpDport, Field::kOuterUdpDport);
    if (random_bits) pv = static_cast<uint32_t>(rng());
    hw::SetField(v.bytes(), f, pv & fm);
  }
  hw::SetField(v.bytes(), Field::kOuterIpVersion, hw::GetField(m, Field::kOuterIpVersion));
  return v;
}

// ---- The test ------------------------------------------------------------------------------------

struct LiveMatcher {
  dr::Matcher matcher;
  int ref;
  uint32_t table_level;
  MatchParams mask;
  std::vector<MatchParams> values;  // values inserted, for duplicates
};

struct LiveRule {
  dr::Rule rule;
  int ref;
  size_t matcher;  // index into matchers
};

class DifferentialRun {
 public:
  explicit DifferentialRun(uint32_t seed) : seed_(seed), rng_(seed) {}

  void Run() {
    domain_ = *dr::Domain::Create(nic_.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
    allow_duplicates_ = seed_ % 3 != 0;
    ASSERT_TRUE(domain_.AllowDuplicateRules(allow_duplicates_).ok());
    // Tables: one or two roots, and levels 1..3.
    std::vector<uint32_t> levels = {0, 1, 2, 3};
    if (seed_ % 2 == 0) levels.push_back(0);
    for (uint32_t level : levels) {
      tables_.push_back(*dr::Table::Create(domain_, level));
      table_refs_.push_back(ref_.AddTable(level));
      if (level != 0) {
        jumps_.push_back(*dr::Action::DestTable(tables_.back()));
        jump_refs_.push_back(table_refs_.back());
      }
    }
    for (int q = 0; q < 4; ++q) {
      qps_.push_back(nic_.pf().CreateQueue(1 << 16));
      qp_actions_.push_back(*dr::Action::DestQp(nic_.pf(), qps_.back()));
    }
    for (uint32_t tag : {0x1u, 0xabcdefu, 0x123u}) tags_.push_back({*dr::Action::Tag(tag), tag});
    drop_ = *dr::Action::Drop();
    miss_ = *dr::Action::DefaultMiss();
    for (int i = 0; i < 14; ++i) AddMatcher();

    for (int phase = 0; phase < kPhases && !::testing::Test::HasFatalFailure(); ++phase) {
      if (phase > 0) {
        DeleteSome();
        for (int i = 0; i < 2; ++i) ReplaceMatcher();
      }
      for (int i = 0; i < 250; ++i) AddRule();
      SendPackets(phase);
    }
  }

 private:
  void AddMatcher() {
    const MaskTemplate& t = Pick(rng_, kMasks);
    MatchParams mask = *t.build().Build();
    size_t ti = rng_() % tables_.size();
    // Catch-all matchers (empty, source port) go last in their table, so the others get traffic too.
    const bool catch_all = std::string(t.name) == "empty" || std::string(t.name) == "source port";
    uint16_t prio = catch_all ? 3 : static_cast<uint16_t>(rng_() % 4);
    uint8_t criteria = mask.criteria();
    absl::StatusOr<dr::Matcher> m = dr::Matcher::Create(tables_[ti], prio, criteria, mask.get());
    ASSERT_TRUE(m.ok()) << t.name << ": " << m.status();
    int ref = ref_.AddMatcher(table_refs_[ti], prio, criteria, mask.bytes());
    matchers_.push_back(
        std::make_unique<LiveMatcher>(LiveMatcher{*std::move(m), ref, tables_[ti].level(), mask, {}}));
  }

  // Actions for a rule: mostly legal lists, sometimes illegal ones (which must be rejected).
  void ChooseActions(std::vector<const dr::Action*>* list, RefAction* ref, absl::StatusCode* expect) {
    *expect = absl::StatusCode::kOk;
    int kind = rng_() % 100;
    auto tag = [&] {
      auto& t = tags_[rng_() % tags_.size()];
      list->push_back(&t.first);
      ref->set_tag = true;
      ref->tag = t.second;
    };
    auto qp = [&] {
      size_t q = rng_() % qp_actions_.size();
      list->push_back(&qp_actions_[q]);
      ref->dest = RefAction::Dest::kQueue;
      ref->queue = qps_[q];
    };
    auto jump = [&] {
      size_t j = rng_() % jumps_.size();
      list->push_back(&jumps_[j]);
      ref->dest = RefAction::Dest::kTable;
      ref->table = jump_refs_[j];
    };
    if (kind < 25) {
      qp();
    } else if (kind < 45) {
      tag();
      qp();
    } else if (kind < 55) {
      list->push_back(&drop_);
      ref->dest = RefAction::Dest::kDrop;
    } else if (kind < 62) {
      tag();
    } else if (kind < 72) {
      tag();
      jump();
    } else if (kind < 85) {
      jump();
    } else if (kind < 89) {
      list->push_back(&miss_);
      ref->dest = RefAction::Dest::kDefaultMiss;
    } else if (kind < 92) {
      // no actions: the domain default
    } else if (kind < 96) {
      qp();
      tag();  // a tag after a terminating action
      *expect = absl::StatusCode::kUnimplemented;
    } else {
      tag();
      tag();  // two tags
      *expect = absl::StatusCode::kInvalidArgument;
    }
  }

  void AddRule() {
    size_t mi = rng_() % matchers_.size();
    LiveMatcher& lm = *matchers_[mi];
    MatchParams value;
    if (!lm.values.empty() && Chance(rng_, 15)) {
      value = lm.values[rng_() % lm.values.size()];  // a deliberate duplicate
    } else {
      value = ValueFor(lm.mask, ExpectedFields(RandomSpec(rng_)), rng_);
    }
    std::vector<const dr::Action*> list;
    RefAction ref_action;
    absl::StatusCode expect;
    ChooseActions(&list, &ref_action, &expect);
    const bool root = lm.table_level == 0;
    // Root tables take the kernel path: no action-order state machine there.
    if (root && expect == absl::StatusCode::kUnimplemented) expect = absl::StatusCode::kOk;
    uint32_t dup = ref_.FindDuplicate(lm.ref, value.bytes());
    if (expect == absl::StatusCode::kOk && !allow_duplicates_ && !root && dup != 0) {
      expect = absl::StatusCode::kAlreadyExists;
    }
    absl::StatusOr<dr::Rule> r = dr::Rule::Create(lm.matcher, value, list);
    ASSERT_EQ(r.status().code(), expect) << r.status();
    if (!r.ok()) return;
    int ref = ref_.AddRule(lm.ref, value.bytes(), ref_action, r->id());
    lm.values.push_back(value);
    rules_.push_back({*std::move(r), ref, mi});
  }

  void DeleteSome() {
    for (size_t i = 0; i < rules_.size();) {
      if (Chance(rng_, 30)) {
        ASSERT_TRUE(rules_[i].rule.Destroy().ok());
        ref_.RemoveRule(rules_[i].ref);
        rules_.erase(rules_.begin() + i);
      } else {
        ++i;
      }
    }
  }

  // Destroys one matcher (after its rules) and creates another.
  void ReplaceMatcher() {
    size_t mi = rng_() % matchers_.size();
    ASSERT_EQ(matchers_[mi]->matcher.Destroy().code(),
              HasRules(mi) ? absl::StatusCode::kFailedPrecondition : absl::StatusCode::kOk);
    for (size_t i = 0; i < rules_.size();) {
      if (rules_[i].matcher == mi) {
        ASSERT_TRUE(rules_[i].rule.Destroy().ok());
        ref_.RemoveRule(rules_[i].ref);
        rules_.erase(rules_.begin() + i);
      } else {
        ++i;
      }
    }
    if (matchers_[mi]->matcher.valid()) ASSERT_TRUE(matchers_[mi]->matcher.Destroy().ok());
    ref_.RemoveMatcher(matchers_[mi]->ref);
    // Keep indices stable: the slot gets the new matcher.
    AddMatcher();
    matchers_[mi] = std::move(matchers_.back());
    matchers_.pop_back();
  }

  bool HasRules(size_t mi) const {
    for (const LiveRule& r : rules_) {
      if (r.matcher == mi) return true;
    }
    return false;
  }

  void SendPackets(int phase) {
    constexpr size_t kBurst = 64;
    int mismatches = 0;
    for (int sent = 0; sent < kPacketsPerPhase; sent += kBurst) {
      std::vector<sim::FrameSpec> specs;
      std::vector<std::vector<uint8_t>> frames;
      for (size_t i = 0; i < kBurst; ++i) {
        specs.push_back(RandomSpec(rng_));
        frames.push_back(sim::BuildFrame(specs.back()));
      }
      std::vector<sim::Frame> views(frames.begin(), frames.end());
      std::vector<sim::Verdict> verdicts(kBurst);
      ASSERT_TRUE(nic_.ReceiveFromWire(views, absl::MakeSpan(verdicts), /*trace=*/true).ok());
      for (size_t i = 0; i < kBurst; ++i) {
        MatchParams expected = ExpectedFields(specs[i]);
        hw::HeaderVector parsed;
        sim::ParsePacket(frames[i].data(), frames[i].size(), 0xffff, &parsed);
        ASSERT_EQ(std::memcmp(parsed.bytes, expected.bytes(), hw::kMatchParamBytes), 0)
            << "seed " << seed_ << ": parser disagrees with the packet model for " << Describe(specs[i]);
        RefVerdict want = ref_.Classify(expected.bytes());
        const sim::Verdict& got = verdicts[i];
        std::vector<uint32_t> got_path;
        for (const sim::Hop& h : got.path) got_path.push_back(h.rule_id);
        bool same = got.fate == want.fate && got.qp_num == want.qp_num &&
                    got.has_flow_tag == want.has_flow_tag && got.flow_tag == want.flow_tag &&
                    got_path == want.rule_path;
        EXPECT_TRUE(same) << "seed " << seed_ << " phase " << phase << " packet " << sent + i << " ("
                          << Describe(specs[i]) << "): nic " << sim::FateName(got.fate) << " qp "
                          << got.qp_num << " tag " << got.has_flow_tag << "/" << got.flow_tag << " path "
                          << ::testing::PrintToString(got_path) << "; reference " << sim::FateName(want.fate)
                          << " qp " << want.qp_num << " tag " << want.has_flow_tag << "/" << want.flow_tag
                          << " path " << ::testing::PrintToString(want.rule_path);
        if (!same && ++mismatches > 5) FAIL() << "too many mismatches";
        ++packets_;
        ++fates_[static_cast<int>(want.fate)];
        if (want.rule_path.size() > 1) ++multi_table_;
        if (want.has_flow_tag) ++tagged_;
      }
      for (uint32_t q : qps_) {
        while (nic_.pf().queue(q)->Poll()) {
        }
      }
    }
  }

 public:
  int packets() const { return packets_; }
  // How the packets were steered, to show the rule sets exercise every outcome.
  std::string Summary() const {
    return absl::StrFormat(
        "seed %d: %d packets, queued %d, dropped %d, default %d, loops %d; "
        "%d crossed tables, %d tagged; %d rules live",
        seed_, packets_, fates_[0], fates_[1], fates_[2], fates_[4], multi_table_, tagged_, rules_.size());
  }

 private:
  uint32_t seed_;
  std::mt19937 rng_;
  sim::Nic nic_;
  dr::Domain domain_;
  bool allow_duplicates_ = true;
  std::vector<dr::Table> tables_;
  std::vector<int> table_refs_;
  std::vector<dr::Action> jumps_;
  std::vector<int> jump_refs_;
  std::vector<uint32_t> qps_;
  std::vector<dr::Action> qp_actions_;
  std::vector<std::pair<dr::Action, uint32_t>> tags_;
  dr::Action drop_, miss_;
  std::vector<std::unique_ptr<LiveMatcher>> matchers_;
  std::vector<LiveRule> rules_;
  ReferenceClassifier ref_;
  int packets_ = 0;
  int fates_[5] = {};
  int multi_table_ = 0;
  int tagged_ = 0;
};

TEST(DifferentialTest, SoftwareNicAgreesWithTheReferenceClassifier) {
  int packets = 0;
  for (uint32_t seed : kSeeds) {
    DifferentialRun run(seed);
    run.Run();
    if (::testing::Test::HasFatalFailure()) return;
    packets += run.packets();
    std::cout << run.Summary() << "\n";
  }
  EXPECT_GE(packets, 100000);
}

}  // namespace
}  // namespace drsim::testing
