// drctl end to end, in process: rule files and pcaps in, verdict files, per-destination pcaps, totals,
// JSON, traces, dumps and every kind of error out.
#include "tools/drctl.h"

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/frame_builder.h"
#include "sim/pcap_file.h"
#include "tools/drctl_progress.h"

namespace drsim::tools {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir ? dir : "/tmp";
}

std::string Write(const std::string& name, const std::string& text) {
  const std::string path = TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Result {
  int status;
  std::string out, err;
};

Result Invoke(std::vector<std::string> args) {
  std::ostringstream out, err;
  const int status = drsim::tools::Drctl(args, out, err);
  return {status, out.str(), err.str()};
}

sim::FrameSpec Ipv4(const char* src, const char* dst, uint8_t proto, uint16_t dport) {
  sim::FrameSpec s;
  s.ipv4_src = *hw::Ipv4Address::Parse(src);
  s.ipv4_dst = *hw::Ipv4Address::Parse(dst);
  s.protocol = proto;
  s.sport = 1234;
  s.dport = dport;
  return s;
}

constexpr char kRules[] = R"(# NIC_RX on port 0: group 0 jumps to group 1.
flow create 0 ingress pattern end actions jump group 1 / end
flow create 0 ingress group 1 priority 2 pattern eth / ipv4 src is 10.0.0.1 / tcp dst is 80 / end \
    actions mark id 5 / queue index 1 / count / end
flow create 0 ingress group 1 priority 3 pattern eth / ipv4 / udp dst is 53 / end actions queue index 2 / end
flow create 0 ingress group 1 priority 10 pattern end actions drop / end
)";

class DrctlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rules_ = Write("rules.txt", kRules);
    std::vector<std::vector<uint8_t>> frames = {
        sim::BuildFrame(Ipv4("10.0.0.1", "10.0.0.9", sim::kIpProtoTcp, 80)),  // 0: mark 5, queue 1
        sim::BuildFrame(Ipv4("10.0.0.2", "10.0.0.9", sim::kIpProtoTcp, 80)),  // 1: drop
        sim::BuildFrame(Ipv4("10.0.0.3", "10.0.0.9", sim::kIpProtoUdp, 53)),  // 2: queue 2
        sim::BuildFrame(Ipv4("10.0.0.1", "10.0.0.9", sim::kIpProtoTcp, 80)),  // 3: mark 5, queue 1
    };
    frames_ = frames;
    pcap_ = TempDir() + "/in.pcap";
    ASSERT_TRUE(sim::WritePcapFile(pcap_, frames).ok());
  }

  std::string rules_, pcap_;
  std::vector<std::vector<uint8_t>> frames_;
};

TEST_F(DrctlTest, RunWritesVerdictsPcapsAndTotals) {
  const std::string out_dir = TempDir() + "/out/nested", verdicts = TempDir() + "/verdicts.txt";
  Result r = Invoke({"run", rules_, "--pcap", pcap_, "--out", out_dir, "--verdicts=" + verdicts});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(Read(verdicts), "0 queue:0/1 tag=5\n1 drop\n2 queue:0/2\n3 queue:0/1 tag=5\n");
  absl::StatusOr<std::vector<sim::PcapFrame>> q1 = sim::ReadPcapFile(out_dir + "/queue-0-1.pcap");
  ASSERT_TRUE(q1.ok()) << q1.status();
  ASSERT_EQ(q1->size(), 2u);
  EXPECT_EQ((*q1)[0].data, frames_[0]);
  EXPECT_TRUE(sim::ReadPcapFile(out_dir + "/queue-0-2.pcap").ok());
  EXPECT_FALSE(sim::ReadPcapFile(out_dir + "/wire.pcap").ok());  // nothing went there
  EXPECT_THAT(r.out, HasSubstr("4 frames"));
  EXPECT_THAT(r.out, HasSubstr("queue:0/1"));
  EXPECT_THAT(r.out, HasSubstr("port 0 flow 1"));
}

TEST_F(DrctlTest, JsonCountsDestinationsAndRules) {
  Result r = Invoke({"run", rules_, "--pcap", pcap_, "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["frames"], 4);
  EXPECT_EQ(j["destinations"]["queue:0/1"]["frames"], 2);
  EXPECT_EQ(j["destinations"]["queue:0/2"]["frames"], 1);
  EXPECT_EQ(j["destinations"]["drop"]["frames"], 1);
  int flow1_hits = 0;
  for (const auto& rule : j["rules"]) {
    if (rule["rule"].get<std::string>().rfind("port 0 flow 1", 0) == 0) flow1_hits = rule["hits"];
  }
  EXPECT_EQ(flow1_hits, 2);
}

TEST_F(DrctlTest, TraceExplainsOneFrame) {
  Result r = Invoke({"trace", rules_, "--pcap", pcap_, "--frame", "3"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("frame 3"));
  EXPECT_THAT(r.out, HasSubstr("port 0 NIC_RX, table level 1"));
  EXPECT_THAT(r.out, HasSubstr("outer.tcp_dport=0xffff"));
  EXPECT_THAT(r.out,
              HasSubstr("rules.txt:3: flow create 0 ingress group 1 priority 2 pattern eth / ipv4 src is "
                        "10.0.0.1 / tcp dst is 80 / end actions mark id 5 / queue index 1 / count / end\n"));
  EXPECT_THAT(r.out, HasSubstr("      actions: tag 0x5, "));
  EXPECT_THAT(r.out, HasSubstr("-> queue:0/1 tag=5"));
  EXPECT_THAT(r.out, HasSubstr("(unchanged)"));
  EXPECT_EQ(Invoke({"trace", rules_, "--pcap", pcap_, "--frame", "9"}).status, 2);
}

// Aging runs on the capture's clock: rules are made as it begins, each frame moves the NIC's clock to its
// timestamp, --wait runs it on, and --after commands query what the run left.
TEST_F(DrctlTest, AgingAndSharedCountersOverPcapTime) {
  const std::string rules =
      Write("aging.rules", R"(flow create 0 ingress pattern end actions jump group 1 / end
flow indirect_action 0 create action_id 4 ingress action count / end
flow create 0 ingress group 1 pattern eth / ipv4 / tcp dst is 80 / end \
    actions age timeout 5 / count / queue index 0 / end
flow create 0 ingress group 1 pattern eth / ipv4 / tcp dst is 81 / end actions age timeout 5 / queue index 1 / end
flow create 0 ingress group 1 pattern eth / ipv4 / udp dst is 53 / end actions indirect 4 / queue index 2 / end
flow create 0 ingress group 1 pattern eth / ipv4 / udp dst is 54 / end actions indirect 4 / queue index 2 / end
)");
  auto tcp = [](uint16_t port) {
    return sim::BuildFrame(Ipv4("10.0.0.1", "10.0.0.9", sim::kIpProtoTcp, port));
  };
  auto udp = [](uint16_t port) {
    return sim::BuildFrame(Ipv4("10.0.0.1", "10.0.0.9", sim::kIpProtoUdp, port));
  };
  const std::vector<std::vector<uint8_t>> frames = {tcp(80), tcp(81), tcp(80), udp(53),
                                                    tcp(81), udp(54), tcp(81)};
  // Seconds since the epoch, as a real capture's: flow 1 (port 80) last seen at +2 s, then idle 7 s.
  const int64_t t0 = 1'700'000'000'000'000;
  const std::string pcap = TempDir() + "/aging.pcap";
  ASSERT_TRUE(sim::WritePcapFile(pcap, frames,
                                 {t0, t0 + 500'000, t0 + 2'000'000, t0 + 3'000'000, t0 + 6'000'000,
                                  t0 + 7'000'000, t0 + 9'000'000})
                  .ok());
  const std::string after = Write("after.rules", R"(flow aged 0
flow query 0 2 age
flow indirect_action 0 query 4
flow aged 0 destroy
)");
  Result r = Invoke({"run", rules, "--pcap", pcap, "--after", after});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("after the last frame:\n"));
  EXPECT_THAT(r.out, HasSubstr("after.rules:1: flow aged 0\n"
                               "Port 0 total aged flows: 1\n"
                               "Type                \tID\tGroup\tPrio\tAttr\n"
                               "Flow                \t1\t1\t0\ti--\t\n"
                               "\n0 flows destroyed\n"));
  EXPECT_THAT(r.out, HasSubstr("after.rules:2: flow query 0 2 age\n"
                               "AGE:\n aged: 0\n sec_since_last_hit_valid: 1\n sec_since_last_hit: 0\n"));
  EXPECT_THAT(r.out, HasSubstr("Indirect COUNT action:\n hits_set: 1\n bytes_set: 1\n hits: 2\n"));
  EXPECT_THAT(r.out, HasSubstr("after.rules:4: flow aged 0 destroy\nPort 0 total aged flows: 0\n"));

  // Six more seconds and flow 2 ages too; destroy takes it.
  const std::string destroy = Write("destroy.rules", "flow aged 0 destroy\nflow list 0\n");
  r = Invoke({"run", rules, "--pcap", pcap, "--wait", "6", "--after", destroy, "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["after"].size(), 2u);
  EXPECT_EQ(j["after"][0]["command"], "flow aged 0 destroy");
  EXPECT_THAT(j["after"][0]["output"].get<std::string>(),
              HasSubstr("Flow rule #1 destroyed\nFlow                \t2\t1\t0\ti--\t\n"
                        "Flow rule #2 destroyed\n\n2 flows destroyed\n"));
  EXPECT_THAT(j["after"][1]["output"].get<std::string>(), Not(HasSubstr("TCP")));

  // Errors in the --after file are reported like the rule file's.
  const std::string bad = Write("bad.rules", "flow indirect_action 0 query 9\n");
  r = Invoke({"run", rules, "--pcap", pcap, "--after", bad});
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.err, HasSubstr("bad.rules:1:"));
  EXPECT_THAT(r.err, HasSubstr("Failed to find indirect action #9 on port 0"));
  EXPECT_EQ(Invoke({"run", rules, "--pcap", pcap, "--wait", "-1"}).status, 2);
  EXPECT_EQ(Invoke({"validate", rules, "--after", bad}).status, 2);
}

// testpmd/testdata/ovs_ct_offload.rules over a TCP conversation: both directions of the committed
// connection pass through CT, out-of-window segments drop, another connection misses to software, and
// --after queries the context the run left.
TEST_F(DrctlTest, ConntrackVerdictsAndTheContextAfterARun) {
  auto segment = [](bool client, uint32_t seq, uint32_t ack, uint16_t flags, size_t len,
                    uint16_t sport = 40000) {
    sim::FrameSpec s = client ? Ipv4("10.0.0.1", "10.0.0.2", sim::kIpProtoTcp, 80)
                              : Ipv4("10.0.0.2", "10.0.0.1", sim::kIpProtoTcp, 40000);
    s.sport = client ? sport : 80;
    s.seq = seq;
    s.ack = ack;
    s.tcp_flags = flags;
    s.payload_len = len;
    return sim::BuildFrame(s);
  };
  const std::vector<std::vector<uint8_t>> frames = {
      segment(true, 1001, 5001, 0x18, 100),             // data from the client
      segment(false, 5001, 1101, 0x18, 200),            // the server's reply
      segment(true, 1101, 5201, 0x10, 0),               // the client's ack
      segment(true, 1101 + 1'000'000, 5201, 0x18, 10),  // out of the server's window
      segment(true, 7000, 0, 0x02, 0, 40001),           // a new connection's SYN
      segment(true, 1101, 5201, 0x11, 0),               // the client's FIN
  };
  const std::string pcap = TempDir() + "/ct.pcap";
  ASSERT_TRUE(sim::WritePcapFile(pcap, frames, {}).ok());
  const std::string after = Write("ct_after.rules", "flow indirect_action 0 query 0\n");
  Result r = Invoke({"run", "testpmd/testdata/ovs_ct_offload.rules", "--pcap", pcap, "--after", after});
  ASSERT_EQ(r.status, 0) << r.err;
  // Three VALID segments and the FIN (VALID and CHANGED) pass, the out-of-window one drops, the SYN of
  // another connection goes to software.
  EXPECT_THAT(r.out, HasSubstr("  drop                  1 frames"));
  EXPECT_THAT(r.out, HasSubstr("  queue:0/0             4 frames"));
  EXPECT_THAT(r.out, HasSubstr("  queue:0/1             1 frames"));
  EXPECT_THAT(r.out, HasSubstr("  port 0 flow 4                                   3 frames"));
  EXPECT_THAT(r.out, HasSubstr("  port 0 flow 5                                   1 frames"));
  EXPECT_THAT(r.out, HasSubstr("  port 0 flow 6                                   1 frames"));
  EXPECT_THAT(r.out, HasSubstr("ct_after.rules:1: flow indirect_action 0 query 0\nConntrack Context:\n"
                               "  Peer: 0, Flow dir: Reply, Enable: 1\n"));
  EXPECT_THAT(r.out, HasSubstr("Packet dir: Original, Liberal: 0, State: 2\n"));  // FIN_WAIT
  EXPECT_THAT(r.out, HasSubstr("  Original Dir:\n    scale: 0, fin: 1"));
}

TEST_F(DrctlTest, ValidateAndDump) {
  Result ok = Invoke({"validate", rules_});
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_THAT(ok.out,
              HasSubstr(": OK, 4 commands: 4 flows on 4 DR rules in 4 matchers, 2 tables, 1 domain\n"));
  const std::string bad =
      Write("bad.txt",
            "flow create 0 ingress pattern eth / ipv4 src is 10.0.0 / end actions drop / end\n"
            "flow create 0 ingress pattern eth / sctp / end actions drop / end\n");
  Result r = Invoke({"validate", bad});
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.err, HasSubstr("bad.txt:1:"));
  EXPECT_THAT(r.err, HasSubstr("bad.txt:2:"));
  EXPECT_THAT(r.err, HasSubstr("2 error(s)"));
  EXPECT_EQ(Invoke({"run", bad, "--pcap", pcap_}).status, 1);

  Result d = Invoke({"dump", rules_, "--stable-ids"});
  ASSERT_EQ(d.status, 0) << d.err;
  std::vector<std::string> lines = absl::StrSplit(d.out, '\n', absl::SkipEmpty());
  int rules = 0;
  for (const std::string& l : lines) rules += l.rfind("3300,", 0) == 0;
  EXPECT_EQ(rules, 4);
  // Stable ids are the objects' ids (small numbers, the same on every run of the file), not addresses.
  EXPECT_THAT(lines[8], ::testing::MatchesRegex("3100,0x[0-9a-f]{1,4},0x[0-9a-f]+00,0,0"));
  EXPECT_EQ(lines.front().substr(0, 5), "3000,");
}

// The dump shows how a group's ip_version was lowered: mask 0xf in the root table (group 0), as mlx5's PMD
// writes it for the kernel, and 4 in group 1, as rdma-core's STE builders take it. (The mask record's
// outer section is its host-layout struct: ip_version sits at bits 3..6 of byte 18.)
TEST_F(DrctlTest, DumpShowsTheIpVersionMaskOfEachGroup) {
  const std::string rules =
      Write("ip_version.txt",
            "flow create 0 ingress pattern eth / ipv4 / udp dst is 4789 / end actions jump group 1 / end\n"
            "flow create 0 ingress group 1 pattern eth / ipv4 / udp dst is 4789 / end actions queue index 0 "
            "/ end\n");
  Result d = Invoke({"dump", rules, "--stable-ids"});
  ASSERT_EQ(d.status, 0) << d.err;
  std::vector<std::string> outer;  // the outer section of each mask record, in dump order (root first)
  const std::vector<std::string> lines = absl::StrSplit(d.out, '\n', absl::SkipEmpty());
  for (const std::string& l : lines) {
    if (l.rfind("3205,", 0) != 0) continue;
    const std::vector<std::string> fields = absl::StrSplit(l, ',');
    ASSERT_GE(fields.size(), 3u) << l;
    outer.push_back(fields[2]);
  }
  ASSERT_EQ(outer.size(), 2u) << d.out;
  ASSERT_EQ(outer[0].size(), 128u);
  // Bytes 16..19: ip_protocol 0xff, then ip_version.
  EXPECT_EQ(outer[0].substr(32, 8), "ff007800") << d.out;
  EXPECT_EQ(outer[1].substr(32, 8), "ff002000") << d.out;
  // The rest, udp_dport included, is the same.
  EXPECT_EQ(outer[0].substr(0, 32) + outer[0].substr(40), outer[1].substr(0, 32) + outer[1].substr(40));
  EXPECT_NE(outer[0].find("ffff"), std::string::npos);
}

TEST_F(DrctlTest, UsageErrorsAreExit2) {
  EXPECT_EQ(Invoke({}).status, 2);
  EXPECT_EQ(Invoke({"frobnicate", rules_}).status, 2);
  EXPECT_EQ(Invoke({"run", rules_}).status, 2);                     // no --pcap
  EXPECT_EQ(Invoke({"trace", rules_, "--pcap", pcap_}).status, 2);  // no --frame
  EXPECT_EQ(Invoke({"run", rules_, "--pcap", pcap_, "--from", "port:1"}).status, 2);
  EXPECT_EQ(Invoke({"run", rules_, "--pcap", pcap_, "--from", "vport:9"}).status, 2);  // 4 VFs
  EXPECT_EQ(Invoke({"dump", rules_, "--json"}).status, 2);
  EXPECT_EQ(Invoke({"run", TempDir() + "/missing.txt", "--pcap", pcap_}).status, 2);
  EXPECT_EQ(Invoke({"run", rules_, "--pcap", TempDir() + "/missing.pcap"}).status, 2);
  Result help = Invoke({"--help"});
  EXPECT_EQ(help.status, 0);
  EXPECT_THAT(help.out, HasSubstr("drctl run RULES --pcap IN"));
}

TEST_F(DrctlTest, FromAVportThroughTheEswitch) {
  // VF1 sends; a transfer rule sends its frames to the wire, after a VLAN push.
  const std::string rules = Write("fdb.txt",
                                  "flow create 0 transfer pattern represented_port ethdev_port_id is 1 / end "
                                  "actions of_push_vlan ethertype 0x8100 / of_set_vlan_vid vlan_vid 7 / "
                                  "represented_port ethdev_port_id 0 / end\n");
  const std::string out_dir = TempDir() + "/fdb", verdicts = TempDir() + "/fdb.txt.verdicts";
  Result r = Invoke({"run", rules, "--vfs", "2", "--pcap", pcap_, "--from", "vport:1", "--out", out_dir,
                     "--verdicts", verdicts});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(Read(verdicts), "0 wire\n1 wire\n2 wire\n3 wire\n");
  absl::StatusOr<std::vector<sim::PcapFrame>> wire = sim::ReadPcapFile(out_dir + "/wire.pcap");
  ASSERT_TRUE(wire.ok());
  ASSERT_EQ(wire->size(), 4u);
  EXPECT_EQ((*wire)[0].data.size(), frames_[0].size() + 4);
  // Frames from the wire reach the PF's interface (no NIC_RX steering there).
  Result w = Invoke({"run", rules, "--vfs", "2", "--pcap", pcap_, "--verdicts", verdicts});
  ASSERT_EQ(w.status, 0) << w.err;
  EXPECT_EQ(Read(verdicts), "0 vport:0\n1 vport:0\n2 vport:0\n3 vport:0\n");
}

// A streamed file's errors name their lines, and nothing extra reaches stderr when it is not a terminal.
TEST(DrctlStreamTest, ValidateStreamsAndReportsEveryErrorWithItsLine) {
  std::string good;
  for (int i = 0; i < 3000; ++i) {
    good += absl::StrFormat(
        "flow create 0 ingress pattern eth / ipv4 src is 10.0.%d.%d / udp / end actions queue index 1 / "
        "end\n",
        i / 256, i % 256);
  }
  Result r = Invoke({"validate", Write("many.rules", good)});
  EXPECT_EQ(r.status, 0);
  EXPECT_THAT(r.out, ::testing::HasSubstr("OK, 3000 commands: 3000 flows on 3000 DR rules in 1 matcher"));
  EXPECT_EQ(r.err, "");
  const std::string bad = good + "flow create 0 ingress pattern eth / end actions queue index 99 / end\n" +
                          "flow create 0 ingress pattern eth / ipv5 / end actions drop / end\n";
  r = Invoke({"validate", Write("bad.rules", bad)});
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.err, ::testing::HasSubstr("bad.rules:3001:"));
  EXPECT_THAT(r.err, ::testing::HasSubstr("bad.rules:3002:37: error:"));
  EXPECT_THAT(r.err, ::testing::HasSubstr("2 error(s)"));
  // A file that opens but cannot be read (a directory): its read's error, as a file with errors.
  r = Invoke({"validate", TempDir()});
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.err, ::testing::HasSubstr(":1:1: error: reading the file: Is a directory"));
}

TEST(DrctlStreamTest, TheProgressLineWaitsASecondAndOnlyForATerminal) {
  std::ostringstream quiet, fast, slow;
  {
    Progress off(quiet, /*enabled=*/false);
    Progress quick(fast, /*enabled=*/true);
    for (size_t i = 1; i <= 5000; ++i) {
      off.Rules(i);
      quick.Rules(i);
    }
    off.Finish();
    quick.Finish();
  }
  EXPECT_EQ(quiet.str(), "");
  EXPECT_EQ(fast.str(), "");  // well under a second
  Progress late(slow, /*enabled=*/true);
  late.set_total_frames(4096);
  late.Rules(7);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  for (size_t i = 1; i <= 4096; ++i) late.Frames(i);
  late.Finish();
  EXPECT_THAT(slow.str(), ::testing::HasSubstr("\r7 rules installed, "));
  EXPECT_THAT(slow.str(), ::testing::EndsWith("7 rules installed, 4096/4096 frames sent\n"));
}

}  // namespace
}  // namespace drsim::tools
