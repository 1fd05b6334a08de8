#include "sim/frame_builder.h"

#include <cstring>

#include "hw/byte_order.h"
#include "sim/roce_entropy.h"

namespace drsim::sim {
namespace {

using Bytes = std::vector<uint8_t>;
using hw::StoreBe16;
using hw::StoreBe32;

// One's-complement sum of 16-bit words (RFC 1071), not yet folded or inverted.
uint32_t SumWords(const uint8_t* p, size_t n, uint32_t sum = 0) {
  for (; n >= 2; p += 2, n -= 2) sum += hw::LoadBe16(p);
  if (n) sum += static_cast<uint32_t>(p[0]) << 8;
  return sum;
}

uint16_t Fold(uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

void Append(Bytes& f, size_t n) { f.resize(f.size() + n, 0); }
void AppendBytes(Bytes& f, const Bytes& b) { f.insert(f.end(), b.begin(), b.end()); }
void AppendBe16(Bytes& f, uint16_t v) {
  Append(f, 2);
  StoreBe16(f.data() + f.size() - 2, v);
}
void AppendBe32(Bytes& f, uint32_t v) {
  Append(f, 4);
  StoreBe32(f.data() + f.size() - 4, v);
}

// Writes the L4 header at f[l4..] (the payload after it is already in place) and its checksum. `pseudo`
// is the pseudo-header sum.
void FillL4(const FrameSpec& s, Bytes& f, size_t l4, uint32_t pseudo) {
  uint8_t* p = f.data() + l4;
  const size_t l4_len = f.size() - l4;
  size_t checksum_at = 0;
  switch (s.protocol) {
    case kIpProtoTcp:
      StoreBe16(p, s.sport);
      StoreBe16(p + 2, s.dport);
      StoreBe32(p + 4, s.seq);
      StoreBe32(p + 8, s.ack);
      p[12] = static_cast<uint8_t>(5 << 4 | ((s.tcp_flags >> 8) & 1));
      p[13] = static_cast<uint8_t>(s.tcp_flags);
      StoreBe16(p + 14, s.tcp_window);
      checksum_at = 16;
      break;
    case kIpProtoUdp:
      StoreBe16(p, s.sport);
      StoreBe16(p + 2, s.dport);
      StoreBe16(p + 4, static_cast<uint16_t>(l4_len));
      checksum_at = 6;
      break;
    case kIpProtoIcmp:
    case kIpProtoIcmpv6:
      p[0] = s.icmp_type;
      p[1] = s.icmp_code;
      StoreBe32(p + 4, s.icmp_data);
      checksum_at = 2;
      if (s.protocol == kIpProtoIcmp) pseudo = 0;  // ICMPv4 has no pseudo-header
      break;
    default:
      return;
  }
  if (s.zero_checksums) return;
  uint16_t sum = Fold(SumWords(p, l4_len, pseudo));
  if (s.protocol == kIpProtoUdp && sum == 0) sum = 0xffff;
  StoreBe16(p + checksum_at, sum);
}

size_t L4HeaderLen(uint8_t protocol) {
  switch (protocol) {
    case kIpProtoTcp:
      return 20;
    case kIpProtoUdp:
    case kIpProtoIcmp:
    case kIpProtoIcmpv6:
      return 8;
    default:
      return 0;
  }
}

// Ethernet header and VLAN tags, ending with `ethertype`.
void AppendL2(const FrameSpec& s, uint16_t ethertype, Bytes& f) {
  const size_t at = f.size();
  Append(f, 12);
  std::memcpy(f.data() + at, s.dmac.bytes.data(), 6);
  std::memcpy(f.data() + at + 6, s.smac.bytes.data(), 6);
  for (const VlanTag& tag : s.vlans) {
    AppendBe16(f, tag.tpid);
    AppendBe16(f, tag.tci);
  }
  AppendBe16(f, ethertype);
}

uint16_t L2Ethertype(const FrameSpec& s) {
  return s.l3 == L3Kind::kIpv4 ? 0x0800 : s.l3 == L3Kind::kIpv6 ? 0x86dd : s.ethertype;
}

// The IP packet of `s` with `payload` after its L4 header (the whole L4 data for protocols without a
// header we know and for later fragments); the raw payload alone when s.l3 is kNone.
void AppendL3(const FrameSpec& s, const Bytes& payload, Bytes& f) {
  const size_t l3 = f.size();
  const bool has_l4 = s.fragment_offset == 0;  // later fragments carry payload only
  const size_t l4_len = (has_l4 ? L4HeaderLen(s.protocol) : 0) + payload.size();

  if (s.l3 == L3Kind::kIpv4) {
    const size_t ihl = 5 + s.ipv4_option_words;
    Append(f, ihl * 4);
    uint8_t* ip = f.data() + l3;
    ip[0] = static_cast<uint8_t>(0x40 | ihl);
    ip[1] = static_cast<uint8_t>(s.dscp << 2 | (s.ecn & 3));
    StoreBe16(ip + 2, static_cast<uint16_t>(ihl * 4 + l4_len));
    StoreBe16(ip + 4, 0x1234);
    StoreBe16(ip + 6, static_cast<uint16_t>((s.more_fragments ? 0x2000 : 0) | (s.fragment_offset & 0x1fff)));
    ip[8] = s.ttl;
    ip[9] = s.protocol;
    StoreBe32(ip + 12, s.ipv4_src.value);
    StoreBe32(ip + 16, s.ipv4_dst.value);
    std::memset(ip + 20, 1, s.ipv4_option_words * 4);  // NOP options
    if (!s.zero_checksums) StoreBe16(ip + 10, Fold(SumWords(ip, ihl * 4)));
    const size_t l4 = f.size();
    Append(f, l4_len - payload.size());
    AppendBytes(f, payload);
    if (has_l4) {
      uint32_t pseudo = SumWords(f.data() + l3 + 12, 8) + s.protocol + static_cast<uint32_t>(l4_len);
      FillL4(s, f, l4, pseudo);
    }
  } else if (s.l3 == L3Kind::kIpv6) {
    Append(f, 40);
    // Extension headers: each 8 bytes, chained by their first byte.
    uint8_t first_next = s.ipv6_extensions.empty() ? s.protocol : s.ipv6_extensions[0];
    for (size_t i = 0; i < s.ipv6_extensions.size(); ++i) {
      const size_t at = f.size();
      Append(f, 8);
      f[at] = i + 1 < s.ipv6_extensions.size() ? s.ipv6_extensions[i + 1] : s.protocol;
      if (s.ipv6_extensions[i] == 44) {
        StoreBe16(f.data() + at + 2,
                  static_cast<uint16_t>(s.fragment_offset << 3 | (s.more_fragments ? 1 : 0)));
        StoreBe32(f.data() + at + 4, 0xcafe);
      } else if (s.ipv6_extensions[i] == 51) {
        f[at + 1] = 0;  // AH: (0 + 2) * 4 = 8 bytes
      } else {
        f[at + 1] = 0;  // (0 + 1) * 8 = 8 bytes
        f[at + 2] = 1;  // options: PadN filling the rest; routing: type 1
        // Routing: segments left 0, so every node skips the header (RFC 8200 4.4); with a non-zero
        // count and a type it does not know, the destination must discard the packet.
        f[at + 3] = s.ipv6_extensions[i] == 43 ? 0 : 4;
      }
    }
    const size_t l4 = f.size();
    Append(f, l4_len - payload.size());
    AppendBytes(f, payload);
    uint8_t* ip = f.data() + l3;
    const uint32_t traffic_class = static_cast<uint32_t>(s.dscp << 2 | (s.ecn & 3));
    StoreBe32(ip, 6u << 28 | traffic_class << 20 | (s.flow_label & 0xfffff));
    StoreBe16(ip + 4, static_cast<uint16_t>(f.size() - l3 - 40));
    ip[6] = first_next;
    ip[7] = s.ttl;
    std::memcpy(ip + 8, s.ipv6_src.bytes.data(), 16);
    std::memcpy(ip + 24, s.ipv6_dst.bytes.data(), 16);
    if (has_l4) {
      uint32_t pseudo = SumWords(ip + 8, 32) + s.protocol + static_cast<uint32_t>(l4_len);
      FillL4(s, f, l4, pseudo);
    }
  } else {
    AppendBytes(f, payload);
  }
}

Bytes Filler(size_t n) { return Bytes(n, 0xab); }

// ---- Tunnel headers ------------------------------------------------------------------------------

void AppendMplsStack(const std::vector<MplsLabel>& labels, Bytes& f) {
  for (size_t i = 0; i < labels.size(); ++i) {
    const MplsLabel& l = labels[i];
    const uint32_t bos = i + 1 == labels.size() ? 1 : 0;
    AppendBe32(f, (l.label & 0xfffff) << 12 | (l.tc & 7u) << 9 | bos << 8 | l.ttl);
  }
}

bool IsMplsEthertype(uint16_t type) { return type == 0x8847 || type == 0x8848; }

// The inner frame: whole Ethernet frame or L3 and up, as the tunnel requires.
Bytes InnerBytes(const TunnelFrameSpec& t) {
  Bytes inner;
  if (CarriesEthernet(t.tunnel)) AppendL2(t.inner, L2Ethertype(t.inner), inner);
  AppendL3(t.inner, Filler(t.inner.payload_len), inner);
  return inner;
}

void AppendGeneve(const TunnelSpec& t, const Bytes& inner, Bytes& f) {
  const size_t at = f.size();
  Append(f, 8);
  size_t opt_words = 0;
  for (const GeneveOption& o : t.geneve_options) {
    const size_t words = o.data.size() > 31 ? 31 : o.data.size();
    AppendBe16(f, o.option_class);
    f.push_back(o.type);
    f.push_back(static_cast<uint8_t>(words));  // reserved bits 0, length in 4-byte units
    for (size_t w = 0; w < words; ++w) AppendBe32(f, o.data[w]);
    opt_words += 1 + words;
  }
  uint8_t* g = f.data() + at;
  g[0] = static_cast<uint8_t>(opt_words & 0x3f);  // version 0
  g[1] = static_cast<uint8_t>((t.geneve_oam ? 0x80 : 0) | (t.geneve_critical ? 0x40 : 0));
  StoreBe16(g + 2, t.geneve_protocol);
  StoreBe32(g + 4, (t.vni & 0xffffff) << 8);
  AppendBytes(f, inner);
}

void AppendGre(const TunnelSpec& t, const Bytes& inner, Bytes& f) {
  const size_t at = f.size();
  const uint16_t flags = (t.gre_checksum ? 0x8000 : 0) | (t.gre_key_present ? 0x2000 : 0) |
                         (t.gre_seq_present ? 0x1000 : 0) | (t.gre_ack_present ? 0x0080 : 0) |
                         (t.gre_version & 7);
  AppendBe16(f, flags);
  AppendBe16(f, t.gre_protocol);
  if (t.gre_checksum) AppendBe32(f, 0);  // checksum (below) and reserved1
  if (t.gre_key_present) AppendBe32(f, t.gre_key);
  if (t.gre_seq_present) AppendBe32(f, t.gre_seq);
  if (t.gre_ack_present) AppendBe32(f, t.gre_ack);
  if (IsMplsEthertype(t.gre_protocol)) AppendMplsStack(t.mpls, f);
  AppendBytes(f, inner);
  if (t.gre_checksum) StoreBe16(f.data() + at + 4, Fold(SumWords(f.data() + at, f.size() - at)));
}

void AppendGtpu(const TunnelSpec& t, const Bytes& inner, Bytes& f) {
  const size_t at = f.size();
  const bool ext = !t.gtpu_extensions.empty();
  const bool optional = ext || t.gtpu_seq_present;
  f.push_back(static_cast<uint8_t>(0x30 | (ext ? 0x04 : 0) | (t.gtpu_seq_present ? 0x02 : 0)));
  f.push_back(t.gtpu_msg_type);
  AppendBe16(f, 0);  // length, below
  AppendBe32(f, t.gtpu_teid);
  if (optional) {
    AppendBe16(f, t.gtpu_seq_present ? t.gtpu_seq : 0);
    f.push_back(0);  // N-PDU number
    f.push_back(ext ? t.gtpu_extensions[0].type : 0);
  }
  for (size_t i = 0; i < t.gtpu_extensions.size(); ++i) {
    const GtpuExtension& e = t.gtpu_extensions[i];
    const size_t units = (e.content.size() + 2 + 3) / 4;
    f.push_back(static_cast<uint8_t>(units));
    AppendBytes(f, e.content);
    Append(f, units * 4 - 2 - e.content.size());
    f.push_back(i + 1 < t.gtpu_extensions.size() ? t.gtpu_extensions[i + 1].type : 0);
  }
  AppendBytes(f, inner);
  StoreBe16(f.data() + at + 2, static_cast<uint16_t>(f.size() - at - 8));
}

void AppendBth(const TunnelSpec& t, size_t payload_len, Bytes& f) {
  const size_t pad = (4 - payload_len % 4) % 4;
  f.push_back(t.bth_opcode);
  f.push_back(static_cast<uint8_t>(pad << 4));  // SE 0, M 0, pad count, transport version 0
  AppendBe16(f, t.bth_pkey);
  AppendBe32(f, t.bth_dst_qp & 0xffffff);  // reserved byte, destination QP
  AppendBe32(f, (t.bth_ack_req ? 0x80000000u : 0) | (t.bth_psn & 0xffffff));
  AppendBytes(f, Filler(payload_len));
  Append(f, pad);
  AppendBe32(f, kRoceIcrc);
}

// The bytes after the outer UDP header, or after the outer IP header for GRE.
Bytes TunnelPayload(const TunnelFrameSpec& t) {
  const TunnelSpec& tn = t.tunnel;
  Bytes p;
  switch (tn.kind) {
    case Encap::kVxlan:
    case Encap::kVxlanGpe: {
      const bool gpe = tn.kind == Encap::kVxlanGpe;
      p.push_back(gpe ? tn.gpe_flags : 0x08);
      Append(p, 2);
      p.push_back(gpe ? tn.gpe_next_protocol : 0);
      AppendBe32(p, (tn.vni & 0xffffff) << 8);
      AppendBytes(p, InnerBytes(t));
      break;
    }
    case Encap::kGeneve:
      AppendGeneve(tn, InnerBytes(t), p);
      break;
    case Encap::kGre:
      AppendGre(tn, InnerBytes(t), p);
      break;
    case Encap::kMpls:
    case Encap::kMplsOverUdp:
      AppendMplsStack(tn.mpls, p);
      AppendBytes(p, InnerBytes(t));
      break;
    case Encap::kGtpu:
      AppendGtpu(tn, InnerBytes(t), p);
      break;
    case Encap::kRoceV2:
      AppendBth(tn, t.outer.payload_len, p);
      break;
    case Encap::kNone:
      break;
  }
  return p;
}

uint16_t UdpPort(Encap kind) {
  switch (kind) {
    case Encap::kVxlan:
      return kUdpPortVxlan;
    case Encap::kVxlanGpe:
      return kUdpPortVxlanGpe;
    case Encap::kGeneve:
      return kUdpPortGeneve;
    case Encap::kMplsOverUdp:
      return kUdpPortMplsOverUdp;
    case Encap::kGtpu:
      return kUdpPortGtpu;
    case Encap::kRoceV2:
      return kUdpPortRoceV2;
    default:
      return 0;
  }
}

void PadToMinimum(Bytes& f) {
  if (f.size() < 60) f.resize(60, 0);  // Ethernet minimum (without FCS)
}

}  // namespace

std::vector<uint8_t> BuildFrame(const FrameSpec& s) {
  Bytes f;
  AppendL2(s, L2Ethertype(s), f);
  AppendL3(s, Filler(s.payload_len), f);
  PadToMinimum(f);
  return f;
}

bool CarriesEthernet(const TunnelSpec& t) {
  switch (t.kind) {
    case Encap::kVxlan:
      return true;
    case Encap::kVxlanGpe:
      return t.gpe_next_protocol == 3;
    case Encap::kGeneve:
      return t.geneve_protocol == 0x6558;
    case Encap::kGre:
      return t.gre_protocol == 0x6558;
    default:
      return false;
  }
}

std::vector<uint8_t> BuildFrame(const TunnelFrameSpec& t) {
  if (t.tunnel.kind == Encap::kNone) return BuildFrame(t.outer);
  const Bytes payload = TunnelPayload(t);
  Bytes f;
  if (t.tunnel.kind == Encap::kMpls) {
    AppendL2(t.outer, t.tunnel.mpls_ethertype, f);
    AppendBytes(f, payload);
  } else {
    FrameSpec outer = t.outer;
    if (t.tunnel.kind == Encap::kGre) {
      outer.protocol = kIpProtoGre;
    } else {
      outer.protocol = kIpProtoUdp;
      outer.dport = UdpPort(t.tunnel.kind);
    }
    if (t.tunnel.kind == Encap::kRoceV2 && outer.sport == 0) {
      const TunnelSpec& tn = t.tunnel;
      absl::StatusOr<uint16_t> sport = tn.bth_qp_type == RoceQpType::kRc
                                           ? RoceRcUdpSport(tn.bth_src_qp, tn.bth_dst_qp)
                                           : RoceUdUdpSport(tn.bth_src_qp, tn.bth_dst_qp);
      outer.sport = sport.value_or(0xc000);  // QP numbers outside 24 bits: the bottom of the range
    }
    AppendL2(outer, L2Ethertype(outer), f);
    AppendL3(outer, payload, f);
  }
  PadToMinimum(f);
  return f;
}

}  // namespace drsim::sim
