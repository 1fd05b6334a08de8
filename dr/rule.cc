#include <algorithm>
#include <array>
#include <cstddef>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/cleanup/cleanup.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
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
    if (static_cast<int>(i) == cached->tag_at) {
      if (!internal::IsOwnTag(actions[i])) return false;
      continue;
    }
    // (The cached pointer is only compared: its action may be gone, the given one is alive.)
    if (actions[i] != cached->actions[i] ||
        std::make_pair(actions[i]->id, actions[i]->revision) != cached->action_versions[i]) {
      return false;
    }
  }
  return true;
}

// The programs `matcher` or else its table offers, or else a live rule of the table uses, if compiled from
// the same actions in the same pipes; otherwise nullptr.
ProgramsObj* CachedPrograms(const MatcherObj& matcher, const actions::RuleContext& context,
                            absl::Span<ActionObj* const> actions) {
  if (CompiledFrom(matcher.last_compiled, context, actions)) return matcher.last_compiled;
  if (CompiledFrom(matcher.table->last_compiled, context, actions)) return matcher.table->last_compiled;
  const auto& listed = matcher.table->programs_by_actions;
  if (listed.empty()) return nullptr;
  auto found = listed.find(internal::ProgramsKey(actions, context.skip_rx, context.skip_tx));
  if (found != listed.end() && CompiledFrom(found->second, context, actions)) return found->second;
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
absl::StatusOr<ProgramsObj*> CompilePrograms(const DomainObj& d, const actions::RuleContext& context,
                                             absl::Span<ActionObj* const> objs,
                                             std::unique_ptr<ProgramsObj>* compiled) {
  absl::InlinedVector<const actions::ActionSpec*, 8> specs;
  // CT actions of another domain compile as the rule's domain's link to their object says.
  std::vector<actions::ActionSpec> linked;
  linked.reserve(objs.size());  // (specs point into it)
  for (const ActionObj* a : objs) {
    if (internal::IsLinkedCt(*a, d)) {
      linked.push_back(internal::LinkedCtSpec(*a, d));
      specs.push_back(&linked.back());
    } else {
      specs.push_back(&a->spec);
    }
  }
  DRSIM_ASSIGN_OR_RETURN(hw::PipePrograms result, actions::CompileActions(context, specs));
  *compiled = std::make_unique<ProgramsObj>();
  ProgramsObj& p = **compiled;
  if (!linked.empty()) {
    const int pipes = d.type == MLX5DV_DR_DOMAIN_TYPE_FDB && !context.skip_rx && !context.skip_tx ? 2 : 1;
    for (size_t i = 0; i < objs.size(); ++i) {
      if (!internal::IsLinkedCt(*objs[i], d)) continue;
      DRSIM_ASSIGN_OR_RETURN(internal::LinkedCtClaim claim, internal::ClaimLinkedCt(*objs[i], d, i, pipes));
      p.linked_ct_claims.push_back(std::move(claim));
    }
  }
  p.programs = std::move(result);
  p.record = hw::RuleRecord::Of(&p.programs, 0);
  p.actions.assign(objs.begin(), objs.end());
  for (const ActionObj* a : objs) p.action_versions.emplace_back(a->id, a->revision);
  // The tag is each rule's own: the programs read it from the rule's record, so that the next rule with
  // another tag action shares them. (The compiler takes one tag at most.)
  for (size_t i = 0; i < objs.size(); ++i) {
    if (!internal::IsOwnTag(objs[i])) continue;
    p.tag_at = static_cast<int>(i);
    p.actions[i] = nullptr;
    p.action_versions[i] = {0, 0};
    for (hw::ActionProgram& program : p.programs) {
      for (hw::Op& op : program.ops) {
        if (op.code == hw::OpCode::kTag) op = {hw::OpCode::kTagOfRule};
      }
    }
    break;
  }
  p.skip_rx = context.skip_rx;
  p.skip_tx = context.skip_tx;
  return &p;
}

// The tag action among `objs` whose tag `programs` take from each rule's record, or nullptr.
ActionObj* OwnTagOf(const ProgramsObj& programs, absl::Span<ActionObj* const> objs) {
  return programs.tag_at < 0 ? nullptr : objs[programs.tag_at];
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
  context.root_reformat = hw::RootTablesTakeReformat(d.type, d.device->eswitch_encap());
  context.table_level = m.table->ft.level;
  context.skip_rx = pipes == kTxOnly;
  context.skip_tx = pipes == kRxOnly;
  // (Programs holding linked CT contexts are never offered: they are never found here.)
  if (ProgramsObj* cached = CachedPrograms(m, context, objs)) return cached;
  return CompilePrograms(d, context, objs, compiled);
}

// Whether `m`'s rules must have distinct values: the domain refuses duplicates, and the table is not a
// root table (rdma-core leaves those to the kernel, which accepts them).
bool RefusesDuplicates(const MatcherObj& m) {
  return !m.table->domain->allow_duplicates && m.table->ft.level != 0;
}

// AlreadyExists: a rule value equals that of `existing`, a rule of `m`.
absl::Status Duplicates(const hw::RuleRecord& existing, const MatcherObj& m) {
  return absl::AlreadyExistsError(absl::StrFormat(
      "rule value duplicates rule %d of matcher %d (duplicate rules are disabled in this domain)",
      existing.rule_id, m.hw.id));
}

// AlreadyExists naming the rule of `m` that holds `key` (hashed `hash`) already, if one does; else OK.
absl::Status NotInstalled(const MatcherObj& m, const uint32_t* key, uint64_t hash) {
  const hw::RuleRecord* existing = m.hw.table.FindForWriter(key, hash);
  return existing == nullptr ? absl::OkStatus() : Duplicates(*existing, m);
}

// `s`, about item `i` of a call's `what` (its values, its updates), saying so first.
absl::Status At(const char* what, size_t i, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrFormat("%s[%d]: %s", what, i, s.message()));
}

// Makes the rule of `key` (hashed `hash`) running `programs` the newest rule of `m`, and lookups see it;
// `own_tag` is its tag action when the programs take the tag from the rule (OwnTagOf).
ABSL_ATTRIBUTE_ALWAYS_INLINE inline RuleObj* Install(MatcherObj* m, const uint32_t* key, uint64_t hash,
                                                     ProgramsObj* programs, ActionObj* own_tag) {
  auto* rule = new (m->table->domain->rule_pool.Allocate()) RuleObj;
  rule->matcher = m;
  rule->key_hash = static_cast<uint32_t>(hash);
  internal::UsePrograms(programs, own_tag, rule);
  hw::RuleRecord record = programs->record;
  record.rule_id = internal::NextObjectId();
  if (own_tag != nullptr) record.set_tag(own_tag->spec.tag);
  // Into the index first: a packet finding the rule finds its matcher. Then the index may name it as the
  // hit of its entry.
  hw::TableIndex::MatcherState* indexed = m->index_state.get();
  // A matcher without an index leaves the rule's bucket slot to a later insert (MatchTable::InsertQueued):
  // the bucket, requested by the caller, loads meanwhile. An index names the rule's record as the hit of its
  // entry at once.
  if (indexed == nullptr) {
    rule->entry = m->hw.table.InsertQueued(key, hash, record, rule);  // (index_item stays nullptr)
  } else {
    rule->index_item = m->table->index->AddRule(indexed, key);
    rule->entry = m->hw.table.Insert(key, hash, record, rule);
    m->table->index->NameHit(indexed, rule->index_item, m->hw.table.rule(rule->entry));
  }
  ++m->rule_count;
  ++m->refs;
  // (With the rule in its matcher's table, which a new index is built from.)
  if (m->index_state != nullptr && m->table->index->Stale()) internal::BuildIndex(m->table);
  return rule;
}

// What UpdateMany keeps of an update once checked: the rule it removes, their matcher, the programs the new
// rule runs (held for the call) and its own tag action (OwnTagOf), and its key's hash; the key is in the
// call's keys from `key_at`.
struct CheckedUpdate {
  RuleObj* old;
  MatcherObj* matcher;
  ProgramsObj* programs;
  ActionObj* own_tag;
  uint64_t hash;
  size_t key_at;
};

// The programs a call holds (internal::HoldPrograms), released when it ends.
class ProgramHolds {
 public:
  explicit ProgramHolds(const DomainObj& domain) : domain_(domain) {}
  ~ProgramHolds() {
    for (ProgramsObj* p : held_) internal::ReleasePrograms(domain_, p);
  }
  ProgramHolds(const ProgramHolds&) = delete;
  ProgramHolds& operator=(const ProgramHolds&) = delete;
  void Hold(ProgramsObj* programs) {
    if (!held_.empty() && held_.back() == programs) return;  // (updates in a row mostly share theirs)
    internal::HoldPrograms(programs);
    held_.push_back(programs);
  }

 private:
  const DomainObj& domain_;
  std::vector<ProgramsObj*> held_;
};

// Starts loading the lines of the `length` bytes (at least one) from `at`.
void RequestLines(const void* at, size_t length) {
  const uintptr_t first = reinterpret_cast<uintptr_t>(at) & ~uintptr_t{63};
  const uintptr_t last = reinterpret_cast<uintptr_t>(at) + length - 1;
  for (uintptr_t line = first; line <= last; line += 64)
    __builtin_prefetch(reinterpret_cast<const void*>(line));
}

// Starts loading what a rule insert or delete reads first of `m`: its own line and its match table's
// writer lines (MatcherObj's layout), and with `mask`, the line of its compiled mask's criteria.
void RequestMatcher(const MatcherObj& m, bool mask) {
  __builtin_prefetch(&m);
  RequestLines(&m.hw, 3 * 64);
  if (mask) __builtin_prefetch(&m.compiled);
}

// Starts loading the sections of `m`'s mask that `value` is checked against and keyed by, and the same of
// the value (its criteria line and the value's first line are in).
void RequestSections(const MatcherObj& m, const mlx5dv_flow_match_parameters* value) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(value->match_buf);
  for (uint32_t enabled = m.compiled.criteria; enabled != 0; enabled &= enabled - 1) {
    const size_t offset = hw::SectionOffset(static_cast<hw::Section>(__builtin_ctz(enabled)));
    RequestLines(m.compiled.mask.data() + offset, hw::kSectionBytes);
    if (offset < value->match_sz) RequestLines(bytes + offset, hw::kSectionBytes);
  }
}

// AlreadyExists naming the first update whose value, in a matcher refusing duplicates, equals that of a
// rule of the matcher the call leaves in place (duplicates installed while the domain allowed them count
// each), or that of an earlier update of the same matcher; else OK. `keys` holds the updates' new keys.
absl::Status DuplicateUpdate(absl::Span<const CheckedUpdate> checked, absl::Span<const uint32_t> keys) {
  using Updates = absl::InlinedVector<size_t, 1>;
  // The updates by their matcher and the hash of the key their rule leaves (its low half, as rules keep
  // it), and by their matcher and the hash of their new key.
  absl::flat_hash_map<std::pair<const MatcherObj*, uint32_t>, Updates> leaving;
  absl::flat_hash_map<std::pair<const MatcherObj*, uint64_t>, Updates> coming;
  for (size_t i = 0; i < checked.size(); ++i) {
    leaving[{checked[i].matcher, checked[i].old->key_hash}].push_back(i);
  }
  for (size_t i = 0; i < checked.size(); ++i) {
    const CheckedUpdate& c = checked[i];
    if (!RefusesDuplicates(*c.matcher)) continue;
    const hw::MatchTable& table = c.matcher->hw.table;
    const uint32_t* key = keys.data() + c.key_at;
    auto same_key = [&](const uint32_t* other) { return std::equal(key, key + table.key_words(), other); };
    if (size_t kept = table.CountForWriter(key, c.hash); kept > 0) {
      const hw::RuleRecord* oldest = table.FindForWriter(key, c.hash);
      bool oldest_leaves = false;
      if (auto it = leaving.find({c.matcher, static_cast<uint32_t>(c.hash)}); it != leaving.end()) {
        for (const size_t j : it->second) {
          const hw::MatchTable::Handle entry = checked[j].old->entry;
          if (!same_key(table.key(entry))) continue;
          --kept;
          oldest_leaves |= table.rule(entry) == oldest;
        }
      }
      if (kept > 0 && !oldest_leaves) return At("update", i, Duplicates(*oldest, *c.matcher));
      if (kept > 0) {
        return absl::AlreadyExistsError(absl::StrFormat(
            "update[%d]: rule value duplicates a rule of matcher %d that the call keeps (duplicate rules are "
            "disabled in this domain)",
            i, c.matcher->hw.id));
      }
    }
    Updates& earlier = coming[{c.matcher, c.hash}];
    for (const size_t j : earlier) {
      if (same_key(keys.data() + checked[j].key_at)) {
        return absl::AlreadyExistsError(absl::StrFormat(
            "update[%d]: rule value duplicates update[%d]'s, of the same matcher (duplicate rules are "
            "disabled in this domain)",
            i, j));
      }
    }
    earlier.push_back(i);
  }
  return absl::OkStatus();
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
  DRSIM_ASSIGN_OR_RETURN(ValueKey read, ReadValue(*m, *d, value, key));
  // The key's bucket loads while the actions are checked and matched against the cached ones (or compiled).
  m->hw.table.PrefetchForWrite(read.hash);

  absl::InlinedVector<ActionObj*, 8> objs;
  DRSIM_RETURN_IF_ERROR(ActionObjects(actions, &objs));
  std::unique_ptr<ProgramsObj> compiled;  // new programs, until the rule uses them
  DRSIM_ASSIGN_OR_RETURN(ProgramsObj * programs, ProgramsFor(*m, *d, read.pipes, objs, &compiled));

  if (RefusesDuplicates(*m)) {
    DRSIM_RETURN_IF_ERROR(NotInstalled(*m, key, read.hash));
  }
  RuleObj* rule = Install(m, key, read.hash, programs, OwnTagOf(*programs, objs));
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
  std::array<size_t, kPipeChoices> first_in{n, n, n};   // the first value in each pipe choice
  std::array<size_t, kPipeChoices> second_in{n, n, n};  // and the second
  for (size_t i = 0; i < n; ++i) {
    uint32_t key[hw::kMatchParamBytes / 4];
    absl::StatusOr<ValueKey> read = ReadValue(*m, *d, values[i], key);
    if (!read.ok()) return At("value", i, read.status());
    if (first_in[read->pipes] == n) {
      first_in[read->pipes] = i;
    } else if (second_in[read->pipes] == n) {
      second_in[read->pipes] = i;
    }
  }

  absl::InlinedVector<ActionObj*, 8> objs;
  DRSIM_RETURN_IF_ERROR(ActionObjects(actions, &objs));
  std::array<ProgramsObj*, kPipeChoices> programs{};
  std::array<std::unique_ptr<ProgramsObj>, kPipeChoices> compiled;  // new programs, until rules use them
  // The pipe choices in the order of their first values, so that a failure names the first value it fails.
  std::array<int, kPipeChoices> by_first{kBothPipes, kRxOnly, kTxOnly};
  std::sort(by_first.begin(), by_first.end(), [&](int a, int b) { return first_in[a] < first_in[b]; });
  for (const int p : by_first) {
    if (first_in[p] == n) continue;
    absl::StatusOr<ProgramsObj*> made = ProgramsFor(*m, *d, static_cast<Pipes>(p), objs, &compiled[p]);
    if (!made.ok()) return At("value", first_in[p], made.status());
    programs[p] = *made;
    if (!programs[p]->linked_ct_claims.empty() && second_in[p] != n) {
      return At("value", second_in[p],
                absl::FailedPreconditionError(absl::StrFormat(
                    "the actions reach a CT context through a link, which serves one rule per context, "
                    "and value[%d] takes it",
                    first_in[p])));
    }
  }

  if (RefusesDuplicates(*m)) {
    // The call's values by their keys' hashes (a key is read again when its hash recurs).
    absl::flat_hash_map<uint64_t, size_t> first_with_hash;
    for (size_t i = 0; i < n; ++i) {
      uint32_t key[hw::kMatchParamBytes / 4];
      const ValueKey read = *ReadValue(*m, *d, values[i], key);
      if (absl::Status s = NotInstalled(*m, key, read.hash); !s.ok()) return At("value", i, s);
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
    ProgramsObj* p = programs[read.pipes];
    rules[i] = Rule(Install(m, ring[i % kAhead].data(), read.hash, p, OwnTagOf(*p, objs)));
    if (i + kAhead < n) read_ahead(i + kAhead);
  }
  for (std::unique_ptr<ProgramsObj>& p : compiled) {
    if (p != nullptr) internal::CachePrograms(m, p.release());
  }
  return absl::OkStatus();
}

absl::Status Rule::UpdateMany(absl::Span<const Update> updates) {
  const size_t n = updates.size();
  for (size_t i = 0; i < n; ++i) {
    if (updates[i].rule == nullptr || !updates[i].rule->valid()) {
      return absl::InvalidArgumentError(absl::StrFormat("update[%d]: rule is null or an empty handle", i));
    }
    __builtin_prefetch(updates[i].rule->obj());  // (all of them load together)
  }
  if (n == 0) return absl::OkStatus();
  // Then each rule's matcher. This reads the rules the first loop requested: one whose line is not in yet
  // is waited for here, together with the others, rather than alone in the checks.
  for (size_t i = 0; i < n; ++i) __builtin_prefetch(updates[i].rule->obj()->matcher);
  DomainObj* d = updates[0].rule->obj()->matcher->table->domain.get();
  std::lock_guard<std::recursive_mutex> lock(d->mu);

  // Each update is checked, its key kept and its programs chosen (compiled if need be, then offered by its
  // matcher, so that the next updates with the same actions share them) and held. The lines a check reads
  // are requested ahead, each once the line its address comes from is in: the rules first (all at once),
  // then 2 * kCheckAhead updates ahead the rule's matcher and value, and kCheckAhead ahead the sections of
  // both that the key reads.
  constexpr size_t kCheckAhead = 4;
  std::vector<CheckedUpdate> checked(n);
  std::vector<uint32_t> keys;
  ProgramHolds holds(*d);
  absl::flat_hash_map<const RuleObj*, size_t> update_of;  // each rule's first update
  update_of.reserve(n);
  size_t twice = n, first = n;  // the first update naming the rule of an earlier one, and that one
  auto request_matcher = [&](size_t i) {
    RequestMatcher(*updates[i].rule->obj()->matcher, true);
    __builtin_prefetch(updates[i].value);
  };
  auto request_check = [&](size_t i) {
    if (i + 2 * kCheckAhead < n) request_matcher(i + 2 * kCheckAhead);
    if (i + kCheckAhead < n && updates[i + kCheckAhead].value != nullptr) {
      RequestSections(*updates[i + kCheckAhead].rule->obj()->matcher, updates[i + kCheckAhead].value);
    }
  };
  for (size_t i = 0; i < std::min(n, 2 * kCheckAhead); ++i) request_matcher(i);
  for (size_t i = 0; i < n; ++i) {
    request_check(i);
    RuleObj* old = updates[i].rule->obj();
    MatcherObj* m = old->matcher;
    if (m->table->domain.get() != d) {
      return absl::InvalidArgumentError(
          absl::StrFormat("update[%d]: the rule is of another domain than update[0]'s", i));
    }
    if (const auto [at, added] = update_of.try_emplace(old, i); !added && twice == n) {
      twice = i;
      first = at->second;
    }
    const size_t key_at = keys.size();
    keys.resize(key_at + m->hw.table.key_words());
    absl::StatusOr<ValueKey> read = ReadValue(*m, *d, updates[i].value, keys.data() + key_at);
    if (!read.ok()) return At("update", i, read.status());
    absl::InlinedVector<ActionObj*, 8> objs;
    if (absl::Status s = ActionObjects(updates[i].actions, &objs); !s.ok()) return At("update", i, s);
    std::unique_ptr<ProgramsObj> compiled;
    absl::StatusOr<ProgramsObj*> programs = ProgramsFor(*m, *d, read->pipes, objs, &compiled);
    if (!programs.ok()) return At("update", i, programs.status());
    // (Offered at once, so that the next updates with the same actions share them: should a later check
    // fail, the call changes no rule, but the matcher may offer these programs to its next ones.)
    if (compiled != nullptr) internal::CachePrograms(m, compiled.release());
    holds.Hold(*programs);
    checked[i] = {old, m, *programs, OwnTagOf(**programs, objs), read->hash, key_at};
  }
  if (twice < n) {
    return absl::InvalidArgumentError(
        absl::StrFormat("update[%d]: the rule is update[%d]'s too", twice, first));
  }
  if (!d->allow_duplicates) {
    DRSIM_RETURN_IF_ERROR(DuplicateUpdate(checked, keys));
  }

  // The changes, each a rule's delete and then its new rule's insert. What each reads is requested ahead, in
  // stages a turn (an update) apart, each reading only lines the stage before requested: kChangeAhead
  // updates ahead, the rule and its matcher; a turn later, what they point to (the rule's record,
  // bookkeeping, bucket and index item, the new key's bucket and the matcher's index state); then the item's
  // entry and node, and the new values' pair slot (StartFiling); each turn after, a node further down the
  // tries to where the new entry goes (ContinueFiling), and the turn before the update, what pruning the
  // old entry's node reads.
  constexpr size_t kChangeAhead = 8;
  std::array<hw::TableIndex::Filing, kChangeAhead> filings;  // by update, modulo kChangeAhead
  auto index_of = [&](const CheckedUpdate& c) -> const hw::TableIndex* {
    return c.matcher->index_state != nullptr ? c.matcher->table->index.get() : nullptr;
  };
  // Stage `ahead` (kChangeAhead to 1) of update j's requests.
  auto request_change = [&](size_t j, size_t ahead) {
    const CheckedUpdate& c = checked[j];
    if (ahead == kChangeAhead) {
      __builtin_prefetch(c.old);
      RequestMatcher(*c.matcher, false);
    } else if (ahead == kChangeAhead - 1) {
      const hw::MatchTable& table = c.matcher->hw.table;
      __builtin_prefetch(c.old->index_item);
      __builtin_prefetch(table.rule(c.old->entry));
      table.PrefetchForErase(c.old->entry, c.old->key_hash);
      table.PrefetchForWrite(c.hash);
      table.PrefetchForReuse();
      if (const hw::TableIndex::MatcherState* state = c.matcher->index_state.get()) {
        __builtin_prefetch(state);
        __builtin_prefetch(&state->mask);
      }
    } else if (ahead == kChangeAhead - 2) {
      hw::TableIndex::RequestItem(c.old->index_item);
      hw::TableIndex::Filing& filing = filings[j % kChangeAhead];
      filing.serial = 0;
      if (const hw::TableIndex* index = index_of(c)) {
        index->StartFiling(*c.matcher->index_state, keys.data() + c.key_at, &filing);
      }
    } else {
      // (A walk done, or none begun: nothing to do before the last turn.)
      hw::TableIndex::Filing& filing = filings[j % kChangeAhead];
      if (filing.serial == 0 && ahead != 1) return;
      const hw::TableIndex* index = index_of(c);
      if (index == nullptr) return;
      if (filing.serial != 0) index->ContinueFiling(&filing);
      if (ahead == 1) index->RequestPrune(c.old->index_item);
    }
  };
  // Turn i (before update i; from -kChangeAhead at first): each update ahead its stage.
  auto request_turn = [&](ptrdiff_t i) {
    for (size_t ahead = 1; ahead <= kChangeAhead; ++ahead) {
      const ptrdiff_t j = i + static_cast<ptrdiff_t>(ahead);
      if (j >= 0 && j < static_cast<ptrdiff_t>(n)) request_change(static_cast<size_t>(j), ahead);
    }
  };
  for (ptrdiff_t i = -static_cast<ptrdiff_t>(kChangeAhead); i < 0; ++i) request_turn(i);
  for (size_t i = 0; i < n; ++i) {
    request_turn(static_cast<ptrdiff_t>(i));
    const CheckedUpdate& c = checked[i];
    // The old rule may hold the matcher's last reference (its handle gone): the update holds one too, and
    // lets it go once the new rule holds its own (or, should the insert throw, finalises the matcher).
    ++c.matcher->refs;
    absl::Cleanup let_go = [matcher = c.matcher] { internal::Unref(matcher); };
    updates[i].rule->handle_.release();  // (c.old)
    internal::Unref(c.old);
    *updates[i].rule = Rule(Install(c.matcher, keys.data() + c.key_at, c.hash, c.programs, c.own_tag));
  }
  return absl::OkStatus();
}

absl::Status Rule::Destroy() {
  if (handle_.get() == nullptr) return absl::InvalidArgumentError("rule handle is empty");
  handle_.Reset();
  return absl::OkStatus();
}

absl::StatusOr<hw::CounterActivity> Rule::QueryActivity() const {
  const RuleObj* rule = handle_.get();
  if (rule == nullptr) return absl::InvalidArgumentError("rule handle is empty");
  const ActionObj* counter = nullptr;
  const ActionObj* first_hit = nullptr;
  {
    std::lock_guard<std::recursive_mutex> lock(rule->matcher->table->domain->mu);
    for (const ActionObj* a : rule->programs->actions) {
      if (a == nullptr) continue;  // (its own tag)
      if (a->spec.type == actions::ActionType::kCtr) counter = a;
      if (a->spec.type == actions::ActionType::kAsoFirstHit && a->spec.aso_set) first_hit = a;
    }
  }
  // (The rule's handle keeps its programs and so the action, and the action's device outlives it.)
  if (counter != nullptr) return counter->device->QueryCounterActivity(counter->spec.counter_id);
  if (first_hit != nullptr) return first_hit->device->QueryFirstHitActivity(first_hit->spec.aso_context);
  return absl::FailedPreconditionError(absl::StrFormat(
      "rule %d has no flow_counter action and no aso first-hit action setting its context: its "
      "hits are recorded nowhere",
      internal::RuleId(*rule)));
}

uint32_t Rule::id() const { return handle_.get() ? internal::RuleId(*handle_.get()) : 0; }

}  // namespace drsim::dr
