// rdma-core's GENEVE and RoCE BTH matching scenarios (test_geneve_match_rx/_tx, test_roce_bth_match_rx/
// _tx) on the software NIC, GENEVE option matching through the NIC's option parser object, and RoCE v2
// frames whose UDP source port is the RFC's entropy.
#include <vector>

#include "dr/dr.h"
#include "gtest/gtest.h"
#include "hw/match_params.h"
#include "sim/frame_builder.h"
#include "sim/nic.h"
#include "sim/roce_entropy.h"

namespace drsim {
namespace {

using hw::Field;
using hw::MatchBuilder;
using hw::MatchParams;

sim::TunnelFrameSpec Geneve(uint32_t vni, bool oam) {
  sim::TunnelFrameSpec t;
  t.tunnel.kind = sim::Encap::kGeneve;
  t.tunnel.vni = vni;
  t.tunnel.geneve_oam = oam;
  t.inner.payload_len = 20;
  return t;
}

sim::TunnelFrameSpec Roce(uint8_t opcode, uint32_t dst_qp, bool ack) {
  sim::TunnelFrameSpec t;
  t.tunnel.kind = sim::Encap::kRoceV2;
  t.tunnel.bth_opcode = opcode;
  t.tunnel.bth_dst_qp = dst_qp;
  t.tunnel.bth_ack_req = ack;
  t.tunnel.bth_src_qp = 0x123456;
  t.outer.payload_len = 16;
  return t;
}

// A counter on every frame a matcher in `domain` hits (root -> table 1 -> the matcher under test).
class MatchCountTest : public ::testing::TestWithParam<mlx5dv_dr_domain_type> {
 protected:
  void Install(const MatchParams& mask, const MatchParams& value) {
    domain_ = *dr::Domain::Create(nic_.pf(), GetParam());
    root_ = *dr::Table::Create(domain_, 0);
    t1_ = *dr::Table::Create(domain_, 1);
    jump_ = *dr::Action::DestTable(t1_);
    all_ = *dr::Matcher::Create(root_, 0, 0, nullptr);
    r0_ = *dr::Rule::Create(all_, MatchParams(), {&jump_});
    counter_ = *nic_.AllocateCounters(1);
    count_ = *dr::Action::FlowCounter(nic_.pf(), counter_, 0);
    m_ = *dr::Matcher::Create(t1_, 0, mask);
    r1_ = *dr::Rule::Create(m_, value, {&count_});
  }
  void Send(const std::vector<uint8_t>& f) {
    if (GetParam() == MLX5DV_DR_DOMAIN_TYPE_NIC_TX) {
      nic_.pf().Send(f);
    } else {
      nic_.ReceiveFromWire(f);
    }
  }
  uint64_t Count() {
    uint64_t packets = 0, bytes = 0;
    EXPECT_TRUE(nic_.QueryCounter(counter_, &packets, &bytes).ok());
    return packets;
  }

  sim::Nic nic_;
  dr::Domain domain_;
  dr::Table root_, t1_;
  dr::Action jump_, count_;
  dr::Matcher all_, m_;
  dr::Rule r0_, r1_;
  uint32_t counter_ = 0;
};

TEST_P(MatchCountTest, GeneveVniAndOam) {
  Install(*MatchBuilder().GeneveVni(0xffffff).Set(Field::kGeneveOam, 1).Build(),
          *MatchBuilder().GeneveVni(0x1234).Build());
  for (int i = 0; i < 5; ++i) Send(sim::BuildFrame(Geneve(0x1234, false)));
  Send(sim::BuildFrame(Geneve(0x1234, true)));          // OAM set: not counted
  Send(sim::BuildFrame(Geneve(0x1235, false)));         // another VNI
  Send(sim::BuildFrame(sim::TunnelFrameSpec().outer));  // not GENEVE
  EXPECT_EQ(Count(), 5u);
}

// OVN's tunnel key through the C++ API: the NIC's GENEVE TLV option object selects the option that
// misc3.geneve_tlv_option_0_data reads, wherever it sits among the options.
TEST_P(MatchCountTest, GeneveTunnelKeyOption) {
  const absl::StatusOr<uint32_t> option = nic_.CreateGeneveTlvOption({0x0102, 0x80, 1});
  ASSERT_TRUE(option.ok()) << option.status();
  Install(*MatchBuilder().Set(Field::kGeneveTlvOption0Data, 0xffffffff).Set(Field::kGeneveTlvOption0Exist, 1).Build(),
          *MatchBuilder().Set(Field::kGeneveTlvOption0Data, 0x00010002).Set(Field::kGeneveTlvOption0Exist, 1).Build());
  auto send = [&](std::vector<sim::GeneveOption> options) {
    sim::TunnelFrameSpec t = Geneve(0x1234, false);
    t.tunnel.geneve_options = std::move(options);
    Send(sim::BuildFrame(t));
  };
  const sim::GeneveOption key{0x0102, 0x80, {0x00010002}};
  send({key});
  send({{0xffff, 0x01, {1, 2}}, key});                         // second
  send({{0x0103, 0x80, {0x00010002}}, {0xffff, 0x80, {3}}, key});  // third, behind the key's data in another class
  send({{0x0103, 0x80, {0x00010002}}});                        // another class: not the key
  send({{0x0102, 0x81, {0x00010002}}});                        // another type
  send({});
  EXPECT_EQ(Count(), 3u);
  // The object stays while the matcher reads option 0 (EBUSY), and goes with it; then nothing is option 0.
  EXPECT_EQ(nic_.DestroyGeneveTlvOption(*option).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(nic_.QueryGeneveTlvOption(*option)->option_class, 0x0102);
  ASSERT_TRUE(r1_.Destroy().ok());
  ASSERT_TRUE(m_.Destroy().ok());
  EXPECT_TRUE(nic_.DestroyGeneveTlvOption(*option).ok());
  EXPECT_EQ(nic_.QueryGeneveTlvOption(*option).status().code(), absl::StatusCode::kNotFound);
  m_ = *dr::Matcher::Create(t1_, 0, *MatchBuilder().Set(Field::kGeneveTlvOption0Data, 0xffffffff).Build());
  r1_ = *dr::Rule::Create(m_, *MatchBuilder().Set(Field::kGeneveTlvOption0Data, 0x00010002).Build(), {&count_});
  send({key});
  EXPECT_EQ(Count(), 3u);
  // One option per device, of at most 7 data words.
  EXPECT_EQ(nic_.CreateGeneveTlvOption({0x0102, 0x80, 8}).status().code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(nic_.CreateGeneveTlvOption({0xffff, 0x80, 1}).ok());
  const absl::Status second = nic_.CreateGeneveTlvOption({0x0102, 0x80, 1}).status();
  EXPECT_EQ(second.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(second.message().find("max_geneve_tlv_options"), absl::string_view::npos) << second;
}

TEST_P(MatchCountTest, RoceBth) {
  Install(*MatchBuilder()
               .Set(Field::kBthOpcode, 0xff)
               .Set(Field::kBthDstQp, 0xffffff)
               .Set(Field::kBthA, 1)
               .Build(),
          *MatchBuilder()
               .Set(Field::kBthOpcode, 0x04)
               .Set(Field::kBthDstQp, 0xabcd)
               .Set(Field::kBthA, 1)
               .Build());
  for (int i = 0; i < 3; ++i) Send(sim::BuildFrame(Roce(0x04, 0xabcd, true)));
  Send(sim::BuildFrame(Roce(0x04, 0xabcd, false)));  // no ack request
  Send(sim::BuildFrame(Roce(0x0a, 0xabcd, true)));   // another opcode
  Send(sim::BuildFrame(Roce(0x04, 0xabce, true)));   // another QP
  EXPECT_EQ(Count(), 3u);
}

INSTANTIATE_TEST_SUITE_P(RxAndTx, MatchCountTest,
                         ::testing::Values(MLX5DV_DR_DOMAIN_TYPE_NIC_RX, MLX5DV_DR_DOMAIN_TYPE_NIC_TX),
                         [](const ::testing::TestParamInfo<mlx5dv_dr_domain_type>& p) {
                           return p.param == MLX5DV_DR_DOMAIN_TYPE_NIC_RX ? "Rx" : "Tx";
                         });

TEST(RoceEntropyFramesTest, UdpSourcePortComesFromTheQpNumbers) {
  sim::TunnelFrameSpec rc = Roce(0x04, 0xabcdef, false);
  std::vector<uint8_t> f = sim::BuildFrame(rc);
  const uint16_t sport = static_cast<uint16_t>(f[34] << 8 | f[35]);
  EXPECT_EQ(sport, *sim::RoceRcUdpSport(0x123456, 0xabcdef));
  EXPECT_GE(sport, 0xc000);
  sim::TunnelFrameSpec ud = rc;
  ud.tunnel.bth_qp_type = sim::RoceQpType::kUd;
  ud.tunnel.bth_dst_qp = 0xffffff;  // UD multicast
  f = sim::BuildFrame(ud);
  EXPECT_EQ(static_cast<uint16_t>(f[34] << 8 | f[35]), *sim::RoceUdUdpSport(0x123456, 0xffffff));
  sim::TunnelFrameSpec fixed = rc;
  fixed.outer.sport = 5000;  // a given port is kept
  f = sim::BuildFrame(fixed);
  EXPECT_EQ(static_cast<uint16_t>(f[34] << 8 | f[35]), 5000);
}

}  // namespace
}  // namespace drsim
