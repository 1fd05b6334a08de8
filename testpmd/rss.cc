#include "testpmd/rss.h"

#include <infiniband/verbs.h>

#include "absl/strings/str_format.h"

namespace drsim::testpmd {
namespace {

using absl::StatusCode;

// What the RSS types ask for.
struct Selection {
  bool l3[2] = {false, false};                            // [v4, v6]: hash addresses of IP packets
  bool tcp[2] = {false, false}, udp[2] = {false, false};  // hash addresses and ports of TCP/UDP packets
  bool l3_src_only = false, l3_dst_only = false, l4_src_only = false, l4_dst_only = false;
};

// Applies one testpmd RSS type name; false when the TIR cannot hash what it names.
bool Apply(absl::string_view t, Selection& s) {
  if (t == "none") return true;
  if (t == "ip") {
    s.l3[0] = s.l3[1] = true;
  } else if (t == "tcp") {
    s.tcp[0] = s.tcp[1] = true;
  } else if (t == "udp") {
    s.udp[0] = s.udp[1] = true;
  } else if (t == "ipv4" || t == "ipv4-frag" || t == "ipv4-other") {
    s.l3[0] = true;
  } else if (t == "ipv6" || t == "ipv6-frag" || t == "ipv6-other" || t == "ipv6-ex") {
    s.l3[1] = true;
  } else if (t == "ipv4-tcp") {
    s.tcp[0] = true;
  } else if (t == "ipv4-udp") {
    s.udp[0] = true;
  } else if (t == "ipv6-tcp" || t == "ipv6-tcp-ex") {
    s.tcp[1] = true;
  } else if (t == "ipv6-udp" || t == "ipv6-udp-ex") {
    s.udp[1] = true;
  } else if (t == "l3-src-only") {
    s.l3_src_only = true;
  } else if (t == "l3-dst-only") {
    s.l3_dst_only = true;
  } else if (t == "l4-src-only") {
    s.l4_src_only = true;
  } else if (t == "l4-dst-only") {
    s.l4_dst_only = true;
  } else {
    return false;
  }
  return true;
}

uint64_t Fields(const Selection& s, L3 l3, L4 l4) {
  if (l3 == L3::kNone) return 0;
  const int v = l3 == L3::kIpv4 ? 0 : 1;
  const bool ports = (l4 == L4::kTcp && s.tcp[v]) || (l4 == L4::kUdp && s.udp[v]);
  if (!ports && !s.l3[v]) return 0;
  uint64_t f = 0;
  if (!s.l3_dst_only) f |= v == 0 ? IBV_RX_HASH_SRC_IPV4 : IBV_RX_HASH_SRC_IPV6;
  if (!s.l3_src_only) f |= v == 0 ? IBV_RX_HASH_DST_IPV4 : IBV_RX_HASH_DST_IPV6;
  if (ports) {
    const bool tcp = l4 == L4::kTcp;
    if (!s.l4_dst_only) f |= tcp ? IBV_RX_HASH_SRC_PORT_TCP : IBV_RX_HASH_SRC_PORT_UDP;
    if (!s.l4_src_only) f |= tcp ? IBV_RX_HASH_DST_PORT_TCP : IBV_RX_HASH_DST_PORT_UDP;
  }
  return f;
}

}  // namespace

const std::vector<uint8_t>& Mlx5DefaultRssKey() {
  static const std::vector<uint8_t>* key = new std::vector<uint8_t>{
      0x2c, 0xc6, 0x81, 0xd1, 0x5b, 0xdb, 0xf4, 0xf7, 0xfc, 0xa2, 0x83, 0x19, 0xdb, 0x1a,
      0x3e, 0x94, 0x6b, 0x9e, 0x38, 0xd9, 0x2c, 0x9c, 0x03, 0xd1, 0xad, 0x99, 0x44, 0xa7,
      0xd9, 0x56, 0x3d, 0x59, 0x06, 0x3c, 0x25, 0xf3, 0xfc, 0x1f, 0xdc, 0x2a};
  return *key;
}

absl::StatusOr<RssPlan> PlanRss(const Action& rss, const PatternInfo& info, int rx_queues) {
  RssPlan plan;
  if (const ActionArg* func = rss.Find("func")) {
    if (func->value.text == "simple_xor") {
      return ErrorAt(func->value.pos, StatusCode::kUnimplemented,
                     "RSS func simple_xor: a TIR hashes with Toeplitz");
    }
    if (func->value.text == "symmetric_toeplitz") plan.symmetry = sim::RssSymmetry::kOrXor;
  }
  if (const ActionArg* level = rss.Find("level"); level != nullptr && level->value.number > 1) {
    if (level->value.number > 2) {
      return ErrorAt(level->value.pos, StatusCode::kUnimplemented,
                     absl::StrFormat("RSS level %d: mlx5 hashes the outer headers (level 0 or 1) or those "
                                     "behind the first tunnel (level 2)",
                                     level->value.number));
    }
    if (!info.tunnel) {
      return ErrorAt(level->value.pos, StatusCode::kInvalidArgument,
                     "RSS level 2 hashes the inner headers, and the pattern has no tunnel item (mlx5 refuses "
                     "inner RSS on flows that do not match a tunnel)");
    }
    plan.inner = true;
  }
  const HeaderLayers& pattern = plan.inner ? info.inner : info.outer;
  Selection s;
  const ActionArg* types = rss.Find("types");
  if (types == nullptr || types->value.list.empty()) {
    Apply("ip", s);  // testpmd's rss_hf default; mlx5 also takes an empty list as IP
  } else {
    for (const ParamValue& t : types->value.list) {
      if (!Apply(t.text, s)) {
        return ErrorAt(t.pos, StatusCode::kUnimplemented,
                       absl::StrFormat(
                           "RSS type '%s': a TIR hashes IPv4/IPv6 addresses and TCP/UDP ports only", t.text));
      }
    }
  }
  if (plan.symmetry != sim::RssSymmetry::kNone &&
      (s.l3_src_only || s.l3_dst_only || s.l4_src_only || s.l4_dst_only)) {
    return ErrorAt(
        types->pos, StatusCode::kInvalidArgument,
        "symmetric_toeplitz hashes source and destination together: *-src-only/*-dst-only contradict it");
  }

  // The cases the rule can see, most specific first.
  std::vector<L3> l3s;
  if (pattern.l3 == L3::kNone || pattern.l3 == L3::kIpv4) l3s.push_back(L3::kIpv4);
  if (pattern.l3 == L3::kNone || pattern.l3 == L3::kIpv6) l3s.push_back(L3::kIpv6);
  for (L3 l3 : l3s) {
    const uint64_t other = Fields(s, l3, L4::kNone);
    for (L4 l4 : {L4::kTcp, L4::kUdp}) {
      if (pattern.l4 != L4::kNone && pattern.l4 != l4) continue;
      const uint64_t f = Fields(s, l3, l4);
      if (f != other || pattern.l4 == l4) plan.cases.push_back({l3, l4, f});
    }
    if (pattern.l4 == L4::kNone || pattern.l4 == L4::kIcmp || pattern.l4 == L4::kIcmp6) {
      plan.cases.push_back({l3, std::nullopt, other});
    }
  }
  if (pattern.l3 == L3::kNone) plan.cases.push_back({std::nullopt, std::nullopt, 0});
  // A case whose packets would fall to a later, wider case hashing the same fields is not needed.
  for (size_t i = plan.cases.size() - 1; i-- > 0;) {
    for (size_t j = i + 1; j < plan.cases.size(); ++j) {
      const RssCase& wider = plan.cases[j];
      if (wider.l3 && (wider.l3 != plan.cases[i].l3 || wider.l4)) continue;
      if (wider.hash_fields == plan.cases[i].hash_fields) plan.cases.erase(plan.cases.begin() + i);
      break;
    }
  }
  bool uniform = true;
  for (const RssCase& c : plan.cases) uniform &= c.hash_fields == plan.cases.front().hash_fields;
  if (uniform) plan.cases = {{std::nullopt, std::nullopt, plan.cases.front().hash_fields}};
  if (plan.inner) {
    for (RssCase& c : plan.cases) {
      if (c.hash_fields != 0) c.hash_fields |= IBV_RX_HASH_INNER;
    }
  }

  // Queues, padded to a power of two by repetition.
  std::vector<uint16_t> queues;
  if (const ActionArg* q = rss.Find("queues")) {
    for (const ParamValue& v : q->value.list) {
      if (v.number >= static_cast<uint64_t>(rx_queues)) {
        return ErrorAt(v.pos, StatusCode::kInvalidArgument,
                       absl::StrFormat("RSS queue %d is out of range: the port has %d Rx queues",
                                       static_cast<int>(v.number), rx_queues));
      }
      queues.push_back(static_cast<uint16_t>(v.number));
    }
    if (queues.empty()) return ErrorAt(q->pos, StatusCode::kInvalidArgument, "RSS needs at least one queue");
  } else {
    for (int i = 0; i < rx_queues; ++i) queues.push_back(static_cast<uint16_t>(i));
  }
  size_t size = 1;
  while (size < queues.size()) size *= 2;
  for (size_t i = 0; i < size; ++i) plan.queues.push_back(queues[i % queues.size()]);

  plan.key = Mlx5DefaultRssKey();
  const ActionArg* key = rss.Find("key");
  const ActionArg* key_len = rss.Find("key_len");
  if (key != nullptr) plan.key = key->value.bytes;
  if (key_len != nullptr) plan.key.resize(static_cast<size_t>(key_len->value.number), 0);  // pad or truncate
  if (plan.key.size() != Mlx5DefaultRssKey().size()) {
    return ErrorAt(key != nullptr ? key->pos : key_len->pos, StatusCode::kInvalidArgument,
                   absl::StrFormat("RSS key of %d bytes: mlx5 takes a %d-byte key", plan.key.size(),
                                   Mlx5DefaultRssKey().size()));
  }
  return plan;
}

}  // namespace drsim::testpmd
