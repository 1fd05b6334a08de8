/* A ConnectX program for meter_rate_test.sh: an ASO flow meter, made with DevX CREATE_GENERAL_OBJECT and
 * the PRM's meter parameters, colours the UDP frames the program sends itself over the loopback wire; green
 * ones reach its QP, red ones are dropped. It sends well above the meter's committed rate, then well below
 * it, timing both with CLOCK_MONOTONIC, and checks how many frames came through against the token bucket:
 * at most the committed burst plus what the committed rate refills over the time taken, when sending
 * fast; nearly all, when paced. It prints what it saw and exits 0 when both hold. Only libibverbs and
 * mlx5dv calls: run it under scripts/drsim-run.
 */
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "soft_mlx5/test_program.h"

enum { SLOT = 2048, SLOTS = 256, FRAME = 1000, FAST = 300, PACED = 40, PACED_GAP_MS = 20 };

/* The meter: cir = 10^9 * 125 / 2^20 bytes/s (about 119 KB/s, 119 frames/s), cbs = 1 * 2^12 bytes (4
 * frames). Fast: FAST frames back to back. Paced: one frame every PACED_GAP_MS ms (50 KB/s). */
static const double kCir = 1e9 * 125 / 1048576.0, kCbs = 4096;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static int post_recv(struct ibv_qp* qp, struct ibv_mr* mr, uint8_t* buf, uint64_t slot) {
  return raw_qp_post_recv(qp, mr, buf + slot * SLOT, SLOT, slot);
}

/* Receives waiting on `cq`, each reposted. */
static int received(struct ibv_cq* cq, struct ibv_qp* qp, struct ibv_mr* mr, uint8_t* buf) {
  int n = 0;
  struct ibv_wc wc;
  while (ibv_poll_cq(cq, 1, &wc) == 1) {
    if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV) continue;
    ++n;
    if (post_recv(qp, mr, buf, wc.wr_id) != 0) return -1;
  }
  return n;
}

/* A match buffer of mlx5dv_dr_matcher_create and _rule_create. */
struct match {
  size_t match_sz;
  uint8_t buf[448];
};

int main(void) {
  int num;
  struct ibv_device** list = ibv_get_device_list(&num);
  CHECK(list != NULL && num > 0, "ibv_get_device_list");
  struct mlx5dv_context_attr dv = {.flags = MLX5DV_CONTEXT_FLAGS_DEVX};
  struct ibv_context* ctx = mlx5dv_open_device(list[0], &dv);
  CHECK(ctx != NULL, "mlx5dv_open_device");
  ibv_free_device_list(list);
  struct ibv_pd* pd = ibv_alloc_pd(ctx);
  static uint8_t buf[SLOTS * SLOT + SLOT];
  struct ibv_mr* mr = ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
  struct ibv_cq* cq = ibv_create_cq(ctx, 2 * SLOTS, NULL, NULL, 0);
  CHECK(pd && mr && cq, "pd, mr, cq");
  struct ibv_qp* qp = raw_qp_ready(pd, cq, 64, SLOTS);
  CHECK(qp != NULL, "a raw-packet QP in RTS");
  for (uint64_t i = 0; i < SLOTS; ++i) CHECK(post_recv(qp, mr, buf, i) == 0, "ibv_post_recv");

  /* The ASO flow meter object (obj_type 0x24), one line; its first meter's flow_meter_parameters at byte
   * 80: valid, bucket_overflow, start_color green; cbs exponent and mantissa at 88-89, cir at 90-91. */
  uint8_t in[144] = {0x0a, 0x00, 0, 0, 0, 0, 0x00, 0x24}, out[16] = {0};
  in[80] = 0x80 | 0x40 | 2 << 4;
  in[88] = 12, in[89] = 1;
  in[90] = 20, in[91] = 125;
  struct mlx5dv_devx_obj* meter = mlx5dv_devx_obj_create(ctx, in, sizeof in, out, sizeof out);
  CHECK(meter != NULL, "CREATE_GENERAL_OBJECT (flow meter ASO)");

  /* NIC_RX: IPv4 UDP to port 4791 goes to table 1, whose meter colours reg_c_1 and sends on to table 2,
   * where green (2) goes to the QP; red misses and NIC_RX drops it. PRM bit offsets of the layout. */
  struct match udp_mask = {448, {0}}, udp = {448, {0}}, none = {448, {0}}, colour_mask = {448, {0}},
               green = {448, {0}};
  udp_mask.buf[0x80 / 8] = 0xff;                                /* ip_protocol */
  udp_mask.buf[0x93 / 8] |= 4 << 1;                             /* ip_version */
  udp_mask.buf[0xf0 / 8] = 0xff, udp_mask.buf[0xf8 / 8] = 0xff; /* udp_dport */
  udp.buf[0x80 / 8] = 17;
  udp.buf[0x93 / 8] |= 4 << 1;
  udp.buf[0xf0 / 8] = 4791 >> 8, udp.buf[0xf8 / 8] = 4791 & 0xff;
  colour_mask.buf[192 + 0x28 + 3] = 0xff; /* misc2.metadata_reg_c_1, low byte */
  green.buf[192 + 0x28 + 3] = 2;
  struct mlx5dv_dr_domain* rx = mlx5dv_dr_domain_create(ctx, MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
  CHECK(rx != NULL, "mlx5dv_dr_domain_create");
  struct mlx5dv_dr_table* root = mlx5dv_dr_table_create(rx, 0);
  struct mlx5dv_dr_table* metered = mlx5dv_dr_table_create(rx, 1);
  struct mlx5dv_dr_table* by_colour = mlx5dv_dr_table_create(rx, 2);
  CHECK(root && metered && by_colour, "mlx5dv_dr_table_create");
  struct mlx5dv_dr_matcher* m0 = mlx5dv_dr_matcher_create(root, 0, 1, (void*)&udp_mask);
  struct mlx5dv_dr_matcher* m1 = mlx5dv_dr_matcher_create(metered, 0, 0, (void*)&none);
  struct mlx5dv_dr_matcher* m2 = mlx5dv_dr_matcher_create(by_colour, 0, 1 << 3, (void*)&colour_mask);
  CHECK(m0 && m1 && m2, "mlx5dv_dr_matcher_create");
  struct mlx5dv_dr_action* to_metered = mlx5dv_dr_action_create_dest_table(metered);
  struct mlx5dv_dr_action* meter_actions[2] = {
      mlx5dv_dr_action_create_aso(rx, meter, 0, MLX5DV_DR_ACTION_FLAGS_ASO_FLOW_METER_GREEN, 1),
      mlx5dv_dr_action_create_dest_table(by_colour)};
  struct mlx5dv_dr_action* to_qp = mlx5dv_dr_action_create_dest_ibv_qp(qp);
  CHECK(to_metered && meter_actions[0] && meter_actions[1] && to_qp, "actions");
  struct mlx5dv_dr_rule* r0 = mlx5dv_dr_rule_create(m0, (void*)&udp, 1, &to_metered);
  struct mlx5dv_dr_rule* r1 = mlx5dv_dr_rule_create(m1, (void*)&none, 2, meter_actions);
  struct mlx5dv_dr_rule* r2 = mlx5dv_dr_rule_create(m2, (void*)&green, 1, &to_qp);
  CHECK(r0 && r1 && r2, "mlx5dv_dr_rule_create");

  /* A FRAME-byte IPv4/UDP frame to port 4791 (checksums 0, as rdma-core's tests send them). */
  uint8_t* frame = buf + SLOTS * SLOT;
  static const uint8_t macs[12] = {0x02, 0x15, 0xb3, 0, 0, 1, 0x02, 0x15, 0xb3, 0, 0, 2};
  memset(frame, 0xab, FRAME);
  memcpy(frame, macs, sizeof macs);
  frame[12] = 0x08, frame[13] = 0x00; /* IPv4 */
  uint8_t* ip = frame + 14;
  memset(ip, 0, 28);
  ip[0] = 0x45;                                             /* version 4, 5 words */
  ip[2] = (FRAME - 14) >> 8, ip[3] = (FRAME - 14) & 0xff;   /* total length */
  ip[8] = 64, ip[9] = 17;                                   /* TTL, UDP */
  ip[12] = 10, ip[15] = 1, ip[16] = 10, ip[19] = 2;         /* 10.0.0.1 -> 10.0.0.2 */
  ip[20] = 1000 >> 8, ip[21] = 1000 & 0xff;                 /* source port */
  ip[22] = 4791 >> 8, ip[23] = 4791 & 0xff;                 /* destination port */
  ip[24] = (FRAME - 34) >> 8, ip[25] = (FRAME - 34) & 0xff; /* UDP length */
  struct ibv_sge sge = {(uintptr_t)frame, FRAME, mr->lkey};
  struct ibv_send_wr swr = {.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND}, *bad;

  /* Fast: as fast as the program sends. */
  const double fast_start = now_s();
  for (int i = 0; i < FAST; ++i) CHECK(ibv_post_send(qp, &swr, &bad) == 0, "ibv_post_send");
  const double fast_time = now_s() - fast_start;
  const int fast_green = received(cq, qp, mr, buf);
  CHECK(fast_green >= 0, "ibv_post_recv");

  /* Paced, after a pause that refills the bucket. */
  struct timespec gap = {0, PACED_GAP_MS * 1000000L};
  nanosleep(&gap, NULL);
  const double paced_start = now_s();
  for (int i = 0; i < PACED; ++i) {
    nanosleep(&gap, NULL);
    CHECK(ibv_post_send(qp, &swr, &bad) == 0, "ibv_post_send");
  }
  const double paced_time = now_s() - paced_start;
  const int paced_green = received(cq, qp, mr, buf);
  CHECK(paced_green >= 0, "ibv_post_recv");

  const double fast_rate = FAST * FRAME / fast_time, paced_rate = PACED * FRAME / paced_time;
  /* A token bucket passes at most its burst plus what refills meanwhile (one frame of slack for the
   * frame that found the bucket not quite empty; a frame costs at least its IP bytes), and a fresh bucket
   * at least its burst. */
  const int fast_most = (int)((kCbs + kCir * fast_time) / (FRAME - 14)) + 1;
  const int fast_least = (int)(kCbs / FRAME);
  printf("committed %.0f bytes/s, burst %.0f bytes\n", kCir, kCbs);
  printf("fast: %d frames at %.0f bytes/s, %d green (bucket allows %d to %d)\n", FAST, fast_rate, fast_green,
         fast_least, fast_most);
  printf("paced: %d frames at %.0f bytes/s, %d green\n", PACED, paced_rate, paced_green);
  int ok = 1;
  if (fast_rate < 2 * kCir) {
    printf("FAIL: the fast phase did not send at twice the committed rate; nothing to judge\n");
    ok = 0;
  }
  if (fast_green < fast_least || fast_green > fast_most || 2 * fast_green > FAST) {
    printf("FAIL: sent fast, the meter passed %d frames\n", fast_green);
    ok = 0;
  }
  if (10 * paced_green < 9 * PACED) {
    printf("FAIL: sent below the committed rate, only %d of %d frames were green\n", paced_green, PACED);
    ok = 0;
  }

  mlx5dv_dr_rule_destroy(r2);
  mlx5dv_dr_rule_destroy(r1);
  mlx5dv_dr_rule_destroy(r0);
  mlx5dv_dr_action_destroy(to_qp);
  mlx5dv_dr_action_destroy(meter_actions[1]);
  mlx5dv_dr_action_destroy(meter_actions[0]);
  mlx5dv_dr_action_destroy(to_metered);
  mlx5dv_dr_matcher_destroy(m2);
  mlx5dv_dr_matcher_destroy(m1);
  mlx5dv_dr_matcher_destroy(m0);
  mlx5dv_dr_table_destroy(by_colour);
  mlx5dv_dr_table_destroy(metered);
  mlx5dv_dr_table_destroy(root);
  mlx5dv_dr_domain_destroy(rx);
  CHECK(mlx5dv_devx_obj_destroy(meter) == 0, "mlx5dv_devx_obj_destroy");
  ibv_destroy_qp(qp);
  ibv_destroy_cq(cq);
  ibv_dereg_mr(mr);
  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  return ok ? 0 : 1;
}
