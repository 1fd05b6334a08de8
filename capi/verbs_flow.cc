#include "capi/verbs_flow.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "capi/dv_flow.h"
#include "capi/errors.h"
#include "capi/objects.h"
#include "capi/verbs_spec.h"
#include "capi/verbs_steering.h"
#include "hw/match_layout.h"
#include "hw/parsed_fields.h"

// A counters object of the software NIC: the ibv_counters users see, the NIC flow counter behind it and
// the counter points attached to it (mlx5's static binding: points first, then the flows that count).
struct drsim_counters {
  ibv_counters counters;
  uint32_t counter_id;
  struct Point {
    uint32_t description;  // IBV_COUNTER_PACKETS or IBV_COUNTER_BYTES
    uint32_t index;        // where ibv_read_counters adds it
  };
  std::vector<Point> points;
  int flows = 0;  // flows counting with it
};

// A verbs flow: the ibv_flow users see, and what it holds on to.
struct drsim_flow {
  ibv_flow flow;
  drsim_qp* qp;
  drsim_counters* counters;                    // nullptr without an ACTION_COUNT spec
  drsim::capi::VerbsSteering::Flow* steering;  // owned: handed back to VerbsSteering::Detach
};

// Users hold pointers to the first member; the structs must be pointer-interconvertible with it.
static_assert(std::is_standard_layout_v<drsim_counters> && std::is_standard_layout_v<drsim_flow>);

namespace drsim::capi {
namespace {

using Lock = std::lock_guard<std::recursive_mutex>;

// mlx5_ib's parse_flow_attr checks each spec's fields against the flow table's field support before it adds
// the rule (check_mpls_supp_fields and the like), EOPNOTSUPP: the first masked field the device does not
// match. (mlx5dv_create_flow has no such check: the firmware refuses those, EINVAL, dr's root path.)
absl::Status CheckFieldSupport(const std::vector<KernelRule>& rules, const hw::ParsedFields& supported) {
  for (const KernelRule& rule : rules) {
    for (size_t i = 0; i < hw::kNumFields; ++i) {
      const hw::Field f = hw::FieldAt(i);
      if (hw::GetField(rule.mask.bytes(), f) != 0 && !supported.Contains(f)) {
        return absl::UnimplementedError(absl::StrFormat(
            "mask field %s: the device's flow tables do not match it (the %s does not parse it%s)",
            hw::Info(f).name, supported.parser(),
            supported.limits().empty() ? "" : ": " + supported.limits()));
      }
    }
  }
  return absl::OkStatus();
}

drsim_counters* CountersOf(ibv_counters* counters, Context** ctx) {
  if (!IsSoftwareNicObject(counters, Kind::kCounters, ctx)) return nullptr;
  return reinterpret_cast<drsim_counters*>(counters);
}

ibv_flow* CreateFlow(ibv_qp* qp, ibv_flow_attr* attr) {
  constexpr const char* kFn = "ibv_create_flow";
  Context* ctx;
  if (!IsSoftwareNicObject(qp, Kind::kQp, &ctx)) {
    return NullWithError<ibv_flow>(kFn, EINVAL, "qp is not a QP of a software NIC (drsim_create_qp)");
  }
  Lock lock(ctx->mu);
  auto* q = reinterpret_cast<drsim_qp*>(qp);
  absl::StatusOr<VerbsFlowRequest> req = ReadFlowAttr(attr);
  if (!req.ok()) return NullWithError<ibv_flow>(kFn, req.status());
  drsim_counters* counters = nullptr;
  if (req->counters != nullptr) {
    Context* cctx;
    counters = CountersOf(req->counters, &cctx);
    if (counters == nullptr || cctx != ctx) {
      return NullWithError<ibv_flow>(kFn, EINVAL,
                                     "ACTION_COUNT: counters is not a counters object of this software NIC "
                                     "(ibv_create_counters)");
    }
    if (counters->flows == 0 && counters->points.empty()) {
      return NullWithError<ibv_flow>(
          kFn, EINVAL,
          "ACTION_COUNT: the counters object has no counter points; attach them first "
          "(ibv_attach_counters_point_flow with flow NULL)");
    }
  }
  FlowContribution contribution;
  contribution.drop = req->drop;
  contribution.tag = req->tag;
  // On the receive side the QP takes the frame; on EGRESS it only names the device, except for a sniffer.
  // An RSS QP (the software mlx5 device's) is a TIR.
  if (!req->egress || req->type == IBV_FLOW_ATTR_SNIFFER) {
    if (q->rss_tir.has_value()) {
      contribution.tir = *q->rss_tir;
    } else {
      contribution.qp_num = qp->qp_num;
    }
  }
  if (counters != nullptr) contribution.counter_id = counters->counter_id;
  if (absl::Status s = CheckFieldSupport(req->rules, ctx->nic->function(q->vport)->parsed_fields());
      !s.ok()) {
    return NullWithError<ibv_flow>(kFn, s);
  }
  if (ctx->verbs == nullptr) ctx->verbs = std::make_unique<VerbsSteering>(*ctx->nic);
  absl::StatusOr<std::unique_ptr<VerbsSteering::Flow>> steering =
      ctx->verbs->Attach(q->vport, req->rules, contribution);
  if (!steering.ok()) return NullWithError<ibv_flow>(kFn, steering.status());

  static std::atomic<uint32_t> next_handle{1};  // across NICs, which have locks of their own
  auto* f = new drsim_flow{{}, q, counters, steering->release()};
  f->flow.comp_mask = 0;
  f->flow.context = qp->context;
  f->flow.handle = next_handle.fetch_add(1, std::memory_order_relaxed);
  Registry::Get().Add(&f->flow, Kind::kFlow, ctx);
  ++ctx->open_objects;
  ++q->flows;
  if (counters != nullptr) ++counters->flows;
  return &f->flow;
}

int DestroyFlow(ibv_flow* flow) {
  constexpr const char* kFn = "ibv_destroy_flow";
  if (IsDvFlow(flow)) return DestroyDvFlow(flow);  // one op for both kinds of flow
  Context* ctx;
  if (!IsSoftwareNicObject(flow, Kind::kFlow, &ctx)) {
    return RecordFailure(kFn, EINVAL, "not a flow of a software NIC (ibv_create_flow or mlx5dv_create_flow)");
  }
  Lock lock(ctx->mu);
  auto* f = reinterpret_cast<drsim_flow*>(flow);
  // The flow leaves every entry even when rebuilding a shared one fails (an internal error).
  absl::Status s = ctx->verbs->Detach(std::unique_ptr<VerbsSteering::Flow>(f->steering));
  Registry::Get().Remove(flow);
  --ctx->open_objects;
  --f->qp->flows;
  if (f->counters != nullptr) --f->counters->flows;
  delete f;
  return s.ok() ? 0 : RecordFailure(kFn, s);
}

ibv_counters* CreateCounters(ibv_context* ibctx, ibv_counters_init_attr* init_attr) {
  constexpr const char* kFn = "ibv_create_counters";
  drsim_function_context* f = FunctionOf(ibctx);
  if (f == nullptr)
    return NullWithError<ibv_counters>(kFn, EINVAL, "not a context of a software NIC (drsim_open)");
  if (init_attr == nullptr) return NullWithError<ibv_counters>(kFn, EINVAL, "init_attr is NULL");
  if (init_attr->comp_mask != 0) {
    return NullWithError<ibv_counters>(
        kFn, EOPNOTSUPP,
        absl::StrFormat("init_attr->comp_mask 0x%x: none is supported", init_attr->comp_mask));
  }
  Context& ctx = *f->owner;
  Lock lock(ctx.mu);
  absl::StatusOr<uint32_t> id = ctx.nic->AllocateCounters(1);
  if (!id.ok()) return NullWithError<ibv_counters>(kFn, id.status());
  auto* c = new drsim_counters{{ibctx}, *id, {}, 0};
  Registry::Get().Add(&c->counters, Kind::kCounters, &ctx);
  ++ctx.open_objects;
  return &c->counters;
}

int DestroyCounters(ibv_counters* counters) {
  constexpr const char* kFn = "ibv_destroy_counters";
  Context* ctx;
  drsim_counters* c = CountersOf(counters, &ctx);
  if (c == nullptr)
    return RecordFailure(kFn, EINVAL, "not a counters object of a software NIC (ibv_create_counters)");
  Lock lock(ctx->mu);
  if (c->flows > 0) {
    return RecordFailure(kFn, EBUSY,
                         absl::StrFormat("%d flow(s) count with it; destroy them first", c->flows));
  }
  if (absl::Status s = ctx->nic->FreeCounters(c->counter_id); !s.ok()) return RecordFailure(kFn, s);
  Registry::Get().Remove(counters);
  --ctx->open_objects;
  delete c;
  return 0;
}

int AttachCountersPointFlow(ibv_counters* counters, ibv_counter_attach_attr* attr, ibv_flow* flow) {
  constexpr const char* kFn = "ibv_attach_counters_point_flow";
  Context* ctx;
  drsim_counters* c = CountersOf(counters, &ctx);
  if (c == nullptr)
    return RecordFailure(kFn, EINVAL, "not a counters object of a software NIC (ibv_create_counters)");
  if (flow != nullptr) {
    return RecordFailure(kFn, ENOTSUP,
                         "flow must be NULL: as mlx5, points are attached before the flows that count "
                         "(ibv_create_flow with an ACTION_COUNT spec)");
  }
  if (attr == nullptr) return RecordFailure(kFn, EINVAL, "attr is NULL");
  if (attr->comp_mask != 0) {
    return RecordFailure(kFn, EOPNOTSUPP,
                         absl::StrFormat("attr->comp_mask 0x%x: none is supported", attr->comp_mask));
  }
  uint32_t description;  // a C enum: any value may arrive
  std::memcpy(&description, &attr->counter_desc, sizeof description);
  if (description > IBV_COUNTER_BYTES) {
    return RecordFailure(
        kFn, ENOTSUP,
        absl::StrFormat("counter_desc %d: IBV_COUNTER_PACKETS (0) or IBV_COUNTER_BYTES (1)", description));
  }
  Lock lock(ctx->mu);
  if (c->flows > 0) {
    return RecordFailure(kFn, EBUSY, absl::StrFormat("the counters object is bound to %d flow(s)", c->flows));
  }
  c->points.push_back({description, attr->index});
  return 0;
}

int ReadCounters(ibv_counters* counters, uint64_t* values, uint32_t ncounters, uint32_t flags) {
  constexpr const char* kFn = "ibv_read_counters";
  Context* ctx;
  drsim_counters* c = CountersOf(counters, &ctx);
  if (c == nullptr)
    return RecordFailure(kFn, EINVAL, "not a counters object of a software NIC (ibv_create_counters)");
  if (flags & ~static_cast<uint32_t>(IBV_READ_COUNTERS_ATTR_PREFER_CACHED)) {
    return RecordFailure(kFn, EINVAL,
                         absl::StrFormat("flags 0x%x: only PREFER_CACHED (0x1) is known", flags));
  }
  Lock lock(ctx->mu);
  if (c->flows == 0) return RecordFailure(kFn, EINVAL, "the counters object is not bound to any flow");
  uint32_t needed = 0;
  for (const drsim_counters::Point& p : c->points) needed = std::max(needed, p.index + 1);
  if (ncounters < needed) {
    return RecordFailure(
        kFn, EINVAL,
        absl::StrFormat("ncounters %d: the points attached use indexes up to %d", ncounters, needed - 1));
  }
  if (values == nullptr && ncounters > 0) return RecordFailure(kFn, EINVAL, "counters_value is NULL");
  uint64_t packets = 0, bytes = 0;
  if (absl::Status s = ctx->nic->QueryCounter(c->counter_id, &packets, &bytes); !s.ok())
    return RecordFailure(kFn, s);
  if (ncounters > 0) std::memset(values, 0, ncounters * sizeof *values);
  for (const drsim_counters::Point& p : c->points) {
    values[p.index] += p.description == IBV_COUNTER_PACKETS ? packets : bytes;
  }
  return 0;
}

}  // namespace

void InstallVerbsFlowOps(verbs_context& vctx) {
  vctx.ibv_create_flow = CreateFlow;
  vctx.ibv_destroy_flow = DestroyFlow;
  vctx.create_counters = CreateCounters;
  vctx.destroy_counters = DestroyCounters;
  vctx.attach_counters_point_flow = AttachCountersPointFlow;
  vctx.read_counters = ReadCounters;
  vctx.destroy_flow_action = DestroyFlowAction;  // mlx5dv_create_flow_action_*'s (capi/dv_flow.h)
}

}  // namespace drsim::capi
