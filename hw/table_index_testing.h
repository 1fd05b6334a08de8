// Test support for TableIndex, shared by its tests and its fuzzer: a table's matchers and rules kept beside
// an index over them (IndexedTable), ACL keys to fill them with, and judges of the candidates a lookup gets
// (CoverProblem, SameCandidates), which say what is wrong rather than assert, so that a fuzzer can use them.
#ifndef DRSIM_HW_TABLE_INDEX_TESTING_H_
#define DRSIM_HW_TABLE_INDEX_TESTING_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "hw/definer.h"
#include "hw/flow_table.h"
#include "hw/match_params.h"
#include "hw/reclaimer.h"
#include "hw/table_index.h"

namespace drsim::hw {

// An ACL key; `ttl`, a word no index of these tables reads: a matcher masking it has inexact entries.
MatchParams Acl(uint32_t src, uint32_t dst, uint16_t dport, uint8_t proto, uint8_t ttl = 0);
// A mask of the first `length` bits (0..32).
uint32_t Prefix(int length);

// A table's matchers and their rules, indexed, with what each matcher holds kept aside to judge by.
class IndexedTable {
 public:
  explicit IndexedTable(Reclaimer* reclaimer = nullptr) : reclaimer_(reclaimer) {}

  // A matcher of `priority` over `mask`; the index is built over the first ones made (Build).
  size_t AddMatcher(uint16_t priority, const MatchParams& mask) {
    matchers_.push_back(std::make_unique<CompiledMatcher>(
        static_cast<uint32_t>(matchers_.size() + 1), priority, sequence_++, Definer::FromMask(mask.bytes())));
    states_.push_back(std::make_unique<TableIndex::MatcherState>());
    keys_.emplace_back();
    if (index_ != nullptr) index_->AddMatcher(matchers_.back().get(), states_.back().get());
    return matchers_.size() - 1;
  }
  void Build() {
    std::vector<const CompiledMatcher*> all;
    for (const auto& m : matchers_) all.push_back(m.get());
    index_ = std::make_unique<TableIndex>(all, reclaimer_);
    for (size_t i = 0; i < matchers_.size(); ++i) {
      index_->AddMatcher(matchers_[i].get(), states_[i].get());
      for (const std::vector<uint32_t>& key : keys_[i]) index_->AddRule(states_[i].get(), key.data());
    }
  }
  void AddRule(size_t m, const MatchParams& value) {
    std::vector<uint32_t> key(matchers_[m]->definer.key_words());
    matchers_[m]->definer.Extract(value.bytes(), key.data());
    if (index_ != nullptr) index_->AddRule(states_[m].get(), key.data());
    keys_[m].insert(key);
  }
  // Removes one rule of matcher `m` (the `k`-th of its keys); false when it has none.
  bool RemoveRule(size_t m, size_t k) {
    if (keys_[m].empty()) return false;
    auto it = keys_[m].begin();
    std::advance(it, k % keys_[m].size());
    const std::vector<uint32_t> key = *it;
    keys_[m].erase(it);
    RemoveKey(m, key);
    return true;
  }
  // Removes a rule of matcher `m` with `value`.
  void RemoveValue(size_t m, const MatchParams& value) {
    std::vector<uint32_t> key(matchers_[m]->definer.key_words());
    matchers_[m]->definer.Extract(value.bytes(), key.data());
    keys_[m].erase(keys_[m].find(key));
    RemoveKey(m, key);
  }
  // Matcher `m` leaves the index, its rules with it; RejoinMatcher brings it back without them.
  void RemoveMatcher(size_t m) {
    index_->RemoveMatcher(states_[m].get());
    keys_[m].clear();
  }
  void RejoinMatcher(size_t m) { index_->AddMatcher(matchers_[m].get(), states_[m].get()); }
  // Names `hit` as the rule of matcher `m` with `value` (NameHit), or takes it back (DropHit).
  void NameHit(size_t m, const MatchParams& value, const RuleRecord* hit) {
    index_->NameHit(states_[m].get(), ItemOf(m, value), hit);
  }
  void DropHit(size_t m, const MatchParams& value, const RuleRecord* hit) {
    index_->DropHit(ItemOf(m, value), hit);
  }

  // The matchers holding a rule `packet` matches.
  std::set<const CompiledMatcher*> Hits(const MatchParams& packet) const {
    std::set<const CompiledMatcher*> hits;
    for (size_t i = 0; i < matchers_.size(); ++i) {
      std::vector<uint32_t> key(matchers_[i]->definer.key_words());
      matchers_[i]->definer.Extract(packet.bytes(), key.data());
      if (keys_[i].count(key) > 0) hits.insert(matchers_[i].get());
    }
    return hits;
  }
  std::vector<TableIndex::Candidate> Candidates(const MatchParams& packet) const {
    std::vector<TableIndex::Candidate> out(TableIndex::kMaxCandidates);
    const size_t n = index_->Candidates(packet.bytes(), 0, out.data());
    out.resize(n > TableIndex::kMaxCandidates ? 0 : n);
    return out;
  }
  // The steps a walk ahead to where matcher `m` would file `value` takes (ContinueFiling calls that return
  // true) on `on` (nullptr: this index), up to kMaxSteps.
  static constexpr int kMaxSteps = 64;
  int FilingSteps(size_t m, const MatchParams& value, const TableIndex* on = nullptr) const {
    TableIndex::Filing filing;
    index_->StartFiling(*states_[m], KeyOf(m, value).data(), &filing);
    int steps = 0;
    while (steps < kMaxSteps && (on != nullptr ? on : index_.get())->ContinueFiling(&filing)) ++steps;
    return steps;
  }
  const TableIndex& index() const { return *index_; }
  const CompiledMatcher* matcher(size_t m) const { return matchers_[m].get(); }
  const TableIndex::MatcherState& state(size_t m) const { return *states_[m]; }

 private:
  std::vector<uint32_t> KeyOf(size_t m, const MatchParams& value) const {
    std::vector<uint32_t> key(matchers_[m]->definer.key_words());
    matchers_[m]->definer.Extract(value.bytes(), key.data());
    return key;
  }
  // The index's item counting matcher `m`'s rules with `key`'s index words (nullptr: none).
  TableIndex::Item* ItemOfKey(size_t m, const std::vector<uint32_t>& key) const {
    return TableIndex::FindItem(states_[m].get(), TableIndex::ValuesOf(*states_[m], key.data()));
  }
  TableIndex::Item* ItemOf(size_t m, const MatchParams& value) const { return ItemOfKey(m, KeyOf(m, value)); }
  // Takes a rule of matcher `m` with `key` out of the index, if built.
  void RemoveKey(size_t m, const std::vector<uint32_t>& key) {
    if (index_ != nullptr) index_->RemoveRule(ItemOfKey(m, key));
  }

  uint64_t sequence_ = 1;
  std::vector<std::unique_ptr<CompiledMatcher>> matchers_;
  std::vector<std::unique_ptr<TableIndex::MatcherState>> states_;
  std::vector<std::multiset<std::vector<uint32_t>>> keys_;
  Reclaimer* reclaimer_;
  std::unique_ptr<TableIndex> index_;
};

// `n` matchers of `t` over whole addresses, the destination port and the protocol (exact entries), of
// priorities 0 to n - 1.
std::vector<size_t> ExactMatchers(IndexedTable* t, int n);

// A thread that, until Stop(), looks the rules of `staying` up in turn (rule i is matcher ms[i]'s) in read
// sections of `reclaimer`, and counts the lookups whose candidates do not name the rule's matcher.
class StayingRulesReader {
 public:
  StayingRulesReader(const IndexedTable& t, Reclaimer* reclaimer, const std::vector<MatchParams>& staying,
                     const std::vector<size_t>& ms)
      : thread_([this, &t, reclaimer, staying, ms] {
          Reclaimer::Reader r(reclaimer);
          std::vector<TableIndex::Candidate> out(TableIndex::kMaxCandidates);
          while (!done_.load(std::memory_order_relaxed)) {
            for (size_t i = 0; i < staying.size(); ++i) {
              r.Enter();
              const size_t n = t.index().Candidates(staying[i].bytes(), 0, out.data());
              bool found = n > TableIndex::kMaxCandidates;  // (overflow: the chain is walked instead)
              for (size_t c = 0; c < n && c < out.size(); ++c) found |= out[c].matcher == t.matcher(ms[i]);
              r.Leave();
              if (!found) misses_.fetch_add(1, std::memory_order_relaxed);
            }
          }
        }) {}
  // Stops the thread and returns the lookups that missed.
  int Stop() {
    done_ = true;
    thread_.join();
    return misses_.load();
  }

 private:
  std::atomic<bool> done_{false};
  std::atomic<int> misses_{0};
  std::thread thread_;  // (last: it starts once the counters are there)
};

// `steps` times, at random: adds a rule `make_rule` makes (its matcher and value) to `t`, or removes one of
// those it added before (`added`, which holds at most `most`).
template <typename MakeRule>
void ChurnRules(IndexedTable* t, std::mt19937* rng, int steps, size_t most, MakeRule make_rule,
                std::vector<std::pair<size_t, MatchParams>>* added) {
  for (int step = 0; step < steps; ++step) {
    if (added->size() < most && (added->empty() || (*rng)() % 2 == 0)) {
      added->push_back(make_rule());
      t->AddRule(added->back().first, added->back().second);
    } else {
      const size_t k = (*rng)() % added->size();
      t->RemoveValue((*added)[k].first, (*added)[k].second);
      (*added)[k] = added->back();
      added->pop_back();
    }
  }
}

// What is wrong with `candidates`, the candidates `t`'s index named for `packet` (from the first rank), or ""
// when nothing is: they must come in lookup order, each once, up to the first exact one, which holds a hit;
// every matcher holding a hit up to there (anywhere, when none is exact) must be among them.
std::string CoverProblem(const IndexedTable& t, const MatchParams& packet,
                         const std::vector<TableIndex::Candidate>& candidates);

// The candidates of `packets`, looked up together, each from rank `from_rank`.
std::vector<std::vector<TableIndex::Candidate>> CandidatesOfAll(const TableIndex& index,
                                                                const std::vector<MatchParams>& packets,
                                                                uint64_t from_rank);
// Where `got` and `want` (candidates of the same packets) first differ, or "" when they do not; `what` names
// `got` in the message.
std::string SameCandidates(const std::vector<std::vector<TableIndex::Candidate>>& got,
                           const std::vector<std::vector<TableIndex::Candidate>>& want, const char* what);

}  // namespace drsim::hw

#endif  // DRSIM_HW_TABLE_INDEX_TESTING_H_
