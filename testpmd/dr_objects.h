// Internal to the engine: the DR objects flows share, owned through shared_ptr so that an object lives as
// long as a flow (or a meter) uses it and is destroyed in the right order by construction.
//
//   DomainRes   a dr::Domain of one function (NIC_RX/NIC_TX of a port, or the PF's FDB)
//   TableRes    a dr::Table; holds its domain, the dest_table action into it (made on first jump, shared)
//               and, for the FDB table of user group 0 when mlx5's fdb_def_rule is on, the root table with
//               the always-hit rule jumping to it
//   MatcherRes  a dr::Matcher; holds its table. Rules of one (domain, table, priority, mask) share one
//   InstalledRule  a dr::Rule; holds its matcher and notes what made it and its actions, for traces
//               (DrObjects::LabelOf, RuleActions): a few words, as a flow keeps only what it needs. The
//               notes sit in the rules; DrObjects finds them by DR rule id in a vector sorted by id,
//               which a new rule appends to (DR's ids grow), so an insert touches no hash table
//
// Members are declared so that destruction goes rule -> matcher -> (jump action) -> table -> domain. The
// caches keep weak references: an object nobody holds is gone, and the next request makes a new one.
//
// Levels: a user group maps to the level of the same number (plus one in the FDB under fdb_def_rule);
// tables the engine adds for itself (RSS dispatch, sample suffixes, meter policies) take levels from
// kHiddenLevelBase up, meter policy tables from kMeterLevelBase up so that a meter's next table is always
// above the rule using it (DR requires it).
//
// Not thread-safe: the engine serialises its calls.
#ifndef DRSIM_TESTPMD_DR_OBJECTS_H_
#define DRSIM_TESTPMD_DR_OBJECTS_H_

#include <infiniband/mlx5dv.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/container/node_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "dr/dr.h"
#include "hw/lookup_memory.h"
#include "hw/match_params.h"
#include "sim/nic.h"
#include "testpmd/record_pool.h"

namespace drsim::testpmd {

inline constexpr uint32_t kMaxGroup = 0x0ffffffe;
inline constexpr uint32_t kHiddenLevelBase = 0x10000000;
inline constexpr uint32_t kMeterLevelBase = 0x70000000;

// Live DR objects the engine made, for tests and tools.
struct ObjectCounts {
  int domains = 0;
  int tables = 0;
  int matchers = 0;
  int rules = 0;
};

class DrObjects;

// What made a DR rule, for traces: a flow's rule ("port 0 flow 3", then any `part`: " rss dispatch"), or
// with no flow one of the engine's own, named by `part` alone ("port 0 meter 1 policy red").
struct RuleLabel {
  std::optional<std::pair<uint16_t, uint32_t>> flow;  // port and flow id
  std::string part;
  RuleLabel With(absl::string_view more) const;
  std::string ToString() const;
};

// What DrObjects keeps of a rule for traces: its label (the part interned) and its actions.
struct RuleNote {
  int32_t port = -1;  // -1: no flow
  uint32_t flow = 0;
  const std::string* part = nullptr;  // interned; nullptr: none
  absl::InlinedVector<const dr::Action*, 2> actions;
};

class DomainRes {
 public:
  DomainRes(sim::Function& function, dr::Domain domain, DrObjects* objects);
  ~DomainRes();
  DomainRes(const DomainRes&) = delete;
  DomainRes& operator=(const DomainRes&) = delete;

  sim::Function& function() const { return function_; }
  const dr::Domain& domain() const { return domain_; }
  mlx5dv_dr_domain_type type() const { return domain_.type(); }

 private:
  sim::Function& function_;
  dr::Domain domain_;
  DrObjects* objects_;
};

class TableRes {
 public:
  TableRes(std::shared_ptr<DomainRes> domain, dr::Table table, DrObjects* objects);
  ~TableRes();
  TableRes(const TableRes&) = delete;
  TableRes& operator=(const TableRes&) = delete;

  const dr::Table& table() const { return table_; }
  bool root() const { return table_.level() == 0; }
  // The dest_table action into this table, made on first use.
  absl::StatusOr<const dr::Action*> JumpAction();
  // Makes the FDB root table whose one rule sends everything here (mlx5's fdb_def_rule); returns the rule's
  // id.
  absl::StatusOr<uint32_t> AddDefaultJump();

 private:
  struct DefaultJump {
    dr::Table root;
    dr::Matcher all;
    dr::Rule rule;
    RuleNote note;
  };
  std::shared_ptr<DomainRes> domain_;
  dr::Table table_;
  dr::Action jump_;
  std::unique_ptr<DefaultJump> default_jump_;
  DrObjects* objects_;
};

class MatcherRes {
 public:
  MatcherRes(std::shared_ptr<TableRes> table, dr::Matcher matcher, DrObjects* objects);
  ~MatcherRes();
  MatcherRes(const MatcherRes&) = delete;
  MatcherRes& operator=(const MatcherRes&) = delete;

  const dr::Matcher& matcher() const { return matcher_; }
  DrObjects& objects() const { return *objects_; }

 private:
  std::shared_ptr<TableRes> table_;
  dr::Matcher matcher_;
  DrObjects* objects_;
};

class InstalledRule {
 public:
  // (Its DrObjects is its matcher's.)
  InstalledRule(std::shared_ptr<MatcherRes> matcher, dr::Rule rule, RuleNote note);
  ~InstalledRule();
  InstalledRule(const InstalledRule&) = delete;
  InstalledRule& operator=(const InstalledRule&) = delete;

  RecordPool<InstalledRule>& record_pool() const;
  const std::shared_ptr<MatcherRes>& matcher() const { return matcher_; }
  absl::Span<const dr::Action* const> actions() const { return note_.actions; }

 private:
  std::shared_ptr<MatcherRes> matcher_;
  dr::Rule rule_;
  RuleNote note_;
};

using InstalledRulePtr = RecordPool<InstalledRule>::Ptr;

class DrObjects {
 public:
  DrObjects(sim::Nic& nic, bool fdb_default_rule);
  DrObjects(const DrObjects&) = delete;
  DrObjects& operator=(const DrObjects&) = delete;

  // The domain of `type` on function `vport` (FDB: the PF).
  absl::StatusOr<std::shared_ptr<DomainRes>> Domain(mlx5dv_dr_domain_type type, uint16_t vport);
  // The level of user group `group` in a domain of `type`.
  uint32_t GroupLevel(mlx5dv_dr_domain_type type, uint32_t group) const;
  // The table of user group `group`.
  absl::StatusOr<std::shared_ptr<TableRes>> GroupTable(const std::shared_ptr<DomainRes>& domain,
                                                       uint32_t group);
  // A new table of the engine's own, above every user level (meter policies above the others).
  absl::StatusOr<std::shared_ptr<TableRes>> HiddenTable(const std::shared_ptr<DomainRes>& domain,
                                                        bool meter_policy);
  // The matcher of `priority` and `mask` in `table`, shared with every rule asking for the same.
  absl::StatusOr<std::shared_ptr<MatcherRes>> Matcher(const std::shared_ptr<TableRes>& table,
                                                      uint16_t priority, const hw::MatchParams& mask);
  // Inserts a rule and labels it (e.g. "port 0 flow 3").
  absl::StatusOr<InstalledRulePtr> InsertRule(const std::shared_ptr<MatcherRes>& matcher,
                                              const hw::MatchParams& value,
                                              absl::Span<const dr::Action* const> actions,
                                              const RuleLabel& label);

  // The label of DR rule `rule_id`, or "" for a rule the engine did not make.
  std::string LabelOf(uint32_t rule_id) const;
  // The DR actions of rule `rule_id` in order, described (dr::Action::Describe); empty for a rule the
  // engine did not make.
  std::vector<std::string> RuleActions(uint32_t rule_id) const;
  // The mask of the live matcher with DR id `matcher_id`, or nullopt for one the engine did not make.
  std::optional<hw::MatchParams> MatcherMask(uint32_t matcher_id) const;
  // The live domains, by domain type, then vport.
  std::vector<const dr::Domain*> Domains() const;
  const ObjectCounts& counts() const { return counts_; }

 private:
  friend class DomainRes;
  friend class TableRes;
  friend class MatcherRes;
  friend class InstalledRule;

  sim::Nic& nic_;
  bool fdb_default_rule_;
  uint32_t next_hidden_level_ = kHiddenLevelBase;
  uint32_t next_meter_level_ = kMeterLevelBase;
  ObjectCounts counts_;
  std::map<std::pair<int, uint16_t>, std::weak_ptr<DomainRes>> domains_;
  std::map<std::pair<const DomainRes*, uint32_t>, std::weak_ptr<TableRes>> tables_;
  // By MatcherKey: a hash and one comparison find a rule's matcher among many (an ACL's masks).
  absl::flat_hash_map<std::string, std::weak_ptr<MatcherRes>> matchers_;
  std::string matcher_key_;  // Matcher's key, its room kept from rule to rule
  // The key and matcher Matcher gave last: a file's rules mostly share their neighbour's matcher, found by
  // one comparison without hashing the mask.
  std::string last_matcher_key_;
  std::weak_ptr<MatcherRes> last_matcher_;
  // The key of the matcher of `priority` and `mask` in `table`, in matcher_key_: the table's address, the
  // priority, then the mask's bytes.
  absl::string_view MatcherKey(const TableRes* table, uint16_t priority, const hw::MatchParams& mask);
  // The note of a rule made with `label` and `actions`.
  RuleNote Note(const RuleLabel& label, absl::Span<const dr::Action* const> actions);
  // Files `note` as DR rule `rule_id`'s / withdraws rule `rule_id`'s note.
  void FileNote(uint32_t rule_id, const RuleNote* note);
  void WithdrawNote(uint32_t rule_id);
  // The live note of DR rule `rule_id`, or nullptr.
  const RuleNote* FindNote(uint32_t rule_id) const;

  absl::node_hash_set<std::string> label_parts_;  // RuleNote::part points into it
  RecordPool<InstalledRule> rules_;               // InsertRule's rules (they must go before DrObjects)
  // By DR rule id, ascending; a withdrawn note leaves a null until the vector is compacted.
  // (Grows without copying, in lookup memory: a million rules' notes on huge pages, not 4 KiB heap pages.)
  std::deque<std::pair<uint32_t, const RuleNote*>, hw::LookupAllocator<std::pair<uint32_t, const RuleNote*>>>
      notes_;
  size_t withdrawn_ = 0;       // the nulls in notes_
  size_t last_withdrawn_ = 0;  // where the last note was withdrawn: flows go in id order (flush, exit)
};

}  // namespace drsim::testpmd

#endif  // DRSIM_TESTPMD_DR_OBJECTS_H_
