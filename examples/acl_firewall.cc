// An ACL firewall loaded from a ClassBench filter file (read by classbench/filter.h). Each line is one
// filter:
//   @<src ip>/<len> <dst ip>/<len> <sport lo> : <sport hi> <dport lo> : <dport hi> <proto>/<mask>
//   [<flags>/<mask>]
// Earlier filters take precedence. DR matches exact values under a mask, so each filter becomes rules
// under one or more masks (classbench/dr_acl.h): port ranges are split into prefixes (at most 30). Filter
// i's rules live in matchers of priority i, so the first filter a packet fits decides. ClassBench files
// carry no actions: the example accepts on even filters (tag = filter number, to the "accepted" queue) and
// drops on odd ones and on the final catch-all.
//
// Then traffic made from the filters (headers inside each filter's ranges, and random ones) runs through
// the NIC, and every verdict is compared with a linear scan of the filter list; accepted frames are read
// from their queue.
//
//   bazel run -c opt //examples:acl_firewall [-- path/to/filters.txt]
#include <cstdint>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "classbench/dr_acl.h"
#include "classbench/filter.h"
#include "classbench/header_frame.h"
#include "dr/dr.h"
#include "examples/demo_support.h"
#include "hw/match_params.h"
#include "hw/net_addr.h"
#include "sim/nic.h"
#include "sim/rx_queue.h"

namespace {

using drsim::classbench::Filter;
using drsim::classbench::Header;
using drsim::classbench::PortRange;
using drsim::examples::Must;
namespace dr = drsim::dr;
namespace hw = drsim::hw;
namespace sim = drsim::sim;

}  // namespace

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "examples/testdata/acl_filters.txt";
  absl::StatusOr<std::vector<Filter>> loaded = drsim::classbench::ReadFilterFile(path);
  if (!loaded.ok()) {
    absl::FPrintF(stderr, "%s\n", loaded.status().message());
    return 2;
  }
  const std::vector<Filter>& filters = *loaded;
  std::vector<bool> accept(filters.size());
  for (size_t i = 0; i < filters.size(); ++i) accept[i] = i % 2 == 0 && i + 1 < filters.size();

  sim::Nic nic;
  const uint32_t accepted_q = nic.pf().CreateQueue(1 << 16);
  dr::Domain rx = Must(dr::Domain::Create(nic.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_RX), "domain");
  dr::Table root = Must(dr::Table::Create(rx, 0), "root");
  dr::Table acl = Must(dr::Table::Create(rx, 1), "acl");
  dr::Action to_acl = Must(dr::Action::DestTable(acl), "dest_table");
  dr::Matcher all = Must(dr::Matcher::Create(root, 0, 0, nullptr), "matcher");
  dr::Rule jump = Must(dr::Rule::Create(all, hw::MatchParams(), {&to_acl}), "jump");
  dr::Action to_accepted = Must(dr::Action::DestQp(nic.pf(), accepted_q), "dest_qp");
  dr::Action drop = Must(dr::Action::Drop(), "drop");

  std::vector<dr::Action> tags;
  for (size_t i = 0; i < filters.size(); ++i)
    tags.push_back(Must(dr::Action::Tag(static_cast<uint32_t>(i)), "tag"));
  absl::StatusOr<drsim::classbench::DrAcl> installed =
      drsim::classbench::InstallAcl(acl, filters, [&](size_t i) {
        return accept[i] ? std::vector<const dr::Action*>{&tags[i], &to_accepted}
                         : std::vector<const dr::Action*>{&drop};
      });
  if (!installed.ok()) {
    absl::FPrintF(stderr, "%s: %s\n", path, installed.status().ToString());
    return 1;
  }
  absl::PrintF("%s: %d filters -> %d DR rules in %d matchers\n", path, filters.size(),
               installed->rules.size(), installed->matchers.size());

  // Traffic: for each filter, headers drawn inside its ranges; and as many random headers. Each frame is
  // classified by a linear scan of the filters as the NIC's parser sees it (ports only for TCP and UDP), and
  // an accepted one is read back from its queue, as an application would.
  sim::RxQueue* accepted_queue = nic.pf().queue(accepted_q);
  std::mt19937 rng(7);
  auto in = [&](uint32_t value, uint32_t mask) { return value | (rng() & ~mask); };
  auto port_in = [&](PortRange r) { return static_cast<uint16_t>(r.lo + rng() % (r.hi - r.lo + 1u)); };
  int checked = 0, mismatches = 0, accepted = 0, denied = 0;
  for (int round = 0; round < 20; ++round) {
    for (size_t i = 0; i < filters.size(); ++i) {
      const Filter& f = filters[i];
      for (bool random : {false, true}) {
        Header h;
        h.proto = f.proto_mask && !random ? f.proto : (rng() % 2 ? 6 : 17);
        h.src = random ? static_cast<uint32_t>(rng()) : in(f.src, f.src_mask);
        h.dst = random ? static_cast<uint32_t>(rng()) : in(f.dst, f.dst_mask);
        h.sport = random ? static_cast<uint16_t>(rng()) : port_in(f.sport);
        h.dport = random ? static_cast<uint16_t>(rng()) : port_in(f.dport);
        const Header parsed = drsim::classbench::AsParsed(h);
        const size_t expect = drsim::classbench::FirstMatch(filters, parsed).value_or(filters.size());
        const bool want_accept = expect < filters.size() && accept[expect];
        const sim::Verdict v = nic.ReceiveFromWire(drsim::classbench::FrameOf(h));
        const std::optional<sim::RxCompletion> completion =
            v.fate == sim::Fate::kQueued ? accepted_queue->Poll() : std::nullopt;
        const bool got_accept = completion.has_value();
        const bool same = got_accept == want_accept && (!got_accept || completion->flow_tag == expect);
        if (!same && ++mismatches <= 5) {
          absl::PrintF("MISMATCH %s:%d -> %s:%d proto %d: reference filter %d (%s), NIC %s tag %d\n",
                       hw::Ipv4Address{parsed.src}.ToString(), parsed.sport,
                       hw::Ipv4Address{parsed.dst}.ToString(), parsed.dport, parsed.proto, expect,
                       want_accept ? "accept" : "deny", sim::FateName(v.fate),
                       got_accept ? completion->flow_tag : v.flow_tag);
        }
        ++checked;
        (got_accept ? accepted : denied)++;
      }
    }
  }
  absl::PrintF("%d packets: %d accepted, %d denied; %d differ from a linear scan of the filters\n", checked,
               accepted, denied, mismatches);
  return mismatches == 0 ? 0 : 1;
}
