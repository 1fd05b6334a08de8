// The whole-file runner on the example rule files of testpmd/testdata: the good ones (OVN's GENEVE tunnel
// key among them) run and steer frames as their comments say; errors.rules reports every mistake (compared with errors.expected) and installs
// nothing.
//
// To regenerate errors.expected after a deliberate change, run the test binary from the workspace root:
//   bazel build //testpmd:runner_test && DRSIM_UPDATE_GOLDENS=1 bazel-bin/testpmd/runner_test
#include "testpmd/runner.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/frame_builder.h"
#include "testpmd/engine_test_util.h"

namespace drsim::testpmd {
namespace {

using ::testing::HasSubstr;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// An OVN-style frame from the wire: VNI 5 with `options`, carrying an IPv4/UDP packet.
std::vector<uint8_t> Geneve(std::vector<sim::GeneveOption> options) {
  sim::TunnelFrameSpec t;
  t.outer.protocol = sim::kIpProtoUdp;
  t.tunnel.kind = sim::Encap::kGeneve;
  t.tunnel.vni = 5;
  t.tunnel.geneve_options = std::move(options);
  t.inner.protocol = sim::kIpProtoUdp;
  return sim::BuildFrame(t);
}

// OVN's tunnel key option carrying `key`.
sim::GeneveOption OvnKey(uint32_t key) { return {0x0102, 0x80, {key}}; }

std::string Diagnostics(const FileReport& report) {
  std::vector<std::string> lines;
  for (const Diagnostic& d : report.diagnostics) lines.push_back(d.ToString());
  return absl::StrJoin(lines, "\n");
}

TEST_F(EngineTest, NicRxFile) {
  FileReport r = RunFile(engine_, "nic_rx.rules", ReadFile("testpmd/testdata/nic_rx.rules"));
  ASSERT_TRUE(r.ok()) << Diagnostics(r);
  ASSERT_EQ(r.outcomes.size(), 6u);
  EXPECT_EQ(r.outcomes[1].result.text, "Flow rule #1 created\n");
  EXPECT_EQ(r.outcomes[1].pos.line, 6);  // a continued command starts on its first line
  EXPECT_THAT(r.outcomes[5].result.text, HasSubstr("1\t1\t2\ti--\tETH IPV4 TCP => MARK QUEUE COUNT\n"));

  sim::Verdict v = nic_.ReceiveFromWire(Tcp("10.0.0.1", "10.0.0.9", 5, 80));
  EXPECT_EQ(v.qp_num, Qp(0, 1));
  EXPECT_EQ(v.flow_tag, 5u);
  v = nic_.ReceiveFromWire(Udp("10.3.0.1", "10.0.0.9", 5, 53));
  EXPECT_GE(v.qp_num, Qp(0, 4));
  EXPECT_LE(v.qp_num, Qp(0, 7));
  sim::FrameSpec v6 = Ipv4("1.1.1.1", "2.2.2.2", sim::kIpProtoUdp, 1, 2);
  v6.l3 = sim::L3Kind::kIpv6;
  v6.ipv6_src = *hw::Ipv6Address::Parse("2001:db8:1::5");
  v6.ipv6_dst = *hw::Ipv6Address::Parse("2001:db9::1");
  v = nic_.ReceiveFromWire(sim::BuildFrame(v6));
  EXPECT_EQ(v.qp_num, Qp(0, 2));
  EXPECT_EQ(v.flow_tag, 0xffffffu);  // flag
  EXPECT_EQ(nic_.ReceiveFromWire(Tcp("10.0.0.1", "10.0.0.9", 5, 81)).fate, sim::Fate::kDropped);
}

TEST_F(EngineTest, VxlanOverlayFile) {
  FileReport r = RunFile(engine_, "vxlan_overlay.rules", ReadFile("testpmd/testdata/vxlan_overlay.rules"));
  ASSERT_TRUE(r.ok()) << Diagnostics(r);
  const sim::FrameSpec inner = Ipv4("10.1.0.20", "10.1.0.10", sim::kIpProtoTcp, 40000, 80);
  sim::Verdict v = nic_.ReceiveFromWire(Vxlan(100, inner));
  EXPECT_EQ(v.qp_num, Qp(1, 0));
  EXPECT_EQ(v.flow_tag, 0x100u);
  EXPECT_EQ(PollQueue(1, 0)->frame, sim::BuildFrame(inner));
  v = nic_.ReceiveFromWire(Vxlan(200, inner));
  EXPECT_EQ(v.fate, sim::Fate::kQueued);
  EXPECT_EQ(engine_.QueueOf(v.qp_num)->port, 2);
  // VF2's traffic leaves tagged, with DSCP EF.
  const std::vector<uint8_t> out = Tcp("10.2.0.10", "10.2.0.20", 443, 50000);
  EXPECT_EQ(nic_.function(2)->Send(out).fate, sim::Fate::kWire);
  std::vector<uint8_t> wire = *nic_.PollWire();
  ASSERT_EQ(wire.size(), out.size() + 4);
  EXPECT_EQ(wire[14] << 8 | wire[15], 20);
  EXPECT_EQ(wire[19] >> 2, 46);
  // VF1's leaves in VXLAN 100.
  EXPECT_EQ(nic_.function(1)->Send(out).fate, sim::Fate::kWire);
  wire = *nic_.PollWire();
  EXPECT_EQ(wire.size(), out.size() + 50);
}

TEST_F(EngineTest, OvnGeneveFileSteersByTheTunnelKeyAnywhereAmongTheOptions) {
  FileReport r = RunFile(engine_, "ovn_geneve.rules", ReadFile("testpmd/testdata/ovn_geneve.rules"));
  ASSERT_TRUE(r.ok()) << Diagnostics(r);
  const sim::GeneveOption other_class{0xffff, 0x80, {0x00010002}}, other{0x0103, 0x01, {1, 2, 3}};
  struct Case {
    std::vector<sim::GeneveOption> options;
    int port;  // 0: not steered to a VF
  } cases[] = {
      {{OvnKey(0x00010002)}, 1},
      {{other, OvnKey(0x00010003)}, 2},
      {{other_class, other, OvnKey(0x00010002)}, 1},  // the key third
      {{other_class}, 0},                             // the key's data in another class
      {{OvnKey(0x00010004)}, 0},                      // another logical port
      {{}, 0},
  };
  for (const Case& c : cases) {
    sim::Verdict v = nic_.ReceiveFromWire(Geneve(c.options));
    if (c.port == 0) {
      EXPECT_NE(v.fate, sim::Fate::kQueued) << c.options.size();
    } else {
      EXPECT_EQ(v.qp_num, Qp(c.port, 0)) << c.options.size();
    }
  }
  // The first geneve-opt flow made the device's option object.
  absl::StatusOr<sim::GeneveTlvOption> option = nic_.QueryGeneveTlvOption(1);
  ASSERT_TRUE(option.ok()) << option.status();
  EXPECT_EQ(option->option_class, 0x0102);
  EXPECT_EQ(option->type, 0x80);
  EXPECT_EQ(option->data_len, 1);
  // flow list shows the item.
  CommandResult list = Run("flow list 0");
  ASSERT_EQ(list.flows.size(), 2u);
  EXPECT_THAT(list.flows[0].items, ::testing::Contains("GENEVE_OPT"));
}

TEST_F(EngineTest, MetersAndSampleFile) {
  FileReport r = RunFile(engine_, "meters_sample.rules", ReadFile("testpmd/testdata/meters_sample.rules"));
  ASSERT_TRUE(r.ok()) << Diagnostics(r);
  int green = 0, yellow = 0, red = 0;
  for (int i = 0; i < 40; ++i) {
    sim::Verdict v = nic_.ReceiveFromWire(Udp("10.7.0.1", "10.7.0.2", 1, 2));
    green += v.qp_num == Qp(0, 0);
    yellow += v.qp_num == Qp(0, 1);
    red += v.fate == sim::Fate::kDropped;
  }
  EXPECT_EQ(green, 10);
  EXPECT_EQ(yellow, 10);
  EXPECT_EQ(red, 20);
}

TEST_F(EngineTest, ErrorsFileReportsEveryMistakeAndInstallsNothing) {
  const std::string text = ReadFile("testpmd/testdata/errors.rules");
  FileReport r = RunFile(engine_, "errors.rules", text);
  EXPECT_TRUE(r.outcomes.empty());
  EXPECT_EQ(engine_.counts().rules, 0);
  EXPECT_EQ(engine_.counts().tables, 0);
  EXPECT_TRUE(engine_.history().empty());
  const std::string got = Diagnostics(r) + "\n";
  const std::string golden = "testpmd/testdata/errors.expected";
  if (std::getenv("DRSIM_UPDATE_GOLDENS") != nullptr) {
    std::ofstream(golden) << got;
    GTEST_SKIP() << "wrote " << golden;
  }
  EXPECT_EQ(got, ReadFile(golden));
}

TEST_F(EngineTest, CheckJudgesAFileInTheEnginesState) {
  Run("set raw_encap 7 eth / ipv4 / udp dst is 4789 / vxlan vni is 1 / end_set");
  Run("flow create 0 ingress pattern eth / end actions drop / end");
  Run("flow create 0 ingress pattern eth / ipv4 / end actions queue index 1 / end");
  const EngineCounts before = engine_.counts();
  // Uses the engine's raw_encap 7 and its flow ids: flow 1 exists; once it is gone the next id is 1 again.
  const std::string file =
      "flow destroy 0 rule 1\n"
      "flow create 0 transfer pattern represented_port ethdev_port_id is 1 / end actions raw_encap index 7 / "
      "represented_port ethdev_port_id 0 / end\n"
      "flow query 0 1 count\n";
  FileReport check = CheckFile(engine_, "f", file);
  ASSERT_EQ(check.diagnostics.size(), 1u) << Diagnostics(check);
  EXPECT_EQ(check.diagnostics[0].ToString(), "f:3:16: error: flow rule #1 has no count action to query");
  EXPECT_EQ(engine_.counts().rules, before.rules);  // the check changed nothing
  EXPECT_EQ(engine_.counts().flows, 2);
}

}  // namespace
}  // namespace drsim::testpmd
