// FlowEngine: rules built from testpmd commands, checked with real frames through the software NIC —
// steering to queues and marks, groups and jumps, shared matchers, RSS, list/destroy/flush/query, errors.
#include "testpmd/engine.h"

#include <infiniband/verbs.h>

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/rx_queue.h"
#include "sim/toeplitz.h"
#include "testpmd/engine_test_util.h"
#include "testpmd/rss.h"

namespace drsim::testpmd {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST_F(EngineTest, BriefExampleQueueAndMark) {
  Run("flow create 0 ingress pattern end actions jump group 1 / end");
  CommandResult r =
      Run("flow create 0 ingress group 1 priority 2 pattern eth / ipv4 src is 10.0.0.1 dst spec 10.0.0.0 dst "
          "mask "
          "255.255.255.0 / tcp dst is 80 / end actions mark id 5 / queue index 1 / end");
  EXPECT_EQ(r.flow_id, 1u);
  EXPECT_EQ(r.text, "Flow rule #1 created\n");

  sim::Verdict v = nic_.ReceiveFromWire(Tcp("10.0.0.1", "10.0.0.77", 1234, 80));
  EXPECT_EQ(v.fate, sim::Fate::kQueued);
  EXPECT_EQ(v.qp_num, Qp(0, 1));
  EXPECT_TRUE(v.has_flow_tag);
  EXPECT_EQ(v.flow_tag, 5u);
  std::optional<sim::RxCompletion> c = PollQueue(0, 1);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->flow_tag, 5u);
  EXPECT_EQ(engine_.QueueOf(v.qp_num)->index, 1);
  // The path: root (flow 0) then group 1 (flow 1).
  ASSERT_EQ(v.path.size(), 2u);
  EXPECT_EQ(engine_.DescribeRule(v.path[0].rule_id), "port 0 flow 0");
  EXPECT_EQ(engine_.DescribeRule(v.path[1].rule_id), "port 0 flow 1");
  EXPECT_EQ(v.path[1].table_level, 1u);

  // Outside the /24, another port, or another source: group 1 misses and NIC_RX drops.
  EXPECT_EQ(nic_.ReceiveFromWire(Tcp("10.0.0.1", "10.0.1.77", 1234, 80)).fate, sim::Fate::kDomainDefault);
  EXPECT_EQ(nic_.ReceiveFromWire(Tcp("10.0.0.1", "10.0.0.77", 1234, 81)).fate, sim::Fate::kDomainDefault);
  EXPECT_EQ(nic_.ReceiveFromWire(Tcp("10.0.0.2", "10.0.0.77", 1234, 80)).fate, sim::Fate::kDomainDefault);
}

// Group 0 is the root table: ip_version is matched under a 0xf mask there, as mlx5's PMD lowers it, and the
// rules steer by the L3 type the pattern says; an IPv4 ethertype in the eth item means the same.
TEST_F(EngineTest, RootGroupMatchesIpVersionAsThePmdLowersIt) {
  Run("flow create 0 ingress priority 0 pattern eth / ipv4 / udp dst is 4789 / end actions queue index 1 / "
      "end");
  Run("flow create 0 ingress priority 1 pattern eth / ipv6 / udp dst is 4789 / end actions queue index 2 / "
      "end");
  Run("flow create 0 ingress priority 2 pattern eth type is 0x0800 / end actions queue index 3 / end");
  sim::FrameSpec v6 = Ipv4("10.0.0.1", "10.0.0.2", sim::kIpProtoUdp, 1234, 4789);
  v6.l3 = sim::L3Kind::kIpv6;
  v6.ipv6_src = *hw::Ipv6Address::Parse("fd00::1");
  v6.ipv6_dst = *hw::Ipv6Address::Parse("fd00::2");
  sim::Verdict v = nic_.ReceiveFromWire(Udp("10.0.0.1", "10.0.0.2", 1234, 4789));
  EXPECT_EQ(v.fate, sim::Fate::kQueued);
  EXPECT_EQ(engine_.QueueOf(v.qp_num)->index, 1);
  v = nic_.ReceiveFromWire(sim::BuildFrame(v6));
  EXPECT_EQ(v.fate, sim::Fate::kQueued);
  EXPECT_EQ(engine_.QueueOf(v.qp_num)->index, 2);
  v = nic_.ReceiveFromWire(Tcp("10.0.0.1", "10.0.0.2", 1234, 4789));  // IPv4, not UDP 4789
  EXPECT_EQ(v.fate, sim::Fate::kQueued);
  EXPECT_EQ(engine_.QueueOf(v.qp_num)->index, 3);
  v6.protocol = sim::kIpProtoTcp;  // IPv6, not UDP: no rule
  EXPECT_EQ(nic_.ReceiveFromWire(sim::BuildFrame(v6)).fate, sim::Fate::kDomainDefault);
}

TEST_F(EngineTest, MatchersAreSharedPerGroupPriorityAndMask) {
  Run("flow create 0 ingress group 1 pattern eth / ipv4 / tcp dst is 80 / end actions queue index 0 / end");
  const EngineCounts one = engine_.counts();
  Run("flow create 0 ingress group 1 pattern eth / ipv4 / tcp dst is 443 / end actions queue index 1 / end");
  EXPECT_EQ(engine_.counts().matchers, one.matchers);  // same mask, same priority: one matcher
  EXPECT_EQ(engine_.counts().rules, one.rules + 1);
  Run("flow create 0 ingress group 1 priority 1 pattern eth / ipv4 / tcp dst is 22 / end actions drop / end");
  EXPECT_EQ(engine_.counts().matchers, one.matchers + 1);  // another priority
  Run("flow create 0 ingress group 1 pattern eth / ipv4 / udp dst is 53 / end actions drop / end");
  EXPECT_EQ(engine_.counts().matchers, one.matchers + 2);  // another mask (protocol 17)
  Run("flow create 0 ingress group 2 pattern eth / ipv4 / tcp dst is 80 / end actions drop / end");
  EXPECT_EQ(engine_.counts().matchers, one.matchers + 3);  // another table
  EXPECT_EQ(engine_.counts().tables, 2);

  Run("flow create 0 ingress pattern end actions jump group 1 / end");
  EXPECT_EQ(nic_.ReceiveFromWire(Tcp("1.1.1.1", "2.2.2.2", 1, 443)).qp_num, Qp(0, 1));
  EXPECT_EQ(nic_.ReceiveFromWire(Tcp("1.1.1.1", "2.2.2.2", 1, 80)).qp_num, Qp(0, 0));
  EXPECT_EQ(nic_.ReceiveFromWire(Tcp("1.1.1.1", "2.2.2.2", 1, 22)).fate, sim::Fate::kDropped);
}

TEST_F(EngineTest, ListDestroyFlushAndQueryCount) {
  Run("flow create 0 ingress pattern eth / ipv4 / end actions queue index 6 / count / end");
  Run("flow create 0 ingress pattern eth / ipv6 / end actions queue index 2 / end");
  Run("flow create 0 priority 5 ingress pattern eth / ipv4 / udp / end actions rss queues 6 7 end / end");
  Run("flow create 0 ingress group 3 pattern eth / end actions drop / end");
  EXPECT_EQ(Run("flow list 0").text,
            "ID\tGroup\tPrio\tAttr\tRule\n"
            "0\t0\t0\ti--\tETH IPV4 => QUEUE COUNT\n"
            "1\t0\t0\ti--\tETH IPV6 => QUEUE\n"
            "2\t0\t5\ti--\tETH IPV4 UDP => RSS\n"
            "3\t3\t0\ti--\tETH => DROP\n");
  EXPECT_THAT(Run("flow list 0 group 3").flows, ElementsAre(testing::Field(&FlowInfo::id, 3u)));
  EXPECT_EQ(Run("flow list 1").text, "");

  for (int i = 0; i < 3; ++i) nic_.ReceiveFromWire(Tcp("1.1.1.1", "2.2.2.2", 1, 2));
  const std::vector<uint8_t> frame = Tcp("1.1.1.1", "2.2.2.2", 1, 2);
  CommandResult q = Run("flow query 0 0 count");
  ASSERT_TRUE(q.count.has_value());
  EXPECT_EQ(q.count->hits, 3u);
  EXPECT_EQ(q.count->bytes, 3 * frame.size());
  EXPECT_EQ(q.text,
            absl::StrFormat("COUNT:\n hits_set: 1\n bytes_set: 1\n hits: 3\n bytes: %d\n", 3 * frame.size()));
  absl::StatusOr<CommandResult> missing = Try("flow query 0 9 count");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "Flow rule #9 not found");
  EXPECT_THAT(Try("flow query 0 1 count").status().message(), HasSubstr("no count action"));

  // testpmd walks its flows newest first, and ignores ids it does not have.
  CommandResult d = Run("flow destroy 0 rule 0 rule 1 rule 42");
  EXPECT_THAT(d.destroyed, ElementsAre(1, 0));
  EXPECT_EQ(d.text, "Flow rule #1 destroyed\nFlow rule #0 destroyed\n");
  // The next id is the newest flow's + 1.
  EXPECT_EQ(Run("flow create 0 ingress pattern eth / end actions drop / end").flow_id, 4u);
  Run("flow flush 0");
  EXPECT_EQ(Run("flow list 0").text, "");
  const EngineCounts after = engine_.counts();
  EXPECT_EQ(after.flows, 0);
  EXPECT_EQ(after.rules, 0);
  EXPECT_EQ(after.matchers, 0);
  EXPECT_EQ(after.tables, 0);
  EXPECT_EQ(after.domains, 0);
  EXPECT_EQ(Run("flow create 0 ingress pattern eth / end actions drop / end").flow_id, 0u);
}

TEST_F(EngineTest, ValidateInstallsNothing) {
  CommandResult r = Run("flow validate 0 ingress pattern eth / ipv4 / end actions queue index 6 / end");
  EXPECT_EQ(r.text, "Flow rule validated\n");
  EXPECT_EQ(engine_.counts().rules, 0);
  EXPECT_EQ(engine_.counts().tables, 0);
  EXPECT_TRUE(engine_.history().empty());
  EXPECT_FALSE(Try("flow validate 0 ingress pattern eth / end actions queue index 99 / end").ok());
}

TEST_F(EngineTest, RssSpreadsByToeplitzAndExpandsByProtocol) {
  Run("flow create 0 ingress pattern eth / ipv4 / end actions rss types ipv4-tcp end queues 0 1 2 3 end / "
      "end");
  std::set<uint32_t> used;
  for (uint16_t sport = 1000; sport < 1032; ++sport) {
    sim::Verdict v = nic_.ReceiveFromWire(Tcp("10.1.0.1", "10.2.0.2", sport, 80));
    ASSERT_EQ(v.fate, sim::Fate::kQueued);
    sim::RssHeaderFields f;
    f.ipv4_src = Ip("10.1.0.1");
    f.ipv4_dst = Ip("10.2.0.2");
    f.ip_protocol = 6;
    f.sport = sport;
    f.dport = 80;
    const uint64_t fields =
        IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 | IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP;
    const uint32_t hash = *sim::RssHash(f, fields, Mlx5DefaultRssKey());
    EXPECT_EQ(v.qp_num, Qp(0, hash & 3)) << sport;
    used.insert(v.qp_num);
  }
  EXPECT_GT(used.size(), 1u);
  // UDP is not asked for: mlx5's expansion leaves it unhashed, the first queue.
  for (uint16_t sport = 1000; sport < 1010; ++sport) {
    EXPECT_EQ(nic_.ReceiveFromWire(Udp("10.1.0.1", "10.2.0.2", sport, 80)).qp_num, Qp(0, 0));
  }
  // The dispatch rules belong to the flow.
  sim::Verdict v = nic_.ReceiveFromWire(Tcp("10.1.0.1", "10.2.0.2", 1, 80));
  ASSERT_EQ(v.path.size(), 2u);
  EXPECT_EQ(engine_.DescribeRule(v.path[1].rule_id), "port 0 flow 0 rss dispatch");
  Run("flow destroy 0 rule 0");
  EXPECT_EQ(engine_.counts().tables, 0);
}

TEST_F(EngineTest, InnerRssSpreadsOneTunnelByTheInnerFlows) {
  Run("flow create 0 ingress pattern eth / ipv4 / udp / vxlan / eth / ipv4 / end actions rss level 2 types "
      "ipv4-tcp end queues 0 1 2 3 end / end");
  const uint64_t fields = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 | IBV_RX_HASH_SRC_PORT_TCP |
                          IBV_RX_HASH_DST_PORT_TCP | IBV_RX_HASH_INNER;
  std::set<uint32_t> used;
  for (uint16_t sport = 1000; sport < 1032; ++sport) {
    // Every frame has the same outer headers: only the inner TCP flow tells them apart.
    sim::Verdict v =
        nic_.ReceiveFromWire(Vxlan(100, Ipv4("10.1.0.1", "10.2.0.2", sim::kIpProtoTcp, sport, 80)));
    ASSERT_EQ(v.fate, sim::Fate::kQueued);
    sim::RssHeaderFields f;
    f.ipv4_src = Ip("10.1.0.1");
    f.ipv4_dst = Ip("10.2.0.2");
    f.ip_protocol = 6;
    f.sport = sport;
    f.dport = 80;
    EXPECT_EQ(v.qp_num, Qp(0, *sim::RssHash(f, fields, Mlx5DefaultRssKey()) & 3)) << sport;
    used.insert(v.qp_num);
  }
  EXPECT_GT(used.size(), 1u);
  // Inner UDP is not asked for: the dispatch, on the inner protocol, leaves it unhashed.
  EXPECT_EQ(nic_.ReceiveFromWire(Vxlan(100, Ipv4("10.1.0.1", "10.2.0.2", sim::kIpProtoUdp, 7, 80))).qp_num,
            Qp(0, 0));
  absl::StatusOr<CommandResult> r =
      Try("flow create 0 ingress pattern eth / ipv4 / udp / end actions rss level 2 / end");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("no tunnel item"));
}

TEST_F(EngineTest, TheEswitchManagerIdsMatchWhatThePfSends) {
  // mlx5's MLX5_REPRESENTED_PORT_ESW_MGR: the source is the PF function itself, not the uplink port 0 names.
  Run("flow create 0 transfer pattern represented_port ethdev_port_id is 65535 / end actions "
      "represented_port ethdev_port_id 1 / end");
  Run("flow create 1 ingress pattern end actions queue index 2 / end");
  EXPECT_EQ(nic_.pf().Send(Tcp("10.0.0.1", "10.0.0.2", 1, 2)).qp_num, Qp(1, 2));
  const sim::Verdict from_wire = nic_.ReceiveFromWire(Tcp("10.0.0.1", "10.0.0.2", 1, 2));
  EXPECT_EQ(from_wire.fate, sim::Fate::kPort);  // not the PF's: the FDB default, the eSwitch manager
  EXPECT_EQ(from_wire.vport, 0);
  Run("flow create 0 transfer pattern port_id id is 0xffffffff / eth / ipv4 / end actions drop / end");
  EXPECT_FALSE(
      Try("flow create 0 transfer pattern eth / end actions represented_port ethdev_port_id 65535 / end")
          .ok());  // a source only, as in mlx5
}

TEST_F(EngineTest, TransferRulesUseTheFdbDefaultRuleAndVports) {
  // Group 0 of the FDB is level 1 behind mlx5's fdb_def_rule, so dest_vport works there.
  Run("flow create 0 transfer pattern represented_port ethdev_port_id is 0 / eth / ipv4 dst is 10.0.0.2 / "
      "end "
      "actions represented_port ethdev_port_id 2 / end");
  sim::Verdict v = nic_.ReceiveFromWire(Tcp("10.0.0.1", "10.0.0.2", 1, 2));
  EXPECT_EQ(v.fate, sim::Fate::kPort);  // VF2 has no NIC_RX steering: its own interface takes it
  EXPECT_EQ(v.vport, 2);
  ASSERT_EQ(v.path.size(), 2u);
  EXPECT_THAT(engine_.DescribeRule(v.path[0].rule_id), HasSubstr("fdb_def_rule"));
  EXPECT_EQ(engine_.DescribeRule(v.path[1].rule_id), "port 0 flow 0");
  // With an ingress rule on port 2, its queue.
  Run("flow create 2 ingress pattern end actions queue index 3 / end");
  v = nic_.ReceiveFromWire(Tcp("10.0.0.1", "10.0.0.2", 1, 2));
  EXPECT_EQ(v.fate, sim::Fate::kQueued);
  EXPECT_EQ(v.qp_num, Qp(2, 3));
  EXPECT_EQ(engine_.QueueOf(v.qp_num)->port, 2);
  EXPECT_EQ(engine_.QueueOf(v.qp_num)->index, 3);

  // VF1 to the wire, by port_id.
  Run("flow create 0 transfer pattern port_id id is 1 / end actions port_id id 0 / end");
  v = nic_.function(1)->Send(Udp("10.9.0.1", "10.9.0.2", 7, 8));
  EXPECT_EQ(v.fate, sim::Fate::kWire);
}

TEST_F(EngineTest, RootFdbWithoutTheDefaultRule) {
  sim::Nic nic(1);
  EngineOptions options;
  options.fdb_default_rule = false;
  FlowEngine engine(nic, options);
  absl::StatusOr<Command> c =
      ParseOne("flow create 0 transfer pattern eth / end actions represented_port ethdev_port_id 1 / end");
  absl::StatusOr<CommandResult> r = engine.Execute(*c);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(r.status().message(), HasSubstr("represented_port: DR rejects the rule"));
  EXPECT_THAT(r.status().message(), HasSubstr("not supported on root (level 0) tables"));
  EXPECT_EQ(PosOf(r.status())->column, 50);
}

TEST_F(EngineTest, SemanticErrorsNameTheCulprit) {
  struct Case {
    const char* command;
    const char* message;
    const char* culprit;  // the error's column is where this text starts
  } cases[] = {
      {"flow create 0 egress pattern eth / end actions queue index 1 / end",
       "queue: delivers to receive queues", "queue"},
      {"flow create 0 transfer pattern eth / end actions mark id 1 / end",
       "mark: DR's tag action exists only in ingress", "mark"},
      {"flow create 0 ingress pattern eth / end actions queue index 16 / end",
       "queue index 16 is out of range: port 0 has 16 Rx queues", "queue"},
      {"flow create 0 ingress pattern eth / end actions mark id 1 / end", "no fate action", "actions"},
      {"flow create 0 ingress pattern eth / end actions drop / queue index 1 / end",
       "a flow takes one fate action, and 'drop' at 1:49 is one already", "queue"},
      {"flow create 0 ingress pattern eth / end actions raw_encap index 5 / drop / end",
       "raw_encap: buffer 5 is empty", "raw_encap"},
      {"flow create 0 ingress pattern eth / end actions meter mtr_id 7 / drop / end", "no meter 7 on port 0",
       "meter"},
      {"flow create 0 ingress pattern port_id id is 1 / end actions drop / end", "only transfer rules",
       "port_id"},
      {"flow create 9 ingress pattern end actions drop / end", "no port 9", "9"},
      {"flow create 3 ingress pattern end actions drop / end",
       "no port 3: the NIC has ports 0..2 (0 the PF, N VF N)", "3"},
      {"flow create 0 pattern end actions drop / end", "expected ingress, egress or transfer", "pattern"},
      {"flow create 0 ingress priority 70000 pattern end actions drop / end", "priority 70000 is above 65535",
       "priority"},
      {"flow create 0 ingress pattern end actions jump group 0 / end", "is a root (level 0) table", "jump"},
      // DR's state machine, tied back to the testpmd action: no drop after a header rewrite (NIC_TX).
      {"flow create 1 egress group 1 pattern eth / end actions set_mac_src mac_addr 02:00:00:00:00:09 / drop "
       "/ end",
       "drop: DR rejects the rule: action[1] (drop) cannot follow action[0] (modify_header)", "drop"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<CommandResult> r = Try(c.command);
    ASSERT_FALSE(r.ok()) << c.command;
    EXPECT_THAT(r.status().message(), HasSubstr(c.message)) << c.command;
    const std::string command = c.command;
    const size_t at = command.find(absl::StrCat(" ", c.culprit, " ")) + 2;
    EXPECT_EQ(ErrorColumn(r.status()), static_cast<int>(at)) << c.command << "\n  " << r.status();
  }
  EXPECT_EQ(engine_.counts().rules, 0);  // failed commands leave nothing behind
  EXPECT_EQ(engine_.counts().tables, 0);
}

}  // namespace
}  // namespace drsim::testpmd
