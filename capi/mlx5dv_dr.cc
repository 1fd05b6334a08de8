// rdma-core's mlx5dv_dr_* functions (<infiniband/mlx5dv.h>, rdma-core 44) over the dr:: C++ API for the
// software NIC's objects, and handed to libmlx5 for everything else (real hardware).
//
// Conventions, as rdma-core's: creators return NULL and set errno; destroy, modify, sync and set_layout
// return 0 or a positive errno and set errno. drsim_last_error() names the culprit of a failure.
#include <endian.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_format.h"
#include "capi/errors.h"
#include "capi/objects.h"
#include "capi/raw_enum.h"
#include "capi/real_mlx5.h"
#include "dr/dump.h"

namespace drsim::capi {
namespace {

using Lock = std::lock_guard<std::recursive_mutex>;

// For an object that is not the software NIC's of the kind a call takes: libmlx5, or nullptr after recording
// why not (EINVAL for NULL and for a software-NIC object of another kind, which libmlx5 must never see).
const RealMlx5* Forward(const char* fn, const void* p, const char* what) {
  if (p == nullptr) {
    RecordFailure(fn, EINVAL, absl::StrFormat("%s is NULL", what));
    return nullptr;
  }
  if (Registry::Get().Known(p)) {
    RecordFailure(fn, EINVAL, absl::StrFormat("%s is a software-NIC object of another kind", what));
    return nullptr;
  }
  const RealMlx5* real = Real();
  if (real == nullptr) {
    RecordFailure(
        fn, EOPNOTSUPP,
        absl::StrFormat("%s is not an object of a software NIC (drsim_open), and libmlx5.so.1 cannot be "
                        "loaded to hand it to real hardware",
                        what));
  }
  return real;
}

mlx5dv_dr_action* Register(absl::StatusOr<dr::Action> a, const char* fn, Context* ctx) {
  if (!a.ok()) return NullWithError<mlx5dv_dr_action>(fn, a.status());
  auto* action = new mlx5dv_dr_action;
  action->action = *std::move(a);
  action->ctx = ctx;
  Registry::Get().Add(action, Kind::kAction, ctx);
  return action;
}

// The dr::Action behind a C action given to a call on `ctx`'s objects, or nullptr (recorded) when it is
// not a software-NIC action or belongs to another NIC.
const dr::Action* ActionFor(const char* fn, mlx5dv_dr_action* a, Context* ctx, const std::string& what) {
  Context* actx;
  if (!IsSoftwareNicObject(a, Kind::kAction, &actx)) {
    RecordFailure(
        fn, EINVAL,
        absl::StrFormat("%s is %s", what, a == nullptr ? "NULL" : "not an action of a software NIC"));
    return nullptr;
  }
  if (actx != nullptr && actx != ctx) {
    RecordFailure(fn, EINVAL, absl::StrFormat("%s belongs to another software NIC", what));
    return nullptr;
  }
  return &a->action;
}

// The action to give libmlx5 for `a` in a rule of real hardware: `a` itself, or, for a software-NIC action
// that needs no device, its rdma-core twin (made on first use). nullptr (recorded) otherwise.
mlx5dv_dr_action* RealAction(const char* fn, const RealMlx5& real, mlx5dv_dr_action* a, size_t index) {
  Context* ctx;
  if (!IsSoftwareNicObject(a, Kind::kAction, &ctx)) return a;
  using Free = mlx5dv_dr_action::DeviceFree;
  if (a->real_twin == nullptr) {
    switch (a->device_free) {
      case Free::kDrop:
        a->real_twin = real.mlx5dv_dr_action_create_drop();
        break;
      case Free::kDefaultMiss:
        a->real_twin = real.mlx5dv_dr_action_create_default_miss();
        break;
      case Free::kTag:
        a->real_twin = real.mlx5dv_dr_action_create_tag(a->tag);
        break;
      case Free::kPopVlan:
        a->real_twin = real.mlx5dv_dr_action_create_pop_vlan();
        break;
      case Free::kNo:
        RecordFailure(
            fn, EINVAL,
            absl::StrFormat("actions[%d] belongs to a software NIC; the matcher to real hardware", index));
        return nullptr;
    }
    if (a->real_twin == nullptr) {
      RecordFailure(fn, errno,
                    absl::StrFormat("libmlx5 could not make actions[%d] for real hardware", index));
      return nullptr;
    }
  }
  return a->real_twin;
}

mlx5dv_dr_action* DeviceFreeAction(absl::StatusOr<dr::Action> a, const char* fn,
                                   mlx5dv_dr_action::DeviceFree kind, uint32_t tag = 0) {
  mlx5dv_dr_action* action = Register(std::move(a), fn, nullptr);
  if (action != nullptr) {
    action->device_free = kind;
    action->tag = tag;
  }
  return action;
}

// rdma-core's dump convention: 0, or a negative errno (-EINVAL for a NULL argument, the write's errno
// when writing fails).
int DumpResult(const char* fn, const absl::Status& s) {
  if (s.ok()) return 0;
  return -RecordFailure(fn, s);
}

}  // namespace
}  // namespace drsim::capi

using drsim::capi::Context;
using drsim::capi::DevxKind;
using drsim::capi::IsSoftwareNicObject;
using drsim::capi::Kind;
using drsim::capi::Lock;
using drsim::capi::NullWithError;
using drsim::capi::RealMlx5;
using drsim::capi::RecordFailure;
using drsim::capi::Registry;
namespace dr = drsim::dr;

extern "C" {

// ---- Domains -------------------------------------------------------------------------------------

mlx5dv_dr_domain* mlx5dv_dr_domain_create(ibv_context* ibctx, mlx5dv_dr_domain_type type) {
  drsim_function_context* f = drsim::capi::FunctionOf(ibctx);
  if (f == nullptr) {
    const RealMlx5* real = drsim::capi::Forward(__func__, ibctx, "ctx");
    return real ? real->mlx5dv_dr_domain_create(ibctx, drsim::capi::RawEnum(type)) : nullptr;
  }
  const unsigned raw = drsim::capi::RawEnum(type);
  if (raw > MLX5DV_DR_DOMAIN_TYPE_FDB) {
    return NullWithError<mlx5dv_dr_domain>(
        __func__, EINVAL, absl::StrFormat("domain type %d: 0 NIC_RX, 1 NIC_TX or 2 FDB", raw));
  }
  Context& ctx = *f->owner;
  Lock lock(ctx.mu);
  absl::StatusOr<dr::Domain> d = dr::Domain::Create(ctx.function(f->vport), type);
  if (!d.ok()) return NullWithError<mlx5dv_dr_domain>(__func__, d.status());
  auto* domain = new mlx5dv_dr_domain{*std::move(d), &ctx, f->vport};
  Registry::Get().Add(domain, Kind::kDomain, &ctx);
  ++ctx.open_objects;
  return domain;
}

int mlx5dv_dr_domain_destroy(mlx5dv_dr_domain* domain) {
  Context* ctx;
  if (!IsSoftwareNicObject(domain, Kind::kDomain, &ctx)) {
    const RealMlx5* real = drsim::capi::Forward(__func__, domain, "domain");
    return real ? real->mlx5dv_dr_domain_destroy(domain) : errno;
  }
  Lock lock(ctx->mu);
  if (absl::Status s = domain->domain.Destroy(); !s.ok()) return RecordFailure(__func__, s);
  Registry::Get().Remove(domain);
  --ctx->open_objects;
  delete domain;
  return 0;
}

int mlx5dv_dr_domain_sync(mlx5dv_dr_domain* domain, uint32_t flags) {
  Context* ctx;
  if (!IsSoftwareNicObject(domain, Kind::kDomain, &ctx)) {
    const RealMlx5* real = drsim::capi::Forward(__func__, domain, "domain");
    return real ? real->mlx5dv_dr_domain_sync(domain, flags) : errno;
  }
  Lock lock(ctx->mu);
  absl::Status s = domain->domain.Sync(flags);
  return s.ok() ? 0 : RecordFailure(__func__, s);
}

void mlx5dv_dr_domain_set_reclaim_device_memory(mlx5dv_dr_domain* domain, bool enable) {
  // The software NIC has no device memory to give back: nothing to do for its domains.
  if (IsSoftwareNicObject(domain, Kind::kDomain)) return;
  if (const RealMlx5* real = drsim::capi::Forward(__func__, domain, "domain")) {
    real->mlx5dv_dr_domain_set_reclaim_device_memory(domain, enable);
  }
}

void mlx5dv_dr_domain_allow_duplicate_rules(mlx5dv_dr_domain* domain, bool allow) {
  Context* ctx;
  if (!IsSoftwareNicObject(domain, Kind::kDomain, &ctx)) {
    if (const RealMlx5* real = drsim::capi::Forward(__func__, domain, "domain")) {
      real->mlx5dv_dr_domain_allow_duplicate_rules(domain, allow);
    }
    return;
  }
  Lock lock(ctx->mu);
  if (absl::Status s = domain->domain.AllowDuplicateRules(allow); !s.ok()) RecordFailure(__func__, s);
}

// ---- Tables and matchers -------------------------------------------------------------------------

mlx5dv_dr_table* mlx5dv_dr_table_create(mlx5dv_dr_domain* domain, uint32_t level) {
  Context* ctx;
  if (!IsSoftwareNicObject(domain, Kind::kDomain, &ctx)) {
    const RealMlx5* real = drsim::capi::Forward(__func__, domain, "domain");
    return real ? real->mlx5dv_dr_table_create(domain, level) : nullptr;
  }
  Lock lock(ctx->mu);
  absl::StatusOr<dr::Table> t = dr::Table::Create(domain->domain, level);
  if (!t.ok()) return NullWithError<mlx5dv_dr_table>(__func__, t.status());
  auto* table = new mlx5dv_dr_table{*std::move(t), domain};
  Registry::Get().Add(table, Kind::kTable, ctx);
  return table;
}

int mlx5dv_dr_table_destroy(mlx5dv_dr_table* table) {
  Context* ctx;
  if (!IsSoftwareNicObject(table, Kind::kTable, &ctx)) {
    const RealMlx5* real = drsim::capi::Forward(__func__, table, "table");
    return real ? real->mlx5dv_dr_table_destroy(table) : errno;
  }
  Lock lock(ctx->mu);
  if (absl::Status s = table->table.Destroy(); !s.ok()) return RecordFailure(__func__, s);
  Registry::Get().Remove(table);
  delete table;
  return 0;
}

mlx5dv_dr_matcher* mlx5dv_dr_matcher_create(mlx5dv_dr_table* table, uint16_t priority,
                                            uint8_t match_criteria_enable,
                                            mlx5dv_flow_match_parameters* mask) {
  Context* ctx;
  if (!IsSoftwareNicObject(table, Kind::kTable, &ctx)) {
    const RealMlx5* real = drsim::capi::Forward(__func__, table, "table");
    return real ? real->mlx5dv_dr_matcher_create(table, priority, match_criteria_enable, mask) : nullptr;
  }
  Lock lock(ctx->mu);
  absl::StatusOr<dr::Matcher> m = dr::Matcher::Create(table->table, priority, match_criteria_enable, mask);
  if (!m.ok()) return NullWithError<mlx5dv_dr_matcher>(__func__, m.status());
  auto* matcher = new mlx5dv_dr_matcher{*std::move(m), table};
  Registry::Get().Add(matcher, Kind::kMatcher, ctx);
  return matcher;
}

int mlx5dv_dr_matcher_destroy(mlx5dv_dr_matcher* matcher) {
  Context* ctx;
  if (!IsSoftwareNicObject(matcher, Kind::kMatcher, &ctx)) {
    const RealMlx5* real = drsim::capi::Forward(__func__, matcher, "matcher");
    return real ? real->mlx5dv_dr_matcher_destroy(matcher) : errno;
  }
  Lock lock(ctx->mu);
  if (absl::Status s = matcher->matcher.Destroy(); !s.ok()) return RecordFailure(__func__, s);
  Registry::Get().Remove(matcher);
  delete matcher;
  return 0;
}

int mlx5dv_dr_matcher_set_layout(mlx5dv_dr_matcher* matcher, mlx5dv_dr_matcher_layout* layout) {
  Context* ctx;
  if (!IsSoftwareNicObject(matcher, Kind::kMatcher, &ctx)) {
    const RealMlx5* real = drsim::capi::Forward(__func__, matcher, "matcher");
    return real ? real->mlx5dv_dr_matcher_set_layout(matcher, layout) : errno;
  }
  if (layout == nullptr) return RecordFailure(__func__, EINVAL, "layout is NULL");
  Lock lock(ctx->mu);
  absl::Status s = matcher->matcher.SetLayout(*layout);
  return s.ok() ? 0 : RecordFailure(__func__, s);
}

// ---- Rules ---------------------------------------------------------------------------------------

mlx5dv_dr_rule* mlx5dv_dr_rule_create(mlx5dv_dr_matcher* matcher, mlx5dv_flow_match_parameters* value,
                                      size_t num_actions, mlx5dv_dr_action* actions[]) {
  if (num_actions > 0 && actions == nullptr) {
    return NullWithError<mlx5dv_dr_rule>(__func__, EINVAL,
                                         absl::StrFormat("%d actions at NULL", num_actions));
  }
  Context* ctx;
  if (!IsSoftwareNicObject(matcher, Kind::kMatcher, &ctx)) {
    const RealMlx5* real = drsim::capi::Forward(__func__, matcher, "matcher");
    if (real == nullptr) return nullptr;
    std::vector<mlx5dv_dr_action*> real_actions(num_actions);
    for (size_t i = 0; i < num_actions; ++i) {
      real_actions[i] = drsim::capi::RealAction(__func__, *real, actions[i], i);
      if (real_actions[i] == nullptr) return nullptr;
    }
    return real->mlx5dv_dr_rule_create(matcher, value, num_actions, real_actions.data());
  }
  if (value == nullptr) return NullWithError<mlx5dv_dr_rule>(__func__, EINVAL, "value is NULL");
  Lock lock(ctx->mu);
  std::vector<const dr::Action*> list(num_actions);
  for (size_t i = 0; i < num_actions; ++i) {
    list[i] = drsim::capi::ActionFor(__func__, actions[i], ctx, absl::StrFormat("actions[%d]", i));
    if (list[i] == nullptr) return nullptr;
  }
  absl::StatusOr<dr::Rule> r = dr::Rule::Create(matcher->matcher, value, list);
  if (!r.ok()) return NullWithError<mlx5dv_dr_rule>(__func__, r.status());
  auto* rule = new mlx5dv_dr_rule{*std::move(r), matcher};
  Registry::Get().Add(rule, Kind::kRule, ctx);
  return rule;
}

int mlx5dv_dr_rule_destroy(mlx5dv_dr_rule* rule) {
  Context* ctx;
  if (!IsSoftwareNicObject(rule, Kind::kRule, &ctx)) {
    const RealMlx5* real = drsim::capi::Forward(__func__, rule, "rule");
    return real ? real->mlx5dv_dr_rule_destroy(rule) : errno;
  }
  Lock lock(ctx->mu);
  if (absl::Status s = rule->rule.Destroy(); !s.ok()) return RecordFailure(__func__, s);
  Registry::Get().Remove(rule);
  delete rule;
  return 0;
}

// ---- Actions -------------------------------------------------------------------------------------

mlx5dv_dr_action* mlx5dv_dr_action_create_drop(void) {
  return drsim::capi::DeviceFreeAction(dr::Action::Drop(), __func__, mlx5dv_dr_action::DeviceFree::kDrop);
}

mlx5dv_dr_action* mlx5dv_dr_action_create_default_miss(void) {
  return drsim::capi::DeviceFreeAction(dr::Action::DefaultMiss(), __func__,
                                       mlx5dv_dr_action::DeviceFree::kDefaultMiss);
}

mlx5dv_dr_action* mlx5dv_dr_action_create_tag(uint32_t tag_value) {
  return drsim::capi::DeviceFreeAction(dr::Action::Tag(tag_value), __func__,
                                       mlx5dv_dr_action::DeviceFree::kTag, tag_value);
}

mlx5dv_dr_action* mlx5dv_dr_action_create_pop_vlan(void) {
  return drsim::capi::DeviceFreeAction(dr::Action::PopVlan(), __func__,
                                       mlx5dv_dr_action::DeviceFree::kPopVlan);
}

mlx5dv_dr_action* mlx5dv_dr_action_create_dest_ibv_qp(ibv_qp* ibqp) {
  Context* ctx;
  if (!IsSoftwareNicObject(ibqp, Kind::kQp, &ctx)) {
    const RealMlx5* real = drsim::capi::Forward(__func__, ibqp, "qp");
    return real ? real->mlx5dv_dr_action_create_dest_ibv_qp(ibqp) : nullptr;
  }
  if (ibqp->qp_type != IBV_QPT_RAW_PACKET) {
    return NullWithError<mlx5dv_dr_action>(__func__, EINVAL, "the QP is not of type IBV_QPT_RAW_PACKET");
  }
  Lock lock(ctx->mu);
  const auto* q = reinterpret_cast<const drsim_qp*>(ibqp);
  if (q->rss_tir.has_value()) {
    return drsim::capi::Register(dr::Action::DestTir(ctx->function(q->vport), *q->rss_tir), __func__, ctx);
  }
  return drsim::capi::Register(dr::Action::DestQp(ctx->function(q->vport), ibqp->qp_num), __func__, ctx);
}

mlx5dv_dr_action* mlx5dv_dr_action_create_dest_devx_tir(mlx5dv_devx_obj* devx_obj) {
  Context* ctx;
  if (!IsSoftwareNicObject(devx_obj, Kind::kDevx, &ctx)) {
    const RealMlx5* real = drsim::capi::Forward(__func__, devx_obj, "devx_obj");
    return real ? real->mlx5dv_dr_action_create_dest_devx_tir(devx_obj) : nullptr;
  }
  if (devx_obj->kind != DevxKind::kTir) {
    return NullWithError<mlx5dv_dr_action>(__func__, EINVAL, "devx_obj is not a TIR (drsim_tir_create)");
  }
  Lock lock(ctx->mu);
  return drsim::capi::Register(dr::Action::DestTir(ctx->function(devx_obj->vport), devx_obj->id), __func__,
                               ctx);
}

mlx5dv_dr_action* mlx5dv_dr_action_create_dest_table(mlx5dv_dr_table* table) {
  Context* ctx;
  if (!IsSoftwareNicObject(table, Kind::kTable, &ctx)) {
    const RealMlx5* real = drsim::capi::Forward(__func__, table, "table");
    return real ? real->mlx5dv_dr_action_create_dest_table(table) : nullptr;
  }
  Lock lock(ctx->mu);
  return drsim::capi::Register(dr::Action::DestTable(table->table), __func__, ctx);
}

mlx5dv_dr_action* mlx5dv_dr_action_create_dest_root_table(mlx5dv_dr_table* table, uint16_t priority) {
  Context* ctx;
  if (!IsSoftwareNicObject(table, Kind::kTable, &ctx)) {
    const RealMlx5* real = drsim::capi::Forward(__func__, table, "table");
    return real ? real->mlx5dv_dr_action_create_dest_root_table(table, priority) : nullptr;
  }
  Lock lock(ctx->mu);
  return drsim::capi::Register(dr::Action::DestRootTable(table->table, priority), __func__, ctx);
}

mlx5dv_dr_action* mlx5dv_dr_action_create_dest_vport(mlx5dv_dr_domain* domain, uint32_t vport) {
  Context* ctx;
  if (!IsSoftwareNicObject(domain, Kind::kDomain, &ctx)) {
    const RealMlx5* real = drsim::capi::Forward(__func__, domain, "domain");
    return real ? real->mlx5dv_dr_action_create_dest_vport(domain, vport) : nullptr;
  }
  Lock lock(ctx->mu);
  return drsim::capi::Register(dr::Action::DestVport(domain->domain, vport), __func__, ctx);
}

mlx5dv_dr_action* mlx5dv_dr_action_create_dest_ib_port(mlx5dv_dr_domain* domain, uint32_t ib_port) {
  Context* ctx;
  if (!IsSoftwareNicObject(domain, Kind::kDomain, &ctx)) {
    const RealMlx5* real = drsim::capi::Forward(__func__, domain, "domain");
    return real ? real->mlx5dv_dr_action_create_dest_ib_port(domain, ib_port) : nullptr;
  }
  Lock lock(ctx->mu);
  return drsim::capi::Register(dr::Action::DestIbPort(domain->domain, ib_port), __func__, ctx);
}

mlx5dv_dr_action* mlx5dv_dr_action_create_dest_array(mlx5dv_dr_domain* domain, size_t num_dest,
                                                     mlx5dv_dr_action_dest_attr* dests[]) {
  Context* ctx;
  if (!IsSoftwareNicObject(domain, Kind::kDomain, &ctx)) {
    const RealMlx5* real = drsim::capi::Forward(__func__, domain, "domain");
    return real ? real->mlx5dv_dr_action_create_dest_array(domain, num_dest, dests) : nullptr;
  }
  if (num_dest > 0 && dests == nullptr) {
    return NullWithError<mlx5dv_dr_action>(__func__, EINVAL,
                                           absl::StrFormat("%d destinations at NULL", num_dest));
  }
  Lock lock(ctx->mu);
  std::vector<dr::Action::ArrayDestination> list(num_dest);
  for (size_t i = 0; i < num_dest; ++i) {
    const mlx5dv_dr_action_dest_attr* d = dests[i];
    const std::string what = absl::StrFormat("dests[%d]", i);
    if (d == nullptr) return NullWithError<mlx5dv_dr_action>(__func__, EINVAL, what + " is NULL");
    const unsigned type = drsim::capi::RawEnum(d->type);
    if (type == MLX5DV_DR_ACTION_DEST) {
      list[i].dest = drsim::capi::ActionFor(__func__, d->dest, ctx, what + ".dest");
      if (list[i].dest == nullptr) return nullptr;
    } else if (type == MLX5DV_DR_ACTION_DEST_REFORMAT) {
      if (d->dest_reformat == nullptr)
        return NullWithError<mlx5dv_dr_action>(__func__, EINVAL, what + ".dest_reformat is NULL");
      list[i].dest =
          drsim::capi::ActionFor(__func__, d->dest_reformat->dest, ctx, what + ".dest_reformat->dest");
      if (list[i].dest == nullptr) return nullptr;
      list[i].reformat = drsim::capi::ActionFor(__func__, d->dest_reformat->reformat, ctx,
                                                what + ".dest_reformat->reformat");
      if (list[i].reformat == nullptr) return nullptr;
    } else {
      return NullWithError<mlx5dv_dr_action>(
          __func__, EINVAL,
          absl::StrFormat("%s.type %d: MLX5DV_DR_ACTION_DEST (0) or MLX5DV_DR_ACTION_DEST_REFORMAT (1)", what,
                          type));
    }
  }
  return drsim::capi::Register(dr::Action::DestArray(domain->domain, list), __func__, ctx);
}

mlx5dv_dr_action* mlx5dv_dr_action_create_flow_counter(mlx5dv_devx_obj* devx_obj, uint32_t offset) {
  Context* ctx;
  if (!IsSoftwareNicObject(devx_obj, Kind::kDevx, &ctx)) {
    const RealMlx5* real = drsim::capi::Forward(__func__, devx_obj, "devx_obj");
    return real ? real->mlx5dv_dr_action_create_flow_counter(devx_obj, offset) : nullptr;
  }
  if (devx_obj->kind != DevxKind::kFlowCounter) {
    return NullWithError<mlx5dv_dr_action>(__func__, EINVAL,
                                           "devx_obj is not a flow counter bulk (drsim_counter_alloc)");
  }
  // rdma-core adds the offset to the bulk's base unchecked; past the bulk, hardware would count into
  // counters the bulk does not own. drsim refuses it instead.
  if (offset >= devx_obj->count) {
    return NullWithError<mlx5dv_dr_action>(
        __func__, EINVAL,
        absl::StrFormat("offset %d: the counter bulk holds %d counters", offset, devx_obj->count));
  }
  Lock lock(ctx->mu);
  return drsim::capi::Register(dr::Action::FlowCounter(ctx->function(devx_obj->vport), devx_obj->id, offset),
                               __func__, ctx);
}

mlx5dv_dr_action* mlx5dv_dr_action_create_aso(mlx5dv_dr_domain* domain, mlx5dv_devx_obj* devx_obj,
                                              uint32_t offset, uint32_t flags, uint8_t return_reg_c) {
  Context* ctx;
  if (!IsSoftwareNicObject(domain, Kind::kDomain, &ctx)) {
    const RealMlx5* real = drsim::capi::Forward(__func__, domain, "domain");
    return real ? real->mlx5dv_dr_action_create_aso(domain, devx_obj, offset, flags, return_reg_c) : nullptr;
  }
  Context* octx;
  if (!IsSoftwareNicObject(devx_obj, Kind::kDevx, &octx) || octx != ctx ||
      !drsim::capi::AsoKindOf(devx_obj->kind).has_value()) {
    return NullWithError<mlx5dv_dr_action>(__func__, EINVAL,
                                           "devx_obj is not an ASO object of this software NIC");
  }
  Lock lock(ctx->mu);
  return drsim::capi::Register(dr::Action::Aso(domain->domain, devx_obj->id, offset, flags, return_reg_c),
                               __func__, ctx);
}

int mlx5dv_dr_action_modify_aso(mlx5dv_dr_action* action, uint32_t offset, uint32_t flags,
                                uint8_t return_reg_c) {
  Context* ctx;
  if (!IsSoftwareNicObject(action, Kind::kAction, &ctx)) {
    const RealMlx5* real = drsim::capi::Forward(__func__, action, "action");
    return real ? real->mlx5dv_dr_action_modify_aso(action, offset, flags, return_reg_c) : errno;
  }
  if (ctx == nullptr) return RecordFailure(__func__, EINVAL, "the action is not an aso action");
  Lock lock(ctx->mu);
  absl::Status s = action->action.ModifyAso(offset, flags, return_reg_c);
  return s.ok() ? 0 : RecordFailure(__func__, s);
}

mlx5dv_dr_action* mlx5dv_dr_action_create_packet_reformat(
    mlx5dv_dr_domain* domain, uint32_t flags, mlx5dv_flow_action_packet_reformat_type reformat_type,
    size_t data_sz, void* data) {
  Context* ctx;
  if (!IsSoftwareNicObject(domain, Kind::kDomain, &ctx)) {
    const RealMlx5* real = drsim::capi::Forward(__func__, domain, "domain");
    return real ? real->mlx5dv_dr_action_create_packet_reformat(domain, flags, reformat_type, data_sz, data)
                : nullptr;
  }
  const unsigned type = drsim::capi::RawEnum(reformat_type);
  if (type > MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TO_L3_TUNNEL) {
    return NullWithError<mlx5dv_dr_action>(
        __func__, EINVAL,
        absl::StrFormat("reformat_type %d: 0 to 3 (L2_TUNNEL_TO_L2 .. L2_TO_L3_TUNNEL)", type));
  }
  if ((data == nullptr) != (data_sz == 0)) {
    return NullWithError<mlx5dv_dr_action>(
        __func__, EINVAL, absl::StrFormat("data is %s but data_sz is %d", data ? "set" : "NULL", data_sz));
  }
  Lock lock(ctx->mu);
  const auto* bytes = static_cast<const uint8_t*>(data);
  return drsim::capi::Register(
      dr::Action::PacketReformat(domain->domain, flags, reformat_type, absl::MakeConstSpan(bytes, data_sz)),
      __func__, ctx);
}

mlx5dv_dr_action* mlx5dv_dr_action_create_modify_header(mlx5dv_dr_domain* domain, uint32_t flags,
                                                        size_t actions_sz, __be64 actions[]) {
  Context* ctx;
  if (!IsSoftwareNicObject(domain, Kind::kDomain, &ctx)) {
    const RealMlx5* real = drsim::capi::Forward(__func__, domain, "domain");
    return real ? real->mlx5dv_dr_action_create_modify_header(domain, flags, actions_sz, actions) : nullptr;
  }
  if (actions_sz % 8 != 0) {
    return NullWithError<mlx5dv_dr_action>(
        __func__, EINVAL,
        absl::StrFormat("actions_sz %d is not a multiple of 8 (one action is 8 bytes)", actions_sz));
  }
  if (actions_sz > 0 && actions == nullptr) {
    return NullWithError<mlx5dv_dr_action>(__func__, EINVAL,
                                           absl::StrFormat("%d bytes of actions at NULL", actions_sz));
  }
  Lock lock(ctx->mu);
  const auto* words = reinterpret_cast<const uint64_t*>(actions);
  return drsim::capi::Register(
      dr::Action::ModifyHeader(domain->domain, flags, absl::MakeConstSpan(words, actions_sz / 8)), __func__,
      ctx);
}

mlx5dv_dr_action* mlx5dv_dr_action_create_flow_meter(mlx5dv_dr_flow_meter_attr* attr) {
  if (attr == nullptr) return NullWithError<mlx5dv_dr_action>(__func__, EINVAL, "attr is NULL");
  Context* ctx;
  if (!IsSoftwareNicObject(attr->next_table, Kind::kTable, &ctx)) {
    const RealMlx5* real = drsim::capi::Forward(__func__, attr->next_table, "attr->next_table");
    return real ? real->mlx5dv_dr_action_create_flow_meter(attr) : nullptr;
  }
  if ((attr->flow_meter_parameter == nullptr) != (attr->flow_meter_parameter_sz == 0)) {
    return NullWithError<mlx5dv_dr_action>(__func__, EINVAL,
                                           "flow_meter_parameter and flow_meter_parameter_sz disagree");
  }
  Lock lock(ctx->mu);
  const auto* params = static_cast<const uint8_t*>(attr->flow_meter_parameter);
  return drsim::capi::Register(
      dr::Action::FlowMeter(attr->next_table->table, attr->active != 0, attr->reg_c_index,
                            absl::MakeConstSpan(params, attr->flow_meter_parameter_sz)),
      __func__, ctx);
}

int mlx5dv_dr_action_modify_flow_meter(mlx5dv_dr_action* action, mlx5dv_dr_flow_meter_attr* attr,
                                       __be64 modify_field_select) {
  Context* ctx;
  if (!IsSoftwareNicObject(action, Kind::kAction, &ctx)) {
    const RealMlx5* real = drsim::capi::Forward(__func__, action, "action");
    return real ? real->mlx5dv_dr_action_modify_flow_meter(action, attr, modify_field_select) : errno;
  }
  if (attr == nullptr) return RecordFailure(__func__, EINVAL, "attr is NULL");
  if ((attr->flow_meter_parameter == nullptr) != (attr->flow_meter_parameter_sz == 0)) {
    return RecordFailure(__func__, EINVAL, "flow_meter_parameter and flow_meter_parameter_sz disagree");
  }
  if (ctx == nullptr) return RecordFailure(__func__, EINVAL, "the action is not a flow meter");
  Lock lock(ctx->mu);
  const auto* params = static_cast<const uint8_t*>(attr->flow_meter_parameter);
  absl::Status s = action->action.ModifyFlowMeter(attr->active != 0,
                                                  absl::MakeConstSpan(params, attr->flow_meter_parameter_sz),
                                                  be64toh(modify_field_select));
  return s.ok() ? 0 : RecordFailure(__func__, s);
}

mlx5dv_dr_action* mlx5dv_dr_action_create_flow_sampler(mlx5dv_dr_flow_sampler_attr* attr) {
  if (attr == nullptr) return NullWithError<mlx5dv_dr_action>(__func__, EINVAL, "attr is NULL");
  Context* ctx;
  if (!IsSoftwareNicObject(attr->default_next_table, Kind::kTable, &ctx)) {
    const RealMlx5* real =
        drsim::capi::Forward(__func__, attr->default_next_table, "attr->default_next_table");
    return real ? real->mlx5dv_dr_action_create_flow_sampler(attr) : nullptr;
  }
  if (attr->num_sample_actions > 0 && attr->sample_actions == nullptr) {
    return NullWithError<mlx5dv_dr_action>(
        __func__, EINVAL, absl::StrFormat("%d sample actions at NULL", attr->num_sample_actions));
  }
  Lock lock(ctx->mu);
  std::vector<const dr::Action*> sample(attr->num_sample_actions);
  for (uint32_t i = 0; i < attr->num_sample_actions; ++i) {
    sample[i] = drsim::capi::ActionFor(__func__, attr->sample_actions[i], ctx,
                                       absl::StrFormat("attr->sample_actions[%d]", i));
    if (sample[i] == nullptr) return nullptr;
  }
  // attr->action (a reg_c_0 set for ConnectX-5 FDB samplers) is not needed by the modelled ConnectX-6 Dx.
  return drsim::capi::Register(
      dr::Action::FlowSampler(attr->sample_ratio, attr->default_next_table->table, sample), __func__, ctx);
}

mlx5dv_dr_action* mlx5dv_dr_action_create_push_vlan(mlx5dv_dr_domain* domain, __be32 vlan_hdr) {
  Context* ctx;
  if (!IsSoftwareNicObject(domain, Kind::kDomain, &ctx)) {
    const RealMlx5* real = drsim::capi::Forward(__func__, domain, "domain");
    return real ? real->mlx5dv_dr_action_create_push_vlan(domain, vlan_hdr) : nullptr;
  }
  Lock lock(ctx->mu);
  return drsim::capi::Register(dr::Action::PushVlan(domain->domain, vlan_hdr), __func__, ctx);
}

int mlx5dv_dr_action_destroy(mlx5dv_dr_action* action) {
  Context* ctx;
  if (!IsSoftwareNicObject(action, Kind::kAction, &ctx)) {
    const RealMlx5* real = drsim::capi::Forward(__func__, action, "action");
    return real ? real->mlx5dv_dr_action_destroy(action) : errno;
  }
  if (action->real_twin != nullptr) {
    // The rdma-core twin goes first: while hardware rules use it, the action stays whole.
    if (int err = drsim::capi::Real()->mlx5dv_dr_action_destroy(action->real_twin); err != 0) {
      return RecordFailure(__func__, err,
                           "the action's rdma-core twin is still in use by rules of real hardware");
    }
    action->real_twin = nullptr;
  }
  absl::Status s;
  if (ctx != nullptr) {
    Lock lock(ctx->mu);
    s = action->action.Destroy();
  } else {
    s = action->action.Destroy();
  }
  if (!s.ok()) return RecordFailure(__func__, s);
  Registry::Get().Remove(action);
  delete action;
  return 0;
}

int mlx5dv_dr_aso_other_domain_link(mlx5dv_devx_obj* devx_obj, mlx5dv_dr_domain* peer_dmn,
                                    mlx5dv_dr_domain* dmn, uint32_t flags, uint8_t return_reg_c) {
  Context* ctx;
  if (!IsSoftwareNicObject(devx_obj, Kind::kDevx, &ctx)) {
    const RealMlx5* real = drsim::capi::Forward(__func__, devx_obj, "devx_obj");
    return real ? real->mlx5dv_dr_aso_other_domain_link(devx_obj, peer_dmn, dmn, flags, return_reg_c) : errno;
  }
  // As in rdma-core, the object's type is checked first: only connection-tracking objects link.
  if (devx_obj->kind != drsim::capi::DevxKind::kAsoConnTrack) {
    return RecordFailure(__func__, EOPNOTSUPP, "devx_obj is not an ASO connection-tracking object");
  }
  Context* peer_ctx;
  if (!IsSoftwareNicObject(peer_dmn, Kind::kDomain, &peer_ctx) || peer_ctx != ctx) {
    return RecordFailure(__func__, EINVAL, "peer_dmn is not a domain of devx_obj's software NIC");
  }
  if (!IsSoftwareNicObject(dmn, Kind::kDomain)) {
    return RecordFailure(__func__, EINVAL, "dmn is not a domain of the software NIC");
  }
  Lock lock(ctx->mu);
  absl::Status s = dmn->domain.LinkAsoCt(peer_dmn->domain, devx_obj->id, flags, return_reg_c);
  return s.ok() ? 0 : RecordFailure(__func__, s);
}

int mlx5dv_dr_aso_other_domain_unlink(mlx5dv_devx_obj* devx_obj, mlx5dv_dr_domain* dmn) {
  Context* ctx;
  if (!IsSoftwareNicObject(devx_obj, Kind::kDevx, &ctx)) {
    const RealMlx5* real = drsim::capi::Forward(__func__, devx_obj, "devx_obj");
    return real ? real->mlx5dv_dr_aso_other_domain_unlink(devx_obj, dmn) : errno;
  }
  // rdma-core finds no link on any other object: EINVAL.
  if (devx_obj->kind != drsim::capi::DevxKind::kAsoConnTrack) {
    return RecordFailure(__func__, EINVAL, "devx_obj is not linked (not an ASO connection-tracking object)");
  }
  Context* dmn_ctx;
  if (!IsSoftwareNicObject(dmn, Kind::kDomain, &dmn_ctx) || dmn_ctx != ctx) {
    return RecordFailure(__func__, EINVAL, "dmn is not a domain of devx_obj's software NIC");
  }
  Lock lock(ctx->mu);
  absl::Status s = dmn->domain.UnlinkAsoCt(devx_obj->id);
  return s.ok() ? 0 : RecordFailure(__func__, s);
}

// ---- Dumps (dr/dump.h; record formats in docs/dump.md) -------------------------------------------------

int mlx5dv_dump_dr_domain(FILE* fout, mlx5dv_dr_domain* domain) {
  Context* ctx;
  if (!IsSoftwareNicObject(domain, Kind::kDomain, &ctx)) {
    if (domain == nullptr || fout == nullptr)
      return -RecordFailure(__func__, EINVAL, "fout or domain is NULL");
    const RealMlx5* real = drsim::capi::Forward(__func__, domain, "domain");
    return real ? real->mlx5dv_dump_dr_domain(fout, domain) : -errno;
  }
  if (fout == nullptr) return -RecordFailure(__func__, EINVAL, "fout is NULL");
  Lock lock(ctx->mu);
  return drsim::capi::DumpResult(__func__, dr::DumpDomain(domain->domain, fout));
}

int mlx5dv_dump_dr_table(FILE* fout, mlx5dv_dr_table* table) {
  Context* ctx;
  if (!IsSoftwareNicObject(table, Kind::kTable, &ctx)) {
    if (table == nullptr || fout == nullptr) return -RecordFailure(__func__, EINVAL, "fout or table is NULL");
    const RealMlx5* real = drsim::capi::Forward(__func__, table, "table");
    return real ? real->mlx5dv_dump_dr_table(fout, table) : -errno;
  }
  if (fout == nullptr) return -RecordFailure(__func__, EINVAL, "fout is NULL");
  Lock lock(ctx->mu);
  return drsim::capi::DumpResult(__func__, dr::DumpTable(table->table, fout));
}

int mlx5dv_dump_dr_matcher(FILE* fout, mlx5dv_dr_matcher* matcher) {
  Context* ctx;
  if (!IsSoftwareNicObject(matcher, Kind::kMatcher, &ctx)) {
    if (matcher == nullptr || fout == nullptr)
      return -RecordFailure(__func__, EINVAL, "fout or matcher is NULL");
    const RealMlx5* real = drsim::capi::Forward(__func__, matcher, "matcher");
    return real ? real->mlx5dv_dump_dr_matcher(fout, matcher) : -errno;
  }
  if (fout == nullptr) return -RecordFailure(__func__, EINVAL, "fout is NULL");
  Lock lock(ctx->mu);
  return drsim::capi::DumpResult(__func__, dr::DumpMatcher(matcher->matcher, fout));
}

int mlx5dv_dump_dr_rule(FILE* fout, mlx5dv_dr_rule* rule) {
  Context* ctx;
  if (!IsSoftwareNicObject(rule, Kind::kRule, &ctx)) {
    if (rule == nullptr || fout == nullptr) return -RecordFailure(__func__, EINVAL, "fout or rule is NULL");
    const RealMlx5* real = drsim::capi::Forward(__func__, rule, "rule");
    return real ? real->mlx5dv_dump_dr_rule(fout, rule) : -errno;
  }
  if (fout == nullptr) return -RecordFailure(__func__, EINVAL, "fout is NULL");
  Lock lock(ctx->mu);
  return drsim::capi::DumpResult(__func__, dr::DumpRule(rule->rule, fout));
}

}  // extern "C"
