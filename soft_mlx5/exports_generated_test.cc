// The generated exports on the software device's objects (contexts, QPs and DEVX objects of drsim_open):
// each fails with EOPNOTSUPP in its own convention and names itself in drsim_last_error(); calls that
// carry no software object reach rdma-core's own definitions.
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "capi/drsim.h"
#include "gtest/gtest.h"

namespace {

class GeneratedExportsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_ = drsim_open(0);
    ASSERT_NE(ctx_, nullptr) << drsim_last_error();
    qp_ = drsim_create_qp(ctx_, 0);
    ASSERT_NE(qp_, nullptr) << drsim_last_error();
    counters_ = drsim_counter_alloc(ctx_, 1);
    ASSERT_NE(counters_, nullptr) << drsim_last_error();
    errno = 0;
  }
  void TearDown() override {
    EXPECT_EQ(mlx5dv_devx_obj_destroy(counters_), 0) << drsim_last_error();
    EXPECT_EQ(drsim_destroy_qp(qp_), 0) << drsim_last_error();
    EXPECT_EQ(drsim_close(ctx_), 0) << drsim_last_error();
  }

  // Whether the last failure was `function` refusing the software device.
  static bool RefusedBySoftwareDevice(const std::string& function) {
    return std::string(drsim_last_error()).find(function + " is not supported by the software mlx5 device") !=
           std::string::npos;
  }

  ibv_context* ctx_ = nullptr;
  ibv_qp* qp_ = nullptr;
  mlx5dv_devx_obj* counters_ = nullptr;
};

TEST_F(GeneratedExportsTest, PointerResultsAreNullWithErrno) {
  EXPECT_EQ(mlx5dv_devx_alloc_uar(ctx_, 0), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  EXPECT_TRUE(RefusedBySoftwareDevice("mlx5dv_devx_alloc_uar")) << drsim_last_error();

  errno = 0;
  mlx5dv_sched_attr attr = {};
  EXPECT_EQ(mlx5dv_sched_node_create(ctx_, &attr), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  EXPECT_TRUE(RefusedBySoftwareDevice("mlx5dv_sched_node_create")) << drsim_last_error();
}

TEST_F(GeneratedExportsTest, IntResultsFollowEachExportsConvention) {
  uint32_t eqn = 0;
  EXPECT_EQ(mlx5dv_devx_query_eqn(ctx_, 0, &eqn), EOPNOTSUPP);  // a positive errno
  EXPECT_TRUE(RefusedBySoftwareDevice("mlx5dv_devx_query_eqn")) << drsim_last_error();

  errno = 0;
  EXPECT_EQ(ibv_get_pkey_index(ctx_, 1, 0xffff), -1);  // -1 and errno
  EXPECT_EQ(errno, EOPNOTSUPP);

  ibv_ah_attr ah = {};
  uint8_t mac[6];
  uint16_t vid;
  EXPECT_EQ(ibv_resolve_eth_l2_from_gid(ctx_, &ah, mac, &vid), -EOPNOTSUPP);  // a negative errno

  EXPECT_EQ(ibv_query_qp_data_in_order(qp_, IBV_WR_SEND, 0), 0);  // "not guaranteed in order"
  EXPECT_TRUE(RefusedBySoftwareDevice("ibv_query_qp_data_in_order")) << drsim_last_error();

  uint8_t in[16] = {}, out[16] = {};
  EXPECT_EQ(mlx5dv_devx_qp_query(qp_, in, sizeof in, out, sizeof out), EOPNOTSUPP);
  EXPECT_TRUE(RefusedBySoftwareDevice("mlx5dv_devx_qp_query")) << drsim_last_error();
  EXPECT_EQ(mlx5dv_vfio_get_events_fd(ctx_), -1);  // a file descriptor
  EXPECT_EQ(errno, EOPNOTSUPP);
}

TEST_F(GeneratedExportsTest, ObjectsBeyondTheFirstArgumentAreChecked) {
  // A DEVX object of the software device as the second argument: refused, not handed to rdma-core
  // (the event channel is never read).
  uint16_t events[1] = {0};
  EXPECT_EQ(mlx5dv_devx_subscribe_devx_event(nullptr, counters_, sizeof events, events, 0), EOPNOTSUPP);
  EXPECT_TRUE(RefusedBySoftwareDevice("mlx5dv_devx_subscribe_devx_event")) << drsim_last_error();

  // mlx5dv_create_mkey reaches its device through attr->pd: any registered object there is refused.
  mlx5dv_mkey_init_attr attr = {};
  attr.pd = reinterpret_cast<ibv_pd*>(ctx_);
  errno = 0;
  EXPECT_EQ(mlx5dv_create_mkey(&attr), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  EXPECT_TRUE(RefusedBySoftwareDevice("mlx5dv_create_mkey")) << drsim_last_error();
}

TEST_F(GeneratedExportsTest, VoidExportsRecordTheFailure) {
  errno = 0;
  mlx5dv_devx_destroy_cmd_comp(reinterpret_cast<mlx5dv_devx_cmd_comp*>(counters_));
  EXPECT_EQ(errno, EOPNOTSUPP);
  EXPECT_TRUE(RefusedBySoftwareDevice("mlx5dv_devx_destroy_cmd_comp")) << drsim_last_error();
}

TEST(GeneratedExportsPassThroughTest, CallsWithoutSoftwareObjectsReachRdmaCore) {
  // rdma-core's own answers, through RealSymbol (enums forwarded as raw integers).
  EXPECT_STREQ(ibv_wc_status_str(IBV_WC_SUCCESS), "success");
  EXPECT_STREQ(ibv_node_type_str(IBV_NODE_CA), "InfiniBand channel adapter");
  EXPECT_EQ(ibv_rate_to_mult(IBV_RATE_10_GBPS), 4);
  EXPECT_EQ(mult_to_ibv_rate(4), IBV_RATE_10_GBPS);
  EXPECT_EQ(ibv_rate_to_mbps(IBV_RATE_100_GBPS), 103125);  // 4x EDR: 25.78125 Gb/s a lane
}

}  // namespace
