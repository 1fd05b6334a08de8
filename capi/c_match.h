/* Match parameter buffers for the C API's C tests (c_api_test.c, root_masks_test.c), as a C program writes
 * them: rdma-core's struct mlx5dv_flow_match_parameters with room for the kernel's 512-byte fte_match_param.
 * One test program includes it once. */
#ifndef DRSIM_CAPI_C_MATCH_H_
#define DRSIM_CAPI_C_MATCH_H_

#include <infiniband/mlx5dv.h>
#include <stdint.h>
#include <string.h>

/* match_sz, then the buffer: rdma-core's layout, with 512 bytes of room. */
struct match {
  size_t match_sz;
  uint64_t match_buf[64];
};

/* The buffer as rdma-core's type. */
static struct mlx5dv_flow_match_parameters* P(struct match* m) {
  return (struct mlx5dv_flow_match_parameters*)m;
}

/* All zero, of the 448 bytes of the match layout (what software steering takes at most). */
static void match_init(struct match* m) {
  memset(m, 0, sizeof *m);
  m->match_sz = 448;
}

/* Sets `width` bits at bit `bit` (MSB-first, as the PRM layout numbers them) of the buffer to `v`. */
static void set_bits(struct match* m, unsigned bit, unsigned width, uint32_t v) {
  uint8_t* buf = (uint8_t*)m->match_buf;
  for (unsigned i = 0; i < width; ++i) {
    unsigned b = bit + i;
    uint8_t mask = (uint8_t)(0x80u >> (b % 8));
    if ((v >> (width - 1 - i)) & 1u)
      buf[b / 8] |= mask;
    else
      buf[b / 8] &= (uint8_t)~mask;
  }
}

#endif /* DRSIM_CAPI_C_MATCH_H_ */
