// The verbs operations of the software mlx5 device that its exported functions and its contexts' ops
// share: device and port queries, and the limits it advertises.
#ifndef DRSIM_SOFT_MLX5_VERBS_OPS_H_
#define DRSIM_SOFT_MLX5_VERBS_OPS_H_

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <mutex>

#include "capi/objects.h"

namespace drsim::soft_mlx5 {

// Limits the device advertises (ibv_query_device) and enforces.
inline constexpr uint32_t kMaxQueueDepth = 32768;  // work requests a queue, CQEs a CQ
inline constexpr uint32_t kMaxSge = 30;
inline constexpr uint32_t kMaxInlineData = 512;
inline constexpr uint32_t kMaxIndirectionTable = 256;

void FillDeviceAttr(ibv_context* ctx, ibv_device_attr* attr);
// verbs_context::query_device_ex and query_port.
int QueryDeviceEx(ibv_context* ctx, const ibv_query_device_ex_input* input, ibv_device_attr_ex* attr,
                  size_t attr_size);
int QueryPort(ibv_context* ctx, uint8_t port, ibv_port_attr* attr, size_t attr_len);

// Every call holds its NIC's context lock.
using Lock = std::lock_guard<std::recursive_mutex>;

// The NIC context lock and function of a software-device object's context.
inline capi::Context& NicOf(ibv_context* ctx) { return *capi::FunctionOf(ctx)->owner; }

// The CQ operations (verbs_resources.cc) and the queue operations (verbs_queues.cc), installed on a
// function context's ops by InstallVerbsOps.
ibv_cq_ex* CreateCqEx(ibv_context* ctx, ibv_cq_init_attr_ex* attr);
int PollCq(ibv_cq* cq, int num_entries, ibv_wc* wc);
int ReqNotifyCq(ibv_cq* cq, int solicited_only);
int PostSend(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr);
int PostRecv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr);
ibv_qp* CreateQpEx(ibv_context* ctx, ibv_qp_init_attr_ex* attr);
ibv_wq* CreateWq(ibv_context* ctx, ibv_wq_init_attr* attr);
int ModifyWq(ibv_wq* wq, ibv_wq_attr* attr);
int DestroyWq(ibv_wq* wq);
ibv_rwq_ind_table* CreateRwqIndTable(ibv_context* ctx, ibv_rwq_ind_table_init_attr* attr);
int DestroyRwqIndTable(ibv_rwq_ind_table* table);

// The device's clock (CLOCK_MONOTONIC, nanoseconds): it stamps completions, and the NIC's clock (meters,
// counters' hit history) follows it as frames are sent and arrive (NicState::Pump).
uint64_t MonotonicNs();

}  // namespace drsim::soft_mlx5

#endif  // DRSIM_SOFT_MLX5_VERBS_OPS_H_
