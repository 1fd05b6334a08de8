// The C API's objects: the structs behind rdma-core's opaque mlx5dv_dr_* and mlx5dv_devx_obj types when
// they belong to the software NIC, the context drsim_open returns, and the registry that tells them apart
// from objects of rdma-core's own libmlx5 (real hardware), whose calls are forwarded there.
//
// Each C object owns one dr:: handle. Every pointer handed to a user is registered with its kind until it
// is destroyed, so a call can check that it got an object of the software NIC of the right kind (EINVAL
// otherwise) without reading memory it does not own.
//
// Thread-safety: the registry has its own lock. Each context has a lock that every C call on its objects
// holds, so control calls and the data path (drsim_send/recv) never run at the same time.
#ifndef DRSIM_CAPI_OBJECTS_H_
#define DRSIM_CAPI_OBJECTS_H_

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "dr/dr.h"
#include "sim/nic.h"

namespace drsim::capi {

struct Context;
class VerbsSteering;  // capi/verbs_steering.h

// What a registered pointer is.
enum class Kind : uint8_t {
  kContext,
  kQp,
  kDevx,
  kDomain,
  kTable,
  kMatcher,
  kRule,
  kAction,
  kFlow,
  kCounters,
  kFlowMatcher,  // mlx5dv_create_flow_matcher (capi/dv_flow.h)
  kDvFlow,       // mlx5dv_create_flow: an ibv_flow destroyed by ibv_destroy_flow, as verbs flows are
  kFlowAction,   // mlx5dv_create_flow_action_packet_reformat / _modify_header
  // The software mlx5 device's verbs objects (soft_mlx5/verbs_objects.h).
  kDevice,
  kPd,
  kMr,
  kCq,
  kCompChannel,
  kWq,
  kRwqIndTable,
};

// Records pointers of the software NIC's objects, each with its kind and context.
class Registry {
 public:
  static Registry& Get();
  void Add(const void* p, Kind kind, Context* ctx);
  void Remove(const void* p);
  // Whether `p` is a registered object of `kind`; if so, *ctx (when given) receives its context (nullptr
  // for actions made without a device).
  bool Is(const void* p, Kind kind, Context** ctx = nullptr) const;
  // Whether `p` is registered at all (of any kind).
  bool Known(const void* p) const;

 private:
  struct Entry {
    Kind kind;
    Context* ctx;
  };
  mutable std::mutex mu_;
  absl::flat_hash_map<const void*, Entry> objects_;
};

// Whether `p` is a software-NIC object of `kind`; if so, *ctx (when given) receives its context. NULL is
// never one, and is answered without the registry's lock.
inline bool IsSoftwareNicObject(const void* p, Kind kind, Context** ctx = nullptr) {
  return p != nullptr && Registry::Get().Is(p, kind, ctx);
}

// What a DEVX object of the software NIC stands for. kRqt (an RQ table, CREATE_RQT) exists only for
// CREATE_TIR to read: the NIC itself has no such object.
enum class DevxKind : uint8_t {
  kFlowCounter,
  kTir,
  kAsoFlowMeter,
  kAsoFirstHit,
  kRqt,
  kQueueCounter,
  kGeneveTlvOption,
  kAsoConnTrack,
};

// The ASO object kind a DEVX object of `kind` is (nullopt: not an ASO object), and back.
inline std::optional<hw::AsoKind> AsoKindOf(DevxKind kind) {
  switch (kind) {
    case DevxKind::kAsoFlowMeter:
      return hw::AsoKind::kFlowMeter;
    case DevxKind::kAsoFirstHit:
      return hw::AsoKind::kFirstHit;
    case DevxKind::kAsoConnTrack:
      return hw::AsoKind::kConnTrack;
    default:
      return std::nullopt;
  }
}
inline DevxKind DevxKindOf(hw::AsoKind kind) {
  switch (kind) {
    case hw::AsoKind::kFlowMeter:
      return DevxKind::kAsoFlowMeter;
    case hw::AsoKind::kFirstHit:
      return DevxKind::kAsoFirstHit;
    case hw::AsoKind::kConnTrack:
      break;
  }
  return DevxKind::kAsoConnTrack;
}

}  // namespace drsim::capi

// The software NIC behind a context: one per drsim_open. `vctx.context` is the ibv_context users see (an
// extended verbs context, so verbs' inline calls find their operations); one per function (PF, VFs).
struct drsim_function_context {
  verbs_context vctx;
  drsim::capi::Context* owner;
  uint16_t vport;
};

namespace drsim::capi {

// The function context behind `ctx`, or nullptr when `ctx` is not a software NIC's context.
drsim_function_context* FunctionOf(ibv_context* ctx);

// A new context of function `vport` of `owner`'s NIC, with the verbs flow operations (and, when the software
// mlx5 device is linked in, its verbs operations) installed, and registered as a context of `owner`.
// drsim_open makes one per function; the device makes one per ibv_open_device.
std::unique_ptr<drsim_function_context> NewFunctionContext(Context* owner, uint16_t vport);

// State a front end keeps per NIC (the software mlx5 device's receive queues and wire); destroyed with
// the context.
class ContextExtension {
 public:
  virtual ~ContextExtension() = default;
};

// Called for every function context drsim_open makes, once set: the software mlx5 device, when linked in,
// installs its verbs operations there, so ibv_alloc_pd, ibv_create_cq and the data path work on drsim_open
// contexts too.
using FunctionContextSetUp = void (*)(drsim_function_context& f);
void SetFunctionContextSetUp(FunctionContextSetUp set_up);
FunctionContextSetUp GetFunctionContextSetUp();

struct Context {
  std::recursive_mutex mu;  // held by every C call on this context's objects
  std::unique_ptr<sim::Nic> nic;
  std::vector<std::unique_ptr<drsim_function_context>> functions;  // by vport
  // The kernel's tables of verbs flows (made with the first flow); goes before the NIC it programs.
  std::unique_ptr<VerbsSteering> verbs;
  // QPs, DEVX objects, domains, verbs flows and counters not yet destroyed: drsim_close is EBUSY until 0.
  int open_objects = 0;
  // Per function (vport): frames that reached one of its receive queues and found no posted receive
  // (mlx5's out_of_buffer queue counter; the software mlx5 device counts them).
  absl::flat_hash_map<uint16_t, uint64_t> rx_out_of_buffer;
  // The queue counters made with ALLOC_Q_COUNTER, by counter_set_id (a NIC-wide space, from 1).
  absl::flat_hash_map<uint32_t, mlx5dv_devx_obj*> queue_counters;
  uint32_t next_queue_counter = 1;
  // The RQ tables made with CREATE_RQT, by number (a NIC-wide space, from 1).
  absl::flat_hash_map<uint32_t, mlx5dv_devx_obj*> rqts;
  uint32_t next_rqt = 1;
  // What a front end keeps per NIC; goes first on destruction, before the NIC.
  std::unique_ptr<ContextExtension> extension;

  sim::Function& function(uint16_t vport) { return *nic->function(vport); }
};

// A new DEVX object of `ctx`, registered and counted in ctx.open_objects. Called with ctx.mu held.
mlx5dv_devx_obj* NewDevxObject(Context& ctx, DevxKind kind, uint16_t vport, uint32_t id, uint32_t count);

}  // namespace drsim::capi

struct mlx5dv_devx_obj {
  drsim::capi::Context* ctx;
  drsim::capi::DevxKind kind;
  uint16_t vport;  // kTir, kRqt: the function owning it
  uint32_t id;     // counter base, TIR number, ASO object or RQT number
  uint32_t count;  // kFlowCounter: the bulk size; kAso*: the contexts it holds
  // kQueueCounter: Context::rx_out_of_buffer of its function when it was allocated or last cleared.
  uint64_t baseline = 0;
  // kRqt: its receive queues (QP numbers of function `vport`) in table order, and the TIRs made from it
  // (mlx5dv_devx_obj_destroy is EBUSY while there are any).
  std::vector<uint32_t> rq_list;
  int tirs = 0;
  // kTir made from an RQ table: that table.
  mlx5dv_devx_obj* rqt = nullptr;
};

// A raw-packet QP of the software NIC: the verbs struct users see, and the receive queue behind it.
struct drsim_qp {
  ibv_qp qp;
  uint16_t vport;
  int flows = 0;  // verbs flows attached (ibv_create_flow): drsim_destroy_qp is EBUSY until 0
  // Made by ibv_create_qp on the software mlx5 device (soft_mlx5::SoftQp): destroyed with ibv_destroy_qp,
  // and its frames go to posted receives, not drsim_recv_qp.
  bool made_by_verbs = false;
  // An RSS QP (ibv_create_qp_ex with an indirection table): its frames go to this TIR, not to a queue.
  std::optional<uint32_t> rss_tir;
};

struct mlx5dv_dr_domain {
  drsim::dr::Domain domain;
  drsim::capi::Context* ctx;
  uint16_t vport;  // the function it was created on
};

struct mlx5dv_dr_table {
  drsim::dr::Table table;
  mlx5dv_dr_domain* domain;
};

struct mlx5dv_dr_matcher {
  drsim::dr::Matcher matcher;
  mlx5dv_dr_table* table;
};

struct mlx5dv_dr_rule {
  drsim::dr::Rule rule;
  mlx5dv_dr_matcher* matcher;
};

struct mlx5dv_dr_action {
  drsim::dr::Action action;
  drsim::capi::Context* ctx;  // nullptr for actions made without a device (drop, tag, ...)
  // For drop, default miss, tag and pop VLAN, which take no device: the same action made by rdma-core,
  // created when a rule of real hardware first uses this one, so either backend accepts it.
  mlx5dv_dr_action* real_twin = nullptr;
  enum class DeviceFree : uint8_t { kNo, kDrop, kDefaultMiss, kTag, kPopVlan } device_free = DeviceFree::kNo;
  uint32_t tag = 0;
};

#endif  // DRSIM_CAPI_OBJECTS_H_
