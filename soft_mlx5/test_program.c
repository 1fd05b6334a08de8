#include "soft_mlx5/test_program.h"

#include <stddef.h>

struct ibv_qp* raw_qp_ready(struct ibv_pd* pd, struct ibv_cq* cq, uint32_t max_send_wr,
                            uint32_t max_recv_wr) {
  struct ibv_qp_init_attr attr = {
      .send_cq = cq,
      .recv_cq = cq,
      .cap = {.max_send_wr = max_send_wr, .max_recv_wr = max_recv_wr, .max_send_sge = 1, .max_recv_sge = 1},
      .qp_type = IBV_QPT_RAW_PACKET};
  struct ibv_qp* qp = ibv_create_qp(pd, &attr);
  if (qp == NULL) return NULL;
  struct ibv_qp_attr qa = {.qp_state = IBV_QPS_INIT, .port_num = 1};
  if (ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PORT) == 0) {
    qa.qp_state = IBV_QPS_RTR;
    if (ibv_modify_qp(qp, &qa, IBV_QP_STATE) == 0) {
      qa.qp_state = IBV_QPS_RTS;
      if (ibv_modify_qp(qp, &qa, IBV_QP_STATE) == 0) return qp;
    }
  }
  ibv_destroy_qp(qp);
  return NULL;
}

int raw_qp_post_recv(struct ibv_qp* qp, struct ibv_mr* mr, uint8_t* addr, uint32_t len, uint64_t wr_id) {
  struct ibv_sge sge = {(uintptr_t)addr, len, mr->lkey};
  struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1}, *bad;
  return ibv_post_recv(qp, &wr, &bad);
}
