// Internal: the objects behind dr.h's handles, and how their references are dropped.
//
// Reference counts follow rdma-core: a table references its domain; a matcher its table; a rule its
// matcher and its actions; a dest_table action its table. An object is finalised (unlinked from its
// parent and the device, its references released) when its count reaches zero; a rule, which nothing but
// its handle references, when its handle is released. Table and matcher counts are guarded by their
// domain's lock; action counts are atomic because actions without a domain (drop, tag, dest QP, default
// miss) are shared by rules of any domain.
#ifndef DRSIM_DR_OBJECTS_H_
#define DRSIM_DR_OBJECTS_H_

#include <infiniband/mlx5dv.h>

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/types/span.h"
#include "actions/action_compiler.h"
#include "dr/aso_link.h"
#include "hw/device.h"
#include "hw/flow_table.h"
#include "hw/lookup_memory.h"
#include "hw/table_index.h"
#include "matcher/mask_compiler.h"

namespace drsim::dr::internal {

struct TableObj;
struct MatcherObj;
struct RuleObj;
struct ActionObj;
struct ProgramsObj;

// A fresh id for a domain, table, matcher, rule or action: unique in the process, never 0.
uint32_t NextObjectId();

struct DomainObj {
  DomainObj();  // (in objects.cc, where RuleObj is complete)
  uint32_t id = 0;
  hw::Device* device = nullptr;
  mlx5dv_dr_domain_type type = MLX5DV_DR_DOMAIN_TYPE_NIC_RX;
  std::recursive_mutex mu;
  int refs = 1;       // the handle, each table, each domain-bound action, each ASO CT link; guarded by mu
  int aso_links = 0;  // ASO CT links it is the peer or the linked domain of (dr/aso_link.h); guarded by mu
  bool allow_duplicates = true;
  std::list<TableObj*> tables;  // creation order
  // The domain's rules, packed in huge-page slabs, as a million of them are made in a row; guarded by mu.
  hw::SlabPool rule_pool;
};

// Matchers in their lookup order (hw::LookupBefore).
struct InLookupOrder {
  bool operator()(const MatcherObj* a, const MatcherObj* b) const;
};

struct TableObj {
  std::shared_ptr<DomainObj> domain;
  int refs = 1;  // the handle, each matcher, each dest_table action
  hw::FlowTable ft;
  absl::btree_set<MatcherObj*, InLookupOrder> matchers;  // mirrors ft.chain
  // Built once the table has hw::TableIndex::kIndexFromMatchers matchers (not for root tables, whose
  // matchers merge with other tables'), and again when they grow fourfold or it goes stale; published as
  // ft.index.
  std::unique_ptr<hw::TableIndex> index;
  size_t indexed_matchers = 0;  // the matchers the index was built over
  // The programs the last rule of any of its matchers was compiled to: a rule of another matcher with the
  // same actions shares them (an ACL's thousands of matchers then run one program, which stays cached).
  ProgramsObj* last_compiled = nullptr;
  // The programs its rules use, by ProgramsKey: a rule with the actions of any live rule of the table shares
  // that rule's programs, whatever rules came between (flows spread over queues take turns). No offer:
  // programs leave it when they are freed.
  absl::flat_hash_map<uint64_t, ProgramsObj*> programs_by_actions;
  std::list<TableObj*>::iterator in_domain;
};

// In lookup memory (huge pages), as its match table's: lookups walk `hw`, and an ACL's thousands of matchers
// on 4 KiB pages cost each rule update and lookup TLB misses.
struct MatcherObj : hw::InLookupMemory {
  // `hw` takes a new object id and the device's next matcher sequence number.
  MatcherObj(TableObj* table, uint16_t priority, matcher::CompiledMask compiled);

  // Laid out for rule inserts and deletes, which read a cold matcher: its own fields in one cache line,
  // then the match table in the same object (no pointer to wait on), then the compiled mask.
  TableObj* table;
  // Its part of its table's index, while the table has one.
  std::unique_ptr<hw::TableIndex::MatcherState> index_state;
  int refs = 1;  // the handle and each rule
  // Its rules are the owners of its match table's records (MatchTable::ForEachRule): a rule delete touches
  // no other rule, as unlinking it from a list of them would.
  size_t rule_count = 0;
  // The programs its last rule was compiled to: the next rule with the same actions shares them. They are
  // its table's offer too, unless a rule of another matcher was compiled since.
  ProgramsObj* last_compiled = nullptr;
  hw::CompiledMatcher hw;  // what lookups walk; lives as long as the matcher (both retired together)
  matcher::CompiledMask compiled;
};
static_assert(offsetof(MatcherObj, hw) == 64, "a matcher's own fields fill the line before its lookup part");

inline bool InLookupOrder::operator()(const MatcherObj* a, const MatcherObj* b) const {
  return hw::LookupBefore(a->hw, b->hw);
}

// The programs a rule's actions compiled to, shared by the rules of one table with the same actions in the
// same pipes. Guarded by the domain's lock; freed through the reclaimer, as lookups may still run them, once
// no rule uses them and no matcher or table offers them. In lookup memory: every lookup that hits runs them,
// and rules with actions of their own (a flow tag each) make one a rule.
struct ProgramsObj : hw::InLookupMemory {
  hw::PipePrograms programs;
  // What its rules install (RuleRecord::Of(&programs, 0)), each with its own rule_id and flow tag.
  hw::RuleRecord record;
  // In the rule's order; referenced while `rules` > 0. A tag action's place is null: its tag is each rule's
  // own (RuleObj::own_tag).
  absl::InlinedVector<ActionObj*, 4> actions;
  // The id and revision of each as compiled: a rule shares these programs only with the very same objects
  // (same address and id, as addresses are reused) in the same revision; any tag action takes a tag's place.
  absl::InlinedVector<std::pair<uint32_t, uint32_t>, 4> action_versions;
  // The place of the tag action in `actions`, or -1. Its op is kTagOfRule: rules whose actions differ only
  // in their tag share these programs, as a flow's mark is mostly its own.
  int tag_at = -1;
  bool skip_rx = false;  // FDB: the pipes its rules are not in (actions::RuleContext)
  bool skip_tx = false;
  // The CT contexts it reaches through links to the domain (dr/aso_link.h). Programs with any serve one
  // rule and are never offered to others; the claims go with that rule.
  std::vector<LinkedCtClaim> linked_ct_claims;
  size_t rules = 0;  // rules using it
  int offers = 0;    // matchers and tables whose last_compiled it is, and calls holding it (HoldPrograms)
  // The table whose programs_by_actions holds it under `key`, or nullptr.
  TableObj* listed_in = nullptr;
  uint64_t key = 0;
};

// The key of programs compiled from `actions` (each object's id and revision, in order; any tag action, or
// its null place, alike) for rules in the pipes `skip_rx` and `skip_tx` leave
// (TableObj::programs_by_actions). Equal keys are checked further.
uint64_t ProgramsKey(absl::Span<ActionObj* const> actions, bool skip_rx, bool skip_tx);

// Whether `action` is a tag action, whose tag a rule's record carries (ProgramsObj::tag_at).
bool IsOwnTag(const ActionObj* action);

// Referenced by its handle alone: the handle's release finalises it (40 bytes, in its domain's rule pool).
struct RuleObj {
  MatcherObj* matcher = nullptr;
  // The low half of its key's MatchTable::Hash: a delete requests the key's bucket with its other lines
  // before it takes the lock. (Its id is in its record: RuleId.)
  uint32_t key_hash = 0;
  hw::MatchTable::Handle entry = 0;
  ProgramsObj* programs = nullptr;  // counts this rule; the match table's record points into it
  ActionObj* own_tag = nullptr;     // its tag action, referenced (programs->tag_at; its record has the tag)
  // The item it counts in, in its matcher's part of its table's index (TableIndex::AddRule's; nullptr when
  // there is none): a delete goes to it without looking for it by the rule's key.
  hw::TableIndex::Item* index_item = nullptr;
  // Made in its domain's rule_pool (placement new), and given back to it when its handle is released.
};
static_assert(std::is_trivially_destructible_v<RuleObj> && sizeof(RuleObj) == 40);

// The id `rule` was made with (its record's).
inline uint32_t RuleId(const RuleObj& rule) { return rule.matcher->hw.table.rule(rule.entry)->rule_id; }

// In lookup memory, beside its programs: a million rules with a flow tag each make a million actions, which
// on 4 KiB heap pages cost a million page faults.
struct ActionObj : hw::InLookupMemory {
  const uint32_t id = NextObjectId();
  // Bumped when the action changes in place (ModifyAso); rules made before keep their programs.
  uint32_t revision = 0;
  std::atomic<int> refs{1};  // the handle and each rule, dest array or sampler using it
  actions::ActionSpec spec;
  TableObj* referenced_table = nullptr;          // dest table, dest root table, meter/sampler next table
  hw::Device* device = nullptr;                  // the device holding the object behind the action
  std::shared_ptr<DomainObj> referenced_domain;  // modify/reformat/sampler/dest array: a reference on it
  std::vector<ActionObj*> members;               // dest array and sampler: the actions they use
  hw::ModifyProgram modify;                      // kModifyHdr (spec.modify points here)
  std::vector<uint8_t> reformat;                 // reformat data (spec.reformat points here)
  hw::Replica sample;                            // kSampler (spec.sample points here)
  std::vector<hw::Replica> replicas;             // kDestArray (spec.replicas points here)
  uint32_t aso_object = 0;                       // kAso*: the ASO object retained
};

// Locks the domain an object lives in, keeping the domain alive while locked.
class DomainLock {
 public:
  explicit DomainLock(std::shared_ptr<DomainObj> domain) : domain_(std::move(domain)), lock_(domain_->mu) {}

 private:
  std::shared_ptr<DomainObj> domain_;
  std::lock_guard<std::recursive_mutex> lock_;
};

// rdma-core's checks of an aso action's parameters for an object of `kind` (InvalidArgument);
// Domain::LinkAsoCt checks a link's with them too.
absl::Status CheckAsoParameters(hw::AsoKind kind, uint32_t flags, uint8_t return_reg_c);

// Drop one reference; the last finalises and frees the object (a rule has only its handle's). Table,
// matcher and rule: the domain lock must be held. Action: takes the lock of a referenced table's domain
// itself.
void Unref(TableObj* table);
void Unref(MatcherObj* matcher);

// Whether the matcher's mask reads the GENEVE option 0 fields: the device counts such matchers, as its
// GENEVE TLV option parser object stays in use while they exist (hw::Device::RetainGeneveOptionMatch).
bool ReadsGeneveOption(const MatcherObj& matcher);
void Unref(RuleObj* rule);
void Unref(ActionObj* action);

// Table indexes (hw/table_index.h); the domain lock must be held. IndexMatcher, for a matcher just linked
// into its table: it joins the table's index, or the table gets a new one once it has enough matchers, or
// four times as many as its index was built over. BuildIndex builds it over every matcher and rule of the
// table, publishes it and retires the one it replaces (also when the index goes stale). UnindexMatcher,
// before a matcher is unlinked.
void IndexMatcher(MatcherObj* matcher);
void BuildIndex(TableObj* table);
void UnindexMatcher(MatcherObj* matcher);

// The domain lock must be held. `rule` starts using `programs` (which take references on their actions when
// they gain their first rule; Unref(RuleObj*) gives them back with the last), and `own_tag`, the tag action
// of its actions if the programs take the tag from the rule (tag_at), else nullptr: the rule references it.
void UsePrograms(ProgramsObj* programs, ActionObj* own_tag, RuleObj* rule);
// Makes `programs` the ones `matcher` and its table offer to their next rules; the ones they replace are
// freed if unused. Programs holding linked CT contexts are not offered: the rule or call using them owns
// them.
void CachePrograms(MatcherObj* matcher, ProgramsObj* programs);
// The domain lock must be held. HoldPrograms keeps `programs` while a call that chose them for rules it has
// yet to install runs (rules it removes meanwhile may have been their last); ReleasePrograms ends a hold,
// freeing them if no rule uses them and nothing offers or holds them.
void HoldPrograms(ProgramsObj* programs);
void ReleasePrograms(const DomainObj& domain, ProgramsObj* programs);

// Drop the reference a handle holds (taking whatever lock is needed).
void ReleaseHandle(TableObj* table);
void ReleaseHandle(MatcherObj* matcher);
void ReleaseHandle(RuleObj* rule);
void ReleaseHandle(ActionObj* action);

}  // namespace drsim::dr::internal

#endif  // DRSIM_DR_OBJECTS_H_
