#include "classbench/churn_check.h"

#include <optional>
#include <vector>

#include "classbench/dr_acl.h"
#include "classbench/filter.h"
#include "classbench/generator.h"
#include "gtest/gtest.h"

namespace drsim::classbench {
namespace {

TEST(ChurnCheckTest, EveryVerdictMatchesFirstMatchWhileRulesChurn) {
  for (Profile profile : {Profile::kAcl, Profile::kFw, Profile::kIpc}) {
    const std::vector<Filter> filters = Generate(profile, 300, 7);
    const std::vector<Header> trace = GenerateTrace(filters, 2000, 8);
    ChurnCheckOptions options;
    options.seconds = 0.5;
    absl::StatusOr<ChurnCheckReport> report = RunChurnCheck(filters, trace, options);
    ASSERT_TRUE(report.ok()) << report.status();
    EXPECT_EQ(report->mismatches, 0u) << (report->examples.empty() ? "" : report->examples[0]);
    EXPECT_GE(report->frames, trace.size());  // the final pass at least
    EXPECT_GT(report->filter_churns, 0u);
    EXPECT_GT(report->rule_updates, 2 * report->filter_churns - 1);
  }
}

// More filters than matcher priorities (16 bits): filters share priorities, and the earlier of two filters
// sharing one must still win. Pairs of overlapping filters (a /32 source before its /24) sit mostly at one
// priority each.
// Rules put back with other keys for a while, as updates that change a rule's match do: the index's nodes
// for the old keys go and new ones come while workers look frames up.
TEST(ChurnCheckTest, EveryVerdictMatchesFirstMatchWhileRulesMoveToOtherKeysAndBack) {
  for (Profile profile : {Profile::kAcl, Profile::kFw, Profile::kIpc}) {
    const std::vector<Filter> filters = Generate(profile, 300, 9);
    // Half the frames fit the filters, half their moved versions (what only a churn puts in).
    std::vector<Filter> moved = filters;
    size_t moving = 0;
    for (uint32_t i = 0; i < filters.size(); ++i) {
      const std::optional<FilterMove> move = MoveOf(filters[i], i);
      if (!move.has_value()) continue;
      moved[i] = MovedFilter(filters[i], *move);
      ++moving;
    }
    EXPECT_GT(moving, filters.size() / 4);
    std::vector<Header> trace = GenerateTrace(filters, 1000, 10);
    const std::vector<Header> to_moved = GenerateTrace(moved, 1000, 11);
    trace.insert(trace.end(), to_moved.begin(), to_moved.end());
    for (const bool batch : {false, true}) {
      ChurnCheckOptions options;
      options.seconds = 0.5;
      options.move_keys = true;
      options.batch_updates = batch;  // (rule by rule in dr::Rule::UpdateMany calls)
      absl::StatusOr<ChurnCheckReport> report = RunChurnCheck(filters, trace, options);
      ASSERT_TRUE(report.ok()) << report.status();
      EXPECT_EQ(report->mismatches, 0u) << (report->examples.empty() ? "" : report->examples[0]);
      EXPECT_GE(report->frames, trace.size());  // the final pass at least
      EXPECT_GT(report->filter_churns, 0u);
      // Moved filters' rules go and come twice a churn.
      EXPECT_GT(report->rule_updates, 2 * report->filter_churns);
    }
  }
}

// The churn stops now and then for long enough that the ACL's table compiles itself (hw::TableIndex), and
// frames meanwhile are looked up compiled (or walked, if its trial found the walk faster); churn retires it.
TEST(ChurnCheckTest, EveryVerdictMatchesFirstMatchWhenTheChurnStopsAndTheTableCompiles) {
  const std::vector<Filter> filters = Generate(Profile::kAcl, 1000, 12);
  const std::vector<Header> trace = GenerateTrace(filters, 4000, 13);
  ChurnCheckOptions options;
  options.seconds = 1.5;
  options.move_keys = true;
  options.quiet_every = 0.2;
  options.quiet_for = 0.3;
  absl::StatusOr<ChurnCheckReport> report = RunChurnCheck(filters, trace, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->mismatches, 0u) << (report->examples.empty() ? "" : report->examples[0]);
  EXPECT_GT(report->quiet_spells, 0u);
  EXPECT_GT(report->filter_churns, 0u);
}

TEST(ChurnCheckTest, AMoveChangesTheFirstFiveBitsOfTheLongerEnoughPrefix) {
  Filter f;
  f.src = 0x0a000000;
  f.src_mask = 0xff000000;
  f.dst = 0xc0000000;
  f.dst_mask = 0xf0000000;
  const std::optional<FilterMove> src = MoveOf(f, 0);
  ASSERT_TRUE(src.has_value());
  EXPECT_TRUE(src->source);
  EXPECT_EQ(MovedFilter(f, *src).src, 0x0a000000u ^ 0x08000000u);
  EXPECT_EQ(MovedFilter(f, *src).dst, f.dst);
  EXPECT_EQ(MoveOf(f, 31)->first_bits, src->first_bits);  // 31 values, none of them 0
  f.src_mask = 0xf0000000;  // four bits: the destination's turn, whose five are there
  f.dst_mask = 0xffff0000;
  const std::optional<FilterMove> dst = MoveOf(f, 30);
  ASSERT_TRUE(dst.has_value());
  EXPECT_FALSE(dst->source);
  EXPECT_EQ(MovedFilter(f, *dst).dst, 0xc0000000u ^ 0xf8000000u);
  f.dst_mask = 0;
  EXPECT_FALSE(MoveOf(f, 0).has_value());
}

TEST(ChurnCheckTest, SetsBeyondTheMatcherPrioritiesKeepFirstMatchOrder) {
  std::vector<Filter> filters;
  std::vector<Header> trace;
  constexpr uint32_t kPairs = 35000;
  for (uint32_t k = 0; k < kPairs; ++k) {
    const uint32_t net = 0x0a000000 | k << 8;
    Filter host, subnet;
    host.src = net | 1;
    host.src_mask = 0xffffffff;
    subnet.src = net;
    subnet.src_mask = 0xffffff00;
    filters.push_back(host);
    filters.push_back(subnet);
    if (k % 7 == 0) {
      for (uint32_t last : {1, 2}) {
        Header h;
        h.src = net | last;
        h.proto = 6;
        trace.push_back(h);
      }
    }
  }
  ChurnCheckOptions options;
  options.seconds = 0.2;
  absl::StatusOr<ChurnCheckReport> report = RunChurnCheck(filters, trace, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->mismatches, 0u) << (report->examples.empty() ? "" : report->examples[0]);
  EXPECT_GE(report->frames, trace.size());
}

// A burst that overlaps more churns than the log holds is not checked: the log entries it would be judged
// by may be other churns' by then. With a log of one churn most bursts are such, and none may count as a
// mismatch.
TEST(ChurnCheckTest, BurstsOverlappingMoreChurnsThanTheLogHoldsAreNotChecked) {
  const std::vector<Filter> filters = Generate(Profile::kAcl, 300, 7);
  const std::vector<Header> trace = GenerateTrace(filters, 2000, 8);
  ChurnCheckOptions options;
  options.seconds = 0.5;
  options.churn_log = 1;
  absl::StatusOr<ChurnCheckReport> report = RunChurnCheck(filters, trace, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->mismatches, 0u) << (report->examples.empty() ? "" : report->examples[0]);
  EXPECT_GT(report->unchecked, 0u);
  EXPECT_GE(report->frames, trace.size());  // the final pass at least
}

// Frames of protocols without ports (ICMP here) carry none, and the model reads them with ports 0, as the
// parser does: a filter on a source port misses them, one on any port takes them.
TEST(ChurnCheckTest, PortlessProtocolsAreClassifiedAsParsed) {
  std::vector<Filter> filters(2);
  filters[0].sport = {1000, 1000};
  filters[1].dst = 0x0a000000;
  filters[1].dst_mask = 0xff000000;
  const std::vector<Header> trace = {{0x0a000001, 0x0a000002, 1000, 2000, 1},    // ICMP: filter 1
                                     {0x0a000001, 0x0a000002, 1000, 2000, 6},    // TCP: filter 0
                                     {0x0a000001, 0x0b000002, 1001, 2000, 17}};  // UDP: no filter
  ChurnCheckOptions options;
  options.seconds = 0.2;
  absl::StatusOr<ChurnCheckReport> report = RunChurnCheck(filters, trace, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->mismatches, 0u) << (report->examples.empty() ? "" : report->examples[0]);
}

TEST(ChurnCheckTest, RefusesBadArguments) {
  const std::vector<Filter> filters = Generate(Profile::kAcl, 10, 1);
  const std::vector<Header> trace = GenerateTrace(filters, 10, 1);
  ChurnCheckOptions options;
  EXPECT_EQ(RunChurnCheck({}, trace, options).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RunChurnCheck(filters, {}, options).status().code(), absl::StatusCode::kInvalidArgument);
  options.workers = 0;
  EXPECT_EQ(RunChurnCheck(filters, trace, options).status().code(), absl::StatusCode::kInvalidArgument);
  options.workers = 1;
  options.churn_log = 0;
  EXPECT_EQ(RunChurnCheck(filters, trace, options).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace drsim::classbench
