#include "capi/dv_flow.h"

#include <infiniband/mlx5dv.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "capi/dv_flow_request.h"
#include "capi/errors.h"
#include "capi/objects.h"
#include "capi/raw_enum.h"
#include "capi/real_symbol.h"
#include "capi/verbs_steering.h"

// A DV matcher of the software NIC: what mlx5_ib keeps of it, on the function of the context it was made
// on.
struct mlx5dv_flow_matcher {
  drsim::capi::Context* ctx;
  ibv_context* context;  // the context it was made on: its flows' context
  uint16_t vport;
  drsim::capi::DvMatcherSpec spec;
  int flows = 0;  // DV flows made with it: destroying it is EBUSY until 0
};

// A flow action of the software NIC: the ibv_flow_action users see and the root-level dr:: action it is,
// made in the private domain of its function and direction (VerbsSteering::DomainFor).
struct drsim_flow_action {
  ibv_flow_action action;
  uint16_t vport;
  unsigned ft_type;  // NIC_RX or NIC_TX
  enum class Rewrite : uint8_t { kDecap, kReformat, kModifyHeader } rewrite;
  drsim::dr::Action dr_action;
  int flows = 0;  // DV flows using it: destroying it is EBUSY until 0
};

// A DV flow: the ibv_flow users see, and what it holds on to.
struct drsim_dv_flow {
  ibv_flow flow;
  mlx5dv_flow_matcher* matcher;
  drsim_qp* qp;                                // DEST_IBV_QP, or nullptr
  std::vector<drsim_flow_action*> actions;     // IBV_FLOW_ACTION
  drsim::capi::VerbsSteering::Flow* steering;  // owned: handed back to VerbsSteering::Detach
};

// Users hold pointers to the first member; the structs must be pointer-interconvertible with it.
static_assert(std::is_standard_layout_v<drsim_flow_action> && std::is_standard_layout_v<drsim_dv_flow>);

namespace drsim::capi {
namespace {

using Lock = std::lock_guard<std::recursive_mutex>;
using Dest = DvActionList::Dest;

// The kernel takes at most two flow actions per flow (MLX5_IB_CREATE_FLOW_MAX_FLOW_ACTIONS).
constexpr size_t kMaxKernelFlowActions = 2;
constexpr uint32_t kMaxFlowTag = (1u << 24) - 1;

// libmlx5's `fn` for an object `p` that is not the software NIC's, or nullptr after recording why not:
// EINVAL for NULL and for a software-NIC object of another kind (libmlx5 must never see one), EOPNOTSUPP
// when there is no libmlx5 to hand it to.
template <typename Fn>
Fn RealFor(const char* name, Fn real, const void* p, const char* what) {
  if (p == nullptr) {
    RecordFailure(name, EINVAL, absl::StrFormat("%s is NULL", what));
    return nullptr;
  }
  if (Registry::Get().Known(p)) {
    RecordFailure(name, EINVAL, absl::StrFormat("%s is a software-NIC object of another kind", what));
    return nullptr;
  }
  if (real == nullptr) {
    RecordFailure(
        name, EOPNOTSUPP,
        absl::StrFormat("%s is not an object of a software NIC, and rdma-core's libmlx5.so.1 cannot "
                        "be loaded to hand it to real hardware",
                        what));
  }
  return real;
}

// The kernel's tables of `ctx`, made with its first kernel flow or flow action.
VerbsSteering& SteeringOf(Context& ctx) {
  if (ctx.verbs == nullptr) ctx.verbs = std::make_unique<VerbsSteering>(*ctx.nic);
  return *ctx.verbs;
}

mlx5dv_dr_domain_type DomainTypeOf(unsigned ft_type) {
  return ft_type == MLX5DV_FLOW_TABLE_TYPE_NIC_TX ? MLX5DV_DR_DOMAIN_TYPE_NIC_TX
                                                  : MLX5DV_DR_DOMAIN_TYPE_NIC_RX;
}

// Registers a new flow action made of `a` on function context `f`, or records the failure.
ibv_flow_action* NewFlowAction(const char* fn, ibv_context* ibctx, const drsim_function_context& f,
                               unsigned ft_type, drsim_flow_action::Rewrite rewrite,
                               absl::StatusOr<dr::Action> a) {
  if (!a.ok()) return NullWithError<ibv_flow_action>(fn, a.status());
  auto* action = new drsim_flow_action{{ibctx}, f.vport, ft_type, rewrite, *std::move(a), 0};
  Registry::Get().Add(&action->action, Kind::kFlowAction, f.owner);
  ++f.owner->open_objects;
  return &action->action;
}

// The private domain for a flow action of `ft_type` on `f`, or the error: the software NIC has kernel
// tables in NIC_RX and NIC_TX only.
absl::StatusOr<const dr::Domain*> ActionDomain(const drsim_function_context& f, unsigned ft_type) {
  if (ft_type != MLX5DV_FLOW_TABLE_TYPE_NIC_RX && ft_type != MLX5DV_FLOW_TABLE_TYPE_NIC_TX) {
    return absl::UnimplementedError(
        absl::StrFormat("ft_type %s: the software NIC has kernel flow tables in NIC_RX and NIC_TX only",
                        FlowTableTypeName(ft_type)));
  }
  return SteeringOf(*f.owner).DomainFor(f.vport, DomainTypeOf(ft_type));
}

std::string ActionAt(size_t index, unsigned type) {
  return absl::StrFormat("actions_attr[%d] (%s)", index, DvActionTypeName(type));
}

// The objects of a DV flow's actions, looked up and checked against the matcher (mlx5_ib's get_dests,
// its counter and flow-action parsing).
struct FlowObjects {
  drsim_qp* qp = nullptr;
  mlx5dv_devx_obj* tir = nullptr;
  mlx5dv_devx_obj* counters = nullptr;
  std::vector<drsim_flow_action*> actions;
};

absl::StatusOr<FlowObjects> LookUpObjects(const mlx5dv_flow_matcher& m, const DvActionList& list) {
  FlowObjects objects;
  const unsigned ft = m.spec.ft_type;
  const std::string where = absl::StrFormat("function %d", m.vport);
  auto invalid = [](size_t index, unsigned type, const std::string& why) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: %s", ActionAt(index, type), why));
  };
  if (list.dest == Dest::kQp) {
    Context* qctx;
    if (!IsSoftwareNicObject(list.qp, Kind::kQp, &qctx) || qctx != m.ctx) {
      return invalid(list.dest_index, MLX5DV_FLOW_ACTION_DEST_IBV_QP,
                     "qp is not a QP of this software NIC (drsim_create_qp)");
    }
    objects.qp = reinterpret_cast<drsim_qp*>(list.qp);
    if (objects.qp->vport != m.vport) {
      return invalid(
          list.dest_index, MLX5DV_FLOW_ACTION_DEST_IBV_QP,
          absl::StrFormat("the QP is on function %d, the matcher on %s", objects.qp->vport, where));
    }
  }
  if (list.dest == Dest::kDevx) {
    Context* octx;
    mlx5dv_devx_obj* obj = list.dest_obj;
    if (!IsSoftwareNicObject(obj, Kind::kDevx, &octx) || octx != m.ctx) {
      return invalid(list.dest_index, MLX5DV_FLOW_ACTION_DEST_DEVX,
                     "obj is not a DEVX object of this software NIC");
    }
    if (obj->kind != DevxKind::kTir) {
      return invalid(list.dest_index, MLX5DV_FLOW_ACTION_DEST_DEVX,
                     "obj is not a flow destination: a TIR (the software NIC has no DEVX flow tables)");
    }
    if (obj->vport != m.vport) {
      return invalid(list.dest_index, MLX5DV_FLOW_ACTION_DEST_DEVX,
                     absl::StrFormat("the TIR is on function %d, the matcher on %s", obj->vport, where));
    }
    objects.tir = obj;
  }
  // get_dests' rules per table type.
  const bool devx = list.dest == Dest::kDevx, qp = list.dest == Dest::kQp;
  if (ft == MLX5DV_FLOW_TABLE_TYPE_FDB && !devx && list.dest != Dest::kDrop) {
    return absl::InvalidArgumentError("an FDB flow takes a DEVX flow table destination or DROP");
  }
  if (ft == MLX5DV_FLOW_TABLE_TYPE_RDMA_RX && !devx && !qp) {
    return absl::InvalidArgumentError("an RDMA_RX flow takes a DEST_IBV_QP or DEST_DEVX destination");
  }
  if (devx && (ft == MLX5DV_FLOW_TABLE_TYPE_FDB || ft == MLX5DV_FLOW_TABLE_TYPE_RDMA_RX)) {
    return invalid(list.dest_index, MLX5DV_FLOW_ACTION_DEST_DEVX,
                   absl::StrFormat("%s flows take a DEVX flow table, not a TIR", FlowTableTypeName(ft)));
  }
  if ((devx || qp) && ft == MLX5DV_FLOW_TABLE_TYPE_NIC_TX) {
    return invalid(list.dest_index, qp ? MLX5DV_FLOW_ACTION_DEST_IBV_QP : MLX5DV_FLOW_ACTION_DEST_DEVX,
                   "a NIC_TX flow sends to the wire; it takes no QP or TIR destination");
  }
  if (list.counters != nullptr) {
    Context* cctx;
    mlx5dv_devx_obj* obj = list.counters;
    if (!IsSoftwareNicObject(obj, Kind::kDevx, &cctx) || cctx != m.ctx ||
        obj->kind != DevxKind::kFlowCounter) {
      return invalid(list.counters_index, MLX5DV_FLOW_ACTION_COUNTERS_DEVX,
                     "obj is not a flow counter bulk of this software NIC (drsim_counter_alloc)");
    }
    objects.counters = obj;
  }
  bool decap = false, reformat = false, modify = false;
  for (const DvActionList::FlowAction& fa : list.flow_actions) {
    Context* actx;
    if (!IsSoftwareNicObject(fa.action, Kind::kFlowAction, &actx) || actx != m.ctx) {
      return invalid(fa.index, MLX5DV_FLOW_ACTION_IBV_FLOW_ACTION,
                     "action is not a flow action of this software NIC "
                     "(mlx5dv_create_flow_action_packet_reformat or _modify_header)");
    }
    auto* a = reinterpret_cast<drsim_flow_action*>(fa.action);
    if (a->vport != m.vport) {
      return invalid(fa.index, MLX5DV_FLOW_ACTION_IBV_FLOW_ACTION,
                     absl::StrFormat("the action is on function %d, the matcher on %s", a->vport, where));
    }
    if (a->ft_type != ft) {
      return invalid(fa.index, MLX5DV_FLOW_ACTION_IBV_FLOW_ACTION,
                     absl::StrFormat("the action was made for %s, the matcher is %s",
                                     FlowTableTypeName(a->ft_type), FlowTableTypeName(ft)));
    }
    // mlx5_ib's parse_flow_flow_action: one of each kind.
    bool& seen = a->rewrite == drsim_flow_action::Rewrite::kDecap      ? decap
                 : a->rewrite == drsim_flow_action::Rewrite::kReformat ? reformat
                                                                       : modify;
    if (seen) {
      return invalid(fa.index, MLX5DV_FLOW_ACTION_IBV_FLOW_ACTION,
                     "a flow takes one decap, one packet reformat and one modify header action");
    }
    seen = true;
    objects.actions.push_back(a);
  }
  return objects;
}

// Checks what the kernel checks once it has the table (raw_fs_rule_add and mlx5 fs_core), after the
// objects: priority, table type, the destinations the direction needs; and drsim's own limits.
absl::Status CheckSteering(const mlx5dv_flow_matcher& m, const DvActionList& list) {
  const unsigned ft = m.spec.ft_type;
  if (m.spec.priority > kMaxVerbsPriority) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("the matcher's priority %d: the kernel's bypass namespace has priorities 0 to %d",
                        m.spec.priority, kMaxVerbsPriority));
  }
  if (ft != MLX5DV_FLOW_TABLE_TYPE_NIC_RX && ft != MLX5DV_FLOW_TABLE_TYPE_NIC_TX) {
    return absl::UnimplementedError(absl::StrFormat(
        "the matcher's table is %s: the software NIC has kernel flow tables in NIC_RX and NIC_TX only",
        FlowTableTypeName(ft)));
  }
  if (ft == MLX5DV_FLOW_TABLE_TYPE_NIC_RX && list.dest == Dest::kNone) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "a NIC_RX flow needs a destination: DEST_IBV_QP, DEST_DEVX, DROP or DEFAULT_MISS%s",
        list.counters != nullptr ? " (a counter counts only what is forwarded or dropped)" : ""));
  }
  if (ft == MLX5DV_FLOW_TABLE_TYPE_NIC_TX && list.dest == Dest::kDefaultMiss) {
    return absl::UnimplementedError(
        absl::StrFormat("%s: the next namespace is a NIC_RX destination only",
                        ActionAt(list.dest_index, MLX5DV_FLOW_ACTION_DEFAULT_MISS)));
  }
  if (ft == MLX5DV_FLOW_TABLE_TYPE_NIC_TX && list.tag.has_value()) {
    return absl::UnimplementedError(
        absl::StrFormat("%s: a flow tag reaches a receive completion; NIC_TX flows take none",
                        ActionAt(list.tag_index, MLX5DV_FLOW_ACTION_TAG)));
  }
  return absl::OkStatus();
}

ibv_flow* CreateFlow(mlx5dv_flow_matcher* m, mlx5dv_flow_match_parameters* match_value, size_t num_actions,
                     mlx5dv_flow_action_attr* actions_attr) {
  constexpr const char* kFn = "mlx5dv_create_flow";
  absl::StatusOr<DvActionList> list = ReadActionList(num_actions, actions_attr);
  if (!list.ok()) return NullWithError<ibv_flow>(kFn, list.status());
  // The ioctl's attributes: the value's size, then the number of flow actions.
  absl::StatusOr<KernelRule> rule = ReadMatchValue(m->spec, match_value);
  if (!rule.ok()) return NullWithError<ibv_flow>(kFn, rule.status());
  if (list->flow_actions.size() > kMaxKernelFlowActions) {
    return NullWithError<ibv_flow>(kFn, EINVAL,
                                   absl::StrFormat("%s: the kernel takes at most %d flow actions per flow",
                                                   ActionAt(list->flow_actions[kMaxKernelFlowActions].index,
                                                            MLX5DV_FLOW_ACTION_IBV_FLOW_ACTION),
                                                   kMaxKernelFlowActions));
  }
  absl::StatusOr<FlowObjects> objects = LookUpObjects(*m, *list);
  if (!objects.ok()) return NullWithError<ibv_flow>(kFn, objects.status());
  if (list->tag.has_value() && *list->tag > kMaxFlowTag) {
    return NullWithError<ibv_flow>(
        kFn, EINVAL,
        absl::StrFormat("%s: tag_value 0x%x is wider than the 24-bit flow tag",
                        ActionAt(list->tag_index, MLX5DV_FLOW_ACTION_TAG), *list->tag));
  }
  if (absl::Status s = CheckSteering(*m, *list); !s.ok()) return NullWithError<ibv_flow>(kFn, s);

  FlowContribution contribution;
  contribution.drop = list->dest == Dest::kDrop;
  contribution.default_miss = list->dest == Dest::kDefaultMiss;
  contribution.tag = list->tag;
  if (objects->qp != nullptr) {
    if (objects->qp->rss_tir.has_value()) {
      contribution.tir = *objects->qp->rss_tir;  // an RSS QP is a TIR
    } else {
      contribution.qp_num = objects->qp->qp.qp_num;
    }
  }
  if (objects->tir != nullptr) contribution.tir = objects->tir->id;
  if (objects->counters != nullptr) contribution.counter_id = objects->counters->id;  // offset 0: libmlx5's
  for (const drsim_flow_action* a : objects->actions) {
    const dr::Action* action = &a->dr_action;
    switch (a->rewrite) {
      case drsim_flow_action::Rewrite::kDecap:
        contribution.decap = action;
        break;
      case drsim_flow_action::Rewrite::kReformat:
        contribution.reformat = action;
        break;
      case drsim_flow_action::Rewrite::kModifyHeader:
        contribution.modify_header = action;
        break;
    }
  }
  absl::StatusOr<std::unique_ptr<VerbsSteering::Flow>> steering =
      SteeringOf(*m->ctx).Attach(m->vport, absl::MakeConstSpan(&*rule, 1), contribution);
  if (!steering.ok()) return NullWithError<ibv_flow>(kFn, steering.status());

  static std::atomic<uint32_t> next_handle{1};  // across NICs, which have locks of their own
  auto* f = new drsim_dv_flow{{}, m, objects->qp, objects->actions, steering->release()};
  f->flow.comp_mask = 0;
  f->flow.context = m->context;
  f->flow.handle = next_handle.fetch_add(1, std::memory_order_relaxed);
  Registry::Get().Add(&f->flow, Kind::kDvFlow, m->ctx);
  ++m->ctx->open_objects;
  ++m->flows;
  if (f->qp != nullptr) ++f->qp->flows;
  for (drsim_flow_action* a : f->actions) ++a->flows;
  return &f->flow;
}

}  // namespace

bool IsDvFlow(const ibv_flow* flow) { return IsSoftwareNicObject(flow, Kind::kDvFlow); }

int DestroyDvFlow(ibv_flow* flow) {
  constexpr const char* kFn = "ibv_destroy_flow";
  Context* ctx;
  if (!IsSoftwareNicObject(flow, Kind::kDvFlow, &ctx)) {
    return RecordFailure(kFn, EINVAL, "not a DV flow of a software NIC (mlx5dv_create_flow)");
  }
  Lock lock(ctx->mu);
  auto* f = reinterpret_cast<drsim_dv_flow*>(flow);
  // The flow leaves its entry even when rebuilding a shared one fails (an internal error).
  absl::Status s = ctx->verbs->Detach(std::unique_ptr<VerbsSteering::Flow>(f->steering));
  Registry::Get().Remove(flow);
  --ctx->open_objects;
  --f->matcher->flows;
  if (f->qp != nullptr) --f->qp->flows;
  for (drsim_flow_action* a : f->actions) --a->flows;
  delete f;
  return s.ok() ? 0 : RecordFailure(kFn, s);
}

int DestroyFlowAction(ibv_flow_action* action) {
  constexpr const char* kFn = "ibv_destroy_flow_action";
  Context* ctx;
  if (!IsSoftwareNicObject(action, Kind::kFlowAction, &ctx)) {
    return RecordFailure(kFn, EINVAL,
                         "not a flow action of a software NIC (mlx5dv_create_flow_action_packet_reformat or "
                         "_modify_header)");
  }
  Lock lock(ctx->mu);
  auto* a = reinterpret_cast<drsim_flow_action*>(action);
  if (a->flows > 0) {
    return RecordFailure(kFn, EBUSY,
                         absl::StrFormat("%d DV flow(s) use the action; destroy them first", a->flows));
  }
  Registry::Get().Remove(action);
  --ctx->open_objects;
  delete a;  // no rule holds its dr:: action any more
  return 0;
}

}  // namespace drsim::capi

using drsim::capi::Context;
using drsim::capi::FlowTableTypeName;
using drsim::capi::IsSoftwareNicObject;
using drsim::capi::Kind;
using drsim::capi::NullWithError;
using drsim::capi::RawEnum;
using drsim::capi::RecordFailure;
using drsim::capi::Registry;

extern "C" {

mlx5dv_flow_matcher* mlx5dv_create_flow_matcher(ibv_context* context,
                                                mlx5dv_flow_matcher_attr* matcher_attr) {
  drsim_function_context* f = drsim::capi::FunctionOf(context);
  if (f == nullptr) {
    auto real = drsim::capi::RealFor(__func__, DRSIM_REAL_FUNCTION(mlx5dv_create_flow_matcher, "MLX5_1.6"),
                                     context, "context");
    return real ? real(context, matcher_attr) : nullptr;
  }
  absl::StatusOr<drsim::capi::DvMatcherSpec> spec = drsim::capi::ReadMatcherAttr(matcher_attr);
  if (!spec.ok()) return NullWithError<mlx5dv_flow_matcher>(__func__, spec.status());
  Context& ctx = *f->owner;
  std::lock_guard<std::recursive_mutex> lock(ctx.mu);
  auto* m = new mlx5dv_flow_matcher{&ctx, context, f->vport, *std::move(spec)};
  Registry::Get().Add(m, Kind::kFlowMatcher, &ctx);
  ++ctx.open_objects;
  return m;
}

int mlx5dv_destroy_flow_matcher(mlx5dv_flow_matcher* matcher) {
  Context* ctx;
  if (!IsSoftwareNicObject(matcher, Kind::kFlowMatcher, &ctx)) {
    auto real = drsim::capi::RealFor(__func__, DRSIM_REAL_FUNCTION(mlx5dv_destroy_flow_matcher, "MLX5_1.6"),
                                     matcher, "matcher");
    return real ? real(matcher) : errno;
  }
  std::lock_guard<std::recursive_mutex> lock(ctx->mu);
  if (matcher->flows > 0) {
    return RecordFailure(
        __func__, EBUSY,
        absl::StrFormat("%d flow(s) use the matcher; destroy them first (ibv_destroy_flow)", matcher->flows));
  }
  Registry::Get().Remove(matcher);
  --ctx->open_objects;
  delete matcher;
  return 0;
}

ibv_flow* mlx5dv_create_flow(mlx5dv_flow_matcher* matcher, mlx5dv_flow_match_parameters* match_value,
                             size_t num_actions, mlx5dv_flow_action_attr actions_attr[]) {
  Context* ctx;
  if (!IsSoftwareNicObject(matcher, Kind::kFlowMatcher, &ctx)) {
    // A matcher of real hardware: none of the objects may be the software NIC's.
    for (size_t i = 0; actions_attr != nullptr && i < num_actions; ++i) {
      const unsigned type = RawEnum(actions_attr[i].type);
      if (type == MLX5DV_FLOW_ACTION_TAG || type == MLX5DV_FLOW_ACTION_DROP ||
          type == MLX5DV_FLOW_ACTION_DEFAULT_MISS) {
        continue;  // no object
      }
      const void* object;  // the union's other members are all pointers
      std::memcpy(&object, &actions_attr[i].qp, sizeof object);
      if (Registry::Get().Known(object)) {
        return NullWithError<ibv_flow>(
            __func__, EINVAL,
            absl::StrFormat("actions_attr[%d] belongs to a software NIC; the matcher to real hardware", i));
      }
    }
    auto real = drsim::capi::RealFor(__func__, DRSIM_REAL_FUNCTION(mlx5dv_create_flow, "MLX5_1.6"), matcher,
                                     "flow_matcher");
    return real ? real(matcher, match_value, num_actions, actions_attr) : nullptr;
  }
  std::lock_guard<std::recursive_mutex> lock(ctx->mu);
  return drsim::capi::CreateFlow(matcher, match_value, num_actions, actions_attr);
}

ibv_flow_action* mlx5dv_create_flow_action_packet_reformat(
    ibv_context* ctx, size_t data_sz, void* data, mlx5dv_flow_action_packet_reformat_type reformat_type,
    mlx5dv_flow_table_type ft_type) {
  const unsigned type = RawEnum(reformat_type), ft = RawEnum(ft_type);
  drsim_function_context* f = drsim::capi::FunctionOf(ctx);
  if (f == nullptr) {
    // Typed with the enums' underlying unsigned int (the same argument passing), so that forwarding does not
    // load an out-of-range value as a C++ enum.
    using Real = ibv_flow_action* (*)(ibv_context*, size_t, void*, unsigned, unsigned);
    auto real = reinterpret_cast<Real>(drsim::capi::RealFor(
        __func__, DRSIM_REAL_FUNCTION(mlx5dv_create_flow_action_packet_reformat, "MLX5_1.7"), ctx, "ctx"));
    return real ? real(ctx, data_sz, data, type, ft) : nullptr;
  }
  if ((data == nullptr) != (data_sz == 0)) {
    return NullWithError<ibv_flow_action>(__func__, EINVAL,
                                          absl::StrFormat("data %s with data_sz %d: give both or neither",
                                                          data == nullptr ? "NULL" : "given", data_sz));
  }
  // mlx5_ib's mlx5_ib_flow_action_packet_reformat_valid: each type in the one direction that has it.
  const bool valid = (ft == MLX5DV_FLOW_TABLE_TYPE_NIC_TX &&
                      (type == MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TO_L2_TUNNEL ||
                       type == MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TO_L3_TUNNEL)) ||
                     (ft == MLX5DV_FLOW_TABLE_TYPE_NIC_RX &&
                      (type == MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L3_TUNNEL_TO_L2 ||
                       type == MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TUNNEL_TO_L2));
  if (!valid) {
    return NullWithError<ibv_flow_action>(
        __func__, EOPNOTSUPP,
        absl::StrFormat(
            "reformat_type %d on %s: the device reformats L2_TO_L2_TUNNEL (1) and L2_TO_L3_TUNNEL "
            "(3) on NIC_TX, L2_TUNNEL_TO_L2 (0) and L3_TUNNEL_TO_L2 (2) on NIC_RX",
            type, FlowTableTypeName(ft)));
  }
  const bool decap = type == MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TUNNEL_TO_L2;
  if (!decap && data == nullptr) {
    return NullWithError<ibv_flow_action>(
        __func__, ENOENT,
        "no data: this reformat type needs the header bytes (the kernel's DATA_BUF attribute)");
  }
  Context& nic = *f->owner;
  std::lock_guard<std::recursive_mutex> lock(nic.mu);
  absl::StatusOr<const drsim::dr::Domain*> domain = drsim::capi::ActionDomain(*f, ft);
  if (!domain.ok()) return NullWithError<ibv_flow_action>(__func__, domain.status());
  // L2 decap takes no data; the kernel ignores what it is given.
  const absl::Span<const uint8_t> bytes =
      decap ? absl::Span<const uint8_t>() : absl::MakeConstSpan(static_cast<const uint8_t*>(data), data_sz);
  return drsim::capi::NewFlowAction(
      __func__, ctx, *f, ft,
      decap ? drsim_flow_action::Rewrite::kDecap : drsim_flow_action::Rewrite::kReformat,
      drsim::dr::Action::PacketReformat(**domain, MLX5DV_DR_ACTION_FLAGS_ROOT_LEVEL,
                                        static_cast<mlx5dv_flow_action_packet_reformat_type>(type), bytes));
}

ibv_flow_action* mlx5dv_create_flow_action_modify_header(ibv_context* ctx, size_t actions_sz,
                                                         uint64_t actions[], mlx5dv_flow_table_type ft_type) {
  const unsigned ft = RawEnum(ft_type);
  drsim_function_context* f = drsim::capi::FunctionOf(ctx);
  if (f == nullptr) {
    using Real = ibv_flow_action* (*)(ibv_context*, size_t, uint64_t*, unsigned);
    auto real = reinterpret_cast<Real>(drsim::capi::RealFor(
        __func__, DRSIM_REAL_FUNCTION(mlx5dv_create_flow_action_modify_header, "MLX5_1.7"), ctx, "ctx"));
    return real ? real(ctx, actions_sz, actions, ft) : nullptr;
  }
  if (actions == nullptr) return NullWithError<ibv_flow_action>(__func__, EINVAL, "actions is NULL");
  if (actions_sz < sizeof(uint64_t) || actions_sz % sizeof(uint64_t) != 0) {
    return NullWithError<ibv_flow_action>(
        __func__, EINVAL,
        absl::StrFormat("actions_sz %d: modify header actions are 8-byte PRM words, at least one",
                        actions_sz));
  }
  if (ft > MLX5DV_FLOW_TABLE_TYPE_RDMA_TX) {
    return NullWithError<ibv_flow_action>(
        __func__, EINVAL,
        absl::StrFormat("ft_type %d: NIC_RX (0), NIC_TX (1), FDB (2), RDMA_RX (3) or RDMA_TX (4)", ft));
  }
  Context& nic = *f->owner;
  std::lock_guard<std::recursive_mutex> lock(nic.mu);
  absl::StatusOr<const drsim::dr::Domain*> domain = drsim::capi::ActionDomain(*f, ft);
  if (!domain.ok()) return NullWithError<ibv_flow_action>(__func__, domain.status());
  return drsim::capi::NewFlowAction(
      __func__, ctx, *f, ft, drsim_flow_action::Rewrite::kModifyHeader,
      drsim::dr::Action::ModifyHeader(**domain, MLX5DV_DR_ACTION_FLAGS_ROOT_LEVEL,
                                      absl::MakeConstSpan(actions, actions_sz / sizeof(uint64_t))));
}

}  // extern "C"
