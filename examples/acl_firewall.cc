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
// the NIC, and every verdict is compared with a linear scan of the filter list.
//
//   bazel run -c opt //examples:acl_firewall [-- path/to/filters.txt]
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "classbench/dr_acl.h"
#include "classbench/filter.h"
#include "dr/dr.h"
#include "examples/demo_support.h"
#include "hw/match_params.h"
#include "sim/frame_builder.h"
#include "sim/nic.h"

namespace {

using drsim::classbench::Filter;
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

  // Traffic: for each filter, headers drawn inside its ranges; and as many random headers.
  std::mt19937 rng(7);
  auto in = [&](uint32_t value, uint32_t mask) { return value | (rng() & ~mask); };
  auto port_in = [&](PortRange r) { return static_cast<uint16_t>(r.lo + rng() % (r.hi - r.lo + 1u)); };
  int checked = 0, mismatches = 0, accepted = 0, denied = 0;
  for (int round = 0; round < 20; ++round) {
    for (size_t i = 0; i < filters.size(); ++i) {
      const Filter& f = filters[i];
      for (bool random : {false, true}) {
        uint8_t proto = f.proto_mask ? f.proto : (rng() % 2 ? 6 : 17);
        if (random) proto = rng() % 2 ? 6 : 17;
        sim::FrameSpec s;
        s.protocol = proto;
        s.ipv4_src.value = random ? static_cast<uint32_t>(rng()) : in(f.src, f.src_mask);
        s.ipv4_dst.value = random ? static_cast<uint32_t>(rng()) : in(f.dst, f.dst_mask);
        s.sport = random ? static_cast<uint16_t>(rng()) : port_in(f.sport);
        s.dport = random ? static_cast<uint16_t>(rng()) : port_in(f.dport);
        s.tcp_flags = 0x002;
        const size_t expect = drsim::classbench::FirstMatch(
                                  filters, {s.ipv4_src.value, s.ipv4_dst.value, s.sport, s.dport, proto})
                                  .value_or(filters.size());
        const bool want_accept = expect < filters.size() && accept[expect];
        const sim::Verdict v = nic.ReceiveFromWire(sim::BuildFrame(s));
        const bool got_accept = v.fate == sim::Fate::kQueued;
        const bool same = got_accept == want_accept && (!got_accept || v.flow_tag == expect);
        if (!same && ++mismatches <= 5) {
          absl::PrintF("MISMATCH %s:%d -> %s:%d proto %d: reference filter %d (%s), NIC %s tag %d\n",
                       s.ipv4_src.ToString(), s.sport, s.ipv4_dst.ToString(), s.dport, proto, expect,
                       want_accept ? "accept" : "deny", sim::FateName(v.fate), v.flow_tag);
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
