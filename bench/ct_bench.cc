// ASO connection tracking in the software NIC:
//   BM_CtTrackedRule        TCP segments through a rule whose actions are an aso ct action and a jump to
//                           the next table, whose catch-all rule drops; bursts of 32
//   BM_SameRuleWithoutCt    the same rule and frames without the aso ct action: the peer of the ratio
//   BM_CtContextsCreated    CT objects of one context created and programmed (sim::Nic), contexts/s
//   BM_CtContextsProgrammed contexts of one 2^16-context object programmed in turn (a PMD's pool), /s
// bench/README.md's ratio is BM_CtTrackedRule over BM_SameRuleWithoutCt from one run of this process
// (target: 0.5).
//
//   bazel run --config=opt //bench:ct_bench -- --benchmark_repetitions=3
// (with --benchmark_report_aggregates_only=true for the medians alone)
#include <infiniband/mlx5dv.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "benchmark/benchmark.h"
#include "dr/dr.h"
#include "hw/match_params.h"
#include "sim/conntrack.h"
#include "sim/frame_builder.h"
#include "sim/nic.h"

namespace drsim {
namespace {

constexpr uint32_t kClientSeq = 1000, kServerSeq = 5000;
constexpr size_t kBurst = 32;

// A connection whose windows are scaled wide open (14), so replayed segments stay in the window.
sim::CtContext WideOpen() {
  sim::CtContext c;
  const uint32_t window = 65535u << 14;
  c.original = {14, false, true, false, false, kClientSeq, kClientSeq + window, window, kServerSeq};
  c.reply = {14, false, true, false, false, kServerSeq, kServerSeq + window, window, kClientSeq};
  return c;
}

// 1024 in-order 64-byte segments from the client.
std::vector<std::vector<uint8_t>> Segments() {
  std::vector<std::vector<uint8_t>> frames;
  for (uint32_t i = 0; i < 1024; ++i) {
    sim::FrameSpec f;
    f.protocol = sim::kIpProtoTcp;
    f.sport = 40000;
    f.dport = 80;
    f.seq = kClientSeq + 64 * i;
    f.ack = kServerSeq;
    f.payload_len = 64;
    frames.push_back(sim::BuildFrame(f));
  }
  return frames;
}

// NIC_RX: the root jumps to table 1, whose one rule runs [aso ct,] jump to table 2, which drops.
struct Pipeline {
  explicit Pipeline(bool with_ct)
      : domain(*dr::Domain::Create(nic.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_RX)),
        root(*dr::Table::Create(domain, 0)),
        t1(*dr::Table::Create(domain, 1)),
        t2(*dr::Table::Create(domain, 2)),
        to_t1(*dr::Action::DestTable(t1)),
        to_t2(*dr::Action::DestTable(t2)),
        drop(*dr::Action::Drop()),
        root_all(*dr::Matcher::Create(root, 0, 0, nullptr)),
        t1_all(*dr::Matcher::Create(t1, 0, 0, nullptr)),
        t2_all(*dr::Matcher::Create(t2, 0, 0, nullptr)) {
    rules.push_back(*dr::Rule::Create(root_all, hw::MatchParams(), {&to_t1}));
    rules.push_back(*dr::Rule::Create(t2_all, hw::MatchParams(), {&drop}));
    if (with_ct) {
      const uint32_t cts = *nic.CreateAsoObject(hw::AsoKind::kConnTrack, 0);
      (void)nic.ConfigureAsoConnTrack(cts, 0, WideOpen());
      ct = std::make_unique<dr::Action>(
          *dr::Action::Aso(domain, cts, 0, MLX5DV_DR_ACTION_FLAGS_ASO_CT_DIRECTION_INITIATOR, 3));
      rules.push_back(*dr::Rule::Create(t1_all, hw::MatchParams(), {ct.get(), &to_t2}));
    } else {
      rules.push_back(*dr::Rule::Create(t1_all, hw::MatchParams(), {&to_t2}));
    }
  }
  sim::Nic nic;
  dr::Domain domain;
  dr::Table root, t1, t2;
  dr::Action to_t1, to_t2, drop;
  std::unique_ptr<dr::Action> ct;
  dr::Matcher root_all, t1_all, t2_all;
  std::vector<dr::Rule> rules;
};

void RunFrames(benchmark::State& state, bool with_ct) {
  Pipeline p(with_ct);
  const std::vector<std::vector<uint8_t>> frames = Segments();
  std::vector<sim::Frame> spans(frames.begin(), frames.end());
  size_t at = 0;
  for (auto _ : state) {
    if (!p.nic.ReceiveFromWire(absl::MakeConstSpan(spans).subspan(at, kBurst)).ok()) {
      state.SkipWithError("ReceiveFromWire failed");
      break;
    }
    at = (at + kBurst) % spans.size();
  }
  state.SetItemsProcessed(state.iterations() * kBurst);
  if (with_ct && p.nic.stats().dropped != state.iterations() * kBurst) {
    state.SkipWithError("not every frame reached the drop");
  }
}

void BM_CtTrackedRule(benchmark::State& state) { RunFrames(state, true); }
void BM_SameRuleWithoutCt(benchmark::State& state) { RunFrames(state, false); }
BENCHMARK(BM_CtTrackedRule);
BENCHMARK(BM_SameRuleWithoutCt);

void BM_CtContextsCreated(benchmark::State& state) {
  sim::Nic nic;
  const sim::CtContext c = WideOpen();
  for (auto _ : state) {
    const uint32_t id = *nic.CreateAsoObject(hw::AsoKind::kConnTrack, 0);
    benchmark::DoNotOptimize(nic.ConfigureAsoConnTrack(id, 0, c));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CtContextsCreated);

void BM_CtContextsProgrammed(benchmark::State& state) {
  sim::Nic nic;
  const uint32_t id = *nic.CreateAsoObject(hw::AsoKind::kConnTrack, 16);
  sim::CtContext c = WideOpen();
  uint32_t offset = 0;
  for (auto _ : state) {
    c.last_seq = offset;
    benchmark::DoNotOptimize(nic.ConfigureAsoConnTrack(id, offset, c));
    offset = (offset + 1) & 0xffff;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CtContextsProgrammed);

}  // namespace
}  // namespace drsim
