// drctl's load path on generated rule files: text to installed rules, one command at a time
// (testpmd/runner.h's RunStream through tools::LoadRules), at 10K, 100K and 1M rules of three shapes:
//   five_tuple  distinct five-tuples, the shape of an OVS offload dump (`flow create 0 ingress pattern eth /
//               ipv4 src is A dst is B / udp src is S dst is D / end actions queue index 1 / end`, group 0);
//   acl         ACL-style prefixes and port ranges as masks (`group 1 priority P ... ipv4 src spec A src mask
//               M ... tcp dst spec P dst mask PM`, 64 mask shapes, so 64 matchers), drop;
//   duplicates  one five-tuple rule N times (the older wins; each is a flow of its own).
// Counters: rules/s (items), the load's user and system CPU time (ms), huge pages taken from the stock and
// asked of it while it was empty (hw/huge_page_stock.h), peak RSS of the process so far (KB),
// bytes a rule once loaded (heap and lookup memory in use, whole engine and core), and for five_tuple and
// duplicates the core's bytes a rule, from a peer that inserts the same DR rules with one shared action
// straight through dr:: into the same kind of table (level 0, one matcher), and the front end's bytes a rule
// beyond them. Files go to $TMPDIR (or /tmp) as drsim_rules_<shape>_<n>.rules, written once.
#include <malloc.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "benchmark/benchmark.h"
#include "dr/dr.h"
#include "hw/huge_page_stock.h"
#include "hw/lookup_memory.h"
#include "hw/match_params.h"
#include "sim/nic.h"
#include "tools/drctl_session.h"

namespace drsim::bench {
namespace {

enum Shape { kFiveTuple = 0, kAcl = 1, kDuplicates = 2 };
constexpr const char* kShapeNames[] = {"five_tuple", "acl", "duplicates"};

size_t BytesInUse() { return mallinfo2().uordblks + hw::LookupMemoryInUse(); }

long PeakRssKb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

// The process's CPU time so far, user and system, in ms.
struct CpuMs {
  double user = 0, system = 0;
};
CpuMs CpuTimeMs() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto ms = [](const timeval& t) { return t.tv_sec * 1e3 + t.tv_usec / 1e3; };
  return {ms(u.ru_utime), ms(u.ru_stime)};
}

// The five-tuple of rule i: addresses and ports from a multiplicative walk (distinct for i < 2^32).
struct Tuple {
  uint32_t src, dst;
  uint16_t sport, dport;
};
Tuple TupleOf(uint64_t i) {
  const uint64_t x = i * 0x9e3779b97f4a7c15u;
  return {static_cast<uint32_t>(0x0a000000u | (i & 0xffffff)), static_cast<uint32_t>(x >> 32),
          static_cast<uint16_t>(x >> 16), static_cast<uint16_t>(1 + (x & 0x7fff))};
}

std::string Ip(uint32_t a) {
  return absl::StrFormat("%d.%d.%d.%d", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255);
}

std::string RuleLine(Shape shape, uint64_t i) {
  if (shape == kDuplicates) i = 7;
  const Tuple t = TupleOf(i);
  if (shape != kAcl) {
    return absl::StrFormat(
        "flow create 0 ingress pattern eth / ipv4 src is %s dst is %s / udp src is %d dst is %d / end "
        "actions queue index 1 / end\n",
        Ip(t.src), Ip(t.dst), t.sport, t.dport);
  }
  // 4 source prefixes x 4 destination prefixes x 4 port ranges (as masks): 64 matchers.
  static constexpr int kPrefixes[] = {8, 16, 24, 32};
  static constexpr uint32_t kPortMasks[] = {0xffff, 0xff00, 0xfc00, 0xf000};
  const int sp = kPrefixes[i % 4], dp = kPrefixes[(i / 4) % 4];
  const uint32_t pm = kPortMasks[(i / 16) % 4];
  const uint32_t smask = sp == 32 ? 0xffffffffu : ~(0xffffffffu >> sp);
  const uint32_t dmask = dp == 32 ? 0xffffffffu : ~(0xffffffffu >> dp);
  return absl::StrFormat(
      "flow create 0 ingress group 1 priority %d pattern eth / ipv4 src spec %s src mask %s dst spec %s dst "
      "mask %s / tcp dst spec %d dst mask 0x%x / end actions drop / end\n",
      i % 4, Ip(t.src & smask), Ip(smask), Ip(t.dst & dmask), Ip(dmask), t.dport & pm, pm);
}

// The file of `n` rules of `shape`, written on first use.
std::string RuleFile(Shape shape, int64_t n) {
  const char* dir = std::getenv("TMPDIR");
  const std::string path =
      absl::StrFormat("%s/drsim_rules_%s_%d.rules", dir != nullptr ? dir : "/tmp", kShapeNames[shape], n);
  if (std::ifstream(path).good()) return path;
  std::ofstream out(path + ".tmp");
  for (int64_t i = 0; i < n; ++i) out << RuleLine(shape, i);
  out.close();
  std::rename((path + ".tmp").c_str(), path.c_str());
  return path;
}

// The core alone: the same rules (the masks and values mlx5 makes of them at level 0) inserted straight
// through dr:: with one shared action. Returns its bytes a rule.
double CoreBytesPerRule(Shape shape, int64_t n) {
  sim::Nic nic(4);
  const size_t before = BytesInUse();
  {
    dr::Domain domain = *dr::Domain::Create(*nic.function(0), MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
    dr::Table table = *dr::Table::Create(domain, 0);
    const hw::MatchParams mask = *hw::MatchBuilder()
                                      .IpVersion(hw::kOuter, 0xf)
                                      .IpProtocol(hw::kOuter, 0xff)
                                      .Ipv4Src(hw::kOuter, hw::Ipv4Address::PrefixMask(32))
                                      .Ipv4Dst(hw::kOuter, hw::Ipv4Address::PrefixMask(32))
                                      .UdpSport(hw::kOuter, 0xffff)
                                      .UdpDport(hw::kOuter, 0xffff)
                                      .Build();
    dr::Matcher matcher = *dr::Matcher::Create(table, 0, mask);
    dr::Action drop = *dr::Action::Drop();
    std::vector<dr::Rule> rules;
    rules.reserve(n);
    for (int64_t i = 0; i < n; ++i) {
      const Tuple t = TupleOf(shape == kDuplicates ? 7 : i);
      const hw::MatchParams value = *hw::MatchBuilder()
                                         .IpVersion(hw::kOuter, 4)
                                         .IpProtocol(hw::kOuter, 17)
                                         .Ipv4Src(hw::kOuter, hw::Ipv4Address{t.src})
                                         .Ipv4Dst(hw::kOuter, hw::Ipv4Address{t.dst})
                                         .UdpSport(hw::kOuter, t.sport)
                                         .UdpDport(hw::kOuter, t.dport)
                                         .Build();
      rules.push_back(*dr::Rule::Create(matcher, value, {&drop}));
    }
    // The handles' vector is the caller's, as the front end's records are: not the core's.
    const double bytes = static_cast<double>(BytesInUse() - before) - n * sizeof(dr::Rule);
    return bytes / n;
  }
}

void BM_RuleFileLoad(benchmark::State& state) {
  const Shape shape = static_cast<Shape>(state.range(0));
  const int64_t n = state.range(1);
  const std::string path = RuleFile(shape, n);
  tools::Options options;
  options.command = "validate";
  options.rules = path;
  double bytes_per_rule = 0, templated = 0;
  CpuMs cpu;
  size_t stocked = 0, stock_missed = 0;
  for (auto _ : state) {
    const size_t before = BytesInUse();
    const CpuMs cpu_before = CpuTimeMs();
    const hw::HugePageStockCounts stock_before = hw::HugePageStockCountsNow();
    int status = 0;
    std::ostringstream err;
    std::unique_ptr<tools::Session> session = tools::LoadRules(options, err, &status);
    const CpuMs cpu_after = CpuTimeMs();
    cpu.user += cpu_after.user - cpu_before.user;
    cpu.system += cpu_after.system - cpu_before.system;
    const hw::HugePageStockCounts stock_after = hw::HugePageStockCountsNow();
    stocked += stock_after.taken - stock_before.taken;
    stock_missed += stock_after.missed - stock_before.missed;
    if (session == nullptr || session->report.commands != static_cast<size_t>(n)) {
      state.SkipWithError(("load failed: " + err.str()).c_str());
      return;
    }
    state.PauseTiming();
    bytes_per_rule = static_cast<double>(BytesInUse() - before) / n;
    templated = static_cast<double>(session->report.templated) / n;
    session.reset();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * n);
  state.counters["bytes_per_rule"] = bytes_per_rule;
  state.counters["templated"] = templated;  // the share of flows made from a template (runner.h)
  if (shape != kAcl) {
    const double core = CoreBytesPerRule(shape, n);
    state.counters["core_bytes_per_rule"] = core;
    state.counters["front_end_bytes_per_rule"] = bytes_per_rule - core;
  }
  state.counters["peak_rss_kb"] = static_cast<double>(PeakRssKb());
  // The load's CPU time (a load an iteration). System time is mostly the kernel zeroing the pages the load
  // maps for the first time (bench/README.md, "System time").
  state.counters["user_ms"] = cpu.user / state.iterations();
  state.counters["system_ms"] = cpu.system / state.iterations();
  // Huge pages the load took from the stock another thread faulted in, and asked for while it was empty
  // (hw/huge_page_stock.h; both 0 where the process may use one CPU only, as under `taskset -c 1`).
  state.counters["stocked_pages"] = static_cast<double>(stocked) / state.iterations();
  state.counters["stock_missed"] = static_cast<double>(stock_missed) / state.iterations();
}

BENCHMARK(BM_RuleFileLoad)
    ->ArgNames({"shape", "rules"})
    ->ArgsProduct({{kFiveTuple, kAcl, kDuplicates}, {10000, 100000, 1000000}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);

}  // namespace
}  // namespace drsim::bench

BENCHMARK_MAIN();
