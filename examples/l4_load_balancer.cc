// An L4 load balancer on NIC_RX: two virtual services (a TCP VIP:443 and a UDP VIP:53), each spread by RSS
// over its own set of receive queues (one per worker), everything else dropped. The TCP service hashes
// symmetrically (mlx5's symmetric-or-xor), so both directions of a connection land on the same worker.
// Thousands of client flows go through; per-queue counts show the spread, and every flow is checked to
// stay on one queue.
//
//   bazel run -c opt //examples:l4_load_balancer
#include <infiniband/verbs.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "dr/dr.h"
#include "examples/demo_support.h"
#include "hw/match_params.h"
#include "sim/frame_builder.h"
#include "sim/nic.h"
#include "sim/toeplitz.h"

namespace {

using drsim::examples::Ip;
using drsim::examples::Must;
using drsim::hw::kOuter;
using drsim::hw::MatchBuilder;
namespace dr = drsim::dr;
namespace hw = drsim::hw;
namespace sim = drsim::sim;

constexpr int kWorkers = 8;
constexpr int kFlows = 4000;
constexpr uint64_t kTcpHashFields =
    IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 | IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP;

sim::FrameSpec Flow(uint8_t protocol, hw::Ipv4Address src, uint16_t sport, hw::Ipv4Address dst,
                    uint16_t dport) {
  sim::FrameSpec s;
  s.protocol = protocol;
  s.ipv4_src = src;
  s.ipv4_dst = dst;
  s.sport = sport;
  s.dport = dport;
  s.tcp_flags = 0x002;
  return s;
}

}  // namespace

int main() {
  sim::Nic nic;
  sim::Function& pf = nic.pf();
  const hw::Ipv4Address vip = Ip("192.0.2.10");

  // One TIR per service over its workers' queues.
  std::vector<uint32_t> tcp_queues, udp_queues;
  for (int i = 0; i < kWorkers; ++i) tcp_queues.push_back(pf.CreateQueue(kFlows));
  for (int i = 0; i < kWorkers / 2; ++i) udp_queues.push_back(pf.CreateQueue(kFlows));
  const uint32_t tcp_tir = Must(
      pf.CreateTir(tcp_queues, kTcpHashFields, sim::kMicrosoftRssKey, sim::RssSymmetry::kOrXor), "tcp tir");
  const uint32_t udp_tir = Must(pf.CreateTir(udp_queues, IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_SRC_PORT_UDP),
                                "udp tir");  // by client

  dr::Domain rx = Must(dr::Domain::Create(pf, MLX5DV_DR_DOMAIN_TYPE_NIC_RX), "domain");
  dr::Table root = Must(dr::Table::Create(rx, 0), "root");
  dr::Table services = Must(dr::Table::Create(rx, 1), "services");
  dr::Action to_services = Must(dr::Action::DestTable(services), "dest_table");
  // Root: frames for the VIP go to the services table; the NIC_RX default drops the rest.
  dr::Matcher by_vip = Must(
      dr::Matcher::Create(
          root, 0,
          Must(MatchBuilder().IpVersion(kOuter, 4).Ipv4Dst(kOuter, hw::Ipv4Address::PrefixMask(32)).Build(),
               "mask")),
      "matcher vip");
  dr::Rule to_vip =
      Must(dr::Rule::Create(by_vip,
                            Must(MatchBuilder().IpVersion(kOuter, 4).Ipv4Dst(kOuter, vip).Build(), "value"),
                            {&to_services}),
           "rule vip");
  // Services: protocol + destination port -> the service's TIR. TCP and UDP ports share the L4 lookup,
  // so the protocol tells the services apart.
  dr::Matcher by_port = Must(
      dr::Matcher::Create(
          services, 0,
          Must(MatchBuilder().IpVersion(kOuter, 4).IpProtocol(kOuter, 0xff).TcpDport(kOuter, 0xffff).Build(),
               "mask")),
      "matcher port");
  dr::Action to_tcp = Must(dr::Action::DestTir(pf, tcp_tir), "dest_tir tcp");
  dr::Action to_udp = Must(dr::Action::DestTir(pf, udp_tir), "dest_tir udp");
  dr::Rule https =
      Must(dr::Rule::Create(
               by_port,
               Must(MatchBuilder().IpVersion(kOuter, 4).IpProtocol(kOuter, 6).TcpDport(kOuter, 443).Build(),
                    "value"),
               {&to_tcp}),
           "rule https");
  dr::Rule dns =
      Must(dr::Rule::Create(
               by_port,
               Must(MatchBuilder().IpVersion(kOuter, 4).IpProtocol(kOuter, 17).TcpDport(kOuter, 53).Build(),
                    "value"),
               {&to_udp}),
           "rule dns");

  // Clients: kFlows TCP flows to VIP:443 (each sends a SYN, and the reverse direction is checked too),
  // kFlows / 4 UDP flows to VIP:53, and strays (other ports, other addresses) that must be dropped.
  std::map<uint32_t, int> per_queue;
  int moved = 0, asymmetric = 0, delivered = 0, dropped = 0;
  for (int i = 0; i < kFlows; ++i) {
    hw::Ipv4Address client;
    client.value = 0x0a000000u + static_cast<uint32_t>(i) * 2654435761u % 0x00ffffffu;
    const uint16_t sport = static_cast<uint16_t>(1024 + i * 7919 % 60000);
    const std::vector<uint8_t> syn = sim::BuildFrame(Flow(sim::kIpProtoTcp, client, sport, vip, 443));
    const sim::Verdict first = nic.ReceiveFromWire(syn), again = nic.ReceiveFromWire(syn);
    if (first.fate != sim::Fate::kQueued) continue;
    ++per_queue[first.qp_num];
    delivered += 2;
    if (again.qp_num != first.qp_num) ++moved;
    // The server's reply (VIP:443 -> client) hashes to the same worker under the symmetric hash.
    sim::RssHeaderFields back;
    back.ipv4_src = vip;
    back.ipv4_dst = client;
    back.ip_protocol = 6;
    back.sport = 443;
    back.dport = sport;
    const uint32_t reply =
        sim::RssHash(back, kTcpHashFields, sim::kMicrosoftRssKey, sim::RssSymmetry::kOrXor).value_or(0);
    if (tcp_queues[reply & (kWorkers - 1)] != first.qp_num) ++asymmetric;
  }
  for (int i = 0; i < kFlows / 4; ++i) {
    hw::Ipv4Address client;
    client.value = 0xc6336400u + static_cast<uint32_t>(i % 250);
    const sim::Verdict v = nic.ReceiveFromWire(
        sim::BuildFrame(Flow(sim::kIpProtoUdp, client, static_cast<uint16_t>(20000 + i), vip, 53)));
    if (v.fate == sim::Fate::kQueued) {
      ++per_queue[v.qp_num];
      ++delivered;
    }
  }
  for (uint16_t port : {80, 22, 8443}) {
    dropped +=
        nic.ReceiveFromWire(sim::BuildFrame(Flow(sim::kIpProtoTcp, Ip("10.1.1.1"), 5555, vip, port))).fate ==
        sim::Fate::kDomainDefault;
  }
  dropped += nic.ReceiveFromWire(
                    sim::BuildFrame(Flow(sim::kIpProtoTcp, Ip("10.1.1.1"), 5555, Ip("192.0.2.11"), 443)))
                 .fate == sim::Fate::kDomainDefault;

  absl::PrintF("TCP VIP %s:443 over %d workers (symmetric RSS), UDP VIP :53 over %d (by client)\n\n",
               vip.ToString(), kWorkers, kWorkers / 2);
  auto show = [&](const char* what, const std::vector<uint32_t>& queues, int flows) {
    const double mean = static_cast<double>(flows) / queues.size();
    double worst = 0;
    for (size_t i = 0; i < queues.size(); ++i) {
      const int n = per_queue[queues[i]];
      worst = std::max(worst, std::abs(n - mean) / mean);
      absl::PrintF("  %s worker %d (qp 0x%x): %5d flows %s\n", what, i, queues[i], n,
                   std::string(static_cast<size_t>(40.0 * n / (2 * mean)), '#'));
    }
    absl::PrintF("  %s: largest deviation from an even spread %.1f%%\n\n", what, 100 * worst);
  };
  show("tcp", tcp_queues, kFlows);
  show("udp", udp_queues, kFlows / 4);
  absl::PrintF(
      "%d frames delivered; %d flows changed worker between packets; %d replies would land on another "
      "worker; %d of 4 strays dropped\n",
      delivered, moved, asymmetric, dropped);
  return moved == 0 && asymmetric == 0 && dropped == 4 ? 0 : 1;
}
