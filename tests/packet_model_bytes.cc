#include "tests/packet_model_bytes.h"

#include <algorithm>

namespace drsim::testing {
namespace {

using Bytes = std::vector<uint8_t>;
using sim::Encap;
using sim::FrameSpec;
using sim::L3Kind;

void Be16(Bytes& b, uint32_t v) {
  b.push_back(static_cast<uint8_t>(v >> 8));
  b.push_back(static_cast<uint8_t>(v));
}
void Be32(Bytes& b, uint32_t v) {
  Be16(b, v >> 16);
  Be16(b, v & 0xffff);
}

size_t L4HeaderLen(uint8_t protocol) {
  switch (protocol) {
    case sim::kIpProtoTcp:
      return 20;
    case sim::kIpProtoUdp:
    case sim::kIpProtoIcmp:
    case sim::kIpProtoIcmpv6:
      return 8;
    default:
      return 0;
  }
}

size_t L4Len(const FrameSpec& s) {
  return (s.fragment_offset == 0 ? L4HeaderLen(s.protocol) : 0) + s.payload_len;
}

// The L3 packet's length (the payload alone when there is no L3).
size_t L3Len(const FrameSpec& s) {
  switch (s.l3) {
    case L3Kind::kIpv4:
      return (5 + s.ipv4_option_words) * 4u + L4Len(s);
    case L3Kind::kIpv6:
      return 40 + 8 * s.ipv6_extensions.size() + L4Len(s);
    case L3Kind::kNone:
      break;
  }
  return s.payload_len;
}

size_t L2Len(const FrameSpec& s) { return 14 + 4 * s.vlans.size(); }

bool TunnelCarriesEthernet(const sim::TunnelSpec& t) {
  return t.kind == Encap::kVxlan || (t.kind == Encap::kVxlanGpe && t.gpe_next_protocol == 3) ||
         (t.kind == Encap::kGeneve && t.geneve_protocol == 0x6558) ||
         (t.kind == Encap::kGre && t.gre_protocol == 0x6558);
}

// The inner packet: a whole Ethernet frame or its L3 packet, cut from the plain builder's frame.
Bytes InnerBytes(const sim::TunnelFrameSpec& t) {
  const Bytes frame = sim::BuildFrame(t.inner);
  const size_t begin = TunnelCarriesEthernet(t.tunnel) ? 0 : L2Len(t.inner);
  return Bytes(frame.begin() + begin, frame.begin() + L2Len(t.inner) + L3Len(t.inner));
}

void MplsStack(Bytes& b, const std::vector<sim::MplsLabel>& labels) {
  for (size_t i = 0; i < labels.size(); ++i) {
    const sim::MplsLabel& l = labels[i];
    Be32(b, (l.label & 0xfffff) << 12 | (l.tc & 7u) << 9 | (i + 1 == labels.size() ? 1u : 0u) << 8 | l.ttl);
  }
}

// GTP-U extension headers: length in 4-byte units, content, zero padding, next type.
Bytes GtpuExtensions(const sim::TunnelSpec& t) {
  Bytes b;
  for (size_t i = 0; i < t.gtpu_extensions.size(); ++i) {
    const sim::GtpuExtension& e = t.gtpu_extensions[i];
    const size_t units = (e.content.size() + 2 + 3) / 4;
    b.push_back(static_cast<uint8_t>(units));
    b.insert(b.end(), e.content.begin(), e.content.end());
    b.resize(b.size() + units * 4 - 2 - e.content.size(), 0);
    b.push_back(i + 1 < t.gtpu_extensions.size() ? t.gtpu_extensions[i + 1].type : 0);
  }
  return b;
}

uint16_t InternetChecksum(const Bytes& b) {
  uint32_t sum = 0;
  for (size_t i = 0; i < b.size(); i += 2) sum += b[i] << 8 | (i + 1 < b.size() ? b[i + 1] : 0);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

}  // namespace

bool IsFragmented(const FrameSpec& s) {
  if (s.l3 == L3Kind::kIpv4) return s.more_fragments || s.fragment_offset != 0;
  return std::count(s.ipv6_extensions.begin(), s.ipv6_extensions.end(), 44) != 0;
}

FrameSpec EffectiveOuter(const sim::TunnelFrameSpec& t) {
  FrameSpec o = t.outer;
  const uint16_t ports[] = {0, sim::kUdpPortVxlan,       sim::kUdpPortVxlanGpe, sim::kUdpPortGeneve, 0,
                            0, sim::kUdpPortMplsOverUdp, sim::kUdpPortGtpu,     sim::kUdpPortRoceV2};
  static_assert(static_cast<int>(Encap::kRoceV2) == 8, "ports[] follows the Encap order");
  if (t.tunnel.kind == Encap::kGre) o.protocol = sim::kIpProtoGre;
  if (uint16_t port = ports[static_cast<int>(t.tunnel.kind)]) {
    o.protocol = sim::kIpProtoUdp;
    o.dport = port;
  }
  return o;
}

Bytes WireL4Payload(const FrameSpec& s) {
  const size_t frame = L2Len(s) + L3Len(s);
  Bytes b(s.payload_len, 0xab);
  if (frame < 60) b.resize(b.size() + 60 - frame, 0);
  return b;
}

GtpuLayout GtpuLayoutOf(const sim::TunnelFrameSpec& t) {
  const sim::TunnelSpec& tn = t.tunnel;
  const bool ext = !tn.gtpu_extensions.empty();
  GtpuLayout g;
  g.flags = static_cast<uint8_t>(0x30 | (ext ? 0x04 : 0) | (tn.gtpu_seq_present ? 0x02 : 0));
  g.optional = ext || tn.gtpu_seq_present;
  const Bytes exts = GtpuExtensions(tn);
  const size_t length = (g.optional ? 4 : 0) + exts.size() + InnerBytes(t).size();
  g.dw0 = uint32_t{g.flags} << 24 | uint32_t{tn.gtpu_msg_type} << 16 | static_cast<uint32_t>(length & 0xffff);
  g.dw2 = (tn.gtpu_seq_present ? uint32_t{tn.gtpu_seq} << 16 : 0) | (ext ? tn.gtpu_extensions[0].type : 0);
  if (ext) g.first_ext_dw0 = uint32_t{exts[0]} << 24 | uint32_t{exts[1]} << 16 | exts[2] << 8 | exts[3];
  return g;
}

Bytes TunnelBytes(const sim::TunnelFrameSpec& t) {
  const sim::TunnelSpec& tn = t.tunnel;
  const uint32_t vni = tn.vni & 0xffffff;
  Bytes b;
  switch (tn.kind) {
    case Encap::kVxlan:
      Be32(b, 0x08000000);
      Be32(b, vni << 8);
      break;
    case Encap::kVxlanGpe:
      Be32(b, uint32_t{tn.gpe_flags} << 24 | tn.gpe_next_protocol);
      Be32(b, vni << 8);
      break;
    case Encap::kGeneve: {
      Bytes options;
      for (const sim::GeneveOption& o : tn.geneve_options) {
        const size_t words = std::min<size_t>(o.data.size(), 31);
        Be32(options, uint32_t{o.option_class} << 16 | uint32_t{o.type} << 8 | static_cast<uint32_t>(words));
        for (size_t w = 0; w < words; ++w) Be32(options, o.data[w]);
      }
      const uint32_t opt_len = static_cast<uint32_t>(options.size() / 4) & 0x3f;
      Be32(b, opt_len << 24 | (tn.geneve_oam ? 0x800000u : 0) | (tn.geneve_critical ? 0x400000u : 0) |
                  tn.geneve_protocol);
      Be32(b, vni << 8);
      b.insert(b.end(), options.begin(), options.end());
      break;
    }
    case Encap::kGre:
      Be16(b, (tn.gre_checksum ? 0x8000 : 0) | (tn.gre_key_present ? 0x2000 : 0) |
                  (tn.gre_seq_present ? 0x1000 : 0));
      Be16(b, tn.gre_protocol);
      if (tn.gre_checksum) Be32(b, 0);
      if (tn.gre_key_present) Be32(b, tn.gre_key);
      if (tn.gre_seq_present) Be32(b, tn.gre_seq);
      if (tn.gre_protocol == 0x8847 || tn.gre_protocol == 0x8848) MplsStack(b, tn.mpls);
      break;
    case Encap::kMpls:
    case Encap::kMplsOverUdp:
      MplsStack(b, tn.mpls);
      break;
    case Encap::kGtpu: {
      const GtpuLayout g = GtpuLayoutOf(t);
      Be32(b, g.dw0);
      Be32(b, tn.gtpu_teid);
      if (g.optional) Be32(b, g.dw2);
      const Bytes exts = GtpuExtensions(tn);
      b.insert(b.end(), exts.begin(), exts.end());
      break;
    }
    case Encap::kRoceV2:
    case Encap::kNone:
      return b;
  }
  const Bytes inner = InnerBytes(t);
  b.insert(b.end(), inner.begin(), inner.end());
  if (tn.kind == Encap::kGre && tn.gre_checksum) {
    const uint16_t sum = InternetChecksum(b);
    b[4] = static_cast<uint8_t>(sum >> 8);
    b[5] = static_cast<uint8_t>(sum);
  }
  return b;
}

}  // namespace drsim::testing
