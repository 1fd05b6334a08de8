// FlowEngine: flow aging (age timeout N, flow query ... age, flow aged [destroy]) on the NIC's clock, and
// indirect actions (shared counters, indirect ages) with every rejection mlx5 makes.
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testpmd/engine.h"
#include "testpmd/engine_test_util.h"
#include "testpmd/runner.h"

namespace drsim::testpmd {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kSecond = 1'000'000'000;

class AgingTest : public EngineTest {
 protected:
  // Flow 0: port 0's root sends everything to group 1.
  void SetUp() override { Run("flow create 0 ingress pattern end actions jump group 1 / end"); }
  // One frame of flow `port_number` (TCP to 10.0.0.2:port_number) from the wire at second `t`.
  sim::Verdict HitAt(double t, uint16_t dport = 80) {
    nic_.set_time_ns(static_cast<uint64_t>(t * kSecond));
    return nic_.ReceiveFromWire(Tcp("10.0.0.1", "10.0.0.2", 1000, dport));
  }
  AgeResult AgeAt(double t, uint32_t flow) {
    nic_.set_time_ns(static_cast<uint64_t>(t * kSecond));
    return Run(absl::StrFormat("flow query 0 %d age", flow)).age.value_or(AgeResult{});
  }
  absl::Status Error(const std::string& text) { return Try(text).status(); }
  // An ingress rule of group 1 for TCP port `dport` with `actions`; returns its id.
  uint32_t Create(uint16_t dport, const std::string& actions, uint32_t group = 1) {
    return Run(absl::StrFormat("flow create 0 group %d ingress pattern eth / ipv4 / tcp dst is %d / end "
                               "actions %s / queue index 0 / end",
                               group, dport, actions))
        .flow_id.value_or(~0u);
  }
};

TEST_F(AgingTest, QueryCountsWholeSecondsSinceTheLastHitAndAgesPastTheTimeout) {
  const uint32_t flow = Create(80, "age timeout 10");
  EXPECT_EQ(HitAt(1).fate, sim::Fate::kQueued);
  HitAt(2.5);
  AgeResult r = AgeAt(5.9, flow);
  EXPECT_FALSE(r.aged);
  EXPECT_TRUE(r.sec_since_last_hit_valid);
  EXPECT_EQ(r.sec_since_last_hit, 3u);  // 3.4 s
  EXPECT_EQ(Run(absl::StrFormat("flow query 0 %d age", flow)).text,
            "AGE:\n aged: 0\n sec_since_last_hit_valid: 1\n sec_since_last_hit: 3\n");
  // 10.9 s idle is 10 whole seconds: not past the timeout yet; 11 s is.
  EXPECT_FALSE(AgeAt(13.4, flow).aged);
  r = AgeAt(13.5, flow);
  EXPECT_TRUE(r.aged);
  EXPECT_FALSE(r.sec_since_last_hit_valid);
  EXPECT_EQ(Run(absl::StrFormat("flow query 0 %d age", flow)).text,
            "AGE:\n aged: 1\n sec_since_last_hit_valid: 0\n sec_since_last_hit: 0\n");
}

TEST_F(AgingTest, AnIdleStretchAgesTheRuleForGoodEvenIfHitLater) {
  const uint32_t flow = Create(80, "age timeout 3");
  const uint32_t idle = Create(81, "age timeout 3");
  HitAt(0.5);
  HitAt(5);  // 4.5 s without a hit before this one
  HitAt(5.5);
  EXPECT_TRUE(AgeAt(6, flow).aged);
  // A rule never hit ages from its creation (time 0 here).
  EXPECT_TRUE(AgeAt(6, idle).aged);
}

TEST_F(AgingTest, RootTablesAgeByCounterAndShareItWithCount) {
  const uint32_t flow = Create(80, "count / age timeout 2", /*group=*/0);
  EXPECT_EQ(engine_.counts().flow_hit_contexts, 0);
  HitAt(1);
  HitAt(1.5);
  const CommandResult count = Run(absl::StrFormat("flow query 0 %d count", flow));
  ASSERT_TRUE(count.count.has_value());
  EXPECT_EQ(count.count->hits, 2u);
  EXPECT_EQ(AgeAt(3, flow).sec_since_last_hit, 1u);
  EXPECT_TRUE(AgeAt(4.6, flow).aged);
}

TEST_F(AgingTest, FlowAgedReportsEachAgedRuleOnceAndDestroyFreesIt) {
  const uint32_t old_flow = Create(80, "age timeout 5");
  const uint32_t busy = Create(81, "age timeout 5");
  const EngineCounts before = engine_.counts();
  for (int t = 1; t <= 9; ++t) HitAt(t, 81);
  nic_.set_time_ns(9 * kSecond);
  EXPECT_EQ(Run("flow aged 0").text,
            absl::StrFormat("Port 0 total aged flows: 1\nType                \tID\tGroup\tPrio\tAttr\n"
                            "Flow                \t%d\t1\t0\ti--\t\n\n0 flows destroyed\n",
                            old_flow));
  EXPECT_EQ(Run("flow aged 0").text, "Port 0 total aged flows: 0\n");  // reported once
  EXPECT_TRUE(AgeAt(9, old_flow).aged);                               // still aged when queried
  // busy ages once its traffic stops; `destroy` takes it and everything it held.
  nic_.set_time_ns(16 * kSecond);
  const CommandResult r = Run("flow aged 0 destroy");
  ASSERT_TRUE(r.aged.has_value());
  ASSERT_EQ(r.aged->flows.size(), 1u);
  EXPECT_EQ(r.aged->flows[0].id, busy);
  EXPECT_THAT(r.text, HasSubstr(absl::StrFormat("Flow rule #%d destroyed\n\n1 flows destroyed\n", busy)));
  EXPECT_EQ(engine_.counts().flows, before.flows - 1);
  EXPECT_EQ(engine_.counts().rules, before.rules - 1);
  EXPECT_FALSE(Try(absl::StrFormat("flow query 0 %d age", busy)).ok());
  // Its flow-hit context went back to the pool; the first flow keeps its own.
  EXPECT_EQ(before.flow_hit_contexts, 2);
  EXPECT_EQ(engine_.counts().flow_hit_contexts, 1);
  EXPECT_EQ(HitAt(17, 81).fate, sim::Fate::kDomainDefault);
}

TEST_F(AgingTest, QueryByUserId) {
  Run("flow create 0 group 1 user_id 77 ingress pattern eth / end actions age timeout 4 / queue index 0 / "
      "end");
  HitAt(2);
  nic_.set_time_ns(3 * kSecond);
  EXPECT_EQ(Run("flow query 0 77 age user_id").age->sec_since_last_hit, 1u);
  EXPECT_EQ(Error("flow query 0 78 age user_id").code(), absl::StatusCode::kNotFound);
}

TEST_F(AgingTest, AgeRejections) {
  absl::Status s = Error("flow create 0 group 1 ingress pattern end actions age timeout 0 / drop / end");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("age: invalid timeout value 0"));
  s = Error("flow create 0 group 1 ingress pattern end actions age timeout 1 / age timeout 2 / drop / end");
  EXPECT_THAT(s.message(), HasSubstr("a flow takes one age"));
  s = Error("flow create 0 group 1 ingress pattern end actions age timeout 16777216 / drop / end");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  s = Error("flow query 0 0 age");
  EXPECT_THAT(s.message(), HasSubstr("flow rule #0 has no age action: age data not available"));
  s = Error("flow query 0 9 age");
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  Run("add port meter profile srtcm_rfc2697 0 1 1000 3 0 1");
  s = Error("add port meter policy 0 1 g_actions age timeout 3 / queue index 0 / end r_actions drop / end");
  if (s.ok()) s = Error("create port meter 0 5 1 1 yes 0xffff 0 0");
  if (s.ok()) s = Error("flow create 0 group 1 ingress pattern eth / end actions meter mtr_id 5 / end");
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("'age'"));
  s = Error("flow aged 9");
  EXPECT_THAT(s.message(), HasSubstr("no port 9"));
}

TEST_F(AgingTest, SharedCounterCountsEveryRuleUsingIt) {
  EXPECT_EQ(Run("flow indirect_action 0 create action_id 7 ingress action count / end").text,
            "Indirect action #7 created\n");
  Create(80, "indirect 7");
  Create(81, "indirect 7", /*group=*/0);
  Run("flow create 0 egress pattern eth / end actions indirect 7 / end");  // what port 0 sends
  HitAt(1, 80);
  HitAt(1, 81);
  nic_.pf().Send(Udp("10.9.0.1", "10.9.0.2", 1, 2));
  // Indirect actions belong to their port (rte_flow handles do).
  EXPECT_THAT(Error("flow create 1 ingress pattern eth / end actions indirect 7 / queue index 0 / end").message(),
              HasSubstr("Failed to find indirect action #7 on port 1"));
  const CommandResult q = Run("flow indirect_action 0 query 7");
  ASSERT_TRUE(q.count.has_value());
  EXPECT_EQ(q.count->hits, 3u);
  EXPECT_EQ(q.text, absl::StrFormat("Indirect COUNT action:\n hits_set: 1\n bytes_set: 1\n hits: 3\n bytes: %d\n",
                                    q.count->bytes));
  EXPECT_GT(q.count->bytes, 0u);
  // Each rule's own count query reads the shared counter.
  EXPECT_EQ(Run("flow query 0 2 count").count->hits, 3u);
  // Busy while rules use it; then it goes.
  absl::Status s = Error("flow indirect_action 0 destroy action_id 7");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(),
              HasSubstr("Indirect count action #7 has references: 3 flow(s) use it (flow #1, #2, #3;"));
  Run("flow flush 0");
  EXPECT_EQ(Run("flow indirect_action 0 destroy action_id 7").text, "Indirect action #7 destroyed\n");
  EXPECT_EQ(Error("flow indirect_action 0 query 7").code(), absl::StatusCode::kNotFound);
}

// testpmd's port_action_handle_destroy destroys each id it can and reports the one mlx5 refuses (EBUSY: a
// shared counter in use), which stays.
TEST_F(AgingTest, DestroyGoesOnPastABusyIndirectAction) {
  for (int id : {0, 1, 3}) {
    Run(absl::StrFormat("flow indirect_action 0 create action_id %d action count / end", id));
  }
  const uint32_t a = Create(80, "indirect 1");
  const uint32_t b = Create(81, "indirect 1");
  const absl::Status s = Error("flow indirect_action 0 destroy action_id 0 action_id 1 action_id 3");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(
      std::string(s.message()),
      HasSubstr(absl::StrFormat("Indirect count action #1 has references: 2 flow(s) use it (flow #%d, #%d; "
                                "destroy them first; mlx5: EBUSY); the others were destroyed: #3, #0",
                                a, b)));
  EXPECT_EQ(Error("flow indirect_action 0 query 0").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Error("flow indirect_action 0 query 3").code(), absl::StatusCode::kNotFound);
  HitAt(1, 80);
  EXPECT_EQ(Run("flow indirect_action 0 query 1").count->hits, 1u);
  // A file checked now sees the engine as it is (the partial destroy is in the history).
  EXPECT_FALSE(CheckFile(engine_, "f", "flow indirect_action 0 query 3\n").ok());
  EXPECT_TRUE(CheckFile(engine_, "f", "flow indirect_action 0 query 1\n").ok());
  // All busy: nothing goes.
  EXPECT_EQ(Error("flow indirect_action 0 destroy action_id 1").code(),
            absl::StatusCode::kFailedPrecondition);
  Run(absl::StrFormat("flow destroy 0 rule %d rule %d", a, b));
  EXPECT_EQ(Run("flow indirect_action 0 destroy action_id 1").text, "Indirect action #1 destroyed\n");
}

TEST_F(AgingTest, IndirectIdsAreTestpmds) {
  EXPECT_EQ(Run("flow indirect_action 0 create action count / end").indirect_id, 0u);
  EXPECT_EQ(Run("flow indirect_action 0 create action_id 10 action count / end").indirect_id, 10u);
  EXPECT_EQ(Run("flow indirect_action 0 create action count / end").indirect_id, 11u);
  absl::Status s = Error("flow indirect_action 0 create action_id 10 action count / end");
  EXPECT_THAT(s.message(), HasSubstr("Indirect action #10 is already assigned, delete it first"));
  EXPECT_EQ(Run("flow indirect_action 0 destroy action_id 0 action_id 11 action_id 5").text,
            "Indirect action #11 destroyed\nIndirect action #0 destroyed\n");
  Run("flow indirect_action 0 create action_id 4294967294 action count / end");
  s = Error("flow indirect_action 0 create action count / end");
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("Highest indirect action ID is already assigned, delete it first"));
}

TEST_F(AgingTest, IndirectAgeIsKeptAliveByEveryRuleUsingIt) {
  Run("flow indirect_action 0 create action_id 3 action age timeout 4 / end");
  const uint32_t a = Create(80, "indirect 3");
  Create(81, "indirect 3");
  for (int t = 1; t <= 8; ++t) HitAt(t, t % 2 ? 80 : 81);  // each rule idle 2 s at a time
  nic_.set_time_ns(9 * kSecond);
  EXPECT_EQ(Run("flow indirect_action 0 query 3").text,
            "Indirect AGE action:\n aged: 0\n sec_since_last_hit_valid: 1\n sec_since_last_hit: 1\n");
  EXPECT_EQ(AgeAt(9, a).sec_since_last_hit, 1u);  // a rule's age query reads the indirect age
  nic_.set_time_ns(13 * kSecond);
  EXPECT_EQ(Run("flow aged 0 destroy").text,
            "Port 0 total aged flows: 1\nType                \tID\tGroup\tPrio\tAttr\n"
            "Indirect action     \t3\n\n0 flows destroyed\n");
  EXPECT_EQ(engine_.counts().flows, 3);  // testpmd destroys flows only
  // mlx5 lets an indirect age go while rules use it; they keep working.
  EXPECT_EQ(Run("flow indirect_action 0 destroy action_id 3").text, "Indirect action #3 destroyed\n");
  EXPECT_EQ(HitAt(14, 80).fate, sim::Fate::kQueued);
  // One flow-hit context for the action and both rules; it goes back to the pool with the last rule.
  EXPECT_EQ(engine_.counts().flow_hit_contexts, 1);
  Run("flow flush 0");
  EXPECT_EQ(engine_.counts().flow_hit_contexts, 0);
}

// Outside root tables an age sets an ASO flow-hit context, and the count stays the indirect count's.
TEST_F(AgingTest, AgeBesideAnIndirectCountAgesByAFlowHitContext) {
  Run("flow indirect_action 0 create action_id 7 ingress action count / end");
  const uint32_t flow = Create(80, "age timeout 3 / indirect 7");
  Create(81, "indirect 7");
  EXPECT_EQ(engine_.counts().flow_hit_contexts, 1);
  // The engine's first ASO object on this NIC (id 1), context 0: the rule's aso action sets it.
  EXPECT_FALSE(*nic_.QueryAsoFirstHit(1, 0));
  HitAt(1);
  HitAt(2.2);
  EXPECT_TRUE(*nic_.QueryAsoFirstHit(1, 0));
  HitAt(2.5, 81);
  EXPECT_EQ(Run("flow indirect_action 0 query 7").count->hits, 3u);
  EXPECT_EQ(Run(absl::StrFormat("flow query 0 %d count", flow)).count->hits, 3u);  // the shared counter
  nic_.set_time_ns(static_cast<uint64_t>(4.3 * kSecond));
  EXPECT_EQ(Run(absl::StrFormat("flow query 0 %d age", flow)).text,
            "AGE:\n aged: 0\n sec_since_last_hit_valid: 1\n sec_since_last_hit: 2\n");
  HitAt(5, 81);                         // the other rule's hits count, but do not keep this rule alive
  EXPECT_FALSE(AgeAt(6.1, flow).aged);  // 3.9 s idle: 3 whole seconds
  EXPECT_TRUE(AgeAt(6.3, flow).aged);
  EXPECT_EQ(Run(absl::StrFormat("flow query 0 %d age", flow)).text,
            "AGE:\n aged: 1\n sec_since_last_hit_valid: 0\n sec_since_last_hit: 0\n");
  HitAt(7);  // final: a hit after aging does not bring it back
  EXPECT_TRUE(AgeAt(7, flow).aged);
  const CommandResult r = Run("flow aged 0 destroy");
  ASSERT_EQ(r.aged->flows.size(), 1u);
  EXPECT_EQ(r.aged->flows[0].id, flow);
  EXPECT_EQ(engine_.counts().flow_hit_contexts, 0);
  EXPECT_EQ(Run("flow aged 0").text, "Port 0 total aged flows: 0\n");
  // The shared counter lives on with the other rule.
  HitAt(8, 81);
  EXPECT_EQ(Run("flow indirect_action 0 query 7").count->hits, 6u);
}

TEST_F(AgingTest, IndirectAgeBesideACountOfItsOwn) {
  Run("flow indirect_action 0 create action_id 4 action age timeout 2 / end");
  const uint32_t a = Create(80, "indirect 4 / count");
  const uint32_t b = Create(81, "count / indirect 4");
  EXPECT_EQ(engine_.counts().flow_hit_contexts, 1);
  HitAt(1, 80);
  HitAt(2, 81);
  HitAt(2.5, 81);
  EXPECT_EQ(Run(absl::StrFormat("flow query 0 %d count", a)).count->hits, 1u);
  EXPECT_EQ(Run(absl::StrFormat("flow query 0 %d count", b)).count->hits, 2u);
  nic_.set_time_ns(static_cast<uint64_t>(3.9 * kSecond));
  EXPECT_EQ(Run("flow indirect_action 0 query 4").text,
            "Indirect AGE action:\n aged: 0\n sec_since_last_hit_valid: 1\n sec_since_last_hit: 1\n");
  EXPECT_EQ(AgeAt(3.9, a).sec_since_last_hit, 1u);  // the rule's query reads the indirect age
  nic_.set_time_ns(static_cast<uint64_t>(5.6 * kSecond));
  EXPECT_TRUE(Run("flow indirect_action 0 query 4").age->aged);
  EXPECT_EQ(Run("flow aged 0").text,
            "Port 0 total aged flows: 1\nType                \tID\tGroup\tPrio\tAttr\n"
            "Indirect action     \t4\n\n0 flows destroyed\n");
  EXPECT_EQ(Run("flow aged 0").text, "Port 0 total aged flows: 0\n");
  Run(absl::StrFormat("flow destroy 0 rule %d rule %d", a, b));
  EXPECT_EQ(engine_.counts().flow_hit_contexts, 1);  // the indirect action holds it
  Run("flow indirect_action 0 destroy action_id 4");
  EXPECT_EQ(engine_.counts().flow_hit_contexts, 0);
}

TEST_F(AgingTest, AFreedFlowHitContextStartsAfreshForItsNextAge) {
  const uint32_t old_flow = Create(80, "age timeout 2");
  HitAt(1);
  nic_.set_time_ns(10 * kSecond);
  Run(absl::StrFormat("flow destroy 0 rule %d", old_flow));
  const uint32_t flow = Create(81, "age timeout 2");  // takes the same context (first object, context 0)
  EXPECT_FALSE(*nic_.QueryAsoFirstHit(1, 0));
  const AgeResult r = AgeAt(10.5, flow);
  EXPECT_FALSE(r.aged);
  EXPECT_EQ(r.sec_since_last_hit, 0u);
  EXPECT_TRUE(AgeAt(13, flow).aged);
}

// Transfer group 0 is not the root table under fdb_def_rule, so it ages by ASO too, as in mlx5.
TEST_F(AgingTest, TransferGroup0TakesAnIndirectAge) {
  Run("flow indirect_action 0 create action_id 2 action age timeout 5 / end");
  Run("flow create 0 transfer pattern eth / end actions indirect 2 / represented_port ethdev_port_id 1 / "
      "end");
  EXPECT_EQ(engine_.counts().flow_hit_contexts, 1);
}

// mlx5 takes one ASO action (an ASO age, a meter, a conntrack) in a rule, and none after a transfer mirror.
TEST_F(AgingTest, OneAsoActionARule) {
  const auto create = [&](const std::string& actions) {
    return Error(absl::StrFormat(
        "flow create 0 group 1 ingress pattern eth / ipv4 / tcp / end actions %s / queue index 0 / end",
        actions));
  };
  constexpr absl::string_view kCombining =
      "unsupported combining AGE, METER, CT ASO actions in a single rule";
  Run("add port meter profile srtcm_rfc2697 0 1 1000 3 0 1");
  Run("add port meter policy 0 1 g_actions end y_actions end r_actions drop / end");
  Run("create port meter 0 5 1 1 yes 0xffff 0 0");
  Run("flow indirect_action 0 create action_id 1 action count / end");
  Run("flow indirect_action 0 create action_id 2 action age timeout 5 / end");
  Run("flow indirect_action 0 create action_id 3 action conntrack / end");
  absl::Status s = create("meter mtr_id 5 / age timeout 3");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("age: ", kCombining)));
  s = create("indirect 2 / meter mtr_id 5");  // at the later of the two, as written
  EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("meter: ", kCombining, " ('indirect' at 1:")));
  s = create("indirect 3 / age timeout 3");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("age: ", kCombining)));
  s = create("indirect 3 / indirect 2");
  EXPECT_THAT(s.message(), HasSubstr(kCombining));
  // An age before the conntrack fails at the conntrack, as mlx5 checks it.
  s = create("age timeout 3 / indirect 3");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("indirect: Only one ASO action is supported ('age' at 1:"));
  s = create("indirect 2 / indirect 3");
  EXPECT_THAT(s.message(), HasSubstr("Only one ASO action is supported ('indirect' at 1:"));
  // A transfer mirror before an ASO age.
  Run("set sample_actions 1 represented_port ethdev_port_id 2 / end");
  s = Error(
      "flow create 0 transfer group 1 pattern eth / end actions sample ratio 1 index 1 / age timeout 3 / "
      "represented_port ethdev_port_id 1 / end");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(s.message(), HasSubstr("age: sample before ASO action is not supported"));
  EXPECT_EQ(engine_.counts().flow_hit_contexts, 1);  // the indirect age's only
  // An age of its own beside a count (its own, or in mlx5's validation an indirect one) is not counted as
  // an ASO action: these are accepted.
  const EngineCounts before = engine_.counts();
  Run("flow create 0 group 1 ingress pattern eth / ipv4 / tcp / end actions count / age timeout 3 / meter "
      "mtr_id 5 / queue index 0 / end");
  Run("flow create 0 group 1 ingress pattern eth / ipv4 / tcp / end actions indirect 3 / age timeout 3 / "
      "count / queue index 0 / end");
  Run("flow create 0 transfer group 1 pattern eth / end actions age timeout 3 / sample ratio 1 index 1 / "
      "represented_port ethdev_port_id 1 / end");
  EXPECT_EQ(engine_.counts().flows, before.flows + 3);
  EXPECT_EQ(engine_.counts().flow_hit_contexts, 2);  // the mirror's age (the others are counter-aged)
  // mlx5's translation still ages these two by ASO (its counter is the indirect one): a rule with two ASO
  // actions, which DR takes.
  Run("flow create 0 group 1 ingress pattern eth / ipv4 / tcp / end actions age timeout 3 / indirect 1 / "
      "meter mtr_id 5 / queue index 0 / end");
  Run("flow create 0 group 1 ingress pattern eth / ipv4 / tcp / end actions indirect 3 / age timeout 3 / "
      "indirect 1 / queue index 0 / end");
  EXPECT_EQ(engine_.counts().flow_hit_contexts, 4);
}

TEST_F(AgingTest, IndirectRejections) {
  Run("flow indirect_action 0 create action_id 1 action count / end");
  Run("flow indirect_action 0 create action_id 2 action age timeout 5 / end");
  auto create = [&](const std::string& actions, uint32_t group) {
    return Error(absl::StrFormat(
        "flow create 0 group %d ingress pattern eth / end actions %s / queue index 0 / end", group, actions));
  };
  absl::Status s = create("indirect 2", 0);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(s.message(), HasSubstr("Shared ASO age action is not supported for group 0"));
  s = create("indirect 1 / age timeout 3", 0);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("old age and indirect count combination is not supported"));
  s = create("age timeout 3 / indirect 1", 0);  // either order
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("indirect: old age and indirect count combination is not supported"));
  // The second of two counts or ages, in the order written, is the duplicate.
  s = create("indirect 1 / count", 1);
  EXPECT_THAT(s.message(), HasSubstr("count: duplicate count actions set"));
  s = create("count / indirect 1", 1);
  EXPECT_THAT(s.message(), HasSubstr("indirect: duplicate count actions set"));
  s = create("indirect 2 / age timeout 3", 1);
  EXPECT_THAT(s.message(), HasSubstr("age: duplicate age actions set"));
  s = create("age timeout 3 / indirect 2", 1);
  EXPECT_THAT(s.message(), HasSubstr("indirect: duplicate age actions set"));
  Run("flow indirect_action 0 create action_id 3 action age timeout 6 / end");
  s = create("indirect 2 / indirect 3", 1);
  EXPECT_THAT(s.message(), HasSubstr("indirect: duplicate age actions set"));
  EXPECT_EQ(engine_.counts().flow_hit_contexts, 2);  // the two indirect ages: refusals leave none behind
  s = create("indirect 9", 1);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("indirect: Failed to find indirect action #9 on port 0"));
  s = Error("flow indirect_action 0 create action queue index 0 / end");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(s.message(), HasSubstr("queue: cannot be an indirect action here"));
  s = Error("flow indirect_action 0 create action count / count / end");
  EXPECT_THAT(s.message(), HasSubstr("an indirect action is one action, found 2"));
  s = Error("flow indirect_action 0 create action age timeout 0 / end");
  EXPECT_THAT(s.message(), HasSubstr("invalid timeout value 0"));
  s = Error("flow indirect_action 0 update 1 action count / end");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(s.message(), HasSubstr("action type update not supported"));
  s = Error("flow indirect_action 0 update 8 action count / end");
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  s = Error("flow indirect_action 0 query 8");
  EXPECT_THAT(s.message(), HasSubstr("Failed to find indirect action #8 on port 0"));
  s = Error("flow indirect_action 5 query 1");
  EXPECT_THAT(s.message(), HasSubstr("no port 5"));
  s = Error("flow indirect_action 0 destroy 1");
  EXPECT_THAT(s.message(), HasSubstr("expected 'action_id'"));
  s = Error("flow indirect_action 0 remove 1");
  EXPECT_THAT(s.message(), HasSubstr("expected create, update, destroy or query"));
}

}  // namespace
}  // namespace drsim::testpmd
