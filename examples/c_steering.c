/* A C steering program written as one for a ConnectX is: rdma-core's libibverbs and mlx5dv calls only,
 * no drsim_* call. Run it on the software mlx5 device (docs/soft_mlx5.md):
 *
 *   scripts/drsim-run -- bazel-bin/examples/c_steering [DEVICE]
 *
 * It opens DEVICE (default mlx5_0) with DevX, and on its PF's NIC_RX: table 0 sends IPv4 to table 1;
 * table 1 drops TCP port 22, tags DNS (UDP 53) 0xd15 and counts it (a DevX flow counter) into the DNS QP,
 * and spreads everything else over two WQs by RSS (an RSS QP). A second raw QP sends the frames; the
 * uplink's loopback wire brings them back in, as a NIC's local loopback does on a ConnectX. */
#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

/* Exits with the failing call when a call that must succeed fails. */
#define MUST(call)                                                                                      \
  ({                                                                                                    \
    __typeof__(call) must_result_ = (call);                                                             \
    if (!must_result_) {                                                                                \
      fprintf(stderr, "%s failed: %s\n", #call, strerror(errno));                                       \
      exit(1);                                                                                          \
    }                                                                                                   \
    must_result_;                                                                                       \
  })
#define MUST_ZERO(call)                                                                               \
  do {                                                                                                \
    int must_err_ = (call);                                                                           \
    if (must_err_ != 0) {                                                                             \
      fprintf(stderr, "%s failed: %s\n", #call, strerror(must_err_ > 0 ? must_err_ : errno));         \
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

/* PRM DevX commands (big-endian): ALLOC_FLOW_COUNTER and QUERY_FLOW_COUNTER. */
static struct mlx5dv_devx_obj *alloc_counter(struct ibv_context *ctx, uint32_t *id) {
  uint8_t in[16] = {0}, out[16] = {0};
  in[0] = 0x09, in[1] = 0x39;
  struct mlx5dv_devx_obj *obj = MUST(mlx5dv_devx_obj_create(ctx, in, sizeof in, out, sizeof out));
  *id = be32toh(*(uint32_t *)(out + 8));
  return obj;
}
static void query_counter(struct mlx5dv_devx_obj *obj, uint32_t id, uint64_t *packets, uint64_t *bytes) {
  uint8_t in[32] = {0}, out[32] = {0};
  in[0] = 0x09, in[1] = 0x3b;
  *(uint32_t *)(in + 28) = htobe32(id);
  MUST_ZERO(mlx5dv_devx_obj_query(obj, in, sizeof in, out, sizeof out));
  *packets = be64toh(*(uint64_t *)(out + 16));
  *bytes = be64toh(*(uint64_t *)(out + 24));
}

/* A receive buffer of 2048 bytes per slot, posted on `qp` or `wq`. */
enum { SLOTS = 16, SLOT = 2048 };
static void post_receives(struct ibv_qp *qp, struct ibv_wq *wq, struct ibv_mr *mr, uint8_t *buf) {
  for (uint64_t i = 0; i < SLOTS; ++i) {
    struct ibv_sge sge = {(uintptr_t)(buf + i * SLOT), SLOT, mr->lkey};
    struct ibv_recv_wr wr = {.wr_id = i, .sg_list = &sge, .num_sge = 1}, *bad;
    MUST_ZERO(qp ? ibv_post_recv(qp, &wr, &bad) : ibv_post_wq_recv(wq, &wr, &bad));
  }
}

static void to_rts(struct ibv_qp *qp) {
  struct ibv_qp_attr attr = {.qp_state = IBV_QPS_INIT, .port_num = 1};
  MUST_ZERO(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PORT));
  attr.qp_state = IBV_QPS_RTR;
  MUST_ZERO(ibv_modify_qp(qp, &attr, IBV_QP_STATE));
  attr.qp_state = IBV_QPS_RTS;
  MUST_ZERO(ibv_modify_qp(qp, &attr, IBV_QP_STATE));
}

int main(int argc, char **argv) {
  const char *name = argc > 1 ? argv[1] : "mlx5_0";
  int num;
  struct ibv_device **list = MUST(ibv_get_device_list(&num)), *dev = NULL;
  for (int i = 0; i < num; ++i)
    if (strcmp(ibv_get_device_name(list[i]), name) == 0) dev = list[i];
  if (dev == NULL || !mlx5dv_is_supported(dev)) {
    fprintf(stderr, "no mlx5 device named %s\n", name);
    return 1;
  }
  struct mlx5dv_context_attr dv_attr = {.flags = MLX5DV_CONTEXT_FLAGS_DEVX};
  struct ibv_context *ctx = MUST(mlx5dv_open_device(dev, &dv_attr));
  ibv_free_device_list(list);

  struct ibv_pd *pd = MUST(ibv_alloc_pd(ctx));
  static uint8_t rx_buf[3][SLOTS * SLOT], tx_buf[128];
  struct ibv_mr *rx_mr = MUST(ibv_reg_mr(pd, rx_buf, sizeof rx_buf, IBV_ACCESS_LOCAL_WRITE));
  struct ibv_mr *tx_mr = MUST(ibv_reg_mr(pd, tx_buf, sizeof tx_buf, 0));
  struct ibv_cq_init_attr_ex cq_attr = {.cqe = 64, .wc_flags = IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_FLOW_TAG};
  struct ibv_cq_ex *rx_cq = MUST(ibv_create_cq_ex(ctx, &cq_attr));
  struct ibv_cq *tx_cq = MUST(ibv_create_cq(ctx, 64, NULL, NULL, 0));

  /* The DNS QP, the sender, and two WQs behind an RSS QP. */
  struct ibv_qp_init_attr qp_attr = {.send_cq = tx_cq, .recv_cq = ibv_cq_ex_to_cq(rx_cq),
                                     .cap = {.max_send_wr = 16, .max_recv_wr = SLOTS, .max_send_sge = 1, .max_recv_sge = 1},
                                     .qp_type = IBV_QPT_RAW_PACKET};
  struct ibv_qp *dns_qp = MUST(ibv_create_qp(pd, &qp_attr));
  struct ibv_qp *sender = MUST(ibv_create_qp(pd, &qp_attr));
  to_rts(dns_qp);
  to_rts(sender);
  struct ibv_wq *wqs[2];
  for (int i = 0; i < 2; ++i) {
    struct ibv_wq_init_attr wq_attr = {.wq_type = IBV_WQT_RQ, .max_wr = SLOTS, .max_sge = 1, .pd = pd,
                                       .cq = ibv_cq_ex_to_cq(rx_cq)};
    wqs[i] = MUST(ibv_create_wq(ctx, &wq_attr));
    struct ibv_wq_attr ready = {.attr_mask = IBV_WQ_ATTR_STATE, .wq_state = IBV_WQS_RDY};
    MUST_ZERO(ibv_modify_wq(wqs[i], &ready));
  }
  struct ibv_rwq_ind_table_init_attr ind_attr = {.log_ind_tbl_size = 1, .ind_tbl = wqs};
  struct ibv_rwq_ind_table *ind = MUST(ibv_create_rwq_ind_table(ctx, &ind_attr));
  static uint8_t key[40] = {0x2c, 0xc6, 0x81, 0xd1, 0x5b, 0xdb, 0xf4, 0xf7, 0xfc, 0xa2};
  struct ibv_qp_init_attr_ex rss_attr = {
      .qp_type = IBV_QPT_RAW_PACKET,
      .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH,
      .pd = pd,
      .rwq_ind_tbl = ind,
      .rx_hash_conf = {.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ, .rx_hash_key_len = sizeof key,
                       .rx_hash_key = key,
                       .rx_hash_fields_mask = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 |
                                              IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP}};
  struct ibv_qp *rss_qp = MUST(ibv_create_qp_ex(ctx, &rss_attr));
  post_receives(dns_qp, NULL, rx_mr, rx_buf[0]);
  for (int i = 0; i < 2; ++i) post_receives(NULL, wqs[i], rx_mr, rx_buf[1 + i]);

  uint32_t counter_id;
  struct mlx5dv_devx_obj *counter = alloc_counter(ctx, &counter_id);

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
  struct mlx5dv_dr_action *count = MUST(mlx5dv_dr_action_create_flow_counter(counter, 0));
  struct mlx5dv_dr_action *to_dns = MUST(mlx5dv_dr_action_create_dest_ibv_qp(dns_qp));
  struct mlx5dv_dr_action *to_rss = MUST(mlx5dv_dr_action_create_dest_ibv_qp(rss_qp));
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
    printf("refused [dest_ibv_qp, tag]: %s\n\n", strerror(errno));

  /* Traffic, sent on the sender QP: 8 TCP flows to port 80, 2 SSH attempts, 3 DNS queries. */
  int sent = 0;
  for (int i = 0; i < 13; ++i) {
    size_t len = i < 8 ? frame(tx_buf, 6, (uint8_t)(10 + i), (uint16_t)(40000 + 7 * i), 80)
                 : i < 10 ? frame(tx_buf, 6, (uint8_t)(20 + i), 50000, 22)
                          : frame(tx_buf, 17, (uint8_t)(30 + i), 5353, 53);
    struct ibv_sge sge = {(uintptr_t)tx_buf, (uint32_t)len, tx_mr->lkey};
    struct ibv_send_wr wr = {.wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                             .send_flags = IBV_SEND_SIGNALED}, *bad;
    MUST_ZERO(ibv_post_send(sender, &wr, &bad));
    struct ibv_wc wc;
    while (ibv_poll_cq(tx_cq, 1, &wc) == 0) {
    }
    if (wc.status == IBV_WC_SUCCESS) ++sent;
  }

  /* Receive completions: which queue, how many bytes, which flow tag. */
  int dns_frames = 0, rss_frames[2] = {0, 0};
  struct ibv_poll_cq_attr poll_attr = {0};
  if (ibv_start_poll(rx_cq, &poll_attr) == 0) {
    do {
      uint32_t qpn = ibv_wc_read_qp_num(rx_cq);
      if (rx_cq->status != IBV_WC_SUCCESS) {
        fprintf(stderr, "a receive completed with status %d\n", rx_cq->status);
        return 1;
      }
      if (qpn == dns_qp->qp_num) {
        printf("DNS qp 0x%x: %u bytes, flow tag 0x%x\n", qpn, ibv_wc_read_byte_len(rx_cq), ibv_wc_read_flow_tag(rx_cq));
        ++dns_frames;
      }
      for (int w = 0; w < 2; ++w) rss_frames[w] += qpn == wqs[w]->wq_num;
    } while (ibv_next_poll(rx_cq) == 0);
    ibv_end_poll(rx_cq);
  }
  for (int w = 0; w < 2; ++w) printf("RSS wq 0x%x: %d frame(s)\n", wqs[w]->wq_num, rss_frames[w]);
  uint64_t packets, bytes;
  query_counter(counter, counter_id, &packets, &bytes);
  printf("DNS counter: %llu packets, %llu bytes\n", (unsigned long long)packets, (unsigned long long)bytes);
  const int got = dns_frames + rss_frames[0] + rss_frames[1];
  printf("%d of %d frames sent delivered; the 2 SSH frames were dropped\n", got, sent);

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
  MUST_ZERO(mlx5dv_devx_obj_destroy(counter));
  MUST_ZERO(ibv_destroy_qp(rss_qp));
  MUST_ZERO(ibv_destroy_rwq_ind_table(ind));
  for (int i = 0; i < 2; ++i) MUST_ZERO(ibv_destroy_wq(wqs[i]));
  MUST_ZERO(ibv_destroy_qp(sender));
  MUST_ZERO(ibv_destroy_qp(dns_qp));
  MUST_ZERO(ibv_destroy_cq(tx_cq));
  MUST_ZERO(ibv_destroy_cq(ibv_cq_ex_to_cq(rx_cq)));
  MUST_ZERO(ibv_dereg_mr(tx_mr));
  MUST_ZERO(ibv_dereg_mr(rx_mr));
  MUST_ZERO(ibv_dealloc_pd(pd));
  MUST_ZERO(ibv_close_device(ctx));
  return got == 11 && packets == 3 ? 0 : 1;
}
