// libFuzzer target: rule churn on NIC_RX, checked against the brute-force reference model. The input is a
// program of operations on the dr:: API, applied in lockstep to the software NIC and to the model
// (tests/differential_model.h, which also predicts every error code): tables at levels 0..3; matchers of
// priority 0..3 whose masks cover a handful of fields (outer IPv4 source and destination prefixes,
// ip_protocol, the TCP or UDP ports, whole or their high byte, ethertype, the first VLAN's C-tag and VID,
// metadata_reg_c_0); rules whose values come from frames the input describes, from random bits under the
// mask or from earlier rules of the matcher (duplicates), with tag, queue, drop, jump and default-miss
// actions and two illegal orders, one at a time or several in one Rule::CreateMany call; destroys of rules
// and matchers (destroyed ones, and matchers that still have rules, too); duplicate rules allowed or not.
// Every 16 operations, at the end and once more after destroying everything, frames built from the values
// rules were installed with, a random variant of each, and the frames the input adds go through the NIC and
// the model: fate, QP, flow tag and the rule hit in each table must agree. On a disagreement the target
// prints the operations so far, the frame and both verdicts, and aborts.
//
// Decoding (fuzz/fuzz_input.h; zeros past the end): up to 128 operations, each a byte (% 12) and operands,
// one byte each unless said; indices are taken modulo the number of objects created so far, and an
// operation that needs an object none of which exists yet (a rule without matchers, a destroy) reads no
// operands.
//   0 table:          level (% 4)
//   1 matcher:        table, priority (% 4), mask (2 bytes: DecodeMask)
//   2, 3 rule:        matcher; value source (% 4): 0-1 a frame (6 bytes: DecodeFrame), 2 an earlier value
//                     of the matcher (index; a frame when it has none), 3 random bits (a 4-byte seed);
//                     action shape (% 10); indices (tag bits 0-1, queue bits 2-3, jump bits 4-7)
//   4 destroy rule:   rule
//   5 destroy matcher: matcher
//   6 frame:          6 bytes (DecodeFrame), classified with the others
//   7 duplicates:     bit 0 set: disallowed in later inserts
//   8 crowd:          table; kCrowd (16) matchers there, each a priority (% 4) and a mask (2 bytes):
//                     enough for a table below the root to get an index (hw::TableIndex::kIndexFromMatchers)
//   9 rules:         matcher; count (% 4, plus 1); that many values, each as for 2; action shape;
//                     indices (the same actions for all, in one Rule::CreateMany call)
//  10 updates:       see UpdateRules
//  11 size:          matcher; sized for 2^17 rules (at most kMaxSized a run): its match table is then large
//                     enough to queue inserts (hw::MatchTable::InsertQueued), which later ones file
// Random variants come from a generator seeded with a hash of the whole input.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "fuzz/fuzz_input.h"
#include "hw/match_layout.h"
#include "hw/match_params.h"
#include "hw/net_addr.h"
#include "sim/frame_builder.h"
#include "tests/differential_model.h"
#include "tests/packet_model.h"

namespace drsim::fuzz {
namespace {

using hw::Field;
using hw::kOuter;
using hw::MatchParams;
using testing::ActionShape;

constexpr int kMaxOps = 128;
constexpr int kCheckEvery = 16;
constexpr int kMaxTables = 6;
constexpr int kMaxMatchers = 44;
// Matchers one crowd operation adds to a table: hw::TableIndex::kIndexFromMatchers, so that a level-1 or
// deeper table gets an index (which lookups reach past its first two matchers).
constexpr int kCrowd = 16;
// Sizing a matcher for 2^17 rules (its match table's 2^14 buckets, hw::MatchTable's least that queues
// inserts) reserves about 13 MiB: twice a run at most.
constexpr uint32_t kSizedLogRules = 17;
constexpr int kMaxSized = 2;
constexpr size_t kMaxFrames = 32;
constexpr uint32_t kMaxBatch = 4;     // rules in one CreateMany call
constexpr uint32_t kMaxUpdates = 12;  // rules in one UpdateMany call: past its pipeline's eight stages

constexpr hw::Ipv4Address kV4[] = {{0x0a000001}, {0x0a000002}, {0x0a000101}, {0xc0a80101}};
constexpr hw::Ipv6Address kV6[] = {{{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}},
                                   {{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}}};
// 4789 makes a UDP frame's filler a VXLAN header, which the packet model states; other tunnel ports are
// kept out (see Modelled).
constexpr uint16_t kPorts[] = {53, 80, 443, 1234, 4789, 8080, 65535, 0};
constexpr uint8_t kProtocols[] = {sim::kIpProtoTcp,
                                  sim::kIpProtoUdp,
                                  sim::kIpProtoTcp,
                                  sim::kIpProtoUdp,
                                  sim::kIpProtoIcmp,
                                  sim::kIpProtoGre,
                                  132,
                                  sim::kIpProtoUdp};
constexpr uint16_t kEthertypes[] = {0x0806, 0x88cc};
constexpr uint16_t kVids[] = {10, 20, 100, 0};
constexpr uint32_t kTags[] = {0x1, 0x123, 0xfedcba, 0x5000000};  // the last one's flow tag is 0
constexpr int kQueues = 2;

template <typename T, size_t N>
T Pick(const T (&pool)[N], size_t i) {
  return pool[i % N];
}

hw::Ipv4Address Address(uint8_t b) { return {kV4[b & 3].value + ((b >> 2) & 7)}; }

// A frame from 6 bytes: VLANs (bits 0-1: none, C-tag, S-tag, S-tag and C-tag; VID bits 2-3; PCP bits 5-7),
// L3 (bits 0-1: IPv4, IPv4, IPv6, none with an ethertype by bit 2; protocol bits 3-5), the IPv4 source and
// destination (base bits 0-1, plus bits 2-4 on the last octet; IPv6 by bit 0), the source and destination
// ports.
sim::FrameSpec DecodeFrame(FuzzInput& in) {
  const uint8_t vlan = in.Byte(), l3 = in.Byte(), src = in.Byte(), dst = in.Byte();
  sim::FrameSpec f;
  const uint16_t tci = static_cast<uint16_t>((vlan >> 5) << 13 | Pick(kVids, vlan >> 2));
  switch (vlan & 3) {
    case 1:
      f.vlans = {{0x8100, tci}};
      break;
    case 2:
      f.vlans = {{0x88a8, tci}};
      break;
    case 3:
      f.vlans = {{0x88a8, tci}, {0x8100, tci}};
      break;
    default:
      break;
  }
  f.l3 = (l3 & 3) < 2 ? sim::L3Kind::kIpv4 : (l3 & 3) == 2 ? sim::L3Kind::kIpv6 : sim::L3Kind::kNone;
  f.ethertype = Pick(kEthertypes, l3 >> 2);
  f.protocol = Pick(kProtocols, l3 >> 3);
  if (f.l3 == sim::L3Kind::kIpv6 && f.protocol == sim::kIpProtoIcmp) f.protocol = sim::kIpProtoIcmpv6;
  f.ipv4_src = Address(src);
  f.ipv4_dst = Address(dst);
  f.ipv6_src = Pick(kV6, src);
  f.ipv6_dst = Pick(kV6, dst);
  f.sport = Pick(kPorts, in.Byte());
  f.dport = Pick(kPorts, in.Byte());
  return f;
}

// A mask from 2 bytes: the fields (bit 0 IPv4 source, 1 IPv4 destination, 2 ip_protocol, 3 L4 source
// port, 4 L4 destination port, 5 ethertype, 6 C-tag and first VID, 7 metadata_reg_c_0) and their shape
// (bits 0-1 and 2-3: source and destination prefix length 32, 24, 16 or 8; bit 4 UDP ports rather than
// TCP; bit 5 the ports' high byte only; bit 6 ip_version without other L3 fields; bit 7 the register's low
// 16 bits only). ip_version 4 comes with any L3 or L4 field, as rdma-core requires.
MatchParams DecodeMask(uint8_t fields, uint8_t shape) {
  static constexpr int kPrefixes[] = {32, 24, 16, 8};
  const bool udp = shape & 0x10;
  const uint32_t port_mask = shape & 0x20 ? 0xff00 : 0xffff;
  hw::MatchBuilder b;
  if ((fields & 0x1f) != 0 || (shape & 0x40) != 0) b.IpVersion(kOuter, 4);
  if (fields & 0x01) b.Ipv4Src(kOuter, hw::Ipv4Address::PrefixMask(kPrefixes[shape & 3]));
  if (fields & 0x02) b.Ipv4Dst(kOuter, hw::Ipv4Address::PrefixMask(kPrefixes[(shape >> 2) & 3]));
  if (fields & 0x04) b.IpProtocol(kOuter, 0xff);
  if (fields & 0x08) udp ? b.UdpSport(kOuter, port_mask) : b.TcpSport(kOuter, port_mask);
  if (fields & 0x10) udp ? b.UdpDport(kOuter, port_mask) : b.TcpDport(kOuter, port_mask);
  if (fields & 0x20) b.Ethertype(kOuter, 0xffff);
  if (fields & 0x40) b.CvlanTag(kOuter, 1).FirstVid(kOuter, 0xfff);
  if (fields & 0x80) b.RegC(0, shape & 0x80 ? 0xffff : 0xffffffff);
  return *b.Build();  // every field gets a value that fits
}

// `base`'s bits outside `mask`'s part of field `f`, the value's inside.
uint32_t Merge(const MatchParams& value, const MatchParams& mask, Field f, uint32_t base) {
  const uint32_t m = hw::GetField(mask.bytes(), f);
  return (hw::GetField(value.bytes(), f) & m) | (base & ~m);
}

// The frame a rule with `value` under `mask` should see: `base` with the fields this target matches on
// taken from the value where the mask covers them (metadata_reg_c_0 is 0 in every frame from the wire).
sim::FrameSpec FrameFor(const MatchParams& value, const MatchParams& mask, sim::FrameSpec f) {
  auto masked = [&](Field field) { return hw::GetField(mask.bytes(), field) != 0; };
  if (masked(Field::kOuterIpVersion)) f.l3 = sim::L3Kind::kIpv4;
  f.ipv4_src.value = Merge(value, mask, Field::kOuterSrcIp31_0, f.ipv4_src.value);
  f.ipv4_dst.value = Merge(value, mask, Field::kOuterDstIp31_0, f.ipv4_dst.value);
  f.protocol = static_cast<uint8_t>(Merge(value, mask, Field::kOuterIpProtocol, f.protocol));
  for (Field port : {Field::kOuterTcpSport, Field::kOuterUdpSport}) {
    if (masked(port)) f.sport = static_cast<uint16_t>(Merge(value, mask, port, f.sport));
  }
  for (Field port : {Field::kOuterTcpDport, Field::kOuterUdpDport}) {
    if (masked(port)) f.dport = static_cast<uint16_t>(Merge(value, mask, port, f.dport));
  }
  if (masked(Field::kOuterEthertype)) {
    const uint16_t type = static_cast<uint16_t>(hw::GetField(value.bytes(), Field::kOuterEthertype));
    f.l3 = type == 0x0800 ? sim::L3Kind::kIpv4 : type == 0x86dd ? sim::L3Kind::kIpv6 : sim::L3Kind::kNone;
    f.ethertype = type;
  }
  if (masked(Field::kOuterCvlanTag)) {
    if (hw::GetField(value.bytes(), Field::kOuterCvlanTag) == 0) {
      f.vlans.clear();
    } else {
      const uint16_t pcp = f.vlans.empty() ? 0 : f.vlans[0].tci & 0xf000;
      const sim::VlanTag tag{0x8100,
                             static_cast<uint16_t>(pcp | Merge(value, mask, Field::kOuterFirstVid, 0))};
      if (f.vlans.empty()) {
        f.vlans = {tag};
      } else {
        f.vlans[0] = tag;
      }
    }
  }
  return f;
}

// Whether the packet model states the frame's fields (tests/packet_model.h, "Domain"): not when a UDP
// destination port announces a tunnel other than VXLAN, a frame without L3 has an IP, VLAN or MPLS
// ethertype, or an IPv6 next header is an extension header.
bool Modelled(const sim::FrameSpec& f) {
  if (f.l3 == sim::L3Kind::kNone) {
    for (uint16_t type : {0x0800, 0x86dd, 0x8100, 0x88a8, 0x8847, 0x8848}) {
      if (f.ethertype == type) return false;
    }
    return true;
  }
  if (f.l3 == sim::L3Kind::kIpv6) {
    for (uint8_t next : {0, 43, 44, 51, 60}) {
      if (f.protocol == next) return false;
    }
  }
  if (f.protocol != sim::kIpProtoUdp) return true;
  for (uint16_t port : {sim::kUdpPortVxlanGpe, sim::kUdpPortGeneve, sim::kUdpPortMplsOverUdp,
                        sim::kUdpPortGtpu, sim::kUdpPortRoceV2}) {
    if (f.dport == port) return false;
  }
  return true;
}

// A near miss (or hit) of `f`: one bit of an address, a port, TCP/UDP, the VLAN, or the L3 changed.
sim::FrameSpec Variant(sim::FrameSpec f, std::mt19937& rng) {
  switch (rng() % 6) {
    case 0:
      f.ipv4_src.value ^= 1u << (rng() % 32);
      break;
    case 1:
      f.ipv4_dst.value ^= 1u << (rng() % 32);
      break;
    case 2:
      (rng() % 2 == 0 ? f.sport : f.dport) = Pick(kPorts, rng());
      break;
    case 3:
      f.protocol = f.protocol == sim::kIpProtoTcp ? sim::kIpProtoUdp : sim::kIpProtoTcp;
      break;
    case 4:
      if (f.vlans.empty()) {
        f.vlans = {{0x8100, Pick(kVids, rng())}};
      } else if (rng() % 2 == 0) {
        f.vlans.clear();
      } else {
        f.vlans[0].tci ^= 1 << (rng() % 12);
      }
      break;
    default:
      f.l3 = rng() % 2 == 0 ? sim::L3Kind::kIpv6 : sim::L3Kind::kNone;
      f.ethertype = Pick(kEthertypes, rng());
      break;
  }
  return f;
}

uint32_t Hash(const uint8_t* data, size_t size) {
  uint32_t h = 2166136261u;  // FNV-1a
  for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 16777619u;
  return h;
}

class ChurnRun {
 public:
  ChurnRun(const uint8_t* data, size_t size)
      : in_(data, size),
        variants_(Hash(data, size)),
        model_(kQueues, std::vector<uint32_t>(std::begin(kTags), std::end(kTags))) {}

  void Run() {
    // A root and a level-1 table to start with, so that jumps always have a target.
    AddTable(0);
    AddTable(1);
    for (int ops = 1; ops <= kMaxOps && !in_.done(); ++ops) {
      Step();
      if (ops % kCheckEvery == 0) Check();
    }
    Check();
    for (int r : model_.LiveRules()) {
      Log(absl::StrFormat("destroy rule %d", r));
      Expect(model_.DestroyRule(r));
    }
    for (int m = 0; m < model_.num_matchers(); ++m) {
      if (!model_.matcher_alive(m)) continue;
      Log(absl::StrFormat("destroy matcher %d", m));
      Expect(model_.DestroyMatcher(m));
    }
    Check();
  }

 private:
  void Step() {
    switch (in_.Below(12)) {
      case 0: {
        const uint32_t level = in_.Below(4);
        if (model_.num_tables() < kMaxTables) AddTable(level);
        return;
      }
      case 1:
        AddMatcher();
        return;
      case 2:
      case 3:
        AddRule();
        return;
      case 4:
        if (model_.num_rules() > 0) {
          const int r = in_.Byte() % model_.num_rules();
          Log(absl::StrFormat("destroy rule %d", r));
          Expect(model_.DestroyRule(r));
        }
        return;
      case 5:
        if (model_.num_matchers() > 0) {
          const int m = in_.Byte() % model_.num_matchers();
          Log(absl::StrFormat("destroy matcher %d", m));
          Expect(model_.DestroyMatcher(m));
        }
        return;
      case 6: {
        const sim::FrameSpec f = DecodeFrame(in_);
        Log(absl::StrFormat("frame %s", testing::Describe(f)));
        AddFrame(f);
        return;
      }
      case 7: {
        const bool allow = (in_.Byte() & 1) == 0;
        Log(absl::StrFormat("allow duplicates %d", allow));
        Expect(model_.SetAllowDuplicates(allow));
        return;
      }
      case 8: {
        const int table = in_.Byte() % model_.num_tables();
        for (int i = 0; i < kCrowd; ++i) AddMatcherTo(table);
        return;
      }
      case 9:
        AddRules();
        return;
      case 10:
        UpdateRules();
        return;
      case 11:
        if (model_.num_matchers() > 0) {
          const int m = in_.Byte() % model_.num_matchers();
          if (sized_ == kMaxSized) return;
          ++sized_;
          Log(absl::StrFormat("size matcher %d for 2^%d rules", m, kSizedLogRules));
          Expect(model_.SizeMatcher(m, kSizedLogRules));
        }
        return;
      default:
        Check();
        return;
    }
  }

  void AddTable(uint32_t level) {
    Log(absl::StrFormat("table %d at level %d", model_.AddTable(level), level));
  }

  void AddMatcher() { AddMatcherTo(in_.Byte() % model_.num_tables()); }

  void AddMatcherTo(int table) {
    const uint16_t priority = in_.Below(4);
    const uint8_t fields = in_.Byte();
    const MatchParams mask = DecodeMask(fields, in_.Byte());
    if (model_.num_matchers() >= kMaxMatchers) return;
    Log(absl::StrFormat("matcher %d in table %d, priority %d, mask {%s}", model_.num_matchers(), table,
                        priority, testing::DescribeFields(mask)));
    Expect(model_.AddMatcher(table, priority, mask).status());
  }

  // A value for matcher `m` from the input: a frame's fields, an earlier rule's value or random bytes,
  // under the mask; `base` receives the frame it was made from (a default one for the others).
  MatchParams DecodeValue(int m, sim::FrameSpec* base) {
    const MatchParams& mask = model_.matcher_mask(m);
    const std::vector<MatchParams>& values = model_.matcher_values(m);
    *base = {};  // a TCP frame from 10.0.0.1:1234 to 10.0.0.2:80 unless the input gives one
    base->protocol = sim::kIpProtoTcp;
    base->ipv4_src = kV4[0];
    base->ipv4_dst = kV4[1];
    base->sport = 1234;
    base->dport = 80;
    const int source = in_.Below(4);
    if (source == 2 && !values.empty()) return values[in_.Byte() % values.size()];
    if (source == 3) {
      std::mt19937 rng(in_.U32());
      MatchParams random;
      for (size_t i = 0; i < hw::kMatchParamBytes; ++i) random.bytes()[i] = static_cast<uint8_t>(rng());
      return testing::ValueFor(mask, random, model_.matcher_on_root(m));
    }
    *base = DecodeFrame(in_);
    return testing::ValueFor(mask, testing::ExpectedFields(*base), model_.matcher_on_root(m));
  }

  testing::RuleActions DecodeActions() {
    testing::RuleActions actions;
    actions.shape = static_cast<ActionShape>(in_.Below(testing::kNumActionShapes));
    const uint8_t indices = in_.Byte();
    actions.tag = indices & 3;
    actions.queue = (indices >> 2) & 3;
    actions.jump = indices >> 4;
    return actions;
  }

  std::string DescribeRuleActions(const testing::RuleActions& actions) {
    return absl::StrFormat("%s (tag %d, queue %d, jump %d)", testing::ActionShapeName(actions.shape),
                           actions.tag, actions.queue, actions.jump);
  }

  void AddRule() {
    if (model_.num_matchers() == 0) return;
    const int m = in_.Byte() % model_.num_matchers();
    sim::FrameSpec base;
    const MatchParams value = DecodeValue(m, &base);
    const testing::RuleActions actions = DecodeActions();
    Log(absl::StrFormat("rule %d in matcher %d: value {%s}, actions %s", model_.num_rules(), m,
                        testing::DescribeFields(value), DescribeRuleActions(actions)));
    const absl::StatusOr<int> r = model_.AddRule(m, value, actions);
    Expect(r.status());
    if (*r < 0) {
      log_.back() += " -> rejected, as expected";
      return;
    }
    log_.back() += absl::StrFormat(" -> id %d", model_.rule_id(*r));
    AddFrame(FrameFor(value, model_.matcher_mask(m), base));
  }

  // Up to kMaxBatch rules with the same actions in one Rule::CreateMany call.
  void AddRules() {
    if (model_.num_matchers() == 0) return;
    const int m = in_.Byte() % model_.num_matchers();
    const size_t count = 1 + in_.Below(kMaxBatch);
    std::vector<MatchParams> values;
    std::vector<sim::FrameSpec> bases(count);
    std::string described;
    for (size_t i = 0; i < count; ++i) {
      values.push_back(DecodeValue(m, &bases[i]));
      described += " {" + testing::DescribeFields(values.back()) + "}";
    }
    const testing::RuleActions actions = DecodeActions();
    Log(absl::StrFormat("rules %d.. in matcher %d in one call: values%s, actions %s", model_.num_rules(), m,
                        described, DescribeRuleActions(actions)));
    const absl::StatusOr<int> r = model_.AddRules(m, values, actions);
    Expect(r.status());
    if (*r < 0) {
      log_.back() += " -> all rejected, as expected";
      return;
    }
    log_.back() += absl::StrFormat(" -> ids %d..%d", model_.rule_id(*r), model_.rule_id(*r + count - 1));
    for (size_t i = 0; i < count; ++i) AddFrame(FrameFor(values[i], model_.matcher_mask(m), bases[i]));
  }

  // Up to kMaxUpdates rules (by index: destroyed ones and repeats too, which the driver must refuse) given
  // new values and actions in one Rule::UpdateMany call.
  void UpdateRules() {
    if (model_.num_rules() == 0) return;
    const size_t count = 1 + in_.Below(kMaxUpdates);
    std::vector<testing::NicRxModel::RuleChange> changes;
    std::vector<sim::FrameSpec> bases(count);
    std::string described;
    for (size_t i = 0; i < count; ++i) {
      const int r = in_.Byte() % model_.num_rules();
      const int m = model_.rule_matcher(r);
      changes.push_back({r, DecodeValue(m, &bases[i]), DecodeActions()});
      described +=
          absl::StrFormat(" rule %d to {%s} with %s", r, testing::DescribeFields(changes.back().value),
                          DescribeRuleActions(changes.back().actions));
    }
    Log(absl::StrFormat("update in one call:%s", described));
    const absl::StatusOr<bool> applied = model_.UpdateRules(changes);
    Expect(applied.status());
    if (!*applied) {
      log_.back() += " -> rejected, as expected";
      return;
    }
    for (size_t i = 0; i < count; ++i) {
      const int m = model_.rule_matcher(changes[i].rule);
      log_.back() += absl::StrFormat(" -> rule %d id %d", changes[i].rule, model_.rule_id(changes[i].rule));
      AddFrame(FrameFor(changes[i].value, model_.matcher_mask(m), bases[i]));
    }
  }

  void AddFrame(const sim::FrameSpec& f) {
    if (frames_.size() < kMaxFrames) frames_.push_back(f);
  }

  // Every frame and a variant of each, as far as the packet model states them.
  void Check() {
    std::vector<sim::TunnelFrameSpec> specs;
    for (const sim::FrameSpec& f : frames_) {
      for (const sim::FrameSpec& g : {f, Variant(f, variants_)}) {
        if (!Modelled(g)) continue;
        specs.emplace_back();
        specs.back().outer = g;
      }
    }
    Log(absl::StrFormat("classify %d frames", specs.size()));
    Expect(model_.Classify(specs).status());
  }

  void Log(std::string op) { log_.push_back(std::move(op)); }

  void Expect(const absl::Status& status) {
    if (status.ok()) return;
    std::fprintf(stderr,
                 "rule_churn_fuzzer: the software NIC and the reference model disagree.\nOperations:\n");
    for (size_t i = 0; i < log_.size(); ++i) std::fprintf(stderr, "  %3zu. %s\n", i + 1, log_[i].c_str());
    std::fprintf(stderr, "At the last one: %s\n", std::string(status.message()).c_str());
    std::abort();
  }

  FuzzInput in_;
  std::mt19937 variants_;
  testing::NicRxModel model_;
  std::vector<sim::FrameSpec> frames_;
  std::vector<std::string> log_;
  int sized_ = 0;  // matchers sized (op 11)
};

}  // namespace
}  // namespace drsim::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  drsim::fuzz::ChurnRun(data, size).Run();
  return 0;
}
