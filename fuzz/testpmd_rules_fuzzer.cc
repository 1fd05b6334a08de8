// libFuzzer target: arbitrary text as a testpmd rule file, checked and run on a NIC with two VFs
// (testpmd/runner.h), then frames through whatever it installed. Bad input must come back as diagnostics
// that name a place in the file, never a crash; a rejected file must leave nothing installed; an accepted
// one must carry traffic and tear down cleanly.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "sim/frame_builder.h"
#include "sim/nic.h"
#include "testpmd/engine.h"
#include "testpmd/runner.h"

namespace {

using drsim::sim::BuildFrame;
using drsim::sim::FrameSpec;

// A TCP, a UDP and a VXLAN frame, so that rules of every kind have something to act on.
const std::vector<std::vector<uint8_t>>& Frames() {
  static const auto* frames = [] {
    FrameSpec tcp;
    tcp.ipv4_src = *drsim::hw::Ipv4Address::Parse("10.0.0.1");
    tcp.ipv4_dst = *drsim::hw::Ipv4Address::Parse("10.0.0.2");
    tcp.protocol = drsim::sim::kIpProtoTcp;
    tcp.sport = 1234;
    tcp.dport = 80;
    FrameSpec udp = tcp;
    udp.protocol = drsim::sim::kIpProtoUdp;
    udp.dport = 53;
    drsim::sim::TunnelFrameSpec vxlan;
    vxlan.outer = udp;
    vxlan.tunnel.kind = drsim::sim::Encap::kVxlan;
    vxlan.tunnel.vni = 100;
    vxlan.inner = tcp;
    return new std::vector<std::vector<uint8_t>>{BuildFrame(tcp), BuildFrame(udp), BuildFrame(vxlan)};
  }();
  return *frames;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  int lines = 1;
  for (char c : text) lines += c == '\n';
  drsim::sim::Nic nic(/*num_vfs=*/2);
  {
    drsim::testpmd::EngineOptions options;
    options.rx_queues = 4;
    drsim::testpmd::FlowEngine engine(nic, options);
    const drsim::testpmd::FileReport report = drsim::testpmd::RunFile(engine, "fuzz.rules", text);
    for (const drsim::testpmd::Diagnostic& d : report.diagnostics) {
      if (d.message.empty() || d.pos.line < 1 || d.pos.line > lines || d.pos.column < 1) std::abort();
    }
    const drsim::testpmd::EngineCounts c = engine.counts();
    if (!report.ok() &&
        (c.flows != 0 || c.rules != 0 || c.matchers != 0 || c.tables != 0 || c.domains != 0)) {
      std::abort();  // a rejected file installed something
    }
    for (const std::vector<uint8_t>& frame : Frames()) {
      nic.ReceiveFromWire(frame);
      nic.function(1)->Send(frame);
    }
  }  // the engine flushes every port and frees its queues
  return 0;
}
