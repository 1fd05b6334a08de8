// ASO connection tracking through DevX on the software mlx5 device: CREATE_GENERAL_OBJECT of
// conn_track_offload (0x31), MODIFY to program a context, an aso ct action on it, traffic, QUERY back —
// and the same context through the C API (drsim_aso_ct_query).
#include <infiniband/mlx5dv.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "capi/drsim.h"
#include "gtest/gtest.h"
#include "hw/byte_order.h"
#include "sim/conntrack.h"
#include "sim/conntrack_prm.h"
#include "sim/frame_builder.h"

namespace drsim {
namespace {

using Bytes = std::vector<uint8_t>;

// general_obj_in_cmd_hdr (opcode, obj_type, obj_id, obj_offset) and 128 object bytes.
Bytes GeneralIn(uint16_t opcode, uint32_t id, uint32_t offset) {
  Bytes in(144, 0);
  hw::StoreBe16(in.data(), opcode);
  hw::StoreBe16(in.data() + 6, 0x31);
  hw::StoreBe32(in.data() + 8, id);
  hw::StoreBe32(in.data() + 12, offset);
  return in;
}

class DevxCtTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_ = drsim_open(0);
    ASSERT_NE(ctx_, nullptr);
  }
  void TearDown() override { EXPECT_EQ(drsim_close(ctx_), 0) << drsim_last_error(); }
  ibv_context* ctx_ = nullptr;
};

TEST_F(DevxCtTest, ProgramTrackAndQueryAContext) {
  Bytes create = GeneralIn(0xa00, 0, 0), out(16, 0);
  create[12] = 1;  // log_obj_range: 2 contexts
  mlx5dv_devx_obj* cts = mlx5dv_devx_obj_create(ctx_, create.data(), create.size(), out.data(), out.size());
  ASSERT_NE(cts, nullptr) << drsim_last_error();
  const uint32_t id = hw::LoadBe32(out.data() + 8);

  // A fresh context is unprogrammed: valid 0.
  Bytes q(144);
  ASSERT_EQ(mlx5dv_devx_obj_query(cts, GeneralIn(0xa02, id, 1).data(), 144, q.data(), q.size()), 0)
      << drsim_last_error();
  EXPECT_FALSE(sim::ParseCtContext(absl::MakeConstSpan(q).subspan(80))->valid);

  // MODIFY programs context 1: ESTABLISHED, windows 65535, everything acknowledged.
  sim::CtContext c;
  c.original = {15, false, true, false, false, 1000, 1000 + 65535, 65535, 5000};
  c.reply = {15, false, true, false, false, 5000, 5000 + 65535, 65535, 1000};
  Bytes modify = GeneralIn(0xa01, id, 1);
  hw::StoreBe32(modify.data() + 20, 1);  // modify_field_select: the context
  const auto prm = sim::SerializeCtContext(c);
  std::memcpy(modify.data() + 80, prm.data(), prm.size());
  Bytes mout(16);
  ASSERT_EQ(mlx5dv_devx_obj_modify(cts, modify.data(), modify.size(), mout.data(), mout.size()), 0)
      << drsim_last_error();

  // An aso ct action (initiator) on context 1 behind the root; 100 bytes from the initiator.
  mlx5dv_dr_domain* rx = mlx5dv_dr_domain_create(ctx_, MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
  mlx5dv_dr_table* root = mlx5dv_dr_table_create(rx, 0);
  mlx5dv_dr_table* t1 = mlx5dv_dr_table_create(rx, 1);
  mlx5dv_dr_action* ct =
      mlx5dv_dr_action_create_aso(rx, cts, 1, MLX5DV_DR_ACTION_FLAGS_ASO_CT_DIRECTION_INITIATOR, 3);
  ASSERT_NE(ct, nullptr) << drsim_last_error();
  mlx5dv_dr_action* to_t1 = mlx5dv_dr_action_create_dest_table(t1);
  mlx5dv_dr_table* t2 = mlx5dv_dr_table_create(rx, 2);  // empty: the packet then takes the default
  mlx5dv_dr_action* to_t2 = mlx5dv_dr_action_create_dest_table(t2);  // (rdma-core: no drop after ASO on RX)
  mlx5dv_flow_match_parameters* none =
      static_cast<mlx5dv_flow_match_parameters*>(calloc(1, sizeof(mlx5dv_flow_match_parameters) + 448));
  none->match_sz = 448;  // the whole fte_match_param, all zero
  mlx5dv_dr_matcher* root_all = mlx5dv_dr_matcher_create(root, 0, 0, none);
  mlx5dv_dr_matcher* t1_all = mlx5dv_dr_matcher_create(t1, 0, 0, none);
  mlx5dv_dr_action* root_actions[] = {to_t1};
  mlx5dv_dr_action* t1_actions[] = {ct, to_t2};
  mlx5dv_dr_rule* r0 = mlx5dv_dr_rule_create(root_all, none, 1, root_actions);
  mlx5dv_dr_rule* r1 = mlx5dv_dr_rule_create(t1_all, none, 2, t1_actions);
  ASSERT_TRUE(r0 && r1) << drsim_last_error();
  sim::FrameSpec f;
  f.protocol = sim::kIpProtoTcp;
  f.seq = 1000;
  f.ack = 5000;
  f.payload_len = 100;
  const Bytes frame = sim::BuildFrame(f);
  ASSERT_EQ(drsim_send(ctx_, -1, frame.data(), frame.size()), 0) << drsim_last_error();

  // QUERY shows the tracked context; the C API reads the same bytes.
  ASSERT_EQ(mlx5dv_devx_obj_query(cts, GeneralIn(0xa02, id, 1).data(), 144, q.data(), q.size()), 0);
  absl::StatusOr<sim::CtContext> got = sim::ParseCtContext(absl::MakeConstSpan(q).subspan(80));
  ASSERT_TRUE(got.ok());
  sim::CtContext want = c;
  const sim::CtSegment s{1000, 5000, 65535, 0x10, 100};
  EXPECT_EQ(sim::TrackCtSegment(want, true, &s), sim::kCtPktValid);
  EXPECT_EQ(got->original.sent_end, 1100u);
  EXPECT_TRUE(*got == want) << sim::DescribeCtContext(*got);
  Bytes via_c(64);
  ASSERT_EQ(drsim_aso_ct_query(cts, 1, via_c.data(), via_c.size()), 0) << drsim_last_error();
  EXPECT_EQ(via_c, Bytes(q.begin() + 80, q.end()));

  // Rejections: other select bits, state 7, a line past the object, a short output, a short input.
  Bytes bad = modify;
  hw::StoreBe32(bad.data() + 20, 2);
  EXPECT_EQ(mlx5dv_devx_obj_modify(cts, bad.data(), bad.size(), mout.data(), mout.size()), EREMOTEIO);
  EXPECT_NE(std::string(drsim_last_error()).find("modify_field_select 0x2"), std::string::npos);
  bad = modify;
  bad[140] = 0xf0;  // valid, state 7
  EXPECT_EQ(mlx5dv_devx_obj_modify(cts, bad.data(), bad.size(), mout.data(), mout.size()), EREMOTEIO);
  EXPECT_NE(std::string(drsim_last_error()).find("conn_track_aso.state 7"), std::string::npos);
  EXPECT_EQ(mlx5dv_devx_obj_query(cts, GeneralIn(0xa02, id, 2).data(), 144, q.data(), q.size()), EREMOTEIO);
  EXPECT_NE(std::string(drsim_last_error()).find("obj_offset 2"), std::string::npos);
  EXPECT_EQ(mlx5dv_devx_obj_query(cts, GeneralIn(0xa02, id, 0).data(), 144, q.data(), 100), EINVAL);
  EXPECT_EQ(drsim_aso_ct_configure(cts, 0, prm.data(), 63), EINVAL);
  EXPECT_NE(std::string(drsim_last_error()).find("63 bytes"), std::string::npos);
  EXPECT_EQ(drsim_aso_ct_query(cts, 0, via_c.data(), 10), EINVAL);
  EXPECT_EQ(drsim_aso_ct_query(cts, 2, via_c.data(), 64), EINVAL);
  EXPECT_EQ(mlx5dv_devx_obj_destroy(cts), EBUSY);  // the aso action uses it

  EXPECT_EQ(mlx5dv_dr_rule_destroy(r1), 0);
  EXPECT_EQ(mlx5dv_dr_rule_destroy(r0), 0);
  EXPECT_EQ(mlx5dv_dr_matcher_destroy(t1_all), 0);
  EXPECT_EQ(mlx5dv_dr_matcher_destroy(root_all), 0);
  for (mlx5dv_dr_action* a : {ct, to_t1, to_t2}) EXPECT_EQ(mlx5dv_dr_action_destroy(a), 0);
  EXPECT_EQ(mlx5dv_dr_table_destroy(t2), 0);
  EXPECT_EQ(mlx5dv_dr_table_destroy(t1), 0);
  EXPECT_EQ(mlx5dv_dr_table_destroy(root), 0);
  EXPECT_EQ(mlx5dv_dr_domain_destroy(rx), 0);
  EXPECT_EQ(mlx5dv_devx_obj_destroy(cts), 0);
  free(none);
}

TEST_F(DevxCtTest, CApiMakesProgramsAndQueriesContexts) {
  mlx5dv_devx_obj* cts = drsim_aso_ct_alloc(ctx_, 0);
  ASSERT_NE(cts, nullptr) << drsim_last_error();
  sim::CtContext c;
  c.state = sim::CtState::kFinWait;
  c.original.close_initiated = true;
  const auto prm = sim::SerializeCtContext(c);
  ASSERT_EQ(drsim_aso_ct_configure(cts, 0, prm.data(), prm.size()), 0) << drsim_last_error();
  Bytes back(64);
  ASSERT_EQ(drsim_aso_ct_query(cts, 0, back.data(), back.size()), 0);
  EXPECT_EQ(back, Bytes(prm.begin(), prm.end()));
  EXPECT_EQ(drsim_aso_ct_configure(cts, 1, prm.data(), prm.size()), EINVAL);
  EXPECT_NE(std::string(drsim_last_error()).find("offset 1"), std::string::npos);
  EXPECT_EQ(drsim_aso_ct_configure(cts, 0, nullptr, 64), EINVAL);
  mlx5dv_devx_obj* hits = drsim_aso_first_hit_alloc(ctx_, 0);
  EXPECT_EQ(drsim_aso_ct_configure(hits, 0, prm.data(), prm.size()), EINVAL);
  EXPECT_STREQ(drsim_last_error(), "drsim_aso_ct_configure: not an ASO CT object (drsim_aso_ct_alloc)");
  EXPECT_EQ(drsim_aso_ct_alloc(ctx_, 17), nullptr);
  // The aso action takes the CT object with one direction only.
  mlx5dv_dr_domain* rx = mlx5dv_dr_domain_create(ctx_, MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
  errno = 0;
  EXPECT_EQ(mlx5dv_dr_action_create_aso(rx, cts, 0, 3, 1), nullptr);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_NE(std::string(drsim_last_error()).find("exactly one direction"), std::string::npos);
  EXPECT_EQ(mlx5dv_dr_domain_destroy(rx), 0);
  EXPECT_EQ(mlx5dv_devx_obj_destroy(hits), 0);
  EXPECT_EQ(mlx5dv_devx_obj_destroy(cts), 0);
}

}  // namespace
}  // namespace drsim
