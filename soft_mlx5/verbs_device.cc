// The device's entry points: libibverbs' device list, open, close and queries, and mlx5dv's device calls.
// Each answers for the software device and hands anything else to rdma-core unchanged.
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "capi/errors.h"
#include "capi/objects.h"
#include "capi/real_symbol.h"
#include "soft_mlx5/device.h"
#include "soft_mlx5/verbs_ops.h"

namespace drsim::soft_mlx5 {
namespace {

// The port's identity, as scripts/drsim-run's sysfs view shows it: MAC 02:15:b3:00:00:01, its EUI-64 as
// the node GUID (host order here; users see it big-endian).
constexpr uint64_t kNodeGuid = 0x0215b3fffe000001ull;
// A ConnectX Ethernet port's GID table has 255 entries; the first two hold the port's link-local GID for
// RoCE v1 and v2 (no IP addresses are configured), the rest are empty.
constexpr int kGidTableLength = 255;
constexpr int kGidsPopulated = 2;

// The lists ibv_get_device_list returned, each with rdma-core's own list inside it (to free with it).
struct DeviceLists {
  std::mutex mu;
  absl::flat_hash_map<ibv_device**, ibv_device**> real_of;
};
DeviceLists& Lists() {
  static auto* lists = new DeviceLists;
  return *lists;
}

// The software device's user context behind `ctx`, or nullptr for another context.
drsim_function_context* Ours(ibv_context* ctx) { return capi::FunctionOf(ctx); }

// The port's MAC, from which its GIDs come: locally administered, fixed.
constexpr uint8_t kPortMac[6] = {0x02, 0x15, 0xb3, 0x00, 0x00, 0x01};

ibv_gid LinkLocalGid() {
  ibv_gid gid{};
  gid.raw[0] = 0xfe;
  gid.raw[1] = 0x80;
  gid.raw[8] = kPortMac[0] ^ 0x02;
  gid.raw[9] = kPortMac[1];
  gid.raw[10] = kPortMac[2];
  gid.raw[11] = 0xff;
  gid.raw[12] = 0xfe;
  gid.raw[13] = kPortMac[3];
  gid.raw[14] = kPortMac[4];
  gid.raw[15] = kPortMac[5];
  return gid;
}

}  // namespace

void FillDeviceAttr(ibv_context* ctx, ibv_device_attr* a) {
  std::memset(a, 0, sizeof *a);
  absl::SNPrintF(a->fw_ver, sizeof a->fw_ver, "22.0.0");
  a->node_guid = htobe64(kNodeGuid);
  a->sys_image_guid = htobe64(kNodeGuid);
  a->max_mr_size = ~0ull;
  a->page_size_cap = ~0xfffull;
  a->vendor_id = kVendorId;
  a->vendor_part_id = kVendorPartId;
  a->max_qp = 1 << 17;
  a->max_qp_wr = kMaxQueueDepth;
  a->device_cap_flags = IBV_DEVICE_RAW_MULTI | IBV_DEVICE_PORT_ACTIVE_EVENT | IBV_DEVICE_RC_RNR_NAK_GEN |
                        IBV_DEVICE_MEM_MGT_EXTENSIONS;
  a->max_sge = kMaxSge;
  a->max_cq = 1 << 16;
  a->max_cqe = kMaxQueueDepth;
  a->max_mr = 1 << 16;
  a->max_pd = 1 << 16;
  a->max_qp_rd_atom = 16;
  a->max_res_rd_atom = 1 << 20;
  a->max_qp_init_rd_atom = 16;
  a->atomic_cap = IBV_ATOMIC_NONE;
  a->max_mcast_grp = 1 << 21;
  a->max_mcast_qp_attach = 240;
  a->max_total_mcast_qp_attach = 240 << 21;
  a->max_pkeys = 128;
  a->local_ca_ack_delay = 16;
  a->phys_port_cnt = 1;
  (void)ctx;
}

int QueryDeviceEx(ibv_context* ctx, const ibv_query_device_ex_input* input, ibv_device_attr_ex* attr,
                  size_t attr_size) {
  if (input != nullptr && input->comp_mask != 0) return EINVAL;
  if (attr_size < sizeof(ibv_device_attr)) return EINVAL;
  ibv_device_attr_ex full{};
  FillDeviceAttr(ctx, &full.orig_attr);
  full.comp_mask = 0;
  full.raw_packet_caps = IBV_RAW_PACKET_CAP_CVLAN_STRIPPING | IBV_RAW_PACKET_CAP_SCATTER_FCS;
  full.rss_caps.supported_qpts = 1u << IBV_QPT_RAW_PACKET;
  full.rss_caps.max_rwq_indirection_tables = 1 << 16;
  full.rss_caps.max_rwq_indirection_table_size = kMaxIndirectionTable;
  full.rss_caps.rx_hash_fields_mask = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 | IBV_RX_HASH_SRC_IPV6 |
                                      IBV_RX_HASH_DST_IPV6 | IBV_RX_HASH_SRC_PORT_TCP |
                                      IBV_RX_HASH_DST_PORT_TCP | IBV_RX_HASH_SRC_PORT_UDP |
                                      IBV_RX_HASH_DST_PORT_UDP | IBV_RX_HASH_INNER;
  full.rss_caps.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ;
  full.max_wq_type_rq = 1 << 16;
  full.cq_mod_caps.max_cq_count = 0xffff;
  full.cq_mod_caps.max_cq_period = 0xfff;
  full.max_dm_size = 0;
  full.pci_atomic_caps = {};
  full.raw_packet_caps |= IBV_RAW_PACKET_CAP_IP_CSUM;
  full.device_cap_flags_ex = full.orig_attr.device_cap_flags | IBV_DEVICE_RAW_IP_CSUM;
  full.phys_port_cnt_ex = 1;
  full.hca_core_clock = 1000000;  // kHz: the NIC counts nanoseconds
  std::memcpy(attr, &full, std::min(attr_size, sizeof full));
  return 0;
}

int QueryPort(ibv_context* ctx, uint8_t port, ibv_port_attr* attr, size_t attr_len) {
  if (port != 1) {
    capi::RecordFailure("ibv_query_port", EINVAL, absl::StrFormat("port %d: the device has port 1", port));
    return EINVAL;
  }
  ibv_port_attr a{};
  a.state = IBV_PORT_ACTIVE;
  a.max_mtu = IBV_MTU_4096;
  a.active_mtu = IBV_MTU_1024;
  a.gid_tbl_len = kGidTableLength;
  a.port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS;
  a.max_msg_sz = 1u << 30;
  a.pkey_tbl_len = 1;
  a.lid = 0;
  a.sm_lid = 0;
  a.lmc = 0;
  a.max_vl_num = 4;
  a.active_width = 2;    // 4X
  a.active_speed = 128;  // 50 Gb/s a lane (HDR): 200 Gb/s, a ConnectX-6 Dx port
  a.phys_state = 5;      // LinkUp
  a.link_layer = IBV_LINK_LAYER_ETHERNET;
  std::memcpy(attr, &a, std::min(attr_len, sizeof a));
  (void)ctx;
  return 0;
}

// An empty entry reads as the zero GID, as libibverbs reads it from sysfs.
int QueryGid(uint8_t port, int index, ibv_gid* gid) {
  if (port != 1 || index < 0 || index >= kGidTableLength) {
    capi::RecordFailure(
        "ibv_query_gid", EINVAL,
        absl::StrFormat("port %d index %d: port 1 has GIDs 0 to %d", port, index, kGidTableLength - 1));
    errno = EINVAL;
    return -1;
  }
  *gid = index < kGidsPopulated ? LinkLocalGid() : ibv_gid{};
  return 0;
}

// ENODATA for an empty entry, as the kernel answers.
int FillGidEntry(uint32_t port, uint32_t index, ibv_gid_entry* entry) {
  if (QueryGid(static_cast<uint8_t>(port), static_cast<int>(index), &entry->gid) != 0) return EINVAL;
  if (index >= kGidsPopulated) return ENODATA;
  entry->gid_index = index;
  entry->port_num = port;
  entry->gid_type = index == 0 ? IBV_GID_TYPE_ROCE_V1 : IBV_GID_TYPE_ROCE_V2;
  entry->ndev_ifindex = 0;
  return 0;
}

}  // namespace drsim::soft_mlx5

using drsim::soft_mlx5::Lists;
using drsim::soft_mlx5::Ours;
using drsim::soft_mlx5::SoftDevice;

extern "C" {

ibv_device** ibv_get_device_list(int* num_devices) {
  auto* real_fn = DRSIM_REAL_FUNCTION(ibv_get_device_list, "IBVERBS_1.1");
  int real_count = 0;
  ibv_device** real = real_fn != nullptr ? real_fn(&real_count) : nullptr;
  if (real == nullptr) real_count = 0;
  SoftDevice* soft = SoftDevice::Get();
  const int count = real_count + (soft != nullptr ? 1 : 0);
  auto** list = static_cast<ibv_device**>(calloc(count + 1, sizeof(ibv_device*)));
  if (list == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  int n = 0;
  if (soft != nullptr) list[n++] = soft->device();
  for (int i = 0; i < real_count; ++i) list[n++] = real[i];
  {
    std::lock_guard<std::mutex> lock(Lists().mu);
    Lists().real_of[list] = real;
  }
  if (num_devices != nullptr) *num_devices = count;
  return list;
}

void ibv_free_device_list(ibv_device** list) {
  ibv_device** real = nullptr;
  {
    std::lock_guard<std::mutex> lock(Lists().mu);
    auto it = Lists().real_of.find(list);
    if (it == Lists().real_of.end()) {
      // Not one of ours: a list rdma-core made (through a caller that reached it directly).
      if (auto* fn = DRSIM_REAL_FUNCTION(ibv_free_device_list, "IBVERBS_1.1")) fn(list);
      return;
    }
    real = it->second;
    Lists().real_of.erase(it);
  }
  if (real != nullptr) {
    if (auto* fn = DRSIM_REAL_FUNCTION(ibv_free_device_list, "IBVERBS_1.1")) fn(real);
  }
  free(list);
}

const char* ibv_get_device_name(ibv_device* device) {
  if (SoftDevice::Of(device) != nullptr) return device->name;
  auto* fn = DRSIM_REAL_FUNCTION(ibv_get_device_name, "IBVERBS_1.1");
  return fn != nullptr ? fn(device) : nullptr;
}

__be64 ibv_get_device_guid(ibv_device* device) {
  if (SoftDevice::Of(device) != nullptr) return htobe64(drsim::soft_mlx5::kNodeGuid);
  auto* fn = DRSIM_REAL_FUNCTION(ibv_get_device_guid, "IBVERBS_1.1");
  return fn != nullptr ? fn(device) : 0;
}

int ibv_get_device_index(ibv_device* device) {
  if (SoftDevice::Of(device) != nullptr) return -1;  // no kernel index: it is not a kernel device
  auto* fn = DRSIM_REAL_FUNCTION(ibv_get_device_index, "IBVERBS_1.9");
  return fn != nullptr ? fn(device) : -1;
}

ibv_context* ibv_open_device(ibv_device* device) {
  if (SoftDevice* soft = SoftDevice::Of(device)) return soft->Open(0);
  auto* fn = DRSIM_REAL_FUNCTION(ibv_open_device, "IBVERBS_1.1");
  if (fn == nullptr) errno = EOPNOTSUPP;
  return fn != nullptr ? fn(device) : nullptr;
}

int ibv_close_device(ibv_context* ctx) {
  if (drsim_function_context* f = Ours(ctx)) {
    SoftDevice* soft = SoftDevice::Of(ctx->device);
    if (soft == nullptr) {
      return drsim::capi::RecordFailure(__func__, EINVAL, "a drsim_open context: close it with drsim_close");
    }
    (void)f;
    return soft->Close(ctx);
  }
  auto* fn = DRSIM_REAL_FUNCTION(ibv_close_device, "IBVERBS_1.1");
  return fn != nullptr ? fn(ctx) : EOPNOTSUPP;
}

int ibv_query_device(ibv_context* ctx, ibv_device_attr* attr) {
  if (Ours(ctx) != nullptr) {
    drsim::soft_mlx5::FillDeviceAttr(ctx, attr);
    return 0;
  }
  auto* fn = DRSIM_REAL_FUNCTION(ibv_query_device, "IBVERBS_1.1");
  return fn != nullptr ? fn(ctx, attr) : EOPNOTSUPP;
}

// libibverbs exports the pre-1.1 ABI name; <infiniband/verbs.h> routes ibv_query_port through the
// context's query_port op, and only old binaries land here, with the shorter compat struct.
int(ibv_query_port)(ibv_context* ctx, uint8_t port, struct _compat_ibv_port_attr* attr) {
  if (Ours(ctx) != nullptr) {
    return drsim::soft_mlx5::QueryPort(
        ctx, port, reinterpret_cast<ibv_port_attr*>(attr),
        offsetof(ibv_port_attr, flags));  // the compat struct ends before flags
  }
  using Fn = int (*)(ibv_context*, uint8_t, struct _compat_ibv_port_attr*);
  static auto fn = reinterpret_cast<Fn>(drsim::capi::RealSymbol("ibv_query_port", "IBVERBS_1.1"));
  return fn != nullptr ? fn(ctx, port, attr) : EOPNOTSUPP;
}

int ibv_query_pkey(ibv_context* ctx, uint8_t port, int index, __be16* pkey) {
  if (Ours(ctx) != nullptr) {
    if (port != 1 || index != 0) {
      errno = EINVAL;
      return -1;
    }
    *pkey = htobe16(0xffff);
    return 0;
  }
  auto* fn = DRSIM_REAL_FUNCTION(ibv_query_pkey, "IBVERBS_1.1");
  return fn != nullptr ? fn(ctx, port, index, pkey) : EOPNOTSUPP;
}

int ibv_query_gid(ibv_context* ctx, uint8_t port, int index, ibv_gid* gid) {
  if (Ours(ctx) != nullptr) return drsim::soft_mlx5::QueryGid(port, index, gid);
  auto* fn = DRSIM_REAL_FUNCTION(ibv_query_gid, "IBVERBS_1.1");
  return fn != nullptr ? fn(ctx, port, index, gid) : EOPNOTSUPP;
}

int _ibv_query_gid_ex(ibv_context* ctx, uint32_t port, uint32_t index, ibv_gid_entry* entry, uint32_t flags,
                      size_t entry_size) {
  if (Ours(ctx) != nullptr) {
    if (flags != 0 || entry_size < sizeof(ibv_gid_entry)) return EINVAL;
    return drsim::soft_mlx5::FillGidEntry(port, index, entry);
  }
  auto* fn = DRSIM_REAL_FUNCTION(_ibv_query_gid_ex, "IBVERBS_1.11");
  return fn != nullptr ? fn(ctx, port, index, entry, flags, entry_size) : EOPNOTSUPP;
}

ssize_t _ibv_query_gid_table(ibv_context* ctx, ibv_gid_entry* entries, size_t max_entries, uint32_t flags,
                             size_t entry_size) {
  if (Ours(ctx) != nullptr) {
    if (flags != 0 || entry_size < sizeof(ibv_gid_entry)) return -EINVAL;
    if (max_entries < static_cast<size_t>(drsim::soft_mlx5::kGidsPopulated)) return -EINVAL;
    for (int i = 0; i < drsim::soft_mlx5::kGidsPopulated; ++i) {
      auto* e = reinterpret_cast<ibv_gid_entry*>(reinterpret_cast<char*>(entries) + i * entry_size);
      drsim::soft_mlx5::FillGidEntry(1, i, e);
    }
    return drsim::soft_mlx5::kGidsPopulated;
  }
  auto* fn = DRSIM_REAL_FUNCTION(_ibv_query_gid_table, "IBVERBS_1.11");
  return fn != nullptr ? fn(ctx, entries, max_entries, flags, entry_size) : -EOPNOTSUPP;
}

// libibverbs' private ABI (driver.h, not installed); pyverbs imports it. `type` is an enum
// ibv_gid_type_sysfs: 0 for RoCE v1 (or IB), 1 for RoCE v2.
int ibv_query_gid_type(ibv_context* ctx, uint8_t port, unsigned int index, unsigned int* type) {
  if (Ours(ctx) != nullptr) {
    if (port != 1 || index >= static_cast<unsigned>(drsim::soft_mlx5::kGidsPopulated)) {
      errno = EINVAL;
      return -1;
    }
    *type = index == 0 ? 0 : 1;
    return 0;
  }
  using Fn = int (*)(ibv_context*, uint8_t, unsigned int, unsigned int*);
  static auto fn = reinterpret_cast<Fn>(drsim::capi::RealSymbol("ibv_query_gid_type", "IBVERBS_PRIVATE_34"));
  return fn != nullptr ? fn(ctx, port, index, type) : EOPNOTSUPP;
}

int ibv_fork_init(void) {
  auto* fn = DRSIM_REAL_FUNCTION(ibv_fork_init, "IBVERBS_1.1");
  return fn != nullptr ? fn() : 0;
}

enum ibv_fork_status ibv_is_fork_initialized(void) {
  auto* fn = DRSIM_REAL_FUNCTION(ibv_is_fork_initialized, "IBVERBS_1.13");
  return fn != nullptr ? fn() : IBV_FORK_DISABLED;
}

// The software device raises no asynchronous events (its port never goes down, its queues never fail
// asynchronously): waiting for one fails at once instead of blocking forever.
int ibv_get_async_event(ibv_context* ctx, ibv_async_event* event) {
  if (Ours(ctx) != nullptr) {
    drsim::capi::RecordFailure(__func__, EOPNOTSUPP,
                               "the software mlx5 device raises no asynchronous events");
    errno = EOPNOTSUPP;
    return -1;
  }
  auto* fn = DRSIM_REAL_FUNCTION(ibv_get_async_event, "IBVERBS_1.1");
  return fn != nullptr ? fn(ctx, event) : -1;
}

void ibv_ack_async_event(ibv_async_event* event) {
  if (auto* fn = DRSIM_REAL_FUNCTION(ibv_ack_async_event, "IBVERBS_1.1")) fn(event);
}

// The port's place in the eSwitch. There are no steering ICM addresses (no ICM) and no reg_c0 vport
// metadata, so those flags stay clear and programs that need them see that they are absent.
int _mlx5dv_query_port(ibv_context* ctx, uint32_t port_num, struct mlx5dv_port* info, size_t info_len) {
  drsim_function_context* f = Ours(ctx);
  if (f == nullptr) {
    auto* fn = DRSIM_REAL_FUNCTION(_mlx5dv_query_port, "MLX5_1.19");
    return fn != nullptr ? fn(ctx, port_num, info, info_len) : EOPNOTSUPP;
  }
  if (port_num != 1) {
    return drsim::capi::RecordFailure(__func__, EINVAL,
                                      absl::StrFormat("port %d: the device has port 1", port_num));
  }
  struct mlx5dv_port p {};
  p.flags = MLX5_IB_UAPI_QUERY_PORT_VPORT | MLX5_IB_UAPI_QUERY_PORT_VPORT_VHCA_ID |
            MLX5_IB_UAPI_QUERY_PORT_ESW_OWNER_VHCA_ID;
  p.vport = f->vport;
  p.vport_vhca_id = f->vport;
  p.esw_owner_vhca_id = 0;
  std::memcpy(info, &p, std::min(info_len, sizeof p));
  return 0;
}

bool mlx5dv_is_supported(ibv_device* device) {
  if (SoftDevice::Of(device) != nullptr) return true;
  auto* fn = DRSIM_REAL_FUNCTION(mlx5dv_is_supported, "MLX5_1.8");
  return fn != nullptr && fn(device);
}

ibv_context* mlx5dv_open_device(ibv_device* device, mlx5dv_context_attr* attr) {
  if (SoftDevice* soft = SoftDevice::Of(device)) {
    if (attr != nullptr && (attr->flags & ~uint32_t{MLX5DV_CONTEXT_FLAGS_DEVX}) != 0) {
      drsim::capi::RecordFailure(
          __func__, EOPNOTSUPP,
          absl::StrFormat("attr->flags 0x%x: only MLX5DV_CONTEXT_FLAGS_DEVX", attr->flags));
      errno = EOPNOTSUPP;
      return nullptr;
    }
    return soft->Open(0);
  }
  auto* fn = DRSIM_REAL_FUNCTION(mlx5dv_open_device, "MLX5_1.7");
  if (fn == nullptr) errno = EOPNOTSUPP;
  return fn != nullptr ? fn(device, attr) : nullptr;
}

int mlx5dv_query_device(ibv_context* ctx, mlx5dv_context* attrs) {
  if (Ours(ctx) == nullptr) {
    auto* fn = DRSIM_REAL_FUNCTION(mlx5dv_query_device, "MLX5_1.0");
    return fn != nullptr ? fn(ctx, attrs) : EOPNOTSUPP;
  }
  const uint64_t asked = attrs->comp_mask;
  uint64_t answered = 0;
  attrs->version = 1;
  attrs->flags = MLX5DV_CONTEXT_FLAGS_CQE_V1;
  if (asked & MLX5DV_CONTEXT_MASK_CQE_COMPRESION) {
    attrs->cqe_comp_caps = {};
    answered |= MLX5DV_CONTEXT_MASK_CQE_COMPRESION;
  }
  if (asked & MLX5DV_CONTEXT_MASK_SWP) {
    attrs->sw_parsing_caps = {};
    answered |= MLX5DV_CONTEXT_MASK_SWP;
  }
  if (asked & MLX5DV_CONTEXT_MASK_STRIDING_RQ) {
    attrs->striding_rq_caps = {};
    answered |= MLX5DV_CONTEXT_MASK_STRIDING_RQ;
  }
  if (asked & MLX5DV_CONTEXT_MASK_TUNNEL_OFFLOADS) {
    attrs->tunnel_offloads_caps = MLX5DV_RAW_PACKET_CAP_TUNNELED_OFFLOAD_VXLAN |
                                  MLX5DV_RAW_PACKET_CAP_TUNNELED_OFFLOAD_GRE |
                                  MLX5DV_RAW_PACKET_CAP_TUNNELED_OFFLOAD_GENEVE;
    answered |= MLX5DV_CONTEXT_MASK_TUNNEL_OFFLOADS;
  }
  if (asked & MLX5DV_CONTEXT_MASK_FLOW_ACTION_FLAGS) {
    attrs->flow_action_flags = 0;  // no ESP offload
    answered |= MLX5DV_CONTEXT_MASK_FLOW_ACTION_FLAGS;
  }
  if (asked & MLX5DV_CONTEXT_MASK_HCA_CORE_CLOCK) {
    attrs->hca_core_clock = nullptr;  // no mapped clock page
  }
  if (asked & MLX5DV_CONTEXT_MASK_NUM_LAG_PORTS) {
    attrs->num_lag_ports = 1;
    answered |= MLX5DV_CONTEXT_MASK_NUM_LAG_PORTS;
  }
  attrs->comp_mask = answered;
  return 0;
}

}  // extern "C"
