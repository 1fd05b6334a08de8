// ovs_ct_offload: a stateful firewall as OVS offloads it to a ConnectX NIC through rte_flow (the mlx5 PMD's
// ASO connection tracking), on the software NIC with the testpmd front end.
//
// What it shows:
//  - a new connection misses the NIC and goes to software (queue 1 of port 0, OVS's upcall), which
//    tracks the handshake, commits the connection and programs a CT context with what it learned;
//  - established traffic in both directions then passes in the NIC (queue 0), checked by the CT context,
//    and invalid segments (out of window, bogus acks) are dropped by the NIC;
//  - the FIN exchange moves the context's state; idle, the connection's rules age and software evicts them
//    (`flow aged 0 destroy`), after which a late segment misses to software again.
// The rules are those of testpmd/testdata/ovs_ct_offload.rules, per connection. `--pcap=FILE` writes the
// conversation (a TCP conversation tshark decodes) with its timestamps.
//
// How: each segment goes through sim::Nic::ReceiveFromWire at its time; its queue or drop is the NIC's
// verdict. The program checks every verdict against what a stateful firewall must do and exits 1 on a
// difference.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "examples/demo_support.h"
#include "sim/conntrack.h"
#include "sim/frame_builder.h"
#include "sim/nic.h"
#include "sim/pcap_file.h"
#include "testpmd/engine.h"
#include "testpmd/runner.h"

namespace drsim::examples {
namespace {

constexpr uint64_t kSecond = 1'000'000'000;
constexpr int64_t kEpochUs = 1'700'000'000'000'000;  // the capture's start, as a real capture's

// Where a segment ended.
enum class Where { kSoftware, kNic, kDropped };
const char* WhereName(Where w) { return w == Where::kSoftware ? "software" : w == Where::kNic ? "NIC" : "dropped"; }

struct Segment {
  double t;        // seconds into the capture
  bool client;     // sent by 10.0.0.1:40000 (the original direction)
  uint32_t seq, ack;
  uint16_t flags;  // FIN 0x01, SYN 0x02, ACK 0x10, PSH 0x08
  size_t len;
  Where expected;
  const char* what;
};

class Firewall {
 public:
  // testpmd commands that must succeed.
  testpmd::CommandResult Run(const std::string& text) {
    testpmd::FileReport r = testpmd::RunFile(engine_, "ovs_ct_offload", text);
    if (!r.ok() || r.outcomes.size() != 1) {
      for (const testpmd::Diagnostic& d : r.diagnostics) absl::FPrintF(stderr, "%s\n", d.ToString());
      absl::FPrintF(stderr, "failed: %s\n", text);
      std::exit(1);
    }
    return r.outcomes.front().result;
  }

  // The pipeline before any connection: TCP goes to the CT table, where everything misses to software
  // until a connection is committed; table 2 passes VALID segments that change the state (a FIN) and
  // drops what CT finds invalid.
  void Start() {
    Run("flow create 0 ingress pattern eth / ipv4 / tcp / end actions jump group 1 / end");
    Run("flow create 0 ingress group 1 priority 1 pattern eth / ipv4 / tcp / end actions queue index 1 / end");
    Run("flow create 0 ingress group 2 pattern conntrack is 3 / end actions count / queue index 0 / end");
    Run("flow create 0 ingress group 2 priority 1 pattern conntrack is 4 / end actions count / drop / end");
  }

  // Software's commit once the handshake is through: the CT context from the handshake (no window
  // scaling), the CT rule of each direction, and per direction an aging rule passing VALID packets that
  // leave the state as it is (testpmd's item compares every state bit).
  void Commit(uint32_t client_next, uint32_t server_next, uint16_t client_win, uint16_t server_win) {
    auto common = [&](int is_orig) {
      return absl::StrFormat(
          "set conntrack com peer 0 is_orig %d enable 1 live 1 sack 0 cack 0 last_dir 1 liberal 0 state 1 "
          "max_ack_win 7 r_lim 5 last_win %d last_seq %u last_ack %u last_end %u last_index 8",
          is_orig, client_win, client_next, server_next, client_next);
    };
    Run(common(1));
    Run(absl::StrFormat("set conntrack orig scale 0 fin 0 acked 1 unack_data 0 sent_end %u reply_end %u "
                        "max_win %d max_ack %u",
                        client_next, client_next + server_win, client_win, server_next));
    Run(absl::StrFormat("set conntrack rply scale 0 fin 0 acked 1 unack_data 0 sent_end %u reply_end %u "
                        "max_win %d max_ack %u",
                        server_next, server_next + client_win, server_win, client_next));
    ct_ = *Run("flow indirect_action 0 create ingress action conntrack / end").indirect_id;
    const char* orig = "ipv4 src is 10.0.0.1 dst is 10.0.0.2 / tcp src is 40000 dst is 80";
    const char* reply = "ipv4 src is 10.0.0.2 dst is 10.0.0.1 / tcp src is 80 dst is 40000";
    rules_.push_back(CtRule(orig));
    Run(common(0));
    Run(absl::StrFormat("flow indirect_action 0 update %d action conntrack_update dir / end", ct_));
    rules_.push_back(CtRule(reply));
    for (const char* dir : {orig, reply}) {
      Run(absl::StrFormat("flow create 0 ingress group 2 pattern eth / %s / conntrack is 1 / end "
                          "actions age timeout 10 / count / queue index 0 / end",
                          dir));
    }
  }

  // The state of the committed connection's context.
  sim::CtState State() {
    return Run(absl::StrFormat("flow indirect_action 0 query %d", ct_)).conntrack.value_or(sim::CtContext{}).state;
  }

  // Software evicts what aged: the aged rules go with `flow aged 0 destroy`, then the connection's CT
  // rules and context. Returns how many rules aged.
  size_t Evict() {
    const testpmd::CommandResult aged = Run("flow aged 0 destroy");
    const size_t n = aged.aged ? aged.aged->destroyed.size() : 0;
    if (n == 0) return 0;
    for (uint32_t rule : rules_) Run(absl::StrFormat("flow destroy 0 rule %d", rule));
    rules_.clear();
    Run(absl::StrFormat("flow indirect_action 0 destroy action_id %d", ct_));
    return n;
  }

  void AdvanceTo(double t) { nic_.set_time_ns(static_cast<uint64_t>(t * kSecond)); }

  Where Send(const Segment& s) {
    AdvanceTo(s.t);
    const sim::Verdict v = nic_.ReceiveFromWire(Frame(s));
    if (v.fate != sim::Fate::kQueued) return Where::kDropped;
    return v.qp_num == *engine_.QueueNumber(0, 1) ? Where::kSoftware : Where::kNic;
  }

  static std::vector<uint8_t> Frame(const Segment& s) {
    sim::FrameSpec f;
    f.smac = Mac(s.client ? "02:00:00:00:00:01" : "02:00:00:00:00:02");
    f.dmac = Mac(s.client ? "02:00:00:00:00:02" : "02:00:00:00:00:01");
    f.ipv4_src = Ip(s.client ? "10.0.0.1" : "10.0.0.2");
    f.ipv4_dst = Ip(s.client ? "10.0.0.2" : "10.0.0.1");
    f.protocol = sim::kIpProtoTcp;
    f.sport = s.client ? 40000 : 80;
    f.dport = s.client ? 80 : 40000;
    f.seq = s.seq;
    f.ack = s.ack;
    f.tcp_flags = s.flags;
    f.tcp_window = 65535;
    f.payload_len = s.len;
    return sim::BuildFrame(f);
  }

 private:
  uint32_t CtRule(const char* pattern) {
    return *Run(absl::StrFormat("flow create 0 ingress group 1 pattern eth / %s / end actions indirect %d / "
                                "jump group 2 / end",
                                pattern, ct_))
                .flow_id;
  }

  sim::Nic nic_{0};
  testpmd::FlowEngine engine_{nic_};
  uint32_t ct_ = 0;
  std::vector<uint32_t> rules_;
};

int Main(int argc, char** argv) {
  std::string pcap;
  for (int i = 1; i < argc; ++i) {
    if (absl::StartsWith(argv[i], "--pcap=")) {
      pcap = argv[i] + 7;
    } else {
      absl::FPrintF(stderr, "usage: %s [--pcap=FILE]\n", argv[0]);
      return 2;
    }
  }
  // Client ISN 1000, server ISN 5000.
  const std::vector<Segment> handshake = {
      {0.0, true, 1000, 0, 0x02, 0, Where::kSoftware, "SYN"},
      {0.1, false, 5000, 1001, 0x12, 0, Where::kSoftware, "SYN-ACK"},
      {0.2, true, 1001, 5001, 0x10, 0, Where::kSoftware, "ACK"},
  };
  const std::vector<Segment> offloaded = {
      {0.3, true, 1001, 5001, 0x18, 100, Where::kNic, "request"},
      {0.4, false, 5001, 1101, 0x18, 300, Where::kNic, "response"},
      {0.5, true, 1101, 5301, 0x10, 0, Where::kNic, "ACK"},
      {0.6, true, 1101 + 3'000'000, 5301, 0x18, 50, Where::kDropped, "out-of-window data"},
      {0.7, false, 5301, 1101 + 2'000'000, 0x10, 0, Where::kDropped, "ack of data never sent"},
      {0.8, true, 1101, 5301, 0x11, 0, Where::kNic, "FIN"},
      {0.9, false, 5301, 1102, 0x11, 0, Where::kNic, "FIN"},
      {1.0, true, 1102, 5302, 0x10, 0, Where::kNic, "last ACK"},
  };
  const Segment late = {13.0, true, 1102, 5302, 0x10, 0, Where::kSoftware, "late ACK"};

  Firewall fw;
  fw.Start();
  int differences = 0;
  std::vector<sim::PcapFrame> capture;
  auto send = [&](const Segment& s) {
    const Where w = fw.Send(s);
    capture.push_back({Firewall::Frame(s), 0, kEpochUs + static_cast<int64_t>(s.t * 1e6)});
    absl::PrintF("%5.1f s  %-6s %-24s -> %s\n", s.t, s.client ? "client" : "server", s.what, WhereName(w));
    if (w != s.expected) {
      absl::PrintF("         expected %s\n", WhereName(s.expected));
      ++differences;
    }
    return w;
  };
  for (const Segment& s : handshake) send(s);
  fw.Commit(1001, 5001, 65535, 65535);
  absl::PrintF("software committed 10.0.0.1:40000 <-> 10.0.0.2:80 after 3 handshake segments\n");
  int in_nic[2] = {0, 0}, dropped = 0;
  for (const Segment& s : offloaded) {
    const Where w = send(s);
    if (w == Where::kNic) ++in_nic[s.client ? 0 : 1];
    if (w == Where::kDropped) ++dropped;
  }
  const sim::CtState state = fw.State();
  absl::PrintF("established: %d client and %d server segments passed in the NIC; %d invalid dropped\n",
               in_nic[0], in_nic[1], dropped);
  absl::PrintF("context after the FINs: %s\n", sim::CtStateName(state));
  if (state != sim::CtState::kTimeWait) ++differences;
  // Idle past the 10 s timeout (11 whole seconds): the connection's two aging rules are reported and evicted, and a late
  // segment misses to software again.
  fw.AdvanceTo(12.5);
  const size_t evicted = fw.Evict();
  absl::PrintF("idle for 11.5 s: %d rules aged and were evicted with the connection's CT context\n", evicted);
  if (evicted != 2) ++differences;
  send(late);
  if (!pcap.empty()) {
    const absl::Status written = sim::WritePcapFile(pcap, capture);
    if (!written.ok()) {
      absl::FPrintF(stderr, "%s: %s\n", pcap, written.ToString());
      return 1;
    }
    absl::PrintF("%d frames written to %s\n", capture.size(), pcap);
  }
  absl::PrintF("%d outcome(s) differ from a stateful firewall's\n", differences);
  return differences == 0 ? 0 : 1;
}

}  // namespace
}  // namespace drsim::examples

int main(int argc, char** argv) { return drsim::examples::Main(argc, argv); }
