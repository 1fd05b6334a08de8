// ACL classification: a ClassBench-style acl set (classbench/generator.h, or a real ClassBench
// file with --filters=PATH) through drsim and through DPDK's rte_acl, in one binary, on the same filters and
// the same trace (drawn from the set, or a ClassBench trace file with --trace=PATH):
//   BM_DrAcl*             drsim's benches (bench/dr_acl_benches.cc, linked in)
//   BM_RteAclBuild/N      rte_acl_add_rules + rte_acl_build of the set (filters/s; rte_acl rebuilds from
//                         scratch on every change)
//   BM_RteAclClassify/N   rte_acl_classify of the trace in bursts of 32 (packets/s)
//   BM_DependentLoads/*   the machine's wait for a dependent miss (bench/memory_waits.cc, linked in), to
//                         read the update benches by
// Before timing, both classifiers' verdicts on the trace are checked against classbench::FirstMatch; a
// mismatch skips the bench with an error.
//
//   bazel run --config=opt //bench:acl_bench -- [--filters=PATH | --profile=acl|fw|ipc] [--trace=PATH]
//       [--benchmark_format=json]
#include <arpa/inet.h>
#include <rte_acl.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_malloc.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/strings/str_format.h"
#include "bench/acl_sets.h"
#include "bench/eal.h"
#include "bench/flows.h"
#include "benchmark/benchmark.h"
#include "classbench/filter.h"

namespace drsim::bench {
namespace {

using classbench::Filter;
using classbench::Header;

// rte_acl's input: the five fields, network order, with the protocol first in its own 4-byte group.
struct AclInput {
  uint8_t proto;
  uint32_t src, dst;
  uint16_t sport, dport;
};

enum { kProtoField, kSrcField, kDstField, kSportField, kDportField, kNumFields };

const rte_acl_field_def* FieldDefs() {
  static rte_acl_field_def defs[kNumFields];
  static bool made = false;
  if (!made) {
    defs[kProtoField] = {RTE_ACL_FIELD_TYPE_BITMASK, sizeof(uint8_t), kProtoField, 0,
                         offsetof(AclInput, proto)};
    defs[kSrcField] = {RTE_ACL_FIELD_TYPE_MASK, sizeof(uint32_t), kSrcField, 1, offsetof(AclInput, src)};
    defs[kDstField] = {RTE_ACL_FIELD_TYPE_MASK, sizeof(uint32_t), kDstField, 2, offsetof(AclInput, dst)};
    defs[kSportField] = {RTE_ACL_FIELD_TYPE_RANGE, sizeof(uint16_t), kSportField, 3,
                         offsetof(AclInput, sport)};
    defs[kDportField] = {RTE_ACL_FIELD_TYPE_RANGE, sizeof(uint16_t), kDportField, 3,
                         offsetof(AclInput, dport)};
    made = true;
  }
  return defs;
}

RTE_ACL_RULE_DEF(AclRule, kNumFields);

// A built context for `set` (userdata = filter index + 1; earlier filters get higher priority), or nullptr
// with the bench skipped.
rte_acl_ctx* BuildAcl(const std::vector<Filter>& set, benchmark::State& state) {
  rte_acl_param param;
  std::memset(&param, 0, sizeof(param));
  param.name = "bench_acl";
  param.socket_id = SOCKET_ID_ANY;
  param.rule_size = RTE_ACL_RULE_SZ(kNumFields);
  param.max_rule_num = static_cast<uint32_t>(set.size());
  rte_acl_ctx* ctx = rte_acl_create(&param);
  if (ctx == nullptr) {
    state.SkipWithError(rte_strerror(rte_errno));
    return nullptr;
  }
  std::vector<AclRule> rules(set.size());
  for (size_t i = 0; i < set.size(); ++i) {
    const Filter& f = set[i];
    AclRule& r = rules[i];
    std::memset(&r, 0, sizeof(r));
    r.data.category_mask = 1;
    r.data.priority = static_cast<int32_t>(set.size() - i);  // the highest priority wins in rte_acl
    r.data.userdata = static_cast<uint32_t>(i + 1);
    r.field[kProtoField].value.u8 = f.proto;
    r.field[kProtoField].mask_range.u8 = f.proto_mask;
    r.field[kSrcField].value.u32 = f.src;
    r.field[kSrcField].mask_range.u32 = static_cast<uint32_t>(__builtin_popcount(f.src_mask));
    r.field[kDstField].value.u32 = f.dst;
    r.field[kDstField].mask_range.u32 = static_cast<uint32_t>(__builtin_popcount(f.dst_mask));
    r.field[kSportField].value.u16 = f.sport.lo;
    r.field[kSportField].mask_range.u16 = f.sport.hi;
    r.field[kDportField].value.u16 = f.dport.lo;
    r.field[kDportField].mask_range.u16 = f.dport.hi;
  }
  rte_acl_config config;
  std::memset(&config, 0, sizeof(config));
  config.num_categories = 1;
  config.num_fields = kNumFields;
  std::memcpy(config.defs, FieldDefs(), sizeof(rte_acl_field_def) * kNumFields);
  if (rte_acl_add_rules(ctx, reinterpret_cast<const rte_acl_rule*>(rules.data()), rules.size()) != 0 ||
      rte_acl_build(ctx, &config) != 0) {
    state.SkipWithError("rte_acl_add_rules/rte_acl_build failed");
    rte_acl_free(ctx);
    return nullptr;
  }
  return ctx;
}

void BM_RteAclBuild(benchmark::State& state) {
  const std::vector<Filter>& set = AclFilterSet(state.range(0), state);
  if (set.empty()) return;
  for (auto _ : state) {
    rte_acl_ctx* ctx = BuildAcl(set, state);
    if (ctx == nullptr) break;
    state.PauseTiming();
    rte_acl_free(ctx);
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * set.size());
}
BENCHMARK(BM_RteAclBuild)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

// The bytes a built context takes, a filter (counter bytes_per_filter): the growth of DPDK's heaps (rte_acl
// allocates its context, rules and run-time tries there) across BuildAcl. drsim's peer is BM_DrAclMemory.
size_t RteHeapBytesInUse() {
  size_t bytes = 0;
  for (unsigned i = 0; i < rte_socket_count(); ++i) {
    rte_malloc_socket_stats stats;
    if (rte_malloc_get_socket_stats(rte_socket_id_by_idx(i), &stats) == 0) bytes += stats.heap_allocsz_bytes;
  }
  return bytes;
}

void BM_RteAclMemory(benchmark::State& state) {
  const std::vector<Filter>& set = AclFilterSet(state.range(0), state);
  if (set.empty()) return;
  for (auto _ : state) {
    const size_t before = RteHeapBytesInUse();
    rte_acl_ctx* ctx = BuildAcl(set, state);
    if (ctx == nullptr) break;
    const size_t after = RteHeapBytesInUse();
    state.counters["bytes_per_filter"] =
        static_cast<double>(after > before ? after - before : 0) / static_cast<double>(set.size());
    rte_acl_free(ctx);
  }
}
BENCHMARK(BM_RteAclMemory)->Arg(10000)->Iterations(1)->Unit(benchmark::kMillisecond);

void BM_RteAclClassify(benchmark::State& state) {
  const std::vector<Filter>& set = AclFilterSet(state.range(0), state);
  if (set.empty()) return;
  rte_acl_ctx* ctx = BuildAcl(set, state);
  if (ctx == nullptr) return;
  const std::vector<Header> trace = AclTrace(set, state);
  if (trace.empty()) {
    rte_acl_free(ctx);
    return;
  }
  std::vector<AclInput> inputs(trace.size());
  std::vector<const uint8_t*> data(trace.size());
  for (size_t i = 0; i < trace.size(); ++i) {
    inputs[i] = {trace[i].proto, htonl(trace[i].src), htonl(trace[i].dst), htons(trace[i].sport),
                 htons(trace[i].dport)};
    data[i] = reinterpret_cast<const uint8_t*>(&inputs[i]);
  }
  std::vector<uint32_t> results(trace.size());
  rte_acl_classify(ctx, data.data(), results.data(), static_cast<uint32_t>(trace.size()), 1);
  for (size_t i = 0; i < trace.size(); ++i) {
    const size_t expected = classbench::FirstMatch(set, trace[i]).value_or(set.size()) + 1;
    if (results[i] != expected) {
      state.SkipWithError(absl::StrFormat("packet %d: rte_acl says filter %d, expected %d", i,
                                          static_cast<int>(results[i]) - 1, expected - 1)
                              .c_str());
      rte_acl_free(ctx);
      return;
    }
  }
  size_t at = 0;
  for (auto _ : state) {
    rte_acl_classify(ctx, data.data() + at, results.data() + at, kBurst, 1);
    at = (at + kBurst) % data.size();
  }
  state.SetItemsProcessed(state.iterations() * kBurst);
  rte_acl_free(ctx);
}
BENCHMARK(BM_RteAclClassify)->Arg(1000)->Arg(10000);

}  // namespace
}  // namespace drsim::bench

int main(int argc, char** argv) {
  drsim::bench::TakeAclFlags(&argc, argv);  // --filters and --trace are ours; the rest is Google Benchmark's
  return drsim::bench::RunBenchmarksWithEal(argc, argv, 2048);
}
