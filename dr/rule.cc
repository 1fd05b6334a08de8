#include <array>
#include <mutex>
#include <new>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_format.h"
#include "dr/dr.h"
#include "dr/objects.h"

namespace drsim::dr {

using internal::ActionObj;
using internal::MatcherObj;
using internal::RuleObj;

namespace {

// The programs `matcher` offers, if compiled from the same actions in the same context (the matcher fixes
// all of it but the pipes skipped); otherwise nullptr.
internal::ProgramsObj* CachedPrograms(const MatcherObj& matcher, const actions::RuleContext& context,
                                      absl::Span<ActionObj* const> actions) {
  internal::ProgramsObj* cached = matcher.last_compiled;
  if (cached == nullptr || cached->skip_rx != context.skip_rx || cached->skip_tx != context.skip_tx ||
      cached->actions.size() != actions.size()) {
    return nullptr;
  }
  for (size_t i = 0; i < actions.size(); ++i) {
    // (The cached pointer is only compared: its action may be gone, the given one is alive.)
    if (actions[i] != cached->actions[i] ||
        std::make_pair(actions[i]->id, actions[i]->revision) != cached->action_versions[i]) {
      return nullptr;
    }
  }
  return cached;
}

}  // namespace

absl::StatusOr<Rule> Rule::Create(const Matcher& matcher, const mlx5dv_flow_match_parameters* value,
                                  absl::Span<const Action* const> actions) {
  MatcherObj* m = matcher.obj();
  if (m == nullptr) return absl::InvalidArgumentError("matcher handle is empty");
  internal::TableObj* t = m->table;
  internal::DomainObj* d = t->domain.get();
  // The caller's matcher handle keeps the domain alive, and nothing here can free an object: the lock alone
  // will do (DomainLock would also hold a reference on the domain, two more atomic operations per rule).
  std::lock_guard<std::recursive_mutex> lock(d->mu);

  hw::CompiledMatcher& hwm = m->hw;
  uint32_t key[hw::kMatchParamBytes / 4];  // a definer's key is at most the whole layout
  // FDB rules on source_port live in one pipe: the wire's (0xffff) in RX, any vport's in TX.
  const bool by_source_port = d->type == MLX5DV_DR_DOMAIN_TYPE_FDB &&
                              hw::GetField(m->compiled.mask.data(), hw::Field::kSourcePort) != 0;
  uint8_t normalized[hw::kMatchParamBytes];
  if (absl::Status s = matcher::BuildRuleKey(m->compiled, value, key, by_source_port ? normalized : nullptr);
      !s.ok()) {
    return s;
  }
  // The key's bucket loads while the actions are checked and matched against the cached ones (or compiled).
  const uint64_t hash = hwm.table.Hash(key);
  hwm.table.Prefetch(hash);

  absl::InlinedVector<ActionObj*, 8> objs;
  for (size_t i = 0; i < actions.size(); ++i) {
    if (actions[i] == nullptr || !actions[i]->valid()) {
      return absl::InvalidArgumentError(absl::StrFormat("action[%d] is null or an empty handle", i));
    }
    objs.push_back(actions[i]->obj());
  }
  actions::RuleContext context;
  context.domain_type = d->type;
  context.domain = d;
  context.device = d->device;
  context.root_table = t->ft.level == 0;
  context.table_level = t->ft.level;
  if (by_source_port) {
    const bool wire = hw::GetField(normalized, hw::Field::kSourcePort) == hw::kWireVport;
    context.skip_rx = !wire;
    context.skip_tx = wire;
  }
  internal::ProgramsObj* programs = CachedPrograms(*m, context, objs);
  std::unique_ptr<internal::ProgramsObj> compiled;  // new programs, until a rule uses them
  if (programs == nullptr) {  // (most rules of a matcher take the same actions: their specs are read once)
    absl::InlinedVector<const actions::ActionSpec*, 8> specs;
    for (const ActionObj* a : objs) specs.push_back(&a->spec);
    absl::StatusOr<hw::PipePrograms> result = actions::CompileActions(context, specs);
    if (!result.ok()) return result.status();
    compiled = std::make_unique<internal::ProgramsObj>();
    compiled->programs = std::move(*result);
    compiled->record = hw::RuleRecord::Of(&compiled->programs, 0);
    compiled->actions.assign(objs.begin(), objs.end());
    for (const ActionObj* a : objs) compiled->action_versions.emplace_back(a->id, a->revision);
    compiled->skip_rx = context.skip_rx;
    compiled->skip_tx = context.skip_tx;
    programs = compiled.get();
  }

  if (!d->allow_duplicates && t->ft.level != 0) {
    if (const hw::RuleRecord* existing = hwm.table.Find(key, hash)) {
      return absl::AlreadyExistsError(absl::StrFormat(
          "rule value duplicates rule %d of matcher %d (duplicate rules are disabled in this domain)",
          existing->rule_id, hwm.id));
    }
  }

  auto* rule = new (d->rule_pool.Allocate()) RuleObj;
  rule->matcher = m;
  rule->id = internal::NextObjectId();
  internal::UsePrograms(programs, rule);
  if (compiled != nullptr) internal::CachePrograms(m, compiled.release());
  hw::RuleRecord record = programs->record;
  record.rule_id = rule->id;
  rule->entry = hwm.table.Insert(key, hash, record);
  rule->prev_in_matcher = m->last_rule;
  (m->last_rule ? m->last_rule->next_in_matcher : m->first_rule) = rule;
  m->last_rule = rule;
  ++m->rule_count;
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
