/* What the device's test programs share (wire_echo.c, meter_rate.c).
 *
 * What: CHECK, which fails main with the call's name and errno; a raw-packet QP on port 1 brought to RTS,
 * and a receive posted into it.
 * How: only libibverbs calls, so a program built with them runs on a ConnectX or, under
 * scripts/drsim-run, on the software device.
 * Thread-safety: as libibverbs' calls.
 */
#ifndef DRSIM_SOFT_MLX5_TEST_PROGRAM_H_
#define DRSIM_SOFT_MLX5_TEST_PROGRAM_H_

#include <errno.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* In main: returns 1 after printing `what` and errno when `cond` is false. */
#define CHECK(cond, what)                                        \
  do {                                                           \
    if (!(cond)) {                                               \
      fprintf(stderr, "%s failed: %s\n", what, strerror(errno)); \
      return 1;                                                  \
    }                                                            \
  } while (0)

/* A raw-packet QP of `pd` whose sends and receives complete on `cq`, in RTS; NULL (errno set) on failure. */
struct ibv_qp* raw_qp_ready(struct ibv_pd* pd, struct ibv_cq* cq, uint32_t max_send_wr, uint32_t max_recv_wr);

/* Posts a receive of `len` bytes at `addr` (inside `mr`) with `wr_id`; 0 or an errno. */
int raw_qp_post_recv(struct ibv_qp* qp, struct ibv_mr* mr, uint8_t* addr, uint32_t len, uint64_t wr_id);

#endif /* DRSIM_SOFT_MLX5_TEST_PROGRAM_H_ */
