#include "dr/objects.h"

#include <memory>
#include <vector>

#include "dr/dr.h"
#include "hw/lookup_memory.h"

namespace drsim::dr::internal {

namespace {

// Frees `programs` once neither a rule nor an offer holds them; through `domain`'s reclaimer, as lookups
// may still run them for rules just deleted.
void FreeIfUnused(const DomainObj& domain, ProgramsObj* programs) {
  if (programs->rules != 0 || programs->offers != 0) return;
  if (TableObj* table = programs->listed_in; table != nullptr) {
    auto listed = table->programs_by_actions.find(programs->key);
    if (listed != table->programs_by_actions.end() && listed->second == programs) {
      table->programs_by_actions.erase(listed);
    }
  }
  programs->linked_ct_claims.clear();  // at once: the link serves its next rule from now
  hw::Retire(domain.device->reclaimer(), [programs] { delete programs; });
}

// Makes `programs` (or none) the offer in `slot` (a matcher's or a table's last_compiled); the programs it
// replaces are freed if unused.
void Offer(const DomainObj& domain, ProgramsObj** slot, ProgramsObj* programs) {
  ProgramsObj* old = *slot;
  if (old == programs) return;
  *slot = programs;
  if (programs != nullptr) ++programs->offers;
  if (old != nullptr) {
    --old->offers;
    FreeIfUnused(domain, old);
  }
}

}  // namespace

DomainObj::DomainObj() : rule_pool(sizeof(RuleObj)) {}

uint32_t NextObjectId() {
  // Each thread takes ids in blocks, so making an object costs no atomic operation (a million rules are
  // made in a row); one thread alone numbers its objects 1, 2, 3, ... as before. Small blocks: a thread
  // that makes one object uses up a block.
  constexpr uint32_t kBlock = 64;
  static std::atomic<uint32_t> next_block{0};
  thread_local uint32_t next = 0, end = 0;
  if (next == end) {
    next = next_block.fetch_add(kBlock, std::memory_order_relaxed);
    end = next + kBlock;
    if (next == 0) ++next;  // never 0
  }
  return next++;
}

MatcherObj::MatcherObj(TableObj* table, uint16_t priority, matcher::CompiledMask compiled)
    : table(table),
      hw(NextObjectId(), priority, table->domain->device->NextMatcherSequence(), compiled.definer,
         table->domain->device->reclaimer()),
      compiled(std::move(compiled)) {}

void UsePrograms(ProgramsObj* programs, ActionObj* own_tag, RuleObj* rule) {
  if (programs->rules++ == 0) {
    for (ActionObj* a : programs->actions) {
      if (a != nullptr) a->refs.fetch_add(1, std::memory_order_relaxed);
    }
  }
  rule->programs = programs;
  if (own_tag != nullptr) own_tag->refs.fetch_add(1, std::memory_order_relaxed);
  rule->own_tag = own_tag;
}

void CachePrograms(MatcherObj* matcher, ProgramsObj* programs) {
  if (!programs->linked_ct_claims.empty()) return;  // they serve their one rule (ProgramsObj)
  TableObj* table = matcher->table;
  const DomainObj& domain = *table->domain;
  Offer(domain, &matcher->last_compiled, programs);
  Offer(domain, &table->last_compiled, programs);
  programs->key = ProgramsKey(programs->actions, programs->skip_rx, programs->skip_tx);
  // (A key another's programs hold already stays theirs: equal keys of different actions are rare.)
  if (table->programs_by_actions.try_emplace(programs->key, programs).second) programs->listed_in = table;
}

uint64_t ProgramsKey(absl::Span<ActionObj* const> actions, bool skip_rx, bool skip_tx) {
  uint64_t key = (skip_rx ? 1 : 0) | (skip_tx ? 2 : 0);
  for (const ActionObj* a : actions) {
    // A multiply-rotate mix of each id and revision (the map hashes the key again). Any tag's is 1: no other
    // action's is (ids are never 0), and 0 would leave a zero key as it was.
    const uint64_t version = a == nullptr || IsOwnTag(a) ? 1 : uint64_t{a->id} << 32 | a->revision;
    key = (key ^ version) * 0x9e3779b97f4a7c15u;
    key = key << 29 | key >> 35;
  }
  return key;
}

bool IsOwnTag(const ActionObj* action) { return action->spec.type == actions::ActionType::kTag; }

void HoldPrograms(ProgramsObj* programs) { ++programs->offers; }

void ReleasePrograms(const DomainObj& domain, ProgramsObj* programs) {
  --programs->offers;
  FreeIfUnused(domain, programs);
}

void Unref(RuleObj* rule) {
  MatcherObj* matcher = rule->matcher;
  if (hw::TableIndex::Item* item = rule->index_item; item != nullptr) {
    // Out of the index only once out of the match table: a packet finding the rule finds its matcher. Its
    // record is no hit the index names once it leaves the table.
    matcher->table->index->DropHit(item, matcher->hw.table.rule(rule->entry));
    matcher->hw.table.Erase(rule->entry);
    matcher->table->index->RemoveRule(item);
  } else {
    matcher->hw.table.Erase(rule->entry);
  }
  --matcher->rule_count;
  if (ProgramsObj* programs = rule->programs; --programs->rules == 0) {
    for (ActionObj* action : programs->actions) {
      if (action != nullptr) Unref(action);
    }
    FreeIfUnused(*matcher->table->domain, programs);
  }
  if (rule->own_tag != nullptr) Unref(rule->own_tag);
  // Lookups never see the RuleObj (its record in the match table is retired there): freed at once, to its
  // domain's pool (the matcher's reference keeps the domain).
  matcher->table->domain->rule_pool.Free(rule);  // trivially destructible
  Unref(matcher);
}

bool ReadsGeneveOption(const MatcherObj& matcher) {
  const uint8_t* mask = matcher.compiled.mask.data();
  return hw::GetField(mask, hw::Field::kGeneveTlvOption0Data) != 0 ||
         hw::GetField(mask, hw::Field::kGeneveTlvOption0Exist) != 0;
}

void Unref(MatcherObj* matcher) {
  if (--matcher->refs > 0) return;
  TableObj* table = matcher->table;
  hw::Device* device = table->domain->device;
  UnindexMatcher(matcher);
  Offer(*table->domain, &matcher->last_compiled, nullptr);
  table->ft.UnlinkMatcher(&matcher->hw);
  table->matchers.erase(matcher);
  device->TableChanged(&table->ft);
  if (ReadsGeneveOption(*matcher)) device->ReleaseGeneveOptionMatch();
  hw::Retire(device->reclaimer(), [matcher] { delete matcher; });  // lookups may still walk it
  Unref(table);
}

namespace {
// A table's index is built again, its words chosen again, when its matchers have grown this many times.
constexpr size_t kReindexGrowth = 4;
}  // namespace

void IndexMatcher(MatcherObj* matcher) {
  TableObj* table = matcher->table;
  const size_t matchers = table->matchers.size();
  if (table->index != nullptr && matchers < kReindexGrowth * table->indexed_matchers) {
    matcher->index_state = std::make_unique<hw::TableIndex::MatcherState>();
    table->index->AddMatcher(&matcher->hw, matcher->index_state.get());
    return;
  }
  if (table->ft.level == 0 || matchers < hw::TableIndex::kIndexFromMatchers) return;
  BuildIndex(table);
}

void BuildIndex(TableObj* table) {
  std::vector<const hw::CompiledMatcher*> compiled;
  for (const MatcherObj* m : table->matchers) compiled.push_back(&m->hw);
  hw::Reclaimer* reclaimer = table->domain->device->reclaimer();
  auto index = std::make_unique<hw::TableIndex>(compiled, reclaimer);
  for (MatcherObj* m : table->matchers) {
    // (The index this one replaces is never written again: its entries' items may go.)
    m->index_state = std::make_unique<hw::TableIndex::MatcherState>();
    index->AddMatcher(&m->hw, m->index_state.get());
    m->hw.table.FlushQueue();  // (indexed, its rules go in at once from now on)
    // Every rule is filed before any hit is named: an entry names the rule of its key only while it has one
    // (NameHit), and the records come by number, not in the order their rules were made (a newer duplicate
    // may sit in an older record, and must not be named).
    m->hw.table.ForEachRule([&](hw::MatchTable::Handle entry, void* owner) {
      static_cast<RuleObj*>(owner)->index_item = index->AddRule(m->index_state.get(), m->hw.table.key(entry));
    });
    m->hw.table.ForEachRule([&](hw::MatchTable::Handle entry, void* owner) {
      index->NameHit(m->index_state.get(), static_cast<RuleObj*>(owner)->index_item, m->hw.table.rule(entry));
    });
  }
  table->indexed_matchers = table->matchers.size();
  table->ft.index.store(index.get(), std::memory_order_release);
  if (hw::TableIndex* old = table->index.release()) hw::Retire(reclaimer, [old] { delete old; });
  table->index = std::move(index);
}

void UnindexMatcher(MatcherObj* matcher) {
  if (matcher->index_state == nullptr) return;
  matcher->table->index->RemoveMatcher(matcher->index_state.get());
  matcher->index_state.reset();
}

void Unref(TableObj* table) {
  if (--table->refs > 0) return;
  DomainObj* domain = table->domain.get();
  Offer(*domain, &table->last_compiled, nullptr);
  // (Its rules are gone, so their programs are too; any left must not name the table once it is freed.)
  for (auto& [key, programs] : table->programs_by_actions) programs->listed_in = nullptr;
  table->programs_by_actions.clear();
  if (table->ft.level == 0) domain->device->DetachRootTable(&table->ft);
  domain->tables.erase(table->in_domain);
  --domain->refs;
  // Programs jumping here may still be running; the table keeps its domain object alive until freed.
  hw::Retire(domain->device->reclaimer(), [table] { delete table; });
}

void Unref(ActionObj* action) {
  if (action->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  if (action->referenced_table != nullptr) {
    DomainLock lock(action->referenced_table->domain);
    Unref(action->referenced_table);
  }
  for (ActionObj* member : action->members) Unref(member);
  if (hw::Device* d = action->device) {
    const actions::ActionSpec& s = action->spec;
    switch (s.type) {
      case actions::ActionType::kQp:
        if (s.is_tir) {
          d->ReleaseTir(s.tir);
        } else {
          d->ReleaseQueue(s.qp_num);
        }
        break;
      case actions::ActionType::kCtr:
        d->ReleaseCounter(s.counter_id);
        break;
      case actions::ActionType::kMeter:
        d->DestroyMeter(s.meter);
        break;
      case actions::ActionType::kSampler:
        d->DestroySampler(s.sampler);
        break;
      case actions::ActionType::kAsoFlowMeter:
      case actions::ActionType::kAsoFirstHit:
      case actions::ActionType::kAsoCt:
        d->ReleaseAso(action->aso_object);
        break;
      default:
        break;
    }
  }
  // Actions whose data programs point at (modify, reformat, sampler, dest array) have a domain; a lookup
  // may still be running such a program.
  hw::Reclaimer* reclaimer = nullptr;
  if (action->referenced_domain != nullptr) {
    std::shared_ptr<DomainObj> domain = std::move(action->referenced_domain);
    std::lock_guard<std::recursive_mutex> lock(domain->mu);
    --domain->refs;
    reclaimer = domain->device->reclaimer();
  }
  hw::Retire(reclaimer, [action] { delete action; });
}

void ReleaseHandle(TableObj* table) {
  DomainLock lock(table->domain);
  Unref(table);
}

void ReleaseHandle(MatcherObj* matcher) {
  DomainLock lock(matcher->table->domain);
  Unref(matcher);
}

void ReleaseHandle(RuleObj* rule) {
  // The rule's lines beyond its matcher's load while the lock is taken, and the match table's bookkeeping
  // (which writers change under the lock) and the index item's entry once it is held: the deleting thread
  // waits on them together rather than one after another.
  __builtin_prefetch(rule->index_item);
  __builtin_prefetch(rule->matcher->hw.table.rule(rule->entry));
  DomainLock lock(rule->matcher->table->domain);
  rule->matcher->hw.table.PrefetchForErase(rule->entry, rule->key_hash);
  hw::TableIndex::RequestItem(rule->index_item);
  Unref(rule);
}

void ReleaseHandle(ActionObj* action) { Unref(action); }

template <typename Obj>
void Handle<Obj>::Reset() {
  if (obj_ != nullptr) ReleaseHandle(release());
}

template class Handle<TableObj>;
template class Handle<MatcherObj>;
template class Handle<RuleObj>;
template class Handle<ActionObj>;

}  // namespace drsim::dr::internal
