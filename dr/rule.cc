#include <algorithm>
#include <array>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_format.h"
#include "dr/dr.h"
#include "dr/objects.h"

namespace drsim::dr {

using internal::ActionObj;
using internal::DomainObj;
using internal::MatcherObj;
using internal::ProgramsObj;
using internal::RuleObj;

namespace {

// Whether `cached` (or nullptr) were compiled from `actions` in `context`'s pipes (the table fixes the rest
// of the context).
bool CompiledFrom(const ProgramsObj* cached, const actions::RuleContext& context,
                  absl::Span<ActionObj* const> actions) {
  if (cached == nullptr || cached->skip_rx != context.skip_rx || cached->skip_tx != context.skip_tx ||
      cached->actions.size() != actions.size()) {
    return false;
  }
  for (size_t i = 0; i < actions.size(); ++i) {
    // (The cached pointer is only compared: its action may be gone, the given one is alive.)
    if (actions[i] != cached->actions[i] ||
        std::make_pair(actions[i]->id, actions[i]->revision) != cached->action_versions[i]) {
      return false;
    }
  }
  return true;
}

// The programs `matcher` or else its table offers, if compiled from the same actions in the same pipes;
// otherwise nullptr.
ProgramsObj* CachedPrograms(const MatcherObj& matcher, const actions::RuleContext& context,
                            absl::Span<ActionObj* const> actions) {
  if (CompiledFrom(matcher.last_compiled, context, actions)) return matcher.last_compiled;
  if (CompiledFrom(matcher.table->last_compiled, context, actions)) return matcher.table->last_compiled;
  return nullptr;
}

// The FDB pipes a rule is not in: none, or one by the source_port it matches (the wire's rules live in RX
// only, a vport's in TX only). An index into a call's programs.
enum Pipes : uint8_t { kBothPipes, kRxOnly, kTxOnly, kPipeChoices };

// A rule's value, read under its matcher's mask: its key's hash and the pipes it is in (the key itself is
// written where the caller says).
struct ValueKey {
  uint64_t hash;
  Pipes pipes;
};

// Checks `value` against `m`'s mask and writes its key (m.hw.table.key_words() words) to `key`; errors as
// Rule::Create lists them for the value. (Inlined, as the other steps of an insert below: called, they cost
// a rule a sixth more instructions.)
ABSL_ATTRIBUTE_ALWAYS_INLINE inline absl::StatusOr<ValueKey> ReadValue(
    const MatcherObj& m, const DomainObj& d, const mlx5dv_flow_match_parameters* value, uint32_t* key) {
  const bool by_source_port = d.type == MLX5DV_DR_DOMAIN_TYPE_FDB &&
                              hw::GetField(m.compiled.mask.data(), hw::Field::kSourcePort) != 0;
  uint8_t normalized[hw::kMatchParamBytes];
  if (absl::Status s = matcher::BuildRuleKey(m.compiled, value, key, by_source_port ? normalized : nullptr);
      !s.ok()) {
    return s;
  }
  Pipes pipes = kBothPipes;
  if (by_source_port) {
    pipes = hw::GetField(normalized, hw::Field::kSourcePort) == hw::kWireVport ? kRxOnly : kTxOnly;
  }
  return ValueKey{m.hw.table.Hash(key), pipes};
}

// The objects behind `actions`; InvalidArgument names the first null or empty handle.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline absl::Status ActionObjects(absl::Span<const Action* const> actions,
                                                               absl::InlinedVector<ActionObj*, 8>* objs) {
  for (size_t i = 0; i < actions.size(); ++i) {
    if (actions[i] == nullptr || !actions[i]->valid()) {
      return absl::InvalidArgumentError(absl::StrFormat("action[%d] is null or an empty handle", i));
    }
    objs->push_back(actions[i]->obj());
  }
  return absl::OkStatus();
}

// New programs of `objs` in `context`, left in `*compiled` (which owns them until Install's caller caches
// them); errors name the action.
absl::StatusOr<ProgramsObj*> CompilePrograms(const actions::RuleContext& context,
                                             absl::Span<ActionObj* const> objs,
                                             std::unique_ptr<ProgramsObj>* compiled) {
  absl::InlinedVector<const actions::ActionSpec*, 8> specs;
  for (const ActionObj* a : objs) specs.push_back(&a->spec);
  absl::StatusOr<hw::PipePrograms> result = actions::CompileActions(context, specs);
  if (!result.ok()) return result.status();
  *compiled = std::make_unique<ProgramsObj>();
  ProgramsObj& p = **compiled;
  p.programs = std::move(*result);
  p.record = hw::RuleRecord::Of(&p.programs, 0);
  p.actions.assign(objs.begin(), objs.end());
  for (const ActionObj* a : objs) p.action_versions.emplace_back(a->id, a->revision);
  p.skip_rx = context.skip_rx;
  p.skip_tx = context.skip_tx;
  return &p;
}

// The programs of `objs` for rules of `m` in `pipes`: the matcher's cached ones, else new ones
// (CompilePrograms). Most rules of a matcher take the same actions: their specs are read only when they are
// compiled.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline absl::StatusOr<ProgramsObj*> ProgramsFor(
    const MatcherObj& m, const DomainObj& d, Pipes pipes, absl::Span<ActionObj* const> objs,
    std::unique_ptr<ProgramsObj>* compiled) {
  actions::RuleContext context;
  context.domain_type = d.type;
  context.domain = &d;
  context.device = d.device;
  context.root_table = m.table->ft.level == 0;
  context.table_level = m.table->ft.level;
  context.skip_rx = pipes == kTxOnly;
  context.skip_tx = pipes == kRxOnly;
  if (ProgramsObj* cached = CachedPrograms(m, context, objs)) return cached;
  return CompilePrograms(context, objs, compiled);
}

// Whether `m`'s rules must have distinct values: the domain refuses duplicates, and the table is not a
// root table (rdma-core leaves those to the kernel, which accepts them).
bool RefusesDuplicates(const MatcherObj& m) {
  return !m.table->domain->allow_duplicates && m.table->ft.level != 0;
}

// AlreadyExists naming the rule of `m` that holds `key` (hashed `hash`) already, if one does; else OK.
absl::Status NotInstalled(const MatcherObj& m, const uint32_t* key, uint64_t hash) {
  const hw::RuleRecord* existing = m.hw.table.FindForWriter(key, hash);
  if (existing == nullptr) return absl::OkStatus();
  return absl::AlreadyExistsError(absl::StrFormat(
      "rule value duplicates rule %d of matcher %d (duplicate rules are disabled in this domain)",
      existing->rule_id, m.hw.id));
}

// `s`, about value `i` of a CreateMany call, saying so first.
absl::Status AtValue(size_t i, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrFormat("value[%d]: %s", i, s.message()));
}

// Makes the rule of `key` (hashed `hash`) running `programs` the newest rule of `m`, and lookups see it.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline RuleObj* Install(MatcherObj* m, const uint32_t* key, uint64_t hash,
                                                     ProgramsObj* programs) {
  auto* rule = new (m->table->domain->rule_pool.Allocate()) RuleObj;
  rule->matcher = m;
  rule->key_hash = static_cast<uint32_t>(hash);
  internal::UsePrograms(programs, rule);
  hw::RuleRecord record = programs->record;
  record.rule_id = internal::NextObjectId();
  // Into the index first: a packet finding the rule finds its matcher. Then the index may name it as the
  // hit of its entry.
  hw::TableIndex::MatcherState* indexed = m->index_state.get();
  rule->index_item = indexed != nullptr ? m->table->index->AddRule(indexed, key) : nullptr;
  rule->entry = m->hw.table.Insert(key, hash, record, rule);
  if (indexed != nullptr) m->table->index->NameHit(indexed, rule->index_item, m->hw.table.rule(rule->entry));
  ++m->rule_count;
  ++m->refs;
  // (With the rule in its matcher's table, which a new index is built from.)
  if (m->index_state != nullptr && m->table->index->Stale()) internal::BuildIndex(m->table);
  return rule;
}

}  // namespace

absl::StatusOr<Rule> Rule::Create(const Matcher& matcher, const mlx5dv_flow_match_parameters* value,
                                  absl::Span<const Action* const> actions) {
  MatcherObj* m = matcher.obj();
  if (m == nullptr) return absl::InvalidArgumentError("matcher handle is empty");
  DomainObj* d = m->table->domain.get();
  // The caller's matcher handle keeps the domain alive, and nothing here can free an object: the lock alone
  // will do (DomainLock would also hold a reference on the domain, two more atomic operations per rule).
  std::lock_guard<std::recursive_mutex> lock(d->mu);

  uint32_t key[hw::kMatchParamBytes / 4];  // a definer's key is at most the whole layout
  absl::StatusOr<ValueKey> read = ReadValue(*m, *d, value, key);
  if (!read.ok()) return read.status();
  // The key's bucket loads while the actions are checked and matched against the cached ones (or compiled).
  m->hw.table.PrefetchForWrite(read->hash);

  absl::InlinedVector<ActionObj*, 8> objs;
  if (absl::Status s = ActionObjects(actions, &objs); !s.ok()) return s;
  std::unique_ptr<ProgramsObj> compiled;  // new programs, until the rule uses them
  absl::StatusOr<ProgramsObj*> programs = ProgramsFor(*m, *d, read->pipes, objs, &compiled);
  if (!programs.ok()) return programs.status();

  if (RefusesDuplicates(*m)) {
    if (absl::Status s = NotInstalled(*m, key, read->hash); !s.ok()) return s;
  }
  RuleObj* rule = Install(m, key, read->hash, *programs);
  if (compiled != nullptr) internal::CachePrograms(m, compiled.release());
  return Rule(rule);
}

absl::Status Rule::CreateMany(const Matcher& matcher,
                              absl::Span<const mlx5dv_flow_match_parameters* const> values,
                              absl::Span<const Action* const> actions, absl::Span<Rule> rules) {
  MatcherObj* m = matcher.obj();
  if (m == nullptr) return absl::InvalidArgumentError("matcher handle is empty");
  DomainObj* d = m->table->domain.get();
  if (rules.size() != values.size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%d rule handles for %d values: pass one per value", rules.size(), values.size()));
  }
  // (Releasing a handle may destroy its rule, which takes locks of its own: not under this domain's lock.)
  for (size_t i = 0; i < rules.size(); ++i) {
    if (rules[i].valid()) return absl::InvalidArgumentError(absl::StrFormat("rules[%d] is not empty", i));
  }
  std::lock_guard<std::recursive_mutex> lock(d->mu);

  // Every value is read and checked before any rule goes in: a bad one installs none. Keys are not kept
  // from this pass: a million of them would be fresh memory to fault in, dearer than reading them again.
  const size_t n = values.size();
  const size_t words = m->hw.table.key_words();
  std::array<size_t, kPipeChoices> first_in{n, n, n};  // the first value in each pipe choice
  for (size_t i = 0; i < n; ++i) {
    uint32_t key[hw::kMatchParamBytes / 4];
    absl::StatusOr<ValueKey> read = ReadValue(*m, *d, values[i], key);
    if (!read.ok()) return AtValue(i, read.status());
    if (first_in[read->pipes] == n) first_in[read->pipes] = i;
  }

  absl::InlinedVector<ActionObj*, 8> objs;
  if (absl::Status s = ActionObjects(actions, &objs); !s.ok()) return s;
  std::array<ProgramsObj*, kPipeChoices> programs{};
  std::array<std::unique_ptr<ProgramsObj>, kPipeChoices> compiled;  // new programs, until rules use them
  // The pipe choices in the order of their first values, so that a failure names the first value it fails.
  std::array<int, kPipeChoices> by_first{kBothPipes, kRxOnly, kTxOnly};
  std::sort(by_first.begin(), by_first.end(), [&](int a, int b) { return first_in[a] < first_in[b]; });
  for (const int p : by_first) {
    if (first_in[p] == n) continue;
    absl::StatusOr<ProgramsObj*> made = ProgramsFor(*m, *d, static_cast<Pipes>(p), objs, &compiled[p]);
    if (!made.ok()) return AtValue(first_in[p], made.status());
    programs[p] = *made;
  }

  if (RefusesDuplicates(*m)) {
    // The call's values by their keys' hashes (a key is read again when its hash recurs).
    absl::flat_hash_map<uint64_t, size_t> first_with_hash;
    for (size_t i = 0; i < n; ++i) {
      uint32_t key[hw::kMatchParamBytes / 4];
      const ValueKey read = *ReadValue(*m, *d, values[i], key);
      if (absl::Status s = NotInstalled(*m, key, read.hash); !s.ok()) return AtValue(i, s);
      const auto [at, added] = first_with_hash.try_emplace(read.hash, i);
      if (added) continue;
      for (size_t j = at->second; j < i; ++j) {  // the earlier values with this hash
        uint32_t earlier[hw::kMatchParamBytes / 4];
        if (ReadValue(*m, *d, values[j], earlier)->hash == read.hash &&
            std::equal(key, key + words, earlier)) {
          return absl::AlreadyExistsError(absl::StrFormat(
              "value[%d] duplicates value[%d] of the same call (duplicate rules are disabled in this domain)",
              i, j));
        }
      }
    }
  }

  // The keys are read again a few rules ahead of their inserts, into a ring, and their buckets requested
  // then: each bucket's load overlaps the inserts before it instead of stalling its own.
  constexpr size_t kAhead = 8;
  std::array<std::array<uint32_t, hw::kMatchParamBytes / 4>, kAhead> ring;
  std::array<ValueKey, kAhead> ring_read;
  auto read_ahead = [&](size_t i) {
    ring_read[i % kAhead] = *ReadValue(*m, *d, values[i], ring[i % kAhead].data());
    m->hw.table.PrefetchForWrite(ring_read[i % kAhead].hash);
  };
  for (size_t i = 0; i < std::min(n, kAhead); ++i) read_ahead(i);
  for (size_t i = 0; i < n; ++i) {
    const ValueKey read = ring_read[i % kAhead];
    rules[i] = Rule(Install(m, ring[i % kAhead].data(), read.hash, programs[read.pipes]));
    if (i + kAhead < n) read_ahead(i + kAhead);
  }
  for (std::unique_ptr<ProgramsObj>& p : compiled) {
    if (p != nullptr) internal::CachePrograms(m, p.release());
  }
  return absl::OkStatus();
}

absl::Status Rule::Destroy() {
  if (handle_.get() == nullptr) return absl::InvalidArgumentError("rule handle is empty");
  handle_.Reset();
  return absl::OkStatus();
}

uint32_t Rule::id() const { return handle_.get() ? internal::RuleId(*handle_.get()) : 0; }

}  // namespace drsim::dr
