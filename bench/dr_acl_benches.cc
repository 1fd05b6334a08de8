// drsim's ACL benches, linked whole into acl_bench (beside DPDK's rte_acl) and into
// ovs_classifier_bench (beside OVS's classifier), so that each peer's ratio can be taken between runs of one
// process, interleaved (--benchmark_enable_random_interleaving): a shared VM's speed differs widely from
// one process to the next, far less within one. On the sets of bench/acl_sets.h:
//   BM_DrAclInsert/N      classbench::InstallAcl of the set into an empty NIC_RX table (filters/s)
//   BM_DrAclMemory/N      the bytes the set takes installed and compiled, a filter (counter
//                         bytes_per_filter: heap and lookup memory; the peer's is BM_RteAclMemory)
//   BM_DrAclLookup/N      the trace through the whole software NIC in bursts of 32 (packets/s)
//   BM_DrAclLookupDescent/N/D  the same, the compiled trees descended the D way (hw::TableIndex::TreeDescent)
//   BM_DrAclTupleLookup/N the trace's bare 5-tuples looked up in the ACL table's index in bursts of 32, as
//                         the NIC looks a burst up there, with no frame, parse or actions (packets/s): the
//                         like-for-like peer of rte_acl's classify, whose input is made before timing as
//                         the index's words are
//   BM_DrAclRuleUpdate/N  deleting one DR rule of the installed set, its table compiled, and putting it back
//   (updates/s, two
//                         an iteration); every trace frame is checked against FirstMatch afterwards
//   BM_DrAclRuleMove/N    the same, each rule put back with a key it did not have (a changed match)
//   BM_DrAclRuleUpdateMany/N/B, BM_DrAclRuleMoveMany/N/B  the same B rules at a time, in one
//                         dr::Rule::UpdateMany call (updates/s, two a rule)
//   BM_DrAclLookupUnderChurn/N/R/M  BM_DrAclLookup's lookups, on a sim::Worker, while a control thread
//                         moves rules as BM_DrAclRuleMove does at R updates/s (two a move; 0: no churn, the
//                         quiet rate to compare with), M saying how (ChurnMoves: 0 each rule away and
//                         straight back, 1 each left on its new key); counters: updates_per_second achieved,
//                         the worker's share of a CPU and its rate a second of that CPU (per_cpu_second),
//                         and the compiled form's folds, overflows and busy retirements
//                         (hw::TableIndex::tree_upkeep)
// Before a lookup is timed, drsim's verdicts on the trace are checked against classbench::FirstMatch; a
// mismatch skips the bench with an error.
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "bench/acl_sets.h"
#include "bench/flows.h"
#include "bench/thread_cpu.h"
#include "benchmark/benchmark.h"
#include "classbench/acl_nic.h"
#include "classbench/dr_acl.h"
#include "classbench/filter.h"
#include "classbench/header_frame.h"
#include "dr/compiled_table.h"
#include "dr/dr.h"
#include "hw/action_program.h"
#include "hw/flow_table.h"
#include "hw/lookup_memory.h"
#include "hw/match_layout.h"
#include "hw/match_table.h"
#include "hw/reclaimer.h"
#include "hw/table_index.h"
#include "sim/nic.h"

namespace drsim::bench {
namespace {

using classbench::Filter;
using classbench::Header;

struct DrSetup {
  classbench::AclNic net;
  sim::Nic& nic = net.nic;
  dr::Action drop;
  classbench::DrAcl installed;
};

std::unique_ptr<DrSetup> InstallDr(const std::vector<Filter>& set, benchmark::State& state) {
  auto s = std::make_unique<DrSetup>();
  s->drop = *dr::Action::Drop();
  absl::StatusOr<classbench::DrAcl> acl = classbench::InstallAcl(
      s->net.acl, set, [&](size_t) { return std::vector<const dr::Action*>{&s->drop}; });
  if (!acl.ok()) {
    state.SkipWithError(std::string(acl.status().message()).c_str());
    return nullptr;
  }
  s->installed = *std::move(acl);
  return s;
}

void BM_DrAclInsert(benchmark::State& state) {
  const std::vector<Filter>& set = AclFilterSet(state.range(0), state);
  if (set.empty()) return;
  size_t rules = 0, matchers = 0;
  for (auto _ : state) {
    std::unique_ptr<DrSetup> s = InstallDr(set, state);
    if (s == nullptr) break;
    rules = s->installed.rules.size();
    matchers = s->installed.matchers.size();
    state.PauseTiming();
    s.reset();
    state.ResumeTiming();
  }
  state.counters["dr_rules"] = static_cast<double>(rules);
  state.counters["matchers"] = static_cast<double>(matchers);
  state.SetItemsProcessed(state.iterations() * set.size());
}
BENCHMARK(BM_DrAclInsert)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

// Judges drsim's verdicts on an installed set: the rule a packet hits must belong to the first filter its
// header fits (classbench::FirstMatch).
class FirstMatchJudge {
 public:
  FirstMatchJudge(const classbench::DrAcl& acl, const std::vector<Filter>& set) : set_(set) {
    for (size_t r = 0; r < acl.rules.size(); ++r)
      filter_of_rule_id_[acl.rules[r].id()] = acl.filter_of_rule[r];
  }
  // Whether the rule `rule_id` (0: none) that packet `i` of the trace (`h`) hit is right; false, with the
  // bench skipped naming the packet, when it is not.
  bool Check(size_t i, const Header& h, uint32_t rule_id, benchmark::State& state) const {
    auto it = filter_of_rule_id_.find(rule_id);
    const size_t hit = it == filter_of_rule_id_.end() ? set_.size() : it->second;
    const size_t want = classbench::FirstMatch(set_, classbench::AsParsed(h)).value_or(set_.size());
    if (hit == want) return true;
    state.SkipWithError(absl::StrFormat("packet %d: filter %d, expected %d", i, hit, want).c_str());
    return false;
  }

 private:
  const std::vector<Filter>& set_;
  absl::flat_hash_map<uint32_t, size_t> filter_of_rule_id_;
};

// Checks the first `count` frames of `trace` through `s` (FirstMatchJudge). False, with the bench skipped,
// on a mismatch.
bool CheckVerdicts(DrSetup& s, const std::vector<Filter>& set, const std::vector<Header>& trace, size_t count,
                   benchmark::State& state) {
  const FirstMatchJudge judge(s.installed, set);
  for (size_t i = 0; i < count && i < trace.size(); ++i) {
    const sim::Verdict v = s.nic.ReceiveFromWire(classbench::FrameOf(trace[i]));
    if (!judge.Check(i, trace[i], v.path.empty() ? 0 : v.path.back().rule_id, state)) return false;
  }
  return true;
}

// How long a lookup bench goes on, untimed, once the ACL's table is compiled and its compiled form's trial
// (2,048 calls, a burst each) has kept a method: the caches warm to what the timed lookups read. (Under a
// slow tool such as callgrind the trial alone outlasts this time: WarmUp waits for its verdict, up to
// kTrialWait.)
constexpr std::chrono::milliseconds kWarmUpAfterCompiled{600};
constexpr std::chrono::seconds kTrialWait{120};
// How long a lookup bench waits, untimed, for the ACL's table to compile after its quiet lookups: the trees
// are built on the index's compiler thread (bench/README.md has the times), and the next lookup publishes
// them. A table that does not compile by then (too large, or its frames hit before the index) is timed
// walking.
constexpr std::chrono::seconds kCompileWait{5};

// Whether the ACL table's index has a compiled form of its present version (hw/table_index.h; it serves
// lookups by its trees, or by the walk when its trial found that faster).
bool AclCompiled(const DrSetup& s) {
  const hw::TableIndex* index = dr::CompiledTableOf(s.net.acl)->index.load(std::memory_order_acquire);
  return index != nullptr && index->IsCompiled();
}

// Whether that compiled form's trial is over (hw::TableIndex::TrialDecided).
bool AclTrialDecided(const DrSetup& s) {
  const hw::TableIndex* index = dr::CompiledTableOf(s.net.acl)->index.load(std::memory_order_acquire);
  return index != nullptr && index->TrialDecided();
}

// What a lookup bench runs on: its set, installed on a NIC, and its trace; `dr` nullptr (the bench skipped)
// when they cannot be had.
struct LookupBed {
  const std::vector<Filter>* set = nullptr;
  std::unique_ptr<DrSetup> dr;
  std::vector<Header> trace;
};

LookupBed SetUpLookups(benchmark::State& state) {
  LookupBed bed;
  bed.set = &AclFilterSet(state.range(0), state);
  if (bed.set->empty()) return bed;
  bed.dr = InstallDr(*bed.set, state);
  if (bed.dr == nullptr) return bed;
  bed.trace = AclTrace(*bed.set, state);
  if (bed.trace.empty()) bed.dr.reset();
  return bed;
}

// Untimed, as rte_acl's build is: `burst()` (the next burst of the trace through the lookup a bench times;
// false when it failed) until the ACL's table on `s` has been found unchanged
// (hw::TableIndex::kQuietLookups), then until it is compiled (up to kCompileWait) and, when it is, until its
// compiled form's trial is over (up to kTrialWait), then for kWarmUpAfterCompiled. False when a burst failed.
template <typename SendBurst>
bool WarmUp(const DrSetup& s, SendBurst burst) {
  using Clock = std::chrono::steady_clock;
  for (size_t sent = 0; sent < hw::TableIndex::kQuietLookups; sent += kBurst) {
    if (!burst()) return false;
  }
  for (const auto quiet = Clock::now(); !AclCompiled(s) && Clock::now() - quiet < kCompileWait;) {
    if (!burst()) return false;
  }
  for (const auto compiled = Clock::now();
       AclCompiled(s) && !AclTrialDecided(s) && Clock::now() - compiled < kTrialWait;) {
    if (!burst()) return false;
  }
  for (const auto decided = Clock::now(); Clock::now() - decided < kWarmUpAfterCompiled;) {
    if (!burst()) return false;
  }
  return true;
}

// Sets the bench's "compiled" counter: 1 when the ACL's table on `s` is compiled (AclCompiled), else 0; its
// "trees" counter: 1 when the compiled form looks packets up by its trees or its automata, 0 when by the
// walk (or not compiled); and its "automata" counter: 1 when by its automata.
void CountCompiled(const DrSetup& s, benchmark::State& state) {
  state.counters["compiled"] = AclCompiled(s);
  const hw::TableIndex* index = dr::CompiledTableOf(s.net.acl)->index.load(std::memory_order_acquire);
  state.counters["trees"] = index != nullptr && index->LooksUpByTrees();
  state.counters["automata"] = index != nullptr && index->LooksUpByAutomata();
}

// A trace's frames, sent a burst of kBurst at a time, in turn, round and round.
class TraceBursts {
 public:
  explicit TraceBursts(const std::vector<Header>& trace) {
    for (const Header& h : trace) frames_.push_back(classbench::FrameOf(h));
    views_.assign(frames_.begin(), frames_.end());
  }
  // Sends the next burst through `port` (a sim::Nic or a sim::Worker); false, with the bench skipped, when
  // it is rejected.
  template <typename Port>
  bool SendNext(Port& port, benchmark::State& state) {
    if (!port.ReceiveFromWire(absl::MakeConstSpan(views_).subspan(at_, kBurst)).ok()) {
      state.SkipWithError("burst rejected");
      return false;
    }
    at_ = (at_ + kBurst) % views_.size();
    return true;
  }

 private:
  std::vector<std::vector<uint8_t>> frames_;
  std::vector<sim::Frame> views_;
  size_t at_ = 0;
};

// BM_DrAclLookup's body.
void TimeAclLookups(benchmark::State& state) {
  LookupBed bed = SetUpLookups(state);
  if (bed.dr == nullptr || !CheckVerdicts(*bed.dr, *bed.set, bed.trace, 256, state)) return;
  DrSetup& s = *bed.dr;
  TraceBursts bursts(bed.trace);
  auto send_burst = [&] { return bursts.SendNext(s.nic, state); };
  if (!WarmUp(s, send_burst)) return;
  for (auto _ : state) {
    if (!send_burst()) break;
  }
  state.SetItemsProcessed(state.iterations() * kBurst);
  CountCompiled(s, state);
}

// The heap's bytes in use (glibc's count) and the lookup memory's: what drsim holds, to the byte.
size_t DrsimBytesInUse() { return mallinfo2().uordblks + hw::LookupMemoryInUse(); }

// BM_DrAclMemory: the bytes a set takes once installed and compiled (its DR rules, matchers, match tables,
// index and trees), a filter: the heap's and the lookup memory's growth from before InstallAcl to after
// the table compiled. Untimed; one iteration.
void BM_DrAclMemory(benchmark::State& state) {
  const std::vector<Filter>& set = AclFilterSet(state.range(0), state);
  if (set.empty()) return;
  const std::vector<Header> trace = AclTrace(set, state);
  if (trace.empty()) return;
  TraceBursts bursts(trace);
  for (auto _ : state) {
    const size_t before = DrsimBytesInUse();
    std::unique_ptr<DrSetup> s = InstallDr(set, state);
    if (s == nullptr) return;
    if (!WarmUp(*s, [&] { return bursts.SendNext(s->nic, state); })) return;
    const size_t after = DrsimBytesInUse();
    state.counters["bytes_per_filter"] =
        static_cast<double>(after > before ? after - before : 0) / static_cast<double>(set.size());
    CountCompiled(*s, state);
  }
}
BENCHMARK(BM_DrAclMemory)->Arg(10000)->Iterations(1)->Unit(benchmark::kMillisecond);

void BM_DrAclLookup(benchmark::State& state) { TimeAclLookups(state); }
BENCHMARK(BM_DrAclLookup)->Arg(1000)->Arg(10000);

// The same with the compiled trees' descent forced (second argument, hw::TableIndex::TreeDescent: 0
// scalar, 1 AVX2, 2 AVX-512); skipped when the CPU lacks it.
void BM_DrAclLookupDescent(benchmark::State& state) {
  using hw::TableIndex;
  const TableIndex::TreeDescent chosen = TableIndex::tree_descent();
  if (!TableIndex::SetTreeDescent(static_cast<TableIndex::TreeDescent>(state.range(1)))) {
    state.SkipWithError("the CPU lacks this descent");
    return;
  }
  TimeAclLookups(state);
  TableIndex::SetTreeDescent(chosen);
}
BENCHMARK(BM_DrAclLookupDescent)->ArgsProduct({{10000}, {0, 1, 2}});

// The rule (nullptr: none) each packet of a burst of a trace hits in an ACL's table, looked up as the NIC
// looks a burst up in an indexed table (sim/nic_burst.cc, LookUpIndexedTogether): the index's candidates of
// all the burst's packets together, from the table's first matcher on; then each packet's first hit among its
// candidates in lookup order, the rule the index names or one looked up in the candidate's match table;
// asked again past an exact candidate that missed (its rule was leaving), and the table's chain walked
// when the index had too many candidates (or the table has no index). The packets' words, the index's
// input, are read from the trace once an index is there, before the lookups, as rte_acl's inputs are made
// before it classifies; a packet's header vector is filled only when a lookup needs it (a candidate that
// does not name its hit, or a walk). What the NIC adds around this for a frame: reading the words from the
// frame, the jump from its root table into the ACL's, and the actions.
class TableLookup {
 public:
  // `reclaimer`: the device's, whose read sections the lookups take.
  TableLookup(const hw::FlowTable& table, hw::Reclaimer* reclaimer, const std::vector<Header>& trace)
      : table_(table), reader_(reclaimer), trace_(trace) {}
  bool valid() const { return reader_.valid(); }

  // The hits of the trace's packets [at, at + n) (n <= kBurst) in `hits`.
  void LookUpBurst(size_t at, size_t n, const hw::RuleRecord** hits) {
    reader_.Enter();
    const hw::TableIndex* index = table_.index.load(std::memory_order_acquire);
    if (index == nullptr) {
      for (size_t i = 0; i < n; ++i) hits[i] = WalkChain(HeaderVectorOf(at + i));
    } else {
      if (index != words_read_by_) ReadTraceWords(*index);
      for (size_t i = 0; i < n; ++i) queries_[i] = {words_[at + i], 0, candidates_[i], 0};
      index->CandidatesOf(queries_, n);
      for (size_t i = 0; i < n; ++i) hits[i] = FirstHit(*index, queries_[i], at + i);
    }
    reader_.Leave();
  }

 private:
  // The trace's words as `index` reads them (index->ReadWords of each packet's header vector).
  void ReadTraceWords(const hw::TableIndex& index) {
    words_.resize(trace_.size());
    for (size_t p = 0; p < trace_.size(); ++p) words_[p] = index.ReadWords(HeaderVectorOf(p));
    words_read_by_ = &index;
  }
  const uint8_t* HeaderVectorOf(size_t packet) {
    classbench::FillHeaderVector(trace_[packet], hv_.bytes);
    return hv_.bytes;
  }
  // The first hit among query `q`'s candidates (of the trace's packet `packet`), asking the index again as
  // LookUpBurst says.
  const hw::RuleRecord* FirstHit(const hw::TableIndex& index, const hw::TableIndex::Query& q, size_t packet) {
    size_t n = q.count;
    const uint8_t* hv = nullptr;  // (filled at the first candidate that does not name its hit)
    for (;;) {
      if (n > hw::TableIndex::kMaxCandidates) return WalkChain(HeaderVectorOf(packet));
      for (size_t i = 0; i < n; ++i) {
        const hw::TableIndex::Candidate& c = q.out[i];
        if (c.hit != nullptr) return c.hit;
        if (hv == nullptr) hv = HeaderVectorOf(packet);
        if (const hw::RuleRecord* hit = LookUpIn(*c.matcher, hv)) return hit;
      }
      if (n == 0 || !q.out[n - 1].exact) return nullptr;
      if (hv == nullptr) hv = HeaderVectorOf(packet);
      n = index.Candidates(hv, q.out[n - 1].rank + 1, q.out);
    }
  }
  const hw::RuleRecord* WalkChain(const uint8_t* hv) {
    for (const hw::CompiledMatcher* m = table_.first_matcher(); m != nullptr; m = m->next_matcher()) {
      if (const hw::RuleRecord* hit = LookUpIn(*m, hv)) return hit;
    }
    return nullptr;
  }
  const hw::RuleRecord* LookUpIn(const hw::CompiledMatcher& m, const uint8_t* hv) {
    if (!m.MayMatch(hv)) return nullptr;
    m.definer.Extract(hv, key_);
    return m.table.Find(key_);
  }

  const hw::FlowTable& table_;
  hw::Reclaimer::Reader reader_;
  const std::vector<Header>& trace_;
  const hw::TableIndex* words_read_by_ = nullptr;
  std::vector<hw::TableIndex::PacketWords> words_;
  hw::HeaderVector hv_{};
  hw::TableIndex::Query queries_[kBurst];
  hw::TableIndex::Candidate candidates_[kBurst][hw::TableIndex::kMaxCandidates];
  uint32_t key_[hw::kMatchParamBytes / 4];
};

void BM_DrAclTupleLookup(benchmark::State& state) {
  LookupBed bed = SetUpLookups(state);
  if (bed.dr == nullptr) return;
  DrSetup& s = *bed.dr;
  const std::vector<Header>& trace = bed.trace;
  auto lookup = std::make_unique<TableLookup>(*dr::CompiledTableOf(s.net.acl), s.nic.pf().reclaimer(), trace);
  if (!lookup->valid()) {
    state.SkipWithError("no reader slot left in the NIC's reclaimer");
    return;
  }
  const FirstMatchJudge judge(s.installed, *bed.set);
  const hw::RuleRecord* hits[kBurst];
  size_t at = 0;
  auto look_up_burst = [&] {
    lookup->LookUpBurst(at, kBurst, hits);
    at = (at + kBurst) % trace.size();
    return true;
  };
  // Every packet of the trace must hit a rule of the first filter it fits (false, with the bench skipped,
  // when one does not): on the index's walk first, then once it is compiled, right before timing.
  auto check_verdicts = [&] {
    at = 0;
    for (size_t b = 0; b < trace.size(); b += kBurst) {
      look_up_burst();
      for (size_t i = 0; i < kBurst; ++i) {
        if (!judge.Check(b + i, trace[b + i], hits[i] == nullptr ? 0 : hits[i]->rule_id, state)) return false;
      }
    }
    return true;
  };
  if (!check_verdicts()) return;
  WarmUp(s, look_up_burst);
  if (!check_verdicts()) return;
  for (auto _ : state) {
    look_up_burst();
    benchmark::DoNotOptimize(hits);
  }
  state.SetItemsProcessed(state.iterations() * kBurst);
  CountCompiled(s, state);
}
BENCHMARK(BM_DrAclTupleLookup)->Arg(1000)->Arg(10000);

// Deletes rule `r` of `acl` and puts it back with `actions` and its value (acl.value_of_rule[r]). Not
// inlined, so that a profiler can count the updates apart from the set's install (valgrind --tool=callgrind
// --toggle-collect='*UpdateOneRule*').
ABSL_ATTRIBUTE_NOINLINE absl::Status UpdateOneRule(classbench::DrAcl& acl,
                                                   const std::vector<const dr::Action*>& actions, size_t r) {
  DRSIM_RETURN_IF_ERROR(acl.rules[r].Destroy());
  DRSIM_ASSIGN_OR_RETURN(
      dr::Rule again, dr::Rule::Create(acl.matchers[acl.matcher_of_rule[r]], acl.value_of_rule[r], actions));
  acl.rules[r] = std::move(again);
  return absl::OkStatus();
}

// Moves the rules of an installed set to keys they did not have and back: the first classbench::kMoveBits
// bits of a rule's source address changed (of its destination address when its source prefix is shorter; a
// rule on neither keeps its key) to the next of their other values in turn, so that every insert files a key
// its matcher does not hold, as an update that changes a rule's match does. It changes the values in
// DrAcl::value_of_rule; the caller puts the rules back with them (UpdateOneRule).
class RuleMover {
 public:
  RuleMover(classbench::DrAcl* acl, const std::vector<Filter>& set)
      : acl_(acl), move_(acl->rules.size()), moved_(acl->rules.size(), 0) {
    for (size_t r = 0; r < acl->rules.size(); ++r)
      move_[r] = classbench::MoveOf(set[acl->filter_of_rule[r]], 0);
  }
  // Rule r's value to its next key: one of the others, then its own again.
  void MoveNext(size_t r) { MoveTo(r, moved_[r] % classbench::kMoveValues + 1); }
  // Rule r's value to its own key; false when it had it already.
  bool MoveBack(size_t r) {
    if (moved_[r] == 0) return false;
    MoveTo(r, 0);
    return true;
  }

 private:
  // (The value its first bits are XORed with now is moved_[r]; 0: the rule's own key.)
  void MoveTo(size_t r, uint32_t to) {
    if (!move_[r].has_value()) return;
    constexpr uint32_t kShift = 32 - classbench::kMoveBits;
    classbench::MoveValue({move_[r]->source, (moved_[r] ^ to) << kShift}, &acl_->value_of_rule[r]);
    moved_[r] = to;
  }

  classbench::DrAcl* acl_;
  std::vector<std::optional<classbench::FilterMove>> move_;
  std::vector<uint32_t> moved_;
};

// Puts every rule that `mover` moved back with its own key. False, with the bench skipped, on an error.
bool PutRulesBack(classbench::DrAcl& acl, const std::vector<const dr::Action*>& actions, RuleMover& mover,
                  benchmark::State& state) {
  for (size_t r = 0; r < acl.rules.size(); ++r) {
    if (!mover.MoveBack(r)) continue;
    if (absl::Status u = UpdateOneRule(acl, actions, r); !u.ok()) {
      state.SkipWithError(std::string(u.message()).c_str());
      return false;
    }
  }
  return true;
}

// The update benches: each iteration deletes one DR rule of the installed set and puts it back (two updates;
// the rule's matcher stays), with its own key, or with `change_keys` a key it did not have (RuleMover).
// With `batch` (the bench's second argument), an iteration does the same to that many rules in one
// dr::Rule::UpdateMany call. The table has compiled first (its trees take the updates). Afterwards every
// rule has its own key again, and every trace frame must still hit its first filter; counter "compiled":
// whether the trees still served after the updates.
void RunRuleUpdates(benchmark::State& state, bool change_keys, size_t batch = 0) {
  LookupBed bed = SetUpLookups(state);
  if (bed.dr == nullptr) return;
  const std::vector<Filter>& set = *bed.set;
  std::unique_ptr<DrSetup>& s = bed.dr;
  // The trace through the NIC until the table has compiled, as a table that serves lookups has: the
  // updates then go into its compiled trees too (hw/tree_updates.cc).
  TraceBursts bursts(bed.trace);
  if (!WarmUp(*s, [&] { return bursts.SendNext(s->nic, state); })) return;
  classbench::DrAcl& acl = s->installed;
  const std::vector<const dr::Action*> actions = {&s->drop};
  RuleMover mover(&acl, set);
  size_t r = 0;
  // A prime stride: every rule in turn, not in table order.
  auto next = [&] { r = (r + 7919) % acl.rules.size(); };
  std::vector<dr::Rule::Update> updates;
  for (auto _ : state) {
    absl::Status u;
    if (batch == 0) {
      if (change_keys) mover.MoveNext(r);
      u = UpdateOneRule(acl, actions, r);
      next();
    } else {
      updates.clear();
      for (size_t i = 0; i < batch; ++i, next()) {
        if (change_keys) mover.MoveNext(r);
        updates.push_back({&acl.rules[r], acl.value_of_rule[r].get(), actions});
      }
      u = dr::Rule::UpdateMany(updates);
    }
    if (!u.ok()) {
      state.SkipWithError(std::string(u.message()).c_str());
      break;
    }
  }
  state.SetItemsProcessed(state.iterations() * 2 * std::max<size_t>(batch, 1));
  CountCompiled(*s, state);
  if (!PutRulesBack(acl, actions, mover, state)) return;
  CheckVerdicts(*s, set, bed.trace, kTraceLength, state);
}

void BM_DrAclRuleUpdate(benchmark::State& state) { RunRuleUpdates(state, false); }
BENCHMARK(BM_DrAclRuleUpdate)->Arg(1000)->Arg(10000);

void BM_DrAclRuleMove(benchmark::State& state) { RunRuleUpdates(state, true); }
BENCHMARK(BM_DrAclRuleMove)->Arg(1000)->Arg(10000);

void BM_DrAclRuleUpdateMany(benchmark::State& state) { RunRuleUpdates(state, false, state.range(1)); }
BENCHMARK(BM_DrAclRuleUpdateMany)->Args({1000, 64})->Args({10000, 64});

void BM_DrAclRuleMoveMany(benchmark::State& state) { RunRuleUpdates(state, true, state.range(1)); }
BENCHMARK(BM_DrAclRuleMoveMany)->Args({1000, 64})->Args({10000, 16})->Args({10000, 64})->Args({10000, 256});

// How BM_DrAclLookupUnderChurn moves its rules (its third argument).
enum ChurnMoves : int64_t {
  // Each rule to another key, then straight back to its own (two moves, four updates): the set the trace
  // runs against stays the one it was made for, bar a rule or two, as it does for the quiet rate.
  kAwayAndBack = 0,
  // Each rule to its next key in turn, left there (RuleMover::MoveNext): soon almost every rule is on a key
  // the trace was not made for, a set whose lookups take longer even with no churn. Every rule is moved once
  // before the warm-up, so that the quiet rate is taken on a set of the same kind.
  kLeftMoved = 1,
};

// BM_DrAclLookupUnderChurn's control thread: until `stop`, moves the set's rules in turn as `moves` says
// (RuleMover, then UpdateOneRule: two updates a move) at `rate` updates a second, counting them in `updates`.
// It sleeps a millisecond at a time between its moves and owes at most kMaxChurnDebt of them: a thread that
// lost its CPU for longer goes on at the rate rather than making up for all of it in one burst (which the
// index could judge changes coming too fast, hw::TableIndex::TreeUpkeep). The first error stops it, in
// `error`.
constexpr std::chrono::milliseconds kMaxChurnDebt{10};
void ChurnRules(classbench::DrAcl& acl, const std::vector<const dr::Action*>& actions, RuleMover& mover,
                ChurnMoves moves, double rate, const std::atomic<bool>& stop, std::atomic<uint64_t>& updates,
                absl::Status& error) {
  using Clock = std::chrono::steady_clock;
  const double most_owed = rate * std::chrono::duration<double>(kMaxChurnDebt).count();
  auto start = Clock::now();
  double done = 0;  // updates since `start`
  size_t r = 0;
  while (!stop.load(std::memory_order_relaxed)) {
    const double due = std::chrono::duration<double>(Clock::now() - start).count() * rate;
    if (due - done > most_owed) {
      // (Forgiven: the schedule starts again owing half of what it may.)
      start = Clock::now() - std::chrono::duration_cast<Clock::duration>(kMaxChurnDebt) / 2;
      done = 0;
      continue;
    }
    if (done >= due) {
      // (A millisecond: a wake-up costs the guest several microseconds of a core, which at 100K updates/s
      // woken every 100 µs came to a tenth of one.)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    // (Away and back: the rule stays while it goes back, and the next one is taken after.)
    const bool back = moves == kAwayAndBack && mover.MoveBack(r);
    if (!back) mover.MoveNext(r);
    error = UpdateOneRule(acl, actions, r);
    if (!error.ok()) return;
    if (moves == kLeftMoved || back) r = (r + 7919) % acl.rules.size();
    done += 2;
    updates.fetch_add(2, std::memory_order_relaxed);
  }
}

void BM_DrAclLookupUnderChurn(benchmark::State& state) {
  LookupBed bed = SetUpLookups(state);
  if (bed.dr == nullptr || !CheckVerdicts(*bed.dr, *bed.set, bed.trace, 256, state)) return;
  DrSetup& s = *bed.dr;
  absl::StatusOr<std::unique_ptr<sim::Worker>> worker = sim::Worker::Create(s.nic);
  if (!worker.ok()) {
    state.SkipWithError(std::string(worker.status().message()).c_str());
    return;
  }
  TraceBursts bursts(bed.trace);
  auto send_burst = [&] { return bursts.SendNext(**worker, state); };
  const std::vector<const dr::Action*> actions = {&s.drop};
  RuleMover mover(&s.installed, *bed.set);
  const auto moves = static_cast<ChurnMoves>(state.range(2));
  for (size_t r = 0; moves == kLeftMoved && r < s.installed.rules.size(); ++r) {
    mover.MoveNext(r);
    if (absl::Status u = UpdateOneRule(s.installed, actions, r); !u.ok()) {
      state.SkipWithError(std::string(u.message()).c_str());
      return;
    }
  }
  if (!WarmUp(s, send_burst)) return;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> updates{0};
  absl::Status churn_error;
  std::thread control;
  double control_cpu = 0;  // seconds of CPU the control thread took
  if (state.range(1) > 0) {
    control = std::thread([&] {
      ChurnRules(s.installed, actions, mover, moves, static_cast<double>(state.range(1)), stop, updates,
                 churn_error);
      control_cpu = ThreadCpuSeconds();
    });
  }
  const auto start = std::chrono::steady_clock::now();
  const double worker_cpu_start = ThreadCpuSeconds();
  for (auto _ : state) {
    if (!send_burst()) break;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double worker_cpu = ThreadCpuSeconds() - worker_cpu_start;
  stop = true;
  if (control.joinable()) control.join();
  state.SetItemsProcessed(state.iterations() * kBurst);
  state.counters["updates_per_second"] = static_cast<double>(updates.load()) / seconds;
  state.counters["control_cpu"] = control_cpu / seconds;
  // The worker's share of a CPU while timed, and its packets a second of that CPU: the rate without the
  // time it waited for a core (the machine's cores shared by the worker, the control thread, folds and
  // whatever else runs).
  state.counters["worker_cpu"] = worker_cpu / seconds;
  state.counters["per_cpu_second"] =
      worker_cpu > 0 ? static_cast<double>(state.iterations() * kBurst) / worker_cpu : 0;
  CountCompiled(s, state);
  const hw::TableIndex* index = dr::CompiledTableOf(s.net.acl)->index.load(std::memory_order_acquire);
  if (index != nullptr) {
    state.counters["folds"] = static_cast<double>(index->tree_upkeep().folds);
    state.counters["overflows"] = static_cast<double>(index->tree_upkeep().overflows);
    state.counters["busy"] = static_cast<double>(index->tree_upkeep().busy_retirements);
    state.counters["fold_cpu"] = index->tree_upkeep().fold_seconds / seconds;
  }
  if (!churn_error.ok()) {
    state.SkipWithError(std::string(churn_error.message()).c_str());
    return;
  }
  // Every rule back with its own key, every verdict its first filter's again.
  if (PutRulesBack(s.installed, actions, mover, state))
    CheckVerdicts(s, *bed.set, bed.trace, kTraceLength, state);
}
BENCHMARK(BM_DrAclLookupUnderChurn)
    ->ArgsProduct({{10000}, {0, 100000, 200000}, {kAwayAndBack, kLeftMoved}})
    ->UseRealTime();

}  // namespace
}  // namespace drsim::bench
