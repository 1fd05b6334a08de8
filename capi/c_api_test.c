/* The C API from C, as a user's program sees it: rdma-core's <infiniband/mlx5dv.h> plus drsim.h, linked
 * either statically (//capi:capi) or against libdrsim_mlx5dv.so. Steering on NIC_RX and through the
 * FDB, flow tags and counters, rdma-core's errno conventions (NULL + errno, positive errno from destroy,
 * EBUSY while referenced), drsim_last_error, and a call handed to libmlx5 for a context that is not the
 * software NIC's. */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/mlx5dv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capi/c_check.h"
#include "capi/c_match.h"
#include "capi/drsim.h"

/* Field offsets in bits (reference section 2.1): outer headers at 0, misc parameters at 0x200. */
enum {
  OUTER_IP_PROTOCOL = 0x080,
  OUTER_IP_VERSION = 0x093,
  OUTER_UDP_DPORT = 0x0f0,
  MISC_SOURCE_PORT = 0x200 + 0x030
};

/* An Ethernet/IPv4/UDP frame to `dport` with `payload` bytes of payload; returns its length. */
static size_t udp_frame(uint8_t* f, uint16_t dport, size_t payload) {
  static const uint8_t head[] = {0x02, 0, 0, 0, 0, 0x01, 0x02, 0, 0, 0, 0, 0x02, 0x08, 0x00};
  size_t len = 14 + 20 + 8 + payload;
  memset(f, 0, len);
  memcpy(f, head, sizeof head);
  uint8_t* ip = f + 14;
  ip[0] = 0x45;
  ip[2] = (uint8_t)((20 + 8 + payload) >> 8);
  ip[3] = (uint8_t)(20 + 8 + payload);
  ip[8] = 64;
  ip[9] = 17;
  ip[12] = 10, ip[15] = 1;
  ip[16] = 10, ip[19] = 2;
  uint32_t sum = 0;
  for (int i = 0; i < 20; i += 2) sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  ip[10] = (uint8_t)(~sum >> 8);
  ip[11] = (uint8_t)~sum;
  uint8_t* udp = ip + 20;
  udp[0] = 0x30, udp[1] = 0x39;
  udp[2] = (uint8_t)(dport >> 8), udp[3] = (uint8_t)dport;
  udp[4] = (uint8_t)((8 + payload) >> 8), udp[5] = (uint8_t)(8 + payload);
  return len;
}

static void nic_rx_steering(struct ibv_context* ctx) {
  struct ibv_qp* qp = drsim_create_qp(ctx, 0);
  CHECK(qp != NULL && qp->qp_type == IBV_QPT_RAW_PACKET && qp->context == ctx);
  struct mlx5dv_devx_obj* counters = drsim_counter_alloc(ctx, 4);
  CHECK(counters != NULL);

  struct mlx5dv_dr_domain* dmn = mlx5dv_dr_domain_create(ctx, MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
  CHECK(dmn != NULL);
  struct mlx5dv_dr_table* root = mlx5dv_dr_table_create(dmn, 0);
  struct mlx5dv_dr_table* t1 = mlx5dv_dr_table_create(dmn, 1);
  CHECK(root != NULL && t1 != NULL);

  /* Root: everything to table 1. */
  struct match any;
  match_init(&any);
  struct mlx5dv_dr_matcher* all = mlx5dv_dr_matcher_create(root, 0, 0, P(&any));
  CHECK(all != NULL);
  struct mlx5dv_dr_action* to_t1 = mlx5dv_dr_action_create_dest_table(t1);
  struct mlx5dv_dr_action* jump_list[] = {to_t1};
  struct mlx5dv_dr_rule* jump = mlx5dv_dr_rule_create(all, P(&any), 1, jump_list);
  CHECK(jump != NULL);

  /* Table 1: UDP port 53 -> tag 0x77, count, QP. */
  struct match mask, value;
  match_init(&mask);
  set_bits(&mask, OUTER_IP_VERSION, 4, 4);
  set_bits(&mask, OUTER_UDP_DPORT, 16, 0xffff);
  struct mlx5dv_dr_matcher* by_port = mlx5dv_dr_matcher_create(t1, 0, 1 << 0 /* outer */, P(&mask));
  CHECK(by_port != NULL);
  match_init(&value);
  set_bits(&value, OUTER_IP_VERSION, 4, 4);
  set_bits(&value, OUTER_UDP_DPORT, 16, 53);
  struct mlx5dv_dr_action* tag = mlx5dv_dr_action_create_tag(0x77);
  struct mlx5dv_dr_action* count = mlx5dv_dr_action_create_flow_counter(counters, 2);
  struct mlx5dv_dr_action* to_qp = mlx5dv_dr_action_create_dest_ibv_qp(qp);
  CHECK(tag != NULL && count != NULL && to_qp != NULL);
  struct mlx5dv_dr_action* dns_list[] = {tag, count, to_qp};
  struct mlx5dv_dr_rule* dns = mlx5dv_dr_rule_create(by_port, P(&value), 3, dns_list);
  CHECK(dns != NULL);

  /* rdma-core's errors: an action after the destination, a value bit outside the mask, a mask the
   * matcher cannot use. */
  struct mlx5dv_dr_action* bad_order[] = {to_qp, tag};
  errno = 0;
  CHECK(mlx5dv_dr_rule_create(by_port, P(&value), 2, bad_order) == NULL && errno == EOPNOTSUPP);
  CHECK(strstr(drsim_last_error(), "action[1]") != NULL);
  struct match outside = value; /* ip_protocol is outside the mask (in a section the matcher uses) */
  set_bits(&outside, OUTER_IP_PROTOCOL, 8, 17);
  CHECK(mlx5dv_dr_rule_create(by_port, P(&outside), 3, dns_list) == NULL && errno == EINVAL);
  struct match ignored = value; /* misc is not in the matcher's criteria: rdma-core ignores it */
  set_bits(&ignored, MISC_SOURCE_PORT, 16, 1);
  struct mlx5dv_dr_rule* dup = mlx5dv_dr_rule_create(by_port, P(&ignored), 3, dns_list);
  CHECK(dup != NULL); /* a duplicate of `dns`, allowed by default; the older rule keeps winning */
  CHECK(mlx5dv_dr_rule_destroy(dup) == 0);
  struct match partial;
  match_init(&partial);
  set_bits(&partial, MISC_SOURCE_PORT, 16, 0x00ff);
  CHECK(mlx5dv_dr_matcher_create(t1, 1, 1 << 1, P(&partial)) == NULL && errno == EOPNOTSUPP);
  CHECK(strstr(drsim_last_error(), "source_port") != NULL);
  CHECK(mlx5dv_dr_domain_create(ctx, (enum mlx5dv_dr_domain_type)3) == NULL && errno == EINVAL);
  CHECK(mlx5dv_dr_action_create_packet_reformat(dmn, 0, (enum mlx5dv_flow_action_packet_reformat_type)4, 0,
                                                NULL) == NULL &&
        errno == EINVAL);

  /* Frames from the wire. */
  uint8_t frame[256], got[256];
  size_t len = udp_frame(frame, 53, 18);
  CHECK(drsim_send(ctx, -1, frame, len) == 0);
  uint32_t flow_tag = 0;
  CHECK(drsim_recv_qp(qp, got, 10, &flow_tag) == -EMSGSIZE); /* too small: the frame stays queued */
  CHECK(drsim_recv_qp(qp, got, sizeof got, &flow_tag) == (int)len);
  CHECK(memcmp(got, frame, len) == 0 && flow_tag == 0x77);
  CHECK(drsim_recv_qp(qp, got, sizeof got, &flow_tag) == 0);
  len = udp_frame(frame, 54, 0); /* misses table 1: the NIC_RX default drops it */
  CHECK(drsim_send(ctx, -1, frame, len) == 0);
  CHECK(drsim_recv_qp(qp, got, sizeof got, NULL) == 0);
  CHECK(drsim_recv_port(ctx, 0, got, sizeof got) == 0);
  uint64_t packets = 0, bytes = 0;
  CHECK(drsim_counter_query(counters, 2, &packets, &bytes) == 0 && packets == 1 && bytes == 60);
  CHECK(drsim_counter_query(counters, 4, &packets, &bytes) == EINVAL);
  CHECK(drsim_send(ctx, 7, frame, len) == EINVAL);

  /* Still referenced: EBUSY, and nothing changes. */
  CHECK(mlx5dv_dr_table_destroy(t1) == EBUSY && errno == EBUSY);
  CHECK(mlx5dv_dr_matcher_destroy(by_port) == EBUSY);
  CHECK(mlx5dv_dr_action_destroy(to_qp) == EBUSY);
  CHECK(mlx5dv_dr_domain_destroy(dmn) == EBUSY);
  CHECK(drsim_destroy_qp(qp) == EBUSY);
  CHECK(mlx5dv_devx_obj_destroy(counters) == EBUSY);
  CHECK(drsim_close(ctx) == EBUSY);
  len = udp_frame(frame, 53, 0);
  CHECK(drsim_send(ctx, -1, frame, len) == 0);
  CHECK(drsim_recv_qp(qp, got, sizeof got, &flow_tag) == (int)len && flow_tag == 0x77);

  /* rdma-core's CSV dump: the domain record, its tables, matchers and rules; -EINVAL for NULL. */
  FILE* dump = tmpfile();
  CHECK(dump != NULL);
  CHECK(mlx5dv_dump_dr_domain(dump, dmn) == 0);
  CHECK(mlx5dv_dump_dr_rule(dump, dns) == 0);
  rewind(dump);
  char line[512];
  int domains = 0, tables = 0, rules = 0;
  while (fgets(line, sizeof line, dump)) {
    domains += strncmp(line, "3000,", 5) == 0;
    tables += strncmp(line, "3100,", 5) == 0;
    rules += strncmp(line, "3300,", 5) == 0;
  }
  fclose(dump);
  /* The domain dump: 1 domain, 2 tables, 2 rules; the rule dump repeats its domain and table records. */
  CHECK(domains == 2 && tables == 3 && rules == 3);
  CHECK(mlx5dv_dump_dr_domain(NULL, dmn) == -EINVAL);
  CHECK(mlx5dv_dump_dr_table(stdout, NULL) == -EINVAL);

  /* Teardown in dependency order. */
  CHECK(mlx5dv_dr_rule_destroy(dns) == 0);
  CHECK(mlx5dv_dr_rule_destroy(jump) == 0);
  CHECK(mlx5dv_dr_matcher_destroy(by_port) == 0);
  CHECK(mlx5dv_dr_matcher_destroy(all) == 0);
  CHECK(mlx5dv_dr_action_destroy(tag) == 0);
  CHECK(mlx5dv_dr_action_destroy(count) == 0);
  CHECK(mlx5dv_dr_action_destroy(to_qp) == 0);
  CHECK(mlx5dv_dr_action_destroy(to_t1) == 0);
  CHECK(mlx5dv_dr_table_destroy(t1) == 0);
  CHECK(mlx5dv_dr_table_destroy(root) == 0);
  CHECK(mlx5dv_dr_domain_destroy(dmn) == 0);
  CHECK(drsim_destroy_qp(qp) == 0);
  CHECK(mlx5dv_devx_obj_destroy(counters) == 0);
}

/* FDB: wire traffic for VF1 by source port; VF1 has no NIC_RX steering, so its interface receives it;
 * VF1's frames get a VLAN tag and leave by the wire. */
static void eswitch(struct ibv_context* ctx) {
  struct mlx5dv_dr_domain* fdb = mlx5dv_dr_domain_create(ctx, MLX5DV_DR_DOMAIN_TYPE_FDB);
  CHECK(fdb != NULL);
  struct ibv_context* vf1 = drsim_vport_context(ctx, 1);
  CHECK(vf1 != NULL && vf1 != ctx);
  CHECK(mlx5dv_dr_domain_create(vf1, MLX5DV_DR_DOMAIN_TYPE_FDB) == NULL && errno == EOPNOTSUPP);
  CHECK(drsim_vport_context(ctx, 2) == NULL && errno == EINVAL);

  struct mlx5dv_dr_table *t1 = mlx5dv_dr_table_create(fdb, 1), *root = mlx5dv_dr_table_create(fdb, 0);
  struct match any, mask, from_wire, from_vf1;
  match_init(&any);
  struct mlx5dv_dr_matcher* all = mlx5dv_dr_matcher_create(root, 0, 0, P(&any));
  struct mlx5dv_dr_action* to_t1 = mlx5dv_dr_action_create_dest_table(t1);
  struct mlx5dv_dr_action* jump_list[] = {to_t1};
  struct mlx5dv_dr_rule* jump = mlx5dv_dr_rule_create(all, P(&any), 1, jump_list);
  match_init(&mask);
  set_bits(&mask, MISC_SOURCE_PORT, 16, 0xffff);
  struct mlx5dv_dr_matcher* by_source = mlx5dv_dr_matcher_create(t1, 0, 1 << 1 /* misc */, P(&mask));
  CHECK(jump != NULL && by_source != NULL);
  match_init(&from_wire);
  set_bits(&from_wire, MISC_SOURCE_PORT, 16, 0xffff);
  match_init(&from_vf1);
  set_bits(&from_vf1, MISC_SOURCE_PORT, 16, 1);
  struct mlx5dv_dr_action* to_vf1 = mlx5dv_dr_action_create_dest_vport(fdb, 1);
  struct mlx5dv_dr_action* to_wire = mlx5dv_dr_action_create_dest_vport(fdb, 0xffff);
  struct mlx5dv_dr_action* vlan = mlx5dv_dr_action_create_push_vlan(fdb, htonl(0x8100u << 16 | 42));
  CHECK(to_vf1 != NULL && to_wire != NULL && vlan != NULL);
  CHECK(mlx5dv_dr_action_create_push_vlan(fdb, htonl(0x9100u << 16 | 42)) == NULL && errno == EINVAL);
  CHECK(mlx5dv_dr_action_create_dest_vport(fdb, 0x10000) == NULL && errno == EINVAL);
  struct mlx5dv_dr_action *in_list[] = {to_vf1}, *out_list[] = {vlan, to_wire};
  struct mlx5dv_dr_rule* in = mlx5dv_dr_rule_create(by_source, P(&from_wire), 1, in_list);
  struct mlx5dv_dr_rule* out = mlx5dv_dr_rule_create(by_source, P(&from_vf1), 2, out_list);
  CHECK(in != NULL && out != NULL);

  uint8_t frame[256], got[256];
  size_t len = udp_frame(frame, 80, 10);
  CHECK(drsim_send(ctx, -1, frame, len) == 0);
  CHECK(drsim_recv_port(ctx, 1, got, sizeof got) == (int)len && memcmp(got, frame, len) == 0);
  CHECK(drsim_recv_port(ctx, 1, got, sizeof got) == 0);
  CHECK(drsim_send(ctx, 1, frame, len) == 0);
  CHECK(drsim_recv_port(ctx, -1, got, sizeof got) == (int)len + 4);
  CHECK(got[12] == 0x81 && got[13] == 0x00 && got[15] == 42 && memcmp(got + 16, frame + 12, len - 12) == 0);

  CHECK(mlx5dv_dr_rule_destroy(in) == 0 && mlx5dv_dr_rule_destroy(out) == 0 &&
        mlx5dv_dr_rule_destroy(jump) == 0);
  CHECK(mlx5dv_dr_matcher_destroy(by_source) == 0 && mlx5dv_dr_matcher_destroy(all) == 0);
  CHECK(mlx5dv_dr_action_destroy(to_vf1) == 0 && mlx5dv_dr_action_destroy(to_wire) == 0);
  CHECK(mlx5dv_dr_action_destroy(vlan) == 0 && mlx5dv_dr_action_destroy(to_t1) == 0);
  CHECK(mlx5dv_dr_table_destroy(t1) == 0 && mlx5dv_dr_table_destroy(root) == 0);
  CHECK(mlx5dv_dr_domain_destroy(fdb) == 0);
}

/* A context that is not the software NIC's goes to rdma-core's libmlx5: its domain type check answers
 * (EINVAL) before it looks at the context, and drsim records no error of its own. */
static void forwards_other_contexts(void) {
  struct ibv_context not_ours;
  memset(&not_ours, 0, sizeof not_ours);
  CHECK(mlx5dv_dr_domain_create(NULL, MLX5DV_DR_DOMAIN_TYPE_NIC_RX) == NULL && errno == EINVAL);
  CHECK(strstr(drsim_last_error(), "ctx is NULL") != NULL);
  errno = 0;
  CHECK(mlx5dv_dr_domain_create(&not_ours, (enum mlx5dv_dr_domain_type)7) == NULL && errno == EINVAL);
  CHECK(strstr(drsim_last_error(), "ctx is NULL") != NULL); /* unchanged: libmlx5 answered */
}

int main(void) {
  CHECK(drsim_open(5000) == NULL && errno == EINVAL);
  struct ibv_context* ctx = drsim_open(1);
  CHECK(ctx != NULL);
  if (ctx == NULL) return 1;
  nic_rx_steering(ctx);
  eswitch(ctx);
  forwards_other_contexts();
  CHECK(drsim_close(ctx) == 0);
  CHECK(drsim_close(ctx) == EINVAL);
  return check_result();
}
