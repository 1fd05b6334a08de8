// FlowEngine's flow templates (engine.h): a flow made as a copy of an earlier one, with other values in its
// pattern's slots.
#include <memory>
#include <utility>
#include <vector>

#include "base/status_macros.h"
#include "testpmd/context.h"
#include "testpmd/engine.h"
#include "testpmd/pattern_template.h"

namespace drsim::testpmd {

// What every flow of one template shares: the model flow's matcher, actions and holds, its shape, and
// where its pattern's slot values go.
class FlowTemplate {
 public:
  const EngineContext* context = nullptr;  // the engine state it was made in
  uint16_t port = 0;
  std::shared_ptr<MatcherRes> matcher;
  std::vector<const dr::Action*> actions;
  std::vector<std::shared_ptr<const void>> holds;
  const FlowShape* shape = nullptr;
  uint64_t user_id = 0;
  PatternTemplate pattern;

  explicit FlowTemplate(PatternTemplate p) : pattern(std::move(p)) {}
};

absl::StatusOr<std::shared_ptr<const FlowTemplate>> FlowEngine::TemplateOfFlow(
    const FlowRule& rule, uint32_t flow_id, absl::Span<const PatternSlot> slots) {
  if (options_.keep_history) {
    return absl::FailedPreconditionError("the engine keeps its history: each flow needs its command");
  }
  auto flows = context_->flows.find(rule.port);
  if (flows == context_->flows.end() || flows->second.empty() || flows->second.rbegin()->first != flow_id) {
    return absl::NotFoundError(absl::StrCat("flow ", flow_id, " is not port ", rule.port, "'s last flow"));
  }
  for (const Action& a : rule.actions) {
    // (A flow using an indirect action must hold that very object: FlowsUsing finds it so.)
    if (a.def->type == ActionType::kIndirect)
      return absl::FailedPreconditionError("the flow uses an indirect action");
  }
  const Flow& model = *flows->second.rbegin()->second;
  std::vector<std::shared_ptr<const void>> holds;
  const InstalledRule* only_rule = model.objects.OnlyRuleOfSharedParts(&holds);
  if (only_rule == nullptr) {
    return absl::FailedPreconditionError("the flow made more than one rule, or something of its own");
  }
  DRSIM_ASSIGN_OR_RETURN(const PatternContext pattern_ctx, context_->PatternContextOf(rule));
  DRSIM_ASSIGN_OR_RETURN(PatternTemplate pattern,
                         context_->pattern_templates.Make(rule.pattern, slots, pattern_ctx));
  if (pattern.vlan_defaults_follow_slots()) {
    for (const Action& a : rule.actions) {
      if (a.def->type == ActionType::kOfPushVlan) {
        return absl::FailedPreconditionError("an of_push_vlan action pushes the VLAN id of a slot");
      }
    }
  }
  auto t = std::make_shared<FlowTemplate>(std::move(pattern));
  t->context = context_.get();
  t->port = rule.port;
  t->matcher = only_rule->matcher();
  t->actions.assign(only_rule->actions().begin(), only_rule->actions().end());
  if (holds.size() > 1) {
    // One hold a flow of several: a flow's record then holds it inline, with no extra record a flow.
    t->holds = {std::make_shared<const std::vector<std::shared_ptr<const void>>>(std::move(holds))};
  } else {
    t->holds = std::move(holds);
  }
  t->shape = model.shape;
  t->user_id = model.user_id;
  return t;
}

absl::StatusOr<uint32_t> FlowEngine::CreateFromTemplate(const FlowTemplate& t,
                                                        absl::Span<const absl::uint128> values, int line) {
  if (t.context != context_.get() || values.size() != t.pattern.slots()) {
    return absl::FailedPreconditionError("a flow template of another engine state, or values not its slots'");
  }
  pristine_ = false;
  PortFlows& flows = context_->flows[t.port];
  const uint32_t id = EngineContext::NextFlowId(flows);
  hw::MatchParams& value = context_->pattern_scratch.value;
  t.pattern.ValueInto(values, &value);
  RuleLabel label;
  label.flow.emplace(t.port, id);
  DRSIM_ASSIGN_OR_RETURN(InstalledRulePtr rule,
                         context_->objects.InsertRule(t.matcher, value, t.actions, label));
  FlowPtr flow = context_->flow_records.Make(&context_->flow_records);
  for (const std::shared_ptr<const void>& hold : t.holds) flow->objects.Hold(hold);
  flow->objects.AddRule(std::move(rule));
  flow->id = id;
  flow->line = line;
  flow->shape = t.shape;
  flow->user_id = t.user_id;
  flows.insert_or_assign(flows.end(), id, std::move(flow));
  return id;
}

}  // namespace drsim::testpmd
