/* A ConnectX program for the wire tests (netdev_wire_test.sh, pcap_wire_test.sh): on mlx5_0, a NIC_RX
 * rule steers UDP frames to port 4791 into a raw QP; each frame received is sent back with its MAC addresses
 * swapped, out of the uplink. It prints one line a frame and exits after `count` frames (argv[1]) or 10
 * seconds. Only libibverbs and mlx5dv calls: run it under scripts/drsim-run --wire netdev:IF or pcap:IN,OUT.
 */
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "soft_mlx5/test_program.h"

enum { SLOT = 2048, SLOTS = 8 };

static int post_recv(struct ibv_qp* qp, struct ibv_mr* mr, uint8_t* buf, uint64_t slot) {
  return raw_qp_post_recv(qp, mr, buf + slot * SLOT, SLOT, slot);
}

int main(int argc, char** argv) {
  const int count = argc > 1 ? atoi(argv[1]) : 1;
  int num;
  struct ibv_device** list = ibv_get_device_list(&num);
  CHECK(list != NULL && num > 0, "ibv_get_device_list");
  struct ibv_context* ctx = ibv_open_device(list[0]);
  CHECK(ctx != NULL, "ibv_open_device");
  ibv_free_device_list(list);
  struct ibv_pd* pd = ibv_alloc_pd(ctx);
  static uint8_t buf[SLOTS * SLOT + SLOT];
  struct ibv_mr* mr = ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
  struct ibv_cq* cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
  CHECK(pd && mr && cq, "pd, mr, cq");
  struct ibv_qp* qp = raw_qp_ready(pd, cq, 8, SLOTS);
  CHECK(qp != NULL, "a raw-packet QP in RTS");
  for (uint64_t i = 0; i < SLOTS; ++i) CHECK(post_recv(qp, mr, buf, i) == 0, "ibv_post_recv");

  /* NIC_RX root table: IPv4 UDP to port 4791 -> the QP. PRM bit offsets of the outer headers. */
  struct {
    size_t match_sz;
    uint8_t buf[448];
  } mask = {448, {0}}, value = {448, {0}};
  mask.buf[0x80 / 8] = 0xff;    /* ip_protocol */
  mask.buf[0x93 / 8] |= 4 << 1; /* ip_version (bits 0x93..0x96): IPv4, as DR masks take it */
  mask.buf[0xf0 / 8] = 0xff, mask.buf[0xf8 / 8] = 0xff; /* udp_dport */
  value.buf[0x80 / 8] = 17;
  value.buf[0x93 / 8] |= 4 << 1;
  value.buf[0xf0 / 8] = 4791 >> 8, value.buf[0xf8 / 8] = 4791 & 0xff;
  struct mlx5dv_dr_domain* rx = mlx5dv_dr_domain_create(ctx, MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
  CHECK(rx != NULL, "mlx5dv_dr_domain_create");
  struct mlx5dv_dr_table* root = mlx5dv_dr_table_create(rx, 0);
  struct mlx5dv_dr_matcher* m =
      mlx5dv_dr_matcher_create(root, 0, 1, (struct mlx5dv_flow_match_parameters*)&mask);
  CHECK(m != NULL, "mlx5dv_dr_matcher_create");
  struct mlx5dv_dr_action* to_qp = mlx5dv_dr_action_create_dest_ibv_qp(qp);
  struct mlx5dv_dr_rule* rule =
      mlx5dv_dr_rule_create(m, (struct mlx5dv_flow_match_parameters*)&value, 1, &to_qp);
  CHECK(rule != NULL, "mlx5dv_dr_rule_create");
  printf("ready\n");
  fflush(stdout);

  int echoed = 0;
  time_t deadline = time(NULL) + 10;
  while (echoed < count && time(NULL) < deadline) {
    struct ibv_wc wc;
    int n = ibv_poll_cq(cq, 1, &wc);
    if (n == 0) {
      struct timespec pause = {0, 1000000};
      nanosleep(&pause, NULL);
      continue;
    }
    CHECK(n == 1 && wc.status == IBV_WC_SUCCESS, "a completion");
    if (wc.opcode != IBV_WC_RECV) continue;
    uint8_t *f = buf + wc.wr_id * SLOT, *out = buf + SLOTS * SLOT;
    memcpy(out, f + 6, 6);
    memcpy(out + 6, f, 6);
    memcpy(out + 12, f + 12, wc.byte_len - 12);
    struct ibv_sge sge = {(uintptr_t)out, wc.byte_len, mr->lkey};
    struct ibv_send_wr swr = {.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND}, *bad;
    CHECK(ibv_post_send(qp, &swr, &bad) == 0, "ibv_post_send");
    printf("echoed a %u-byte frame\n", wc.byte_len);
    fflush(stdout);
    CHECK(post_recv(qp, mr, buf, wc.wr_id) == 0, "ibv_post_recv");
    ++echoed;
  }
  mlx5dv_dr_rule_destroy(rule);
  mlx5dv_dr_action_destroy(to_qp);
  mlx5dv_dr_matcher_destroy(m);
  mlx5dv_dr_table_destroy(root);
  mlx5dv_dr_domain_destroy(rx);
  ibv_destroy_qp(qp);
  ibv_destroy_cq(cq);
  ibv_dereg_mr(mr);
  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  return echoed == count ? 0 : 1;
}
