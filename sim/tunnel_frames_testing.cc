#include "sim/tunnel_frames_testing.h"

namespace drsim::sim {

FrameSpec Spec(L3Kind l3) {
  FrameSpec s;
  s.dmac = *hw::MacAddress::Parse("02:00:00:00:00:01");
  s.smac = *hw::MacAddress::Parse("02:00:00:00:00:02");
  s.l3 = l3;
  s.ipv4_src = *hw::Ipv4Address::Parse("10.0.0.1");
  s.ipv4_dst = *hw::Ipv4Address::Parse("10.0.0.2");
  s.ipv6_src = *hw::Ipv6Address::Parse("2001:db8::1");
  s.ipv6_dst = *hw::Ipv6Address::Parse("2001:db8::2");
  s.sport = 49152;
  return s;
}

TunnelFrameSpec Tunnel(Encap kind) {
  TunnelFrameSpec t;
  t.outer = Spec(L3Kind::kIpv4);
  t.tunnel.kind = kind;
  t.inner = Spec(L3Kind::kIpv4);
  t.inner.dmac = *hw::MacAddress::Parse("0a:00:00:00:00:0a");
  t.inner.ipv4_src = *hw::Ipv4Address::Parse("192.168.0.1");
  t.inner.ipv4_dst = *hw::Ipv4Address::Parse("192.168.0.2");
  t.inner.protocol = kIpProtoTcp;
  t.inner.sport = 1234;
  t.inner.dport = 80;
  t.inner.seq = 0x01020304;
  t.inner.ack = 0x05060708;
  t.inner.payload_len = 10;
  return t;
}

std::vector<TunnelFrameSpec> EveryTunnelKind() {
  std::vector<TunnelFrameSpec> specs;
  for (Encap kind : {Encap::kVxlan, Encap::kVxlanGpe, Encap::kGeneve, Encap::kGre, Encap::kMpls,
                     Encap::kMplsOverUdp, Encap::kGtpu, Encap::kRoceV2}) {
    TunnelFrameSpec t = Tunnel(kind);
    t.tunnel.mpls = {{1, 0, 1}, {2, 0, 2}};
    t.tunnel.geneve_options = {{0x0102, 0x80, {1, 2}}};
    t.tunnel.gtpu_extensions = {{0x85, {0, 1}}};
    t.tunnel.gre_key_present = true;
    t.inner.l3 = kind == Encap::kGtpu ? L3Kind::kIpv6 : L3Kind::kIpv4;
    t.inner.ipv6_extensions = {0};
    specs.push_back(t);
  }
  return specs;
}

std::vector<uint8_t> Damaged(std::vector<uint8_t> f, std::mt19937& rng) {
  for (int flips = 1 + rng() % 3; flips > 0; --flips)
    f[rng() % f.size()] ^= static_cast<uint8_t>(1 << rng() % 8);
  f.resize(f.size() - rng() % 16);
  return f;
}

}  // namespace drsim::sim
