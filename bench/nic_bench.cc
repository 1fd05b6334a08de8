// First baseline benches (issue #2): rule insertion into one 5-tuple matcher, and frames through the
// software NIC (parse, one definer extraction, one hashed lookup, action) against N rules.
//
//   bazel run --config=opt //bench:nic_bench -- --benchmark_counters_tabular=true
#include <cstdint>
#include <random>
#include <vector>

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

struct Flow {
  uint32_t src, dst;
  uint16_t sport, dport;
};

std::vector<Flow> Flows(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Flow> flows(n);
  for (Flow& f : flows) f = {static_cast<uint32_t>(rng()), static_cast<uint32_t>(rng()),
                             static_cast<uint16_t>(rng()), static_cast<uint16_t>(rng())};
  return flows;
}

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
  std::vector<Flow> flows = Flows(n, 2);
  std::vector<dr::Rule> rules;
  for (const Flow& f : flows) rules.push_back(*dr::Rule::Create(matcher, Value(f), {&drop}));
  // 4096 frames of random flows, sent in bursts of 32.
  std::mt19937 rng(3);
  std::vector<std::vector<uint8_t>> frames;
  for (int i = 0; i < 4096; ++i) {
    const Flow& f = flows[rng() % n];
    sim::FrameSpec s;
    s.ipv4_src = {f.src};
    s.ipv4_dst = {f.dst};
    s.sport = f.sport;
    s.dport = f.dport;
    frames.push_back(sim::BuildFrame(s));
  }
  std::vector<sim::Frame> views(frames.begin(), frames.end());
  std::vector<sim::Verdict> verdicts(32);
  size_t at = 0;
  for (auto _ : state) {
    if (!nic.ReceiveFromWire(absl::MakeConstSpan(views).subspan(at, 32), absl::MakeSpan(verdicts)).ok()) {
      state.SkipWithError("burst rejected");
      break;
    }
    at = (at + 32) % views.size();
  }
  if (nic.stats().dropped != nic.stats().frames) state.SkipWithError("frames missed their rules");
  state.SetItemsProcessed(state.iterations() * 32);
}
BENCHMARK(BM_NicLookup)->Arg(1000)->Arg(100000)->Arg(1000000);

}  // namespace
}  // namespace drsim
