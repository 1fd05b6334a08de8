// An ACL firewall loaded from a ClassBench filter file. Each line is one filter:
//   @<src ip>/<len> <dst ip>/<len> <sport lo> : <sport hi> <dport lo> : <dport hi> <proto>/<mask>
//   [<flags>/<mask>]
// Earlier filters take precedence. DR matches exact values under a mask, so each filter becomes rules
// under one or more masks: port ranges are split into prefixes (a range covers at most 30 of them). Filter
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
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "dr/dr.h"
#include "examples/demo_support.h"
#include "hw/match_params.h"
#include "sim/frame_builder.h"
#include "sim/nic.h"

namespace {

using drsim::examples::Must;
using drsim::hw::kOuter;
using drsim::hw::MatchBuilder;
namespace dr = drsim::dr;
namespace hw = drsim::hw;
namespace sim = drsim::sim;

struct Range {
  uint16_t lo = 0, hi = 0xffff;
};

struct Filter {
  uint32_t src = 0, src_mask = 0, dst = 0, dst_mask = 0;
  Range sport, dport;
  uint8_t proto = 0, proto_mask = 0;
  bool accept = false;

  bool Matches(uint32_t s, uint32_t d, uint16_t sp, uint16_t dp, uint8_t p) const {
    return (s & src_mask) == src && (d & dst_mask) == dst && sp >= sport.lo && sp <= sport.hi &&
           dp >= dport.lo && dp <= dport.hi && (p & proto_mask) == proto;
  }
};

// "<what> at <file>:<line>:<col>: <why>".
absl::Status Bad(const std::string& file, int line, size_t col, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrFormat("%s:%d:%d: %s", file, line, col + 1, why));
}

uint32_t PrefixMask(int len) { return len == 0 ? 0 : ~0u << (32 - len); }

// Parses one ClassBench filter line (without the leading '@').
absl::StatusOr<Filter> ParseFilter(const std::string& file, int line_no, const std::string& line) {
  // Fields are separated by tabs or runs of spaces; " : " inside port ranges is kept together.
  std::vector<std::pair<std::string, size_t>> fields;  // text, column
  size_t i = 1;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i >= line.size()) break;
    size_t start = i;
    while (
        i < line.size() && line[i] != '\t' &&
        !(line[i] == ' ' && !(i + 1 < line.size() && line[i + 1] == ':') && !(i > 0 && line[i - 1] == ':'))) {
      ++i;
    }
    fields.emplace_back(line.substr(start, i - start), start);
  }
  if (fields.size() < 5 || fields.size() > 6) {
    return Bad(file, line_no, 0,
               absl::StrFormat(
                   "expected 5 or 6 fields (src, dst, sport range, dport range, proto[, flags]), found %d",
                   fields.size()));
  }
  Filter f;
  auto prefix = [&](int k, uint32_t* addr, uint32_t* mask) -> absl::Status {
    const auto& [text, col] = fields[k];
    std::pair<std::string, std::string> parts = absl::StrSplit(text, absl::MaxSplits('/', 1));
    absl::StatusOr<hw::Ipv4Address> a = hw::Ipv4Address::Parse(parts.first);
    int len;
    if (!a.ok()) return Bad(file, line_no, col, absl::StrFormat("bad IPv4 address '%s'", parts.first));
    if (!absl::SimpleAtoi(parts.second, &len) || len < 0 || len > 32) {
      return Bad(file, line_no, col + parts.first.size() + 1,
                 absl::StrFormat("bad prefix length '%s' (0 to 32)", parts.second));
    }
    *mask = PrefixMask(len);
    *addr = a->value & *mask;
    return absl::OkStatus();
  };
  auto range = [&](int k, Range* r) -> absl::Status {
    const auto& [text, col] = fields[k];
    std::vector<std::string> parts = absl::StrSplit(text, ':');
    int lo, hi;
    if (parts.size() != 2 || !absl::SimpleAtoi(absl::StripAsciiWhitespace(parts[0]), &lo) ||
        !absl::SimpleAtoi(absl::StripAsciiWhitespace(parts[1]), &hi) || lo < 0 || hi > 0xffff || lo > hi) {
      return Bad(file, line_no, col,
                 absl::StrFormat("bad port range '%s' (lo : hi, 0 <= lo <= hi <= 65535)", text));
    }
    *r = {static_cast<uint16_t>(lo), static_cast<uint16_t>(hi)};
    return absl::OkStatus();
  };
  if (absl::Status s = prefix(0, &f.src, &f.src_mask); !s.ok()) return s;
  if (absl::Status s = prefix(1, &f.dst, &f.dst_mask); !s.ok()) return s;
  if (absl::Status s = range(2, &f.sport); !s.ok()) return s;
  if (absl::Status s = range(3, &f.dport); !s.ok()) return s;
  const auto& [proto, col] = fields[4];
  std::pair<std::string, std::string> pm = absl::StrSplit(proto, absl::MaxSplits('/', 1));
  uint32_t p, m;
  if (!absl::SimpleHexAtoi(pm.first, &p) || !absl::SimpleHexAtoi(pm.second, &m) || p > 0xff || m > 0xff ||
      (m != 0 && m != 0xff)) {
    return Bad(file, line_no, col, absl::StrFormat("bad protocol '%s' (0xPP/0xFF or 0x00/0x00)", proto));
  }
  f.proto = static_cast<uint8_t>(p & m);
  f.proto_mask = static_cast<uint8_t>(m);
  return f;
}

absl::StatusOr<std::vector<Filter>> LoadFilters(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrFormat("%s: cannot open", path));
  std::vector<Filter> filters;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] != '@') return Bad(path, n, 0, "a filter line starts with '@'");
    absl::StatusOr<Filter> f = ParseFilter(path, n, line);
    if (!f.ok()) return f.status();
    filters.push_back(*f);
  }
  if (filters.empty()) return absl::InvalidArgumentError(absl::StrFormat("%s: no filters", path));
  return filters;
}

// The prefixes (value, mask) that exactly cover [lo, hi].
std::vector<std::pair<uint16_t, uint16_t>> RangeToPrefixes(Range r) {
  std::vector<std::pair<uint16_t, uint16_t>> out;
  uint32_t lo = r.lo;
  const uint32_t hi = r.hi;
  while (lo <= hi) {
    uint32_t size = lo == 0 ? 0x10000 : lo & -lo;  // the largest aligned block starting at lo...
    while (lo + size - 1 > hi) size >>= 1;         // ...that stays inside the range
    out.emplace_back(static_cast<uint16_t>(lo), static_cast<uint16_t>(~(size - 1) & 0xffff));
    lo += size;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "examples/testdata/acl_filters.txt";
  absl::StatusOr<std::vector<Filter>> loaded = LoadFilters(path);
  if (!loaded.ok()) {
    absl::FPrintF(stderr, "%s\n", loaded.status().message());
    return 2;
  }
  std::vector<Filter>& filters = *loaded;
  for (size_t i = 0; i < filters.size(); ++i) filters[i].accept = i % 2 == 0 && i + 1 < filters.size();
  if (filters.size() > 0xffff) {
    absl::FPrintF(stderr, "%s: %d filters; matcher priorities allow 65535\n", path, filters.size());
    return 2;
  }

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

  std::vector<dr::Matcher> matchers;
  std::vector<dr::Action> tags;
  std::vector<dr::Rule> rules;
  for (size_t i = 0; i < filters.size(); ++i) {
    const Filter& f = filters[i];
    tags.push_back(Must(dr::Action::Tag(static_cast<uint32_t>(i)), "tag"));
    std::vector<const dr::Action*> actions = f.accept
                                                 ? std::vector<const dr::Action*>{&tags.back(), &to_accepted}
                                                 : std::vector<const dr::Action*>{&drop};
    const bool ports = f.sport.lo != 0 || f.sport.hi != 0xffff || f.dport.lo != 0 || f.dport.hi != 0xffff;
    std::vector<std::pair<uint16_t, uint16_t>> sports = RangeToPrefixes(f.sport),
                                               dports = RangeToPrefixes(f.dport);
    // One matcher per distinct (sport mask, dport mask) of this filter, all at priority i.
    std::vector<std::pair<std::pair<uint16_t, uint16_t>, size_t>> by_mask;
    for (const auto& sp : sports) {
      for (const auto& dp : dports) {
        MatchBuilder mask, value;
        mask.IpVersion(kOuter, 4);
        value.IpVersion(kOuter, 4);
        if (f.src_mask) mask.Ipv4Src(kOuter, hw::Ipv4Address{f.src_mask}), value.Ipv4Src(kOuter, {f.src});
        if (f.dst_mask) mask.Ipv4Dst(kOuter, hw::Ipv4Address{f.dst_mask}), value.Ipv4Dst(kOuter, {f.dst});
        if (f.proto_mask) mask.IpProtocol(kOuter, f.proto_mask), value.IpProtocol(kOuter, f.proto);
        if (ports) {
          // TCP and UDP ports share the L4 lookup: the tcp_* fields match UDP too.
          if (sp.second) mask.TcpSport(kOuter, sp.second), value.TcpSport(kOuter, sp.first);
          if (dp.second) mask.TcpDport(kOuter, dp.second), value.TcpDport(kOuter, dp.first);
        }
        size_t m = 0;
        for (; m < by_mask.size(); ++m) {
          if (by_mask[m].first == std::make_pair(sp.second, dp.second)) break;
        }
        if (m == by_mask.size()) {
          matchers.push_back(Must(
              dr::Matcher::Create(acl, static_cast<uint16_t>(i), Must(mask.Build(), "mask")), "matcher"));
          by_mask.push_back({{sp.second, dp.second}, matchers.size() - 1});
        }
        absl::StatusOr<dr::Rule> r =
            dr::Rule::Create(matchers[by_mask[m].second], Must(value.Build(), "value"), actions);
        if (!r.ok()) {
          absl::FPrintF(stderr, "filter %d: %s\n", i, r.status().ToString());
          return 1;
        }
        rules.push_back(*std::move(r));
        if (!ports) break;
      }
      if (!ports) break;
    }
  }
  absl::PrintF("%s: %d filters -> %d DR rules in %d matchers\n", path, filters.size(), rules.size(),
               matchers.size());

  // Traffic: for each filter, headers drawn inside its ranges; and as many random headers.
  std::mt19937 rng(7);
  auto in = [&](uint32_t value, uint32_t mask) { return value | (rng() & ~mask); };
  auto port_in = [&](Range r) { return static_cast<uint16_t>(r.lo + rng() % (r.hi - r.lo + 1u)); };
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
        size_t expect = filters.size();
        for (size_t k = 0; k < filters.size(); ++k) {
          if (filters[k].Matches(s.ipv4_src.value, s.ipv4_dst.value, s.sport, s.dport, proto)) {
            expect = k;
            break;
          }
        }
        const bool want_accept = expect < filters.size() && filters[expect].accept;
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
