// Rule updates and frames through the software NIC on five-tuple rules (bench/flows.h):
//   BM_RuleInsert/N         dr::Rule::Create of N rules into one matcher (rules/s), the table growing
//   BM_RuleInsertSized/N    the same into a matcher sized for N rules beforehand (set_layout's rule-count
//                           hint, NUM_RULE | RESIZABLE), as rte_hash_bench's table is created for N keys
//   BM_RuleInsertMany/N     the N rules into a sized matcher with one dr::Rule::CreateMany call
//   BM_RuleInsertFlows/N    BM_RuleInsertSized with each value written from its flow just before its Create,
//                           into one reused buffer, as a datapath offloading flows builds them (what
//                           rte_hash_bench's insert reads is the same flows' 16-byte keys)
//   BM_RuleDelete/N         destroying those N rules (rules/s)
//   BM_RuleInsert16/N       N rules spread over 16 matchers of different masks (source prefixes /17../32)
//   BM_NicLookup/N          the trace through the NIC in bursts of 32: parse, definer, lookup, drop
//   BM_NicLookupJumps/N     the same behind three tables of jumps (all -> UDP -> destination /8 -> 5-tuple)
// The insert benches pass rule values as bench::PackedValues (match_sz 64, one array), as rte_hash_bench
// passes its keys. rte_hash's benches (bench/rte_hash_bench.cc) are linked in too: bench/README.md's ratios
// are taken between runs of one process, the two interleaved.
//
//   bazel run --config=opt //bench:nic_bench -- --benchmark_counters_tabular=true
//   bazel run --config=opt //bench:nic_bench -- --benchmark_enable_random_interleaving=true
//     --benchmark_repetitions=3
//     --benchmark_filter='(NicLookup|RteHashLookupBulk|RuleInsert(Flows|Sized|Many)|RteHashInsert)/1000000$'
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "bench/five_tuple.h"
#include "bench/flows.h"
#include "benchmark/benchmark.h"
#include "dr/dr.h"
#include "hw/match_params.h"
#include "sim/frame_builder.h"
#include "sim/nic.h"

namespace drsim {
namespace {

using hw::kOuter;

using bench::FiveTupleMask;
using bench::FiveTupleTable;
using bench::Flow;
using bench::Flows;
using bench::PackedValues;

// How a bench's rules go in.
enum class Insert {
  kGrowing,         // Rule::Create one by one, the table growing
  kSized,           // the same into a matcher sized for them beforehand
  kManySized,       // one Rule::CreateMany of them all into a sized matcher
  kSizedFromFlows,  // as kSized, each value written from its flow into one buffer just before its Create
};

void InsertRules(benchmark::State& state, Insert how) {
  const size_t n = state.range(0);
  const std::vector<Flow> flows = Flows(n, 1);
  const PackedValues values(flows);
  if (std::memcmp(values[0]->match_buf, bench::FiveTupleValue(flows[0]).bytes(), hw::kSectionBytes) != 0) {
    state.SkipWithError("the packed values differ from the MatchBuilder's");
    return;
  }
  std::vector<const mlx5dv_flow_match_parameters*> value_list;
  for (size_t i = 0; i < n; ++i) value_list.push_back(values[i]);
  for (auto _ : state) {
    state.PauseTiming();
    // The handles' memory is touched here, so that its page faults (dear on this guest) are not timed:
    // rte_hash_bench keeps no handles at all. Before the table, whose memory is then the last written, as
    // rte_hash_bench's table is.
    std::vector<dr::Rule> rules(n);
    FiveTupleTable t(1);
    if (how != Insert::kGrowing) {
      mlx5dv_dr_matcher_layout layout = {};
      layout.flags = MLX5DV_DR_MATCHER_LAYOUT_RESIZABLE | MLX5DV_DR_MATCHER_LAYOUT_NUM_RULE;
      while ((size_t{1} << layout.log_num_of_rules_hint) < n) ++layout.log_num_of_rules_hint;
      if (absl::Status s = t.matcher.SetLayout(layout); !s.ok()) {
        state.SkipWithError(std::string(s.message()).c_str());
        return;
      }
    }
    state.ResumeTiming();
    if (how == Insert::kManySized) {
      if (!dr::Rule::CreateMany(t.matcher, value_list, {&t.drop}, absl::MakeSpan(rules)).ok()) {
        state.SkipWithError("CreateMany failed");
      }
    } else if (how == Insert::kSizedFromFlows) {
      bench::FiveTupleValueBuffer value;
      for (size_t i = 0; i < n; ++i) {
        bench::WriteFiveTupleValue(flows[i], value.get());
        rules[i] = *dr::Rule::Create(t.matcher, value.get(), {&t.drop});
      }
    } else {
      for (size_t i = 0; i < n; ++i) rules[i] = *dr::Rule::Create(t.matcher, values[i], {&t.drop});
    }
    state.PauseTiming();
    rules.clear();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * n);
}

void BM_RuleInsert(benchmark::State& state) { InsertRules(state, Insert::kGrowing); }
BENCHMARK(BM_RuleInsert)->Arg(1000)->Arg(100000)->Arg(1000000)->Unit(benchmark::kMillisecond);

void BM_RuleInsertSized(benchmark::State& state) { InsertRules(state, Insert::kSized); }
BENCHMARK(BM_RuleInsertSized)->Arg(1000)->Arg(100000)->Arg(1000000)->Unit(benchmark::kMillisecond);

void BM_RuleInsertMany(benchmark::State& state) { InsertRules(state, Insert::kManySized); }
BENCHMARK(BM_RuleInsertMany)->Arg(1000)->Arg(100000)->Arg(1000000)->Unit(benchmark::kMillisecond);

void BM_RuleInsertFlows(benchmark::State& state) { InsertRules(state, Insert::kSizedFromFlows); }
BENCHMARK(BM_RuleInsertFlows)->Arg(1000)->Arg(100000)->Arg(1000000)->Unit(benchmark::kMillisecond);

void BM_RuleDelete(benchmark::State& state) {
  const size_t n = state.range(0);
  const PackedValues values(Flows(n, 1));
  for (auto _ : state) {
    state.PauseTiming();
    FiveTupleTable t(1);
    std::vector<dr::Rule> rules;
    rules.reserve(n);
    for (size_t i = 0; i < n; ++i) rules.push_back(*dr::Rule::Create(t.matcher, values[i], {&t.drop}));
    state.ResumeTiming();
    for (dr::Rule& r : rules) {
      if (!r.Destroy().ok()) state.SkipWithError("rule destroy failed");
    }
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_RuleDelete)->Arg(1000)->Arg(100000)->Arg(1000000)->Unit(benchmark::kMillisecond);

// Matcher k (0..15) matches the source under a /(17 + k) prefix, the rest of the five-tuple exactly.
hw::MatchParams PrefixMask(int k) {
  return *hw::MatchBuilder()
              .IpVersion(kOuter, 4)
              .IpProtocol(kOuter, 0xff)
              .Ipv4Src(kOuter, hw::Ipv4Address::PrefixMask(17 + k))
              .Ipv4Dst(kOuter, hw::Ipv4Address::PrefixMask(32))
              .UdpSport(kOuter, 0xffff)
              .UdpDport(kOuter, 0xffff)
              .Build();
}

void BM_RuleInsert16(benchmark::State& state) {
  const size_t n = state.range(0);
  std::vector<Flow> flows = Flows(n, 1);
  for (size_t i = 0; i < n; ++i)
    flows[i].src &= hw::Ipv4Address::PrefixMask(17 + static_cast<int>(i % 16)).value;
  const PackedValues values(flows);
  for (auto _ : state) {
    state.PauseTiming();
    sim::Nic nic;
    dr::Domain domain = *dr::Domain::Create(nic.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
    dr::Table table = *dr::Table::Create(domain, 1);
    std::vector<dr::Matcher> matchers;
    for (int k = 0; k < 16; ++k) matchers.push_back(*dr::Matcher::Create(table, 0, PrefixMask(k)));
    dr::Action drop = *dr::Action::Drop();
    std::vector<dr::Rule> rules;
    rules.reserve(n);
    state.ResumeTiming();
    for (size_t i = 0; i < n; ++i) rules.push_back(*dr::Rule::Create(matchers[i % 16], values[i], {&drop}));
    state.PauseTiming();
    rules.clear();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_RuleInsert16)->Arg(100000)->Arg(1000000)->Unit(benchmark::kMillisecond);

// Sends the trace's frames (bench/flows.h) of `flows` through `nic` in bursts, as long as `state` runs; every
// frame must end in a drop.
void RunTrace(benchmark::State& state, sim::Nic& nic, const std::vector<Flow>& flows) {
  const std::vector<std::vector<uint8_t>> frames = bench::TraceFrames(flows);
  const std::vector<sim::Frame> views(frames.begin(), frames.end());
  std::unique_ptr<sim::Worker> worker = *sim::Worker::Create(nic);
  bench::SendDroppedBursts(state, *worker, views);
}

void BM_NicLookup(benchmark::State& state) {
  const size_t n = state.range(0);
  FiveTupleTable root(0);
  std::vector<Flow> flows = Flows(n, bench::kRuleSeed);
  std::vector<dr::Rule> rules;
  for (const Flow& f : flows)
    rules.push_back(*dr::Rule::Create(root.matcher, bench::FiveTupleValue(f), {&root.drop}));
  RunTrace(state, root.nic, flows);
}
BENCHMARK(BM_NicLookup)->Arg(1000)->Arg(100000)->Arg(1000000);

void BM_NicLookupJumps(benchmark::State& state) {
  const size_t n = state.range(0);
  sim::Nic nic;
  dr::Domain domain = *dr::Domain::Create(nic.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
  dr::Table root = *dr::Table::Create(domain, 0), by_proto = *dr::Table::Create(domain, 1),
            by_net = *dr::Table::Create(domain, 2), flows_table = *dr::Table::Create(domain, 3);
  dr::Action to_proto = *dr::Action::DestTable(by_proto), to_net = *dr::Action::DestTable(by_net),
             to_flows = *dr::Action::DestTable(flows_table), drop = *dr::Action::Drop();
  std::vector<dr::Matcher> matchers;
  std::vector<dr::Rule> rules;
  matchers.push_back(*dr::Matcher::Create(root, 0, 0, nullptr));
  rules.push_back(*dr::Rule::Create(matchers.back(), hw::MatchParams(), {&to_proto}));
  matchers.push_back(*dr::Matcher::Create(
      by_proto, 0, *hw::MatchBuilder().IpVersion(kOuter, 4).IpProtocol(kOuter, 0xff).Build()));
  rules.push_back(*dr::Rule::Create(
      matchers.back(), *hw::MatchBuilder().IpVersion(kOuter, 4).IpProtocol(kOuter, 17).Build(), {&to_net}));
  // 256 rules, one per destination /8.
  matchers.push_back(*dr::Matcher::Create(
      by_net, 0,
      *hw::MatchBuilder().IpVersion(kOuter, 4).Ipv4Dst(kOuter, hw::Ipv4Address::PrefixMask(8)).Build()));
  for (uint32_t net = 0; net < 256; ++net) {
    rules.push_back(*dr::Rule::Create(
        matchers.back(), *hw::MatchBuilder().IpVersion(kOuter, 4).Ipv4Dst(kOuter, {net << 24}).Build(),
        {&to_flows}));
  }
  matchers.push_back(*dr::Matcher::Create(flows_table, 0, FiveTupleMask()));
  std::vector<Flow> flows = Flows(n, bench::kRuleSeed);
  for (const Flow& f : flows)
    rules.push_back(*dr::Rule::Create(matchers.back(), bench::FiveTupleValue(f), {&drop}));
  RunTrace(state, nic, flows);
}
BENCHMARK(BM_NicLookupJumps)->Arg(1000)->Arg(100000)->Arg(1000000);

}  // namespace
}  // namespace drsim
