// The software NIC on several threads, and while rules change (bench/five_tuple.h: one matcher of
// five-tuple rules that drop, the shared trace):
//   BM_WorkerScaling/N/threads:T   T threads, each with its own sim::Worker, send their share of the
//                                  trace (sim::SpreadByRss: the Toeplitz hash of the five-tuple) in bursts
//                                  of 32 through a matcher of N rules; items/s is the total over threads
//   BM_LookupUnderChurn/N/R        one worker sends the trace through N rules while a control thread
//                                  inserts and deletes R rules/s (0: as fast as it can) of other flows in
//                                  the same matcher; counter updates_per_second: the rate achieved. Every
//                                  trace frame must hit its rule throughout, or the run reports an error.
//
//   bazel run --config=opt //bench:worker_bench -- --benchmark_counters_tabular=true
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "bench/five_tuple.h"
#include "bench/flows.h"
#include "benchmark/benchmark.h"
#include "dr/dr.h"
#include "sim/nic.h"
#include "sim/rss.h"

namespace drsim {
namespace {

using bench::Flow;

// A matcher of `rules` five-tuple rules and the trace's frames, shared by the threads of one run.
struct Loaded {
  explicit Loaded(size_t rules) : t(1), flows(bench::Flows(rules, bench::kRuleSeed)) {
    // Level 1 behind a root jump, as an application's tables are (the root is the kernel's).
    dr::Table root = *dr::Table::Create(t.domain, 0);
    root_matcher = *dr::Matcher::Create(root, 0, 0, nullptr);
    jump = *dr::Action::DestTable(t.table);
    root_rule = *dr::Rule::Create(root_matcher, hw::MatchParams(), {&jump});
    root_table = std::move(root);
    for (const Flow& f : flows)
      this->rules.push_back(*dr::Rule::Create(t.matcher, bench::FiveTupleValue(f), {&t.drop}));
    frames = bench::TraceFrames(flows);
    views.assign(frames.begin(), frames.end());
  }
  bench::FiveTupleTable t;
  dr::Table root_table;
  dr::Matcher root_matcher;
  dr::Action jump;
  dr::Rule root_rule;
  std::vector<Flow> flows;
  std::vector<dr::Rule> rules;
  std::vector<std::vector<uint8_t>> frames;
  std::vector<sim::Frame> views;
};

// The set-up of BM_WorkerScaling, shared by its threads: built by the first thread that asks for `rules`
// (set-up code runs on all threads at once; only the timed loops start together).
Loaded& SharedLoaded(size_t rules, std::unique_ptr<sim::Worker>* worker) {
  static std::mutex mu;
  static std::unique_ptr<Loaded> loaded;
  std::lock_guard<std::mutex> lock(mu);
  if (loaded == nullptr || loaded->flows.size() != rules) {
    loaded.reset();  // the previous run's workers are gone
    loaded = std::make_unique<Loaded>(rules);
  }
  *worker = *sim::Worker::Create(loaded->t.nic);
  return *loaded;
}

void BM_WorkerScaling(benchmark::State& state) {
  std::unique_ptr<sim::Worker> worker;
  const Loaded& l = SharedLoaded(state.range(0), &worker);
  // The thread's share of the trace, as RSS spreads it over the workers (whole bursts of it).
  const std::vector<std::vector<size_t>> shares = sim::SpreadByRss(l.views, state.threads());
  std::vector<sim::Frame> share;
  for (size_t i : shares[state.thread_index()]) share.push_back(l.views[i]);
  share.resize(share.size() / bench::kBurst * bench::kBurst);
  bench::SendDroppedBursts(state, *worker, share);
}

void BM_LookupUnderChurn(benchmark::State& state) {
  Loaded l(state.range(0));
  const double rate = static_cast<double>(state.range(1));
  std::unique_ptr<sim::Worker> worker = *sim::Worker::Create(l.t.nic);
  // The churn: flows of another seed, inserted then deleted in turn, at `rate` operations per second.
  std::vector<Flow> churn_flows = bench::Flows(65536, 77);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> updates{0};
  std::thread control([&] {
    std::vector<dr::Rule> live(churn_flows.size());
    const auto start = std::chrono::steady_clock::now();
    size_t i = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (rate > 0 && updates.load(std::memory_order_relaxed) >= elapsed * rate) {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
        continue;
      }
      dr::Rule& r = live[i];
      if (r.valid()) {
        (void)r.Destroy();
      } else {
        r = *dr::Rule::Create(l.t.matcher, bench::FiveTupleValue(churn_flows[i]), {&l.t.drop});
      }
      i = (i + 1) % live.size();
      updates.fetch_add(1, std::memory_order_relaxed);
    }
  });
  const auto start = std::chrono::steady_clock::now();
  bench::SendDroppedBursts(state, *worker, l.views);  // every frame must keep hitting its rule
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const uint64_t done = updates.load();
  stop = true;
  control.join();
  state.counters["updates_per_second"] = done / seconds;
}

BENCHMARK(BM_WorkerScaling)->Arg(100000)->Arg(1000000)->ThreadRange(1, 2)->UseRealTime();
BENCHMARK(BM_LookupUnderChurn)
    ->Args({100000, 0})
    ->Args({100000, 100000})
    ->Args({1000000, 100000})
    ->UseRealTime()
    ->Unit(benchmark::kNanosecond);

}  // namespace
}  // namespace drsim
