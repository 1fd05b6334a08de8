/* Verbs flow steering from C, as a user's program sees it: <infiniband/verbs.h>'s own inline
 * ibv_create_flow / ibv_destroy_flow and ibv_*_counters calls on a drsim QP and context. First the
 * ibv_create_flow(3) man page's example exactly as written (ETH + IPv4 specs, priority 0, port 1), with
 * matching and non-matching frames; then counters, EBUSY while a flow holds its QP, and a malformed
 * request. Linked statically (//capi:capi) and against libdrsim_mlx5dv.so. */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <string.h>

#include "capi/c_check.h"
#include "capi/drsim.h"

/* The man page's flow attribute, type and initializer as written there. The request is passed as programs
 * pass such a packed struct: a pointer to the whole as a struct ibv_flow_attr * (as_flow_attr).
 */
struct raw_eth_flow_attr {
  struct ibv_flow_attr attr;
  struct ibv_flow_spec_eth spec_eth;
  struct ibv_flow_spec_ipv4 spec_ipv4;
} __attribute__((packed));

/* A packed request as the struct ibv_flow_attr * ibv_create_flow takes: the kernel's layout is the packed
 * one, and going through void * says so (a direct cast draws gcc's -Waddress-of-packed-member). */
static struct ibv_flow_attr* as_flow_attr(void* packed) { return packed; }

static void man_page_attr(struct raw_eth_flow_attr* out) {
  struct raw_eth_flow_attr flow_attr = {.attr =
                                            {
                                                .comp_mask = 0,
                                                .type = IBV_FLOW_ATTR_NORMAL,
                                                .size = sizeof(flow_attr),
                                                .priority = 0,
                                                .num_of_specs = 2,
                                                .port = 1,
                                                .flags = 0,
                                            },
                                        .spec_eth = {.type = IBV_FLOW_SPEC_ETH,
                                                     .size = sizeof(struct ibv_flow_spec_eth),
                                                     .val =
                                                         {
                                                             .dst_mac = {0x66, 0x11, 0x22, 0x33, 0x44, 0x55},
                                                             .src_mac = {0x00, 0x00, 0x00, 0x00, 0x00, 0x00},
                                                             .ether_type = 0,
                                                             .vlan_tag = 0,
                                                         },
                                                     .mask =
                                                         {
                                                             .dst_mac = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF},
                                                             .src_mac = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF},
                                                             .ether_type = 0,
                                                             .vlan_tag = 0,
                                                         }},
                                        .spec_ipv4 = {.type = IBV_FLOW_SPEC_IPV4,
                                                      .size = sizeof(struct ibv_flow_spec_ipv4),
                                                      .val =
                                                          {
                                                              .src_ip = 0x0B86C806,
                                                              .dst_ip = 0,
                                                          },
                                                      .mask = {
                                                          .src_ip = 0xFFFFFFFF,
                                                          .dst_ip = 0,
                                                      }}};
  *out = flow_attr;
}

/* An Ethernet/IPv4/UDP frame with these MACs and source address (4 bytes in wire order); its length. */
static size_t ipv4_frame(uint8_t* f, const uint8_t dmac[6], const uint8_t smac[6], const uint8_t src_ip[4]) {
  const size_t len = 14 + 20 + 8 + 18;
  memset(f, 0, len);
  memcpy(f, dmac, 6);
  memcpy(f + 6, smac, 6);
  f[12] = 0x08;
  uint8_t* ip = f + 14;
  ip[0] = 0x45;
  ip[3] = 20 + 8 + 18;
  ip[8] = 64;
  ip[9] = 17;
  memcpy(ip + 12, src_ip, 4);
  ip[16] = 10, ip[19] = 1;
  uint32_t sum = 0;
  for (int i = 0; i < 20; i += 2) sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  ip[10] = (uint8_t)(~sum >> 8);
  ip[11] = (uint8_t)~sum;
  uint8_t* udp = ip + 20;
  udp[1] = 7, udp[3] = 9, udp[5] = 8 + 18;
  return len;
}

static const uint8_t kDmac[6] = {0x66, 0x11, 0x22, 0x33, 0x44, 0x55};
static const uint8_t kOtherMac[6] = {0x02, 0, 0, 0, 0, 0x09};
static const uint8_t kZeroMac[6] = {0};

static void man_page_example(struct ibv_context* ctx) {
  struct ibv_qp* qp = drsim_create_qp(ctx, 0);
  CHECK(qp != NULL);
  struct raw_eth_flow_attr flow_attr;
  man_page_attr(&flow_attr);
  struct ibv_flow* flow = ibv_create_flow(qp, as_flow_attr(&flow_attr));
  CHECK(flow != NULL);
  if (flow == NULL) return;
  CHECK(flow->context == qp->context);

  /* The source address is src_ip's bytes as they lie in memory: the field is in network order. */
  uint8_t src[4], other_src[4] = {11, 134, 200, 7};
  memcpy(src, &flow_attr.spec_ipv4.val.src_ip, 4);
  uint8_t frame[128], got[128];
  uint32_t tag = 1;
  size_t len = ipv4_frame(frame, kDmac, kZeroMac, src);
  CHECK(drsim_send(ctx, -1, frame, len) == 0);
  CHECK(drsim_recv_qp(qp, got, sizeof got, &tag) == (int)len && memcmp(got, frame, len) == 0 && tag == 0);

  /* Misses: another destination MAC, a non-zero source MAC (the mask asks for 00:..:00), another source. */
  CHECK(drsim_send(ctx, -1, frame, ipv4_frame(frame, kOtherMac, kZeroMac, src)) == 0);
  CHECK(drsim_send(ctx, -1, frame, ipv4_frame(frame, kDmac, kOtherMac, src)) == 0);
  CHECK(drsim_send(ctx, -1, frame, ipv4_frame(frame, kDmac, kZeroMac, other_src)) == 0);
  CHECK(drsim_recv_qp(qp, got, sizeof got, NULL) == 0);
  CHECK(drsim_recv_port(ctx, 0, got, sizeof got) == 0); /* the PF has steering now: misses are dropped */

  CHECK(drsim_destroy_qp(qp) == EBUSY);
  CHECK(strstr(drsim_last_error(), "verbs flow") != NULL);
  CHECK(drsim_close(ctx) == EBUSY);
  CHECK(ibv_destroy_flow(flow) == 0);

  /* Without the flow the PF has no steering again: its interface takes the frame. */
  len = ipv4_frame(frame, kDmac, kZeroMac, src);
  CHECK(drsim_send(ctx, -1, frame, len) == 0);
  CHECK(drsim_recv_qp(qp, got, sizeof got, NULL) == 0);
  CHECK(drsim_recv_port(ctx, 0, got, sizeof got) == (int)len);
  CHECK(drsim_destroy_qp(qp) == 0);
}

/* Counters: points attached before the flow, read after frames counted. */
static void counters(struct ibv_context* ctx) {
  struct ibv_qp* qp = drsim_create_qp(ctx, 0);
  struct ibv_counters_init_attr init = {.comp_mask = 0};
  struct ibv_counters* c = ibv_create_counters(ctx, &init);
  CHECK(qp != NULL && c != NULL && c->context == ctx);
  struct ibv_counter_attach_attr packets = {.counter_desc = IBV_COUNTER_PACKETS, .index = 0};
  struct ibv_counter_attach_attr bytes = {.counter_desc = IBV_COUNTER_BYTES, .index = 1};
  CHECK(ibv_attach_counters_point_flow(c, &packets, NULL) == 0);
  CHECK(ibv_attach_counters_point_flow(c, &bytes, NULL) == 0);

  struct {
    struct ibv_flow_attr attr;
    struct ibv_flow_spec_eth eth;
    struct ibv_flow_spec_counter_action count;
    struct ibv_flow_spec_action_tag tag;
  } __attribute__((packed)) attr;
  memset(&attr, 0, sizeof attr);
  attr.attr.type = IBV_FLOW_ATTR_NORMAL;
  attr.attr.size = sizeof attr;
  attr.attr.num_of_specs = 3;
  attr.attr.port = 1;
  attr.eth.type = IBV_FLOW_SPEC_ETH;
  attr.eth.size = sizeof attr.eth;
  memcpy(attr.eth.val.dst_mac, kDmac, 6);
  memset(attr.eth.mask.dst_mac, 0xff, 6);
  attr.count.type = IBV_FLOW_SPEC_ACTION_COUNT;
  attr.count.size = sizeof attr.count;
  attr.count.counters = c;
  attr.tag.type = IBV_FLOW_SPEC_ACTION_TAG;
  attr.tag.size = sizeof attr.tag;
  attr.tag.tag_id = 0x123;
  struct ibv_flow* flow = ibv_create_flow(qp, as_flow_attr(&attr));
  CHECK(flow != NULL);

  uint8_t frame[128], got[128], src[4] = {10, 0, 0, 2};
  size_t len = ipv4_frame(frame, kDmac, kOtherMac, src);
  CHECK(drsim_send(ctx, -1, frame, len) == 0 && drsim_send(ctx, -1, frame, len) == 0);
  uint32_t tag = 0;
  CHECK(drsim_recv_qp(qp, got, sizeof got, &tag) == (int)len && tag == 0x123);
  uint64_t values[3] = {7, 7, 7};
  CHECK(ibv_read_counters(c, values, 3, 0) == 0);
  CHECK(values[0] == 2 && values[1] == 2 * len && values[2] == 0);
  CHECK(ibv_read_counters(c, values, 1, 0) == EINVAL); /* index 1 does not fit */
  CHECK(ibv_attach_counters_point_flow(c, &packets, NULL) == EBUSY);
  CHECK(ibv_attach_counters_point_flow(c, &packets, flow) == ENOTSUP);
  CHECK(ibv_destroy_counters(c) == EBUSY);

  CHECK(ibv_destroy_flow(flow) == 0);
  CHECK(ibv_read_counters(c, values, 3, 0) == EINVAL); /* bound to no flow */
  CHECK(ibv_destroy_counters(c) == 0);
  CHECK(drsim_destroy_qp(qp) == 0);
}

/* A malformed request: the second spec's size is smaller than a spec header. (num_of_specs is walked as
 * libibverbs walks it, so a count past the specs given would read past the request, as there.) */
static void malformed(struct ibv_context* ctx) {
  struct ibv_qp* qp = drsim_create_qp(ctx, 0);
  struct raw_eth_flow_attr flow_attr;
  man_page_attr(&flow_attr);
  flow_attr.spec_ipv4.size = 4;
  errno = 0;
  CHECK(ibv_create_flow(qp, as_flow_attr(&flow_attr)) == NULL && errno == EINVAL);
  CHECK(strstr(drsim_last_error(), "spec[1]") != NULL);
  man_page_attr(&flow_attr);
  flow_attr.attr.priority = 16;
  CHECK(ibv_create_flow(qp, as_flow_attr(&flow_attr)) == NULL && errno == ENOMEM);
  CHECK(drsim_destroy_qp(qp) == 0);
}

int main(void) {
  struct ibv_context* ctx = drsim_open(1);
  CHECK(ctx != NULL);
  if (ctx == NULL) return 1;
  man_page_example(ctx);
  counters(ctx);
  malformed(ctx);
  CHECK(drsim_close(ctx) == 0);
  return check_result();
}
