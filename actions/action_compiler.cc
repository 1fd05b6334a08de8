#include "actions/action_compiler.h"

#include <array>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "actions/action_state_table.h"

namespace drsim::actions {
namespace {

absl::Status CheckPipe(const RuleContext& rule, ActionDomain pipe,
                       absl::Span<const ActionSpec* const> actions) {
  std::array<int, kNumActionTypes> seen{};
  ActionState state = ActionState::kNoAction;
  for (size_t i = 0; i < actions.size(); ++i) {
    const ActionSpec& a = *actions[i];
    const absl::string_view name = ActionTypeName(a.type);
    if (a.type == ActionType::kFt && a.table_domain != rule.domain) {
      return absl::InvalidArgumentError(
          absl::StrFormat("action[%d] (%s): the destination table belongs to another domain", i, name));
    }
    if (a.type == ActionType::kQp && a.queue_device != rule.device) {
      return absl::InvalidArgumentError(
          absl::StrFormat("action[%d] (%s): the queue belongs to another device", i, name));
    }
    const bool vlan = a.type == ActionType::kPushVlan || a.type == ActionType::kPopVlan;
    const int allowed = vlan ? 2 : 1;
    if (++seen[static_cast<int>(a.type)] > allowed) {
      if (a.type == ActionType::kPushVlan) {
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

}  // namespace

absl::StatusOr<hw::ActionProgram> CompileActions(const RuleContext& rule,
                                                 absl::Span<const ActionSpec* const> actions) {
  const DomainPipes pipes = PipesOf(rule.domain_type);
  for (int p = 0; p < pipes.count; ++p) {
    if (absl::Status s = CheckPipe(rule, pipes.pipes[p], actions); !s.ok()) return s;
  }
  hw::ActionProgram program;
  for (const ActionSpec* a : actions) {
    switch (a->type) {
      case ActionType::kTag:
        program.set_tag = true;
        program.tag = a->tag;
        break;
      case ActionType::kDrop:
        program.destination = hw::Destination::kDrop;
        break;
      case ActionType::kQp:
        program.destination = hw::Destination::kQueue;
        program.queue = a->qp_num;
        break;
      case ActionType::kFt:
        program.destination = hw::Destination::kTable;
        program.table = a->table;
        break;
      case ActionType::kMiss:
        program.destination = hw::Destination::kDefaultMiss;
        break;
      default:
        return absl::UnimplementedError(
            absl::StrFormat("%s actions are not executed by the software NIC yet", ActionTypeName(a->type)));
    }
  }
  return program;
}

}  // namespace drsim::actions
