// The drsim_* calls of drsim.h: opening a software NIC and making its QPs and DEVX objects, and the
// frames in and out.
#include "capi/drsim.h"

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <optional>
#include <vector>

#include "absl/strings/str_format.h"
#include "capi/errors.h"
#include "capi/objects.h"
#include "capi/real_mlx5.h"
#include "capi/verbs_flow.h"
#include "capi/verbs_steering.h"
#include "sim/aso.h"
#include "sim/conntrack_prm.h"
#include "sim/meter.h"
#include "sim/rx_queue.h"
#include "sim/toeplitz.h"

namespace drsim::capi {
namespace {

constexpr unsigned kMaxVfs = 1024;
constexpr size_t kQpCapacity = 4096;

// The function context of `ctx`, or nullptr when it is not a software NIC's.
drsim_qp* QpOf(ibv_qp* qp, Context** ctx) {
  if (!IsSoftwareNicObject(qp, Kind::kQp, ctx)) return nullptr;
  return reinterpret_cast<drsim_qp*>(qp);
}

mlx5dv_devx_obj* DevxOf(mlx5dv_devx_obj* obj, DevxKind kind) {
  Context* ctx;
  if (!IsSoftwareNicObject(obj, Kind::kDevx, &ctx) || obj->kind != kind) return nullptr;
  return obj;
}

// The function context of `ctx`, or nullptr after recording EINVAL for `fn`.
drsim_function_context* ContextOrFail(const char* fn, ibv_context* ctx) {
  drsim_function_context* f = FunctionOf(ctx);
  if (f == nullptr) RecordFailure(fn, EINVAL, "not a context of a software NIC (drsim_open)");
  return f;
}

// Whether `vport` names a function of `ctx` (or, with `wire`, is -1 for the uplink); records EINVAL if not.
bool VportOrFail(const char* fn, const Context& ctx, int vport, bool wire) {
  if (vport >= (wire ? -1 : 0) && vport < static_cast<int>(ctx.functions.size())) return true;
  RecordFailure(fn, EINVAL,
                absl::StrFormat("vport %d: %s0 (PF) to %d", vport, wire ? "-1 (the wire) or " : "",
                                ctx.functions.size() - 1));
  return false;
}

mlx5dv_devx_obj* AllocAso(const char* fn, ibv_context* ibctx, hw::AsoKind kind, uint32_t log_obj_range) {
  drsim_function_context* f = drsim::capi::ContextOrFail(fn, ibctx);
  if (f == nullptr) return nullptr;
  Context& ctx = *f->owner;
  std::lock_guard<std::recursive_mutex> lock(ctx.mu);
  absl::StatusOr<uint32_t> id = ctx.nic->CreateAsoObject(kind, log_obj_range);
  if (!id.ok()) {
    RecordFailure(fn, id.status());
    return nullptr;
  }
  return NewDevxObject(ctx, DevxKindOf(kind), f->vport, *id,
                       sim::AsoBank::ContextsPerLine(kind) << log_obj_range);
}

// Copies `frame` into `buf` and returns its length, or -EMSGSIZE when it does not fit.
int CopyOut(const char* fn, const std::vector<uint8_t>& frame, void* buf, size_t cap) {
  if (frame.size() > cap) {
    RecordFailure(fn, EMSGSIZE,
                  absl::StrFormat("the frame is %d bytes; the buffer holds %d", frame.size(), cap));
    return -EMSGSIZE;
  }
  if (!frame.empty()) std::memcpy(buf, frame.data(), frame.size());
  return static_cast<int>(frame.size());
}

}  // namespace

mlx5dv_devx_obj* NewDevxObject(Context& ctx, DevxKind kind, uint16_t vport, uint32_t id, uint32_t count) {
  auto* obj = new mlx5dv_devx_obj();
  obj->ctx = &ctx;
  obj->kind = kind;
  obj->vport = vport;
  obj->id = id;
  obj->count = count;
  Registry::Get().Add(obj, Kind::kDevx, &ctx);
  ++ctx.open_objects;
  return obj;
}

std::unique_ptr<drsim_function_context> NewFunctionContext(Context* owner, uint16_t vport) {
  auto f = std::make_unique<drsim_function_context>();
  std::memset(&f->vctx, 0, sizeof f->vctx);
  f->vctx.sz = sizeof f->vctx;
  f->vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
  f->vctx.context.num_comp_vectors = 1;
  f->vctx.context.cmd_fd = -1;
  f->vctx.context.async_fd = -1;
  pthread_mutex_init(&f->vctx.context.mutex, nullptr);
  InstallVerbsFlowOps(f->vctx);
  f->owner = owner;
  f->vport = vport;
  if (auto set_up = GetFunctionContextSetUp()) set_up(*f);
  Registry::Get().Add(&f->vctx.context, Kind::kContext, owner);
  return f;
}

}  // namespace drsim::capi

using drsim::capi::Context;
using drsim::capi::DevxKind;
using drsim::capi::IsSoftwareNicObject;
using drsim::capi::Kind;
using drsim::capi::RecordFailure;
using drsim::capi::Registry;

extern "C" {

ibv_context* drsim_open(unsigned num_vfs) {
  if (num_vfs > drsim::capi::kMaxVfs) {
    RecordFailure(__func__, EINVAL, absl::StrFormat("num_vfs %d: at most %d", num_vfs, drsim::capi::kMaxVfs));
    return nullptr;
  }
  auto* ctx = new Context;
  ctx->nic = std::make_unique<drsim::sim::Nic>(static_cast<int>(num_vfs));
  for (unsigned v = 0; v <= num_vfs; ++v) {
    ctx->functions.push_back(drsim::capi::NewFunctionContext(ctx, static_cast<uint16_t>(v)));
  }
  return &ctx->functions[0]->vctx.context;
}

ibv_context* drsim_vport_context(ibv_context* ibctx, uint16_t vport) {
  drsim_function_context* f = drsim::capi::ContextOrFail(__func__, ibctx);
  if (f == nullptr) return nullptr;
  Context& ctx = *f->owner;
  if (!drsim::capi::VportOrFail(__func__, ctx, vport, /*wire=*/false)) return nullptr;
  return &ctx.functions[vport]->vctx.context;
}

int drsim_close(ibv_context* ibctx) {
  drsim_function_context* f = drsim::capi::FunctionOf(ibctx);
  if (f == nullptr || f->vport != 0) {
    return RecordFailure(__func__, EINVAL, "not a context drsim_open returned");
  }
  Context* ctx = f->owner;
  {
    std::lock_guard<std::recursive_mutex> lock(ctx->mu);
    if (ctx->open_objects > 0) {
      return RecordFailure(
          __func__, EBUSY,
          absl::StrFormat("%d domain(s), QP(s), DEVX object(s), verbs or DV flow(s), counters, DV matchers "
                          "or flow actions of this NIC still exist",
                          ctx->open_objects));
    }
    for (auto& fn : ctx->functions) Registry::Get().Remove(&fn->vctx.context);
  }
  delete ctx;
  return 0;
}

ibv_qp* drsim_create_qp(ibv_context* ibctx, uint16_t vport) {
  drsim_function_context* f = drsim::capi::ContextOrFail(__func__, ibctx);
  if (f == nullptr) return nullptr;
  Context& ctx = *f->owner;
  std::lock_guard<std::recursive_mutex> lock(ctx.mu);
  if (!drsim::capi::VportOrFail(__func__, ctx, vport, /*wire=*/false)) return nullptr;
  auto* q = new drsim_qp;
  std::memset(&q->qp, 0, sizeof q->qp);
  q->qp.context = &ctx.functions[vport]->vctx.context;
  q->qp.qp_num = ctx.function(vport).CreateQueue(drsim::capi::kQpCapacity);
  q->qp.qp_type = IBV_QPT_RAW_PACKET;
  q->qp.state = IBV_QPS_RTS;
  q->vport = vport;
  Registry::Get().Add(&q->qp, Kind::kQp, &ctx);
  ++ctx.open_objects;
  return &q->qp;
}

int drsim_destroy_qp(ibv_qp* qp) {
  Context* ctx;
  drsim_qp* q = drsim::capi::QpOf(qp, &ctx);
  if (q == nullptr || q->made_by_verbs) {
    return RecordFailure(
        __func__, EINVAL,
        q == nullptr ? "not a QP drsim_create_qp made" : "an ibv_create_qp QP: use ibv_destroy_qp");
  }
  std::lock_guard<std::recursive_mutex> lock(ctx->mu);
  if (q->flows > 0) {
    return RecordFailure(
        __func__, EBUSY,
        absl::StrFormat("%d verbs flow(s) are attached to the QP (ibv_create_flow, mlx5dv_create_flow)",
                        q->flows));
  }
  if (absl::Status s = ctx->function(q->vport).DestroyQueue(qp->qp_num); !s.ok())
    return RecordFailure(__func__, s);
  Registry::Get().Remove(qp);
  --ctx->open_objects;
  delete q;
  return 0;
}

mlx5dv_devx_obj* drsim_counter_alloc(ibv_context* ibctx, uint32_t bulk) {
  drsim_function_context* f = drsim::capi::ContextOrFail(__func__, ibctx);
  if (f == nullptr) return nullptr;
  Context& ctx = *f->owner;
  std::lock_guard<std::recursive_mutex> lock(ctx.mu);
  absl::StatusOr<uint32_t> base = ctx.nic->AllocateCounters(bulk);
  if (!base.ok()) {
    RecordFailure(__func__, base.status());
    return nullptr;
  }
  return drsim::capi::NewDevxObject(ctx, DevxKind::kFlowCounter, f->vport, *base, bulk);
}

int drsim_counter_query(mlx5dv_devx_obj* counters, uint32_t offset, uint64_t* packets, uint64_t* bytes) {
  mlx5dv_devx_obj* obj = drsim::capi::DevxOf(counters, DevxKind::kFlowCounter);
  if (obj == nullptr) return RecordFailure(__func__, EINVAL, "not a counter bulk drsim_counter_alloc made");
  if (offset >= obj->count) {
    return RecordFailure(__func__, EINVAL,
                         absl::StrFormat("offset %d: the bulk has %d counters", offset, obj->count));
  }
  if (packets == nullptr || bytes == nullptr)
    return RecordFailure(__func__, EINVAL, "packets and bytes must not be NULL");
  std::lock_guard<std::recursive_mutex> lock(obj->ctx->mu);
  if (absl::Status s = obj->ctx->nic->QueryCounter(obj->id + offset, packets, bytes); !s.ok()) {
    return RecordFailure(__func__, s);
  }
  return 0;
}

mlx5dv_devx_obj* drsim_tir_create(ibv_context* ibctx, ibv_qp** qps, size_t num_qps,
                                  uint64_t rx_hash_fields_mask, const uint8_t* key, size_t key_len) {
  drsim_function_context* f = drsim::capi::ContextOrFail(__func__, ibctx);
  if (f == nullptr) return nullptr;
  if ((key == nullptr) != (key_len == 0)) {
    RecordFailure(__func__, EINVAL, "key and key_len disagree (NULL and 0 select the default key)");
    return nullptr;
  }
  if (qps == nullptr || num_qps == 0) {
    RecordFailure(__func__, EINVAL, "no QPs");
    return nullptr;
  }
  Context& ctx = *f->owner;
  std::lock_guard<std::recursive_mutex> lock(ctx.mu);
  std::vector<uint32_t> queues;
  std::optional<uint16_t> vport;
  for (size_t i = 0; i < num_qps; ++i) {
    Context* qctx;
    drsim_qp* q = drsim::capi::QpOf(qps[i], &qctx);
    if (q == nullptr || qctx != &ctx) {
      RecordFailure(__func__, EINVAL, absl::StrFormat("qps[%d] is not a QP of this NIC", i));
      return nullptr;
    }
    if (vport.has_value() && *vport != q->vport) {
      RecordFailure(__func__, EINVAL,
                    absl::StrFormat("qps[%d] is on vport %d, qps[0] on vport %d", i, q->vport, *vport));
      return nullptr;
    }
    vport = q->vport;
    queues.push_back(q->qp.qp_num);
  }
  const absl::Span<const uint8_t> k =
      key != nullptr ? absl::MakeConstSpan(key, key_len) : drsim::sim::kMicrosoftRssKey;
  absl::StatusOr<uint32_t> tir = ctx.function(*vport).CreateTir(std::move(queues), rx_hash_fields_mask, k);
  if (!tir.ok()) {
    RecordFailure(__func__, tir.status());
    return nullptr;
  }
  return drsim::capi::NewDevxObject(ctx, DevxKind::kTir, *vport, *tir, 0);
}

mlx5dv_devx_obj* drsim_aso_flow_meter_alloc(ibv_context* ctx, uint32_t log_obj_range) {
  return drsim::capi::AllocAso(__func__, ctx, drsim::hw::AsoKind::kFlowMeter, log_obj_range);
}

mlx5dv_devx_obj* drsim_aso_first_hit_alloc(ibv_context* ctx, uint32_t log_obj_range) {
  return drsim::capi::AllocAso(__func__, ctx, drsim::hw::AsoKind::kFirstHit, log_obj_range);
}

mlx5dv_devx_obj* drsim_aso_ct_alloc(ibv_context* ctx, uint32_t log_obj_range) {
  return drsim::capi::AllocAso(__func__, ctx, drsim::hw::AsoKind::kConnTrack, log_obj_range);
}

int drsim_aso_ct_configure(mlx5dv_devx_obj* cts, uint32_t offset, const void* context, size_t context_sz) {
  mlx5dv_devx_obj* obj = drsim::capi::DevxOf(cts, DevxKind::kAsoConnTrack);
  if (obj == nullptr) return RecordFailure(__func__, EINVAL, "not an ASO CT object (drsim_aso_ct_alloc)");
  if (context == nullptr) return RecordFailure(__func__, EINVAL, "context is NULL");
  absl::StatusOr<drsim::sim::CtContext> c =
      drsim::sim::ParseCtContext(absl::MakeConstSpan(static_cast<const uint8_t*>(context), context_sz));
  if (!c.ok()) return RecordFailure(__func__, c.status());
  std::lock_guard<std::recursive_mutex> lock(obj->ctx->mu);
  if (absl::Status s = obj->ctx->nic->ConfigureAsoConnTrack(obj->id, offset, *c); !s.ok())
    return RecordFailure(__func__, s);
  return 0;
}

int drsim_aso_ct_query(mlx5dv_devx_obj* cts, uint32_t offset, void* context, size_t context_sz) {
  mlx5dv_devx_obj* obj = drsim::capi::DevxOf(cts, DevxKind::kAsoConnTrack);
  if (obj == nullptr) return RecordFailure(__func__, EINVAL, "not an ASO CT object (drsim_aso_ct_alloc)");
  if (context == nullptr) return RecordFailure(__func__, EINVAL, "context is NULL");
  if (context_sz < drsim::sim::kCtPrmBytes) {
    return RecordFailure(
        __func__, EINVAL,
        absl::StrFormat("context_sz %d: the context is %d bytes", context_sz, drsim::sim::kCtPrmBytes));
  }
  std::lock_guard<std::recursive_mutex> lock(obj->ctx->mu);
  absl::StatusOr<drsim::sim::CtContext> c = obj->ctx->nic->QueryAsoConnTrack(obj->id, offset);
  if (!c.ok()) return RecordFailure(__func__, c.status());
  const std::array<uint8_t, drsim::sim::kCtPrmBytes> prm = drsim::sim::SerializeCtContext(*c);
  std::memcpy(context, prm.data(), prm.size());
  return 0;
}

int drsim_aso_flow_meter_configure(mlx5dv_devx_obj* meters, uint32_t offset, const void* params,
                                   size_t params_sz) {
  mlx5dv_devx_obj* obj = drsim::capi::DevxOf(meters, DevxKind::kAsoFlowMeter);
  if (obj == nullptr)
    return RecordFailure(__func__, EINVAL, "not an ASO flow meter object (drsim_aso_flow_meter_alloc)");
  if (params == nullptr) return RecordFailure(__func__, EINVAL, "params is NULL");
  absl::StatusOr<drsim::sim::MeterParams> p =
      drsim::sim::MeterParams::Parse(absl::MakeConstSpan(static_cast<const uint8_t*>(params), params_sz));
  if (!p.ok()) return RecordFailure(__func__, p.status());
  std::lock_guard<std::recursive_mutex> lock(obj->ctx->mu);
  if (absl::Status s = obj->ctx->nic->ConfigureAsoFlowMeter(obj->id, offset, *p); !s.ok())
    return RecordFailure(__func__, s);
  return 0;
}

int drsim_set_time_ns(ibv_context* ibctx, uint64_t ns) {
  drsim_function_context* f = drsim::capi::ContextOrFail(__func__, ibctx);
  if (f == nullptr) return EINVAL;
  std::lock_guard<std::recursive_mutex> lock(f->owner->mu);
  f->owner->nic->set_time_ns(ns);
  return 0;
}

int drsim_send(ibv_context* ibctx, int from_vport, const void* frame, size_t len) {
  drsim_function_context* f = drsim::capi::ContextOrFail(__func__, ibctx);
  if (f == nullptr) return EINVAL;
  if (frame == nullptr || len < 14 || len > 65535) {
    return RecordFailure(__func__, EINVAL,
                         absl::StrFormat("frame of %d bytes%s: an Ethernet frame has 14 to 65535", len,
                                         frame == nullptr ? " at NULL" : ""));
  }
  Context& ctx = *f->owner;
  std::lock_guard<std::recursive_mutex> lock(ctx.mu);
  if (!drsim::capi::VportOrFail(__func__, ctx, from_vport, /*wire=*/true)) return EINVAL;
  const drsim::sim::Frame bytes(static_cast<const uint8_t*>(frame), len);
  absl::Status s = from_vport < 0
                       ? ctx.nic->ReceiveFromWire(absl::MakeConstSpan(&bytes, 1))
                       : ctx.function(static_cast<uint16_t>(from_vport)).Send(absl::MakeConstSpan(&bytes, 1));
  return s.ok() ? 0 : RecordFailure(__func__, s);
}

int drsim_recv_qp(ibv_qp* qp, void* buf, size_t cap, uint32_t* flow_tag) {
  Context* ctx;
  drsim_qp* q = drsim::capi::QpOf(qp, &ctx);
  if (q == nullptr || q->made_by_verbs) {
    return -RecordFailure(__func__, EINVAL,
                          q == nullptr
                              ? "not a QP drsim_create_qp made"
                              : "an ibv_create_qp QP: its frames go to posted receives (ibv_post_recv)");
  }
  std::lock_guard<std::recursive_mutex> lock(ctx->mu);
  drsim::sim::RxQueue* rq = ctx->function(q->vport).queue(qp->qp_num);
  const drsim::sim::RxCompletion* c = rq->Front();
  if (c == nullptr) return 0;
  if (buf == nullptr && cap > 0) return -RecordFailure(__func__, EINVAL, "buf is NULL");
  const int n = drsim::capi::CopyOut(__func__, c->frame, buf, cap);
  if (n < 0) return n;
  if (flow_tag != nullptr) *flow_tag = c->flow_tag;
  rq->Poll();
  return n;
}

int drsim_recv_port(ibv_context* ibctx, int vport, void* buf, size_t cap) {
  drsim_function_context* f = drsim::capi::ContextOrFail(__func__, ibctx);
  if (f == nullptr) return -EINVAL;
  Context& ctx = *f->owner;
  std::lock_guard<std::recursive_mutex> lock(ctx.mu);
  if (!drsim::capi::VportOrFail(__func__, ctx, vport, /*wire=*/true)) return -EINVAL;
  drsim::sim::Function* fn = vport < 0 ? nullptr : &ctx.function(static_cast<uint16_t>(vport));
  const std::vector<uint8_t>* next = fn == nullptr ? ctx.nic->PeekWire() : fn->PeekPort();
  if (next == nullptr) return 0;
  if (buf == nullptr && cap > 0) return -RecordFailure(__func__, EINVAL, "buf is NULL");
  const int n = drsim::capi::CopyOut(__func__, *next, buf, cap);
  if (n < 0) return n;
  if (fn == nullptr) {
    ctx.nic->PollWire();
  } else {
    fn->PollPort();
  }
  return n;
}

const char* drsim_last_error(void) { return drsim::capi::LastError(); }

int mlx5dv_devx_obj_destroy(mlx5dv_devx_obj* obj) {
  Context* ctx;
  if (!IsSoftwareNicObject(obj, Kind::kDevx, &ctx)) {
    const drsim::capi::RealMlx5* real = drsim::capi::Real();
    if (obj != nullptr && real != nullptr) return real->mlx5dv_devx_obj_destroy(obj);
    return RecordFailure(__func__, EINVAL,
                         "not a DEVX object of a software NIC, and no libmlx5 to hand it to");
  }
  std::lock_guard<std::recursive_mutex> lock(ctx->mu);
  absl::Status s;
  switch (obj->kind) {
    case DevxKind::kFlowCounter:
      s = ctx->nic->FreeCounters(obj->id);
      break;
    case DevxKind::kTir:
      s = ctx->function(obj->vport).DestroyTir(obj->id);
      if (s.ok() && obj->rqt != nullptr) --obj->rqt->tirs;
      break;
    case DevxKind::kAsoFlowMeter:
    case DevxKind::kAsoFirstHit:
    case DevxKind::kAsoConnTrack:
      s = ctx->nic->DestroyAsoObject(obj->id);
      break;
    case DevxKind::kGeneveTlvOption:
      s = ctx->nic->DestroyGeneveTlvOption(obj->id);
      break;
    case DevxKind::kQueueCounter:
      ctx->queue_counters.erase(obj->id);
      break;
    case DevxKind::kRqt:
      if (obj->tirs > 0) {
        s = absl::FailedPreconditionError(
            absl::StrFormat("RQ table %d is used by %d TIR(s)", obj->id, obj->tirs));
      } else {
        ctx->rqts.erase(obj->id);
      }
      break;
  }
  if (!s.ok()) return RecordFailure(__func__, s);
  Registry::Get().Remove(obj);
  --ctx->open_objects;
  delete obj;
  return 0;
}

}  // extern "C"
