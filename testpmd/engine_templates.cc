// FlowEngine's flow templates (engine.h): a flow made as a copy of an earlier one, with other values in its
// pattern's slots.
#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "base/status_macros.h"
#include "testpmd/action_lowering.h"
#include "testpmd/context.h"
#include "testpmd/engine.h"
#include "testpmd/pattern_template.h"

namespace drsim::testpmd {

// What every flow of one template shares: the model flow's matcher, actions and holds, its shape, and
// where its pattern's slot values go. A varying mark's tag action is each flow's own.
class FlowTemplate {
 public:
  const EngineContext* context = nullptr;  // the engine state it was made in
  uint16_t port = 0;
  std::shared_ptr<MatcherRes> matcher;
  std::vector<const dr::Action*> actions;
  int mark_at = -1;  // the place in `actions` of the tag action of a varying mark, or -1
  std::vector<std::shared_ptr<const void>> holds;  // (not the model's tag action when the mark varies)
  const FlowShape* shape = nullptr;
  uint64_t user_id = 0;
  PatternTemplate pattern;

  explicit FlowTemplate(PatternTemplate p) : pattern(std::move(p)) {}
};

absl::StatusOr<std::shared_ptr<const FlowTemplate>> FlowEngine::TemplateOfFlow(
    const FlowRule& rule, uint32_t flow_id, absl::Span<const PatternSlot> slots, bool mark_varies) {
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
  if (mark_varies) {
    // The model's tag action (the flow holds it: SharedTag finds it) is where each flow's own goes.
    const auto mark = std::find_if(rule.actions.begin(), rule.actions.end(),
                                   [](const Action& a) { return a.def->type == ActionType::kMark; });
    if (mark == rule.actions.end()) return absl::FailedPreconditionError("the flow has no mark action");
    DRSIM_ASSIGN_OR_RETURN(std::shared_ptr<const dr::Action> tag,
                           SharedTag(context_->shared_actions, ActionParam(*mark, "id")));
    const auto at = std::find(t->actions.begin(), t->actions.end(), tag.get());
    if (at == t->actions.end()) return absl::FailedPreconditionError("the flow's rule has no tag action");
    t->mark_at = static_cast<int>(at - t->actions.begin());
    holds.erase(std::remove_if(holds.begin(), holds.end(),
                               [&tag](const std::shared_ptr<const void>& h) { return h.get() == tag.get(); }),
                holds.end());
  }
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
  const bool mark_varies = t.mark_at >= 0;
  if (t.context != context_.get() || values.size() != t.pattern.slots() + (mark_varies ? 1 : 0)) {
    return absl::FailedPreconditionError("a flow template of another engine state, or values not its slots'");
  }
  // The flow's own tag action in the model's place.
  std::shared_ptr<const dr::Action> tag;
  absl::InlinedVector<const dr::Action*, 4> actions(t.actions.begin(), t.actions.end());
  if (mark_varies) {
    if (values.back() > kMaxMark) return absl::InvalidArgumentError("mark id above the largest");
    DRSIM_ASSIGN_OR_RETURN(tag, SharedTag(context_->shared_actions, static_cast<uint32_t>(values.back())));
    actions[t.mark_at] = tag.get();
  }
  pristine_ = false;
  PortFlows& flows = context_->flows[t.port];
  const uint32_t id = EngineContext::NextFlowId(flows);
  hw::MatchParams& value = context_->pattern_scratch.value;
  t.pattern.ValueInto(values.subspan(0, t.pattern.slots()), &value);
  RuleLabel label;
  label.flow.emplace(t.port, id);
  DRSIM_ASSIGN_OR_RETURN(InstalledRulePtr rule,
                         context_->objects.InsertRule(t.matcher, value, actions, label));
  FlowPtr flow = context_->flow_records.Make(&context_->flow_records);
  if (tag != nullptr && t.holds.size() == 1) {
    // The template's hold and the tag as one, which the flow's record holds inline (two would take it an
    // Extra).
    flow->objects.Hold(
        std::make_shared<const std::pair<std::shared_ptr<const void>, std::shared_ptr<const void>>>(
            t.holds[0], std::move(tag)));
  } else {
    for (const std::shared_ptr<const void>& hold : t.holds) flow->objects.Hold(hold);
    if (tag != nullptr) flow->objects.Hold(std::move(tag));
  }
  flow->objects.AddRule(std::move(rule));
  flow->id = id;
  flow->line = line;
  flow->shape = t.shape;
  flow->user_id = t.user_id;
  flows.insert_or_assign(flows.end(), id, std::move(flow));
  return id;
}

}  // namespace drsim::testpmd
