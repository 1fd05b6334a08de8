// Open vSwitch's flow classifier (lib/classifier.c: tuple space search with priorities, staged lookup and
// prefix tries) on acl_bench's ACL sets and trace, so "drsim ACL lookups / OVS classifier lookups" is a
// ratio measured on one machine rather than a range quoted from papers. Same filters (a generated acl set
// of N filters, or --filters=PATH), same trace (bench/acl_sets.h), same bursts of 32:
//   BM_OvsClsInsert/N       a classifier built from the set (filters/s): one cls_rule per (source port
//                           prefix, destination port prefix) of each filter, as classbench/dr_acl.cc splits
//                           ranges for DR, since OVS too matches ports only under bitmasks; published once
//                           at the end, as ofproto commits a bundle (published rule by rule, OVS re-sorts
//                           its subtable vector after each)
//   BM_OvsClsLookup/N       classifier_lookup of each trace packet with a flow_wildcards to fill (packets/s):
//                           how ovs-vswitchd looks up its OpenFlow tables, always (ofproto-dpif-xlate.c
//                           passes a scratch flow_wildcards when its caller wants none), computing the
//                           megaflow's mask as it goes; the OVS number to divide drsim's ACL lookups by
//   BM_OvsClsLookupNoWc/N   the same with NULL wildcards (packets/s): the classifier's other path, a full
//                           hash probe of each subtable without staged lookup or tries, which OVS uses for
//                           its routing table and tunnel ports (lib/ovs-router.c, lib/tnl-ports.c), not for
//                           OpenFlow; the bare classifier's speed on these sets
//   BM_OvsClsRuleUpdate/N   removing one rule of the installed set and inserting it again (updates/s, two an
//                           iteration), quiescing OVS's RCU after every 50 updates, as ovs-vswitchd's main
//                           loop quiesces once a pass and a pass takes at most 50 messages from an OpenFlow
//                           connection (connmgr.c); the trace is checked afterwards
// The classifier is set up as ovs-vswitchd sets up an OpenFlow table: staged lookup on flow segments and
// prefix tries on nw_dst and nw_src (bench/ovs/ovs_cls.h). Before timing a lookup bench, every trace
// packet's verdict (the filter of the rule found) is checked against classbench::FirstMatch; a mismatch
// skips the bench with an error naming the packet.
// drsim's ACL benches (BM_DrAcl*, bench/dr_acl_benches.cc) are linked in too: the "10x OVS" target is a
// ratio taken between runs of one process, the two interleaved.
//
// OVS is built outside the repository; every target here is "manual":
//   bash bench/ovs/build_ovs.sh && bazel build --config=opt //bench:ovs_classifier_bench &&
//     bazel-bin/bench/ovs_classifier_bench [--filters=PATH] [--trace=PATH] [--benchmark_format=json]
//   bazel-bin/bench/ovs_classifier_bench --filters=PATH --trace=PATH --benchmark_repetitions=5
//     --benchmark_enable_random_interleaving=true --benchmark_filter='(DrAclLookup|OvsClsLookup)/10000$'
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/str_format.h"
#include "bench/acl_sets.h"
#include "bench/flows.h"
#include "bench/ovs/ovs_cls.h"
#include "benchmark/benchmark.h"
#include "classbench/filter.h"

namespace drsim::bench {
namespace {

using classbench::Filter;
using classbench::Header;

constexpr size_t kUpdatesPerQuiesce = 50;  // connmgr.c: an OpenFlow connection's messages per main-loop pass

struct ClsDeleter {
  void operator()(ovs_cls* cls) const { ovs_cls_destroy(cls); }
};
using Classifier = std::unique_ptr<ovs_cls, ClsDeleter>;

struct PacketsDeleter {
  void operator()(ovs_cls_packets* packets) const { ovs_cls_packets_destroy(packets); }
};
using Packets = std::unique_ptr<ovs_cls_packets, PacketsDeleter>;

// A classifier holding `set`: filter i becomes one rule per pair of its port ranges' prefixes, all with
// priority set.size() - i (OVS prefers higher priorities, the set earlier filters) and verdict i. The
// rules are published to lookups together.
Classifier Install(const std::vector<Filter>& set) {
  Classifier cls(ovs_cls_create());
  ovs_cls_defer(cls.get());
  for (size_t i = 0; i < set.size(); ++i) {
    const Filter& f = set[i];
    const int priority = static_cast<int>(set.size() - i);
    for (const classbench::PortPrefix& sp : classbench::RangeToPrefixes(f.sport)) {
      for (const classbench::PortPrefix& dp : classbench::RangeToPrefixes(f.dport)) {
        const ovs_cls_match m = {f.src,   f.src_mask, f.dst,   f.dst_mask, sp.value,
                                 sp.mask, dp.value,   dp.mask, f.proto,    f.proto_mask};
        ovs_cls_add(cls.get(), &m, priority, static_cast<uint32_t>(i));
      }
    }
  }
  ovs_cls_publish(cls.get());
  return cls;
}

// The trace as OVS flows.
Packets MakePackets(const std::vector<Header>& trace) {
  std::vector<ovs_cls_header> headers(trace.size());
  for (size_t i = 0; i < trace.size(); ++i) {
    headers[i] = {trace[i].src, trace[i].dst, trace[i].sport, trace[i].dport, trace[i].proto};
  }
  return Packets(ovs_cls_packets_create(headers.data(), headers.size()));
}

// Looks up every packet of `trace` (already in `packets`) in `cls`, with or without wildcards: the filter
// found must be the first the header fits (classbench::FirstMatch). False, with the bench skipped, on a
// mismatch.
bool CheckVerdicts(const ovs_cls* cls, ovs_cls_packets* packets, const std::vector<Filter>& set,
                   const std::vector<Header>& trace, bool wildcards, benchmark::State& state) {
  std::vector<int64_t> found(trace.size());
  ovs_cls_lookup(cls, packets, 0, trace.size(), wildcards, found.data());
  for (size_t i = 0; i < trace.size(); ++i) {
    const std::optional<size_t> want = classbench::FirstMatch(set, trace[i]);
    const int64_t expected = want.has_value() ? static_cast<int64_t>(*want) : -1;
    if (found[i] != expected) {
      state.SkipWithError(absl::StrFormat("packet %d: OVS classifier says filter %d, expected %d (-1: none)",
                                          i, found[i], expected)
                              .c_str());
      return false;
    }
  }
  return true;
}

void BM_OvsClsInsert(benchmark::State& state) {
  const std::vector<Filter>& set = AclFilterSet(state.range(0), state);
  if (set.empty()) return;
  size_t rules = 0, subtables = 0;
  for (auto _ : state) {
    Classifier cls = Install(set);
    state.PauseTiming();
    rules = ovs_cls_rules(cls.get());
    subtables = ovs_cls_subtables(cls.get());
    cls.reset();
    state.ResumeTiming();
  }
  state.counters["cls_rules"] = static_cast<double>(rules);
  state.counters["subtables"] = static_cast<double>(subtables);
  state.SetItemsProcessed(state.iterations() * set.size());
}
BENCHMARK(BM_OvsClsInsert)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

// The trace through classifier_lookup in bursts of kBurst, with or without wildcards.
void Lookups(benchmark::State& state, bool wildcards) {
  const std::vector<Filter>& set = AclFilterSet(state.range(0), state);
  if (set.empty()) return;
  Classifier cls = Install(set);
  const std::vector<Header> trace = AclTrace(set, state);
  if (trace.empty()) return;
  Packets packets = MakePackets(trace);
  if (!CheckVerdicts(cls.get(), packets.get(), set, trace, wildcards, state)) return;
  std::vector<int64_t> found(kBurst);
  size_t at = 0;
  for (auto _ : state) {
    ovs_cls_lookup(cls.get(), packets.get(), at, kBurst, wildcards, found.data());
    at = (at + kBurst) % trace.size();
  }
  state.counters["cls_rules"] = static_cast<double>(ovs_cls_rules(cls.get()));
  state.counters["subtables"] = static_cast<double>(ovs_cls_subtables(cls.get()));
  state.SetItemsProcessed(state.iterations() * kBurst);
}

void BM_OvsClsLookup(benchmark::State& state) { Lookups(state, /*wildcards=*/true); }
BENCHMARK(BM_OvsClsLookup)->Arg(1000)->Arg(10000);

void BM_OvsClsLookupNoWc(benchmark::State& state) { Lookups(state, /*wildcards=*/false); }
BENCHMARK(BM_OvsClsLookupNoWc)->Arg(1000)->Arg(10000);

// Incremental updates of the installed set: each iteration removes one of its rules and inserts it again
// (two updates). Afterwards every trace packet must still find its first filter.
void BM_OvsClsRuleUpdate(benchmark::State& state) {
  const std::vector<Filter>& set = AclFilterSet(state.range(0), state);
  if (set.empty()) return;
  Classifier cls = Install(set);
  const size_t rules = ovs_cls_rules(cls.get());
  size_t r = 0, updates = 0;
  for (auto _ : state) {
    ovs_cls_remove(cls.get(), r);
    ovs_cls_restore(cls.get(), r);
    r = (r + 7919) % rules;  // acl_bench's prime stride: every rule in turn, not in insertion order
    updates += 2;
    if (updates % kUpdatesPerQuiesce == 0) ovs_cls_quiesce();
  }
  ovs_cls_quiesce();
  state.SetItemsProcessed(state.iterations() * 2);
  const std::vector<Header> trace = AclTrace(set, state);
  if (trace.empty()) return;
  Packets packets = MakePackets(trace);
  CheckVerdicts(cls.get(), packets.get(), set, trace, /*wildcards=*/true, state);
}
BENCHMARK(BM_OvsClsRuleUpdate)->Arg(1000)->Arg(10000);

}  // namespace
}  // namespace drsim::bench

int main(int argc, char** argv) {
  drsim::bench::TakeAclFlags(&argc, argv);  // --filters and --trace are ours; the rest is Google Benchmark's
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
