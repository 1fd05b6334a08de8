// The software mlx5 device through libibverbs' own API, as a program for a ConnectX calls it: the device
// list, contexts, PDs, MRs, CQs, raw-packet QPs, WQs and RSS, and frames sent with ibv_post_send that the
// loopback wire brings back to posted receives. //soft_mlx5:device is linked in, so its definitions of
// the ibv_* exports are the ones called.
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "capi/drsim.h"
#include "gtest/gtest.h"
#include "hw/match_params.h"
#include "soft_mlx5/devx_test_fixture.h"
#include "tests/flow_meter.h"
#include "tests/kept_dr_objects.h"
#include "tests/udp_frame.h"

namespace drsim {
namespace {

using hw::kOuter;
using hw::MatchBuilder;
using hw::MatchParams;

constexpr size_t kSlot = 2048;

MatchParams UdpDportMask() {
  MatchBuilder b;
  b.IpVersion(kOuter, 4).SetAllOnes(hw::Field::kOuterIpProtocol).SetAllOnes(hw::Field::kOuterUdpDport);
  return *b.Build();
}
MatchParams UdpDport(uint16_t port) {
  MatchBuilder b;
  b.IpVersion(kOuter, 4).Set(hw::Field::kOuterIpProtocol, 17).Set(hw::Field::kOuterUdpDport, port);
  return *b.Build();
}

class DeviceTest : public ::testing::Test, protected tests::KeptDrObjects {
 protected:
  void SetUp() override {
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    ASSERT_NE(list, nullptr);
    ASSERT_GE(n, 1);
    device_ = list[0];
    ASSERT_STREQ(ibv_get_device_name(device_), "mlx5_0");
    ibv_free_device_list(list);
    ctx_ = ibv_open_device(device_);
    ASSERT_NE(ctx_, nullptr) << drsim_last_error();
    pd_ = ibv_alloc_pd(ctx_);
    ASSERT_NE(pd_, nullptr);
    buf_.assign(16 * kSlot, 0);
    mr_ = ibv_reg_mr(pd_, buf_.data(), buf_.size(), IBV_ACCESS_LOCAL_WRITE);
    ASSERT_NE(mr_, nullptr);
    ibv_cq_init_attr_ex cq_attr{};
    cq_attr.cqe = 64;
    cq_attr.wc_flags = IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_FLOW_TAG | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
    cq_ = ibv_create_cq_ex(ctx_, &cq_attr);
    ASSERT_NE(cq_, nullptr) << drsim_last_error();
    sender_ = RawQp();
    receiver_ = RawQp();
    rx_ = mlx5dv_dr_domain_create(ctx_, MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
    ASSERT_NE(rx_, nullptr) << drsim_last_error();
    root_ = Keep(mlx5dv_dr_table_create(rx_, 0));
    ASSERT_NE(root_, nullptr);
    MatchParams mask = UdpDportMask();
    matcher_ = Keep(mlx5dv_dr_matcher_create(root_, 0, mask.criteria(), mask.get()));
    ASSERT_NE(matcher_, nullptr);
  }

  void TearDown() override {
    DestroyDrObjects();
    EXPECT_EQ(mlx5dv_dr_domain_destroy(rx_), 0);
    for (ibv_qp* q : qps_) EXPECT_EQ(ibv_destroy_qp(q), 0) << drsim_last_error();
    EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq_)), 0) << drsim_last_error();
    EXPECT_EQ(ibv_dereg_mr(mr_), 0);
    EXPECT_EQ(ibv_dealloc_pd(pd_), 0);
    EXPECT_EQ(ibv_close_device(ctx_), 0);
  }

  ibv_qp* RawQp() {
    ibv_qp_init_attr attr{};
    attr.send_cq = attr.recv_cq = ibv_cq_ex_to_cq(cq_);
    attr.cap.max_send_wr = 16;
    attr.cap.max_recv_wr = 16;
    attr.cap.max_send_sge = 1;
    attr.cap.max_recv_sge = 1;
    attr.qp_type = IBV_QPT_RAW_PACKET;
    ibv_qp* qp = ibv_create_qp(pd_, &attr);
    EXPECT_NE(qp, nullptr) << drsim_last_error();
    if (qp == nullptr) return nullptr;
    qps_.push_back(qp);
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    EXPECT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PORT), 0);
    a.qp_state = IBV_QPS_RTR;
    EXPECT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
    a.qp_state = IBV_QPS_RTS;
    EXPECT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
    return qp;
  }

  // Steers UDP frames to `port` into `qp`, tagged `tag` when not 0.
  void Steer(uint16_t port, ibv_qp* qp, uint32_t tag = 0) {
    std::vector<mlx5dv_dr_action*> list;
    if (tag != 0) list.push_back(Keep(mlx5dv_dr_action_create_tag(tag)));
    list.push_back(Keep(mlx5dv_dr_action_create_dest_ibv_qp(qp)));
    ASSERT_NE(Rule(matcher_, UdpDport(port), list), nullptr);
  }

  int PostRecv(ibv_qp* qp, size_t slot, uint32_t length = kSlot, uint32_t lkey = 0) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(buf_.data() + slot * kSlot), length, lkey ? lkey : mr_->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = 100 + slot;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    return ibv_post_recv(qp, &wr, &bad);
  }

  int Send(ibv_qp* qp, const std::vector<uint8_t>& frame, uint64_t wr_id = 1) {
    std::memcpy(buf_.data() + 15 * kSlot, frame.data(), frame.size());
    ibv_sge sge{reinterpret_cast<uintptr_t>(buf_.data() + 15 * kSlot), static_cast<uint32_t>(frame.size()),
                mr_->lkey};
    ibv_send_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* bad = nullptr;
    return ibv_post_send(qp, &wr, &bad);
  }

  struct Seen {
    uint64_t wr_id;
    ibv_wc_status status;
    ibv_wc_opcode opcode;
    uint32_t byte_len, qp_num, flow_tag;
    uint64_t timestamp;
  };
  std::vector<Seen> Poll() {
    std::vector<Seen> seen;
    ibv_poll_cq_attr attr{};
    if (ibv_start_poll(cq_, &attr) != 0) return seen;
    do {
      seen.push_back({cq_->wr_id, cq_->status, ibv_wc_read_opcode(cq_), ibv_wc_read_byte_len(cq_),
                      ibv_wc_read_qp_num(cq_), ibv_wc_read_flow_tag(cq_), ibv_wc_read_completion_ts(cq_)});
    } while (ibv_next_poll(cq_) == 0);
    ibv_end_poll(cq_);
    return seen;
  }

  ibv_device* device_ = nullptr;
  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  std::vector<uint8_t> buf_;
  ibv_mr* mr_ = nullptr;
  ibv_cq_ex* cq_ = nullptr;
  ibv_qp* sender_ = nullptr;
  ibv_qp* receiver_ = nullptr;
  std::vector<ibv_qp*> qps_;
  mlx5dv_dr_domain* rx_ = nullptr;
  mlx5dv_dr_table* root_ = nullptr;
  mlx5dv_dr_matcher* matcher_ = nullptr;
};

TEST_F(DeviceTest, DescribesAConnectX6Dx) {
  ibv_device_attr attr;
  ASSERT_EQ(ibv_query_device(ctx_, &attr), 0);
  EXPECT_EQ(attr.vendor_id, 0x02c9u);
  EXPECT_EQ(attr.vendor_part_id, 0x101du);
  EXPECT_EQ(attr.phys_port_cnt, 1);
  ibv_port_attr port;
  ASSERT_EQ(ibv_query_port(ctx_, 1, &port), 0);
  EXPECT_EQ(port.state, IBV_PORT_ACTIVE);
  EXPECT_EQ(port.link_layer, IBV_LINK_LAYER_ETHERNET);
  EXPECT_EQ(ibv_query_port(ctx_, 2, &port), EINVAL);
  EXPECT_TRUE(mlx5dv_is_supported(device_));
  ibv_gid_entry gid;
  EXPECT_EQ(ibv_query_gid_ex(ctx_, 1, 0, &gid, 0), 0);
  EXPECT_EQ(gid.gid.raw[0], 0xfe);
  EXPECT_EQ(ibv_query_gid_ex(ctx_, 1, 5, &gid, 0), ENODATA);
}

TEST_F(DeviceTest, FrameSentComesBackThroughTheLoopbackWireToAPostedReceive) {
  Steer(4791, receiver_, 0xabc);
  ASSERT_EQ(PostRecv(receiver_, 0), 0);
  const std::vector<uint8_t> frame = tests::UdpFrame(1000, 4791, 100);
  ASSERT_EQ(Send(sender_, frame, 7), 0) << drsim_last_error();
  std::vector<Seen> seen = Poll();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].opcode, IBV_WC_SEND);
  EXPECT_EQ(seen[0].wr_id, 7u);
  EXPECT_EQ(seen[0].qp_num, sender_->qp_num);
  EXPECT_EQ(seen[1].opcode, IBV_WC_RECV);
  EXPECT_EQ(seen[1].status, IBV_WC_SUCCESS);
  EXPECT_EQ(seen[1].wr_id, 100u);
  EXPECT_EQ(seen[1].qp_num, receiver_->qp_num);
  EXPECT_EQ(seen[1].byte_len, frame.size());
  EXPECT_EQ(seen[1].flow_tag, 0xabcu);
  EXPECT_GT(seen[0].timestamp, 0u);
  EXPECT_GE(seen[1].timestamp, seen[0].timestamp);  // the NIC's clock, for sends and receives alike
  EXPECT_EQ(0, std::memcmp(buf_.data(), frame.data(), frame.size()));
}

// A QP that a dest_ibv_qp action still targets cannot be destroyed, and keeps taking its frames after the
// refused destroy.
TEST_F(DeviceTest, QpARuleTargetsRefusesDestroyAndStillReceives) {
  Steer(4791, receiver_);
  EXPECT_EQ(ibv_destroy_qp(receiver_), EBUSY);
  ASSERT_EQ(PostRecv(receiver_, 0), 0) << drsim_last_error();
  const std::vector<uint8_t> frame = tests::UdpFrame(1000, 4791, 64);
  ASSERT_EQ(Send(sender_, frame, 7), 0) << drsim_last_error();
  std::vector<Seen> seen = Poll();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1].opcode, IBV_WC_RECV);
  EXPECT_EQ(seen[1].status, IBV_WC_SUCCESS);
  EXPECT_EQ(seen[1].qp_num, receiver_->qp_num);
  EXPECT_EQ(seen[1].byte_len, frame.size());
  EXPECT_EQ(0, std::memcmp(buf_.data(), frame.data(), frame.size()));
}

// Under the device the NIC's clock follows CLOCK_MONOTONIC, so a meter colours frames at the rate the
// program really sends them, as on a ConnectX: a burst drains the committed bucket (the frames past it are
// red), and after a pause long enough to refill it the same burst is green as far again. (With the clock
// standing still, nothing after the first burst would be green.) The ASO meter object is made by DevX
// CREATE_GENERAL_OBJECT with the PRM's meter parameters, as a program without ASO WQEs does.
TEST_F(DeviceTest, AsoMeterColoursAtTheRateTheProgramSends) {
  sim::MeterParams slow = tests::TestFlowMeter();  // a 4 KiB committed burst ...
  slow.cir_exponent = 16;                          // ... refilled at 10^9 / 2^16 = 15259 bytes/s
  const std::vector<uint8_t> prm = tests::MeterPrm(slow);
  devx_testing::Bytes in = devx_testing::GeneralObjectIn(0xa00, 0x24), out(16);
  std::copy(prm.begin(), prm.end(), in.begin() + 80);
  mlx5dv_devx_obj* meter = mlx5dv_devx_obj_create(ctx_, in.data(), in.size(), out.data(), out.size());
  ASSERT_NE(meter, nullptr) << drsim_last_error();
  mlx5dv_dr_table* metered = Keep(mlx5dv_dr_table_create(rx_, 1));
  mlx5dv_dr_table* by_colour = Keep(mlx5dv_dr_table_create(rx_, 2));
  MatchParams none;
  mlx5dv_dr_matcher* all = Keep(mlx5dv_dr_matcher_create(metered, 0, 0, none.get()));
  MatchParams reg = *MatchBuilder().RegC(1, 0xff).Build();
  mlx5dv_dr_matcher* green = Keep(mlx5dv_dr_matcher_create(by_colour, 0, reg.criteria(), reg.get()));
  ASSERT_NE(Rule(matcher_, UdpDport(4791), {Keep(mlx5dv_dr_action_create_dest_table(metered))}), nullptr);
  ASSERT_NE(
      Rule(all, MatchParams(),
           {Keep(mlx5dv_dr_action_create_aso(rx_, meter, 0, MLX5DV_DR_ACTION_FLAGS_ASO_FLOW_METER_GREEN, 1)),
            Keep(mlx5dv_dr_action_create_dest_table(by_colour))}),
      nullptr)
      << drsim_last_error();
  ASSERT_NE(
      Rule(green, *MatchBuilder().RegC(1, 2).Build(), {Keep(mlx5dv_dr_action_create_dest_ibv_qp(receiver_))}),
      nullptr);  // green (2) to the receiver; red misses and NIC_RX drops it
  for (size_t slot = 0; slot < 14; ++slot) ASSERT_EQ(PostRecv(receiver_, slot), 0);
  const std::vector<uint8_t> frame = tests::UdpFrame(1000, 4791, 1000);
  // The meter counts IP lengths (meter_mode 0): 1028 bytes a frame, three to a full bucket, refilled at
  // cir_per_second(). A burst's greens are bounded by the bucket it began with and what refilled while it
  // was sent, timed around it on CLOCK_MONOTONIC (the NIC's clock), so the bounds hold on a slow machine too.
  const double frame_bytes = static_cast<double>(frame.size() - 14);
  const double rate = slow.cir_per_second();
  const int full_bucket = static_cast<int>(slow.cbs() / frame_bytes);
  ASSERT_EQ(full_bucket, 3);
  auto most_green = [&](double start_bytes, std::chrono::steady_clock::duration took) {
    return static_cast<int>((start_bytes + rate * std::chrono::duration<double>(took).count()) / frame_bytes);
  };
  auto burst = [&] {
    for (int i = 0; i < 6; ++i) EXPECT_EQ(Send(sender_, frame), 0) << drsim_last_error();
    int received = 0;
    for (const Seen& s : Poll()) received += s.opcode == IBV_WC_RECV;
    return received;
  };
  const auto start = std::chrono::steady_clock::now();
  const int first = burst();
  const int second = burst();  // sent again at once: the bucket is empty
  const auto drained = std::chrono::steady_clock::now();
  EXPECT_GE(first, full_bucket);
  EXPECT_LE(first + second, most_green(slow.cbs(), drained - start));
  // 400 ms refill 6 KB, capped at the 4 KiB: full again. (With the clock standing still, nothing would be.)
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  const auto refill_start = std::chrono::steady_clock::now();
  const int refilled = burst();
  EXPECT_GE(refilled, full_bucket);
  EXPECT_LE(refilled, most_green(slow.cbs(), std::chrono::steady_clock::now() - refill_start));
  EXPECT_EQ(mlx5dv_devx_obj_destroy(meter), EBUSY);  // the aso action holds it (destroyed with the rules)
  DestroyDrObjects();
  EXPECT_EQ(mlx5dv_devx_obj_destroy(meter), 0);
}

// out_of_buffer of a queue counter (ALLOC_Q_COUNTER, QUERY_Q_COUNTER through DevX, as DPDK reads it).
uint32_t OutOfBuffer(mlx5dv_devx_obj* counter, uint8_t counter_set_id) {
  uint8_t in[32] = {0x07, 0x73}, out[0x100] = {};
  in[31] = counter_set_id;
  EXPECT_EQ(mlx5dv_devx_obj_query(counter, in, sizeof in, out, sizeof out), 0) << drsim_last_error();
  return static_cast<uint32_t>(out[0x30]) << 24 | out[0x31] << 16 | out[0x32] << 8 | out[0x33];
}

TEST_F(DeviceTest, FrameWithoutAPostedReceiveIsCountedAndDropped) {
  uint8_t in[16] = {0x07, 0x71}, out[16] = {};
  mlx5dv_devx_obj* counter = mlx5dv_devx_obj_create(ctx_, in, sizeof in, out, sizeof out);
  ASSERT_NE(counter, nullptr) << drsim_last_error();
  const uint8_t id = out[11];
  Steer(4791, receiver_);
  ASSERT_EQ(Send(sender_, tests::UdpFrame(1, 4791, 10)), 0);
  ASSERT_EQ(Poll().size(), 1u);  // only the send
  EXPECT_EQ(OutOfBuffer(counter, id), 1u);
  ASSERT_EQ(PostRecv(receiver_, 0), 0);
  EXPECT_EQ(Poll().size(), 0u);  // the dropped frame does not come back
  ASSERT_EQ(Send(sender_, tests::UdpFrame(2, 4791, 10)), 0);
  EXPECT_EQ(Poll().size(), 2u);
  // Through general_cmd too, by counter_set_id.
  uint8_t query[32] = {0x07, 0x73}, answer[0x100] = {};
  query[31] = id;
  ASSERT_EQ(mlx5dv_devx_general_cmd(ctx_, query, sizeof query, answer, sizeof answer), 0)
      << drsim_last_error();
  EXPECT_EQ(answer[0x33], 1);
  EXPECT_EQ(mlx5dv_devx_obj_destroy(counter), 0);
}

TEST_F(DeviceTest, FrameLongerThanTheReceiveBufferCompletesInError) {
  Steer(4791, receiver_);
  ASSERT_EQ(PostRecv(receiver_, 0, 64), 0);
  ASSERT_EQ(Send(sender_, tests::UdpFrame(1, 4791, 200)), 0);
  std::vector<Seen> seen = Poll();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1].status, IBV_WC_LOC_LEN_ERR);
}

TEST_F(DeviceTest, SgesAreCheckedAgainstTheirMemoryRegion) {
  EXPECT_EQ(PostRecv(receiver_, 0, kSlot, mr_->lkey + 999), EINVAL);
  EXPECT_NE(std::string(drsim_last_error()).find("lkey"), std::string::npos) << drsim_last_error();
  EXPECT_EQ(PostRecv(receiver_, 15, kSlot + 1), EINVAL);  // runs past the region's end
  ibv_mr* read_only = ibv_reg_mr(pd_, buf_.data(), kSlot, 0);
  ASSERT_NE(read_only, nullptr);
  EXPECT_EQ(PostRecv(receiver_, 0, 64, read_only->lkey), EINVAL);  // a receive writes: LOCAL_WRITE needed
  EXPECT_EQ(ibv_dereg_mr(read_only), 0);
}

TEST_F(DeviceTest, QpStatesGateTheDataPath) {
  ibv_qp_init_attr attr{};
  attr.send_cq = attr.recv_cq = ibv_cq_ex_to_cq(cq_);
  attr.cap.max_send_wr = attr.cap.max_recv_wr = 4;
  attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
  attr.qp_type = IBV_QPT_RAW_PACKET;
  ibv_qp* qp = ibv_create_qp(pd_, &attr);
  ASSERT_NE(qp, nullptr);
  qps_.push_back(qp);
  EXPECT_EQ(qp->state, IBV_QPS_RESET);
  EXPECT_EQ(Send(qp, tests::UdpFrame(1, 2, 10)), EINVAL);  // not RTS
  EXPECT_EQ(PostRecv(qp, 0), EINVAL);                      // RESET takes no receives
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTS;
  EXPECT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), EINVAL);  // RESET -> RTS skips INIT and RTR
  attr.qp_type = IBV_QPT_RC;
  errno = 0;
  EXPECT_EQ(ibv_create_qp(pd_, &attr), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
}

TEST_F(DeviceTest, RssQpSpreadsOverItsWqs) {
  ibv_wq* wqs[2];
  for (ibv_wq*& wq : wqs) {
    ibv_wq_init_attr w{};
    w.wq_type = IBV_WQT_RQ;
    w.max_wr = 8;
    w.max_sge = 1;
    w.pd = pd_;
    w.cq = ibv_cq_ex_to_cq(cq_);
    wq = ibv_create_wq(ctx_, &w);
    ASSERT_NE(wq, nullptr) << drsim_last_error();
    ibv_wq_attr ready{};
    ready.attr_mask = IBV_WQ_ATTR_STATE;
    ready.wq_state = IBV_WQS_RDY;
    ASSERT_EQ(ibv_modify_wq(wq, &ready), 0);
  }
  ibv_rwq_ind_table_init_attr ind{};
  ind.log_ind_tbl_size = 1;
  ind.ind_tbl = wqs;
  ibv_rwq_ind_table* table = ibv_create_rwq_ind_table(ctx_, &ind);
  ASSERT_NE(table, nullptr);
  static uint8_t key[40] = {0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67};
  ibv_qp_init_attr_ex rss{};
  rss.qp_type = IBV_QPT_RAW_PACKET;
  rss.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH;
  rss.pd = pd_;
  rss.rwq_ind_tbl = table;
  rss.rx_hash_conf.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ;
  rss.rx_hash_conf.rx_hash_key_len = sizeof key;
  rss.rx_hash_conf.rx_hash_key = key;
  rss.rx_hash_conf.rx_hash_fields_mask = IBV_RX_HASH_SRC_PORT_UDP;
  ibv_qp* rss_qp = ibv_create_qp_ex(ctx_, &rss);
  ASSERT_NE(rss_qp, nullptr) << drsim_last_error();
  EXPECT_EQ(ibv_destroy_rwq_ind_table(table), EBUSY);
  Steer(4791, rss_qp);
  for (int w = 0; w < 2; ++w) {
    for (uint64_t i = 0; i < 8; ++i) {
      ibv_sge sge{reinterpret_cast<uintptr_t>(buf_.data() + (w * 7) * kSlot), kSlot, mr_->lkey};
      ibv_recv_wr wr{};
      wr.wr_id = w;
      wr.sg_list = &sge;
      wr.num_sge = 1;
      ibv_recv_wr* bad;
      ASSERT_EQ(ibv_post_wq_recv(wqs[w], &wr, &bad), 0);
    }
  }
  for (uint16_t sport = 0; sport < 12; ++sport) ASSERT_EQ(Send(sender_, tests::UdpFrame(sport, 4791, 10)), 0);
  int per_wq[2] = {0, 0};
  for (const Seen& s : Poll()) {
    if (s.opcode != IBV_WC_RECV) continue;
    for (int w = 0; w < 2; ++w) per_wq[w] += s.qp_num == wqs[w]->wq_num;
  }
  EXPECT_EQ(per_wq[0] + per_wq[1], 12);
  EXPECT_GT(per_wq[0], 0);
  EXPECT_GT(per_wq[1], 0);
  // Rules go before the QP they send to.
  DestroyDrObjects();
  EXPECT_EQ(ibv_destroy_qp(rss_qp), 0);
  EXPECT_EQ(ibv_destroy_rwq_ind_table(table), 0);
  for (ibv_wq* wq : wqs) EXPECT_EQ(ibv_destroy_wq(wq), 0);
}

TEST_F(DeviceTest, CompletionChannelSignalsAnArmedCq) {
  ibv_comp_channel* channel = ibv_create_comp_channel(ctx_);
  ASSERT_NE(channel, nullptr);
  ibv_cq* cq = ibv_create_cq(ctx_, 8, this, channel, 0);
  ASSERT_NE(cq, nullptr);
  EXPECT_EQ(ibv_destroy_comp_channel(channel), EBUSY);
  ibv_qp_init_attr attr{};
  attr.send_cq = attr.recv_cq = cq;
  attr.cap.max_send_wr = attr.cap.max_recv_wr = 4;
  attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
  attr.qp_type = IBV_QPT_RAW_PACKET;
  ibv_qp* qp = ibv_create_qp(pd_, &attr);
  ASSERT_NE(qp, nullptr);
  ibv_qp_attr a{};
  for (ibv_qp_state s : {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS}) {
    a.qp_state = s;
    ASSERT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
  }
  ASSERT_EQ(ibv_req_notify_cq(cq, 0), 0);
  ASSERT_EQ(Send(qp, tests::UdpFrame(1, 9, 10)), 0);
  ibv_cq* event_cq = nullptr;
  void* event_ctx = nullptr;
  ASSERT_EQ(ibv_get_cq_event(channel, &event_cq, &event_ctx), 0);
  EXPECT_EQ(event_cq, cq);
  EXPECT_EQ(event_ctx, this);
  ibv_ack_cq_events(cq, 1);
  ibv_wc wc;
  EXPECT_EQ(ibv_poll_cq(cq, 1, &wc), 1);
  EXPECT_EQ(wc.opcode, IBV_WC_SEND);
  EXPECT_EQ(ibv_destroy_cq(cq), EBUSY);  // the QP still uses it
  EXPECT_EQ(ibv_destroy_qp(qp), 0);
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
  EXPECT_EQ(ibv_destroy_comp_channel(channel), 0);
}

TEST_F(DeviceTest, ContextsShareTheNicAndCloseIndependently) {
  ibv_context* other = ibv_open_device(device_);
  ASSERT_NE(other, nullptr);
  ASSERT_NE(other, ctx_);
  // A rule of this test's context steers what another context sends.
  Steer(4791, receiver_);
  ASSERT_EQ(PostRecv(receiver_, 0), 0);
  ibv_pd* pd = ibv_alloc_pd(other);
  ibv_mr* mr = ibv_reg_mr(pd, buf_.data(), buf_.size(), 0);
  ibv_cq* cq = ibv_create_cq(other, 8, nullptr, nullptr, 0);
  ibv_qp_init_attr attr{};
  attr.send_cq = attr.recv_cq = cq;
  attr.cap.max_send_wr = attr.cap.max_recv_wr = 4;
  attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
  attr.qp_type = IBV_QPT_RAW_PACKET;
  ibv_qp* qp = ibv_create_qp(pd, &attr);
  ASSERT_TRUE(pd && mr && cq && qp);
  ibv_qp_attr a{};
  for (ibv_qp_state s : {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS}) {
    a.qp_state = s;
    ASSERT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
  }
  const std::vector<uint8_t> frame = tests::UdpFrame(5, 4791, 30);
  std::memcpy(buf_.data() + 15 * kSlot, frame.data(), frame.size());
  ibv_sge sge{reinterpret_cast<uintptr_t>(buf_.data() + 15 * kSlot), static_cast<uint32_t>(frame.size()),
              mr->lkey};
  ibv_send_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  ibv_send_wr* bad;
  ASSERT_EQ(ibv_post_send(qp, &wr, &bad), 0);
  EXPECT_EQ(Poll().size(), 1u);  // the receive on this context's QP
  EXPECT_EQ(ibv_destroy_qp(qp), 0);
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
  EXPECT_EQ(ibv_dereg_mr(mr), 0);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
  EXPECT_EQ(ibv_close_device(other), 0);
  // This context is untouched.
  ASSERT_EQ(PostRecv(receiver_, 1), 0);
  ASSERT_EQ(Send(sender_, frame), 0);
  EXPECT_EQ(Poll().size(), 2u);
}

TEST_F(DeviceTest, DrsimOpenContextsTakeTheVerbsCallsToo) {
  ibv_context* nic = drsim_open(1);
  ASSERT_NE(nic, nullptr);
  ibv_pd* pd = ibv_alloc_pd(drsim_vport_context(nic, 1));
  ASSERT_NE(pd, nullptr);
  EXPECT_EQ(drsim_close(nic), EBUSY);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
  EXPECT_EQ(drsim_close(nic), 0);
}

}  // namespace
}  // namespace drsim
