#include "actions/action_compiler.h"

#include <array>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "actions/action_state_table.h"
#include "base/status_macros.h"
#include "hw/flow_table.h"

namespace drsim::actions {
namespace {

using T = ActionType;

absl::Status Invalid(size_t i, const ActionSpec& a, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrFormat("action[%d] (%s): %s", i, ActionTypeName(a.type), why));
}

bool IsReformat(ActionType t) {
  return t == T::kTnlL2ToL2 || t == T::kL2ToTnlL2 || t == T::kTnlL3ToL2 || t == T::kL2ToTnlL3;
}

bool IsReformatOrModify(ActionType t) { return IsReformat(t) || t == T::kModifyHdr; }

// rdma-core's per-type checks (EINVAL), shared by both paths.
absl::Status CheckType(const RuleContext& rule, size_t i, const ActionSpec& a) {
  switch (a.type) {
    case T::kFt:
    case T::kRootFt:
    case T::kVport:
    case T::kMeter:
    case T::kSampler:
    case T::kDestArray:
      if (a.domain != rule.domain) {
        return Invalid(i, a,
                       a.type == T::kFt || a.type == T::kRootFt
                           ? "the destination table belongs to another domain"
                           : "it belongs to another domain");
      }
      break;
    default:
      break;
  }
  if ((a.type == T::kMeter || a.type == T::kSampler) && a.table->level <= rule.table_level) {
    return Invalid(i, a,
                   absl::StrFormat("its next table (level %d) must be at a higher level than this rule's "
                                   "table (level %d)",
                                   a.table->level, rule.table_level));
  }
  if (a.type == T::kAsoCt && a.domain != rule.domain && a.ct_link_domain != rule.domain) {
    // rdma-core takes a CT action of another domain only once its object is linked to the rule's domain
    // (mlx5dv_dr_aso_other_domain_link).
    return Invalid(i, a,
                   a.ct_link_domain == nullptr
                       ? "the ASO CT action was made for another domain, and its object is not linked to "
                         "this one (mlx5dv_dr_aso_other_domain_link)"
                       : "the ASO CT action was made for another domain, and its object is linked to a "
                         "third domain, not this one");
  }
  if ((a.type == T::kQp || a.type == T::kAsoFlowMeter || a.type == T::kAsoFirstHit) &&
      a.device != rule.device) {
    return Invalid(i, a,
                   a.type == T::kQp ? "the queue belongs to another device"
                                    : "the ASO object belongs to another device");
  }
  if (IsReformatOrModify(a.type) && a.root_level != rule.root_table) {
    return Invalid(i, a,
                   a.root_level ? "created with ROOT_LEVEL, it can only be used on a root (level 0) table"
                                : "a root (level 0) table needs actions created with ROOT_LEVEL");
  }
  return absl::OkStatus();
}

absl::Status CheckPipe(const RuleContext& rule, ActionDomain pipe,
                       absl::Span<const ActionSpec* const> actions) {
  std::array<int, kNumActionTypes> seen{};
  ActionState state = ActionState::kNoAction;
  for (size_t i = 0; i < actions.size(); ++i) {
    const ActionSpec& a = *actions[i];
    const absl::string_view name = ActionTypeName(a.type);
    DRSIM_RETURN_IF_ERROR(CheckType(rule, i, a));
    const bool vlan = a.type == T::kPushVlan || a.type == T::kPopVlan;
    const int allowed = vlan ? 2 : 1;
    if (++seen[static_cast<int>(a.type)] > allowed) {
      if (a.type == T::kPushVlan) {
        return absl::UnimplementedError(
            absl::StrFormat("action[%d] (%s): a rule pushes at most 2 VLAN tags", i, name));
      }
      return absl::InvalidArgumentError(
          absl::StrFormat("action[%d] (%s): a rule takes at most %d %s action%s", i, name, allowed, name,
                          allowed > 1 ? "s" : ""));
    }
    const ActionState next = NextActionState(pipe, state, a.type);
    if (next == ActionState::kErr) {
      if (i == 0 || state == ActionState::kNoAction) {
        return absl::UnimplementedError(absl::StrFormat("action[%d] (%s) is not allowed in a %s domain", i,
                                                        name, ActionDomainName(pipe)));
      }
      return absl::UnimplementedError(absl::StrFormat(
          "action[%d] (%s) cannot follow action[%d] (%s) in a %s domain%s", i, name, i - 1,
          ActionTypeName(actions[i - 1]->type), ActionDomainName(pipe),
          state == ActionState::kTerm ? " (only flow_counter may follow a terminating action)" : ""));
    }
    state = next;
  }
  return absl::OkStatus();
}

// The root-table (kernel) path: a fixed set of types, each at most once, and one destination.
absl::Status CheckRoot(const RuleContext& rule, absl::Span<const ActionSpec* const> actions) {
  std::array<int, kNumActionTypes> seen{};
  int destinations = 0;
  for (size_t i = 0; i < actions.size(); ++i) {
    const ActionSpec& a = *actions[i];
    switch (a.type) {
      case T::kFt:
      case T::kDestArray:
      case T::kQp:
      case T::kCtr:
      case T::kTag:
      case T::kMiss:
      case T::kDrop:
      case T::kModifyHdr:
      case T::kTnlL2ToL2:
      case T::kL2ToTnlL2:
      case T::kTnlL3ToL2:
      case T::kL2ToTnlL3:
        break;
      default:
        return absl::UnimplementedError(absl::StrFormat(
            "action[%d] (%s) is not supported on root (level 0) tables", i, ActionTypeName(a.type)));
    }
    DRSIM_RETURN_IF_ERROR(CheckType(rule, i, a));
    if (IsReformat(a.type) && !rule.root_reformat) {
      const bool fdb = rule.domain_type == MLX5DV_DR_DOMAIN_TYPE_FDB;
      return absl::UnimplementedError(absl::StrFormat(
          "action[%d] (%s): the kernel makes %s root tables without reformat while the eSwitch encap mode is "
          "%s (devlink dev eswitch set ... encap-mode %s; drsim-run --eswitch-encap %s)",
          i, ActionTypeName(a.type), fdb ? "FDB" : "NIC", fdb ? "none" : "basic", fdb ? "basic" : "none",
          fdb ? "basic" : "none"));
    }
    if (++seen[static_cast<int>(a.type)] > 1) {
      return Invalid(i, a, "a root-table rule takes each action type once");
    }
    if (IsTerminating(a.type) && ++destinations > 1) {
      return Invalid(i, a, "a root-table rule takes one destination");
    }
  }
  return absl::OkStatus();
}

// The hardware's execution order per pipe (rdma-core dr_ste_v1_set_actions_rx / _tx). Decap and encap
// types appear once each in either pipe; the state machine keeps illegal combinations out.
constexpr T kRxOrder[] = {T::kTnlL2ToL2,   T::kTnlL3ToL2, T::kTag,       T::kPopVlan,
                          T::kAsoFirstHit, T::kModifyHdr, T::kPushVlan,  T::kAsoFlowMeter,
                          T::kAsoCt,       T::kCtr,       T::kL2ToTnlL2, T::kL2ToTnlL3};
constexpr T kTxOrder[] = {T::kAsoFlowMeter, T::kPopVlan,     T::kAsoCt,     T::kCtr,      T::kModifyHdr,
                          T::kPushVlan,     T::kAsoFirstHit, T::kL2ToTnlL2, T::kL2ToTnlL3};

void EmitOp(const ActionSpec& a, hw::ActionProgram& p) {
  hw::Op op{hw::OpCode::kTag};
  switch (a.type) {
    case T::kTnlL2ToL2:
      op = {hw::OpCode::kDecapL2};
      break;
    case T::kTnlL3ToL2:
      op = {hw::OpCode::kDecapL3, 0, nullptr, a.reformat};
      break;
    case T::kTag:
      op = {hw::OpCode::kTag, a.tag};
      break;
    case T::kPopVlan:
      op = {hw::OpCode::kPopVlan};
      break;
    case T::kModifyHdr:
      op = {hw::OpCode::kModifyHeader, 0, a.modify};
      break;
    case T::kPushVlan:
      op = {hw::OpCode::kPushVlan, a.vlan_header};
      break;
    case T::kCtr:
      op = {hw::OpCode::kCounter, a.counter_id};
      break;
    case T::kL2ToTnlL2:
      op = {hw::OpCode::kEncapL2, 0, nullptr, a.reformat};
      break;
    case T::kL2ToTnlL3:
      op = {hw::OpCode::kEncapL3, 0, nullptr, a.reformat};
      break;
    case T::kAsoFlowMeter:
      op = {hw::OpCode::kAsoFlowMeter, a.aso_context};
      op.reg = a.aso_reg;
      op.initial_color = a.aso_initial_color;
      break;
    case T::kAsoFirstHit:
      op = {hw::OpCode::kAsoFirstHit, a.aso_context};
      op.reg = a.aso_reg;
      op.set = a.aso_set;
      break;
    case T::kAsoCt:
      op = {hw::OpCode::kAsoConnTrack, a.aso_context};
      op.reg = a.aso_reg;
      op.set = a.aso_initiator;
      break;
    default:
      return;
  }
  p.ops.push_back(op);
}

absl::StatusOr<hw::ActionProgram> BuildProgram(hw::Pipe pipe, absl::Span<const ActionSpec* const> actions) {
  hw::ActionProgram p;
  absl::Span<const T> order =
      pipe == hw::kRxPipe ? absl::Span<const T>(kRxOrder) : absl::Span<const T>(kTxOrder);
  for (T type : order) {
    for (const ActionSpec* a : actions) {
      if (a->type == type) EmitOp(*a, p);  // push/pop VLAN twice: in list order
    }
  }
  for (size_t i = 0; i < actions.size(); ++i) {
    const ActionSpec& a = *actions[i];
    switch (a.type) {
      case T::kDrop:
        p.destination = hw::Destination::kDrop;
        break;
      case T::kQp:
        p.destination = a.is_tir ? hw::Destination::kTir : hw::Destination::kQueue;
        p.queue = a.qp_num;
        p.tir = a.tir;
        break;
      case T::kRootFt:
        p.destination = hw::Destination::kRootTable;
        p.root_priority = a.root_priority;
        break;
      case T::kMeter:
        p.destination = hw::Destination::kMeter;
        p.meter = a.meter;
        p.meter_reg = a.meter_reg;
        p.table = a.table;
        break;
      case T::kSampler:
        p.destination = hw::Destination::kSampler;
        p.sampler = a.sampler;
        p.sample = a.sample;
        p.table = a.table;
        break;
      case T::kDestArray:
        p.destination = hw::Destination::kReplicate;
        p.replicas = a.replicas;
        break;
      case T::kFt:
        p.destination = hw::Destination::kTable;
        p.table = a.table;
        break;
      case T::kMiss:
        p.destination = hw::Destination::kDefaultMiss;
        break;
      case T::kVport:
        // The uplink from the FDB RX pipe (traffic that came from the wire) is silently a drop.
        if (pipe == hw::kRxPipe && a.vport == hw::kWireVport) {
          p.destination = hw::Destination::kDrop;
        } else {
          p.destination = hw::Destination::kVport;
          p.vport = a.vport;
        }
        break;
      case T::kTnlL2ToL2:
      case T::kTnlL3ToL2:
      case T::kTag:
      case T::kPopVlan:
      case T::kModifyHdr:
      case T::kPushVlan:
      case T::kCtr:
      case T::kL2ToTnlL2:
      case T::kL2ToTnlL3:
      case T::kAsoFlowMeter:
      case T::kAsoFirstHit:
      case T::kAsoCt:
        break;
      default:
        return absl::UnimplementedError(absl::StrFormat(
            "action[%d] (%s) is not executed by the software NIC yet", i, ActionTypeName(a.type)));
    }
  }
  return p;
}

}  // namespace

std::string DescribeAction(const ActionSpec& a) {
  const absl::string_view name = ActionTypeName(a.type);
  switch (a.type) {
    case T::kTag:
      return absl::StrFormat("%s 0x%x", name, a.tag);
    case T::kQp:
      // rdma-core's dest_devx_tir is a QP-type action too; name what it targets.
      if (a.is_tir) return absl::StrFormat("dest_devx_tir %d", a.tir);
      return absl::StrFormat("%s 0x%x", name, a.qp_num);
    case T::kFt:
      return absl::StrFormat("%s %d", name, a.table ? a.table->id : 0);
    case T::kCtr:
      return absl::StrFormat("%s %d", name, a.counter_id);
    case T::kVport:
      return absl::StrFormat("%s 0x%x", name, a.vport);
    case T::kPushVlan:
      return absl::StrFormat("%s 0x%08x", name, a.vlan_header);
    case T::kModifyHdr:
      return absl::StrFormat("%s (%d actions)", name, a.modify ? a.modify->actions.size() : 0);
    case T::kL2ToTnlL2:
    case T::kL2ToTnlL3:
    case T::kTnlL3ToL2:
      return absl::StrFormat("%s (%d bytes)", name, a.reformat ? a.reformat->size() : 0);
    default:
      return std::string(name);
  }
}

absl::StatusOr<std::array<hw::ActionProgram, 2>> CompileActions(const RuleContext& rule,
                                                                absl::Span<const ActionSpec* const> actions) {
  const DomainPipes all = PipesOf(rule.domain_type);
  std::vector<std::pair<ActionDomain, hw::Pipe>> pipes;
  for (int p = 0; p < all.count; ++p) {
    const ActionDomain d = all.pipes[p];
    const hw::Pipe pipe =
        d == ActionDomain::kNicEgress || d == ActionDomain::kFdbEgress ? hw::kTxPipe : hw::kRxPipe;
    if ((pipe == hw::kRxPipe && rule.skip_rx) || (pipe == hw::kTxPipe && rule.skip_tx)) continue;
    pipes.push_back({d, pipe});
  }
  if (rule.root_table) {
    DRSIM_RETURN_IF_ERROR(CheckRoot(rule, actions));
  } else {
    for (const auto& [domain, pipe] : pipes) {
      DRSIM_RETURN_IF_ERROR(CheckPipe(rule, domain, actions));
    }
  }
  std::array<hw::ActionProgram, 2> programs;
  for (const auto& [domain, pipe] : pipes) {
    DRSIM_ASSIGN_OR_RETURN(hw::ActionProgram program, BuildProgram(pipe, actions));
    programs[pipe] = std::move(program);
  }
  return programs;
}

}  // namespace drsim::actions
