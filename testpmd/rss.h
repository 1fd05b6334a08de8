// The rss action -> DR TIRs, as the mlx5 PMD builds them.
//
// A TIR hashes a fixed set of fields (IBV_RX_HASH_*), so mlx5 expands an RSS rule by the packet's L3/L4
// kind ("RSS expansion"): IPv4/IPv6 packets carrying TCP or UDP hash addresses and ports when the types ask
// for that protocol (ipv4-tcp, tcp, ...), other IP packets hash addresses when the types ask for the IP
// layer (ip, ipv4, ipv4-other, ipv4-frag, ...), and whatever the types leave out hashes nothing (the first
// queue). l3-src-only/l3-dst-only/l4-src-only/l4-dst-only keep one side. PlanRss lists those cases, most
// specific first, restricted to what the pattern already pins; one case (or cases that all hash the same
// fields) needs a single TIR, more need a dispatch table the engine builds (engine.h).
//
// Defaults follow testpmd: types `ip` (testpmd's rss_hf), queues 0..rx_queues-1; and mlx5: its 40-byte
// default key, Toeplitz. The queue list becomes an RQ indirection table of the next power of two entries,
// repeating the list as mlx5 does. symmetric_toeplitz hashes with mlx5's symmetric-or-xor. `level 2` hashes
// the headers behind the pattern's tunnel item (IBV_RX_HASH_INNER; the cases follow the pattern's inner
// layers and the dispatch matches inner fields); without a tunnel item it is an error, as in mlx5. Rejected
// (Unimplemented): simple_xor, level > 2, and types the TIR cannot hash (anything but IPv4/IPv6 addresses and
// TCP/UDP ports).
//
// Pure functions; thread-safe.
#ifndef DRSIM_TESTPMD_RSS_H_
#define DRSIM_TESTPMD_RSS_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/toeplitz.h"
#include "testpmd/ast.h"
#include "testpmd/pattern.h"

namespace drsim::testpmd {

struct RssCase {
  std::optional<L3> l3;  // nullopt: any packet
  std::optional<L4> l4;  // kTcp / kUdp, or nullopt: any protocol of that L3
  uint64_t hash_fields = 0;
};

struct RssPlan {
  bool inner = false;            // level 2: the cases and hash fields are the inner headers
  std::vector<RssCase> cases;    // most specific first; one entry: no dispatch needed
  std::vector<uint16_t> queues;  // queue indices, a power-of-two count
  std::vector<uint8_t> key;
  sim::RssSymmetry symmetry = sim::RssSymmetry::kNone;
};

// mlx5's default RSS key (mlx5_rss_hash_default_key).
const std::vector<uint8_t>& Mlx5DefaultRssKey();

// The plan of `rss` on a rule matching `pattern` on a port with `rx_queues` queues. Errors at the action or
// the offending parameter value.
absl::StatusOr<RssPlan> PlanRss(const Action& rss, const PatternInfo& pattern, int rx_queues);

}  // namespace drsim::testpmd

#endif  // DRSIM_TESTPMD_RSS_H_
