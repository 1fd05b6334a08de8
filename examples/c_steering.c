/* A C steering program as it would run on a ConnectX, using only rdma-core's mlx5dv_dr_* calls, with the
 * software NIC's drsim_* calls for the device, QPs and counters (docs/c_api.md).
 *
 * NIC_RX of the PF: table 0 sends IPv4 to table 1; table 1 drops TCP port 22, tags DNS (UDP 53) 0xd15
 * and counts it into the DNS QP, and spreads everything else over two QPs by RSS.
 *
 *   bazel run //examples:c_steering */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/mlx5dv.h>

#include "capi/drsim.h"

/* Exits with the failing call and drsim's message when a call that must succeed fails. */
#define MUST(call)                                                                                      \
  ({                                                                                                    \
    __typeof__(call) must_result_ = (call);                                                             \
    if (!must_result_) {                                                                                \
      fprintf(stderr, "%s failed: %s (%s)\n", #call, strerror(errno), drsim_last_error());              \
      exit(1);                                                                                          \
    }                                                                                                   \
    must_result_;                                                                                       \
  })
#define MUST_ZERO(call)                                                                               \
  do {                                                                                                \
    int must_err_ = (call);                                                                           \
    if (must_err_ != 0) {                                                                             \
      fprintf(stderr, "%s failed: %s (%s)\n", #call, strerror(must_err_), drsim_last_error());        \
      exit(1);                                                                                        \
    }                                                                                                 \
  } while (0)

/* The 448-byte match parameters, and fields in them by PRM bit offset (MSB-first; reference §2.1). */
struct match {
  size_t match_sz;
  uint64_t match_buf[56];
};
enum {
  OUTER_IP_PROTOCOL = 0x080, /* 8 bits */
  OUTER_IP_VERSION = 0x093,  /* 4 bits */
  OUTER_TCP_DPORT = 0x0b0,   /* 16 bits: TCP and UDP ports share the L4 lookup */
  OUTER_UDP_DPORT = 0x0f0,   /* 16 bits */
};

static struct match *set(struct match *m, unsigned bit, unsigned width, uint32_t v) {
  uint8_t *buf = (uint8_t *)m->match_buf;
  m->match_sz = sizeof m->match_buf;
  for (unsigned i = 0; i < width; ++i) {
    uint8_t mask = (uint8_t)(0x80u >> ((bit + i) % 8));
    if ((v >> (width - 1 - i)) & 1u)
      buf[(bit + i) / 8] |= mask;
    else
      buf[(bit + i) / 8] &= (uint8_t)~mask;
  }
  return m;
}

/* Ethernet/IPv4 with `proto` (6 TCP, 17 UDP) from 10.0.0.<host>:<sport> to 10.0.0.1:<dport>. */
static size_t frame(uint8_t *f, uint8_t proto, uint8_t host, uint16_t sport, uint16_t dport) {
  static const uint8_t eth[] = {0x02, 0, 0, 0, 0, 0x01, 0x02, 0, 0, 0, 0, 0x02, 0x08, 0x00};
  size_t l4 = proto == 6 ? 20 : 8, len = 14 + 20 + l4;
  memset(f, 0, len);
  memcpy(f, eth, sizeof eth);
  uint8_t *ip = f + 14;
  ip[0] = 0x45, ip[3] = (uint8_t)(20 + l4), ip[8] = 64, ip[9] = proto;
  ip[12] = 10, ip[15] = host, ip[16] = 10, ip[19] = 1;
  uint32_t sum = 0;
  for (int i = 0; i < 20; i += 2) sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
  sum = (sum & 0xffff) + (sum >> 16);
  ip[10] = (uint8_t)(~sum >> 8), ip[11] = (uint8_t)~sum;
  uint8_t *l4h = ip + 20;
  l4h[0] = (uint8_t)(sport >> 8), l4h[1] = (uint8_t)sport, l4h[2] = (uint8_t)(dport >> 8), l4h[3] = (uint8_t)dport;
  if (proto == 6)
    l4h[12] = 0x50, l4h[13] = 0x02; /* data offset 5, SYN */
  else
    l4h[5] = 8;
  return len;
}

int main(void) {
  struct ibv_context *ctx = MUST(drsim_open(0));
  struct ibv_qp *dns_qp = MUST(drsim_create_qp(ctx, 0));
  struct ibv_qp *rss_qps[2] = {MUST(drsim_create_qp(ctx, 0)), MUST(drsim_create_qp(ctx, 0))};
  struct mlx5dv_devx_obj *counters = MUST(drsim_counter_alloc(ctx, 1));
  struct mlx5dv_devx_obj *tir = MUST(drsim_tir_create(
      ctx, rss_qps, 2, IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 | IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP,
      NULL, 0));

  struct mlx5dv_dr_domain *rx = MUST(mlx5dv_dr_domain_create(ctx, MLX5DV_DR_DOMAIN_TYPE_NIC_RX));
  struct mlx5dv_dr_table *t0 = MUST(mlx5dv_dr_table_create(rx, 0));
  struct mlx5dv_dr_table *t1 = MUST(mlx5dv_dr_table_create(rx, 1));

  struct match ipv4_mask = {0}, ipv4 = {0};
  set(&ipv4_mask, OUTER_IP_VERSION, 4, 4);
  set(&ipv4, OUTER_IP_VERSION, 4, 4);
  struct mlx5dv_dr_matcher *m_ipv4 =
      MUST(mlx5dv_dr_matcher_create(t0, 0, 1 << 0, (struct mlx5dv_flow_match_parameters *)&ipv4_mask));
  struct mlx5dv_dr_action *to_t1 = MUST(mlx5dv_dr_action_create_dest_table(t1));
  struct mlx5dv_dr_rule *r_ipv4 =
      MUST(mlx5dv_dr_rule_create(m_ipv4, (struct mlx5dv_flow_match_parameters *)&ipv4, 1, &to_t1));

  /* Table 1, priority 0: protocol + destination port. Priority 1: every IPv4 frame, to RSS. */
  struct match port_mask = ipv4_mask, ssh = ipv4, dns = ipv4;
  set(&port_mask, OUTER_IP_PROTOCOL, 8, 0xff);
  set(&port_mask, OUTER_TCP_DPORT, 16, 0xffff);
  set(&ssh, OUTER_IP_PROTOCOL, 8, 6);
  set(&ssh, OUTER_TCP_DPORT, 16, 22);
  set(&dns, OUTER_IP_PROTOCOL, 8, 17);
  set(&dns, OUTER_TCP_DPORT, 16, 53); /* the L4 destination port, whichever protocol */
  struct mlx5dv_dr_matcher *m_port =
      MUST(mlx5dv_dr_matcher_create(t1, 0, 1 << 0, (struct mlx5dv_flow_match_parameters *)&port_mask));
  struct mlx5dv_dr_matcher *m_rest =
      MUST(mlx5dv_dr_matcher_create(t1, 1, 1 << 0, (struct mlx5dv_flow_match_parameters *)&ipv4_mask));
  struct mlx5dv_dr_action *drop = MUST(mlx5dv_dr_action_create_drop());
  struct mlx5dv_dr_action *tag = MUST(mlx5dv_dr_action_create_tag(0xd15));
  struct mlx5dv_dr_action *count = MUST(mlx5dv_dr_action_create_flow_counter(counters, 0));
  struct mlx5dv_dr_action *to_dns = MUST(mlx5dv_dr_action_create_dest_ibv_qp(dns_qp));
  struct mlx5dv_dr_action *to_rss = MUST(mlx5dv_dr_action_create_dest_devx_tir(tir));
  struct mlx5dv_dr_action *dns_actions[] = {tag, count, to_dns};
  struct mlx5dv_dr_rule *r_ssh =
      MUST(mlx5dv_dr_rule_create(m_port, (struct mlx5dv_flow_match_parameters *)&ssh, 1, &drop));
  struct mlx5dv_dr_rule *r_dns =
      MUST(mlx5dv_dr_rule_create(m_port, (struct mlx5dv_flow_match_parameters *)&dns, 3, dns_actions));
  struct mlx5dv_dr_rule *r_rest =
      MUST(mlx5dv_dr_rule_create(m_rest, (struct mlx5dv_flow_match_parameters *)&ipv4, 1, &to_rss));

  /* A rule the API refuses, and why. */
  struct mlx5dv_dr_action *wrong_order[] = {to_dns, tag};
  if (mlx5dv_dr_rule_create(m_port, (struct mlx5dv_flow_match_parameters *)&dns, 2, wrong_order) == NULL)
    printf("refused [dest_ibv_qp, tag]: %s\n  %s\n\n", strerror(errno), drsim_last_error());

  /* Traffic: 8 TCP flows to port 80, 2 SSH attempts, 3 DNS queries. */
  uint8_t f[128], buf[2048];
  for (uint8_t h = 0; h < 8; ++h) MUST_ZERO(drsim_send(ctx, -1, f, frame(f, 6, 10 + h, 40000 + 7 * h, 80)));
  for (uint8_t h = 0; h < 2; ++h) MUST_ZERO(drsim_send(ctx, -1, f, frame(f, 6, 20 + h, 50000, 22)));
  for (uint8_t h = 0; h < 3; ++h) MUST_ZERO(drsim_send(ctx, -1, f, frame(f, 17, 30 + h, 5353, 53)));

  uint32_t flow_tag;
  int n, got = 0;
  while ((n = drsim_recv_qp(dns_qp, buf, sizeof buf, &flow_tag)) > 0) {
    printf("DNS qp 0x%x: %d bytes, flow tag 0x%x\n", dns_qp->qp_num, n, flow_tag);
    ++got;
  }
  for (int q = 0; q < 2; ++q) {
    int frames = 0;
    while (drsim_recv_qp(rss_qps[q], buf, sizeof buf, NULL) > 0) ++frames;
    printf("RSS qp 0x%x: %d frame(s)\n", rss_qps[q]->qp_num, frames);
    got += frames;
  }
  uint64_t packets, bytes;
  MUST_ZERO(drsim_counter_query(counters, 0, &packets, &bytes));
  printf("DNS counter: %llu packets, %llu bytes\n", (unsigned long long)packets, (unsigned long long)bytes);
  printf("%d of 13 frames delivered; the 2 SSH frames were dropped\n", got);

  /* Teardown, rules first: each object goes once nothing references it. */
  struct mlx5dv_dr_rule *rules[] = {r_rest, r_dns, r_ssh, r_ipv4};
  for (size_t i = 0; i < 4; ++i) MUST_ZERO(mlx5dv_dr_rule_destroy(rules[i]));
  MUST_ZERO(mlx5dv_dr_matcher_destroy(m_rest));
  MUST_ZERO(mlx5dv_dr_matcher_destroy(m_port));
  MUST_ZERO(mlx5dv_dr_matcher_destroy(m_ipv4));
  struct mlx5dv_dr_action *actions[] = {to_rss, to_dns, count, tag, drop, to_t1};
  for (size_t i = 0; i < 6; ++i) MUST_ZERO(mlx5dv_dr_action_destroy(actions[i]));
  MUST_ZERO(mlx5dv_dr_table_destroy(t1));
  MUST_ZERO(mlx5dv_dr_table_destroy(t0));
  MUST_ZERO(mlx5dv_dr_domain_destroy(rx));
  MUST_ZERO(mlx5dv_devx_obj_destroy(tir));
  MUST_ZERO(mlx5dv_devx_obj_destroy(counters));
  MUST_ZERO(drsim_destroy_qp(rss_qps[0]));
  MUST_ZERO(drsim_destroy_qp(rss_qps[1]));
  MUST_ZERO(drsim_destroy_qp(dns_qp));
  MUST_ZERO(drsim_close(ctx));
  return got == 11 && packets == 3 ? 0 : 1;
}
