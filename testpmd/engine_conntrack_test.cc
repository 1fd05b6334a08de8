// FlowEngine: testpmd's conntrack (set conntrack, indirect conntrack actions, the conntrack item) as the
// mlx5 PMD maps it, with a TCP conversation through the NIC and every refusal mlx5 makes.
#include <string>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/conntrack.h"
#include "testpmd/engine.h"
#include "testpmd/engine_test_util.h"
#include "testpmd/parser.h"

namespace drsim::testpmd {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A connection 10.0.0.1:1000 (client, original direction) <-> 10.0.0.2:80, established: the client's next
// sequence number is 1001, the server's 5001, both windows 65535 unscaled.
constexpr uint32_t kClientSeq = 1001, kServerSeq = 5001;

class ConntrackTest : public EngineTest {
 protected:
  void SetUp() override {
    Run("flow create 0 ingress pattern end actions jump group 1 / end");
    Profile(/*is_orig=*/1);
    Run(absl::StrFormat("set conntrack orig scale 0 fin 0 acked 1 unack_data 0 sent_end %d reply_end %d "
                        "max_win 65535 max_ack %d",
                        kClientSeq, kClientSeq + 65535, kServerSeq));
    Run(absl::StrFormat("set conntrack rply scale 0 fin 0 acked 1 unack_data 0 sent_end %d reply_end %d "
                        "max_win 65535 max_ack %d",
                        kServerSeq, kServerSeq + 65535, kClientSeq));
  }
  void Profile(int is_orig, int state = 1, int peer = 0) {
    Run(absl::StrFormat("set conntrack com peer %d is_orig %d enable 1 live 1 sack 0 cack 0 last_dir 0 "
                        "liberal 0 state %d max_ack_win 7 r_lim 5 last_win 0 last_seq 0 last_ack 0 "
                        "last_end 0 last_index 0",
                        peer, is_orig, state));
  }
  // The firewall: group 1 tracks both directions through CT action 0, group 2 queues VALID packets (with
  // or without a state change) to queue 0 and drops INVALID ones.
  void Firewall() {
    EXPECT_EQ(Run("flow indirect_action 0 create action_id 0 ingress action conntrack / end").indirect_id, 0u);
    Run("flow create 0 group 1 ingress pattern eth / ipv4 src is 10.0.0.1 / tcp src is 1000 dst is 80 / end "
        "actions indirect 0 / jump group 2 / end");
    Profile(/*is_orig=*/0);
    Run("flow indirect_action 0 update 0 action conntrack_update dir / end");
    Run("flow create 0 group 1 ingress pattern eth / ipv4 src is 10.0.0.2 / tcp src is 80 dst is 1000 / end "
        "actions indirect 0 / jump group 2 / end");
    Run("flow create 0 group 2 priority 0 ingress pattern conntrack is 1 / end actions queue index 0 / end");
    Run("flow create 0 group 2 priority 0 ingress pattern conntrack is 3 / end actions queue index 0 / end");
    Run("flow create 0 group 2 priority 1 ingress pattern conntrack is 4 / end actions drop / end");
  }
  // A segment with `len` payload bytes from the client (original) or the server.
  sim::Verdict Send(bool client, uint32_t seq, uint32_t ack, size_t len, uint16_t flags = 0x18) {
    sim::FrameSpec s = client ? Ipv4("10.0.0.1", "10.0.0.2", sim::kIpProtoTcp, 1000, 80)
                              : Ipv4("10.0.0.2", "10.0.0.1", sim::kIpProtoTcp, 80, 1000);
    s.seq = seq;
    s.ack = ack;
    s.payload_len = len;
    s.tcp_flags = flags;
    return nic_.ReceiveFromWire(sim::BuildFrame(s));
  }
  sim::CtContext Query() { return Run("flow indirect_action 0 query 0").conntrack.value_or(sim::CtContext{}); }
  absl::Status Error(const std::string& text) { return Try(text).status(); }
};

TEST_F(ConntrackTest, InWindowDataInBothDirectionsIsValidAndOutOfWindowIsInvalid) {
  Firewall();
  EXPECT_EQ(Send(true, kClientSeq, kServerSeq, 100).fate, sim::Fate::kQueued);
  EXPECT_EQ(Send(false, kServerSeq, kClientSeq + 100, 200).fate, sim::Fate::kQueued);
  EXPECT_EQ(Send(true, kClientSeq + 100, kServerSeq + 200, 0, 0x10).fate, sim::Fate::kQueued);
  // Far beyond what the server's window allows: INVALID, dropped.
  EXPECT_EQ(Send(true, kClientSeq + 1'000'000, kServerSeq + 200, 10).fate, sim::Fate::kDropped);
  // An ack of data the client never sent: INVALID.
  EXPECT_EQ(Send(false, kServerSeq + 200, kClientSeq + 900'000, 0, 0x10).fate, sim::Fate::kDropped);

  const sim::CtContext ct = Query();
  EXPECT_EQ(ct.state, sim::CtState::kEstablished);
  EXPECT_EQ(ct.original.sent_end, kClientSeq + 100);
  EXPECT_EQ(ct.reply.sent_end, kServerSeq + 200);
  EXPECT_EQ(ct.original.max_ack, kServerSeq + 200);
  EXPECT_TRUE(ct.last_direction_original);
  EXPECT_EQ(ct.last_seq, kClientSeq + 100);
}

TEST_F(ConntrackTest, FinMovesTheStateAndTheQueryPrintsAsTestpmd) {
  Firewall();
  // FIN|ACK: VALID and CHANGED, which `conntrack is 1` (all bits compared) misses and `is 3` takes.
  EXPECT_EQ(Send(true, kClientSeq, kServerSeq, 0, 0x11).fate, sim::Fate::kQueued);
  EXPECT_EQ(Query().state, sim::CtState::kFinWait);
  EXPECT_EQ(Send(false, kServerSeq, kClientSeq + 1, 0, 0x10).fate, sim::Fate::kQueued);
  const std::string text = Run("flow indirect_action 0 query 0").text;
  EXPECT_THAT(text, HasSubstr("Conntrack Context:\n  Peer: 0, Flow dir: Reply, Enable: 1\n"));
  EXPECT_THAT(text, HasSubstr(absl::StrFormat("State: %d", static_cast<int>(Query().state))));
  EXPECT_THAT(text, HasSubstr("  Original Dir:\n    scale: 0, fin: 1"));
  EXPECT_THAT(text, HasSubstr("  Reply Dir:\n"));
}

TEST_F(ConntrackTest, UpdateCtxReprogramsTheContext) {
  Firewall();
  Profile(/*is_orig=*/0, /*state=*/3);  // CLOSE_WAIT
  Run("flow indirect_action 0 update 0 action conntrack_update ctx / end");
  EXPECT_EQ(Query().state, sim::CtState::kCloseWait);
  EXPECT_EQ(Query().original.sent_end, kClientSeq);
}

TEST_F(ConntrackTest, ADisabledContextReportsDisabledWhichAValidMatchMisses) {
  Run("set conntrack com peer 0 is_orig 1 enable 0 live 1 sack 0 cack 0 last_dir 0 liberal 0 state 1 "
      "max_ack_win 7 r_lim 5 last_win 0 last_seq 0 last_ack 0 last_end 0 last_index 0");
  Run("flow indirect_action 0 create action conntrack / end");
  Run("flow create 0 group 1 ingress pattern eth / ipv4 / tcp / end actions indirect 0 / jump group 2 / end");
  Run("flow create 0 group 2 ingress pattern conntrack is 8 / end actions queue index 1 / end");
  EXPECT_EQ(Send(true, kClientSeq, kServerSeq, 10).fate, sim::Fate::kQueued);
  EXPECT_TRUE(PollQueue(0, 1).has_value());
}

TEST_F(ConntrackTest, RefusesWhatMlx5Refuses) {
  Run("flow indirect_action 0 create action conntrack / end");
  const auto expect = [&](const std::string& text, absl::string_view why) {
    const absl::Status s = Error(text);
    EXPECT_FALSE(s.ok()) << text;
    EXPECT_THAT(std::string(s.message()), HasSubstr(std::string(why))) << text;
  };
  expect("flow create 0 ingress pattern eth / ipv4 / tcp / end actions indirect 0 / queue index 0 / end",
         "Only support non-root table");
  expect("flow create 0 group 1 ingress pattern eth / ipv4 / tcp / end actions jump group 2 / indirect 0 / end",
         "CT cannot follow a fate action");
  expect("flow create 0 group 1 ingress pattern eth / ipv4 / tcp / end actions age timeout 5 / indirect 0 / "
         "jump group 2 / end",
         "Only one ASO action is supported");
  expect("flow create 0 group 1 ingress pattern eth / ipv4 / udp / end actions indirect 0 / jump group 2 / end",
         "Not a outer TCP packet");
  expect("flow create 0 group 1 ingress pattern eth / ipv4 / tcp / end actions conntrack / jump group 2 / end",
         "as an indirect action only");
  expect("flow create 0 group 2 ingress pattern conntrack is 5 / end actions drop / end",
         "Conflict status bits (conntrack flags 0x5: VALID conflicts with INVALID, DISABLED and BAD)");
  expect("flow create 0 group 2 ingress pattern conntrack is 0x20 / end actions drop / end",
         "Invalid CT item flags (conntrack flags 0x20: only VALID 0x1");
  expect("flow create 0 group 2 ingress pattern conntrack is 1 / conntrack is 4 / end actions drop / end",
         "Only one CT is supported");
  expect("flow indirect_action 0 update 0 action count / end", "conntrack_update");
  Run("set conntrack com peer 0 is_orig 1 enable 1 live 1 sack 0 cack 0 last_dir 0 liberal 0 state 6 "
      "max_ack_win 7 r_lim 5 last_win 0 last_seq 0 last_ack 0 last_end 0 last_index 0");
  expect("flow indirect_action 0 create action conntrack / end", "Invalid CT state 6");
  expect("flow indirect_action 0 update 0 action conntrack_update ctx / end", "Invalid CT state 6");
  Run("set conntrack com peer 0 is_orig 1 enable 1 live 1 sack 0 cack 0 last_dir 0 liberal 0 state 1 "
      "max_ack_win 7 r_lim 5 last_win 0 last_seq 0 last_ack 0 last_end 0 last_index 17");
  expect("flow indirect_action 0 create action conntrack / end", "Invalid last TCP packet flag 17");
  expect("set conntrack com peer 0 is_orig 2", "'is_orig'");
  expect("set conntrack orig scale 0 fin 0 acked 1 sent_end 1", "'unack_data'");
  expect("set conntrack both scale 0", "expected com, orig or rply");
}

// mlx5 runs one ASO object per rule. flow_dv_validate_action_aso_ct refuses a meter or an age (its own or
// an indirect one) written before CT (EINVAL); flow_dv_validate's aso_mask then refuses two ASO actions in
// any order (ENOTSUP), where an age of its own beside a count is no ASO action (it ages by the counter).
TEST_F(ConntrackTest, OneAsoActionPerRuleAsMlx5Counts) {
  Run("flow indirect_action 0 create action_id 0 ingress action conntrack / end");
  Run("flow indirect_action 0 create action_id 1 ingress action age timeout 5 / end");
  Run("add port meter profile srtcm_rfc2697 0 1 1000 3 0 1");
  Run("add port meter policy 0 1 g_actions end y_actions end r_actions drop / end");
  Run("create port meter 0 5 1 1 yes 0xffff 0 0");
  const auto refused = [&](const std::string& actions, absl::StatusCode code, const std::string& message) {
    const std::string text =
        "flow create 0 group 1 ingress pattern eth / ipv4 / tcp / end actions " + actions;
    const absl::Status s = Error(text);
    EXPECT_EQ(s.code(), code) << text << "\n  -> " << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(message)) << text;
  };
  // Written before CT.
  refused("meter mtr_id 5 / indirect 0 / jump group 2 / end", absl::StatusCode::kInvalidArgument,
          "indirect: Only one ASO action is supported ('meter' at 1:");
  refused("age timeout 5 / indirect 0 / jump group 2 / end", absl::StatusCode::kInvalidArgument,
          "indirect: Only one ASO action is supported ('age' at 1:");
  refused("count / age timeout 5 / indirect 0 / jump group 2 / end", absl::StatusCode::kInvalidArgument,
          "indirect: Only one ASO action is supported ('age' at 1:");
  refused("indirect 1 / indirect 0 / jump group 2 / end", absl::StatusCode::kInvalidArgument,
          "indirect: Only one ASO action is supported ('indirect' at 1:");
  // Written after CT.
  const std::string combining =
      "unsupported combining AGE, METER, CT ASO actions in a single rule ('indirect' at 1:";
  refused("indirect 0 / meter mtr_id 5 / jump group 2 / end", absl::StatusCode::kUnimplemented,
          "meter: " + combining);
  refused("indirect 0 / age timeout 5 / jump group 2 / end", absl::StatusCode::kUnimplemented,
          "age: " + combining);
  refused("indirect 0 / count / indirect 1 / jump group 2 / end", absl::StatusCode::kUnimplemented,
          "indirect: " + combining);
  EXPECT_EQ(engine_.counts().flows, 1);  // SetUp's jump only

  // An age of its own after CT, beside a count, ages by the counter: accepted, and both work.
  const uint32_t flow =
      *Run("flow create 0 group 1 ingress pattern eth / ipv4 / tcp / end actions indirect 0 / count / age "
           "timeout 5 / jump group 2 / end")
           .flow_id;
  Run("flow create 0 group 2 ingress pattern conntrack is 1 / end actions queue index 1 / end");
  EXPECT_EQ(Send(true, kClientSeq, kServerSeq, 10).fate, sim::Fate::kQueued);
  EXPECT_TRUE(PollQueue(0, 1).has_value());
  EXPECT_EQ(Run(absl::StrFormat("flow query 0 %d count", flow)).count->hits, 1u);
  EXPECT_EQ(Query().original.sent_end, kClientSeq + 10);
}

TEST_F(ConntrackTest, MeterAndAgeWithoutCtFollowTheSameAsoRule) {
  Run("add port meter profile srtcm_rfc2697 0 1 1000 3 0 1");
  Run("add port meter policy 0 1 g_actions end y_actions end r_actions drop / end");
  Run("create port meter 0 5 1 1 yes 0xffff 0 0");
  const absl::Status s = Error(
      "flow create 0 group 1 ingress pattern eth / end actions meter mtr_id 5 / age timeout 5 / queue index "
      "0 "
      "/ end");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(
      std::string(s.message()),
      HasSubstr("age: unsupported combining AGE, METER, CT ASO actions in a single rule ('meter' at 1:"));
  // An age beside a count ages by the counter: no ASO age.
  Run("flow create 0 group 1 ingress pattern eth / end actions meter mtr_id 5 / count / age timeout 5 / "
      "queue "
      "index 0 / end");
}

// flow_dv_validate_action_aso_ct's order: only drop, queue, rss and jump are fates CT may not follow
// (MLX5_FLOW_FATE_ACTIONS); a sample may not follow CT (flow_dv_validate_action_sample).
TEST_F(ConntrackTest, FatesAndSamplesAroundCt) {
  Run("flow indirect_action 0 create action_id 0 ingress action conntrack / end");
  Run("set sample_actions 0 queue index 1 / end");
  absl::Status s = Error(
      "flow create 0 group 1 ingress pattern eth / ipv4 / tcp / end actions queue index 0 / indirect 0 / "
      "end");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(s.message()), HasSubstr("indirect: CT cannot follow a fate action ('queue' at 1:"));
  s = Error(
      "flow create 0 group 1 ingress pattern eth / ipv4 / tcp / end actions indirect 0 / sample ratio 2 "
      "index 0 / jump group 2 / end");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("sample: Sample after CT not supported (CT is at 1:"));
  Run("flow create 0 group 1 ingress pattern eth / ipv4 / tcp / end actions sample ratio 2 index 0 / "
      "indirect 0 "
      "/ jump group 2 / end");
  // represented_port is no MLX5_FLOW_FATE_ACTIONS fate: what refuses it before CT is the domain (below).
  s = Error(
      "flow create 0 group 1 transfer pattern eth / ipv4 / tcp / end actions represented_port "
      "ethdev_port_id 1 / indirect 0 / end");
  EXPECT_THAT(std::string(s.message()), HasSubstr("hardware refuses to create flow"));
  EXPECT_THAT(std::string(s.message()), Not(HasSubstr("fate")));
}

// mlx5 makes a CT object's DR actions in the port's NIC_RX domain (flow_dv_aso_ct_alloc) and links them to
// no other domain, and rdma-core takes an ASO CT action of another domain only through a link: CT passes
// mlx5's validation in egress and transfer rules, then DR refuses the rule.
TEST_F(ConntrackTest, CtWorksInIngressRulesOnly) {
  Run("flow indirect_action 0 create action_id 0 ingress action conntrack / end");
  const int flows = engine_.counts().flows;
  for (const std::string attr : {"group 1 egress", "group 1 transfer", "group 0 transfer"}) {
    const std::string text =
        "flow create 0 " + attr + " pattern eth / ipv4 / tcp / end actions indirect 0 / count / end";
    const absl::Status s = Error(text);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << text << "\n  -> " << s;
    EXPECT_THAT(
        std::string(s.message()),
        HasSubstr("indirect: DR rejects the rule: hardware refuses to create flow: action[0] (aso(ct)): the "
                  "ASO CT action was made for another domain"))
        << text;
    EXPECT_THAT(std::string(s.message()), HasSubstr("CT works in ingress rules only")) << text;
  }
  // The root table of any domain is refused first, as mlx5 validates before it creates.
  EXPECT_THAT(
      std::string(
          Error("flow create 0 egress pattern eth / ipv4 / tcp / end actions indirect 0 / end").message()),
      HasSubstr("Only support non-root table"));
  EXPECT_EQ(engine_.counts().flows, flows);
}

// testpmd's item is `conntrack OP FLAGS /` (ITEM_CONNTRACK): one op, no field name. `is` and `spec` both
// compare every state bit (`spec` leaves the PMD the default mask); mask, last or prefix alone give no spec.
TEST_F(ConntrackTest, TheItemTakesOneOpAsTestpmd) {
  absl::Status s =
      Error("flow create 0 group 2 ingress pattern conntrack spec 3 mask 1 / end actions drop / end");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("expected '/' after the conntrack flags, found 'mask' (testpmd's item is 'conntrack "
                        "is|spec|last|mask|prefix FLAGS': one op, no field name)"));
  EXPECT_EQ(ErrorColumn(s), 56);
  s = Error("flow create 0 group 2 ingress pattern conntrack flags is 1 / end actions drop / end");
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("expected is, spec, last, mask or prefix after 'conntrack', found 'flags'"));
  s = Error("flow create 0 group 2 ingress pattern conntrack mask 1 / end actions drop / end");
  EXPECT_THAT(std::string(s.message()), HasSubstr("item 'conntrack' has a mask or last but no spec"));

  Firewall();
  // `spec 1` compares every bit as `is 1` does: a FIN (VALID and CHANGED) misses it and takes `is 3`.
  Run("flow create 0 group 2 priority 0 ingress pattern conntrack spec 1 / end actions queue index 1 / end");
  Run("flow destroy 0 rule 3");
  EXPECT_EQ(Send(true, kClientSeq, kServerSeq, 10).fate, sim::Fate::kQueued);
  EXPECT_TRUE(PollQueue(0, 1).has_value());
  EXPECT_EQ(Send(true, kClientSeq + 10, kServerSeq, 0, 0x11).fate, sim::Fate::kQueued);
  EXPECT_FALSE(PollQueue(0, 1).has_value());
  EXPECT_TRUE(PollQueue(0, 0).has_value());
}

// flow_dv_validate_item_aso_ct restricts no group or domain: the item matches reg_c_5 wherever it is, and
// a packet no CT action saw reads as VALID (0x00), as on mlx5.
TEST_F(ConntrackTest, TheItemMatchesInEveryDomainAndGroup) {
  Run("flow create 0 priority 1 ingress pattern eth / conntrack is 4 / end actions drop / end");
  Run("flow create 0 egress pattern conntrack is 1 / end actions count / end");
  Run("flow create 0 transfer pattern conntrack is 1 / end actions count / end");
  Run("flow create 0 group 1 ingress pattern conntrack is 1 / end actions queue index 1 / end");
  EXPECT_EQ(Send(true, kClientSeq, kServerSeq, 10).fate, sim::Fate::kQueued);
  EXPECT_TRUE(PollQueue(0, 1).has_value());
}

// mlx5 checks no peer port at create (mlx5_validate_action_ct) and reports it on query; only its owner's
// rules reach a CT through testpmd (`indirect ID` looks ids up in the rule's port), so the PMD's peer check
// for rules of another port (flow_aso_ct_get_by_idx) never runs.
TEST_F(ConntrackTest, ThePeerPortIsKeptAndOnlyTheOwnersRulesUseTheAction) {
  Profile(/*is_orig=*/1, /*state=*/1, /*peer=*/9);
  EXPECT_EQ(Run("flow indirect_action 1 create action_id 4 ingress action conntrack / end").indirect_id, 4u);
  EXPECT_THAT(Run("flow indirect_action 1 query 4").text, HasSubstr("Peer: 9, Flow dir: Original"));
  const absl::Status s = Error(
      "flow create 0 group 1 ingress pattern eth / ipv4 / tcp / end actions indirect 4 / jump group 2 / end");
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(s.message()), HasSubstr("indirect: Failed to find indirect action #4 on port 0"));
  Run("flow create 1 group 1 ingress pattern eth / ipv4 / tcp / end actions indirect 4 / jump group 2 / end");
  EXPECT_THAT(std::string(Error("set conntrack com peer 65536 is_orig 1").message()), HasSubstr("peer"));
}

// mlx5 keeps a CT handle's owner port in 4 bits (flow_dv_translate_create_conntrack).
TEST(ConntrackOwnerTest, PortsAbove15OwnNoCt) {
  sim::Nic nic(16);  // ports 0..16
  FlowEngine engine(nic);
  const auto run = [&](const std::string& text) -> absl::StatusOr<CommandResult> {
    DRSIM_ASSIGN_OR_RETURN(Command c, ParseOne(text));
    return engine.Execute(c);
  };
  EXPECT_TRUE(run("flow indirect_action 15 create action conntrack / end").ok());
  const absl::Status s = run("flow indirect_action 16 create action conntrack / end").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      std::string(s.message()),
      HasSubstr("conntrack: CT supports port indexes up to MLX5_ACTION_CTX_CT_MAX_PORT (port 16: mlx5 "
                "creates CT objects on ports 0..15 only"));
}

}  // namespace
}  // namespace drsim::testpmd
