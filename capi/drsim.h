/* drsim.h: the software NIC behind rdma-core's mlx5dv_dr_* C API.
 *
 * A steering program written for a ConnectX uses rdma-core's <infiniband/mlx5dv.h> unchanged with this
 * library: every mlx5dv_dr_* and mlx5dv_dump_dr_* function is exported with rdma-core's exact signature
 * and conventions. Only how the program obtains its device, QPs and DEVX objects changes: these drsim_*
 * calls open a software NIC (an eSwitch with the uplink, the PF as vport 0 and num_vfs VFs), make
 * raw-packet QPs, flow counters, TIRs and ASO objects on it, and send and receive frames. Its contexts also
 * carry verbs' flow steering operations, so ibv_create_flow/ibv_destroy_flow and the ibv_*_counters calls
 * of <infiniband/verbs.h> work on its QPs and contexts as written, and so does mlx5dv.h's DV flow API
 * (mlx5dv_create_flow_matcher, mlx5dv_create_flow and its flow actions; docs/verbs_flow.md).
 *
 * Contexts and objects that do not come from drsim_* calls belong to real hardware: their calls go to
 * rdma-core's libmlx5 (loaded on first use), so one program can drive both.
 *
 * Conventions, as rdma-core's: calls returning a pointer return NULL and set errno on failure; calls
 * returning int return 0 or a positive errno (and set errno), except drsim_recv_qp and drsim_recv_port,
 * which return a length, 0 or a negative errno. drsim_last_error() gives the message naming the culprit
 * of this thread's last failure (any mlx5dv_dr_* or drsim_* call); with DRSIM_DEBUG set in the
 * environment, failures are also printed to stderr.
 *
 * Thread-safety: calls on the objects of one software NIC are serialised by a lock of that NIC. */
#ifndef DRSIM_CAPI_DRSIM_H_
#define DRSIM_CAPI_DRSIM_H_

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Opens a software NIC with `num_vfs` VFs (at most 1024); returns its PF's context (vport 0). EINVAL for
 * too many VFs. */
struct ibv_context* drsim_open(unsigned num_vfs);

/* The context of function `vport` (0 = the PF, 1..num_vfs the VFs) of the NIC of `ctx`, for creating that
 * function's NIC_RX and NIC_TX domains. It lives as long as the NIC. NULL with EINVAL for another vport. */
struct ibv_context* drsim_vport_context(struct ibv_context* ctx, uint16_t vport);

/* Closes the NIC of `ctx` (a context drsim_open returned). EBUSY, closing nothing, while domains, QPs, DEVX
 * objects, verbs flows or verbs counters, DV flow matchers, flows or flow actions of it exist; EINVAL for
 * another context. */
int drsim_close(struct ibv_context* ctx);

/* A raw-packet QP (qp_type IBV_QPT_RAW_PACKET, state RTS) receiving for function `vport`, with a unique
 * qp_num; its receive queue holds up to 4096 frames. EINVAL for an unknown context or vport. */
struct ibv_qp* drsim_create_qp(struct ibv_context* ctx, uint16_t vport);

/* EBUSY while dest_ibv_qp actions, TIRs, verbs flows (ibv_create_flow) or DV flows (mlx5dv_create_flow)
 * use the QP; EINVAL for a QP not made by drsim_create_qp. */
int drsim_destroy_qp(struct ibv_qp* qp);

/* A bulk of `bulk` flow counters (1 to 2^23): flow_counter actions take it with offsets 0..bulk-1.
 * Destroy it with mlx5dv_devx_obj_destroy (EBUSY while actions use it). */
struct mlx5dv_devx_obj* drsim_counter_alloc(struct ibv_context* ctx, uint32_t bulk);

/* Packets and bytes counted so far by counter `offset` of `counters`. EINVAL for an offset past the bulk
 * or an object that is not a counter bulk. */
int drsim_counter_query(struct mlx5dv_devx_obj* counters, uint32_t offset, uint64_t* packets,
                        uint64_t* bytes);

/* A TIR (for mlx5dv_dr_action_create_dest_devx_tir) spreading frames over `num_qps` QPs of one function
 * (a power of two, at most 256) by the Toeplitz hash of the header fields `rx_hash_fields_mask`
 * (IBV_RX_HASH_* bits, the outer headers' or with IBV_RX_HASH_INNER those behind a tunnel; 0 = always the
 * first QP) under `key` (`key_len` bytes, 40 for the usual key; NULL
 * and 0 for Microsoft's default key). Destroy with mlx5dv_devx_obj_destroy. */
struct mlx5dv_devx_obj* drsim_tir_create(struct ibv_context* ctx, struct ibv_qp** qps, size_t num_qps,
                                         uint64_t rx_hash_fields_mask, const uint8_t* key, size_t key_len);

/* ASO objects for mlx5dv_dr_action_create_aso: 2 << log_obj_range flow meters, or 512 << log_obj_range
 * first-hit contexts (log_obj_range at most 16). Destroy with mlx5dv_devx_obj_destroy. */
struct mlx5dv_devx_obj* drsim_aso_flow_meter_alloc(struct ibv_context* ctx, uint32_t log_obj_range);
struct mlx5dv_devx_obj* drsim_aso_first_hit_alloc(struct ibv_context* ctx, uint32_t log_obj_range);

/* ASO connection-tracking objects: 1 << log_obj_range CT contexts (log_obj_range at most 16), for
 * mlx5dv_dr_action_create_aso with MLX5DV_DR_ACTION_FLAGS_ASO_CT_DIRECTION_INITIATOR or _RESPONDER. A
 * context is the 64-byte PRM conn_track_aso (what DPDK's ASO WQE writes): drsim_aso_ct_configure programs
 * context `offset` from it (EINVAL for fewer than 64 bytes, state 6 or 7, a bad object or offset),
 * drsim_aso_ct_query writes it back to `context` (context_sz at least 64). A context never programmed
 * has valid 0 and reports DISABLED. Destroy with mlx5dv_devx_obj_destroy. */
struct mlx5dv_devx_obj* drsim_aso_ct_alloc(struct ibv_context* ctx, uint32_t log_obj_range);
int drsim_aso_ct_configure(struct mlx5dv_devx_obj* cts, uint32_t offset, const void* context,
                           size_t context_sz);
int drsim_aso_ct_query(struct mlx5dv_devx_obj* cts, uint32_t offset, void* context, size_t context_sz);

/* Sets ASO flow meter `offset` of `meters` from the 32-byte PRM flow meter parameters (the layout
 * mlx5dv_dr_flow_meter_attr's flow_meter_parameter uses). EINVAL for bad parameters or offset. */
int drsim_aso_flow_meter_configure(struct mlx5dv_devx_obj* meters, uint32_t offset, const void* params,
                                   size_t params_sz);

/* The NIC's clock for meters, in nanoseconds; it only moves forward (an earlier time is ignored). */
int drsim_set_time_ns(struct ibv_context* ctx, uint64_t ns);

/* Processes one frame: from the wire (from_vport -1: the FDB's RX pipe) or sent by function from_vport
 * (its NIC_TX, then the FDB's TX pipe). Returns 0 once the frame has been steered (wherever it went), or
 * EINVAL for a bad vport, a NULL frame or a frame shorter than 14 or longer than 65535 bytes. */
int drsim_send(struct ibv_context* ctx, int from_vport, const void* frame, size_t len);

/* Takes the oldest frame from `qp`'s receive queue into `buf`: returns its length, 0 when the queue is
 * empty, -EMSGSIZE (leaving the frame queued) when `cap` is too small, -EINVAL for a bad QP. `flow_tag`
 * (may be NULL) receives the flow tag, 0 when no tag action ran, as in a CQE. */
int drsim_recv_qp(struct ibv_qp* qp, void* buf, size_t cap, uint32_t* flow_tag);

/* Takes the oldest frame that left by the wire (vport -1) or that reached function `vport`'s own
 * interface because it has no NIC_RX steering: returns its length, 0 when none is waiting, -EMSGSIZE
 * (leaving it) when `cap` is too small, -EINVAL for a bad context or vport. */
int drsim_recv_port(struct ibv_context* ctx, int vport, void* buf, size_t cap);

/* The message of this thread's last failed call, naming the culprit; "" before any failure. */
const char* drsim_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* DRSIM_CAPI_DRSIM_H_ */
