// Test helpers for the engine tests: a NIC with two VFs (ports 0..2; in transfer rules port 0 is the uplink)
// and an engine on it, commands run from their testpmd text, frames built from short descriptions.
#ifndef DRSIM_TESTPMD_ENGINE_TEST_UTIL_H_
#define DRSIM_TESTPMD_ENGINE_TEST_UTIL_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/status_macros.h"
#include "gtest/gtest.h"
#include "hw/net_addr.h"
#include "sim/frame_builder.h"
#include "sim/nic.h"
#include "sim/rx_queue.h"
#include "testpmd/engine.h"
#include "testpmd/parser.h"

namespace drsim::testpmd {

class EngineTest : public ::testing::Test {
 protected:
  // Runs a command that must succeed.
  CommandResult Run(const std::string& text) {
    absl::StatusOr<CommandResult> r = Try(text);
    EXPECT_TRUE(r.ok()) << text << "\n  -> " << r.status();
    return r.ok() ? *r : CommandResult{};
  }
  // Runs a command; parse errors come back too.
  absl::StatusOr<CommandResult> Try(const std::string& text) {
    DRSIM_ASSIGN_OR_RETURN(Command c, ParseOne(text));
    return engine_.Execute(c);
  }
  // The column of the error of `text` (0 without a position).
  int ErrorColumn(const absl::Status& s) { return PosOf(s).value_or(SourcePos{}).column; }

  uint32_t Qp(uint16_t port, uint16_t index) { return *engine_.QueueNumber(port, index); }
  // The oldest frame in queue `index` of `port`.
  std::optional<sim::RxCompletion> PollQueue(uint16_t port, uint16_t index) {
    return nic_.function(port)->queue(Qp(port, index))->Poll();
  }

  static hw::MacAddress Mac(const char* s) { return *hw::MacAddress::Parse(s); }
  static hw::Ipv4Address Ip(const char* s) { return *hw::Ipv4Address::Parse(s); }

  // An IPv4 TCP or UDP frame.
  static sim::FrameSpec Ipv4(const char* src, const char* dst, uint8_t protocol, uint16_t sport,
                             uint16_t dport) {
    sim::FrameSpec s;
    s.smac = Mac("02:00:00:00:00:01");
    s.dmac = Mac("02:00:00:00:00:02");
    s.ipv4_src = Ip(src);
    s.ipv4_dst = Ip(dst);
    s.protocol = protocol;
    s.sport = sport;
    s.dport = dport;
    s.payload_len = 32;
    return s;
  }
  static std::vector<uint8_t> Tcp(const char* src, const char* dst, uint16_t sport, uint16_t dport) {
    return sim::BuildFrame(Ipv4(src, dst, sim::kIpProtoTcp, sport, dport));
  }
  static std::vector<uint8_t> Udp(const char* src, const char* dst, uint16_t sport, uint16_t dport) {
    return sim::BuildFrame(Ipv4(src, dst, sim::kIpProtoUdp, sport, dport));
  }
  // `inner` in VXLAN `vni` from 192.0.2.2 to 192.0.2.1.
  static std::vector<uint8_t> Vxlan(uint32_t vni, const sim::FrameSpec& inner) {
    sim::TunnelFrameSpec t;
    t.outer.smac = Mac("0c:42:a1:00:00:02");
    t.outer.dmac = Mac("0c:42:a1:00:00:01");
    t.outer.ipv4_src = Ip("192.0.2.2");
    t.outer.ipv4_dst = Ip("192.0.2.1");
    t.outer.protocol = sim::kIpProtoUdp;
    t.outer.sport = 5000;
    t.tunnel.kind = sim::Encap::kVxlan;
    t.tunnel.vni = vni;
    t.inner = inner;
    return sim::BuildFrame(t);
  }

  sim::Nic nic_{2};
  FlowEngine engine_{nic_};
};

}  // namespace drsim::testpmd

#endif  // DRSIM_TESTPMD_ENGINE_TEST_UTIL_H_
