// How a compiled form's lookups go: the descent the process takes through the trees (TableIndex::CpuHas,
// tree_descent, SetTreeDescent), the trial's verdict between the trees, the walk and the automata
// (TableIndex::TrialWinner), and which way a serving form looks up (LooksUpByTrees, LooksUpByAutomata,
// TrialDecided). The trees themselves are hw/compiled_trees.cc's.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>

#include "absl/container/inlined_vector.h"
#include "hw/compiled_trees.h"
#include "hw/table_index.h"

namespace drsim::hw {
namespace {

// The descent lookups take: at first, the fastest the CPU has. AVX2 before AVX-512: on the trees of ACL sets
// AVX-512's gathers of 16 lanes were slower than two of AVX2's 8 (measured on AMD Zen 4, whose 512-bit
// operations run as two 256-bit halves).
std::atomic<int>& ChosenDescent() {
  using TreeDescent = TableIndex::TreeDescent;
  static std::atomic<int> chosen{static_cast<int>([] {
    for (const TreeDescent fastest : {TreeDescent::kAvx2, TreeDescent::kAvx512}) {
      if (TableIndex::CpuHas(fastest)) return fastest;
    }
    return TreeDescent::kScalar;
  }())};
  return chosen;
}

}  // namespace

bool TableIndex::CpuHas(TreeDescent descent) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  switch (descent) {
    case TreeDescent::kAvx512:
      return __builtin_cpu_supports("avx512f");
    case TreeDescent::kAvx2:
      return __builtin_cpu_supports("avx2");
    case TreeDescent::kScalar:
      return true;
  }
  return false;
#else
  return descent == TreeDescent::kScalar;
#endif
}

TableIndex::TreeDescent TableIndex::tree_descent() {
  return static_cast<TreeDescent>(ChosenDescent().load(std::memory_order_relaxed));
}

bool TableIndex::SetTreeDescent(TreeDescent descent) {
  if (!CpuHas(descent)) return false;
  ChosenDescent().store(static_cast<int>(descent), std::memory_order_relaxed);
  return true;
}

int TableIndex::TrialWinner(absl::Span<const uint64_t> nanoseconds, absl::Span<const uint64_t> packets,
                            int ways) {
  // (Each way's runs: the trees', the walk's, the automata's.)
  std::array<absl::InlinedVector<double, CompiledTrees::kTrialRuns>, 3> per_packet;
  ways = std::clamp(ways, 1, 3);
  for (size_t run = 0; run < std::min(nanoseconds.size(), packets.size()); ++run) {
    if (packets[run] == 0) continue;
    per_packet[run % ways].push_back(double(nanoseconds[run]) / double(packets[run]));
  }
  auto median = [](absl::InlinedVector<double, CompiledTrees::kTrialRuns>& runs) {
    std::sort(runs.begin(), runs.end());
    const size_t half = runs.size() / 2;
    return runs.size() % 2 == 1 ? runs[half] : (runs[half - 1] + runs[half]) / 2;
  };
  int winner = -1;
  double least = 0;
  for (int way = 0; way < ways; ++way) {
    if (per_packet[way].empty()) continue;
    const double took = median(per_packet[way]);
    if (winner < 0 || took < least) {
      least = took;
      winner = way;
    }
  }
  return winner < 0 ? CompiledTrees::kWalk : winner;
}

bool TableIndex::LooksUpByTrees() const {
  const CompiledTrees* serving = ServingForm();
  return serving != nullptr && CompiledTrees::ByForm(serving->method.load(std::memory_order_relaxed));
}

bool TableIndex::LooksUpByAutomata() const {
  const CompiledTrees* serving = ServingForm();
  return serving != nullptr && serving->method.load(std::memory_order_relaxed) == CompiledTrees::kAutomata;
}

bool TableIndex::TrialDecided() const {
  const CompiledTrees* serving = ServingForm();
  return serving != nullptr && serving->method.load(std::memory_order_relaxed) != CompiledTrees::kUndecided;
}

}  // namespace drsim::hw
