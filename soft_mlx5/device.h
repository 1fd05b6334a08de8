// The software mlx5 device: a ConnectX that programs find through libibverbs, backed by a sim::Nic.
//
// What
//   One device per process, made on first use from the environment:
//   - DRSIM_DEVICE: its name (default mlx5_0);
//   - DRSIM_VFS: how many VFs its eSwitch has (default 0);
//   - DRSIM_WIRE: the uplink's wire, as OpenWire reads it (default loopback);
//   - DRSIM_ESWITCH_ENCAP: the eSwitch encap mode, none or basic (default none; hw::EswitchEncap): which
//     root tables take reformat actions.
//   Each ibv_open_device (or mlx5dv_open_device) is a user context of its own on the PF, registered
//   with the C API as a context of the NIC, so every mlx5dv_dr_* call works on it. Closing one never
//   disturbs another.
//
// How
//   The NIC runs inside the calls that move frames: ibv_post_send sends from the QP's function, then
//   NicState::Pump (verbs_objects.h) moves what left by the uplink to the wire, what the wire brought
//   back into the NIC, and what reached a QP into its posted receives and CQ.
//
// Thread-safety
//   Every call holds the NIC's context lock (capi::Context::mu).
#ifndef DRSIM_SOFT_MLX5_DEVICE_H_
#define DRSIM_SOFT_MLX5_DEVICE_H_

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "capi/objects.h"
#include "soft_mlx5/wire.h"

namespace drsim::soft_mlx5 {

// PCI identity of the device: Mellanox, ConnectX-6 Dx.
inline constexpr uint32_t kVendorId = 0x02c9;
inline constexpr uint32_t kVendorPartId = 0x101d;

class SoftDevice;

// The ibv_device libibverbs' list holds for the software device.
struct SoftIbvDevice {
  ibv_device device;  // first: users hold a pointer to it
  SoftDevice* owner;
};

class SoftDevice {
 public:
  // The process's device, or nullptr when it could not be made (the reason is printed once on stderr).
  static SoftDevice* Get();
  // The device behind `device`, or nullptr when it is another (a real one).
  static SoftDevice* Of(const ibv_device* device);

  const std::string& name() const { return name_; }
  ibv_device* device() { return &ibv_device_.device; }
  capi::Context& context() { return *ctx_; }

  // A device named `name` over the NIC of `ctx`, its uplink on `wire`.
  static SoftDevice* Create(const std::string& name, capi::Context* ctx, std::unique_ptr<Wire> wire);

  // A user context on function `vport`: NULL with errno set on failure.
  ibv_context* Open(uint16_t vport);
  // Closes a user context made by Open: 0, or an errno (EBUSY while its objects exist).
  int Close(ibv_context* ctx);

 private:
  SoftDevice() = default;
  std::string name_;
  SoftIbvDevice ibv_device_{};
  capi::Context* ctx_ = nullptr;
  absl::flat_hash_set<drsim_function_context*> user_contexts_;
};

// Installs the software device's verbs operations (PD, MR, CQ, QP, WQ, the data path and queries) on a
// function context, beside the C API's flow operations.
void InstallVerbsOps(drsim_function_context& f);

}  // namespace drsim::soft_mlx5

#endif  // DRSIM_SOFT_MLX5_DEVICE_H_
