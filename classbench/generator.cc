#include "classbench/generator.h"

#include <fstream>
#include <random>

#include "absl/strings/str_format.h"
#include "hw/net_addr.h"

namespace drsim::classbench {
namespace {

// The proportions of one profile.
struct Shape {
  double src_wildcard, dst_wildcard;  // P(0.0.0.0/0)
  int src_min_len, dst_min_len;       // other prefixes: uniform in [min, 32]
  // Port classes, cumulative: wildcard, ephemeral (1024:65535), exact, arbitrary range.
  double sport_wild, sport_ephemeral, sport_exact;
  double dport_wild, dport_ephemeral, dport_exact;
  double tcp, udp;  // the rest: any protocol
};

// acl: destination-heavy host rules with exact service ports; fw: wide prefixes, ranges, many wildcards;
// ipc: in between.
constexpr Shape kAcl = {0.25, 0.05, 16, 24, 0.95, 0.98, 1.0, 0.30, 0.40, 0.90, 0.70, 0.20};
constexpr Shape kFw = {0.45, 0.35, 8, 8, 0.70, 0.80, 0.90, 0.30, 0.45, 0.75, 0.55, 0.25};
constexpr Shape kIpc = {0.35, 0.20, 12, 16, 0.85, 0.90, 0.97, 0.45, 0.55, 0.85, 0.60, 0.25};

const Shape& ShapeOf(Profile p) { return p == Profile::kAcl ? kAcl : p == Profile::kFw ? kFw : kIpc; }

// Well-known service ports exact-port filters draw from.
constexpr uint16_t kServices[] = {20,  21,  22,  23,   25,   53,   80,   110,  123,  143,  161,  389,
                                  443, 445, 993, 1433, 1521, 3306, 3389, 5060, 5432, 6379, 8080, 8443};

class Gen {
 public:
  explicit Gen(uint32_t seed) : rng_(seed) {}
  double U() { return std::uniform_real_distribution<double>(0, 1)(rng_); }
  uint32_t Bits() { return static_cast<uint32_t>(rng_()); }
  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  // A prefix from a small pool of networks, so filters overlap as real sets do.
  void Prefix(double wildcard, int min_len, uint32_t* addr, uint32_t* mask) {
    if (U() < wildcard) {
      *addr = *mask = 0;
      return;
    }
    *mask = hw::Ipv4Address::PrefixMask(Int(min_len, 32)).value;
    const uint32_t network = 0x0a000000 | (Int(0, 63) << 16);  // 64 /16s of 10.0.0.0/8
    *addr = (network | (Bits() & 0xffff)) & *mask;
  }

  PortRange Port(double wild, double ephemeral, double exact) {
    const double u = U();
    if (u < wild) return {};
    if (u < ephemeral) return {1024, 0xffff};
    if (u < exact) {
      const uint16_t p = kServices[Int(0, sizeof(kServices) / sizeof(kServices[0]) - 1)];
      return {p, p};
    }
    const int lo = Int(0, 0xfff0), span = Int(1, 4096);
    return {static_cast<uint16_t>(lo), static_cast<uint16_t>(std::min(lo + span, 0xffff))};
  }

 private:
  std::mt19937 rng_;
};

}  // namespace

absl::StatusOr<Profile> ParseProfile(const std::string& name) {
  if (name == "acl") return Profile::kAcl;
  if (name == "fw") return Profile::kFw;
  if (name == "ipc") return Profile::kIpc;
  return absl::InvalidArgumentError(absl::StrFormat("profile '%s': acl, fw or ipc", name));
}

std::vector<Filter> Generate(Profile profile, size_t n, uint32_t seed) {
  const Shape& s = ShapeOf(profile);
  Gen g(seed);
  std::vector<Filter> filters;
  for (size_t i = 0; i + 1 < n; ++i) {
    Filter f;
    g.Prefix(s.src_wildcard, s.src_min_len, &f.src, &f.src_mask);
    g.Prefix(s.dst_wildcard, s.dst_min_len, &f.dst, &f.dst_mask);
    const double proto = g.U();
    if (proto < s.tcp + s.udp) {
      f.proto = proto < s.tcp ? 6 : 17;
      f.proto_mask = 0xff;
      f.sport = g.Port(s.sport_wild, s.sport_ephemeral, s.sport_exact);
      f.dport = g.Port(s.dport_wild, s.dport_ephemeral, s.dport_exact);
    }
    filters.push_back(f);
  }
  if (n > 0) filters.push_back(Filter{});  // the catch-all
  return filters;
}

std::vector<Header> GenerateTrace(const std::vector<Filter>& filters, size_t n, uint32_t seed) {
  Gen g(seed);
  std::vector<Header> trace;
  if (filters.empty()) return trace;
  for (size_t i = 0; i < n; ++i) {
    const Filter& f = filters[g.Int(0, static_cast<int>(filters.size()) - 1)];
    Header h;
    h.src = f.src | (g.Bits() & ~f.src_mask);
    h.dst = f.dst | (g.Bits() & ~f.dst_mask);
    h.sport = static_cast<uint16_t>(g.Int(f.sport.lo, f.sport.hi));
    h.dport = static_cast<uint16_t>(g.Int(f.dport.lo, f.dport.hi));
    h.proto = f.proto_mask ? f.proto : (g.U() < 0.5 ? 6 : 17);
    trace.push_back(h);
  }
  return trace;
}

absl::Status WriteFilterFile(const std::string& path, const std::vector<Filter>& filters) {
  std::ofstream out(path);
  if (!out) return absl::PermissionDeniedError(absl::StrFormat("%s: cannot write", path));
  for (const Filter& f : filters) out << FormatFilter(f) << "\n";
  out.close();
  if (!out) return absl::DataLossError(absl::StrFormat("%s: write failed", path));
  return absl::OkStatus();
}

}  // namespace drsim::classbench
