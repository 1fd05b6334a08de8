// The demo: a small NIC_RX steering setup on the software NIC, a handful of real frames, and for each
// frame where it went and why (table, matcher, rule), then per-rule hit counts and the receive queues.
//
//   bazel run -c opt //examples:steering_demo
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "dr/dr.h"
#include "examples/demo_support.h"
#include "hw/match_params.h"
#include "sim/frame_builder.h"
#include "sim/nic.h"
#include "sim/rx_queue.h"

namespace {

using drsim::examples::Ip;
using drsim::examples::Mac;
using drsim::examples::Must;
using drsim::hw::kOuter;
using drsim::hw::MatchBuilder;
using drsim::hw::MatchParams;
namespace dr = drsim::dr;
namespace hw = drsim::hw;
namespace sim = drsim::sim;

struct Packet {
  std::string what;
  sim::FrameSpec spec;
};

sim::FrameSpec Tcp(const char* src, uint16_t sport, const char* dst, uint16_t dport) {
  sim::FrameSpec s;
  s.smac = Mac("02:00:00:00:00:aa");
  s.dmac = Mac("02:00:00:00:00:01");
  s.ipv4_src = Ip(src);
  s.ipv4_dst = Ip(dst);
  s.protocol = drsim::sim::kIpProtoTcp;
  s.sport = sport;
  s.dport = dport;
  s.tcp_flags = 0x002;  // SYN
  s.payload_len = 0;
  return s;
}

}  // namespace

int main() {
  sim::Nic nic;
  dr::Domain domain = Must(dr::Domain::Create(nic.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_RX), "domain");

  // Names for what the NIC reports by id.
  std::map<uint32_t, std::string> names;
  std::map<uint32_t, std::string> queue_names;
  auto queue = [&](const char* name) {
    uint32_t qpn = nic.pf().CreateQueue(64);
    queue_names[qpn] = name;
    return qpn;
  };
  const uint32_t web_q = queue("web"), control_q = queue("control"), quarantine_q = queue("quarantine");

  dr::Table root = Must(dr::Table::Create(domain, 0), "table 0");
  dr::Table services = Must(dr::Table::Create(domain, 1), "table 1");
  names[root.id()] = "table 0 (root)";
  names[services.id()] = "table 1 (services)";

  dr::Action to_services = Must(dr::Action::DestTable(services), "dest_table");
  dr::Action to_web = Must(dr::Action::DestQp(nic.pf(), web_q), "dest_qp web");
  dr::Action to_control = Must(dr::Action::DestQp(nic.pf(), control_q), "dest_qp control");
  dr::Action to_quarantine = Must(dr::Action::DestQp(nic.pf(), quarantine_q), "dest_qp quarantine");
  dr::Action drop = Must(dr::Action::Drop(), "drop");
  dr::Action tag_http = Must(dr::Action::Tag(0x50), "tag");
  dr::Action tag_https = Must(dr::Action::Tag(0x1bb), "tag");
  dr::Action tag_arp = Must(dr::Action::Tag(0xa), "tag");

  // Table 0: TCP to 10.0.0.0/24 goes on to table 1 (priority 0); ARP to the control queue (priority 1).
  dr::Matcher subnet = Must(dr::Matcher::Create(root, 0,
                                                Must(MatchBuilder()
                                                         .IpVersion(kOuter, 4)
                                                         .Ipv4Dst(kOuter, hw::Ipv4Address::PrefixMask(24))
                                                         .IpProtocol(kOuter, 0xff)
                                                         .Build(),
                                                     "mask")),
                            "matcher subnet");
  dr::Matcher ethertype =
      Must(dr::Matcher::Create(root, 1, Must(MatchBuilder().Ethertype(kOuter, 0xffff).Build(), "mask")),
           "matcher ethertype");
  names[subnet.id()] = "ipv4 dst/24 + protocol (prio 0)";
  names[ethertype.id()] = "ethertype (prio 1)";

  // Table 1: well-known ports (priority 0), then a source host in quarantine (priority 1).
  dr::Matcher ports = Must(
      dr::Matcher::Create(services, 0,
                          Must(MatchBuilder().IpVersion(kOuter, 4).TcpDport(kOuter, 0xffff).Build(), "mask")),
      "matcher ports");
  dr::Matcher hosts = Must(
      dr::Matcher::Create(
          services, 1,
          Must(MatchBuilder().IpVersion(kOuter, 4).Ipv4Src(kOuter, hw::Ipv4Address::PrefixMask(32)).Build(),
               "mask")),
      "matcher hosts");
  names[ports.id()] = "tcp dport (prio 0)";
  names[hosts.id()] = "ipv4 src/32 (prio 1)";

  std::vector<dr::Rule> rules;
  auto rule = [&](const dr::Matcher& m, MatchBuilder value, std::vector<const dr::Action*> actions,
                  const char* name) {
    rules.push_back(Must(dr::Rule::Create(m, Must(value.Build(), "value"), actions), name));
    names[rules.back().id()] = name;
  };
  rule(subnet, MatchBuilder().IpVersion(kOuter, 4).Ipv4Dst(kOuter, Ip("10.0.0.0")).IpProtocol(kOuter, 6),
       {&to_services}, "10.0.0.0/24 tcp -> table 1");
  rule(ethertype, MatchBuilder().Ethertype(kOuter, 0x0806), {&tag_arp, &to_control},
       "arp -> control, tag 0xa");
  rule(ports, MatchBuilder().IpVersion(kOuter, 4).TcpDport(kOuter, 80), {&tag_http, &to_web},
       "http -> web, tag 0x50");
  rule(ports, MatchBuilder().IpVersion(kOuter, 4).TcpDport(kOuter, 443), {&tag_https, &to_web},
       "https -> web, tag 0x1bb");
  rule(ports, MatchBuilder().IpVersion(kOuter, 4).TcpDport(kOuter, 22), {&drop}, "ssh -> drop");
  rule(hosts, MatchBuilder().IpVersion(kOuter, 4).Ipv4Src(kOuter, Ip("10.9.9.9")), {&to_quarantine},
       "10.9.9.9 -> quarantine");

  // Rules the API refuses, and why.
  absl::PrintF("Rejected on purpose:\n");
  absl::Status s =
      dr::Matcher::Create(services, 5, Must(MatchBuilder().TcpDport(kOuter, 0xffff).Build(), "mask"))
          .status();
  absl::PrintF("  matcher on tcp_dport without ip_version: %s\n", s.ToString());
  s = dr::Rule::Create(ports,
                       Must(MatchBuilder().IpVersion(kOuter, 4).TcpDport(kOuter, 8080).Build(), "value"),
                       {&to_web, &tag_http})
          .status();
  absl::PrintF("  rule [dest_qp, tag]: %s\n\n", s.ToString());

  sim::FrameSpec arp;
  arp.l3 = sim::L3Kind::kNone;
  arp.ethertype = 0x0806;
  arp.smac = Mac("02:00:00:00:00:bb");
  arp.dmac = hw::MacAddress::AllOnes();
  arp.payload_len = 28;
  sim::FrameSpec dns = Tcp("192.168.1.10", 5353, "10.0.0.53", 53);
  dns.protocol = sim::kIpProtoUdp;
  sim::FrameSpec v6;
  v6.l3 = sim::L3Kind::kIpv6;
  v6.ipv6_src = *hw::Ipv6Address::Parse("2001:db8::1");
  v6.ipv6_dst = *hw::Ipv6Address::Parse("2001:db8::2");
  v6.protocol = sim::kIpProtoTcp;
  v6.dport = 80;
  const std::vector<Packet> packets = {
      {"TCP 192.168.1.10:40000 -> 10.0.0.5:80", Tcp("192.168.1.10", 40000, "10.0.0.5", 80)},
      {"TCP 192.168.1.11:40001 -> 10.0.0.7:443", Tcp("192.168.1.11", 40001, "10.0.0.7", 443)},
      {"TCP 192.168.1.12:40002 -> 10.0.0.5:22", Tcp("192.168.1.12", 40002, "10.0.0.5", 22)},
      {"ARP who-has", arp},
      {"TCP 10.9.9.9:9999 -> 10.0.0.1:8080", Tcp("10.9.9.9", 9999, "10.0.0.1", 8080)},
      {"TCP 192.168.1.13:40003 -> 10.0.1.5:80", Tcp("192.168.1.13", 40003, "10.0.1.5", 80)},
      {"UDP 192.168.1.10:5353 -> 10.0.0.53:53", dns},
      {"TCP [2001:db8::1] -> [2001:db8::2]:80", v6},
      {"TCP 192.168.1.14:40004 -> 10.0.0.9:80", Tcp("192.168.1.14", 40004, "10.0.0.9", 80)},
  };

  // One burst through the NIC, traced.
  std::vector<std::vector<uint8_t>> frames;
  for (const Packet& p : packets) frames.push_back(sim::BuildFrame(p.spec));
  std::vector<sim::Frame> views(frames.begin(), frames.end());
  std::vector<sim::Verdict> verdicts(frames.size());
  if (absl::Status s = nic.ReceiveFromWire(views, absl::MakeSpan(verdicts), /*trace=*/true); !s.ok()) {
    absl::FPrintF(stderr, "%s\n", s.ToString());
    return 1;
  }

  std::map<uint32_t, int> hits;
  for (size_t i = 0; i < packets.size(); ++i) {
    const sim::Verdict& v = verdicts[i];
    std::string where;
    switch (v.fate) {
      case sim::Fate::kQueued:
        where = absl::StrFormat("queue %s (qp 0x%x)", queue_names[v.qp_num], v.qp_num);
        break;
      default:
        where = sim::FateName(v.fate);
    }
    if (v.has_flow_tag) absl::StrAppendFormat(&where, ", flow tag 0x%x", v.flow_tag);
    absl::PrintF("#%d %s (%d bytes)\n   -> %s\n", i + 1, packets[i].what, frames[i].size(), where);
    for (const sim::Hop& hop : v.path) {
      if (hop.rule_id == 0) {
        // A miss in the root reports table 0: every level-0 table of the domain was searched.
        absl::PrintF("      %s: no matcher hit -> NIC_RX default (drop)\n",
                     hop.table_id == 0 ? "level-0 tables" : names[hop.table_id]);
        continue;
      }
      ++hits[hop.rule_id];
      absl::PrintF("      %s: matcher \"%s\", rule \"%s\"\n", names[hop.table_id], names[hop.matcher_id],
                   names[hop.rule_id]);
    }
  }

  absl::PrintF("\nPer-rule hits:\n");
  for (const dr::Rule& r : rules) absl::PrintF("  %6d  %s\n", hits[r.id()], names[r.id()]);

  absl::PrintF("\nReceive queues:\n");
  for (uint32_t qpn : {web_q, control_q, quarantine_q}) {
    sim::RxQueue* q = nic.pf().queue(qpn);
    std::vector<std::string> entries;
    while (std::optional<sim::RxCompletion> c = q->Poll()) {
      entries.push_back(c->has_flow_tag ? absl::StrFormat("%dB tag 0x%x", c->byte_len, c->flow_tag)
                                        : absl::StrFormat("%dB", c->byte_len));
    }
    absl::PrintF("  %-10s qp 0x%x: %d frame(s) [%s]\n", queue_names[qpn], qpn, entries.size(),
                 absl::StrJoin(entries, ", "));
  }
  const sim::NicStats& st = nic.stats();
  absl::PrintF("\nNIC: %d frames, %d queued, %d dropped by rules, %d by the NIC_RX default\n", st.frames,
               st.queued, st.dropped, st.domain_default);
  return 0;
}
