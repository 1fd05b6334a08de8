// Meters, samplers, dest arrays, dest root table, RSS TIRs and ASO actions end to end on the software
// NIC, including rdma-core's test_flow_meter, test_flow_sampler and test_dest_array scenarios.
#include <infiniband/verbs.h>

#include <map>
#include <set>
#include <vector>

#include "dr/dr.h"
#include "gtest/gtest.h"
#include "hw/match_params.h"
#include "hw/modify_header.h"
#include "sim/conntrack.h"
#include "sim/frame_builder.h"
#include "sim/meter.h"
#include "sim/nic.h"
#include "sim/rx_queue.h"
#include "sim/toeplitz.h"
#include "tests/flow_meter.h"
#include "tests/udp_frame.h"

namespace drsim {
namespace {

using hw::kOuter;
using hw::MatchBuilder;
using hw::MatchParams;

std::vector<uint8_t> Udp(uint16_t sport, uint16_t dport, size_t payload = 1000) {
  return tests::UdpFrame(sport, dport, payload);
}

uint64_t Packets(sim::Nic& nic, uint32_t counter) {
  uint64_t packets = 0, bytes = 0;
  EXPECT_TRUE(nic.QueryCounter(counter, &packets, &bytes).ok());
  return packets;
}

// NIC_RX with a root that sends everything to table 1, and table 2 for what follows.
class AdvancedActionsTest : public ::testing::Test {
 protected:
  AdvancedActionsTest()
      : domain_(*dr::Domain::Create(nic_.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_RX)),
        root_(*dr::Table::Create(domain_, 0)),
        t1_(*dr::Table::Create(domain_, 1)),
        t2_(*dr::Table::Create(domain_, 2)),
        to_t1_(*dr::Action::DestTable(t1_)),
        root_all_(*dr::Matcher::Create(root_, 0, 0, nullptr)),
        root_rule_(*dr::Rule::Create(root_all_, MatchParams(), {&to_t1_})),
        t1_all_(*dr::Matcher::Create(t1_, 0, 0, nullptr)) {}

  sim::Nic nic_;
  dr::Domain domain_;
  dr::Table root_, t1_, t2_;
  dr::Action to_t1_;
  dr::Matcher root_all_;
  dr::Rule root_rule_;
  dr::Matcher t1_all_;
};

TEST_F(AdvancedActionsTest, FlowMeterColoursIntoARegister) {
  std::vector<uint8_t> prm = tests::MeterPrm();
  dr::Action meter = *dr::Action::FlowMeter(t2_, true, /*reg_c_index=*/2, prm);
  dr::Rule r1 = *dr::Rule::Create(t1_all_, MatchParams(), {&meter});
  // Table 2, prio 2: reg_c_2 == 2 (green) -> green counter, == 0 (red) -> red counter.
  uint32_t counters = *nic_.AllocateCounters(2);
  dr::Action green = *dr::Action::FlowCounter(nic_.pf(), counters, 0);
  dr::Action red = *dr::Action::FlowCounter(nic_.pf(), counters, 1);
  dr::Action drop = *dr::Action::Drop();
  dr::Matcher by_color = *dr::Matcher::Create(t2_, 2, *MatchBuilder().RegC(2, 0xffffffff).Build());
  dr::Rule g = *dr::Rule::Create(by_color, *MatchBuilder().RegC(2, 2).Build(), {&green, &drop});
  dr::Rule rd = *dr::Rule::Create(by_color, *MatchBuilder().RegC(2, 0).Build(), {&red, &drop});
  // A burst of 100 frames at one instant: the 4 KiB committed burst passes green, the rest is red.
  std::vector<uint8_t> f = Udp(1, 2);
  for (int i = 0; i < 100; ++i) nic_.ReceiveFromWire(f);
  EXPECT_EQ(Packets(nic_, counters), 3u);  // 3 x 1028 IP bytes fit in 4096, a 4th does not
  EXPECT_EQ(Packets(nic_, counters + 1), 97u);
  // A second later the bucket is full again; at twice the CIR about half is green.
  uint64_t t = 1'000'000'000;
  for (int i = 0; i < 1000; ++i, t += 1028 * 1'000'000'000ull / 31'250'000) {
    nic_.set_time_ns(t);
    nic_.ReceiveFromWire(f);
  }
  EXPECT_NEAR(static_cast<double>(Packets(nic_, counters) - 3), 500, 10);
  // modify_flow_meter: inactive passes everything green.
  ASSERT_TRUE(meter.ModifyFlowMeter(false, prm, sim::kMeterSelectActive).ok());
  const uint64_t before = Packets(nic_, counters);
  for (int i = 0; i < 50; ++i) nic_.ReceiveFromWire(f);
  EXPECT_EQ(Packets(nic_, counters), before + 50);
  EXPECT_EQ(drop.ModifyFlowMeter(true, prm, 1).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(AdvancedActionsTest, FlowMeterChecks) {
  std::vector<uint8_t> prm = tests::MeterPrm();
  EXPECT_EQ(dr::Action::FlowMeter(root_, true, 0, prm).status().code(), absl::StatusCode::kUnimplemented);
  std::vector<uint8_t> big(33);
  EXPECT_EQ(dr::Action::FlowMeter(t2_, true, 0, big).status().code(), absl::StatusCode::kInvalidArgument);
  std::vector<uint8_t> invalid = prm;
  invalid[0] &= 0x7f;  // valid = 0
  EXPECT_EQ(dr::Action::FlowMeter(t2_, true, 0, invalid).status().code(), absl::StatusCode::kInvalidArgument);
  // At rule time the next table must be deeper than the rule's table.
  dr::Action back = *dr::Action::FlowMeter(t1_, true, 0, prm);
  absl::Status s = dr::Rule::Create(t1_all_, MatchParams(), {&back}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("must be at a higher level"), absl::string_view::npos) << s;
}

TEST_F(AdvancedActionsTest, FlowSamplerSamplesOneInN) {
  // test_flow_sampler: ratio 4, sample actions [counter1, qp], default next table with counter2.
  uint32_t counters = *nic_.AllocateCounters(2);
  dr::Action sampled = *dr::Action::FlowCounter(nic_.pf(), counters, 0);
  dr::Action all = *dr::Action::FlowCounter(nic_.pf(), counters, 1);
  const uint32_t sample_qp = nic_.pf().CreateQueue(1000), main_qp = nic_.pf().CreateQueue(1000);
  dr::Action to_sample = *dr::Action::DestQp(nic_.pf(), sample_qp);
  dr::Action to_main = *dr::Action::DestQp(nic_.pf(), main_qp);
  dr::Action tag = *dr::Action::Tag(0x77);
  dr::Action sampler = *dr::Action::FlowSampler(4, t2_, {&sampled, &tag, &to_sample});
  dr::Rule r1 = *dr::Rule::Create(t1_all_, MatchParams(), {&sampler});
  dr::Matcher t2_all = *dr::Matcher::Create(t2_, 0, 0, nullptr);
  dr::Rule r2 = *dr::Rule::Create(t2_all, MatchParams(), {&all, &to_main});
  std::vector<uint8_t> f = Udp(1, 2, 10);
  int copies = 0;
  for (int i = 0; i < 1000; ++i) {
    sim::Verdict v = nic_.ReceiveFromWire(f);
    EXPECT_EQ(v.qp_num, main_qp);
    copies += static_cast<int>(v.copies.size());
  }
  EXPECT_EQ(Packets(nic_, counters + 1), 1000u);
  EXPECT_EQ(Packets(nic_, counters), 250u);
  EXPECT_EQ(copies, 250);
  EXPECT_EQ(nic_.pf().queue(sample_qp)->size(), 250u);
  EXPECT_EQ(nic_.pf().queue(sample_qp)->Poll()->flow_tag, 0x77u);
  EXPECT_EQ(sampled.Destroy().code(), absl::StatusCode::kFailedPrecondition);  // the sampler uses it
  EXPECT_EQ(t2_.Destroy().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(AdvancedActionsTest, FlowSamplerChecks) {
  dr::Action drop = *dr::Action::Drop();
  dr::Action tag = *dr::Action::Tag(1);
  EXPECT_EQ(dr::Action::FlowSampler(0, t2_, {&tag}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(dr::Action::FlowSampler(2, t2_, {}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(dr::Action::FlowSampler(2, t2_, {&drop}).status().code(), absl::StatusCode::kUnimplemented);
  dr::Domain tx = *dr::Domain::Create(nic_.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_TX);
  dr::Table tx_t = *dr::Table::Create(tx, 1);
  EXPECT_EQ(dr::Action::FlowSampler(2, tx_t, {&tag}).status().code(), absl::StatusCode::kUnimplemented);
}

TEST_F(AdvancedActionsTest, DestArrayReplicatesToEveryDestination) {
  // test_dest_array: 7 QPs and a dest table (level 0xff, its own smac -> QP rule); all 8 receive.
  std::vector<uint32_t> qps;
  std::vector<dr::Action> actions;
  for (int i = 0; i < 8; ++i) qps.push_back(nic_.pf().CreateQueue());
  for (int i = 0; i < 7; ++i) actions.push_back(*dr::Action::DestQp(nic_.pf(), qps[i]));
  dr::Table deep = *dr::Table::Create(domain_, 0xff);
  dr::Matcher deep_m =
      *dr::Matcher::Create(deep, 0, *MatchBuilder().Smac(kOuter, hw::MacAddress::AllOnes()).Build());
  dr::Action last = *dr::Action::DestQp(nic_.pf(), qps[7]);
  sim::FrameSpec spec;
  dr::Rule deep_r = *dr::Rule::Create(deep_m, *MatchBuilder().Smac(kOuter, spec.smac).Build(), {&last});
  actions.push_back(*dr::Action::DestTable(deep));
  std::vector<dr::Action::ArrayDestination> dests;
  for (const dr::Action& a : actions) dests.push_back({&a, nullptr});
  dr::Action array = *dr::Action::DestArray(domain_, dests);
  dr::Rule r = *dr::Rule::Create(t1_all_, MatchParams(), {&array});
  sim::Verdict v = nic_.ReceiveFromWire(Udp(1, 2, 10));
  EXPECT_EQ(v.fate, sim::Fate::kQueued);
  EXPECT_EQ(v.qp_num, qps[0]);
  ASSERT_EQ(v.copies.size(), 7u);
  std::set<uint32_t> reached = {v.qp_num};
  for (const sim::Delivery& d : v.copies) {
    EXPECT_EQ(d.fate, sim::Fate::kQueued);
    reached.insert(d.qp_num);
  }
  EXPECT_EQ(reached, std::set<uint32_t>(qps.begin(), qps.end()));
  for (uint32_t q : qps) EXPECT_EQ(nic_.pf().queue(q)->size(), 1u);
}

TEST_F(AdvancedActionsTest, DestArrayChecks) {
  dr::Action qp = *dr::Action::DestQp(nic_.pf(), nic_.pf().CreateQueue());
  dr::Action tag = *dr::Action::Tag(1);
  EXPECT_EQ(dr::Action::DestArray(domain_, {{&qp, nullptr}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(dr::Action::DestArray(domain_, {{&qp, nullptr}, {&tag, nullptr}}).status().code(),
            absl::StatusCode::kUnimplemented);
  dr::Action miss = *dr::Action::DefaultMiss();
  EXPECT_EQ(dr::Action::DestArray(domain_, {{&qp, nullptr}, {&miss, nullptr}}).status().code(),
            absl::StatusCode::kUnimplemented);  // default miss only in FDB arrays
  dr::Domain tx = *dr::Domain::Create(nic_.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_TX);
  EXPECT_EQ(dr::Action::DestArray(tx, {{&qp, nullptr}, {&qp, nullptr}}).status().code(),
            absl::StatusCode::kUnimplemented);
}

TEST_F(AdvancedActionsTest, DestRootTableJumpsBackByPriority) {
  // Root: prio 0 sends to table 1; prio 5 delivers. Table 1 jumps back to the root from priority 5.
  const uint32_t qp = nic_.pf().CreateQueue();
  dr::Action deliver = *dr::Action::DestQp(nic_.pf(), qp);
  dr::Matcher late = *dr::Matcher::Create(root_, 5, 0, nullptr);
  dr::Rule late_r = *dr::Rule::Create(late, MatchParams(), {&deliver});
  dr::Action back = *dr::Action::DestRootTable(root_, 5);
  dr::Rule r = *dr::Rule::Create(t1_all_, MatchParams(), {&back});
  sim::Verdict v = nic_.ReceiveFromWire(Udp(1, 2, 10));
  EXPECT_EQ(v.fate, sim::Fate::kQueued);
  ASSERT_EQ(v.path.size(), 3u);
  EXPECT_EQ(v.path[2].rule_id, late_r.id());
  EXPECT_EQ(dr::Action::DestRootTable(t1_, 0).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(AdvancedActionsTest, TirSpreadsFlowsByToeplitzHash) {
  std::vector<uint32_t> qps;
  for (int i = 0; i < 4; ++i) qps.push_back(nic_.pf().CreateQueue(10000));
  const uint64_t fields =
      IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 | IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP;
  uint32_t tir = *nic_.pf().CreateTir(qps, fields);
  dr::Action rss = *dr::Action::DestTir(nic_.pf(), tir);
  dr::Rule r = *dr::Rule::Create(t1_all_, MatchParams(), {&rss});
  std::map<uint32_t, int> per_queue;
  for (uint16_t sport = 1000; sport < 1400; ++sport) {
    sim::Verdict v = nic_.ReceiveFromWire(Udp(sport, 4791, 10));
    ASSERT_EQ(v.fate, sim::Fate::kQueued);
    sim::RssHeaderFields h;
    h.ipv4_src = *hw::Ipv4Address::Parse("10.0.0.1");
    h.ipv4_dst = *hw::Ipv4Address::Parse("10.0.0.2");
    h.ip_protocol = 17;
    h.sport = sport;
    h.dport = 4791;
    EXPECT_EQ(v.qp_num, qps[*sim::RssHash(h, fields) & 3]) << sport;
    ++per_queue[v.qp_num];
  }
  ASSERT_EQ(per_queue.size(), 4u);
  for (const auto& [q, n] : per_queue) EXPECT_GT(n, 60) << q;  // 400 flows, about 100 each
  EXPECT_EQ(nic_.pf().DestroyTir(tir).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(nic_.pf().CreateTir({qps[0], qps[1], qps[2]}, fields).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(dr::Action::DestTir(nic_.pf(), 999).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(AdvancedActionsTest, InnerTirHashesTheTunnelledPacket) {
  std::vector<uint32_t> qps;
  for (int i = 0; i < 4; ++i) qps.push_back(nic_.pf().CreateQueue(10000));
  const uint64_t fields = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 | IBV_RX_HASH_SRC_PORT_TCP |
                          IBV_RX_HASH_DST_PORT_TCP | IBV_RX_HASH_INNER;
  uint32_t tir = *nic_.pf().CreateTir(qps, fields);
  dr::Action rss = *dr::Action::DestTir(nic_.pf(), tir);
  dr::Rule r = *dr::Rule::Create(t1_all_, MatchParams(), {&rss});
  std::set<uint32_t> used;
  for (uint16_t sport = 1000; sport < 1100; ++sport) {
    // One outer flow (VXLAN from one tunnel endpoint): only the inner headers can spread it.
    sim::TunnelFrameSpec t;
    t.outer.ipv4_src = *hw::Ipv4Address::Parse("192.0.2.1");
    t.outer.ipv4_dst = *hw::Ipv4Address::Parse("192.0.2.2");
    t.outer.protocol = sim::kIpProtoUdp;
    t.outer.sport = 5000;
    t.tunnel.kind = sim::Encap::kVxlan;
    t.tunnel.vni = 7;
    t.inner.ipv4_src = *hw::Ipv4Address::Parse("10.1.0.1");
    t.inner.ipv4_dst = *hw::Ipv4Address::Parse("10.1.0.2");
    t.inner.protocol = sim::kIpProtoTcp;
    t.inner.sport = sport;
    t.inner.dport = 80;
    sim::Verdict v = nic_.ReceiveFromWire(sim::BuildFrame(t));
    ASSERT_EQ(v.fate, sim::Fate::kQueued);
    sim::RssHeaderFields h;
    h.ipv4_src = t.inner.ipv4_src;
    h.ipv4_dst = t.inner.ipv4_dst;
    h.ip_protocol = 6;
    h.sport = sport;
    h.dport = 80;
    EXPECT_EQ(v.qp_num, qps[*sim::RssHash(h, fields) & 3]) << sport;
    used.insert(v.qp_num);
  }
  EXPECT_EQ(used.size(), 4u);
  // A packet with no inner headers hashes nothing: the first entry of the indirection table.
  EXPECT_EQ(nic_.ReceiveFromWire(Udp(1, 2, 10)).qp_num, qps[0]);
}

TEST_F(AdvancedActionsTest, AsoFirstHitAndFlowMeter) {
  uint32_t hits = *nic_.CreateAsoObject(hw::AsoKind::kFirstHit, 0);
  dr::Action first = *dr::Action::Aso(domain_, hits, 7, MLX5DV_DR_ACTION_FLAGS_ASO_FIRST_HIT_SET, 3);
  dr::Action to_t2 = *dr::Action::DestTable(t2_);
  dr::Rule r1 = *dr::Rule::Create(t1_all_, MatchParams(), {&first, &to_t2});
  const uint32_t new_q = nic_.pf().CreateQueue(), seen_q = nic_.pf().CreateQueue();
  dr::Action to_new = *dr::Action::DestQp(nic_.pf(), new_q), to_seen = *dr::Action::DestQp(nic_.pf(), seen_q);
  dr::Matcher by_hit = *dr::Matcher::Create(t2_, 0, *MatchBuilder().RegC(3, 0xffffffff).Build());
  dr::Rule fresh = *dr::Rule::Create(by_hit, *MatchBuilder().RegC(3, 0).Build(), {&to_new});
  dr::Rule again = *dr::Rule::Create(by_hit, *MatchBuilder().RegC(3, 1).Build(), {&to_seen});
  std::vector<uint8_t> f = Udp(1, 2, 10);
  EXPECT_EQ(nic_.ReceiveFromWire(f).qp_num, new_q);
  EXPECT_EQ(nic_.ReceiveFromWire(f).qp_num, seen_q);
  EXPECT_EQ(nic_.ReceiveFromWire(f).qp_num, seen_q);

  // Checks: register, flags, offset, kind.
  EXPECT_EQ(dr::Action::Aso(domain_, hits, 0, 0, 2).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(dr::Action::Aso(domain_, hits, 0, 2, 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(dr::Action::Aso(domain_, hits, 512, 0, 1).status().code(), absl::StatusCode::kInvalidArgument);
  uint32_t meters = *nic_.CreateAsoObject(hw::AsoKind::kFlowMeter, 0);
  EXPECT_EQ(dr::Action::Aso(
                domain_, meters, 0,
                MLX5DV_DR_ACTION_FLAGS_ASO_FLOW_METER_RED | MLX5DV_DR_ACTION_FLAGS_ASO_FLOW_METER_GREEN, 1)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(nic_.DestroyAsoObject(hits).code(), absl::StatusCode::kFailedPrecondition);

  // An ASO flow meter colours into reg_c_5: configure a tiny committed burst, send a burst.
  sim::MeterParams p;
  p.valid = true;
  p.cbs_mantissa = 1;
  p.cbs_exponent = 11;  // 2048 bytes
  p.cir_mantissa = 1;
  p.cir_exponent = 31;
  ASSERT_TRUE(nic_.ConfigureAsoFlowMeter(meters, 1, p).ok());
  dr::Action aso_meter =
      *dr::Action::Aso(domain_, meters, 1, MLX5DV_DR_ACTION_FLAGS_ASO_FLOW_METER_UNDEFINED, 5);
  ASSERT_TRUE(r1.Destroy().ok());
  ASSERT_TRUE(fresh.Destroy().ok());
  ASSERT_TRUE(again.Destroy().ok());
  r1 = *dr::Rule::Create(t1_all_, MatchParams(), {&aso_meter, &to_t2});
  dr::Matcher by_color = *dr::Matcher::Create(t2_, 1, *MatchBuilder().RegC(5, 0xff).Build());
  const uint32_t green_q = nic_.pf().CreateQueue(), red_q = nic_.pf().CreateQueue();
  dr::Action to_green = *dr::Action::DestQp(nic_.pf(), green_q),
             to_red = *dr::Action::DestQp(nic_.pf(), red_q);
  dr::Rule g = *dr::Rule::Create(by_color, *MatchBuilder().RegC(5, 2).Build(), {&to_green});
  dr::Rule red = *dr::Rule::Create(by_color, *MatchBuilder().RegC(5, 0).Build(), {&to_red});
  std::vector<uint8_t> big = Udp(1, 2, 1000);
  std::vector<uint32_t> got;
  for (int i = 0; i < 4; ++i) got.push_back(nic_.ReceiveFromWire(big).qp_num);
  EXPECT_EQ(got, (std::vector<uint32_t>{green_q, red_q, red_q, red_q}));  // one 1028-byte packet fits 2048
  // modify_aso applies to rules created afterwards only.
  ASSERT_TRUE(aso_meter.ModifyAso(0, MLX5DV_DR_ACTION_FLAGS_ASO_FLOW_METER_UNDEFINED, 5).ok());
  EXPECT_EQ(nic_.ReceiveFromWire(big).qp_num, red_q);
}

// A rule created after modify_aso runs the new parameters even in a matcher whose earlier rule has the same
// action list (rules of a matcher with the same actions share compiled programs); the earlier keeps the old.
TEST_F(AdvancedActionsTest, ModifyAsoReachesLaterRulesOfTheSameMatcher) {
  const uint32_t meters = *nic_.CreateAsoObject(hw::AsoKind::kFlowMeter, 0);
  sim::MeterParams p;
  p.valid = true;
  p.cbs_mantissa = 1;
  p.cbs_exponent = 20;  // 1 MiB: every frame here is green
  p.cir_mantissa = 1;
  p.cir_exponent = 31;
  ASSERT_TRUE(nic_.ConfigureAsoFlowMeter(meters, 0, p).ok());
  dr::Action aso = *dr::Action::Aso(domain_, meters, 0, MLX5DV_DR_ACTION_FLAGS_ASO_FLOW_METER_UNDEFINED, 5);
  dr::Action to_t2 = *dr::Action::DestTable(t2_);
  dr::Matcher by_port =
      *dr::Matcher::Create(t1_, 1, *MatchBuilder().IpVersion(kOuter, 4).UdpDport(kOuter, 0xffff).Build());
  dr::Rule before = *dr::Rule::Create(
      by_port, *MatchBuilder().IpVersion(kOuter, 4).UdpDport(kOuter, 1).Build(), {&aso, &to_t2});
  ASSERT_TRUE(aso.ModifyAso(0, MLX5DV_DR_ACTION_FLAGS_ASO_FLOW_METER_UNDEFINED, 3).ok());
  dr::Rule after = *dr::Rule::Create(
      by_port, *MatchBuilder().IpVersion(kOuter, 4).UdpDport(kOuter, 2).Build(), {&aso, &to_t2});
  // Table 2 tells the registers apart: green (2) in reg_c_5 goes to one queue, in reg_c_3 to another.
  const uint32_t q5 = nic_.pf().CreateQueue(), q3 = nic_.pf().CreateQueue();
  dr::Action to_q5 = *dr::Action::DestQp(nic_.pf(), q5), to_q3 = *dr::Action::DestQp(nic_.pf(), q3);
  dr::Matcher by_reg5 = *dr::Matcher::Create(t2_, 0, *MatchBuilder().RegC(5, 0xff).Build());
  dr::Matcher by_reg3 = *dr::Matcher::Create(t2_, 1, *MatchBuilder().RegC(3, 0xff).Build());
  dr::Rule green5 = *dr::Rule::Create(by_reg5, *MatchBuilder().RegC(5, 2).Build(), {&to_q5});
  dr::Rule green3 = *dr::Rule::Create(by_reg3, *MatchBuilder().RegC(3, 2).Build(), {&to_q3});
  EXPECT_EQ(nic_.ReceiveFromWire(Udp(7, 1, 100)).qp_num, q5);
  EXPECT_EQ(nic_.ReceiveFromWire(Udp(7, 2, 100)).qp_num, q3);
}

// ASO connection tracking: every rejection of the aso ct action, with its message, and modify_aso.
class AsoConnTrackTest : public AdvancedActionsTest {
 protected:
  // A CT object of one context, an established connection from seq 1000 (client) and 5000 (server) with
  // unscaled 65535-byte windows.
  uint32_t Established() {
    const uint32_t cts = *nic_.CreateAsoObject(hw::AsoKind::kConnTrack, 0);
    sim::CtContext c;
    c.original = {15, false, true, false, false, 1000, 1000 + 65535, 65535, 5000};
    c.reply = {15, false, true, false, false, 5000, 5000 + 65535, 65535, 1000};
    EXPECT_TRUE(nic_.ConfigureAsoConnTrack(cts, 0, c).ok());
    return cts;
  }
};

TEST_F(AsoConnTrackTest, RejectsWhatRdmaCoreRejects) {
  const uint32_t cts = *nic_.CreateAsoObject(hw::AsoKind::kConnTrack, 1);  // 2 contexts
  constexpr uint32_t kInit = MLX5DV_DR_ACTION_FLAGS_ASO_CT_DIRECTION_INITIATOR;
  auto message = [&](uint32_t offset, uint32_t flags, uint8_t reg) {
    return std::string(dr::Action::Aso(domain_, cts, offset, flags, reg).status().message());
  };
  EXPECT_EQ(message(0, 0, 1), "aso ct: flags 0x0; exactly one direction, INITIATOR (0x1) or RESPONDER (0x2)");
  EXPECT_EQ(message(0, 3, 1), "aso ct: flags 0x3; exactly one direction, INITIATOR (0x1) or RESPONDER (0x2)");
  EXPECT_EQ(message(0, 4, 1), "aso ct: flags 0x4; exactly one direction, INITIATOR (0x1) or RESPONDER (0x2)");
  EXPECT_EQ(message(0, kInit, 2), "aso: return_reg_c 2; it must be 1, 3 or 5 (a register pair)");
  EXPECT_EQ(message(0, kInit, 7), "aso: return_reg_c 7; it must be 1, 3 or 5 (a register pair)");
  EXPECT_EQ(message(2, kInit, 1),
            "aso: ASO offset 2 is outside object " + std::to_string(cts) + " (2 contexts)");
  EXPECT_EQ(std::string(dr::Action::Aso(domain_, 9999, 0, kInit, 1).status().message()),
            "aso: no ASO object 9999");
  dr::Action ct = *dr::Action::Aso(domain_, cts, 1, kInit, 5);
  EXPECT_EQ(std::string(ct.ModifyAso(0, 0, 5).message()),
            "aso ct: flags 0x0; exactly one direction, INITIATOR (0x1) or RESPONDER (0x2)");
  EXPECT_EQ(std::string(ct.ModifyAso(2, kInit, 5).message()),
            "modify_aso: ASO offset 2 is outside object " + std::to_string(cts) + " (2 contexts)");
  EXPECT_TRUE(ct.ModifyAso(0, MLX5DV_DR_ACTION_FLAGS_ASO_CT_DIRECTION_RESPONDER, 3).ok());
  EXPECT_EQ(nic_.DestroyAsoObject(cts).code(), absl::StatusCode::kFailedPrecondition);

  // Not on root tables (the kernel path has no ASO), nor after encap on NIC_RX (rdma-core's state
  // machine), nor in another domain's rules.
  EXPECT_EQ(std::string(dr::Rule::Create(root_all_, MatchParams(), {&ct}).status().message()),
            "action[0] (aso(ct)) is not supported on root (level 0) tables");
  dr::Domain other = *dr::Domain::Create(nic_.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
  dr::Table other_t1 = *dr::Table::Create(other, 1);
  dr::Matcher other_all = *dr::Matcher::Create(other_t1, 0, 0, nullptr);
  EXPECT_EQ(std::string(dr::Rule::Create(other_all, MatchParams(), {&ct}).status().message()),
            "action[0] (aso(ct)): the ASO CT action was made for another domain, and its object is not "
            "linked to this one (mlx5dv_dr_aso_other_domain_link)");
  // NIC_TX: CT may come before an encap, not after it.
  dr::Domain tx = *dr::Domain::Create(nic_.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_TX);
  dr::Table tx_t1 = *dr::Table::Create(tx, 1), tx_t2 = *dr::Table::Create(tx, 2);
  dr::Matcher tx_all = *dr::Matcher::Create(tx_t1, 0, 0, nullptr);
  dr::Action tx_ct = *dr::Action::Aso(tx, cts, 0, kInit, 1);
  const std::vector<uint8_t> header = Udp(1, 2, 0);
  dr::Action encap =
      *dr::Action::PacketReformat(tx, 0, MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TO_L2_TUNNEL, header);
  absl::Status after_encap = dr::Rule::Create(tx_all, MatchParams(), {&encap, &tx_ct}).status();
  EXPECT_EQ(after_encap.code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(
      std::string(after_encap.message()),
      "action[1] (aso(ct)) cannot follow action[0] (packet_reformat(L2_TO_L2_TUNNEL)) in a NIC_TX domain");
  dr::Action to_tx_t2 = *dr::Action::DestTable(tx_t2);
  EXPECT_TRUE(dr::Rule::Create(tx_all, MatchParams(), {&tx_ct, &encap, &to_tx_t2}).ok());
}

// Direction comes from the action: the same segment is the initiator's or the responder's.
TEST_F(AsoConnTrackTest, TheActionsDirectionPicksTheSender) {
  const uint32_t cts = Established();
  dr::Action ct = *dr::Action::Aso(domain_, cts, 0, MLX5DV_DR_ACTION_FLAGS_ASO_CT_DIRECTION_INITIATOR, 3);
  dr::Action to_t2 = *dr::Action::DestTable(t2_);
  dr::Rule r = *dr::Rule::Create(t1_all_, MatchParams(), {&ct, &to_t2});
  const uint32_t valid_q = nic_.pf().CreateQueue(), invalid_q = nic_.pf().CreateQueue();
  dr::Action to_valid = *dr::Action::DestQp(nic_.pf(), valid_q),
             to_invalid = *dr::Action::DestQp(nic_.pf(), invalid_q);
  const sim::CtRegisterMatch valid = *sim::CtResultMatch(sim::kCtPktValid, sim::kCtPktValid);
  const sim::CtRegisterMatch invalid = *sim::CtResultMatch(sim::kCtPktInvalid, sim::kCtPktInvalid);
  dr::Matcher by_state = *dr::Matcher::Create(t2_, 0, *MatchBuilder().RegC(3, valid.mask).Build());
  dr::Rule rv = *dr::Rule::Create(by_state, *MatchBuilder().RegC(3, valid.value).Build(), {&to_valid});
  dr::Rule ri = *dr::Rule::Create(by_state, *MatchBuilder().RegC(3, invalid.value).Build(), {&to_invalid});
  sim::FrameSpec f;
  f.protocol = sim::kIpProtoTcp;
  f.seq = 1000;  // the initiator's next byte; as the responder's it is far outside its window
  f.ack = 5000;
  f.payload_len = 10;
  const std::vector<uint8_t> frame = sim::BuildFrame(f);
  EXPECT_EQ(nic_.ReceiveFromWire(frame).qp_num, valid_q);
  EXPECT_EQ(nic_.QueryAsoConnTrack(cts, 0)->original.sent_end, 1010u);
  ASSERT_TRUE(ct.ModifyAso(0, MLX5DV_DR_ACTION_FLAGS_ASO_CT_DIRECTION_RESPONDER, 3).ok());
  ASSERT_TRUE(r.Destroy().ok());
  r = *dr::Rule::Create(t1_all_, MatchParams(), {&ct, &to_t2});
  EXPECT_EQ(nic_.ReceiveFromWire(frame).qp_num, invalid_q);
  EXPECT_EQ(nic_.QueryAsoConnTrack(cts, 0)->reply.sent_end, 5000u);
}

// mlx5dv_dr_aso_other_domain_link: a NIC with one VF; the PF's NIC_RX domain makes the CT action, and
// the VF's NIC_TX domain (another function: another GVMI) or the PF's own NIC_TX and FDB domains use it.
class AsoConnTrackLinkTest : public ::testing::Test {
 protected:
  static constexpr uint32_t kInit = MLX5DV_DR_ACTION_FLAGS_ASO_CT_DIRECTION_INITIATOR;
  static constexpr uint32_t kResp = MLX5DV_DR_ACTION_FLAGS_ASO_CT_DIRECTION_RESPONDER;

  // A TX domain on `fn`: root -> table 1 (the CT rule's) -> table 2, where a VALID packet state in
  // reg_c[`reg`] goes on to the wire and anything else drops.
  struct TxSteering {
    TxSteering(sim::Function& fn, uint8_t reg)
        : domain(*dr::Domain::Create(fn, MLX5DV_DR_DOMAIN_TYPE_NIC_TX)),
          root(*dr::Table::Create(domain, 0)),
          t1(*dr::Table::Create(domain, 1)),
          t2(*dr::Table::Create(domain, 2)),
          to_t1(*dr::Action::DestTable(t1)),
          to_t2(*dr::Action::DestTable(t2)),
          wire(*dr::Action::DefaultMiss()),
          drop(*dr::Action::Drop()),
          root_all(*dr::Matcher::Create(root, 0, 0, nullptr)),
          jump(*dr::Rule::Create(root_all, MatchParams(), {&to_t1})),
          t1_all(*dr::Matcher::Create(t1, 0, 0, nullptr)),
          by_state(*dr::Matcher::Create(
              t2, 0,
              *MatchBuilder()
                   .RegC(reg, sim::CtResultMatch(sim::kCtPktValid, sim::kCtPktValid)->mask)
                   .Build())),
          t2_all(*dr::Matcher::Create(t2, 1, 0, nullptr)),
          valid(
              *dr::Rule::Create(by_state,
                                *MatchBuilder()
                                     .RegC(reg, sim::CtResultMatch(sim::kCtPktValid, sim::kCtPktValid)->value)
                                     .Build(),
                                {&wire})),
          rest(*dr::Rule::Create(t2_all, MatchParams(), {&drop})) {}
    dr::Domain domain;
    dr::Table root, t1, t2;
    dr::Action to_t1, to_t2, wire, drop;
    dr::Matcher root_all;
    dr::Rule jump;
    dr::Matcher t1_all, by_state, t2_all;
    dr::Rule valid, rest;
  };

  AsoConnTrackLinkTest() : pf_rx_(*dr::Domain::Create(nic_.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_RX)) {
    sim::CtContext c;
    c.original = {15, false, true, false, false, 1000, 1000 + 65535, 65535, 5000};
    c.reply = {15, false, true, false, false, 5000, 5000 + 65535, 65535, 1000};
    EXPECT_TRUE(nic_.ConfigureAsoConnTrack(cts_, 0, c).ok());
    EXPECT_TRUE(nic_.ConfigureAsoConnTrack(cts_, 1, c).ok());
  }

  // A TCP segment with `seq` and `ack` and 10 bytes of payload.
  static std::vector<uint8_t> Segment(uint32_t seq, uint32_t ack) {
    sim::FrameSpec f;
    f.protocol = sim::kIpProtoTcp;
    f.seq = seq;
    f.ack = ack;
    f.payload_len = 10;
    return sim::BuildFrame(f);
  }

  sim::Nic nic_{1};
  const uint32_t cts_ = *nic_.CreateAsoObject(hw::AsoKind::kConnTrack, 1);  // 2 contexts
  dr::Domain pf_rx_;
  // The PF's CT action: the initiator's side, its state to reg_c_3.
  dr::Action ct_ = *dr::Action::Aso(pf_rx_, cts_, 0, kInit, 3);
};

// On another function, the link's direction and register apply: the VF's rule tracks the responder's
// segments into reg_c_5, and the context the PF programmed moves.
TEST_F(AsoConnTrackLinkTest, AnotherFunctionTracksWithTheLinksDirection) {
  TxSteering vf(*nic_.function(1), 5);
  EXPECT_EQ(std::string(dr::Rule::Create(vf.t1_all, MatchParams(), {&ct_, &vf.to_t2}).status().message()),
            "action[0] (aso(ct)): the ASO CT action was made for another domain, and its object is not "
            "linked to this one (mlx5dv_dr_aso_other_domain_link)");
  ASSERT_TRUE(vf.domain.LinkAsoCt(pf_rx_, cts_, kResp, 5).ok());
  dr::Rule r = *dr::Rule::Create(vf.t1_all, MatchParams(), {&ct_, &vf.to_t2});
  // The responder's next bytes: VALID, and its sent_end moves on.
  EXPECT_EQ(nic_.function(1)->Send(Segment(5000, 1000)).fate, sim::Fate::kWire);
  sim::CtContext after = *nic_.QueryAsoConnTrack(cts_, 0);
  EXPECT_EQ(after.reply.sent_end, 5010u);
  EXPECT_EQ(after.original.sent_end, 1000u);
  EXPECT_FALSE(after.last_direction_original);
  // The initiator's next bytes seen as the responder's: far outside its window, INVALID.
  EXPECT_EQ(nic_.function(1)->Send(Segment(1000, 5000)).fate, sim::Fate::kDropped);
  EXPECT_EQ(nic_.QueryAsoConnTrack(cts_, 0)->reply.sent_end, 5010u);

  ASSERT_TRUE(r.Destroy().ok());
  ASSERT_TRUE(vf.domain.UnlinkAsoCt(cts_).ok());
  EXPECT_EQ(dr::Rule::Create(vf.t1_all, MatchParams(), {&ct_, &vf.to_t2}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// On the action's own device (the PF's NIC_TX domain), the action's direction and register apply, whatever
// the link says.
TEST_F(AsoConnTrackLinkTest, TheActionsOwnDeviceTracksWithTheActionsDirection) {
  TxSteering pf(nic_.pf(), 3);
  ASSERT_TRUE(pf.domain.LinkAsoCt(pf_rx_, cts_, kResp, 5).ok());
  dr::Rule r = *dr::Rule::Create(pf.t1_all, MatchParams(), {&ct_, &pf.to_t2});
  EXPECT_EQ(nic_.pf().Send(Segment(1000, 5000)).fate, sim::Fate::kWire);
  EXPECT_EQ(nic_.QueryAsoConnTrack(cts_, 0)->original.sent_end, 1010u);
  // An ack of bytes the responder never sent: INVALID.
  EXPECT_EQ(nic_.pf().Send(Segment(1010, 9000)).fate, sim::Fate::kDropped);
  EXPECT_EQ(nic_.QueryAsoConnTrack(cts_, 0)->reply.sent_end, 5000u);
  ASSERT_TRUE(r.Destroy().ok());
  EXPECT_TRUE(pf.domain.UnlinkAsoCt(cts_).ok());
}

TEST_F(AsoConnTrackLinkTest, RejectsWhatRdmaCoreRejects) {
  TxSteering vf(*nic_.function(1), 5);
  auto link = [&](uint32_t object, uint32_t flags, uint8_t reg) {
    return vf.domain.LinkAsoCt(pf_rx_, object, flags, reg);
  };
  const uint32_t meters = *nic_.CreateAsoObject(hw::AsoKind::kFlowMeter, 0);
  EXPECT_EQ(link(meters, kInit, 1).code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(std::string(link(meters, kInit, 1).message()),
            "aso link: ASO object " + std::to_string(meters) +
                " is not a connection-tracking object; only those link to other domains");
  EXPECT_EQ(std::string(link(9999, kInit, 1).message()), "aso link: no ASO object 9999");
  EXPECT_EQ(std::string(link(cts_, 0, 1).message()),
            "aso link: aso ct: flags 0x0; exactly one direction, INITIATOR (0x1) or RESPONDER (0x2)");
  EXPECT_EQ(std::string(link(cts_, 3, 1).message()),
            "aso link: aso ct: flags 0x3; exactly one direction, INITIATOR (0x1) or RESPONDER (0x2)");
  EXPECT_EQ(std::string(link(cts_, kInit, 2).message()),
            "aso link: aso: return_reg_c 2; it must be 1, 3 or 5 (a register pair)");
  sim::Nic other_nic;
  dr::Domain elsewhere = *dr::Domain::Create(other_nic.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_TX);
  absl::Status across = elsewhere.LinkAsoCt(pf_rx_, cts_, kInit, 1);
  EXPECT_EQ(across.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(across.message()).find("is on another NIC than ASO object"), std::string::npos);
  EXPECT_EQ(std::string(vf.domain.UnlinkAsoCt(cts_).message()),
            "aso unlink: ASO object " + std::to_string(cts_) + " is not linked to any domain");
  EXPECT_TRUE(nic_.DestroyAsoObject(meters).ok());  // the failed links left no reference

  ASSERT_TRUE(link(cts_, kResp, 5).ok());
  EXPECT_EQ(link(cts_, kInit, 1).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(std::string(link(cts_, kInit, 1).message()),
            "aso link: ASO object " + std::to_string(cts_) + " is linked to domain " +
                std::to_string(vf.domain.id()) + " already; unlink it first");
  // One rule per context through the link, whichever action names the context.
  dr::Rule r = *dr::Rule::Create(vf.t1_all, MatchParams(), {&ct_, &vf.to_t2});
  dr::Action same_context = *dr::Action::Aso(pf_rx_, cts_, 0, kResp, 1);
  dr::Matcher by_port = *dr::Matcher::Create(vf.t1, 1, *MatchBuilder().IpVersion(kOuter, 6).Build());
  absl::Status busy =
      dr::Rule::Create(by_port, *MatchBuilder().IpVersion(kOuter, 6).Build(), {&same_context, &vf.to_t2})
          .status();
  EXPECT_EQ(busy.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(std::string(busy.message()),
            "action[0] (aso(ct)): its CT context (ASO object " + std::to_string(cts_) +
                ") is in use by another rule of this domain through the link, which serves one rule per "
                "context");
  dr::Action context1 = *dr::Action::Aso(pf_rx_, cts_, 1, kResp, 1);
  dr::Rule r1 =
      *dr::Rule::Create(by_port, *MatchBuilder().IpVersion(kOuter, 6).Build(), {&context1, &vf.to_t2});
  // Many rules at once: the second value would take the context again.
  std::vector<MatchParams> values;
  for (uint32_t port : {1, 2})
    values.push_back(*MatchBuilder().IpVersion(kOuter, 4).UdpDport(kOuter, port).Build());
  const mlx5dv_flow_match_parameters* many[] = {values[0].get(), values[1].get()};
  std::vector<dr::Rule> made(2);
  ASSERT_TRUE(r1.Destroy().ok());
  dr::Matcher by_dport =
      *dr::Matcher::Create(vf.t1, 2, *MatchBuilder().IpVersion(kOuter, 4).UdpDport(kOuter, 0xffff).Build());
  absl::Status twice = dr::Rule::CreateMany(by_dport, many, {&context1, &vf.to_t2}, absl::MakeSpan(made));
  EXPECT_EQ(twice.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(std::string(twice.message()),
            "value[1]: the actions reach a CT context through a link, which serves one rule per context, "
            "and value[0] takes it");
  EXPECT_FALSE(made[0].valid());

  // A third domain's rule may not use the action; unlink names the domain linked; linked domains and
  // the object stay while linked; unlink waits for the rules.
  TxSteering pf(nic_.pf(), 3);
  EXPECT_EQ(std::string(dr::Rule::Create(pf.t1_all, MatchParams(), {&ct_, &pf.to_t2}).status().message()),
            "action[0] (aso(ct)): the ASO CT action was made for another domain, and its object is linked "
            "to a third domain, not this one");
  EXPECT_EQ(std::string(pf.domain.UnlinkAsoCt(cts_).message()),
            "aso unlink: ASO object " + std::to_string(cts_) + " is linked to domain " +
                std::to_string(vf.domain.id()) + ", not to this one (domain " +
                std::to_string(pf.domain.id()) + ")");
  EXPECT_EQ(nic_.DestroyAsoObject(cts_).code(), absl::StatusCode::kFailedPrecondition);
  dr::Domain lone_peer = *dr::Domain::Create(nic_.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
  dr::Domain lone = *dr::Domain::Create(*nic_.function(1), MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
  const uint32_t other_cts = *nic_.CreateAsoObject(hw::AsoKind::kConnTrack, 0);
  ASSERT_TRUE(lone.LinkAsoCt(lone_peer, other_cts, kInit, 1).ok());
  EXPECT_EQ(std::string(lone.Destroy().message()),
            "domain is still the peer or the linked domain of 1 ASO CT link(s); unlink them first");
  EXPECT_EQ(lone_peer.Destroy().code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(lone.UnlinkAsoCt(other_cts).ok());
  EXPECT_TRUE(lone.Destroy().ok());
  EXPECT_TRUE(lone_peer.Destroy().ok());
  EXPECT_TRUE(nic_.DestroyAsoObject(other_cts).ok());

  absl::Status in_use = vf.domain.UnlinkAsoCt(cts_);
  EXPECT_EQ(in_use.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(std::string(in_use.message()), "aso unlink: 1 rule(s) of domain " +
                                               std::to_string(vf.domain.id()) +
                                               " use CT contexts of ASO object " + std::to_string(cts_) +
                                               " through the link; destroy them first");
  ASSERT_TRUE(r.Destroy().ok());
  EXPECT_TRUE(vf.domain.UnlinkAsoCt(cts_).ok());
}

// FDB: a rule lives in both pipes unless its source_port puts it in one, and rdma-core takes a linked
// context once per pipe, so only a one-pipe rule may use it.
TEST_F(AsoConnTrackLinkTest, AnFdbRuleMustLiveInOnePipe) {
  dr::Domain fdb = *dr::Domain::Create(nic_.pf(), MLX5DV_DR_DOMAIN_TYPE_FDB);
  dr::Table t1 = *dr::Table::Create(fdb, 1), t2 = *dr::Table::Create(fdb, 2);
  dr::Action to_t2 = *dr::Action::DestTable(t2);
  ASSERT_TRUE(fdb.LinkAsoCt(pf_rx_, cts_, kInit, 1).ok());
  dr::Matcher all = *dr::Matcher::Create(t1, 0, 0, nullptr);
  absl::Status both = dr::Rule::Create(all, MatchParams(), {&ct_, &to_t2}).status();
  EXPECT_EQ(both.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(std::string(both.message()),
            "action[0] (aso(ct)): an FDB rule in both pipes takes its linked CT context once per pipe, and a "
            "linked context serves one at a time; match source_port to put the rule in one pipe");
  dr::Matcher by_port = *dr::Matcher::Create(t1, 1, *MatchBuilder().SourcePort(0xffff).Build());
  dr::Rule from_wire = *dr::Rule::Create(by_port, *MatchBuilder().SourcePort(0xffff).Build(), {&ct_, &to_t2});
  ASSERT_TRUE(from_wire.Destroy().ok());
  EXPECT_TRUE(fdb.UnlinkAsoCt(cts_).ok());
}

// A register a lookup before the CT action read (so the frame was parsed whole) reads its new value after
// it: the low byte the action writes, zero (VALID) over what a modify header had set.
TEST_F(AsoConnTrackTest, ALaterLookupReadsTheRegisterTheActionWrote) {
  const uint32_t cts = Established();
  const sim::CtRegisterMatch valid = *sim::CtResultMatch(sim::kCtPktValid, sim::kCtPktValid);
  const sim::CtRegisterMatch invalid = *sim::CtResultMatch(sim::kCtPktInvalid, sim::kCtPktInvalid);
  ASSERT_EQ(valid.value, 0u);
  // t1 sets reg_c_3 to INVALID's byte; t2 matches it there and tracks; t3 tells the CT results apart.
  dr::Table t3 = *dr::Table::Create(domain_, 3);
  const uint64_t set_invalid[] = {hw::ModifySetWord(hw::ModifyField::kMetadataRegC3, 0, 0, invalid.value)};
  dr::Action preset = *dr::Action::ModifyHeader(domain_, 0, set_invalid);
  dr::Action to_t2 = *dr::Action::DestTable(t2_), to_t3 = *dr::Action::DestTable(t3);
  dr::Rule r1 = *dr::Rule::Create(t1_all_, MatchParams(), {&preset, &to_t2});
  dr::Action ct = *dr::Action::Aso(domain_, cts, 0, MLX5DV_DR_ACTION_FLAGS_ASO_CT_DIRECTION_INITIATOR, 3);
  dr::Matcher t2_by_reg = *dr::Matcher::Create(t2_, 0, *MatchBuilder().RegC(3, valid.mask).Build());
  dr::Rule r2 = *dr::Rule::Create(t2_by_reg, *MatchBuilder().RegC(3, invalid.value).Build(), {&ct, &to_t3});
  const uint32_t valid_q = nic_.pf().CreateQueue(), invalid_q = nic_.pf().CreateQueue();
  dr::Action to_valid = *dr::Action::DestQp(nic_.pf(), valid_q),
             to_invalid = *dr::Action::DestQp(nic_.pf(), invalid_q);
  dr::Matcher t3_by_reg = *dr::Matcher::Create(t3, 0, *MatchBuilder().RegC(3, valid.mask).Build());
  dr::Rule rv = *dr::Rule::Create(t3_by_reg, *MatchBuilder().RegC(3, valid.value).Build(), {&to_valid});
  dr::Rule ri = *dr::Rule::Create(t3_by_reg, *MatchBuilder().RegC(3, invalid.value).Build(), {&to_invalid});
  sim::FrameSpec f;
  f.protocol = sim::kIpProtoTcp;
  f.seq = 1000;
  f.ack = 5000;
  f.payload_len = 10;
  const std::vector<uint8_t> in_window = sim::BuildFrame(f);
  f.seq = 900000;  // far past the window
  const std::vector<uint8_t> out_of_window = sim::BuildFrame(f);
  // One burst: each frame's verdict is its own.
  const std::vector<sim::Frame> frames = {in_window, out_of_window, in_window};
  std::vector<sim::Verdict> verdicts(frames.size());
  ASSERT_TRUE(nic_.ReceiveFromWire(frames, absl::MakeSpan(verdicts)).ok());
  EXPECT_EQ(verdicts[0].qp_num, valid_q);
  EXPECT_EQ(verdicts[1].qp_num, invalid_q);
  EXPECT_EQ(verdicts[2].qp_num, valid_q);
  EXPECT_EQ(nic_.QueryAsoConnTrack(cts, 0)->original.sent_end, 1010u);
}

}  // namespace
}  // namespace drsim
