// The DevX tests' fixture and mailbox helpers (devx_test.cc, devx_geneve_test.cc).
//
// Mailboxes are built and read byte by byte at the PRM's offsets (as rdma-core's tests pack them with
// struct.pack), not with soft_mlx5/prm_bits.h, so the layouts are checked independently of the code.
#ifndef DRSIM_SOFT_MLX5_DEVX_TEST_FIXTURE_H_
#define DRSIM_SOFT_MLX5_DEVX_TEST_FIXTURE_H_

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdint>
#include <vector>

#include "capi/drsim.h"
#include "gtest/gtest.h"
#include "hw/match_params.h"
#include "tests/kept_dr_objects.h"

namespace drsim::devx_testing {

using hw::MatchParams;
using Bytes = std::vector<uint8_t>;

inline constexpr int kBadOp = 0x02, kBadParam = 0x03, kBadResource = 0x05, kBadInputLength = 0x50;

inline void Put16(Bytes& b, size_t at, uint16_t v) {
  b[at] = v >> 8;
  b[at + 1] = v & 0xff;
}
inline void Put32(Bytes& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}
inline uint32_t Get32(const Bytes& b, size_t at) {
  return (uint32_t{b[at]} << 24) | (uint32_t{b[at + 1]} << 16) | (uint32_t{b[at + 2]} << 8) | b[at + 3];
}
inline uint64_t Get64(const Bytes& b, size_t at) { return (uint64_t{Get32(b, at)} << 32) | Get32(b, at + 4); }

// An input mailbox of `size` bytes with opcode and op_mod set.
inline Bytes In(uint16_t opcode, uint16_t op_mod, size_t size) {
  Bytes in(size);
  Put16(in, 0, opcode);
  Put16(in, 6, op_mod);
  return in;
}

inline Bytes QueryHcaCapIn(uint16_t type, bool current = true) { return In(0x100, (type << 1) | current, 16); }

// general_obj_in_cmd_hdr: obj_type at 6, obj_id at 8, obj_offset (query, modify) at 12 or log_obj_range
// (create) in byte 12's low 5 bits; the ASO object follows, its modify_field_select at 16, its parameters
// or flags at 80.
inline Bytes GeneralObjectIn(uint16_t opcode, uint16_t type, uint32_t id = 0, uint32_t obj_offset = 0) {
  Bytes in = In(opcode, type, 144);
  Put32(in, 8, id);
  Put32(in, 12, obj_offset);
  return in;
}
// A software NIC with one VF, and on the PF a NIC_RX domain whose root has a catch-all matcher.
class DevxTest : public ::testing::Test, protected tests::KeptDrObjects {
 protected:
  void SetUp() override {
    ctx_ = drsim_open(1);
    ASSERT_NE(ctx_, nullptr);
    rx_ = mlx5dv_dr_domain_create(ctx_, MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
    ASSERT_NE(rx_, nullptr) << drsim_last_error();
    root_ = Keep(mlx5dv_dr_table_create(rx_, 0));
    ASSERT_NE(root_, nullptr);
    all_ = Keep(mlx5dv_dr_matcher_create(root_, 0, 0, empty_.get()));
    ASSERT_NE(all_, nullptr);
  }

  void TearDown() override {
    DestroyDrObjects();
    EXPECT_EQ(mlx5dv_dr_domain_destroy(rx_), 0);
    // TIRs before the tables and queues they use.
    DestroyDevxObjects();
    for (ibv_qp* q : qps_) EXPECT_EQ(drsim_destroy_qp(q), 0);
    EXPECT_EQ(drsim_close(ctx_), 0) << drsim_last_error();
  }

  // Runs a general command; the output is `outlen` bytes.
  int General(const Bytes& in, Bytes* out, size_t outlen, ibv_context* ctx = nullptr) {
    out->assign(outlen, 0xee);
    return mlx5dv_devx_general_cmd(ctx ? ctx : ctx_, in.data(), in.size(), out->data(), out->size());
  }
  // The capability page `type` of `ctx` (the PF's by default), after its 16-byte header.
  Bytes Caps(uint16_t type, ibv_context* ctx = nullptr) {
    Bytes out;
    EXPECT_EQ(General(QueryHcaCapIn(type), &out, 0x1010, ctx), 0) << drsim_last_error();
    EXPECT_EQ(out[0], 0);  // status
    return Bytes(out.begin() + 16, out.end());
  }
  // Creates a DEVX object, kept for the teardown to destroy.
  mlx5dv_devx_obj* Create(const Bytes& in, Bytes* out, size_t outlen = 16) {
    out->assign(outlen, 0);
    return Keep(mlx5dv_devx_obj_create(ctx_, in.data(), in.size(), out->data(), out->size()));
  }
  int Query(mlx5dv_devx_obj* obj, const Bytes& in, Bytes* out, size_t outlen) {
    out->assign(outlen, 0xee);
    return mlx5dv_devx_obj_query(obj, in.data(), in.size(), out->data(), out->size());
  }
  // A create that must fail with `err` and the output status `status`.
  void CreateFails(const Bytes& in, int err, int status) {
    Bytes out(16, 0xee);
    errno = 0;
    EXPECT_EQ(mlx5dv_devx_obj_create(ctx_, in.data(), in.size(), out.data(), out.size()), nullptr);
    EXPECT_EQ(errno, err) << drsim_last_error();
    EXPECT_EQ(out[0], status) << drsim_last_error();
  }

  ibv_qp* Qp() {
    ibv_qp* q = drsim_create_qp(ctx_, 0);
    EXPECT_NE(q, nullptr) << drsim_last_error();
    qps_.push_back(q);
    return q;
  }
  mlx5dv_dr_table* Table(uint32_t level) { return Keep(mlx5dv_dr_table_create(rx_, level)); }
  mlx5dv_dr_matcher* Matcher(mlx5dv_dr_table* t, uint8_t criteria, MatchParams mask) {
    return Keep(mlx5dv_dr_matcher_create(t, 0, criteria, mask.get()));
  }
  // A catch-all matcher in a level-1 table every frame jumps to (aso actions are not for root tables).
  mlx5dv_dr_matcher* Level1() {
    mlx5dv_dr_table* t1 = Table(1);
    mlx5dv_dr_matcher* all = Matcher(t1, 0, empty_);
    Rule(all_, MatchParams(), {Keep(mlx5dv_dr_action_create_dest_table(t1))});
    return all;
  }
  void Send(const Bytes& frame) {
    ASSERT_EQ(drsim_send(ctx_, -1, frame.data(), frame.size()), 0) << drsim_last_error();
  }
  // How many frames wait on `qp` (and takes them).
  int Drain(ibv_qp* qp) {
    Bytes buf(2048);
    int n = 0;
    while (drsim_recv_qp(qp, buf.data(), buf.size(), nullptr) > 0) ++n;
    return n;
  }

  MatchParams empty_;
  ibv_context* ctx_ = nullptr;
  mlx5dv_dr_domain* rx_ = nullptr;
  mlx5dv_dr_table* root_ = nullptr;
  mlx5dv_dr_matcher* all_ = nullptr;
  std::vector<ibv_qp*> qps_;
};


}  // namespace drsim::devx_testing

#endif  // DRSIM_SOFT_MLX5_DEVX_TEST_FIXTURE_H_
