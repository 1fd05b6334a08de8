// A VXLAN gateway: an overlay offloaded to the FDB, as OVS would program it on a host with two VMs
// behind VFs. Wire traffic is matched on its VNI, decapsulated and sent to the VM's vport; what a VM
// sends is encapsulated (VF1) or VLAN-tagged and re-marked (VF2) and sent out of the uplink. VF1's NIC_RX
// tags and queues what it gets; VF2's spreads it over four queues by RSS. Every frame's path through the
// domains is printed, then the flow counters, the queues, and a pcap of the wire for Wireshark.
//
//   bazel run -c opt //examples:vxlan_gateway [-- --pcap=/path/out.pcap]
#include <arpa/inet.h>
#include <infiniband/verbs.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "dr/dr.h"
#include "examples/demo_support.h"
#include "hw/byte_order.h"
#include "hw/match_params.h"
#include "hw/modify_header.h"
#include "sim/frame_builder.h"
#include "sim/nic.h"
#include "sim/pcap_file.h"
#include "sim/rx_queue.h"

namespace {

using drsim::examples::Ip;
using drsim::examples::Mac;
using drsim::examples::Must;
using drsim::hw::kInner;
using drsim::hw::kOuter;
using drsim::hw::MatchBuilder;
using drsim::hw::MatchParams;
namespace dr = drsim::dr;
namespace hw = drsim::hw;
namespace sim = drsim::sim;

constexpr uint32_t kVni1 = 100, kVni2 = 200;
constexpr uint16_t kWire = 0xffff;

// A VM's TCP frame (the inner frame of the overlay).
sim::FrameSpec VmTcp(const char* smac, const char* src, uint16_t sport, const char* dst, uint16_t dport) {
  sim::FrameSpec s;
  s.smac = Mac(smac);
  s.dmac = Mac("02:00:00:00:99:99");
  s.ipv4_src = Ip(src);
  s.ipv4_dst = Ip(dst);
  s.protocol = sim::kIpProtoTcp;
  s.sport = sport;
  s.dport = dport;
  s.tcp_flags = 0x018;  // PSH ACK
  s.payload_len = 64;
  return s;
}

// What a remote hypervisor (192.0.2.2) sends this host (192.0.2.1): the VM frame in VXLAN.
std::vector<uint8_t> FromRemote(uint32_t vni, const sim::FrameSpec& inner) {
  sim::TunnelFrameSpec t;
  t.outer.smac = Mac("0c:42:a1:00:00:02");
  t.outer.dmac = Mac("0c:42:a1:00:00:01");
  t.outer.ipv4_src = Ip("192.0.2.2");
  t.outer.ipv4_dst = Ip("192.0.2.1");
  t.outer.protocol = sim::kIpProtoUdp;
  t.outer.sport = 49152 + vni;
  t.tunnel.kind = sim::Encap::kVxlan;
  t.tunnel.vni = vni;
  t.inner = inner;
  return sim::BuildFrame(t);
}

// The outer header stack VF1's traffic is encapsulated in: ETH / IPv4 / UDP 4789 / VXLAN `vni`. The
// device fills the IPv4 total length and checksum and the UDP length.
std::vector<uint8_t> VxlanHeader(uint32_t vni) {
  std::vector<uint8_t> h(50, 0);
  const hw::MacAddress dmac = Mac("0c:42:a1:00:00:02"), smac = Mac("0c:42:a1:00:00:01");
  std::copy(dmac.bytes.begin(), dmac.bytes.end(), h.begin());
  std::copy(smac.bytes.begin(), smac.bytes.end(), h.begin() + 6);
  hw::StoreBe16(&h[12], 0x0800);
  h[14] = 0x45;
  h[22] = 64;  // TTL
  h[23] = sim::kIpProtoUdp;
  hw::StoreBe32(&h[26], 0xc0000201);  // 192.0.2.1
  hw::StoreBe32(&h[30], 0xc0000202);  // 192.0.2.2
  hw::StoreBe16(&h[34], 49152 + vni);
  hw::StoreBe16(&h[36], sim::kUdpPortVxlan);
  h[42] = 0x08;  // VNI present
  hw::StoreBe32(&h[46], vni << 8);
  return h;
}

std::string StageName(const sim::Hop& hop) {
  switch (hop.domain) {
    case MLX5DV_DR_DOMAIN_TYPE_FDB:
      return hop.pipe == hw::kRxPipe ? "FDB (RX pipe)" : "FDB (TX pipe)";
    case MLX5DV_DR_DOMAIN_TYPE_NIC_RX:
      return absl::StrFormat("vport %d NIC_RX", hop.vport);
    case MLX5DV_DR_DOMAIN_TYPE_NIC_TX:
      return absl::StrFormat("vport %d NIC_TX", hop.vport);
  }
  return "?";
}

std::string Where(const sim::Delivery& d, const std::map<uint32_t, std::string>& queue_names) {
  std::string where;
  if (d.fate == sim::Fate::kQueued) {
    auto it = queue_names.find(d.qp_num);
    where = absl::StrFormat("vport %d %s (qp 0x%x)", d.vport, it == queue_names.end() ? "queue" : it->second,
                            d.qp_num);
  } else if (d.fate == sim::Fate::kPort) {
    where = absl::StrFormat("vport %d's own interface (it has no NIC_RX steering)", d.vport);
  } else if (d.fate == sim::Fate::kWire) {
    where = "the wire (uplink)";
  } else {
    where = sim::FateName(d.fate);
  }
  if (d.has_flow_tag) absl::StrAppendFormat(&where, ", flow tag 0x%x", d.flow_tag);
  return where;
}

}  // namespace

int main(int argc, char** argv) {
  std::string pcap_path = "/tmp/drsim_vxlan_gateway.pcap";
  for (int i = 1; i < argc; ++i) {
    if (absl::StartsWith(argv[i], "--pcap=")) {
      pcap_path = argv[i] + 7;
    } else {
      absl::FPrintF(stderr, "usage: %s [--pcap=PATH]\nunknown argument: %s\n", argv[0], argv[i]);
      return 2;
    }
  }

  sim::Nic nic(/*num_vfs=*/2);
  sim::Function& vf1 = *nic.function(1);
  sim::Function& vf2 = *nic.function(2);
  std::map<uint32_t, std::string> names;        // table/matcher/rule ids
  std::map<uint32_t, std::string> queue_names;  // qp numbers

  // ---- FDB, programmed by the eSwitch manager (the PF) ----
  dr::Domain fdb = Must(dr::Domain::Create(nic.pf(), MLX5DV_DR_DOMAIN_TYPE_FDB), "fdb domain");
  dr::Table fdb_root = Must(dr::Table::Create(fdb, 0), "fdb table 0");
  dr::Table overlay = Must(dr::Table::Create(fdb, 1), "fdb table 1");
  names[fdb_root.id()] = "table 0";
  names[overlay.id()] = "table 1 (overlay)";
  dr::Action to_overlay = Must(dr::Action::DestTable(overlay), "dest_table");
  dr::Matcher all = Must(dr::Matcher::Create(fdb_root, 0, 0, nullptr), "matcher all");
  names[all.id()] = "everything";
  dr::Rule jump = Must(dr::Rule::Create(all, MatchParams(), {&to_overlay}), "rule jump");
  names[jump.id()] = "-> table 1";

  const uint32_t counters = Must(nic.AllocateCounters(4), "counters");
  const char* counter_names[] = {"VNI 100 in", "VNI 200 in", "VF1 out (VXLAN)", "VF2 out (VLAN 20)"};
  std::vector<dr::Action> count;
  for (uint32_t i = 0; i < 4; ++i)
    count.push_back(Must(dr::Action::FlowCounter(nic.pf(), counters, i), "counter"));

  // RX pipe: VXLAN from the wire, by VNI -> decap -> the VM's vport.
  dr::Matcher by_vni =
      Must(dr::Matcher::Create(overlay, 0,
                               Must(MatchBuilder().SourcePort(0xffff).VxlanVni(0xffffff).Build(), "mask")),
           "matcher vni");
  names[by_vni.id()] = "source_port + vxlan_vni (prio 0)";
  dr::Action decap =
      Must(dr::Action::PacketReformat(fdb, 0, MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TUNNEL_TO_L2, {}),
           "decap");
  dr::Action to_vf1 = Must(dr::Action::DestVport(fdb, 1), "vport 1");
  dr::Action to_vf2 = Must(dr::Action::DestVport(fdb, 2), "vport 2");
  dr::Action to_wire = Must(dr::Action::DestVport(fdb, kWire), "uplink");

  // TX pipe: by source vport. VF1 -> VXLAN VNI 100 -> wire. VF2 -> VLAN 20, DSCP 46 (EF) -> wire.
  dr::Matcher by_port =
      Must(dr::Matcher::Create(overlay, 1, Must(MatchBuilder().SourcePort(0xffff).Build(), "mask")),
           "matcher source_port");
  names[by_port.id()] = "source_port (prio 1)";
  const std::vector<uint8_t> vxlan = VxlanHeader(kVni1);
  dr::Action encap =
      Must(dr::Action::PacketReformat(fdb, 0, MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TO_L2_TUNNEL, vxlan),
           "encap");
  dr::Action vlan20 = Must(dr::Action::PushVlan(fdb, htonl(0x8100u << 16 | 20)), "push_vlan");
  const uint64_t set_dscp[] = {hw::ModifySetWord(hw::ModifyField::kIpDscp, 0, 6, 46)};
  dr::Action mark_ef = Must(dr::Action::ModifyHeader(fdb, 0, set_dscp), "modify_header");

  std::vector<dr::Rule> rules;
  auto rule = [&](const dr::Matcher& m, MatchBuilder value, std::vector<const dr::Action*> actions,
                  const char* name) {
    rules.push_back(Must(dr::Rule::Create(m, Must(value.Build(), "value"), actions), name));
    names[rules.back().id()] = name;
  };
  rule(by_vni, MatchBuilder().SourcePort(kWire).VxlanVni(kVni1), {&decap, &count[0], &to_vf1},
       "VNI 100 -> decap -> VF1");
  rule(by_vni, MatchBuilder().SourcePort(kWire).VxlanVni(kVni2), {&decap, &count[1], &to_vf2},
       "VNI 200 -> decap -> VF2");
  // Lists follow the FDB TX pipe's legal order (rdma-core's state machine): modify, push, encap.
  rule(by_port, MatchBuilder().SourcePort(1), {&count[2], &encap, &to_wire}, "VF1 -> VXLAN 100 -> wire");
  rule(by_port, MatchBuilder().SourcePort(2), {&mark_ef, &vlan20, &count[3], &to_wire},
       "VF2 -> VLAN 20 + DSCP EF -> wire");

  // Rejected on purpose.
  absl::PrintF("Rejected on purpose:\n");
  absl::PrintF(
      "  decap on a rule that also sees VF traffic: %s\n",
      dr::Rule::Create(by_port, Must(MatchBuilder().SourcePort(1).Build(), "value"), {&decap, &to_vf2})
          .status()
          .ToString());
  absl::PrintF(
      "  encap after the destination: %s\n",
      dr::Rule::Create(by_port, Must(MatchBuilder().SourcePort(2).Build(), "value"), {&to_wire, &encap})
          .status()
          .ToString());
  absl::PrintF("  VLAN push with TPID 0x9100: %s\n\n",
               dr::Action::PushVlan(fdb, htonl(0x9100u << 16 | 20)).status().ToString());

  // ---- VF1's NIC_RX: tag 0x100 and one queue. VF2's NIC_RX: RSS over four queues. ----
  dr::Domain vf1_rx = Must(dr::Domain::Create(vf1, MLX5DV_DR_DOMAIN_TYPE_NIC_RX), "vf1 nic_rx");
  dr::Table vf1_root = Must(dr::Table::Create(vf1_rx, 0), "vf1 table");
  dr::Matcher vf1_all = Must(dr::Matcher::Create(vf1_root, 0, 0, nullptr), "vf1 matcher");
  names[vf1_root.id()] = "table 0";
  names[vf1_all.id()] = "everything";
  const uint32_t vf1_q = vf1.CreateQueue(64);
  queue_names[vf1_q] = "rxq0";
  dr::Action tag = Must(dr::Action::Tag(0x100), "tag");
  dr::Action to_vf1_q = Must(dr::Action::DestQp(vf1, vf1_q), "dest_qp");
  rule(vf1_all, MatchBuilder(), {&tag, &to_vf1_q}, "tag 0x100 -> rxq0");

  dr::Domain vf2_rx = Must(dr::Domain::Create(vf2, MLX5DV_DR_DOMAIN_TYPE_NIC_RX), "vf2 nic_rx");
  dr::Table vf2_root = Must(dr::Table::Create(vf2_rx, 0), "vf2 table");
  dr::Matcher vf2_ip =
      Must(dr::Matcher::Create(vf2_root, 0, Must(MatchBuilder().IpVersion(kOuter, 4).Build(), "mask")),
           "vf2 matcher");
  names[vf2_root.id()] = "table 0";
  names[vf2_ip.id()] = "ip_version 4 (prio 0)";
  std::vector<uint32_t> vf2_queues;
  for (int i = 0; i < 4; ++i) {
    vf2_queues.push_back(vf2.CreateQueue(64));
    queue_names[vf2_queues.back()] = absl::StrFormat("rxq%d", i);
  }
  const uint32_t tir =
      Must(vf2.CreateTir(vf2_queues, IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 | IBV_RX_HASH_SRC_PORT_TCP |
                                         IBV_RX_HASH_DST_PORT_TCP),
           "tir");
  dr::Action rss = Must(dr::Action::DestTir(vf2, tir), "dest_tir");
  rule(vf2_ip, MatchBuilder().IpVersion(kOuter, 4), {&rss}, "IPv4 -> RSS over 4 queues");

  // ---- Traffic ----
  struct Event {
    std::string what;
    sim::Function* sender;  // nullptr: from the wire
    std::vector<uint8_t> frame;
  };
  std::vector<Event> events;
  // Remote VM 10.<net>.0.<host>:<sport> to a local VM's 10.<net>.0.10:<dport>, in VXLAN `vni`.
  auto from_remote = [&](uint32_t vni, int net, int host, uint16_t sport, uint16_t dport) {
    const std::string src = absl::StrFormat("10.%d.0.%d", net, host),
                      dst = absl::StrFormat("10.%d.0.10", net);
    const std::string smac = absl::StrFormat("02:00:00:00:%02x:%02x", net, host);
    events.push_back({absl::StrFormat("wire: VXLAN VNI %d, %s:%d -> %s:%d", vni, src, sport, dst, dport),
                      nullptr, FromRemote(vni, VmTcp(smac.c_str(), src.c_str(), sport, dst.c_str(), dport))});
  };
  for (int i = 0; i < 2; ++i) from_remote(kVni1, 1, 20 + i, 40000 + i, 80);
  for (int i = 0; i < 6; ++i) from_remote(kVni2, 2, 20 + i, 50000 + 13 * i, 443);  // RSS spreads these
  events.push_back({"wire: VXLAN VNI 300 (no such overlay)", nullptr,
                    FromRemote(300, VmTcp("02:00:00:00:03:20", "10.3.0.20", 1, "10.3.0.10", 2))});
  events.push_back({"VF1 sends 10.1.0.10:80 -> 10.1.0.20:40000", &vf1,
                    sim::BuildFrame(VmTcp("02:00:00:00:01:10", "10.1.0.10", 80, "10.1.0.20", 40000))});
  events.push_back({"VF2 sends 10.2.0.10:443 -> 10.2.0.20:50000", &vf2,
                    sim::BuildFrame(VmTcp("02:00:00:00:02:10", "10.2.0.10", 443, "10.2.0.20", 50000))});

  std::vector<std::vector<uint8_t>> wire;
  for (size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    sim::Verdict v;
    std::vector<sim::Frame> view = {sim::Frame(e.frame)};
    absl::Span<sim::Verdict> out(&v, 1);
    absl::Status s =
        e.sender ? e.sender->Send(view, out, /*trace=*/true) : nic.ReceiveFromWire(view, out, /*trace=*/true);
    if (!s.ok()) {
      absl::FPrintF(stderr, "%s\n", s.ToString());
      return 1;
    }
    absl::PrintF("#%d %s (%d bytes)\n   -> %s\n", i + 1, e.what, e.frame.size(), Where(v, queue_names));
    for (const sim::Hop& hop : v.path) {
      const std::string stage = StageName(hop);
      if (hop.rule_id == 0) {
        absl::PrintF("      %s: no rule -> the domain's default\n", stage);
      } else {
        absl::PrintF("      %s, %s: matcher \"%s\", rule \"%s\"\n", stage, names[hop.table_id],
                     names[hop.matcher_id], names[hop.rule_id]);
      }
    }
    while (std::optional<std::vector<uint8_t>> f = nic.PollWire()) {
      absl::PrintF("      on the wire: %d bytes\n", f->size());
      wire.push_back(*std::move(f));
    }
  }

  absl::PrintF("\nFlow counters:\n");
  for (uint32_t i = 0; i < 4; ++i) {
    uint64_t packets = 0, bytes = 0;
    if (absl::Status s = nic.QueryCounter(counters + i, &packets, &bytes); !s.ok()) {
      absl::FPrintF(stderr, "%s\n", s.ToString());
      return 1;
    }
    absl::PrintF("  %-18s %3d packets %6d bytes\n", counter_names[i], packets, bytes);
  }

  absl::PrintF("\nReceive queues:\n");
  auto drain = [&](sim::Function& fn, uint32_t qpn) {
    std::vector<std::string> entries;
    while (std::optional<sim::RxCompletion> c = fn.queue(qpn)->Poll()) {
      entries.push_back(c->has_flow_tag ? absl::StrFormat("%dB tag 0x%x", c->byte_len, c->flow_tag)
                                        : absl::StrFormat("%dB", c->byte_len));
    }
    absl::PrintF("  vport %d %-5s qp 0x%x: %d frame(s) [%s]\n", fn.vport(), queue_names[qpn], qpn,
                 entries.size(), absl::StrJoin(entries, ", "));
  };
  drain(vf1, vf1_q);
  for (uint32_t q : vf2_queues) drain(vf2, q);

  if (absl::Status s = sim::WritePcapFile(pcap_path, wire); !s.ok()) {
    absl::FPrintF(stderr, "%s\n", s.ToString());
    return 1;
  }
  absl::PrintF("\n%d frame(s) sent out of the uplink written to %s (tshark -V -r %s)\n", wire.size(),
               pcap_path, pcap_path);
  return 0;
}
