// An OVS-offload style megaflow cache in the FDB. The switch's policy is an ordered list of wildcard rules
// that only the "slow path" (this program) evaluates. The FDB holds a cache of megaflows: exact matches on
// just the fields the slow path consulted to decide a packet, each with its action and a counter. A packet
// that misses the cache takes the FDB default to the eSwitch manager, whose NIC_RX hands it to the upcall
// queue; the slow path decides it, installs the megaflow and executes the decision by sending the packet
// again. Every tick it reads the counters and evicts megaflows that saw no packet, and it keeps the cache
// under a size limit. Traffic comes in phases with different hot flows, so megaflows are installed and
// evicted while packets flow; every packet's outcome is checked against the policy.
//
//   bazel run -c opt //examples:megaflow_cache
#include <cstdint>
#include <iterator>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "dr/dr.h"
#include "examples/demo_support.h"
#include "hw/match_params.h"
#include "sim/frame_builder.h"
#include "sim/nic.h"
#include "sim/rx_queue.h"

namespace {

using drsim::examples::Must;
using drsim::hw::kOuter;
using drsim::hw::MatchBuilder;
namespace dr = drsim::dr;
namespace hw = drsim::hw;
namespace sim = drsim::sim;

constexpr uint16_t kDrop = 0xfffe;  // a policy decision that is not a vport
constexpr size_t kCacheLimit = 128;
constexpr int kPacketsPerTick = 500;

// The header fields the policy looks at, and a mask over them (0 = not consulted).
struct Key {
  uint32_t src = 0, dst = 0;
  uint8_t proto = 0;
  uint16_t dport = 0;
  Key operator&(const Key& m) const {
    return {src & m.src, dst & m.dst, static_cast<uint8_t>(proto & m.proto),
            static_cast<uint16_t>(dport & m.dport)};
  }
  Key& operator|=(const Key& m) {
    src |= m.src, dst |= m.dst, proto |= m.proto, dport |= m.dport;
    return *this;
  }
  bool operator==(const Key& o) const {
    return src == o.src && dst == o.dst && proto == o.proto && dport == o.dport;
  }
  template <typename H>
  friend H AbslHashValue(H h, const Key& k) {
    return H::combine(std::move(h), k.src, k.dst, k.proto, k.dport);
  }
  MatchBuilder Builder() const {
    MatchBuilder b;
    b.IpVersion(kOuter, 4);
    if (src) b.Ipv4Src(kOuter, hw::Ipv4Address{src});
    if (dst) b.Ipv4Dst(kOuter, hw::Ipv4Address{dst});
    if (proto) b.IpProtocol(kOuter, proto);
    if (dport) b.TcpDport(kOuter, dport);  // the L4 destination port, TCP or UDP
    return b;
  }
};

struct PolicyRule {
  Key value, mask;
  uint16_t out;  // vport, or kDrop
  const char* what;
};

// The switch policy, first match wins.
const std::vector<PolicyRule>& Policy() {
  static const auto* p = new std::vector<PolicyRule>{
      {{0, 0x0a000000, 6, 22}, {0, 0xffffff00, 0xff, 0xffff}, kDrop, "ssh to 10.0.0.0/24: drop"},
      {{0, 0x0a000000, 0, 0}, {0, 0xffffff00, 0, 0}, 1, "10.0.0.0/24: VF1"},
      {{0xc0a80000, 0x0a000100, 17, 0},
       {0xffff0000, 0xffffff00, 0xff, 0},
       2,
       "udp from 192.168.0.0/16 to 10.0.1.0/24: VF2"},
      {{0, 0x0a000100, 0, 0}, {0, 0xffffff00, 0, 0}, 1, "rest of 10.0.1.0/24: VF1"},
      {{}, {}, kDrop, "anything else: drop"},
  };
  return *p;
}

// The slow path: the decision, and the mask of the fields it consulted. Like OVS's staged lookup, each rule
// is checked a field at a time (dst, src, protocol, port) and stops at the first field that rules it out,
// so a megaflow only pins the fields that were needed to tell its packets apart.
std::pair<uint16_t, Key> Decide(const Key& k) {
  Key consulted;
  for (const PolicyRule& r : Policy()) {
    const Key& m = r.mask;
    const Key stages[] = {{0, m.dst, 0, 0}, {m.src, 0, 0, 0}, {0, 0, m.proto, 0}, {0, 0, 0, m.dport}};
    bool match = true;
    for (const Key& stage : stages) {
      consulted |= stage;
      if (!((k & stage) == (r.value & stage))) {
        match = false;
        break;
      }
    }
    if (match) return {r.out, consulted};
  }
  return {kDrop, consulted};
}

struct Megaflow {
  dr::Rule rule;
  uint32_t counter;
  uint64_t last_packets = 0;
};

}  // namespace

int main() {
  sim::Nic nic(2);
  // VF1 and VF2 have no NIC_RX steering: their interfaces receive what the FDB sends them.
  // The eSwitch manager (PF) gets the cache misses: its NIC_RX sends everything to the upcall queue.
  const uint32_t upcall_q = nic.pf().CreateQueue(1 << 16);
  dr::Domain pf_rx = Must(dr::Domain::Create(nic.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_RX), "pf nic_rx");
  dr::Table pf_root = Must(dr::Table::Create(pf_rx, 0), "pf root");
  dr::Matcher pf_all = Must(dr::Matcher::Create(pf_root, 0, 0, nullptr), "pf matcher");
  dr::Action to_upcall = Must(dr::Action::DestQp(nic.pf(), upcall_q), "dest_qp");
  dr::Rule upcall = Must(dr::Rule::Create(pf_all, hw::MatchParams(), {&to_upcall}), "upcall rule");

  dr::Domain fdb = Must(dr::Domain::Create(nic.pf(), MLX5DV_DR_DOMAIN_TYPE_FDB), "fdb");
  dr::Table fdb_root = Must(dr::Table::Create(fdb, 0), "fdb root");
  dr::Table cache = Must(dr::Table::Create(fdb, 1), "cache");
  dr::Action to_cache = Must(dr::Action::DestTable(cache), "dest_table");
  dr::Matcher fdb_all = Must(dr::Matcher::Create(fdb_root, 0, 0, nullptr), "fdb matcher");
  dr::Rule jump = Must(dr::Rule::Create(fdb_all, hw::MatchParams(), {&to_cache}), "jump");
  dr::Action to_vf1 = Must(dr::Action::DestVport(fdb, 1), "vport 1");
  dr::Action to_vf2 = Must(dr::Action::DestVport(fdb, 2), "vport 2");
  dr::Action drop = Must(dr::Action::Drop(), "drop");

  const uint32_t counters = Must(nic.AllocateCounters(kCacheLimit), "counters");
  std::vector<dr::Action> count_actions;
  std::vector<uint32_t> free_counters;
  for (uint32_t i = 0; i < kCacheLimit; ++i) {
    count_actions.push_back(Must(dr::Action::FlowCounter(nic.pf(), counters, i), "flow_counter"));
    free_counters.push_back(kCacheLimit - 1 - i);
  }
  absl::flat_hash_map<Key, dr::Matcher> matchers;            // by consulted mask
  absl::flat_hash_map<std::pair<Key, Key>, Megaflow> flows;  // by (mask, masked key)

  uint64_t installed = 0, evicted_idle = 0, evicted_full = 0, upcalls = 0, wrong = 0, total = 0;
  auto evict = [&](auto it) {
    free_counters.push_back(it->second.counter);
    if (absl::Status s = it->second.rule.Destroy(); !s.ok()) absl::FPrintF(stderr, "%s\n", s.ToString());
    flows.erase(it);
  };
  auto tick = [&] {
    for (auto it = flows.begin(); it != flows.end();) {
      uint64_t packets = 0, bytes = 0;
      (void)nic.QueryCounter(counters + it->second.counter, &packets, &bytes);
      auto next = std::next(it);
      if (packets == it->second.last_packets) {
        evict(it);
        ++evicted_idle;
      } else {
        it->second.last_packets = packets;
      }
      it = next;
    }
  };
  auto install = [&](const Key& mask, const Key& key, uint16_t out) {
    if (free_counters.empty()) {  // full: evict the megaflow seen least since its last check
      auto victim = flows.begin();
      uint64_t least = UINT64_MAX;
      for (auto it = flows.begin(); it != flows.end(); ++it) {
        uint64_t packets = 0, bytes = 0;
        (void)nic.QueryCounter(counters + it->second.counter, &packets, &bytes);
        if (packets - it->second.last_packets < least) least = packets - it->second.last_packets, victim = it;
      }
      evict(victim);
      ++evicted_full;
    }
    auto m = matchers.find(mask);
    if (m == matchers.end()) {
      m = matchers
              .emplace(mask,
                       Must(dr::Matcher::Create(cache, 0, Must(mask.Builder().Build(), "mask")), "matcher"))
              .first;
    }
    const uint32_t c = free_counters.back();
    free_counters.pop_back();
    const dr::Action* fate = out == kDrop ? &drop : out == 1 ? &to_vf1 : &to_vf2;
    uint64_t base = 0, bytes = 0;
    (void)nic.QueryCounter(counters + c, &base, &bytes);
    flows.emplace(std::make_pair(mask, key),
                  Megaflow{Must(dr::Rule::Create(m->second, Must(key.Builder().Build(), "value"),
                                                 {&count_actions[c], fate}),
                                "megaflow"),
                           c, base});
    ++installed;
  };

  // Where a verdict says the frame went, as a policy decision.
  auto outcome = [](const sim::Verdict& v) -> std::optional<uint16_t> {
    if (v.fate == sim::Fate::kDropped) return kDrop;
    if (v.fate == sim::Fate::kPort) return v.vport;
    return std::nullopt;  // to the upcall queue
  };

  std::mt19937 rng(42);
  absl::PrintF("%-6s %8s %8s %8s %10s %9s %8s %8s\n", "phase", "packets", "upcalls", "hit rate", "installed",
               "evicted", "cached", "masks");
  for (int phase = 0; phase < 6; ++phase) {
    // 200 flows per phase, a few of them hot; half of each phase's flows are new.
    std::vector<Key> phase_flows;
    for (int i = 0; i < 200; ++i) {
      const int id = (phase * 100 + i) * 2654435761u % 100000;
      Key k;
      k.src = (id % 3 == 0 ? 0xc0a80000u : 0xac100000u) | (id & 0xffff);
      k.dst = (id % 5 == 0 ? 0x0a000000u : id % 5 < 3 ? 0x0a000100u : 0x0b000000u) | (id % 200);
      k.proto = id % 4 == 0 ? 17 : 6;
      k.dport = id % 7 == 0 ? 22 : static_cast<uint16_t>(1000 + id % 50);
      phase_flows.push_back(k);
    }
    const uint64_t up0 = upcalls, in0 = installed, ev0 = evicted_idle + evicted_full, total0 = total;
    for (int t = 0; t < 8; ++t) {
      for (int p = 0; p < kPacketsPerTick; ++p) {
        const double u = std::uniform_real_distribution<double>(0, 1)(rng);
        const Key& k =
            phase_flows[static_cast<size_t>(u * u * u * phase_flows.size())];  // skewed: few hot flows
        sim::FrameSpec s;
        s.ipv4_src.value = k.src;
        s.ipv4_dst.value = k.dst;
        s.protocol = k.proto;
        s.dport = k.dport;
        s.sport = 40000;
        const std::vector<uint8_t> frame = sim::BuildFrame(s);
        const auto [want, consulted] = Decide(k);
        sim::Verdict v = nic.ReceiveFromWire(frame);
        ++total;
        if (!outcome(v).has_value()) {
          // Upcall: decide, install the megaflow, execute by sending the packet again.
          ++upcalls;
          nic.pf().queue(upcall_q)->Poll();
          install(consulted, k & consulted, want);
          v = nic.ReceiveFromWire(frame);
        }
        wrong += outcome(v) != std::optional<uint16_t>(want);
        nic.function(1)->PollPort();
        nic.function(2)->PollPort();
      }
      tick();
    }
    absl::PrintF("%-6d %8d %8d %7.1f%% %10d %9d %8d %8d\n", phase, total - total0, upcalls - up0,
                 100.0 * (1 - static_cast<double>(upcalls - up0) / (total - total0)), installed - in0,
                 evicted_idle + evicted_full - ev0, flows.size(), matchers.size());
  }
  absl::PrintF(
      "\n%d packets, %d megaflows installed, %d evicted idle, %d evicted for room; %d outcomes differ "
      "from the policy\n",
      total, installed, evicted_idle, evicted_full, wrong);
  for (const PolicyRule& r : Policy()) absl::PrintF("  policy: %s\n", r.what);
  return wrong == 0 ? 0 : 1;
}
