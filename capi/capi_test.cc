// The C API calls c_api_test.c does not reach: meters (legacy and ASO), samplers, dest arrays, RSS
// through a TIR, reformat and modify header, root-table jumps, set_layout/sync/duplicates, and the checks
// that keep objects of different NICs and kinds apart.
#include <arpa/inet.h>
#include <endian.h>

#include <cerrno>
#include <string>
#include <vector>

#include "capi/drsim.h"
#include "gtest/gtest.h"
#include "hw/match_params.h"
#include "hw/modify_header.h"
#include "sim/conntrack.h"
#include "sim/conntrack_prm.h"
#include "sim/frame_builder.h"
#include "sim/meter.h"
#include "tests/flow_meter.h"
#include "tests/kept_dr_objects.h"
#include "tests/udp_frame.h"

namespace drsim {
namespace {

using hw::kOuter;
using hw::MatchBuilder;
using hw::MatchParams;

std::vector<uint8_t> Udp(uint16_t sport, uint16_t dport, size_t payload = 0) {
  return tests::UdpFrame(sport, dport, payload);
}

mlx5dv_flow_match_parameters* P(MatchParams& p) { return p.get(); }
mlx5dv_flow_match_parameters* P(MatchParams&& p) = delete;

// A NIC with one VF, a NIC_RX domain with root -> table 1 -> table 2 on the PF, and a QP.
class CApiTest : public ::testing::Test, protected tests::KeptDrObjects {
 protected:
  void SetUp() override {
    ctx_ = drsim_open(1);
    ASSERT_NE(ctx_, nullptr);
    qp_ = drsim_create_qp(ctx_, 0);
    rx_ = mlx5dv_dr_domain_create(ctx_, MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
    root_ = Keep(mlx5dv_dr_table_create(rx_, 0));
    t1_ = Keep(mlx5dv_dr_table_create(rx_, 1));
    t2_ = Keep(mlx5dv_dr_table_create(rx_, 2));
    ASSERT_TRUE(qp_ && rx_ && root_ && t1_ && t2_);
    root_all_ = Keep(mlx5dv_dr_matcher_create(root_, 0, 0, P(empty_)));
    t1_all_ = Keep(mlx5dv_dr_matcher_create(t1_, 0, 0, P(empty_)));
    to_t1_ = Keep(mlx5dv_dr_action_create_dest_table(t1_));
    to_qp_ = Keep(mlx5dv_dr_action_create_dest_ibv_qp(qp_));
    jump_ = Rule(root_all_, MatchParams(), {to_t1_});
    ASSERT_TRUE(root_all_ && t1_all_ && to_t1_ && to_qp_ && jump_);
  }

  // Everything is destroyed in dependency order; each destroy must succeed.
  void TearDown() override {
    DestroyDrObjects();
    EXPECT_EQ(mlx5dv_dr_domain_destroy(rx_), 0);
    DestroyDevxObjects();
    for (ibv_qp* q : qps_) EXPECT_EQ(drsim_destroy_qp(q), 0);
    EXPECT_EQ(drsim_destroy_qp(qp_), 0);
    EXPECT_EQ(drsim_close(ctx_), 0) << drsim_last_error();
  }

  uint64_t Packets(mlx5dv_devx_obj* counters, uint32_t offset) {
    uint64_t packets = 0, bytes = 0;
    EXPECT_EQ(drsim_counter_query(counters, offset, &packets, &bytes), 0) << drsim_last_error();
    return packets;
  }
  // Sends `frame` from the wire; returns what reached qp_ (empty if nothing).
  std::vector<uint8_t> RoundTrip(const std::vector<uint8_t>& frame, uint32_t* tag = nullptr) {
    EXPECT_EQ(drsim_send(ctx_, -1, frame.data(), frame.size()), 0) << drsim_last_error();
    std::vector<uint8_t> got(2048);
    int n = drsim_recv_qp(qp_, got.data(), got.size(), tag);
    got.resize(n > 0 ? n : 0);
    return got;
  }

  MatchParams empty_;
  ibv_context* ctx_ = nullptr;
  ibv_qp* qp_ = nullptr;
  mlx5dv_dr_domain* rx_ = nullptr;
  mlx5dv_dr_table *root_ = nullptr, *t1_ = nullptr, *t2_ = nullptr;
  mlx5dv_dr_matcher *root_all_ = nullptr, *t1_all_ = nullptr;
  mlx5dv_dr_action *to_t1_ = nullptr, *to_qp_ = nullptr;
  mlx5dv_dr_rule* jump_ = nullptr;
  std::vector<ibv_qp*> qps_;
};

TEST_F(CApiTest, FlowMeterColoursAndModifyTakesABigEndianSelect) {
  std::vector<uint8_t> prm = tests::MeterPrm();
  mlx5dv_dr_flow_meter_attr attr{t2_, 1, 2, prm.size(), prm.data()};
  mlx5dv_dr_action* meter = Keep(mlx5dv_dr_action_create_flow_meter(&attr));
  Rule(t1_all_, MatchParams(), {meter});
  mlx5dv_devx_obj* counters = drsim_counter_alloc(ctx_, 2);
  Keep(counters);
  mlx5dv_dr_action* green = Keep(mlx5dv_dr_action_create_flow_counter(counters, 0));
  mlx5dv_dr_action* red = Keep(mlx5dv_dr_action_create_flow_counter(counters, 1));
  mlx5dv_dr_action* drop = Keep(mlx5dv_dr_action_create_drop());
  mlx5dv_dr_matcher* by_color =
      Keep(mlx5dv_dr_matcher_create(t2_, 0, 1 << 3, MatchBuilder().RegC(2, ~0u).Build()->get()));
  Rule(by_color, *MatchBuilder().RegC(2, 2).Build(), {green, drop});
  Rule(by_color, *MatchBuilder().RegC(2, 0).Build(), {red, drop});
  std::vector<uint8_t> f = Udp(1, 2, 1000);
  for (int i = 0; i < 10; ++i) ASSERT_EQ(drsim_send(ctx_, -1, f.data(), f.size()), 0);
  EXPECT_EQ(Packets(counters, 0), 3u);
  EXPECT_EQ(Packets(counters, 1), 7u);
  // A second later the committed bucket is full again.
  ASSERT_EQ(drsim_set_time_ns(ctx_, 1'000'000'000), 0);
  ASSERT_EQ(drsim_send(ctx_, -1, f.data(), f.size()), 0);
  EXPECT_EQ(Packets(counters, 0), 4u);
  // Inactive: everything green. The select is big-endian, as rdma-core's __be64 says.
  attr.active = 0;
  ASSERT_EQ(mlx5dv_dr_action_modify_flow_meter(meter, &attr, htobe64(sim::kMeterSelectActive)), 0)
      << drsim_last_error();
  for (int i = 0; i < 5; ++i) ASSERT_EQ(drsim_send(ctx_, -1, f.data(), f.size()), 0);
  EXPECT_EQ(Packets(counters, 0), 9u);
  EXPECT_EQ(mlx5dv_dr_action_modify_flow_meter(drop, &attr, htobe64(1)), EINVAL);
  attr.next_table = root_;
  errno = 0;
  EXPECT_EQ(mlx5dv_dr_action_create_flow_meter(&attr), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  EXPECT_EQ(mlx5dv_dr_action_create_flow_meter(nullptr), nullptr);
  EXPECT_EQ(errno, EINVAL);
}

TEST_F(CApiTest, AsoFlowMeterAndFirstHit) {
  mlx5dv_devx_obj* meters = drsim_aso_flow_meter_alloc(ctx_, 0);
  mlx5dv_devx_obj* hits = drsim_aso_first_hit_alloc(ctx_, 0);
  ASSERT_TRUE(meters && hits) << drsim_last_error();
  Keep(meters);
  Keep(hits);
  std::vector<uint8_t> prm = tests::MeterPrm();
  ASSERT_EQ(drsim_aso_flow_meter_configure(meters, 1, prm.data(), prm.size()), 0) << drsim_last_error();
  EXPECT_EQ(drsim_aso_flow_meter_configure(meters, 2, prm.data(), prm.size()), EINVAL);  // 2 meters
  EXPECT_EQ(drsim_aso_flow_meter_configure(hits, 0, prm.data(), prm.size()), EINVAL);
  mlx5dv_dr_action* meter =
      Keep(mlx5dv_dr_action_create_aso(rx_, meters, 1, MLX5DV_DR_ACTION_FLAGS_ASO_FLOW_METER_GREEN, 3));
  mlx5dv_dr_action* hit =
      Keep(mlx5dv_dr_action_create_aso(rx_, hits, 7, MLX5DV_DR_ACTION_FLAGS_ASO_FIRST_HIT_SET, 5));
  errno = 0;
  EXPECT_EQ(mlx5dv_dr_action_create_aso(rx_, meters, 1, MLX5DV_DR_ACTION_FLAGS_ASO_FLOW_METER_GREEN, 2),
            nullptr);
  EXPECT_EQ(errno, EINVAL);  // return_reg_c must be 1, 3 or 5
  EXPECT_EQ(mlx5dv_dr_action_modify_aso(hit, 7, MLX5DV_DR_ACTION_FLAGS_ASO_FIRST_HIT_SET, 4), EINVAL);
  mlx5dv_dr_action* jump2 = Keep(mlx5dv_dr_action_create_dest_table(t2_));
  Rule(t1_all_, MatchParams(), {hit, meter, jump2});
  // Table 2: reg_c_5 says whether the context had been hit before; tag it.
  mlx5dv_dr_matcher* by_hit =
      Keep(mlx5dv_dr_matcher_create(t2_, 0, 1 << 3, MatchBuilder().RegC(5, ~0u).Build()->get()));
  mlx5dv_dr_action* first = Keep(mlx5dv_dr_action_create_tag(1));
  mlx5dv_dr_action* again = Keep(mlx5dv_dr_action_create_tag(2));
  Rule(by_hit, *MatchBuilder().RegC(5, 0).Build(), {first, to_qp_});
  Rule(by_hit, *MatchBuilder().RegC(5, 1).Build(), {again, to_qp_});
  uint32_t tag = 0;
  EXPECT_FALSE(RoundTrip(Udp(1, 2), &tag).empty());
  EXPECT_EQ(tag, 1u);
  EXPECT_FALSE(RoundTrip(Udp(1, 2), &tag).empty());
  EXPECT_EQ(tag, 2u);
  // Only ASO connection tracking links across domains; unlinking anything else finds no link.
  EXPECT_EQ(mlx5dv_dr_aso_other_domain_link(meters, rx_, rx_, 0, 1), EOPNOTSUPP);
  EXPECT_EQ(mlx5dv_dr_aso_other_domain_unlink(meters, rx_), EINVAL);
  EXPECT_EQ(mlx5dv_devx_obj_destroy(meters), EBUSY);
}

// mlx5dv_dr_aso_other_domain_link: the PF's NIC_RX domain makes a CT action (initiator, reg_c_3); linked
// to the VF's NIC_TX domain as the responder's into reg_c_5, it tracks what the VF sends in the context the
// PF programmed.
TEST_F(CApiTest, AsoCtLinkedToAVfDomainTracksItsSegments) {
  mlx5dv_devx_obj* cts = drsim_aso_ct_alloc(ctx_, 1);  // 2 contexts
  mlx5dv_devx_obj* counters = drsim_counter_alloc(ctx_, 2);
  ASSERT_TRUE(cts && counters) << drsim_last_error();
  sim::CtContext c;
  c.original = {15, false, true, false, false, 1000, 1000 + 65535, 65535, 5000};
  c.reply = {15, false, true, false, false, 5000, 5000 + 65535, 65535, 1000};
  const auto prm = sim::SerializeCtContext(c);
  ASSERT_EQ(drsim_aso_ct_configure(cts, 0, prm.data(), prm.size()), 0) << drsim_last_error();
  mlx5dv_dr_action* ct =
      mlx5dv_dr_action_create_aso(rx_, cts, 0, MLX5DV_DR_ACTION_FLAGS_ASO_CT_DIRECTION_INITIATOR, 3);
  ASSERT_NE(ct, nullptr) << drsim_last_error();
  // The VF's NIC_TX: table 1 runs the CT action; in table 2 a VALID state in reg_c_5 counts in counter 0 and
  // goes on, anything else counts in counter 1 and drops.
  ibv_context* vf = drsim_vport_context(ctx_, 1);
  mlx5dv_dr_domain* tx = mlx5dv_dr_domain_create(vf, MLX5DV_DR_DOMAIN_TYPE_NIC_TX);
  mlx5dv_dr_table* root = mlx5dv_dr_table_create(tx, 0);
  mlx5dv_dr_table* t1 = mlx5dv_dr_table_create(tx, 1);
  mlx5dv_dr_table* t2 = mlx5dv_dr_table_create(tx, 2);
  ASSERT_TRUE(tx && root && t1 && t2) << drsim_last_error();
  mlx5dv_dr_action* to_t1 = mlx5dv_dr_action_create_dest_table(t1);
  mlx5dv_dr_action* to_t2 = mlx5dv_dr_action_create_dest_table(t2);
  mlx5dv_dr_action* valid = mlx5dv_dr_action_create_flow_counter(counters, 0);
  mlx5dv_dr_action* other = mlx5dv_dr_action_create_flow_counter(counters, 1);
  mlx5dv_dr_action* drop = mlx5dv_dr_action_create_drop();
  const sim::CtRegisterMatch is_valid = *sim::CtResultMatch(sim::kCtPktValid, sim::kCtPktValid);
  mlx5dv_dr_matcher* root_all = mlx5dv_dr_matcher_create(root, 0, 0, P(empty_));
  mlx5dv_dr_matcher* t1_all = mlx5dv_dr_matcher_create(t1, 0, 0, P(empty_));
  mlx5dv_dr_matcher* by_state =
      mlx5dv_dr_matcher_create(t2, 0, 1 << 3, MatchBuilder().RegC(5, is_valid.mask).Build()->get());
  mlx5dv_dr_matcher* t2_all = mlx5dv_dr_matcher_create(t2, 1, 0, P(empty_));
  auto rule = [&](mlx5dv_dr_matcher* m, MatchParams value, std::vector<mlx5dv_dr_action*> actions) {
    return mlx5dv_dr_rule_create(m, value.get(), actions.size(), actions.data());
  };
  mlx5dv_dr_rule* jump = rule(root_all, MatchParams(), {to_t1});
  mlx5dv_dr_rule* counted = rule(by_state, *MatchBuilder().RegC(5, is_valid.value).Build(), {valid});
  mlx5dv_dr_rule* dropped = rule(t2_all, MatchParams(), {other, drop});
  ASSERT_TRUE(jump && counted && dropped) << drsim_last_error();

  // Not linked: the VF's rule may not use the PF's action.
  errno = 0;
  EXPECT_EQ(rule(t1_all, MatchParams(), {ct, to_t2}), nullptr);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_NE(std::string(drsim_last_error()).find("its object is not linked to this one"), std::string::npos);
  // The link's checks, then the link.
  constexpr uint32_t kResp = MLX5DV_DR_ACTION_FLAGS_ASO_CT_DIRECTION_RESPONDER;
  EXPECT_EQ(mlx5dv_dr_aso_other_domain_link(counters, rx_, tx, kResp, 5), EOPNOTSUPP);
  EXPECT_EQ(mlx5dv_dr_aso_other_domain_link(cts, rx_, tx, 0, 5), EINVAL);
  EXPECT_EQ(mlx5dv_dr_aso_other_domain_link(cts, rx_, tx, 3, 5), EINVAL);
  EXPECT_EQ(mlx5dv_dr_aso_other_domain_link(cts, rx_, tx, kResp, 4), EINVAL);
  EXPECT_EQ(mlx5dv_dr_aso_other_domain_link(cts, nullptr, tx, kResp, 5), EINVAL);
  EXPECT_EQ(mlx5dv_dr_aso_other_domain_link(cts, rx_, nullptr, kResp, 5), EINVAL);
  EXPECT_EQ(mlx5dv_dr_aso_other_domain_unlink(cts, tx), EINVAL);  // not linked yet
  ASSERT_EQ(mlx5dv_dr_aso_other_domain_link(cts, rx_, tx, kResp, 5), 0) << drsim_last_error();
  EXPECT_EQ(mlx5dv_dr_aso_other_domain_link(cts, rx_, tx, kResp, 5), EEXIST);
  mlx5dv_dr_rule* tracked = rule(t1_all, MatchParams(), {ct, to_t2});
  ASSERT_NE(tracked, nullptr) << drsim_last_error();
  errno = 0;
  EXPECT_EQ(rule(t1_all, *MatchBuilder().Build(), {ct, to_t2}), nullptr);  // the context is taken
  EXPECT_EQ(errno, EBUSY);

  // The responder's next bytes are VALID; an ack of bytes the initiator never sent is INVALID.
  sim::FrameSpec f;
  f.protocol = sim::kIpProtoTcp;
  f.seq = 5000;
  f.ack = 1000;
  f.payload_len = 10;
  std::vector<uint8_t> good = sim::BuildFrame(f);
  f.ack = 9000;
  std::vector<uint8_t> bad = sim::BuildFrame(f);
  ASSERT_EQ(drsim_send(ctx_, 1, good.data(), good.size()), 0);
  ASSERT_EQ(drsim_send(ctx_, 1, bad.data(), bad.size()), 0);
  EXPECT_EQ(Packets(counters, 0), 1u);
  EXPECT_EQ(Packets(counters, 1), 1u);
  std::vector<uint8_t> back(64);
  ASSERT_EQ(drsim_aso_ct_query(cts, 0, back.data(), back.size()), 0);
  absl::StatusOr<sim::CtContext> now = sim::ParseCtContext(back);
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(now->reply.sent_end, 5010u);
  EXPECT_EQ(now->original.sent_end, 1000u);

  // While linked: the object, the domains and the link stay; unlink waits for the rule.
  EXPECT_EQ(mlx5dv_devx_obj_destroy(cts), EBUSY);
  EXPECT_EQ(mlx5dv_dr_aso_other_domain_unlink(cts, rx_), EINVAL);  // linked to tx, not rx_
  EXPECT_EQ(mlx5dv_dr_aso_other_domain_unlink(cts, tx), EBUSY);
  EXPECT_NE(std::string(drsim_last_error()).find("destroy them first"), std::string::npos);
  EXPECT_EQ(mlx5dv_dr_rule_destroy(tracked), 0);
  for (mlx5dv_dr_rule* r : {dropped, counted, jump}) EXPECT_EQ(mlx5dv_dr_rule_destroy(r), 0);
  for (mlx5dv_dr_matcher* m : {t2_all, by_state, t1_all, root_all})
    EXPECT_EQ(mlx5dv_dr_matcher_destroy(m), 0);
  for (mlx5dv_dr_action* a : {drop, other, valid, to_t2, to_t1, ct})
    EXPECT_EQ(mlx5dv_dr_action_destroy(a), 0);
  for (mlx5dv_dr_table* t : {t2, t1, root}) EXPECT_EQ(mlx5dv_dr_table_destroy(t), 0);
  EXPECT_EQ(mlx5dv_dr_domain_destroy(tx), EBUSY);
  EXPECT_EQ(mlx5dv_dr_aso_other_domain_unlink(cts, tx), 0) << drsim_last_error();
  EXPECT_EQ(mlx5dv_dr_domain_destroy(tx), 0);
  Keep(cts);
  Keep(counters);
}

TEST_F(CApiTest, FlowCounterOffsetMustLieInTheBulk) {
  mlx5dv_devx_obj* counters = drsim_counter_alloc(ctx_, 2);
  ASSERT_NE(counters, nullptr);
  Keep(counters);
  Keep(mlx5dv_dr_action_create_flow_counter(counters, 1));
  errno = 0;
  EXPECT_EQ(mlx5dv_dr_action_create_flow_counter(counters, 2), nullptr);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_NE(std::string(drsim_last_error()).find("offset 2"), std::string::npos) << drsim_last_error();
}

TEST_F(CApiTest, SamplerAndDestArrayAndTir) {
  mlx5dv_devx_obj* counters = drsim_counter_alloc(ctx_, 2);
  Keep(counters);
  mlx5dv_dr_action* sampled = Keep(mlx5dv_dr_action_create_flow_counter(counters, 0));
  mlx5dv_dr_action* sample_list[] = {sampled, to_qp_};
  mlx5dv_dr_flow_sampler_attr sattr{};
  sattr.sample_ratio = 4;
  sattr.default_next_table = t2_;
  sattr.num_sample_actions = 2;
  sattr.sample_actions = sample_list;
  mlx5dv_dr_action* sampler = Keep(mlx5dv_dr_action_create_flow_sampler(&sattr));
  Rule(t1_all_, MatchParams(), {sampler});

  // Table 2: a dest array to the QP and to an RSS TIR over two more QPs of the PF.
  ibv_qp* a = drsim_create_qp(ctx_, 0);
  ibv_qp* b = drsim_create_qp(ctx_, 0);
  qps_ = {a, b};
  ibv_qp* pair[] = {a, b};
  mlx5dv_devx_obj* tir = drsim_tir_create(
      ctx_, pair, 2,
      IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 | IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP,
      nullptr, 0);
  ASSERT_NE(tir, nullptr) << drsim_last_error();
  ibv_qp* three[] = {a, b, qp_};
  EXPECT_EQ(drsim_tir_create(ctx_, three, 3, 0, nullptr, 0), nullptr);  // not a power of two
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(drsim_destroy_qp(a), EBUSY);  // the TIR holds it
  mlx5dv_dr_action* rss = Keep(mlx5dv_dr_action_create_dest_devx_tir(tir));
  EXPECT_EQ(mlx5dv_dr_action_create_dest_devx_tir(counters), nullptr);
  EXPECT_EQ(errno, EINVAL);
  mlx5dv_dr_action_dest_attr d0{MLX5DV_DR_ACTION_DEST, {to_qp_}}, d1{MLX5DV_DR_ACTION_DEST, {rss}};
  mlx5dv_dr_action_dest_attr* dests[] = {&d0, &d1};
  mlx5dv_dr_action* both = Keep(mlx5dv_dr_action_create_dest_array(rx_, 2, dests));
  EXPECT_EQ(mlx5dv_dr_action_create_dest_array(rx_, 1, dests), nullptr);
  EXPECT_EQ(errno, EINVAL);
  mlx5dv_dr_matcher* t2_all = Keep(mlx5dv_dr_matcher_create(t2_, 0, 0, empty_.get()));
  Rule(t2_all, MatchParams(), {both});

  std::vector<uint8_t> got(256);
  int to_tir = 0;
  for (uint16_t i = 0; i < 8; ++i) {
    std::vector<uint8_t> f = Udp(1000 + 7 * i, 2);
    ASSERT_EQ(drsim_send(ctx_, -1, f.data(), f.size()), 0);
    for (ibv_qp* q : {a, b}) {
      while (drsim_recv_qp(q, got.data(), got.size(), nullptr) > 0) ++to_tir;
    }
  }
  EXPECT_EQ(to_tir, 8);  // every frame once through the TIR
  int at_qp = 0;
  while (drsim_recv_qp(qp_, got.data(), got.size(), nullptr) > 0) ++at_qp;
  EXPECT_EQ(at_qp, 8 + 2);  // the array's copies, and 1 in 4 sampled
  EXPECT_EQ(Packets(counters, 0), 2u);
  EXPECT_EQ(mlx5dv_devx_obj_destroy(tir), EBUSY);
  // After the action goes, the TIR can go; the test's teardown destroys the rest.
  DestroyLastRule();
  Forget(both);
  ASSERT_EQ(mlx5dv_dr_action_destroy(both), 0);
  Forget(rss);
  ASSERT_EQ(mlx5dv_dr_action_destroy(rss), 0);
  EXPECT_EQ(mlx5dv_devx_obj_destroy(tir), 0);
}

TEST_F(CApiTest, ModifyHeaderAndRootTableJumpsAndLayout) {
  const __be64 words[] = {hw::ModifySetWord(hw::ModifyField::kUdpDport, 0, 16, 4242)};
  mlx5dv_dr_action* rewrite =
      Keep(mlx5dv_dr_action_create_modify_header(rx_, 0, sizeof words, const_cast<__be64*>(words)));
  EXPECT_EQ(mlx5dv_dr_action_create_modify_header(rx_, 0, 7, const_cast<__be64*>(words)), nullptr);
  EXPECT_EQ(errno, EINVAL);
  // Table 1 rewrites the port and goes back into the root from priority 1, where port 4242 goes to the QP.
  mlx5dv_dr_action* back = Keep(mlx5dv_dr_action_create_dest_root_table(root_, 1));
  EXPECT_EQ(mlx5dv_dr_action_create_dest_root_table(t1_, 1), nullptr);
  EXPECT_EQ(errno, EINVAL);
  mlx5dv_dr_matcher* port = Keep(mlx5dv_dr_matcher_create(
      t1_, 0, 1, MatchBuilder().IpVersion(kOuter, 4).UdpDport(kOuter, 0xffff).Build()->get()));
  Rule(port, *MatchBuilder().IpVersion(kOuter, 4).UdpDport(kOuter, 53).Build(), {rewrite, back});
  mlx5dv_dr_matcher* root_port = Keep(mlx5dv_dr_matcher_create(
      root_, 1, 1, MatchBuilder().IpVersion(kOuter, 4).UdpDport(kOuter, 0xffff).Build()->get()));
  Rule(root_port, *MatchBuilder().IpVersion(kOuter, 4).UdpDport(kOuter, 4242).Build(), {to_qp_});
  std::vector<uint8_t> got = RoundTrip(Udp(1, 53));
  ASSERT_EQ(got.size(), Udp(1, 53).size());
  EXPECT_EQ(got[36] << 8 | got[37], 4242);

  mlx5dv_dr_matcher_layout layout{MLX5DV_DR_MATCHER_LAYOUT_NUM_RULE, 10};
  EXPECT_EQ(mlx5dv_dr_matcher_set_layout(port, &layout), 0) << drsim_last_error();
  EXPECT_EQ(mlx5dv_dr_matcher_set_layout(root_port, &layout), EOPNOTSUPP);  // root table
  EXPECT_EQ(mlx5dv_dr_matcher_set_layout(port, nullptr), EINVAL);
  EXPECT_EQ(mlx5dv_dr_domain_sync(rx_, MLX5DV_DR_DOMAIN_SYNC_FLAGS_SW | MLX5DV_DR_DOMAIN_SYNC_FLAGS_HW), 0);
  EXPECT_EQ(mlx5dv_dr_domain_sync(rx_, 1 << 5), EOPNOTSUPP);
  mlx5dv_dr_domain_set_reclaim_device_memory(rx_, true);
  // Duplicates: allowed by default, EEXIST once disallowed.
  mlx5dv_dr_domain_allow_duplicate_rules(rx_, false);
  MatchParams v53 = *MatchBuilder().IpVersion(kOuter, 4).UdpDport(kOuter, 53).Build();
  mlx5dv_dr_action* list[] = {rewrite, back};
  errno = 0;
  EXPECT_EQ(mlx5dv_dr_rule_create(port, v53.get(), 2, list), nullptr);
  EXPECT_EQ(errno, EEXIST);
  mlx5dv_dr_domain_allow_duplicate_rules(rx_, true);
  Rule(port, v53, {rewrite, back});
}

TEST_F(CApiTest, ReformatPushPopAndIbPortInTheFdb) {
  mlx5dv_dr_domain* fdb = mlx5dv_dr_domain_create(ctx_, MLX5DV_DR_DOMAIN_TYPE_FDB);
  ASSERT_NE(fdb, nullptr);
  std::vector<uint8_t> header(50, 0);  // ETH/IPv4/UDP/VXLAN, lengths filled by the device
  header[12] = 0x08;
  header[14] = 0x45;
  header[22] = 64;
  header[23] = 17;
  header[36] = 0x12;
  header[37] = 0xb5;  // 4789
  header[42] = 0x08;
  mlx5dv_dr_action* encap = mlx5dv_dr_action_create_packet_reformat(
      fdb, 0, MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TO_L2_TUNNEL, header.size(), header.data());
  ASSERT_NE(encap, nullptr) << drsim_last_error();
  EXPECT_EQ(mlx5dv_dr_action_create_packet_reformat(
                fdb, 0, MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TO_L2_TUNNEL, 10, nullptr),
            nullptr);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(
      mlx5dv_dr_action_create_packet_reformat(rx_, 0, MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TO_L2_TUNNEL,
                                              header.size(), header.data()),
      nullptr);
  EXPECT_EQ(errno, EINVAL);  // an encap on NIC_RX
  mlx5dv_dr_action* ib_port = mlx5dv_dr_action_create_dest_ib_port(fdb, 1);
  ASSERT_NE(ib_port, nullptr) << drsim_last_error();
  EXPECT_EQ(mlx5dv_dr_action_create_dest_ib_port(fdb, 0), nullptr);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(mlx5dv_dr_action_create_dest_ib_port(rx_, 1), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  mlx5dv_dr_action* pop = mlx5dv_dr_action_create_pop_vlan();
  mlx5dv_dr_action* wire = mlx5dv_dr_action_create_dest_vport(fdb, 0xffff);
  mlx5dv_dr_table* ft0 = mlx5dv_dr_table_create(fdb, 0);
  mlx5dv_dr_table* ft1 = mlx5dv_dr_table_create(fdb, 1);
  mlx5dv_dr_action* to_ft1 = mlx5dv_dr_action_create_dest_table(ft1);
  MatchParams source_mask = *MatchBuilder().SourcePort(0xffff).Build();
  mlx5dv_dr_matcher* vf0 = mlx5dv_dr_matcher_create(ft0, 0, 1 << 1, source_mask.get());
  mlx5dv_dr_matcher* vf1 = mlx5dv_dr_matcher_create(ft1, 0, 1 << 1, source_mask.get());
  ASSERT_TRUE(pop && wire && ft0 && ft1 && to_ft1 && vf0 && vf1);
  // The root FDB table takes the kernel's actions: not pop VLAN, not dest vport.
  MatchParams from_vf1 = *MatchBuilder().SourcePort(1).Build();
  mlx5dv_dr_action* root_list[] = {pop, encap, wire};
  ASSERT_EQ(mlx5dv_dr_rule_create(vf0, from_vf1.get(), 3, root_list), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  EXPECT_NE(std::string(drsim_last_error()).find("pop_vlan"), std::string::npos) << drsim_last_error();
  // Level 1: pop (a no-op on an untagged frame), VXLAN encap, the wire.
  mlx5dv_dr_action* jump_list[] = {to_ft1};
  mlx5dv_dr_rule* jump = mlx5dv_dr_rule_create(vf0, from_vf1.get(), 1, jump_list);
  mlx5dv_dr_action* out_list[] = {pop, encap, wire};
  mlx5dv_dr_rule* out = mlx5dv_dr_rule_create(vf1, from_vf1.get(), 3, out_list);
  ASSERT_TRUE(jump && out) << drsim_last_error();
  std::vector<uint8_t> f = Udp(5, 6, 10), got(256);
  ASSERT_EQ(drsim_send(ctx_, 1, f.data(), f.size()), 0);
  ASSERT_EQ(drsim_recv_port(ctx_, -1, got.data(), got.size()), static_cast<int>(f.size() + 50));
  EXPECT_EQ(got[16] << 8 | got[17], f.size() + 50 - 14);  // outer IPv4 total length filled in
  EXPECT_TRUE(std::equal(f.begin(), f.end(), got.begin() + 50));
  EXPECT_EQ(mlx5dv_dr_rule_destroy(out), 0);
  EXPECT_EQ(mlx5dv_dr_rule_destroy(jump), 0);
  EXPECT_EQ(mlx5dv_dr_matcher_destroy(vf1), 0);
  EXPECT_EQ(mlx5dv_dr_matcher_destroy(vf0), 0);
  for (mlx5dv_dr_action* a : {encap, ib_port, pop, wire, to_ft1}) EXPECT_EQ(mlx5dv_dr_action_destroy(a), 0);
  EXPECT_EQ(mlx5dv_dr_table_destroy(ft1), 0);
  EXPECT_EQ(mlx5dv_dr_table_destroy(ft0), 0);
  EXPECT_EQ(mlx5dv_dr_domain_destroy(fdb), 0);
}

TEST_F(CApiTest, ObjectsOfAnotherNicOrKindAreRefused) {
  ibv_context* other = drsim_open(0);
  ASSERT_NE(other, nullptr);
  ibv_qp* other_qp = drsim_create_qp(other, 0);
  mlx5dv_dr_action* foreign = mlx5dv_dr_action_create_dest_ibv_qp(other_qp);
  ASSERT_NE(foreign, nullptr);
  mlx5dv_dr_action* list[] = {foreign};
  errno = 0;
  EXPECT_EQ(mlx5dv_dr_rule_create(t1_all_, empty_.get(), 1, list), nullptr);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_NE(std::string(drsim_last_error()).find("actions[0] belongs to another software NIC"),
            std::string::npos);
  // A device-free action (drop) is accepted by any NIC.
  mlx5dv_dr_action* drop = Keep(mlx5dv_dr_action_create_drop());
  mlx5dv_dr_action* drop_list[] = {drop};
  Rule(t1_all_, MatchParams(), {drop});
  EXPECT_EQ(mlx5dv_dr_rule_create(t1_all_, nullptr, 1, drop_list), nullptr);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(mlx5dv_dr_rule_create(t1_all_, empty_.get(), 1, nullptr), nullptr);
  EXPECT_EQ(errno, EINVAL);
  // A counter bulk is not a TIR, a QP of the other NIC is not a TIR member here.
  ibv_qp* mixed[] = {qp_, other_qp};
  EXPECT_EQ(drsim_tir_create(ctx_, mixed, 2, 0, nullptr, 0), nullptr);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(drsim_close(other), EBUSY);
  EXPECT_EQ(mlx5dv_dr_action_destroy(foreign), 0);
  EXPECT_EQ(drsim_destroy_qp(other_qp), 0);
  EXPECT_EQ(drsim_close(other), 0);
  // Receiving into a NULL buffer, or from a QP that is not one.
  std::vector<uint8_t> f = Udp(1, 2);
  EXPECT_EQ(drsim_recv_qp(reinterpret_cast<ibv_qp*>(drop), nullptr, 0, nullptr), -EINVAL);
  EXPECT_EQ(drsim_recv_port(ctx_, 5, nullptr, 0), -EINVAL);
  EXPECT_EQ(drsim_send(ctx_, -1, f.data(), 13), EINVAL);
  // An object of another kind is refused here, never handed to libmlx5 (which would read it as its own).
  EXPECT_EQ(mlx5dv_dr_matcher_destroy(reinterpret_cast<mlx5dv_dr_matcher*>(drop)), EINVAL);
  EXPECT_NE(std::string(drsim_last_error()).find("matcher is a software-NIC object of another kind"),
            std::string::npos);
  errno = 0;
  EXPECT_EQ(mlx5dv_dr_rule_create(reinterpret_cast<mlx5dv_dr_matcher*>(drop), empty_.get(), 1, drop_list),
            nullptr);
  EXPECT_EQ(errno, EINVAL);
}

}  // namespace
}  // namespace drsim
