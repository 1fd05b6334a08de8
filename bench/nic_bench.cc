// First baseline benches (issue #2): rule insertion into one 5-tuple matcher, and frames through the
// software NIC (parse, one definer extraction, one hashed lookup, action) against N rules.
//
//   bazel run --config=opt //bench:nic_bench -- --benchmark_counters_tabular=true
#include <cstdint>
#include <vector>

#include "bench/flows.h"
#include "benchmark/benchmark.h"
#include "dr/dr.h"
#include "hw/match_params.h"
#include "sim/frame_builder.h"
#include "sim/nic.h"

namespace drsim {
namespace {

using hw::kOuter;

hw::MatchParams FiveTupleMask() {
  return *hw::MatchBuilder()
              .IpVersion(kOuter, 4)
              .IpProtocol(kOuter, 0xff)
              .Ipv4Src(kOuter, hw::Ipv4Address::PrefixMask(32))
              .Ipv4Dst(kOuter, hw::Ipv4Address::PrefixMask(32))
              .UdpSport(kOuter, 0xffff)
              .UdpDport(kOuter, 0xffff)
              .Build();
}

using bench::Flow;
using bench::Flows;

hw::MatchParams Value(const Flow& f) {
  return *hw::MatchBuilder()
              .IpVersion(kOuter, 4)
              .IpProtocol(kOuter, 17)
              .Ipv4Src(kOuter, {f.src})
              .Ipv4Dst(kOuter, {f.dst})
              .UdpSport(kOuter, f.sport)
              .UdpDport(kOuter, f.dport)
              .Build();
}

void BM_RuleInsert(benchmark::State& state) {
  const size_t n = state.range(0);
  std::vector<Flow> flows = Flows(n, 1);
  std::vector<hw::MatchParams> values;
  for (const Flow& f : flows) values.push_back(Value(f));
  for (auto _ : state) {
    state.PauseTiming();
    sim::Nic nic;
    dr::Domain domain = *dr::Domain::Create(nic.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
    dr::Table table = *dr::Table::Create(domain, 1);
    dr::Matcher matcher = *dr::Matcher::Create(table, 0, FiveTupleMask());
    dr::Action drop = *dr::Action::Drop();
    std::vector<dr::Rule> rules;
    rules.reserve(n);
    state.ResumeTiming();
    for (const hw::MatchParams& v : values) rules.push_back(*dr::Rule::Create(matcher, v, {&drop}));
    state.PauseTiming();
    rules.clear();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_RuleInsert)->Arg(1000)->Arg(100000)->Unit(benchmark::kMillisecond);

void BM_NicLookup(benchmark::State& state) {
  const size_t n = state.range(0);
  sim::Nic nic;
  dr::Domain domain = *dr::Domain::Create(nic.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
  dr::Table root = *dr::Table::Create(domain, 0);
  dr::Matcher matcher = *dr::Matcher::Create(root, 0, FiveTupleMask());
  dr::Action drop = *dr::Action::Drop();
  std::vector<Flow> flows = Flows(n, bench::kRuleSeed);
  std::vector<dr::Rule> rules;
  for (const Flow& f : flows) rules.push_back(*dr::Rule::Create(matcher, Value(f), {&drop}));
  // The trace's frames (bench/flows.h), sent in bursts.
  std::vector<std::vector<uint8_t>> frames;
  for (size_t i : bench::Trace(n, bench::kTraceLength, bench::kTraceSeed)) {
    const Flow& f = flows[i];
    sim::FrameSpec s;
    s.ipv4_src = {f.src};
    s.ipv4_dst = {f.dst};
    s.sport = f.sport;
    s.dport = f.dport;
    frames.push_back(sim::BuildFrame(s));
  }
  std::vector<sim::Frame> views(frames.begin(), frames.end());
  std::vector<sim::Verdict> verdicts(bench::kBurst);
  size_t at = 0;
  for (auto _ : state) {
    if (!nic.ReceiveFromWire(absl::MakeConstSpan(views).subspan(at, bench::kBurst), absl::MakeSpan(verdicts))
             .ok()) {
      state.SkipWithError("burst rejected");
      break;
    }
    at = (at + bench::kBurst) % views.size();
  }
  if (nic.stats().dropped != nic.stats().frames) state.SkipWithError("frames missed their rules");
  state.SetItemsProcessed(state.iterations() * bench::kBurst);
}
BENCHMARK(BM_NicLookup)->Arg(1000)->Arg(100000)->Arg(1000000);

}  // namespace
}  // namespace drsim
