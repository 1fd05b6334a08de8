/* raw_steering: a ConnectX program, as written for the hardware, that drsim runs unmodified.
 *
 * It opens mlx5_0 through libibverbs, makes two raw-packet QPs (a client that sends and a server that
 * receives), and steers with mlx5dv_dr_* in the NIC_RX domain: table 0 sends IPv4 to table 1, where UDP
 * to port 4791 gets flow tag 0x41 and goes to the server QP. The client sends two UDP frames, to ports
 * 4791 and 9999. The wire loops them back into NIC_RX, so exactly the first must arrive on the server
 * QP, byte for byte, its extended CQ reporting the flow tag. Only rdma-core's headers and calls are used:
 * no drsim header, no drsim call.
 *
 * Build it outside Bazel against an install (scripts/install):
 *   cc raw_steering.c -o raw_steering $(pkg-config --cflags --libs drsim) -libverbs -lmlx5
 *   drsim-run -- ./raw_steering
 * or with the CMake project beside it (CMakeLists.txt). Exit status 0 when every check holds. */
#include <errno.h>
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Exits naming the call when a pointer-returning call fails (NULL, errno set). */
#define MUST(call)                                                \
  ({                                                              \
    __typeof__(call) must_result_ = (call);                       \
    if (!must_result_) {                                          \
      fprintf(stderr, "%s failed: %s\n", #call, strerror(errno)); \
      exit(1);                                                    \
    }                                                             \
    must_result_;                                                 \
  })
/* Exits naming the call when an int-returning call fails (a positive errno, or -1 with errno set). */
#define MUST_ZERO(call)                                                                       \
  do {                                                                                        \
    int must_err_ = (call);                                                                   \
    if (must_err_ != 0) {                                                                     \
      fprintf(stderr, "%s failed: %s\n", #call, strerror(must_err_ > 0 ? must_err_ : errno)); \
      exit(1);                                                                                \
    }                                                                                         \
  } while (0)

enum {
  kSteeredPort = 4791,
  kOtherPort = 9999,
  kFlowTag = 0x41,
  kFrameLen = 64,
  kSlot = 2048, /* bytes per receive buffer */
  kRecvSlots = 4,
};

/* The 448-byte mlx5 match parameters (fte_match_param), and fields in them by bit offset, MSB first. */
struct match {
  size_t match_sz;
  uint64_t match_buf[56];
};
enum {
  OUTER_IP_PROTOCOL = 0x080, /* 8 bits */
  OUTER_IP_VERSION = 0x093,  /* 4 bits */
  OUTER_UDP_DPORT = 0x0f0,   /* 16 bits */
};

static void set(struct match* m, unsigned bit, unsigned width, uint32_t v) {
  uint8_t* buf = (uint8_t*)m->match_buf;
  m->match_sz = sizeof m->match_buf;
  for (unsigned i = 0; i < width; ++i) {
    uint8_t mask = (uint8_t)(0x80u >> ((bit + i) % 8));
    if ((v >> (width - 1 - i)) & 1u)
      buf[(bit + i) / 8] |= mask;
    else
      buf[(bit + i) / 8] &= (uint8_t)~mask;
  }
}

static struct mlx5dv_flow_match_parameters* params(struct match* m) {
  return (struct mlx5dv_flow_match_parameters*)m;
}

/* An Ethernet/IPv4/UDP frame of kFrameLen bytes from 192.0.2.1:5000 to 192.0.2.2:<dport>. */
static void udp_frame(uint8_t* f, uint16_t dport) {
  static const uint8_t eth[] = {0x02, 0x15, 0xb3, 0, 0, 0x02, 0x02, 0x15, 0xb3, 0, 0, 0x01, 0x08, 0x00};
  memset(f, 0, kFrameLen);
  memcpy(f, eth, sizeof eth);
  uint8_t* ip = f + 14;
  uint16_t ip_len = kFrameLen - 14, udp_len = ip_len - 20;
  ip[0] = 0x45, ip[2] = (uint8_t)(ip_len >> 8), ip[3] = (uint8_t)ip_len, ip[8] = 64, ip[9] = 17;
  ip[12] = 192, ip[14] = 2, ip[15] = 1, ip[16] = 192, ip[18] = 2, ip[19] = 2;
  uint32_t sum = 0;
  for (int i = 0; i < 20; i += 2) sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  ip[10] = (uint8_t)(~sum >> 8), ip[11] = (uint8_t)~sum;
  uint8_t* udp = ip + 20;
  udp[0] = 5000 >> 8, udp[1] = 5000 & 0xff, udp[2] = (uint8_t)(dport >> 8), udp[3] = (uint8_t)dport;
  udp[4] = (uint8_t)(udp_len >> 8), udp[5] = (uint8_t)udp_len; /* checksum 0: none, as IPv4 allows */
  for (int i = 42; i < kFrameLen; ++i) f[i] = (uint8_t)i;
}

/* A raw-packet QP on port 1, moved RESET -> INIT -> RTR -> RTS. */
static struct ibv_qp* raw_qp(struct ibv_pd* pd, struct ibv_cq* cq) {
  struct ibv_qp_init_attr init = {
      .send_cq = cq,
      .recv_cq = cq,
      .cap = {.max_send_wr = 8, .max_recv_wr = kRecvSlots, .max_send_sge = 1, .max_recv_sge = 1},
      .qp_type = IBV_QPT_RAW_PACKET,
  };
  struct ibv_qp* qp = MUST(ibv_create_qp(pd, &init));
  struct ibv_qp_attr attr = {.qp_state = IBV_QPS_INIT, .port_num = 1};
  MUST_ZERO(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PORT));
  attr.qp_state = IBV_QPS_RTR;
  MUST_ZERO(ibv_modify_qp(qp, &attr, IBV_QP_STATE));
  attr.qp_state = IBV_QPS_RTS;
  MUST_ZERO(ibv_modify_qp(qp, &attr, IBV_QP_STATE));
  return qp;
}

/* Polls `cq` for up to about a second; returns how many completions landed in `wc` (at most `max`). */
static int poll_for(struct ibv_cq* cq, struct ibv_wc* wc, int max, int want) {
  int got = 0;
  for (int tries = 0; tries < 1000 && got < want; ++tries) {
    int n = ibv_poll_cq(cq, max - got, wc + got);
    if (n < 0) {
      fprintf(stderr, "ibv_poll_cq failed: %d\n", n);
      exit(1);
    }
    got += n;
    if (got < want) nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
  }
  return got;
}

/* A receive completion read from an extended CQ, with the flow tag the steering rule set. */
struct recv_completion {
  uint64_t wr_id;
  enum ibv_wc_status status;
  enum ibv_wc_opcode opcode;
  uint32_t byte_len;
  uint32_t flow_tag;
};

/* Polls the extended `cq` for up to about a second, until `want` completions (at most `max`) arrived. */
static int poll_ex_for(struct ibv_cq_ex* cq, struct recv_completion* rc, int max, int want) {
  int got = 0;
  struct ibv_poll_cq_attr attr = {0};
  for (int tries = 0; tries < 1000 && got < want; ++tries) {
    int err = ibv_start_poll(cq, &attr);
    if (err == ENOENT) {
      nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
      continue;
    }
    if (err != 0) {
      fprintf(stderr, "ibv_start_poll failed: %s\n", strerror(err));
      exit(1);
    }
    do {
      if (got < max) {
        rc[got] = (struct recv_completion){cq->wr_id, cq->status, ibv_wc_read_opcode(cq),
                                           ibv_wc_read_byte_len(cq), ibv_wc_read_flow_tag(cq)};
      }
      ++got;
    } while (ibv_next_poll(cq) == 0);
    ibv_end_poll(cq);
  }
  return got < max ? got : max;
}

int main(void) {
  int num_devices = 0;
  struct ibv_device** list = MUST(ibv_get_device_list(&num_devices));
  struct ibv_device* device = NULL;
  for (int i = 0; i < num_devices; ++i)
    if (strcmp(ibv_get_device_name(list[i]), "mlx5_0") == 0) device = list[i];
  if (device == NULL) {
    fprintf(stderr, "no mlx5_0 among %d RDMA device(s)\n", num_devices);
    return 1;
  }
  struct ibv_context* ctx = MUST(ibv_open_device(device));
  struct ibv_device_attr dev_attr;
  MUST_ZERO(ibv_query_device(ctx, &dev_attr));
  printf("opened %s: vendor 0x%x, part 0x%x\n", ibv_get_device_name(device), dev_attr.vendor_id,
         dev_attr.vendor_part_id);

  struct ibv_pd* pd = MUST(ibv_alloc_pd(ctx));
  static uint8_t buf[(kRecvSlots + 2) * kSlot];
  struct ibv_mr* mr = MUST(ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE));
  struct ibv_cq* client_cq = MUST(ibv_create_cq(ctx, 16, NULL, NULL, 0));
  struct ibv_cq_init_attr_ex server_cq_attr = {
      .cqe = 16,
      .wc_flags = IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_FLOW_TAG,
  };
  struct ibv_cq_ex* server_cq_ex = MUST(ibv_create_cq_ex(ctx, &server_cq_attr));
  struct ibv_cq* server_cq = ibv_cq_ex_to_cq(server_cq_ex);
  struct ibv_qp* client = raw_qp(pd, client_cq);
  struct ibv_qp* server = raw_qp(pd, server_cq);

  /* NIC_RX: table 0 (the root) sends IPv4 to table 1; there UDP to kSteeredPort is tagged and goes to the
   * server QP. Nothing else matches, so the other frame is not delivered. */
  struct mlx5dv_dr_domain* rx = MUST(mlx5dv_dr_domain_create(ctx, MLX5DV_DR_DOMAIN_TYPE_NIC_RX));
  struct mlx5dv_dr_table* root = MUST(mlx5dv_dr_table_create(rx, 0));
  struct mlx5dv_dr_table* udp = MUST(mlx5dv_dr_table_create(rx, 1));
  struct match ipv4_mask = {0}, ipv4 = {0};
  set(&ipv4_mask, OUTER_IP_VERSION, 4, 4); /* software steering takes 4 or 6 here, not 0xf */
  set(&ipv4, OUTER_IP_VERSION, 4, 4);
  struct mlx5dv_dr_matcher* m_ipv4 = MUST(mlx5dv_dr_matcher_create(root, 0, 1 << 0, params(&ipv4_mask)));
  struct mlx5dv_dr_action* to_udp = MUST(mlx5dv_dr_action_create_dest_table(udp));
  struct mlx5dv_dr_rule* r_ipv4 = MUST(mlx5dv_dr_rule_create(m_ipv4, params(&ipv4), 1, &to_udp));

  struct match port_mask = ipv4_mask, port = ipv4;
  set(&port_mask, OUTER_IP_PROTOCOL, 8, 0xff);
  set(&port_mask, OUTER_UDP_DPORT, 16, 0xffff);
  set(&port, OUTER_IP_PROTOCOL, 8, 17);
  set(&port, OUTER_UDP_DPORT, 16, kSteeredPort);
  struct mlx5dv_dr_matcher* m_port = MUST(mlx5dv_dr_matcher_create(udp, 0, 1 << 0, params(&port_mask)));
  struct mlx5dv_dr_action* tag = MUST(mlx5dv_dr_action_create_tag(kFlowTag));
  struct mlx5dv_dr_action* to_server = MUST(mlx5dv_dr_action_create_dest_ibv_qp(server));
  struct mlx5dv_dr_action* port_actions[] = {tag, to_server};
  struct mlx5dv_dr_rule* r_port = MUST(mlx5dv_dr_rule_create(m_port, params(&port), 2, port_actions));

  /* Receives first, in slots 2.., then the two frames from slots 0 and 1. */
  for (int i = 0; i < kRecvSlots; ++i) {
    struct ibv_sge sge = {.addr = (uintptr_t)(buf + (2 + i) * kSlot), .length = kSlot, .lkey = mr->lkey};
    struct ibv_recv_wr wr = {.wr_id = 100 + i, .sg_list = &sge, .num_sge = 1}, *bad = NULL;
    MUST_ZERO(ibv_post_recv(server, &wr, &bad));
  }
  const uint16_t ports[2] = {kSteeredPort, kOtherPort};
  for (int i = 0; i < 2; ++i) {
    udp_frame(buf + i * kSlot, ports[i]);
    struct ibv_sge sge = {.addr = (uintptr_t)(buf + i * kSlot), .length = kFrameLen, .lkey = mr->lkey};
    struct ibv_send_wr wr = {.wr_id = i,
                             .sg_list = &sge,
                             .num_sge = 1,
                             .opcode = IBV_WR_SEND,
                             .send_flags = IBV_SEND_SIGNALED},
                       *bad = NULL;
    MUST_ZERO(ibv_post_send(client, &wr, &bad));
  }
  struct ibv_wc wc[8];
  int sent = poll_for(client_cq, wc, 8, 2), sent_ok = 0;
  for (int i = 0; i < sent; ++i) sent_ok += wc[i].status == IBV_WC_SUCCESS && wc[i].opcode == IBV_WC_SEND;
  printf("client qp 0x%x: %d of 2 sends completed\n", client->qp_num, sent_ok);

  int failures = sent_ok == 2 ? 0 : 1;
  struct recv_completion rc[8];
  int received = poll_ex_for(server_cq_ex, rc, 8, 2); /* waits for 2: a second arrival would be wrong */
  for (int i = 0; i < received; ++i) {
    if (rc[i].status != IBV_WC_SUCCESS || rc[i].opcode != IBV_WC_RECV || rc[i].wr_id < 100 ||
        rc[i].wr_id >= 100 + kRecvSlots) {
      printf("server qp: bad completion (status %d, opcode %d, wr_id %llu)\n", rc[i].status, rc[i].opcode,
             (unsigned long long)rc[i].wr_id);
      ++failures;
      continue;
    }
    const uint8_t* got = buf + (2 + (rc[i].wr_id - 100)) * kSlot;
    uint16_t dport = (uint16_t)(got[36] << 8 | got[37]);
    int same = rc[i].byte_len == kFrameLen && memcmp(got, buf, kFrameLen) == 0;
    printf("server qp 0x%x: received %u bytes, UDP port %u, flow tag 0x%x, %s\n", server->qp_num,
           rc[i].byte_len, dport, rc[i].flow_tag, same ? "the bytes sent" : "NOT the bytes sent");
    failures += !same + (rc[i].flow_tag != kFlowTag);
  }
  printf("%d of 2 frames steered to the server qp (expected 1: port %d only)\n", received, kSteeredPort);
  failures += received != 1;

  MUST_ZERO(mlx5dv_dr_rule_destroy(r_port));
  MUST_ZERO(mlx5dv_dr_rule_destroy(r_ipv4));
  MUST_ZERO(mlx5dv_dr_matcher_destroy(m_port));
  MUST_ZERO(mlx5dv_dr_matcher_destroy(m_ipv4));
  MUST_ZERO(mlx5dv_dr_action_destroy(to_server));
  MUST_ZERO(mlx5dv_dr_action_destroy(tag));
  MUST_ZERO(mlx5dv_dr_action_destroy(to_udp));
  MUST_ZERO(mlx5dv_dr_table_destroy(udp));
  MUST_ZERO(mlx5dv_dr_table_destroy(root));
  MUST_ZERO(mlx5dv_dr_domain_destroy(rx));
  MUST_ZERO(ibv_destroy_qp(server));
  MUST_ZERO(ibv_destroy_qp(client));
  MUST_ZERO(ibv_destroy_cq(server_cq));
  MUST_ZERO(ibv_destroy_cq(client_cq));
  MUST_ZERO(ibv_dereg_mr(mr));
  MUST_ZERO(ibv_dealloc_pd(pd));
  MUST_ZERO(ibv_close_device(ctx));
  ibv_free_device_list(list);
  if (failures == 0)
    printf("raw_steering: OK\n");
  else
    printf("raw_steering: %d check(s) failed\n", failures);
  return failures == 0 ? 0 : 1;
}
