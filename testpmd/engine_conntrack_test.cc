// FlowEngine: testpmd's conntrack (set conntrack, indirect conntrack actions, the conntrack item) as the
// mlx5 PMD maps it, with a TCP conversation through the NIC and every refusal mlx5 makes.
#include <string>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/conntrack.h"
#include "testpmd/engine.h"
#include "testpmd/engine_test_util.h"

namespace drsim::testpmd {
namespace {

using ::testing::HasSubstr;

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
  void Profile(int is_orig, int state = 1) {
    Run(absl::StrFormat("set conntrack com peer 0 is_orig %d enable 1 live 1 sack 0 cack 0 last_dir 0 "
                        "liberal 0 state %d max_ack_win 7 r_lim 5 last_win 0 last_seq 0 last_ack 0 "
                        "last_end 0 last_index 0",
                        is_orig, state));
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
  expect("flow create 0 group 2 ingress pattern conntrack is 5 / end actions drop / end", "VALID");
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

TEST_F(ConntrackTest, TheItemTakesSpecAndMask) {
  Firewall();
  // spec 3 under mask 1: VALID whether or not the state changed. A rule of a higher priority takes it from
  // the firewall's.
  Run("flow create 0 group 2 priority 0 ingress pattern conntrack spec 3 mask 1 / end actions queue index 1 / "
      "end");
  Run("flow destroy 0 rule 3 rule 4");
  EXPECT_EQ(Send(true, kClientSeq, kServerSeq, 0, 0x11).fate, sim::Fate::kQueued);
  EXPECT_TRUE(PollQueue(0, 1).has_value());
  EXPECT_FALSE(PollQueue(0, 0).has_value());
}

}  // namespace
}  // namespace drsim::testpmd
