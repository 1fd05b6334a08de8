#include <array>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_format.h"
#include "dr/dr.h"
#include "dr/objects.h"

namespace drsim::dr {

using internal::ActionObj;
using internal::DomainLock;
using internal::MatcherObj;
using internal::RuleObj;

namespace {

// The programs `matcher` last compiled, if they were compiled from the same actions in the same context
// (the matcher fixes all of it but the pipes skipped); otherwise nullptr. An action's id is never reused,
// unlike its address, so a match means the very same action objects.
std::shared_ptr<const hw::PipePrograms> SharedPrograms(const MatcherObj& matcher,
                                                       const actions::RuleContext& context,
                                                       absl::Span<ActionObj* const> actions) {
  const auto& last = matcher.last_compiled;
  if (last.programs == nullptr || last.skip_rx != context.skip_rx || last.skip_tx != context.skip_tx ||
      last.action_ids.size() != actions.size()) {
    return nullptr;
  }
  for (size_t i = 0; i < actions.size(); ++i) {
    if (actions[i]->id != last.action_ids[i]) return nullptr;
  }
  return last.programs;
}

}  // namespace

absl::StatusOr<Rule> Rule::Create(const Matcher& matcher, const mlx5dv_flow_match_parameters* value,
                                  absl::Span<const Action* const> actions) {
  MatcherObj* m = matcher.obj();
  if (m == nullptr) return absl::InvalidArgumentError("matcher handle is empty");
  internal::TableObj* t = m->table;
  DomainLock lock(t->domain);
  internal::DomainObj* d = t->domain.get();

  hw::CompiledMatcher& hwm = *m->hw;
  uint32_t key[hw::kMatchParamBytes / 4];  // a definer's key is at most the whole layout
  uint8_t normalized[hw::kMatchParamBytes];
  if (absl::Status s = matcher::BuildRuleKey(m->compiled, value, key, normalized); !s.ok()) return s;

  absl::InlinedVector<const actions::ActionSpec*, 8> specs;
  absl::InlinedVector<ActionObj*, 8> objs;
  for (size_t i = 0; i < actions.size(); ++i) {
    if (actions[i] == nullptr || !actions[i]->valid()) {
      return absl::InvalidArgumentError(absl::StrFormat("action[%d] is null or an empty handle", i));
    }
    objs.push_back(actions[i]->obj());
    specs.push_back(&objs.back()->spec);
  }
  actions::RuleContext context;
  context.domain_type = d->type;
  context.domain = d;
  context.device = d->device;
  context.root_table = t->ft.level == 0;
  context.table_level = t->ft.level;
  // FDB rules on source_port live in one pipe: the wire's (0xffff) in RX, any vport's in TX.
  if (d->type == MLX5DV_DR_DOMAIN_TYPE_FDB &&
      hw::GetField(m->compiled.mask.data(), hw::Field::kSourcePort) != 0) {
    const bool wire = hw::GetField(normalized, hw::Field::kSourcePort) == hw::kWireVport;
    context.skip_rx = !wire;
    context.skip_tx = wire;
  }
  const uint64_t hash = hwm.table.Hash(key);
  hwm.table.Prefetch(hash);  // loads while the actions compile
  std::shared_ptr<const hw::PipePrograms> programs = SharedPrograms(*m, context, objs);
  if (programs == nullptr) {
    absl::StatusOr<hw::PipePrograms> compiled = actions::CompileActions(context, specs);
    if (!compiled.ok()) return compiled.status();
    programs = std::make_shared<const hw::PipePrograms>(std::move(*compiled));
    m->last_compiled.action_ids.clear();
    for (const ActionObj* a : objs) m->last_compiled.action_ids.push_back(a->id);
    m->last_compiled.skip_rx = context.skip_rx;
    m->last_compiled.skip_tx = context.skip_tx;
    m->last_compiled.programs = programs;
  }

  if (!d->allow_duplicates && t->ft.level != 0) {
    if (const hw::RuleRecord* existing = hwm.table.Find(key, hash)) {
      return absl::AlreadyExistsError(absl::StrFormat(
          "rule value duplicates rule %d of matcher %d (duplicate rules are disabled in this domain)",
          existing->rule_id, hwm.id));
    }
  }

  auto* rule = new RuleObj;
  rule->matcher = m;
  rule->id = internal::NextObjectId();
  rule->programs = std::move(programs);
  rule->entry = hwm.table.Insert(key, hash, hw::RuleRecord{rule->programs.get(), rule->id});
  rule->skip_rx = context.skip_rx;
  rule->skip_tx = context.skip_tx;
  rule->prev_in_matcher = m->last_rule;
  (m->last_rule ? m->last_rule->next_in_matcher : m->first_rule) = rule;
  m->last_rule = rule;
  ++m->rule_count;
  rule->actions.assign(objs.begin(), objs.end());
  for (ActionObj* a : rule->actions) a->refs.fetch_add(1, std::memory_order_relaxed);
  ++m->refs;
  return Rule(rule);
}

absl::Status Rule::Destroy() {
  if (handle_.get() == nullptr) return absl::InvalidArgumentError("rule handle is empty");
  handle_.Reset();
  return absl::OkStatus();
}

uint32_t Rule::id() const { return handle_.get() ? handle_.get()->id : 0; }

}  // namespace drsim::dr
