/* Root (level-0) tables take the masks the kernel and the firmware take, from C, as a DPDK-style program
 * writes them: DPDK's mlx5 PMD sets ip_version's mask to 0xf on group 0 (flow_dv_set_match_ip_version), and
 * rdma-core hands root matchers to the kernel (dr_matcher_init_root), not to its STE builders. Each mask is
 * tried with frames on a root table (NIC_RX; then NIC_TX and FDB), and on a level-1 table, where rdma-core
 * refuses it (EOPNOTSUPP). Then
 * what the kernel refuses: sizes and criteria (EINVAL at the matcher), value bits outside the mask and masks
 * the firmware cannot match, reserved bits included (EINVAL at the rule, the matcher having been accepted),
 * with what is installed left working. */
#include <errno.h>
#include <infiniband/mlx5dv.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "capi/c_check.h"
#include "capi/c_match.h"
#include "capi/drsim.h"

/* Header fields, in bits from the start of the buffer: the outer ones (PRM fte_match_set_lyr_2_4) and misc's
 * source_port. */
enum {
  ETHERTYPE = 0x030,
  IP_PROTOCOL = 0x080,
  IP_VERSION = 0x093,
  TCP_DPORT = 0x0b0,
  RESERVED_AT_C0 = 0x0c0,
  L3_OK = 0x0d4,
  UDP_DPORT = 0x0f0,
  DST_IP_31_0 = 0x1e0,
  SOURCE_PORT = 0x200 + 0x30, /* misc (fte_match_set_misc) */
};
enum { OUTER = 1 << 0, MISC = 1 << 1 };

/* A masked field of a test case: where it is, its mask and the rule's value. */
struct field {
  unsigned bit, width;
  uint32_t mask, value;
};

/* A mask and a value of the `n` fields. */
static void build(struct match* mask, struct match* value, const struct field* fields, size_t n) {
  match_init(mask);
  match_init(value);
  for (size_t i = 0; i < n; ++i) {
    set_bits(mask, fields[i].bit, fields[i].width, fields[i].mask);
    set_bits(value, fields[i].bit, fields[i].width, fields[i].value);
  }
}

/* An Ethernet frame carrying IPv`version` (4 or 6) to a destination address ending in `dst_low`, with a UDP
 * (17) or TCP (6) header to `dport`; returns its length. */
static size_t frame(uint8_t* f, int version, uint8_t proto, uint32_t dst_low, uint16_t dport) {
  static const uint8_t macs[] = {0x02, 0, 0, 0, 0, 0x01, 0x02, 0, 0, 0, 0, 0x02};
  const size_t l3 = version == 4 ? 20 : 40, l4 = proto == 6 ? 20 : 8, payload = 18;
  const size_t len = 14 + l3 + l4 + payload;
  memset(f, 0, len);
  memcpy(f, macs, sizeof macs);
  f[12] = version == 4 ? 0x08 : 0x86;
  f[13] = version == 4 ? 0x00 : 0xdd;
  uint8_t* ip = f + 14;
  uint8_t* dst;
  if (version == 4) {
    ip[0] = 0x45;
    ip[2] = (uint8_t)((l3 + l4 + payload) >> 8), ip[3] = (uint8_t)(l3 + l4 + payload);
    ip[8] = 64, ip[9] = proto;
    ip[12] = 10, ip[15] = 1;
    dst = ip + 16;
  } else {
    ip[0] = 0x60;
    ip[4] = (uint8_t)((l4 + payload) >> 8), ip[5] = (uint8_t)(l4 + payload);
    ip[6] = proto, ip[7] = 64;
    ip[8] = 0xfd, ip[23] = 1;
    ip[24] = 0xfd;
    dst = ip + 36;
  }
  dst[0] = (uint8_t)(dst_low >> 24), dst[1] = (uint8_t)(dst_low >> 16);
  dst[2] = (uint8_t)(dst_low >> 8), dst[3] = (uint8_t)dst_low;
  if (version == 4) {
    uint32_t sum = 0;
    for (int i = 0; i < 20; i += 2) sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    ip[10] = (uint8_t)(~sum >> 8), ip[11] = (uint8_t)~sum;
  }
  uint8_t* l4h = ip + l3;
  l4h[0] = 0x30, l4h[1] = 0x39;
  l4h[2] = (uint8_t)(dport >> 8), l4h[3] = (uint8_t)dport;
  if (proto == 6) {
    l4h[12] = 5 << 4;
  } else {
    l4h[4] = (uint8_t)((l4 + payload) >> 8), l4h[5] = (uint8_t)(l4 + payload);
  }
  return len;
}

/* The flow tag the frame arrives with at `qp`, or -1 when it does not arrive (the NIC_RX default drops). */
static long steer(struct ibv_context* ctx, struct ibv_qp* qp, int version, uint8_t proto, uint32_t dst_low,
                  uint16_t dport) {
  uint8_t f[256], got[256];
  size_t len = frame(f, version, proto, dst_low, dport);
  CHECK(drsim_send(ctx, -1, f, len) == 0);
  uint32_t tag = 0;
  int n = drsim_recv_qp(qp, got, sizeof got, &tag);
  if (n <= 0) return -1;
  CHECK(n == (int)len && memcmp(got, f, len) == 0);
  return (long)tag;
}

/* A matcher of `mask` at `prio` on `root` and one rule of `value` tagging `tag` to `to_qp`; and the same
 * mask refused on the level-1 table `t1` with `err`, naming `culprit`: rdma-core's STE builders give
 * EOPNOTSUPP for a field left over, EINVAL when no builder applies at all. */
static struct mlx5dv_dr_matcher* on_root_only(struct mlx5dv_dr_table* root, struct mlx5dv_dr_table* t1,
                                              uint16_t prio, struct match* mask, struct match* value,
                                              uint32_t tag, struct mlx5dv_dr_action* to_qp,
                                              struct mlx5dv_dr_rule** rule, int err, const char* culprit) {
  struct mlx5dv_dr_matcher* m = mlx5dv_dr_matcher_create(root, prio, OUTER, P(mask));
  CHECK(m != NULL);
  struct mlx5dv_dr_action* tag_action = mlx5dv_dr_action_create_tag(tag);
  struct mlx5dv_dr_action* list[] = {tag_action, to_qp};
  *rule = m == NULL ? NULL : mlx5dv_dr_rule_create(m, P(value), 2, list);
  CHECK(*rule != NULL);
  errno = 0;
  CHECK(mlx5dv_dr_matcher_create(t1, prio, OUTER, P(mask)) == NULL && errno == err);
  CHECK(strstr(drsim_last_error(), culprit) != NULL);
  return m;
}

/* A matcher of `mask` at `prio` on `root`, which the kernel takes, and a rule of `value` with the two
 * `actions`, which fails with EINVAL naming `culprit` (the firmware refusing the flow group of the mask). */
static struct mlx5dv_dr_matcher* refused_at_rule(struct mlx5dv_dr_table* root, uint16_t prio,
                                                 struct match* mask, struct match* value,
                                                 struct mlx5dv_dr_action** actions, const char* culprit) {
  struct mlx5dv_dr_matcher* m = mlx5dv_dr_matcher_create(root, prio, OUTER, P(mask));
  CHECK(m != NULL);
  errno = 0;
  CHECK(m != NULL && mlx5dv_dr_rule_create(m, P(value), 2, actions) == NULL && errno == EINVAL);
  CHECK(strstr(drsim_last_error(), culprit) != NULL);
  return m;
}

/* Whether the frame `from_vport` sends comes out at `out_vport` (-1: the wire), byte for byte; false when it
 * does not arrive (a rule dropped it). */
static int passes(struct ibv_context* ctx, int from_vport, int out_vport, int version, uint8_t proto,
                  uint16_t dport) {
  uint8_t f[256], got[256];
  size_t len = frame(f, version, proto, 0x0a000002, dport);
  CHECK(drsim_send(ctx, from_vport, f, len) == 0);
  int n = drsim_recv_port(ctx, out_vport, got, sizeof got);
  if (n <= 0) return 0;
  CHECK(n == (int)len && memcmp(got, f, len) == 0);
  return 1;
}

/* The masks DPDK writes for egress and transfer flows of group 0, on the NIC_TX and FDB root tables of a NIC
 * whose PF has no NIC_RX steering (frames the FDB sends it arrive at its interface): "eth / ipv4 / udp dst
 * is 4789" egress, and "represented_port 1 / eth / ipv4 / tcp dst is 80" transfer (misc.source_port, as the
 * PMD writes it without vport metadata). Each drops its frames; IPv6 frames pass. Level-1 tables refuse the
 * masks (EOPNOTSUPP). */
static void egress_and_transfer_roots(void) {
  struct ibv_context* ctx = drsim_open(1);
  CHECK(ctx != NULL);
  struct mlx5dv_dr_domain* tx = mlx5dv_dr_domain_create(ctx, MLX5DV_DR_DOMAIN_TYPE_NIC_TX);
  struct mlx5dv_dr_domain* fdb = mlx5dv_dr_domain_create(ctx, MLX5DV_DR_DOMAIN_TYPE_FDB);
  CHECK(tx != NULL && fdb != NULL);
  struct mlx5dv_dr_table* tx_root = mlx5dv_dr_table_create(tx, 0);
  struct mlx5dv_dr_table* tx_t1 = mlx5dv_dr_table_create(tx, 1);
  struct mlx5dv_dr_table* fdb_root = mlx5dv_dr_table_create(fdb, 0);
  struct mlx5dv_dr_table* fdb_t1 = mlx5dv_dr_table_create(fdb, 1);
  struct mlx5dv_dr_action* drop = mlx5dv_dr_action_create_drop();
  CHECK(tx_root != NULL && tx_t1 != NULL && fdb_root != NULL && fdb_t1 != NULL && drop != NULL);
  struct match mask, value;

  static const struct field egress_fields[] = {
      {IP_VERSION, 4, 0xf, 4}, {IP_PROTOCOL, 8, 0xff, 17}, {UDP_DPORT, 16, 0xffff, 4789}};
  build(&mask, &value, egress_fields, 3);
  struct mlx5dv_dr_matcher* egress = mlx5dv_dr_matcher_create(tx_root, 0, OUTER, P(&mask));
  struct mlx5dv_dr_rule* egress_rule =
      egress == NULL ? NULL : mlx5dv_dr_rule_create(egress, P(&value), 1, &drop);
  CHECK(egress_rule != NULL);
  errno = 0;
  CHECK(mlx5dv_dr_matcher_create(tx_t1, 0, OUTER, P(&mask)) == NULL && errno == EOPNOTSUPP);

  static const struct field transfer_fields[] = {{SOURCE_PORT, 16, 0xffff, 1},
                                                 {IP_VERSION, 4, 0xf, 4},
                                                 {IP_PROTOCOL, 8, 0xff, 6},
                                                 {TCP_DPORT, 16, 0xffff, 80}};
  build(&mask, &value, transfer_fields, 4);
  struct mlx5dv_dr_matcher* transfer = mlx5dv_dr_matcher_create(fdb_root, 0, OUTER | MISC, P(&mask));
  struct mlx5dv_dr_rule* transfer_rule =
      transfer == NULL ? NULL : mlx5dv_dr_rule_create(transfer, P(&value), 1, &drop);
  CHECK(transfer_rule != NULL);
  errno = 0;
  CHECK(mlx5dv_dr_matcher_create(fdb_t1, 0, OUTER | MISC, P(&mask)) == NULL && errno == EOPNOTSUPP);

  /* The PF sends to the wire through its NIC_TX root. */
  CHECK(!passes(ctx, 0, -1, 4, 17, 4789));
  CHECK(passes(ctx, 0, -1, 6, 17, 4789));
  CHECK(passes(ctx, 0, -1, 4, 17, 4790));
  CHECK(passes(ctx, 0, -1, 4, 6, 4789));
  /* VF 1 sends into the eSwitch, whose FDB root takes its IPv4 TCP port 80; the rest goes to the eSwitch
   * manager (the PF), as the FDB default does. */
  CHECK(!passes(ctx, 1, 0, 4, 6, 80));
  CHECK(passes(ctx, 1, 0, 6, 6, 80));
  CHECK(passes(ctx, 1, 0, 4, 17, 80));

  CHECK(mlx5dv_dr_rule_destroy(egress_rule) == 0 && mlx5dv_dr_rule_destroy(transfer_rule) == 0);
  CHECK(mlx5dv_dr_matcher_destroy(egress) == 0 && mlx5dv_dr_matcher_destroy(transfer) == 0);
  CHECK(mlx5dv_dr_action_destroy(drop) == 0);
  CHECK(mlx5dv_dr_table_destroy(tx_root) == 0 && mlx5dv_dr_table_destroy(tx_t1) == 0);
  CHECK(mlx5dv_dr_table_destroy(fdb_root) == 0 && mlx5dv_dr_table_destroy(fdb_t1) == 0);
  CHECK(mlx5dv_dr_domain_destroy(tx) == 0 && mlx5dv_dr_domain_destroy(fdb) == 0);
  CHECK(drsim_close(ctx) == 0);
}

int main(void) {
  struct ibv_context* ctx = drsim_open(1);
  CHECK(ctx != NULL);
  struct ibv_qp* qp = drsim_create_qp(ctx, 0);
  struct mlx5dv_dr_domain* dmn = mlx5dv_dr_domain_create(ctx, MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
  struct mlx5dv_dr_table* root = mlx5dv_dr_table_create(dmn, 0);
  struct mlx5dv_dr_table* t1 = mlx5dv_dr_table_create(dmn, 1);
  struct mlx5dv_dr_action* to_qp = mlx5dv_dr_action_create_dest_ibv_qp(qp);
  CHECK(qp != NULL && dmn != NULL && root != NULL && t1 != NULL && to_qp != NULL);
  struct mlx5dv_dr_rule* rules[4];

  /* Each mask with the value of its rule: the fields and, per field, mask and value. */
  struct match mask, value;
  /* 1. DPDK's "eth / ipv4 / udp dst is 4789" on group 0: ip_version mask 0xf, value 4. */
  static const struct field v4_udp_fields[] = {
      {IP_VERSION, 4, 0xf, 4}, {IP_PROTOCOL, 8, 0xff, 17}, {UDP_DPORT, 16, 0xffff, 4789}};
  build(&mask, &value, v4_udp_fields, 3);
  struct mlx5dv_dr_matcher* v4_udp =
      on_root_only(root, t1, 0, &mask, &value, 1, to_qp, &rules[0], EOPNOTSUPP, "0xf");
  /* 2. Qualified by the ethertype instead: 0x0800 with an IPv4 destination and a UDP port. */
  static const struct field ethertype_fields[] = {{ETHERTYPE, 16, 0xffff, 0x0800},
                                                  {DST_IP_31_0, 32, 0xffffffff, 0x0a000002},
                                                  {UDP_DPORT, 16, 0xffff, 53}};
  build(&mask, &value, ethertype_fields, 3);
  struct mlx5dv_dr_matcher* by_ethertype =
      on_root_only(root, t1, 1, &mask, &value, 2, to_qp, &rules[1], EOPNOTSUPP, "ip_version");
  /* 3. Neither qualifier: a UDP port alone. */
  static const struct field port_fields[] = {{UDP_DPORT, 16, 0xffff, 7777}};
  build(&mask, &value, port_fields, 1);
  struct mlx5dv_dr_matcher* port_only =
      on_root_only(root, t1, 2, &mask, &value, 3, to_qp, &rules[2], EINVAL, "ip_version");
  /* 4. A partial ip_version mask, compared bit for bit: 4 under mask 4 is IPv4 and IPv6 (6 & 4 == 4). The
   * STE builders take it too (as the L3 type). */
  static const struct field v4_bit_fields[] = {{IP_VERSION, 4, 4, 4}, {TCP_DPORT, 16, 0xffff, 8080}};
  build(&mask, &value, v4_bit_fields, 2);
  struct mlx5dv_dr_matcher* v4_bit = mlx5dv_dr_matcher_create(root, 3, OUTER, P(&mask));
  struct mlx5dv_dr_action* tag4 = mlx5dv_dr_action_create_tag(4);
  struct mlx5dv_dr_action* list4[] = {tag4, to_qp};
  rules[3] = v4_bit == NULL ? NULL : mlx5dv_dr_rule_create(v4_bit, P(&value), 2, list4);
  CHECK(v4_bit != NULL && rules[3] != NULL);

  CHECK(steer(ctx, qp, 4, 17, 0x0a000002, 4789) == 1);
  CHECK(steer(ctx, qp, 6, 17, 0x0a000002, 4789) == -1); /* IPv6: ip_version 6 under 0xf is not 4 */
  CHECK(steer(ctx, qp, 4, 6, 0x0a000002, 4789) == -1);  /* TCP */
  CHECK(steer(ctx, qp, 4, 17, 0x0a000002, 53) == 2);
  CHECK(steer(ctx, qp, 4, 17, 0x0a000003, 53) == -1);
  CHECK(steer(ctx, qp, 6, 17, 0x0a000002, 53) == -1); /* the same low address word, but ethertype 0x86dd */
  CHECK(steer(ctx, qp, 4, 17, 0x0a000009, 7777) == 3);
  CHECK(steer(ctx, qp, 6, 17, 0x0a000009, 7777) == 3);
  CHECK(steer(ctx, qp, 4, 6, 0x0a000009, 7777) == -1); /* tcp_dport is not udp_dport on a root table */
  CHECK(steer(ctx, qp, 4, 6, 0x0a000009, 8080) == 4);
  CHECK(steer(ctx, qp, 6, 6, 0x0a000009, 8080) == 4);
  CHECK(steer(ctx, qp, 4, 17, 0x0a000009, 8080) == -1);

  /* What the kernel refuses at the matcher: sizes and criteria. */
  match_init(&mask);
  set_bits(&mask, IP_VERSION, 4, 0xf);
  mask.match_sz = 0;
  errno = 0;
  CHECK(mlx5dv_dr_matcher_create(root, 4, OUTER, P(&mask)) == NULL && errno == EINVAL);
  CHECK(strstr(drsim_last_error(), "match_sz 0") != NULL);
  mask.match_sz = 513;
  errno = 0;
  CHECK(mlx5dv_dr_matcher_create(root, 4, OUTER, P(&mask)) == NULL && errno == EINVAL);
  mask.match_sz = 448;
  errno = 0;
  CHECK(mlx5dv_dr_matcher_create(root, 4, 0x80, P(&mask)) == NULL && errno == EINVAL);
  CHECK(strstr(drsim_last_error(), "0x80") != NULL);

  /* At the rule: check_valid_spec (value bits outside the mask), and value sizes. */
  match_init(&value);
  set_bits(&value, IP_VERSION, 4, 4);
  set_bits(&value, IP_PROTOCOL, 8, 17);
  set_bits(&value, UDP_DPORT, 16, 4789);
  set_bits(&value, TCP_DPORT, 16, 1);
  struct mlx5dv_dr_action* tag9 = mlx5dv_dr_action_create_tag(9);
  struct mlx5dv_dr_action* list9[] = {tag9, to_qp};
  errno = 0;
  CHECK(mlx5dv_dr_rule_create(v4_udp, P(&value), 2, list9) == NULL && errno == EINVAL);
  CHECK(strstr(drsim_last_error(), "outer.tcp_dport") != NULL);
  set_bits(&value, TCP_DPORT, 16, 0);
  set_bits(&value, IP_VERSION, 4, 4);
  value.match_sz = 0;
  errno = 0;
  CHECK(mlx5dv_dr_rule_create(v4_udp, P(&value), 2, list9) == NULL && errno == EINVAL);
  value.match_sz = 513;
  errno = 0;
  CHECK(mlx5dv_dr_rule_create(v4_udp, P(&value), 2, list9) == NULL && errno == EINVAL);
  /* Any size from 1 to 512 is zero-extended: 32 bytes hold ip_version, ip_protocol and udp_dport. */
  value.match_sz = 32;
  set_bits(&value, UDP_DPORT, 16, 4790);
  struct mlx5dv_dr_rule* short_value = mlx5dv_dr_rule_create(v4_udp, P(&value), 2, list9);
  CHECK(short_value != NULL);
  CHECK(steer(ctx, qp, 4, 17, 0x0a000002, 4790) == 9);

  /* Masks the firmware cannot match: the kernel takes the matcher, and its rules fail with EINVAL. */
  match_init(&mask);
  set_bits(&mask, L3_OK, 1, 1);
  match_init(&value);
  set_bits(&value, L3_OK, 1, 1);
  struct mlx5dv_dr_matcher* l3_ok = refused_at_rule(root, 5, &mask, &value, list9, "outer.l3_ok");
  errno = 0;
  CHECK(mlx5dv_dr_matcher_create(t1, 5, OUTER, P(&mask)) == NULL && errno == EINVAL); /* no builder */
  match_init(&mask);
  set_bits(&mask, RESERVED_AT_C0, 1, 1);
  match_init(&value);
  struct mlx5dv_dr_matcher* reserved = refused_at_rule(root, 6, &mask, &value, list9, "reserved");
  /* The same for a bit in the kernel's reserved tail, bytes 448 to 511: the kernel stores the mask. */
  match_init(&mask);
  mask.match_sz = 512;
  set_bits(&mask, 500 * 8, 8, 1);
  struct mlx5dv_dr_matcher* tail =
      refused_at_rule(root, 7, &mask, &value, list9, "reserved_at_e00 (byte 500");

  /* What was installed still steers. */
  CHECK(steer(ctx, qp, 4, 17, 0x0a000002, 4789) == 1);
  CHECK(steer(ctx, qp, 4, 17, 0x0a000002, 53) == 2);

  CHECK(mlx5dv_dr_matcher_destroy(l3_ok) == 0);
  CHECK(mlx5dv_dr_matcher_destroy(reserved) == 0);
  CHECK(mlx5dv_dr_matcher_destroy(tail) == 0);
  CHECK(mlx5dv_dr_rule_destroy(short_value) == 0);
  for (int i = 0; i < 4; ++i) CHECK(mlx5dv_dr_rule_destroy(rules[i]) == 0);
  CHECK(mlx5dv_dr_matcher_destroy(v4_udp) == 0);
  CHECK(mlx5dv_dr_matcher_destroy(by_ethertype) == 0);
  CHECK(mlx5dv_dr_matcher_destroy(port_only) == 0);
  CHECK(mlx5dv_dr_matcher_destroy(v4_bit) == 0);

  egress_and_transfer_roots();
  return check_result();
}
