#include "classbench/churn_check.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "base/status_macros.h"
#include "classbench/acl_nic.h"
#include "classbench/dr_acl.h"
#include "classbench/header_frame.h"
#include "dr/compiled_table.h"
#include "dr/dr.h"
#include "hw/match_params.h"
#include "hw/reclaimer.h"
#include "hw/table_index.h"
#include "sim/nic.h"

namespace drsim::classbench {
namespace {

constexpr size_t kBurst = 32;
constexpr uint32_t kNoFilter = 0xffffffff;

// Filter i's rules carry tag i + 1.
uint32_t FilterOf(const sim::Verdict& v) { return v.has_flow_tag ? v.flow_tag - 1 : kNoFilter; }

std::string Describe(uint32_t filter) {
  return filter == kNoFilter ? std::string("no filter") : absl::StrFormat("filter %d", filter);
}

// The control thread's progress, as workers read it: churn s (0-based) removes and restores filter
// log[s % log.size()]; `started` counts churns begun, `finished` churns whose filter is whole again. Log
// entries are stored with release and loaded with acquire, so a worker that reads churn s's entry then sees
// `finished` >= s.
struct ChurnState {
  explicit ChurnState(size_t log_size) : log(log_size) {}
  std::atomic<uint64_t> started{0};
  std::atomic<uint64_t> finished{0};
  std::vector<std::atomic<uint32_t>> log;
  std::atomic<bool> stop{false};
};

class Checker {
 public:
  Checker(const std::vector<Filter>& filters, const std::vector<Header>& trace,
          const ChurnCheckOptions& options)
      : filters_(filters), options_(options), moved_(filters.size()) {
    for (uint32_t i = 0; i < filters.size() && options.move_keys; ++i) {
      if (const std::optional<FilterMove> move = MoveOf(filters[i], i))
        moved_[i] = MovedFilter(filters[i], *move);
    }
    for (const Header& h : trace) {
      headers_.push_back(AsParsed(h));
      frames_.push_back(FrameOf(headers_.back()));
      const std::optional<size_t> first = FirstMatch(filters, headers_.back());
      first_.push_back(first ? static_cast<uint32_t>(*first) : kNoFilter);
    }
    views_.assign(frames_.begin(), frames_.end());
  }

  // Whether frame `index` ending as `verdict` is what the NIC may give while the churns [from, to) of
  // `churn` (none: nullptr) overlap its walk.
  bool Fits(size_t index, const sim::Verdict& verdict, const ChurnState* churn, uint64_t from,
            uint64_t to) const {
    const uint32_t got = FilterOf(verdict);
    return got == first_[index] || (churn != nullptr && Explained(index, got, *churn, from, to));
  }

  // Counts frame `index` ending as `verdict` as a mismatch, and describes it if few are described yet.
  void Report(size_t index, const sim::Verdict& verdict, bool churning) {
    std::lock_guard<std::mutex> lock(mu_);
    ++mismatches_;
    if (examples_.size() < options_.max_reported) {
      examples_.push_back(absl::StrFormat("trace line %d: %s, expected %s%s", index + 1,
                                          Describe(FilterOf(verdict)), Describe(first_[index]),
                                          churning ? " (filters churned meanwhile do not explain it)" : ""));
    }
  }

  // Sends frames index % workers == shard in bursts until `churn.stop`, checking each verdict.
  absl::Status RunWorker(sim::Nic& nic, int shard, ChurnState& churn, uint64_t* frames, uint64_t* unchecked) {
    DRSIM_ASSIGN_OR_RETURN(std::unique_ptr<sim::Worker> worker, sim::Worker::Create(nic));
    std::vector<size_t> mine;
    for (size_t i = shard; i < views_.size(); i += options_.workers) mine.push_back(i);
    if (mine.empty()) return absl::OkStatus();
    std::vector<sim::Frame> burst;
    std::vector<size_t> indices;  // of the burst's frames in the trace
    std::vector<sim::Verdict> verdicts(kBurst);
    std::vector<size_t> unexplained;  // places in the burst of frames Fits refuses
    size_t at = 0;
    while (!churn.stop.load(std::memory_order_relaxed)) {
      burst.clear();
      indices.clear();
      for (size_t n = 0; n < kBurst; ++n, at = (at + 1) % mine.size()) {
        burst.push_back(views_[mine[at]]);
        indices.push_back(mine[at]);
      }
      const uint64_t from = churn.finished.load(std::memory_order_acquire);
      DRSIM_RETURN_IF_ERROR(worker->ReceiveFromWire(burst, absl::MakeSpan(verdicts)));
      const uint64_t to = churn.started.load(std::memory_order_acquire);
      unexplained.clear();
      for (size_t n = 0; n < burst.size(); ++n) {
        if (!Fits(indices[n], verdicts[n], &churn, from, to)) unexplained.push_back(n);
      }
      // The log entries read above were churns [from, to)'s unless later churns reused some meanwhile (a
      // worker preempted in a burst can overlap thousands). Churn s stores its entry after `finished`
      // counts churn s - 1: had one been reused, `finished` now says so. Such a burst is not checked.
      if (churn.finished.load(std::memory_order_acquire) - from >= churn.log.size()) {
        *unchecked += burst.size();
        continue;
      }
      for (const size_t n : unexplained) Report(indices[n], verdicts[n], /*churning=*/true);
      *frames += burst.size();
    }
    return absl::OkStatus();
  }

  // Every frame once, nothing churning: each must hit exactly its first filter.
  absl::Status FinalPass(sim::Nic& nic, uint64_t* frames) {
    std::vector<sim::Verdict> verdicts(views_.size());
    DRSIM_RETURN_IF_ERROR(nic.ReceiveFromWire(views_, absl::MakeSpan(verdicts)));
    for (size_t i = 0; i < views_.size(); ++i) {
      if (!Fits(i, verdicts[i], nullptr, 0, 0)) Report(i, verdicts[i], /*churning=*/false);
    }
    *frames += views_.size();
    return absl::OkStatus();
  }

  uint64_t mismatches() const { return mismatches_; }

  // Whether `got` is what a walk can find while the churned filters are missing (or moved), each at the
  // moment the walk passes its matcher: `got` fits the header, or was churned and its moved version fits it
  // (or it is no filter), and every filter before it that the header fits was churned during the burst.
  bool Explained(size_t index, uint32_t got, const ChurnState& churn, uint64_t from, uint64_t to) const {
    const Header& h = headers_[index];
    auto churned = [&](uint32_t filter) {
      for (uint64_t s = from; s < to; ++s) {
        if (churn.log[s % churn.log.size()].load(std::memory_order_acquire) == filter) return true;
      }
      return false;
    };
    for (uint32_t i = 0; i < filters_.size(); ++i) {
      const bool fits = filters_[i].Matches(h);
      const bool moved_fits = moved_[i].has_value() && moved_[i]->Matches(h);
      if (!fits && !moved_fits) continue;
      // (A moved version is in only while its filter churns.)
      if (i == got) return fits || churned(i);
      if (fits && !churned(i)) return false;
    }
    return got == kNoFilter;
  }
  std::vector<std::string> examples() const { return examples_; }

 private:
  const std::vector<Filter>& filters_;
  const ChurnCheckOptions& options_;
  std::vector<std::optional<Filter>> moved_;  // with move_keys, each filter's moved version (MoveOf)
  std::vector<Header> headers_;               // as parsed
  std::vector<std::vector<uint8_t>> frames_;
  std::vector<sim::Frame> views_;
  std::vector<uint32_t> first_;  // the model's verdict of each
  std::mutex mu_;
  uint64_t mismatches_ = 0;
  std::vector<std::string> examples_;
};

}  // namespace

absl::StatusOr<ChurnCheckReport> RunChurnCheck(const std::vector<Filter>& filters,
                                               const std::vector<Header>& trace,
                                               const ChurnCheckOptions& options) {
  if (filters.empty()) return absl::InvalidArgumentError("the filter set is empty");
  if (trace.empty()) return absl::InvalidArgumentError("the trace is empty");
  if (options.workers < 1 || options.workers >= static_cast<int>(hw::Reclaimer::kMaxReaders)) {
    return absl::InvalidArgumentError(absl::StrFormat("workers = %d: 1 to %d", options.workers,
                                                      static_cast<int>(hw::Reclaimer::kMaxReaders) - 1));
  }
  if (options.churn_log < 1) return absl::InvalidArgumentError("churn_log = 0: at least 1");
  Checker checker(filters, trace, options);

  AclNic setup;  // first, so it goes last
  sim::Nic& nic = setup.nic;
  dr::Action drop = *dr::Action::Drop();
  std::vector<dr::Action> tags;
  for (size_t i = 0; i < filters.size(); ++i) {
    DRSIM_ASSIGN_OR_RETURN(dr::Action tag, dr::Action::Tag(static_cast<uint32_t>(i + 1)));
    tags.push_back(std::move(tag));
  }
  auto actions_of = [&](size_t filter) { return std::vector<const dr::Action*>{&tags[filter], &drop}; };
  DRSIM_ASSIGN_OR_RETURN(DrAcl acl, InstallAcl(setup.acl, filters, actions_of));
  std::vector<std::vector<size_t>> rules_of_filter(filters.size());
  for (size_t r = 0; r < acl.rules.size(); ++r) rules_of_filter[acl.filter_of_rule[r]].push_back(r);

  ChurnCheckReport report;
  ChurnState churn(options.churn_log);
  std::vector<absl::Status> worker_status(options.workers);
  std::vector<uint64_t> frames(options.workers), unchecked(options.workers);
  std::vector<std::thread> threads;
  for (int w = 0; w < options.workers; ++w) {
    threads.emplace_back([&, w] {
      worker_status[w] = checker.RunWorker(nic, w, churn, &frames[w], &unchecked[w]);
      if (!worker_status[w].ok()) churn.stop.store(true);
    });
  }

  // Deletes filter k's rules and puts them back, moved (MoveOf) when `move` is set: all of them, then all
  // of them again, or with batch_updates rule by rule in one UpdateMany call.
  std::vector<hw::MatchParams> values;
  std::vector<dr::Rule::Update> updates;
  auto reinstall = [&](uint32_t k, const FilterMove* move) -> absl::Status {
    const std::vector<const dr::Action*> actions = actions_of(k);
    if (options.batch_updates) {
      values.clear();
      updates.clear();
      for (size_t r : rules_of_filter[k]) {
        values.push_back(acl.value_of_rule[r]);
        if (move != nullptr) MoveValue(*move, &values.back());
      }
      for (size_t i = 0; i < values.size(); ++i) {
        updates.push_back({&acl.rules[rules_of_filter[k][i]], values[i].get(), actions});
      }
      DRSIM_RETURN_IF_ERROR(dr::Rule::UpdateMany(updates));
      report.rule_updates += 2 * updates.size();
      return absl::OkStatus();
    }
    for (size_t r : rules_of_filter[k]) {
      DRSIM_RETURN_IF_ERROR(acl.rules[r].Destroy());
      ++report.rule_updates;
    }
    for (size_t r : rules_of_filter[k]) {
      hw::MatchParams value = acl.value_of_rule[r];
      if (move != nullptr) MoveValue(*move, &value);
      DRSIM_ASSIGN_OR_RETURN(dr::Rule again,
                             dr::Rule::Create(acl.matchers[acl.matcher_of_rule[r]], value, actions));
      acl.rules[r] = std::move(again);
      ++report.rule_updates;
    }
    return absl::OkStatus();
  };

  // The control thread: remove one filter's rules, put them back (moved first, with move_keys), next filter.
  absl::Status control;
  std::mt19937 rng(options.seed);
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(options.seconds);
  const auto quiet_every = std::chrono::duration<double>(options.quiet_every);
  auto next_quiet = std::chrono::steady_clock::now() + quiet_every;
  for (uint64_t s = 0; control.ok() && !churn.stop.load() && std::chrono::steady_clock::now() < end; ++s) {
    if (options.quiet_every > 0 && std::chrono::steady_clock::now() >= next_quiet) {
      std::this_thread::sleep_for(std::chrono::duration<double>(options.quiet_for));
      next_quiet = std::chrono::steady_clock::now() + quiet_every;
      ++report.quiet_spells;
    }
    const uint32_t k = static_cast<uint32_t>(rng() % filters.size());
    // (Stored after `finished` counted churn s - 1: a worker that reads this entry sees that count.)
    churn.log[s % churn.log.size()].store(k, std::memory_order_release);
    churn.started.store(s + 1, std::memory_order_release);
    const std::optional<FilterMove> move = options.move_keys ? MoveOf(filters[k], k) : std::nullopt;
    if (move.has_value()) control = reinstall(k, &*move);
    if (control.ok()) control = reinstall(k, nullptr);
    churn.finished.store(s + 1, std::memory_order_release);
    ++report.filter_churns;
  }
  churn.stop.store(true);
  for (std::thread& t : threads) t.join();
  if (!control.ok()) return control;
  for (const absl::Status& s : worker_status) {
    if (!s.ok()) return s;
  }
  for (int w = 0; w < options.workers; ++w) {
    report.frames += frames[w];
    report.unchecked += unchecked[w];
  }
  if (const hw::TableIndex* index = dr::CompiledTableOf(setup.acl)->index.load(std::memory_order_acquire)) {
    report.tree_folds = index->tree_upkeep().folds;
    report.tree_overflows = index->tree_upkeep().overflows;
    report.compiled_at_end = index->IsCompiled();
  }
  DRSIM_RETURN_IF_ERROR(checker.FinalPass(nic, &report.frames));
  report.mismatches = checker.mismatches();
  report.examples = checker.examples();
  return report;
}

}  // namespace drsim::classbench
