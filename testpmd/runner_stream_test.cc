// Rule files streamed into a pristine engine one command at a time (runner.h's RunStream): what the flows
// do and what flow list/query/destroy say afterwards, errors with their lines (and nothing left installed),
// identical rules in linear time (older wins, EEXIST when refused) and shared actions.
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testpmd/engine_test_util.h"
#include "testpmd/runner.h"

namespace drsim::testpmd {
namespace {

using ::testing::HasSubstr;

FileReport Stream(FlowEngine& engine, const std::string& text, StreamOptions options = {}) {
  std::istringstream in(text);
  return RunStream(engine, "f.rules", in, options);
}

std::string Rule(const char* src, int queue) {
  return absl::StrCat("flow create 0 ingress group 1 pattern eth / ipv4 src is ", src,
                      " / udp / end actions count / queue index ", queue, " / end\n");
}

TEST_F(EngineTest, StreamedFlowsSteerAndAnswerListQueryAndDestroy) {
  ASSERT_TRUE(engine_.pristine());
  const std::string text = "flow create 0 ingress pattern eth / end actions jump group 1 / end\n" +
                           Rule("10.0.0.1", 1) + "# a comment\n" + Rule("10.0.0.2", 2) + Rule("10.0.0.3", 3);
  size_t seen = 0;
  StreamOptions options;
  options.keep_outcomes = false;
  options.on_command = [&seen](size_t n) { seen = n; };
  FileReport r = Stream(engine_, text, options);
  ASSERT_TRUE(r.ok()) << r.diagnostics.front().ToString();
  EXPECT_EQ(r.commands, 4u);
  EXPECT_EQ(seen, 4u);
  EXPECT_TRUE(r.outcomes.empty());
  EXPECT_FALSE(engine_.pristine());
  EXPECT_EQ(engine_.FlowLine(0, 2), 4);  // the comment is line 3

  EXPECT_EQ(nic_.ReceiveFromWire(Udp("10.0.0.2", "1.1.1.1", 1, 2)).qp_num, Qp(0, 2));
  EXPECT_EQ(nic_.ReceiveFromWire(Udp("10.0.0.3", "1.1.1.1", 1, 2)).qp_num, Qp(0, 3));
  EXPECT_EQ(nic_.ReceiveFromWire(Udp("10.0.0.9", "1.1.1.1", 1, 2)).fate, sim::Fate::kDomainDefault);

  absl::StatusOr<CommandResult> list = Try("flow list 0 group 1");
  ASSERT_TRUE(list.ok());
  EXPECT_THAT(list->text, HasSubstr("2\t1\t0\ti--\tETH IPV4 UDP => COUNT QUEUE\n"));
  absl::StatusOr<CommandResult> count = Try("flow query 0 2 count");
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(count->count->hits, 1u);
  ASSERT_TRUE(Try("flow destroy 0 rule 2").ok());
  EXPECT_EQ(nic_.ReceiveFromWire(Udp("10.0.0.2", "1.1.1.1", 1, 2)).fate, sim::Fate::kDomainDefault);
  EXPECT_EQ(engine_.counts().flows, 3);
}

TEST_F(EngineTest, StreamedErrorsNameTheirLinesAndLeaveNothingInstalled) {
  const std::string text =
      Rule("10.0.0.1", 1) +  // 1
      "flow create 0 ingress pattern eth / ipv4 src is 10.0.0.300 / end actions drop / end\n" +
      Rule("10.0.0.2", 99) +     // 3: no queue 99
      Rule("10.0.0.3", 3) +      // 4
      "flow query 0 7 count\n";  // 5: no flow 7
  FileReport r = Stream(engine_, text);
  ASSERT_EQ(r.diagnostics.size(), 3u);
  EXPECT_THAT(r.diagnostics[0].ToString(), HasSubstr("f.rules:2:49: error:"));
  EXPECT_EQ(r.diagnostics[1].pos.line, 3);
  EXPECT_THAT(r.diagnostics[1].ToString(), HasSubstr("queue"));
  EXPECT_EQ(r.diagnostics[2].pos.line, 5);
  EXPECT_EQ(r.commands, 0u);
  EXPECT_TRUE(r.outcomes.empty());
  // Everything the file did is undone: the engine is as new.
  EXPECT_TRUE(engine_.pristine());
  const EngineCounts c = engine_.counts();
  EXPECT_EQ(c.flows, 0);
  EXPECT_EQ(c.rules, 0);
  EXPECT_EQ(c.domains, 0);
  EXPECT_EQ(c.shared_actions, 0);
  // And a clean file runs on it afterwards.
  EXPECT_TRUE(Stream(engine_, Rule("10.0.0.1", 1)).ok());
}

TEST_F(EngineTest, IdenticalRulesStreamInLinearTimeAndTheOldestWins) {
  // 20,000 copies: quadratic duplicate chains would walk 2 * 10^8 links here (and the check engine of a
  // whole-file check as many again).
  constexpr int kCopies = 20000;
  std::string text = "flow create 0 ingress pattern eth / end actions jump group 1 / end\n";
  text += Rule("10.0.0.1", 1);
  for (int i = 1; i < kCopies; ++i) text += Rule("10.0.0.1", 2);
  FileReport r = Stream(engine_, text);
  ASSERT_TRUE(r.ok());
  const EngineCounts c = engine_.counts();
  EXPECT_EQ(c.flows, kCopies + 1);
  EXPECT_EQ(c.rules, kCopies + 1);
  EXPECT_EQ(c.matchers, 2);
  // Every copy's queue action is one shared action (the jump is the table's own); counters stay per flow.
  EXPECT_EQ(c.shared_actions, 2);
  EXPECT_EQ(nic_.ReceiveFromWire(Udp("10.0.0.1", "1.1.1.1", 1, 2)).qp_num, Qp(0, 1));
  ASSERT_TRUE(Try("flow destroy 0 rule 1").ok());  // the oldest copy: the next-oldest wins
  EXPECT_EQ(nic_.ReceiveFromWire(Udp("10.0.0.1", "1.1.1.1", 1, 2)).qp_num, Qp(0, 2));
  absl::StatusOr<CommandResult> count = Try("flow query 0 2 count");
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(count->count->hits, 1u);
  ASSERT_TRUE(Try("flow flush 0").ok());  // newest first
  EXPECT_EQ(engine_.counts().rules, 0);
  EXPECT_EQ(engine_.counts().shared_actions, 0);
}

TEST_F(EngineTest, RefusedDuplicatesFailWithAlreadyExistsAtTheirLine) {
  ASSERT_TRUE(Try(Rule("10.0.0.1", 1)).ok());
  for (const dr::Domain* d : engine_.Domains()) ASSERT_TRUE(d->AllowDuplicateRules(false).ok());
  FileReport r = Stream(engine_, Rule("10.0.0.2", 1) + Rule("10.0.0.1", 2));
  ASSERT_EQ(r.diagnostics.size(), 1u);
  EXPECT_EQ(r.diagnostics[0].code, absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(r.diagnostics[0].pos.line, 2);
  EXPECT_THAT(r.diagnostics[0].message, HasSubstr("duplicate"));
}

}  // namespace
}  // namespace drsim::testpmd
