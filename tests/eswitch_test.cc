// The eSwitch end to end: frames from the wire and from functions through FDB (RX and TX pipes), NIC_TX
// and NIC_RX domains of the PF and VFs, with vport destinations, source_port matching, defaults and
// steering registers carried across domains.
#include <optional>
#include <vector>

#include "dr/dr.h"
#include "gtest/gtest.h"
#include "hw/match_params.h"
#include "sim/frame_builder.h"
#include "sim/nic.h"
#include "sim/rx_queue.h"

namespace drsim {
namespace {

using hw::kOuter;
using hw::MatchBuilder;
using hw::MatchParams;

const hw::MacAddress kVf1Mac = *hw::MacAddress::Parse("02:00:00:00:00:01");
const hw::MacAddress kVf2Mac = *hw::MacAddress::Parse("02:00:00:00:00:02");
const hw::MacAddress kRemoteMac = *hw::MacAddress::Parse("02:00:00:00:00:99");

std::vector<uint8_t> Frame(const hw::MacAddress& dmac, const hw::MacAddress& smac) {
  sim::FrameSpec s;
  s.dmac = dmac;
  s.smac = smac;
  s.protocol = sim::kIpProtoUdp;
  s.dport = 4000;
  s.payload_len = 16;
  return sim::BuildFrame(s);
}

MatchParams DmacMask() { return *MatchBuilder().Dmac(kOuter, hw::MacAddress::AllOnes()).Build(); }
MatchParams Dmac(const hw::MacAddress& mac) { return *MatchBuilder().Dmac(kOuter, mac).Build(); }

// An FDB domain on the PF with one non-root table reached from the root, and a helper for rules in it.
class EswitchTest : public ::testing::Test {
 protected:
  EswitchTest()
      : nic_(2),
        fdb_(*dr::Domain::Create(nic_.pf(), MLX5DV_DR_DOMAIN_TYPE_FDB)),
        fdb_root_(*dr::Table::Create(fdb_, 0)),
        fdb_table_(*dr::Table::Create(fdb_, 1)),
        to_table_(*dr::Action::DestTable(fdb_table_)),
        all_(*dr::Matcher::Create(fdb_root_, 0, 0, nullptr)),
        jump_(*dr::Rule::Create(all_, MatchParams(), {&to_table_})) {}

  // A NIC_RX domain on `vport` delivering everything to a new queue of that function.
  uint32_t CatchAllRx(uint16_t vport) {
    sim::Function& fn = *nic_.function(vport);
    rx_domains_.push_back(*dr::Domain::Create(fn, MLX5DV_DR_DOMAIN_TYPE_NIC_RX));
    rx_tables_.push_back(*dr::Table::Create(rx_domains_.back(), 0));
    rx_matchers_.push_back(*dr::Matcher::Create(rx_tables_.back(), 0, 0, nullptr));
    const uint32_t qp = fn.CreateQueue();
    actions_.push_back(*dr::Action::DestQp(fn, qp));
    rules_.push_back(*dr::Rule::Create(rx_matchers_.back(), MatchParams(), {&actions_.back()}));
    return qp;
  }

  sim::Nic nic_;
  dr::Domain fdb_;
  dr::Table fdb_root_, fdb_table_;
  dr::Action to_table_;
  dr::Matcher all_;
  dr::Rule jump_;
  std::deque<dr::Domain> rx_domains_;
  std::deque<dr::Table> rx_tables_;
  std::deque<dr::Matcher> rx_matchers_;
  std::deque<dr::Action> actions_;
  std::deque<dr::Rule> rules_;
};

TEST_F(EswitchTest, WireTrafficIsSteeredToVportsAndDefaultsToThePf) {
  const uint32_t pf_qp = CatchAllRx(0), vf1_qp = CatchAllRx(1);
  dr::Matcher m = *dr::Matcher::Create(fdb_table_, 0, DmacMask());
  dr::Action to_vf1 = *dr::Action::DestVport(fdb_, 1);
  dr::Rule r = *dr::Rule::Create(m, Dmac(kVf1Mac), {&to_vf1});

  std::vector<uint8_t> for_vf1 = Frame(kVf1Mac, kRemoteMac), other = Frame(kVf2Mac, kRemoteMac);
  sim::Verdict v = nic_.ReceiveFromWire(for_vf1);
  EXPECT_EQ(v.fate, sim::Fate::kQueued);
  EXPECT_EQ(v.vport, 1);
  EXPECT_EQ(v.qp_num, vf1_qp);
  ASSERT_EQ(v.path.size(), 3u);  // FDB root, FDB table 1, VF1's NIC_RX
  EXPECT_EQ(v.path[0].domain, MLX5DV_DR_DOMAIN_TYPE_FDB);
  EXPECT_EQ(v.path[1].rule_id, r.id());
  EXPECT_EQ(v.path[2].domain, MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
  EXPECT_EQ(v.path[2].vport, 1);
  // No FDB rule: the eSwitch manager gets it.
  v = nic_.ReceiveFromWire(other);
  EXPECT_EQ(v.fate, sim::Fate::kQueued);
  EXPECT_EQ(v.vport, 0);
  EXPECT_EQ(v.qp_num, pf_qp);
  EXPECT_EQ(nic_.function(1)->queue(vf1_qp)->Poll()->frame, for_vf1);
}

TEST_F(EswitchTest, VportWithoutRxSteeringTakesFramesOnItsInterfaceAndUplinkFromRxIsADrop) {
  dr::Matcher m = *dr::Matcher::Create(fdb_table_, 0, DmacMask());
  dr::Action to_vf2 = *dr::Action::DestVport(fdb_, 2);
  dr::Action to_wire = *dr::Action::DestVport(fdb_, 0xffff);
  dr::Rule r2 = *dr::Rule::Create(m, Dmac(kVf2Mac), {&to_vf2});
  dr::Rule rw = *dr::Rule::Create(m, Dmac(kRemoteMac), {&to_wire});
  const std::vector<uint8_t> for_vf2 = Frame(kVf2Mac, kRemoteMac);
  sim::Verdict v = nic_.ReceiveFromWire(for_vf2);  // VF2 has no NIC_RX steering: its netdev gets it
  EXPECT_EQ(v.fate, sim::Fate::kPort);
  EXPECT_EQ(v.vport, 2);
  EXPECT_EQ(nic_.function(2)->PollPort(), for_vf2);
  EXPECT_EQ(nic_.function(1)->PollPort(), std::nullopt);
  EXPECT_EQ(nic_.ReceiveFromWire(Frame(kRemoteMac, kVf1Mac)).fate, sim::Fate::kDropped);
}

TEST_F(EswitchTest, FunctionsSendThroughNicTxAndTheFdbTxPipe) {
  const uint32_t pf_qp = CatchAllRx(0), vf2_qp = CatchAllRx(2);
  MatchParams mask = *MatchBuilder().SourcePort(0xffff).Dmac(kOuter, hw::MacAddress::AllOnes()).Build();
  dr::Matcher m = *dr::Matcher::Create(fdb_table_, 0, mask);
  dr::Action to_wire = *dr::Action::DestVport(fdb_, 0xffff);
  dr::Action to_vf2 = *dr::Action::DestVport(fdb_, 2);
  dr::Rule out =
      *dr::Rule::Create(m, *MatchBuilder().SourcePort(1).Dmac(kOuter, kRemoteMac).Build(), {&to_wire});
  dr::Rule east_west =
      *dr::Rule::Create(m, *MatchBuilder().SourcePort(1).Dmac(kOuter, kVf2Mac).Build(), {&to_vf2});

  sim::Function& vf1 = *nic_.function(1);
  std::vector<uint8_t> to_remote = Frame(kRemoteMac, kVf1Mac);
  sim::Verdict v = vf1.Send(to_remote);
  EXPECT_EQ(v.fate, sim::Fate::kWire);
  EXPECT_EQ(v.path[0].domain, MLX5DV_DR_DOMAIN_TYPE_FDB);  // VF1 has no NIC_TX rules
  EXPECT_EQ(v.path[0].pipe, hw::kTxPipe);
  std::optional<std::vector<uint8_t>> wire = nic_.PollWire();
  ASSERT_TRUE(wire.has_value());
  EXPECT_EQ(*wire, to_remote);

  v = vf1.Send(Frame(kVf2Mac, kVf1Mac));
  EXPECT_EQ(v.fate, sim::Fate::kQueued);
  EXPECT_EQ(v.vport, 2);
  EXPECT_EQ(v.qp_num, vf2_qp);
  // The same frame from VF2 matches no rule (source_port 2): the FDB default, the eSwitch manager.
  v = nic_.function(2)->Send(Frame(kVf2Mac, kVf1Mac));
  EXPECT_EQ(v.vport, 0);
  EXPECT_EQ(v.qp_num, pf_qp);
  // The PF's own frames leave by the wire by default.
  EXPECT_EQ(nic_.pf().Send(Frame(kRemoteMac, kVf1Mac)).fate, sim::Fate::kWire);
  // A rule for source_port 1 is not in the RX pipe: wire traffic with that dmac is not sent to VF2.
  EXPECT_EQ(nic_.ReceiveFromWire(Frame(kVf2Mac, kRemoteMac)).vport, 0);
}

TEST_F(EswitchTest, NicTxDomainsSeeTheFunctionsTrafficFirst) {
  sim::Function& vf1 = *nic_.function(1);
  dr::Domain tx = *dr::Domain::Create(vf1, MLX5DV_DR_DOMAIN_TYPE_NIC_TX);
  dr::Table t = *dr::Table::Create(tx, 0);
  dr::Matcher m = *dr::Matcher::Create(t, 0, DmacMask());
  dr::Action drop = *dr::Action::Drop();
  dr::Rule r = *dr::Rule::Create(m, Dmac(kRemoteMac), {&drop});
  sim::Verdict v = vf1.Send(Frame(kRemoteMac, kVf1Mac));
  EXPECT_EQ(v.fate, sim::Fate::kDropped);
  ASSERT_EQ(v.path.size(), 1u);
  EXPECT_EQ(v.path[0].domain, MLX5DV_DR_DOMAIN_TYPE_NIC_TX);
  EXPECT_EQ(v.path[0].vport, 1);
}

TEST_F(EswitchTest, RegistersCarryFromFdbToTheVportsNicRx) {
  // FDB: SET reg_c_0 = 0x55 and forward to VF1; VF1's NIC_RX matches reg_c_0.
  uint64_t set = hw::ModifySetWord(hw::ModifyField::kMetadataRegC0, 0, 0, 0x55);
  dr::Action mark = *dr::Action::ModifyHeader(fdb_, 0, {&set, 1});
  dr::Action to_vf1 = *dr::Action::DestVport(fdb_, 1);
  dr::Matcher m = *dr::Matcher::Create(fdb_table_, 0, DmacMask());
  dr::Rule r = *dr::Rule::Create(m, Dmac(kVf1Mac), {&mark, &to_vf1});

  sim::Function& vf1 = *nic_.function(1);
  dr::Domain rx = *dr::Domain::Create(vf1, MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
  dr::Table t = *dr::Table::Create(rx, 0);
  dr::Matcher by_reg = *dr::Matcher::Create(t, 0, *MatchBuilder().RegC(0, 0xffffffff).Build());
  const uint32_t qp = vf1.CreateQueue();
  dr::Action to_qp = *dr::Action::DestQp(vf1, qp);
  dr::Rule got = *dr::Rule::Create(by_reg, *MatchBuilder().RegC(0, 0x55).Build(), {&to_qp});
  sim::Verdict v = nic_.ReceiveFromWire(Frame(kVf1Mac, kRemoteMac));
  EXPECT_EQ(v.fate, sim::Fate::kQueued);
  EXPECT_EQ(v.qp_num, qp);
  EXPECT_EQ(v.path.back().rule_id, got.id());
}

TEST_F(EswitchTest, DomainAndVportChecks) {
  EXPECT_EQ(dr::Domain::Create(*nic_.function(1), MLX5DV_DR_DOMAIN_TYPE_FDB).status().code(),
            absl::StatusCode::kUnimplemented);
  dr::Domain rx = *dr::Domain::Create(nic_.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
  EXPECT_EQ(dr::Action::DestVport(rx, 1).status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(dr::Action::DestVport(fdb_, 3).status().code(), absl::StatusCode::kInvalidArgument);  // 2 VFs
  EXPECT_EQ(dr::Action::DestVport(fdb_, 0x10000).status().code(), absl::StatusCode::kInvalidArgument);
  // A dest_vport action of one domain cannot be used in another.
  dr::Domain other = *dr::Domain::Create(nic_.pf(), MLX5DV_DR_DOMAIN_TYPE_FDB);
  dr::Table t = *dr::Table::Create(other, 1);
  dr::Matcher m = *dr::Matcher::Create(t, 0, DmacMask());
  dr::Action to_vf1 = *dr::Action::DestVport(fdb_, 1);
  absl::Status s = dr::Rule::Create(m, Dmac(kVf1Mac), {&to_vf1}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
}

}  // namespace
}  // namespace drsim
