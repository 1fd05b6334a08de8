#include "testpmd/lowering.h"

#include <array>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "sim/meter.h"
#include "testpmd/action_lowering.h"
#include "testpmd/modify.h"
#include "testpmd/registers.h"

namespace drsim::testpmd {
namespace {

using absl::StatusCode;

hw::MatchParams MeterRegMask(uint32_t mask) { return *hw::MatchBuilder().RegC(kMeterRegC, mask).Build(); }
hw::MatchParams MeterRegValue(uint32_t value) { return *hw::MatchBuilder().RegC(kMeterRegC, value).Build(); }

// The policy rules of one colour of a non-default policy.
absl::Status LowerPolicyColour(ActionLowering& lowering, const MeterInstance& instance,
                               const std::vector<Action>& actions, uint32_t prm_color,
                               const RuleLabel& label) {
  DRSIM_ASSIGN_OR_RETURN(Classified c, Classify(actions));
  if (c.age != nullptr || !c.indirects.empty()) {
    return ActionError(c.age != nullptr ? *c.age : *c.indirects.front(), StatusCode::kUnimplemented,
                       "is not supported in a meter policy");
  }
  DrList list;
  DRSIM_RETURN_IF_ERROR(lowering.AddModifiers(c, false, false, {}, &list));
  if (c.fate != nullptr) {
    DRSIM_ASSIGN_OR_RETURN(const dr::Action* fate, lowering.Fate(*c.fate, label, false));
    list.Add(fate, c.fate);
  }
  return lowering.Insert(instance.color_matcher, MeterRegValue(prm_color), list, label, SourcePos{});
}

// The meter's instance in `domain`, made on first use: flow meter, policy table and colour rules.
absl::StatusOr<std::shared_ptr<MeterInstance>> MeterInstanceFor(EngineContext& ctx, uint16_t port,
                                                                uint32_t id,
                                                                const std::shared_ptr<DomainRes>& domain) {
  Meter* meter = ctx.meters.FindMeter(port, id);
  std::weak_ptr<MeterInstance>& slot = meter->instances[static_cast<int>(domain->type())];
  if (std::shared_ptr<MeterInstance> existing = slot.lock()) return existing;
  const MeterPolicy& policy = *ctx.meters.Policy(port, meter->policy_id);
  auto instance = std::make_shared<MeterInstance>();
  DRSIM_ASSIGN_OR_RETURN(instance->policy_table, ctx.objects.HiddenTable(domain, true));
  DRSIM_ASSIGN_OR_RETURN(instance->color_matcher,
                         ctx.objects.Matcher(instance->policy_table, 0, MeterRegMask(kMeterColorMask)));
  if (policy.default_policy) {
    DRSIM_ASSIGN_OR_RETURN(instance->flow_matcher,
                           ctx.objects.Matcher(instance->policy_table, 1, MeterRegMask(0xffffffff)));
  }
  sim::MeterParams params = *ctx.meters.Profile(port, meter->profile_id);
  params.start_color = meter->start_color;
  std::array<uint8_t, 32> prm{};
  params.Serialize(prm.data());
  DRSIM_ASSIGN_OR_RETURN(instance->meter, dr::Action::FlowMeter(instance->policy_table->table(),
                                                                meter->enabled, kMeterRegC, prm));
  RuleLabel label;
  label.part = absl::StrFormat("port %d meter %d policy", port, id);
  PatternInfo no_pattern;
  ActionLowering lowering(ctx, domain, port, no_pattern, &instance->policy);
  DRSIM_ASSIGN_OR_RETURN(dr::Action drop, dr::Action::Drop());
  DrList red;
  red.Add(lowering.Own(std::move(drop)), nullptr);
  DRSIM_RETURN_IF_ERROR(lowering.Insert(instance->color_matcher, MeterRegValue(PrmColor(2)), red,
                                        label.With(" red"), SourcePos{}));
  if (!policy.default_policy) {
    DRSIM_RETURN_IF_ERROR(
        LowerPolicyColour(lowering, *instance, policy.cmd.green, PrmColor(0), label.With(" green")));
    if (!policy.cmd.yellow.empty()) {  // no rule: yellow misses and takes the domain default
      DRSIM_RETURN_IF_ERROR(
          LowerPolicyColour(lowering, *instance, policy.cmd.yellow, PrmColor(1), label.With(" yellow")));
    }
  }
  slot = instance;
  return instance;
}

class FlowLowering {
 public:
  FlowLowering(EngineContext& ctx, const FlowRule& rule, const TranslatedPattern& pattern,
               const RuleTarget& target, FlowObjects* out)
      : ctx_(ctx),
        rule_(rule),
        pattern_(pattern),
        target_(target),
        out_(out),
        lowering_(ctx, target.domain, target.port, pattern.info, out) {}

  absl::Status Run() {
    DRSIM_ASSIGN_OR_RETURN(c_, Classify(rule_.actions));
    lowering_.set_flow(&c_);
    const bool rx = target_.domain->type() == MLX5DV_DR_DOMAIN_TYPE_NIC_RX;
    const MeterPolicy* policy = nullptr;
    if (c_.meter != nullptr) {
      DRSIM_ASSIGN_OR_RETURN(policy, FindPolicy(*c_.meter));
    }
    const bool policy_decides = policy != nullptr && !policy->default_policy;
    if (rx && c_.fate == nullptr && !policy_decides) {
      return ErrorAt(
          target_.actions_pos, StatusCode::kInvalidArgument,
          "no fate action (drop, queue, rss, jump, meter with a policy): mlx5 needs one in ingress "
          "rules");
    }
    DRSIM_ASSIGN_OR_RETURN(
        std::shared_ptr<MatcherRes> matcher,
        lowering_.MatcherIn(target_.table, target_.priority, pattern_.mask, target_.pattern_pos));
    if (c_.meter != nullptr) return LowerMeter(*c_.meter, *policy, matcher);
    if (c_.sample != nullptr) return LowerSample(*c_.sample, matcher);
    DrList list;
    DRSIM_RETURN_IF_ERROR(lowering_.AddModifiers(c_, true, target_.table->root(), {}, &list));
    DRSIM_RETURN_IF_ERROR(AddFate(&list));
    return lowering_.Insert(matcher, pattern_.value, list, target_.label, target_.actions_pos);
  }

 private:
  // The flow's counting, aging and indirect actions, for the part of a split flow that runs them (the
  // meter or the sampler's), with what the flow's order and ASO checks read (meter, all).
  Classified CountingOnly() const {
    Classified c;
    c.count = c_.count;
    c.age = c_.age;
    c.indirects = c_.indirects;
    c.meter = c_.meter;
    c.all = c_.all;
    return c;
  }

  absl::Status AddFate(DrList* list) {
    if (c_.fate == nullptr) return absl::OkStatus();
    DRSIM_ASSIGN_OR_RETURN(const dr::Action* fate, lowering_.Fate(*c_.fate, target_.label, false));
    list->Add(fate, c_.fate);
    return absl::OkStatus();
  }

  absl::StatusOr<const MeterPolicy*> FindPolicy(const Action& meter) {
    const uint32_t id = ActionParam(meter, "mtr_id");
    const Meter* m = ctx_.meters.FindMeter(target_.port, id);
    if (m == nullptr) {
      return ActionError(meter, StatusCode::kNotFound,
                         absl::StrFormat("no meter %d on port %d (create port meter ...)", id, target_.port));
    }
    return ctx_.meters.Policy(target_.port, m->policy_id);
  }

  absl::Status LowerMeter(const Action& meter, const MeterPolicy& policy,
                          const std::shared_ptr<MatcherRes>& matcher) {
    const uint32_t id = ActionParam(meter, "mtr_id");
    absl::StatusOr<std::shared_ptr<MeterInstance>> instance =
        MeterInstanceFor(ctx_, target_.port, id, target_.domain);
    if (!instance.ok()) return lowering_.Fail(instance.status(), &meter);
    out_->Hold(*instance);
    DrList prefix;
    if (!policy.default_policy) {
      if (c_.fate != nullptr || c_.last != &meter) {
        return ActionError(
            meter, StatusCode::kInvalidArgument,
            absl::StrFormat("meter %d's policy %d decides the fate: the meter must be the flow's last action "
                            "and the flow takes no other fate action (mlx5)",
                            id, policy.cmd.policy_id));
      }
      DRSIM_RETURN_IF_ERROR(lowering_.AddModifiers(c_, true, target_.table->root(), {}, &prefix));
      prefix.Add(&(*instance)->meter, &meter);
      return lowering_.Insert(matcher, pattern_.value, prefix, target_.label, target_.actions_pos);
    }
    // Default policy: tag the flow, meter, then continue with the flow's actions for green and yellow.
    uint32_t flow_id = 0;
    absl::StatusOr<std::shared_ptr<const void>> hold = ctx_.meters.AllocateFlowId(&flow_id);
    if (!hold.ok()) return lowering_.Fail(hold.status(), &meter);
    out_->Hold(*hold);
    const std::vector<uint64_t> tag_words =
        SetRegisterWords(kMeterRegC, flow_id << kMeterFlowIdShift, 0xffffff00);
    Classified prefix_actions = CountingOnly();
    DRSIM_RETURN_IF_ERROR(
        lowering_.AddModifiers(prefix_actions, true, target_.table->root(), tag_words, &prefix));
    prefix.Add(&(*instance)->meter, &meter);
    DRSIM_RETURN_IF_ERROR(
        lowering_.Insert(matcher, pattern_.value, prefix, target_.label, target_.actions_pos));
    for (uint32_t colour : {0u, 1u}) {  // green, yellow
      DrList suffix;
      DRSIM_RETURN_IF_ERROR(lowering_.AddModifiers(c_, false, false, {}, &suffix));
      DRSIM_RETURN_IF_ERROR(AddFate(&suffix));
      const uint32_t value = flow_id << kMeterFlowIdShift | PrmColor(colour);
      DRSIM_RETURN_IF_ERROR(lowering_.Insert(
          (*instance)->flow_matcher, MeterRegValue(value), suffix,
          target_.label.With(absl::StrFormat(" meter %d %s", id, colour == 0 ? "green" : "yellow")),
          meter.pos));
    }
    return absl::OkStatus();
  }

  absl::Status LowerSample(const Action& sample, const std::shared_ptr<MatcherRes>& matcher) {
    const uint32_t ratio = ActionParam(sample, "ratio");
    const uint32_t index = ActionParam(sample, "index");
    if (ratio == 0) return ActionError(sample, StatusCode::kInvalidArgument, "ratio must be at least 1");
    auto set = ctx_.sample_actions.find(index);
    if (set == ctx_.sample_actions.end()) {
      return ActionError(
          sample, StatusCode::kInvalidArgument,
          absl::StrFormat("no sample action list %d: run `set sample_actions %d ... / end` first", index,
                          index));
    }
    // The flow's other actions run on every packet, in an engine table after the sampler.
    absl::StatusOr<std::shared_ptr<TableRes>> suffix = ctx_.objects.HiddenTable(target_.domain, false);
    if (!suffix.ok()) return lowering_.Fail(suffix.status(), &sample);
    out_->Hold(*suffix);
    DRSIM_ASSIGN_OR_RETURN(std::shared_ptr<MatcherRes> all,
                           lowering_.MatcherIn(*suffix, 0, hw::MatchParams(), sample.pos));
    DrList rest;
    DRSIM_RETURN_IF_ERROR(lowering_.AddModifiers(c_, false, false, {}, &rest));
    DRSIM_RETURN_IF_ERROR(AddFate(&rest));
    DRSIM_RETURN_IF_ERROR(
        lowering_.Insert(all, hw::MatchParams(), rest, target_.label.With(" sample suffix"), sample.pos));

    // The sampled copy.
    DRSIM_ASSIGN_OR_RETURN(Classified s, Classify(set->second));
    for (const Action& a : set->second) {
      const ActionType t = a.def->type;
      const bool allowed = t == ActionType::kQueue || t == ActionType::kRss || t == ActionType::kMark ||
                           t == ActionType::kCount || t == ActionType::kPortId ||
                           t == ActionType::kRepresentedPort || t == ActionType::kRawEncap ||
                           t == ActionType::kVxlanEncap || t == ActionType::kNvgreEncap ||
                           t == ActionType::kVoid;
      if (!allowed) {
        return ActionError(
            a, StatusCode::kInvalidArgument,
            "not a sample action (testpmd takes queue, rss, mark, count, port_id, represented_port, "
            "raw_encap, vxlan_encap, nvgre_encap)");
      }
    }
    if (s.fate == nullptr) {
      return ActionError(sample, StatusCode::kInvalidArgument,
                         absl::StrFormat("sample action list %d has no destination (queue, rss, port_id or "
                                         "represented_port)",
                                         index));
    }
    DRSIM_ASSIGN_OR_RETURN(const dr::Action* copy_dest,
                           lowering_.Fate(*s.fate, target_.label.With(" sample"), true));
    const dr::Action* copy_counter = nullptr;
    if (s.count != nullptr) {
      DRSIM_ASSIGN_OR_RETURN(copy_counter, lowering_.Counter(*s.count, nullptr));
    }
    absl::StatusOr<const dr::Action*> next = (*suffix)->JumpAction();
    if (!next.ok()) return lowering_.Fail(next.status(), &sample);
    dr::Action splitter;
    if (ratio == 1) {
      // Mirroring: a dest array of the copy (behind its encapsulation) and the flow's path.
      if (s.mark != nullptr) {
        return ActionError(*s.mark, StatusCode::kUnimplemented,
                           "a mirrored copy (ratio 1, a DR dest array) takes no tag");
      }
      const dr::Action* reformat = nullptr;
      if (s.encap != nullptr) {
        DrList encap;
        Classified only_encap;
        only_encap.encap = s.encap;
        DRSIM_RETURN_IF_ERROR(lowering_.AddModifiers(only_encap, false, false, {}, &encap));
        reformat = encap.actions.front();
      }
      std::vector<dr::Action::ArrayDestination> dests = {{copy_dest, reformat}};
      if (copy_counter != nullptr) dests.push_back({copy_counter, nullptr});
      dests.push_back({*next, nullptr});
      absl::StatusOr<dr::Action> array = dr::Action::DestArray(target_.domain->domain(), dests);
      if (!array.ok()) return lowering_.Fail(array.status(), &sample);
      splitter = *std::move(array);
    } else {
      if (s.encap != nullptr) {
        return ActionError(
            *s.encap, StatusCode::kUnimplemented,
            "a DR flow sampler's copy takes no encapsulation: mirror with ratio 1 (a dest array) instead");
      }
      std::vector<const dr::Action*> copy;
      if (s.mark != nullptr) {
        DrList tag;
        Classified only_mark;
        only_mark.mark = s.mark;
        DRSIM_RETURN_IF_ERROR(lowering_.AddModifiers(only_mark, false, false, {}, &tag));
        copy.push_back(tag.actions.front());
      }
      if (copy_counter != nullptr) copy.push_back(copy_counter);
      copy.push_back(copy_dest);
      absl::StatusOr<dr::Action> sampler = dr::Action::FlowSampler(ratio, (*suffix)->table(), copy);
      if (!sampler.ok()) return lowering_.Fail(sampler.status(), &sample);
      splitter = *std::move(sampler);
    }
    DrList prefix;
    Classified prefix_actions = CountingOnly();
    DRSIM_RETURN_IF_ERROR(lowering_.AddModifiers(prefix_actions, true, target_.table->root(), {}, &prefix));
    prefix.Add(lowering_.Own(std::move(splitter)), &sample);
    return lowering_.Insert(matcher, pattern_.value, prefix, target_.label, target_.actions_pos);
  }

  EngineContext& ctx_;
  const FlowRule& rule_;
  const TranslatedPattern& pattern_;
  const RuleTarget& target_;
  FlowObjects* out_;
  ActionLowering lowering_;
  Classified c_;
};

}  // namespace

absl::Status LowerFlow(EngineContext& ctx, const FlowRule& rule, const TranslatedPattern& pattern,
                       const RuleTarget& target, FlowObjects* out) {
  return FlowLowering(ctx, rule, pattern, target, out).Run();
}

}  // namespace drsim::testpmd
