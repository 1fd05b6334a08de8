#include "testpmd/engine.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "testpmd/aging.h"
#include "testpmd/context.h"
#include "testpmd/encap.h"
#include "testpmd/lowering.h"
#include "testpmd/pattern.h"

namespace drsim::testpmd {
namespace {

using absl::StatusCode;

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

absl::StatusOr<FlowPtr> BuildFlow(EngineContext& ctx, const FlowRule& rule, uint32_t id) {
  if (absl::Status s = ctx.CheckPort(rule.port); !s.ok()) return WithPos(s, rule.port_pos);
  const FlowAttr& attr = rule.attr;
  if (!attr.ingress && !attr.egress && !attr.transfer) {
    return ErrorAt(rule.pattern_pos, StatusCode::kInvalidArgument,
                   "expected ingress, egress or transfer before 'pattern': a rule needs a direction");
  }
  if (attr.ingress && attr.egress && !attr.transfer) {
    return ErrorAt(rule.pattern_pos, StatusCode::kInvalidArgument,
                   "a rule is ingress or egress, not both (DR domains are NIC_RX or NIC_TX)");
  }
  if (attr.priority > 0xffff) {
    return ErrorAt(
        attr.priority_pos, StatusCode::kInvalidArgument,
        absl::StrFormat("priority %d is above 65535 (a DR matcher priority is 16 bits)", attr.priority));
  }
  if (attr.group > kMaxGroup) {
    return ErrorAt(
        attr.group_pos, StatusCode::kInvalidArgument,
        absl::StrFormat("group %d is above %d (higher levels are the engine's own)", attr.group, kMaxGroup));
  }
  const mlx5dv_dr_domain_type type = DomainTypeOf(attr);
  RuleTarget target;
  target.port = rule.port;
  target.priority = static_cast<uint16_t>(attr.priority);
  target.label.flow.emplace(rule.port, id);
  target.pattern_pos = rule.pattern_pos;
  target.actions_pos = rule.actions_pos;
  absl::StatusOr<std::shared_ptr<DomainRes>> domain = ctx.objects.Domain(type, rule.port);
  if (!domain.ok()) return WithPos(domain.status(), rule.pattern_pos);
  target.domain = *domain;
  absl::StatusOr<std::shared_ptr<TableRes>> table = ctx.objects.GroupTable(target.domain, attr.group);
  if (!table.ok()) return WithPos(table.status(), attr.group_pos.known() ? attr.group_pos : rule.pattern_pos);
  target.table = *table;

  DRSIM_ASSIGN_OR_RETURN(const PatternContext pattern_ctx, ctx.PatternContextOf(rule));
  TranslatedPattern& pattern = ctx.pattern_scratch;
  DRSIM_RETURN_IF_ERROR(TranslatePatternInto(rule.pattern, pattern_ctx, &pattern));

  FlowPtr flow = ctx.flow_records.Make(&ctx.flow_records);
  // (The group's table needs no hold of the flow's: every flow's first rule is in it, and holds its matcher,
  // which holds the table.)
  if (pattern.geneve_option) {
    // Held before the rules are made, released after they and their matchers are gone.
    DRSIM_ASSIGN_OR_RETURN(std::shared_ptr<const void> option,
                           ctx.geneve_option.Acquire(*pattern.geneve_option));
    flow->objects.Hold(std::move(option));
  }
  DRSIM_RETURN_IF_ERROR(LowerFlow(ctx, rule, pattern, target, &flow->objects));
  flow->id = id;
  flow->user_id = attr.user_id.value_or(0);
  flow->shape = ctx.InternShape(rule);
  return flow;
}

}  // namespace

FlowEngine::FlowEngine(sim::Nic& nic, EngineOptions options)
    : nic_(nic), options_(options), context_(std::make_unique<EngineContext>(nic, options)) {}

FlowEngine::~FlowEngine() = default;

void FlowEngine::Reset() {
  context_.reset();  // flows first, then what they shared, then the queues
  context_ = std::make_unique<EngineContext>(nic_, options_);
  history_.clear();
  pristine_ = true;
}

void FlowEngine::Record(Command command) {
  if (options_.keep_history) history_.push_back(std::move(command));
}

int FlowEngine::num_ports() const { return context_->num_ports(); }

absl::Status FlowEngine::ValidateFlow(const FlowRule& rule) {
  pristine_ = false;  // (it may make the port's queues)
  absl::StatusOr<FlowPtr> flow = BuildFlow(*context_, rule, 0);
  return flow.status();  // the flow, if built, is torn down here
}

absl::StatusOr<uint32_t> FlowEngine::CreateFlow(const FlowRule& rule) { return CreateFlowOfLine(rule, 0); }

absl::StatusOr<uint32_t> FlowEngine::CreateFlowOfLine(const FlowRule& rule, int line) {
  pristine_ = false;
  PortFlows& flows = context_->flows[rule.port];
  const uint32_t id = EngineContext::NextFlowId(flows);
  DRSIM_ASSIGN_OR_RETURN(FlowPtr flow, BuildFlow(*context_, rule, id));
  flow->line = line;
  flows.insert_or_assign(flows.end(), id, std::move(flow));  // (the newest id: at the end, no search)
  if (options_.keep_history) Record(Command{rule.port_pos, FlowCreateCmd{rule}});  // (no copy otherwise)
  return id;
}

std::vector<uint32_t> FlowEngine::EraseFlows(uint16_t port, absl::Span<const uint32_t> ids) {
  const std::set<uint32_t> wanted(ids.begin(), ids.end());
  PortFlows& flows = context_->flows[port];
  std::vector<uint32_t> destroyed;
  for (auto id = wanted.rbegin(); id != wanted.rend(); ++id) {  // newest first; each a lookup, not a walk
    if (flows.erase(*id) != 0) destroyed.push_back(*id);
  }
  return destroyed;
}

absl::StatusOr<std::vector<uint32_t>> FlowEngine::DestroyFlows(uint16_t port,
                                                               absl::Span<const uint32_t> ids) {
  DRSIM_RETURN_IF_ERROR(context_->CheckPort(port));
  pristine_ = false;
  Record(Command{SourcePos{}, FlowDestroyCmd{port, std::vector<uint32_t>(ids.begin(), ids.end())}});
  return EraseFlows(port, ids);
}

absl::StatusOr<std::vector<uint32_t>> FlowEngine::FlushFlows(uint16_t port) {
  DRSIM_RETURN_IF_ERROR(context_->CheckPort(port));
  std::vector<uint32_t> ids;
  for (const auto& [id, flow] : context_->flows[port]) ids.push_back(id);
  pristine_ = false;
  Record(Command{SourcePos{}, FlowFlushCmd{port}});
  return EraseFlows(port, ids);
}

absl::StatusOr<std::vector<FlowInfo>> FlowEngine::ListFlows(uint16_t port,
                                                            absl::Span<const uint32_t> groups) const {
  DRSIM_RETURN_IF_ERROR(context_->CheckPort(port));
  std::vector<FlowInfo> out;
  auto it = context_->flows.find(port);
  if (it == context_->flows.end()) return out;
  for (const auto& [id, flow] : it->second) {
    if (groups.empty() || std::find(groups.begin(), groups.end(), flow->shape->group) != groups.end()) {
      out.push_back(flow->Info());
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const FlowInfo& a, const FlowInfo& b) {
    return std::tie(a.group, a.priority, a.id) < std::tie(b.group, b.priority, b.id);
  });
  return out;
}

absl::StatusOr<CountResult> FlowEngine::QueryCount(uint16_t port, uint32_t flow_id) const {
  DRSIM_RETURN_IF_ERROR(context_->CheckPort(port));
  auto flows = context_->flows.find(port);
  if (flows == context_->flows.end() || !flows->second.count(flow_id)) {
    return absl::NotFoundError(absl::StrFormat("Flow rule #%d not found", flow_id));
  }
  const Flow& flow = *flows->second.at(flow_id);
  const std::optional<uint32_t> counter = flow.objects.counter();
  if (!counter) {
    return absl::InvalidArgumentError(absl::StrFormat("flow rule #%d has no count action to query", flow_id));
  }
  CountResult r;
  DRSIM_RETURN_IF_ERROR(nic_.QueryCounter(*counter, &r.hits, &r.bytes));
  return r;
}

std::optional<int> FlowEngine::FlowLine(uint16_t port, uint32_t flow_id) const {
  auto flows = context_->flows.find(port);
  if (flows == context_->flows.end()) return std::nullopt;
  auto flow = flows->second.find(flow_id);
  if (flow == flows->second.end() || flow->second->line == 0) return std::nullopt;
  return flow->second->line;
}

absl::StatusOr<uint32_t> FlowEngine::QueueNumber(uint16_t port, uint16_t index) {
  pristine_ = false;
  return context_->QueueNumber(port, index);
}

std::optional<QueueRef> FlowEngine::QueueOf(uint32_t qp_num) const {
  for (const auto& [port, qps] : context_->queues()) {
    for (size_t i = 0; i < qps.size(); ++i) {
      if (qps[i] == qp_num) return QueueRef{port, static_cast<uint16_t>(i)};
    }
  }
  return std::nullopt;
}

std::string FlowEngine::DescribeRule(uint32_t rule_id) const { return context_->objects.LabelOf(rule_id); }

std::vector<std::string> FlowEngine::RuleActions(uint32_t rule_id) const {
  return context_->objects.RuleActions(rule_id);
}

std::optional<hw::MatchParams> FlowEngine::MatcherMask(uint32_t matcher_id) const {
  return context_->objects.MatcherMask(matcher_id);
}

std::vector<const dr::Domain*> FlowEngine::Domains() const { return context_->objects.Domains(); }

EngineCounts FlowEngine::counts() const {
  const ObjectCounts& c = context_->objects.counts();
  EngineCounts out{c.domains, c.tables, c.matchers, c.rules, 0};
  for (const auto& [port, flows] : context_->flows) out.flows += static_cast<int>(flows.size());
  out.flow_hit_contexts = context_->flow_hits.in_use();
  out.shared_actions = static_cast<int>(context_->shared_actions.size());
  return out;
}

std::string FlowEngine::FormatFlowList(const std::vector<FlowInfo>& flows) {
  if (flows.empty()) return "";
  std::string out = "ID\tGroup\tPrio\tAttr\tRule\n";
  for (const FlowInfo& f : flows) {
    absl::StrAppendFormat(&out, "%d\t%d\t%d\t%c%c%c\t", f.id, f.group, f.priority, f.ingress ? 'i' : '-',
                          f.egress ? 'e' : '-', f.transfer ? 't' : '-');
    for (const std::string& item : f.items) absl::StrAppend(&out, item, " ");
    absl::StrAppend(&out, "=>");
    for (const std::string& action : f.actions) absl::StrAppend(&out, " ", action);
    absl::StrAppend(&out, "\n");
  }
  return out;
}

std::string FlowEngine::FormatCount(const CountResult& count) {
  return absl::StrFormat("COUNT:\n hits_set: %d\n bytes_set: %d\n hits: %d\n bytes: %d\n",
                         count.hits_set ? 1 : 0, count.bytes_set ? 1 : 0, count.hits, count.bytes);
}

absl::StatusOr<CommandResult> FlowEngine::Execute(const Command& command, bool with_text) {
  pristine_ = false;
  CommandResult result;
  const Overloaded run{
      [&](const FlowValidateCmd& c) {
        DRSIM_RETURN_IF_ERROR(ValidateFlow(c.rule));
        if (with_text) result.text = "Flow rule validated\n";
        return absl::OkStatus();
      },
      [&](const FlowCreateCmd& c) {
        DRSIM_ASSIGN_OR_RETURN(const uint32_t id, CreateFlowOfLine(c.rule, command.pos.line));
        result.flow_id = id;
        if (with_text) result.text = absl::StrCat("Flow rule #", id, " created\n");
        return absl::OkStatus();
      },
      [&](const FlowDestroyCmd& c) {
        DRSIM_ASSIGN_OR_RETURN(result.destroyed, DestroyFlows(c.port, c.rule_ids));
        if (!with_text) return absl::OkStatus();
        for (uint32_t id : result.destroyed)
          absl::StrAppendFormat(&result.text, "Flow rule #%d destroyed\n", id);
        return absl::OkStatus();
      },
      [&](const FlowFlushCmd& c) {
        DRSIM_ASSIGN_OR_RETURN(result.destroyed, FlushFlows(c.port));
        return absl::OkStatus();
      },
      [&](const FlowListCmd& c) {
        DRSIM_ASSIGN_OR_RETURN(result.flows, ListFlows(c.port, c.groups));
        if (with_text) result.text = FormatFlowList(result.flows);
        return absl::OkStatus();
      },
      [&](const FlowQueryCmd& c) {
        absl::StatusOr<uint32_t> id = QueriedFlow(c);
        if (!id.ok()) return WithPos(id.status(), c.action_pos);
        if (c.what == FlowQueryCmd::What::kAge) {
          absl::StatusOr<AgeResult> age = QueryAge(c.port, *id);
          if (!age.ok()) return WithPos(age.status(), c.action_pos);
          result.age = *age;
          result.text = FormatAge("AGE", *age);
          return absl::OkStatus();
        }
        absl::StatusOr<CountResult> count = QueryCount(c.port, *id);
        if (!count.ok()) return WithPos(count.status(), c.action_pos);
        result.count = *count;
        result.text = FormatCount(*count);
        return absl::OkStatus();
      },
      [&](const FlowAgedCmd& c) {
        DRSIM_ASSIGN_OR_RETURN(AgedReport report, AgedFlows(c.port, c.destroy));
        result.text = FormatAged(c.port, report);
        result.destroyed = report.destroyed;
        result.aged = std::move(report);
        return absl::OkStatus();
      },
      [&](const IndirectActionCmd& c) {
        DRSIM_ASSIGN_OR_RETURN(result, RunIndirectAction(c));
        return absl::OkStatus();
      },
      [&](const SetRawCmd& c) {
        DRSIM_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, RawHeaderBytes(c.items));
        (c.decap ? context_->raw_decap : context_->raw_encap)[c.index] = std::move(bytes);
        return absl::OkStatus();
      },
      [&](const SetSampleActionsCmd& c) {
        context_->sample_actions[c.index] = c.actions;
        return absl::OkStatus();
      },
      [&](const SetTunnelCmd& c) {
        (c.kind == SetTunnelCmd::Kind::kVxlan ? context_->vxlan : context_->nvgre) = c;
        return absl::OkStatus();
      },
      [&](const SetConntrackCmd& c) {
        ConntrackProfile& p = context_->conntrack;
        switch (c.part) {
          case SetConntrackCmd::Part::kCommon: {
            const sim::CtDirection original = p.context.original, reply = p.context.reply;
            p = c.values;  // the common part; the directions keep theirs but take liberal from it
            p.context.original = original;
            p.context.reply = reply;
            p.context.original.liberal = p.context.reply.liberal = c.values.context.original.liberal;
            break;
          }
          case SetConntrackCmd::Part::kOriginal: {
            const bool liberal = p.context.original.liberal;
            p.context.original = c.values.context.original;
            p.context.original.liberal = liberal;
            break;
          }
          case SetConntrackCmd::Part::kReply: {
            const bool liberal = p.context.reply.liberal;
            p.context.reply = c.values.context.reply;
            p.context.reply.liberal = liberal;
            break;
          }
        }
        return absl::OkStatus();
      },
      [&](const AddMeterProfileCmd& c) {
        DRSIM_RETURN_IF_ERROR(context_->CheckPort(c.port));
        return context_->meters.AddProfile(c, command.pos);
      },
      [&](const AddMeterPolicyCmd& c) {
        DRSIM_RETURN_IF_ERROR(context_->CheckPort(c.port));
        return context_->meters.AddPolicy(c, command.pos);
      },
      [&](const CreateMeterCmd& c) {
        DRSIM_RETURN_IF_ERROR(context_->CheckPort(c.port));
        return context_->meters.CreateMeter(c, command.pos);
      },
      [&](const MeterObjectCmd& c) {
        DRSIM_RETURN_IF_ERROR(context_->CheckPort(c.port));
        return context_->meters.Apply(c, command.pos);
      },
  };
  if (absl::Status s = std::visit(run, command.body); !s.ok()) return WithPos(s, command.pos);
  // Flow commands record themselves (the typed calls do); set and meter commands are recorded here.
  const bool flow_command = std::holds_alternative<FlowValidateCmd>(command.body) ||
                            std::holds_alternative<FlowCreateCmd>(command.body) ||
                            std::holds_alternative<FlowDestroyCmd>(command.body) ||
                            std::holds_alternative<FlowFlushCmd>(command.body) ||
                            std::holds_alternative<FlowListCmd>(command.body) ||
                            std::holds_alternative<FlowQueryCmd>(command.body) ||
                            std::holds_alternative<FlowAgedCmd>(command.body);
  const bool indirect_query = std::holds_alternative<IndirectActionCmd>(command.body) &&
                              std::get<IndirectActionCmd>(command.body).op == IndirectActionCmd::Op::kQuery;
  if (!flow_command && !indirect_query) Record(command);
  return result;
}

}  // namespace drsim::testpmd
