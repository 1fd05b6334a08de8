#include "sim/packet_parser.h"

#include <algorithm>
#include <cstring>

#include "hw/byte_order.h"
#include "sim/plain_ipv4.h"

namespace drsim::sim {
namespace {

using hw::Field;

constexpr uint16_t kEthIpv4 = 0x0800;
constexpr uint16_t kEthIpv6 = 0x86dd;
constexpr uint16_t kEthCvlan = 0x8100;
constexpr uint16_t kEthSvlan = 0x88a8;
constexpr uint16_t kEthMpls = 0x8847;
constexpr uint16_t kEthMplsMulticast = 0x8848;
constexpr uint16_t kEthTeb = 0x6558;  // transparent Ethernet bridging: an Ethernet frame
constexpr uint8_t kProtoIcmp = 1;
constexpr uint8_t kProtoTcp = 6;
constexpr uint8_t kProtoUdp = 17;
constexpr uint8_t kProtoGre = 47;
constexpr uint8_t kProtoIcmpv6 = 58;
constexpr uint16_t kPortVxlan = 4789;
constexpr uint16_t kPortVxlanGpe = 4790;
constexpr uint16_t kPortGeneve = 6081;
constexpr uint16_t kPortMplsOverUdp = 6635;
constexpr uint16_t kPortGtpu = 2152;
constexpr uint16_t kPortRoceV2 = 4791;
constexpr int kMaxMplsLabels = 8;
constexpr int kMaxGtpuExtensions = 8;

// The fields one header stack writes, as compile-time constants so that every field access folds to a
// fixed word offset, shift and mask. The inner.* fields are the outer.* ones shifted by a constant
// (match_fields.inc expands the same list twice); the rest live in misc sections under their own names.
struct OuterStack {
  static constexpr int kSpecShift = 0;
  static constexpr Field kSecondPrio = Field::kOuterSecondPrio, kSecondCfi = Field::kOuterSecondCfi,
                         kSecondVid = Field::kOuterSecondVid, kSecondCvlan = Field::kOuterSecondCvlanTag,
                         kSecondSvlan = Field::kOuterSecondSvlanTag, kFlowLabel = Field::kOuterIpv6FlowLabel,
                         kTcpSeq = Field::kOuterTcpSeqNum, kTcpAck = Field::kOuterTcpAckNum;
  static constexpr bool kIcmp = true;  // the misc3 ICMP fields belong to the outer stack only
};
struct InnerStack {
  static constexpr int kSpecShift =
      static_cast<int>(Field::kInnerSmac47_16) - static_cast<int>(Field::kOuterSmac47_16);
  static constexpr Field kSecondPrio = Field::kInnerSecondPrio, kSecondCfi = Field::kInnerSecondCfi,
                         kSecondVid = Field::kInnerSecondVid, kSecondCvlan = Field::kInnerSecondCvlanTag,
                         kSecondSvlan = Field::kInnerSecondSvlanTag, kFlowLabel = Field::kInnerIpv6FlowLabel,
                         kTcpSeq = Field::kInnerTcpSeqNum, kTcpAck = Field::kInnerTcpAckNum;
  static constexpr bool kIcmp = false;
};
static_assert(static_cast<int>(Field::kInnerDstIp31_0) - static_cast<int>(Field::kOuterDstIp31_0) ==
              InnerStack::kSpecShift);

constexpr Field Next(Field f, int n) { return static_cast<Field>(static_cast<int>(f) + n); }
// The field of stack S that is `outer_field` in the outer stack.
template <typename S>
constexpr Field F(Field outer_field) {
  return Next(outer_field, S::kSpecShift);
}

// The MPLS label fields come in (label, exp, s_bos, ttl) runs; tunnel_header_0..3 are consecutive.
static_assert(static_cast<int>(Field::kOuterFirstMplsTtl) - static_cast<int>(Field::kOuterFirstMplsLabel) ==
              3);
static_assert(static_cast<int>(Field::kTunnelHeader3) - static_cast<int>(Field::kTunnelHeader0) == 3);

// One parse: the frame, the header vector being filled and the layer offsets found.
struct Ctx {
  const uint8_t* p;
  size_t len;
  hw::HeaderVector* hv;
  PacketLayers* layers;
  GeneveOptionSelector geneve_option;

  size_t Room(size_t off) const { return off < len ? len - off : 0; }
  // The same parse, bounded by `end` (a datagram's length): built field by field, as copying the whole
  // struct would read back with wide loads what was just stored narrow, and stall.
  Ctx Within(size_t end) const { return {p, end, hv, layers, geneve_option}; }
  // Copies `n` bytes of the frame to the byte offset of a byte-aligned field.
  void Put(Field f, size_t off, size_t n) const {
    std::memcpy(hv->bytes + hw::Info(f).abs_bit() / 8, p + off, n);
  }
  // Writes a field. A whole byte or half-word is stored directly: reading the word around it back would
  // stall on the narrower stores just made next to it (f is a constant wherever this is inlined).
  void Set(Field f, uint32_t v) const {
    const hw::FieldInfo& fi = hw::Info(f);
    if (fi.abs_bit() % 8 == 0 && fi.width == 8) {
      hv->bytes[fi.abs_bit() / 8] = static_cast<uint8_t>(v);
    } else if (fi.abs_bit() % 8 == 0 && fi.width == 16) {
      hw::StoreBe16(hv->bytes + fi.abs_bit() / 8, static_cast<uint16_t>(v));
    } else {
      hw::SetField(hv->bytes, f, v);
    }
  }
};

// Where one stack's IP packet and its L4 header are (0 = absent).
struct IpLayers {
  size_t l3 = 0;
  size_t end = 0;    // the end of the datagram: its length field bounds what follows (not the padding)
  size_t upper = 0;  // the upper-layer header (after options and extension headers)
  uint8_t protocol = 0;
  bool fragmented = false;
  size_t l4 = 0;
  size_t payload = 0;
};

// Ethernet and up to two VLAN tags. Returns the offset after them (0 when the Ethernet header does not
// fit) and the ethertype after the last tag parsed.
template <typename S>
size_t ParseEthernet(const Ctx& c, size_t off, uint16_t* ethertype) {
  if (c.Room(off) < 14) return 0;
  c.Put(F<S>(Field::kOuterDmac47_16), off, 6);
  c.Put(F<S>(Field::kOuterSmac47_16), off + 6, 6);
  uint16_t type = hw::LoadBe16(c.p + off + 12);
  off += 14;
  // The ethertype reported is the one after the last tag parsed.
  for (int tag = 0; tag < 2 && (type == kEthCvlan || type == kEthSvlan); ++tag) {
    if (c.Room(off) < 4) break;
    const uint16_t tci = hw::LoadBe16(c.p + off);
    const bool svlan = type == kEthSvlan;
    if (tag == 0) {
      c.Set(F<S>(svlan ? Field::kOuterSvlanTag : Field::kOuterCvlanTag), 1);
      c.Set(F<S>(Field::kOuterFirstPrio), tci >> 13);
      c.Set(F<S>(Field::kOuterFirstCfi), (tci >> 12) & 1);
      c.Set(F<S>(Field::kOuterFirstVid), tci & 0xfff);
    } else {
      c.Set(svlan ? S::kSecondSvlan : S::kSecondCvlan, 1);
      c.Set(S::kSecondPrio, tci >> 13);
      c.Set(S::kSecondCfi, (tci >> 12) & 1);
      c.Set(S::kSecondVid, tci & 0xfff);
    }
    type = hw::LoadBe16(c.p + off + 2);
    off += 4;
  }
  c.Set(F<S>(Field::kOuterEthertype), type);
  *ethertype = type;
  return off;
}

// L4 of a first fragment (or an unfragmented packet). Returns the payload offset, or 0.
template <typename S>
size_t ParseL4(const Ctx& c, size_t off, uint8_t proto) {
  const uint8_t* l4 = c.p + off;
  const size_t room = c.Room(off);
  switch (proto) {
    case kProtoTcp: {
      if (room < 20) return 0;
      const size_t hdr = (l4[12] >> 4) * 4u;
      if (hdr < 20 || hdr > room) return 0;
      c.Put(F<S>(Field::kOuterTcpSport), off, 4);  // sport and dport are adjacent in both
      c.Set(F<S>(Field::kOuterTcpFlags), ((l4[12] & 1u) << 8) | l4[13]);
      c.Put(S::kTcpSeq, off + 4, 4);
      c.Put(S::kTcpAck, off + 8, 4);
      return off + hdr;
    }
    case kProtoUdp:
      if (room < 8) return 0;
      c.Put(F<S>(Field::kOuterUdpSport), off, 4);
      return off + 8;
    case kProtoIcmp:
    case kProtoIcmpv6: {
      if (room < 8) return 0;
      if (S::kIcmp) {
        const bool v6 = proto == kProtoIcmpv6;
        c.Set(v6 ? Field::kIcmpv6Type : Field::kIcmpType, l4[0]);
        c.Set(v6 ? Field::kIcmpv6Code : Field::kIcmpCode, l4[1]);
        c.Put(v6 ? Field::kIcmpv6HeaderData : Field::kIcmpHeaderData, off + 4, 4);
      }
      return off + 8;
    }
    default:
      return 0;
  }
}

// The IPv4 header; fills `ip` up to the upper-layer header. False when it is not a valid IPv4 header.
template <typename S>
bool ParseIpv4(const Ctx& c, size_t off, IpLayers* ip) {
  const uint8_t* h = c.p + off;
  if (c.Room(off) < 20 || (h[0] >> 4) != 4) return false;
  const size_t ihl = h[0] & 0xf;
  if (ihl < 5 || ihl * 4 > c.Room(off)) return false;
  ip->l3 = off;
  // The total length bounds the datagram; one shorter than its own header leaves nothing after it.
  const size_t total = std::max<size_t>(hw::LoadBe16(h + 2), ihl * 4);
  ip->end = std::min(c.len, off + total);
  c.Set(F<S>(Field::kOuterIpVersion), 4);
  c.Set(F<S>(Field::kOuterIpv4Ihl), ihl);
  c.Set(F<S>(Field::kOuterIpDscp), h[1] >> 2);
  c.Set(F<S>(Field::kOuterIpEcn), h[1] & 3);
  c.Set(F<S>(Field::kOuterIpTtlHoplimit), h[8]);
  c.Set(F<S>(Field::kOuterIpProtocol), h[9]);
  c.Put(F<S>(Field::kOuterSrcIp31_0), off + 12, 4);
  c.Put(F<S>(Field::kOuterDstIp31_0), off + 16, 4);
  const uint16_t frag = hw::LoadBe16(h + 6);
  const bool more_fragments = frag & 0x2000;
  const uint16_t frag_offset = frag & 0x1fff;
  ip->fragmented = more_fragments || frag_offset != 0;
  if (ip->fragmented) c.Set(F<S>(Field::kOuterFrag), 1);
  ip->protocol = h[9];
  if (frag_offset == 0) ip->upper = off + ihl * 4;  // no L4 header in later fragments
  return true;
}

// The IPv6 header and its extension headers. False when it is not a valid IPv6 header; `ip->upper` stays
// 0 when the extension headers do not fit or this is a later fragment.
template <typename S>
bool ParseIpv6(const Ctx& c, size_t off, IpLayers* ip) {
  const uint8_t* h = c.p + off;
  if (c.Room(off) < 40 || (h[0] >> 4) != 6) return false;
  ip->l3 = off;
  const size_t payload_length = hw::LoadBe16(h + 4);  // 0: a jumbogram, bounded by the frame
  ip->end = payload_length == 0 ? c.len : std::min(c.len, off + 40 + payload_length);
  const uint32_t first = hw::LoadBe32(h);
  const uint32_t traffic_class = (first >> 20) & 0xff;
  c.Set(F<S>(Field::kOuterIpVersion), 6);
  c.Set(F<S>(Field::kOuterIpDscp), traffic_class >> 2);
  c.Set(F<S>(Field::kOuterIpEcn), traffic_class & 3);
  c.Set(S::kFlowLabel, first & 0xfffff);
  c.Set(F<S>(Field::kOuterIpTtlHoplimit), h[7]);
  c.Put(F<S>(Field::kOuterSrcIp127_96), off + 8, 16);
  c.Put(F<S>(Field::kOuterDstIp127_96), off + 24, 16);

  // Walk the extension headers to the upper-layer protocol, inside the datagram.
  const Ctx d = c.Within(ip->end);
  uint8_t next = h[6];
  size_t at = off + 40;
  bool later_fragment = false;
  // An extension header that does not fit ends the parse at L3, the upper-layer protocol unknown.
  for (int headers = 0; headers < 8; ++headers) {
    const size_t room = d.Room(at);
    if (next == 0 || next == 43 || next == 60) {  // hop-by-hop, routing, destination options
      if (room < 8) return true;
      const size_t ext = (d.p[at + 1] + 1u) * 8;
      if (ext > room) return true;
      next = d.p[at];
      at += ext;
    } else if (next == 44) {  // fragment
      if (room < 8) return true;
      c.Set(F<S>(Field::kOuterFrag), 1);
      ip->fragmented = true;
      later_fragment = (hw::LoadBe16(d.p + at + 2) & 0xfff8) != 0;
      next = d.p[at];
      at += 8;
      if (later_fragment)
        break;                // what follows is payload: headers after it exist in the first fragment only
    } else if (next == 51) {  // authentication header: length in 4-byte units, minus 2
      if (room < 8) return true;
      const size_t ext = (d.p[at + 1] + 2u) * 4;
      if (ext > room) return true;
      next = d.p[at];
      at += ext;
    } else {
      break;
    }
  }
  c.Set(F<S>(Field::kOuterIpProtocol), next);
  ip->protocol = next;
  if (!later_fragment) ip->upper = at;
  return true;
}

// An IPv4 (version 4) or IPv6 (6) packet and its L4 header.
template <typename S>
IpLayers ParseIp(const Ctx& c, size_t off, int version) {
  IpLayers ip;
  const bool ok = version == 4 ? ParseIpv4<S>(c, off, &ip) : version == 6 && ParseIpv6<S>(c, off, &ip);
  if (!ok || ip.upper == 0) return ip;
  const Ctx datagram = c.Within(ip.end);
  if (size_t payload = ParseL4<S>(datagram, ip.upper, ip.protocol)) {
    ip.l4 = ip.upper;
    ip.payload = payload;
  }
  return ip;
}

// ---- The inner packet ----------------------------------------------------------------------------

void ParseInnerIp(const Ctx& c, size_t off, int version) {
  IpLayers ip = ParseIp<InnerStack>(c, off, version);
  c.layers->inner_l3 = static_cast<uint16_t>(ip.l3);
  c.layers->inner_l4 = static_cast<uint16_t>(ip.l4);
  c.layers->inner_payload = static_cast<uint16_t>(ip.payload);
}

// An inner IP packet whose version is known only from its first nibble (after MPLS and GTP-U).
void ParseInnerIpByNibble(const Ctx& c, size_t off) {
  if (c.Room(off) < 1) return;
  const int version = c.p[off] >> 4;
  if (version == 4 || version == 6) ParseInnerIp(c, off, version);
}

void ParseInnerEthernet(const Ctx& c, size_t off) {
  uint16_t ethertype;
  const size_t l3 = ParseEthernet<InnerStack>(c, off, &ethertype);
  if (l3 == 0) return;
  c.layers->inner_l2 = static_cast<uint16_t>(off);
  if (ethertype == kEthIpv4) ParseInnerIp(c, l3, 4);
  if (ethertype == kEthIpv6) ParseInnerIp(c, l3, 6);
}

// The inner packet of a tunnel whose protocol field is an ethertype (GENEVE, GRE).
void ParseInnerByEthertype(const Ctx& c, size_t off, uint16_t type) {
  if (type == kEthTeb) ParseInnerEthernet(c, off);
  if (type == kEthIpv4) ParseInnerIp(c, off, 4);
  if (type == kEthIpv6) ParseInnerIp(c, off, 6);
}

// ---- Tunnels -------------------------------------------------------------------------------------

void RecordTunnel(const Ctx& c, TunnelType type, size_t off) {
  c.layers->tunnel_type = type;
  c.layers->tunnel = static_cast<uint16_t>(off);
  for (int w = 0; w < 4 && c.Room(off + 4 * w) >= 4; ++w)
    c.Put(Next(Field::kTunnelHeader0, w), off + 4 * w, 4);
}

// A label stack whose top label goes to the run of fields starting at `label`. Returns the offset after
// the bottom-of-stack label, or 0 when there is none within the frame and kMaxMplsLabels.
size_t ParseMplsStack(const Ctx& c, size_t off, Field label) {
  if (c.Room(off) < 4) return 0;
  const uint32_t top = hw::LoadBe32(c.p + off);
  c.Set(label, top >> 12);
  c.Set(Next(label, 1), (top >> 9) & 7);
  c.Set(Next(label, 2), (top >> 8) & 1);
  c.Set(Next(label, 3), top & 0xff);
  for (int n = 0; n < kMaxMplsLabels && c.Room(off) >= 4; ++n, off += 4) {
    if (c.p[off + 2] & 1) return off + 4;  // bottom of stack
  }
  return 0;
}

void ParseMplsTunnel(const Ctx& c, size_t off, TunnelType type, Field label) {
  if (c.Room(off) < 4) return;
  RecordTunnel(c, type, off);
  if (size_t inner = ParseMplsStack(c, off, label)) ParseInnerIpByNibble(c, inner);
}

void ParseVxlan(const Ctx& c, size_t off) {
  if (c.Room(off) < 8) return;
  RecordTunnel(c, TunnelType::kVxlan, off);
  c.Put(Field::kVxlanVni, off + 4, 3);
  ParseInnerEthernet(c, off + 8);
}

void ParseVxlanGpe(const Ctx& c, size_t off) {
  const uint8_t* h = c.p + off;
  if (c.Room(off) < 8 || (h[0] & 0x30) != 0) return;  // version 0
  RecordTunnel(c, TunnelType::kVxlanGpe, off);
  c.Set(Field::kOuterVxlanGpeFlags, h[0]);
  c.Set(Field::kOuterVxlanGpeNextProtocol, h[3]);
  c.Put(Field::kOuterVxlanGpeVni, off + 4, 3);
  if (h[3] == 1) ParseInnerIp(c, off + 8, 4);
  if (h[3] == 2) ParseInnerIp(c, off + 8, 6);
  if (h[3] == 3) ParseInnerEthernet(c, off + 8);
}

// Scans the `area` bytes of options at `opt` for the configured option, up to the first option that does
// not fit whole.
void FindGeneveOption(const Ctx& c, size_t opt, size_t area) {
  for (size_t at = 0; at + 4 <= area;) {
    const uint32_t header = hw::LoadBe32(c.p + opt + at);
    const size_t data = (header & 0x1fu) * 4;
    if (at + 4 + data > area) return;
    if (c.geneve_option.Selects(header >> 8)) {
      c.Set(Field::kGeneveTlvOption0Exist, 1);
      if (data >= 4) c.Put(Field::kGeneveTlvOption0Data, opt + at + 4, 4);
      return;
    }
    at += 4 + data;
  }
}

void ParseGeneve(const Ctx& c, size_t off) {
  const uint8_t* h = c.p + off;
  if (c.Room(off) < 8 || (h[0] >> 6) != 0) return;  // version 0
  RecordTunnel(c, TunnelType::kGeneve, off);
  const size_t options = (h[0] & 0x3fu) * 4;
  const uint16_t protocol = hw::LoadBe16(h + 2);
  c.Set(Field::kGeneveOptLen, h[0] & 0x3f);
  c.Set(Field::kGeneveOam, h[1] >> 7);
  c.Set(Field::kGeneveProtocolType, protocol);
  c.Put(Field::kGeneveVni, off + 4, 3);
  // Option 0: the first option of the configured class and type, stepping over the options before it.
  const size_t opt = off + 8;
  if (c.geneve_option.configured()) FindGeneveOption(c, opt, std::min(options, c.Room(opt)));
  if (c.Room(opt) < options) return;
  ParseInnerByEthertype(c, opt + options, protocol);
}

// GRE of any version (RFC 2784/2890's 0, PPTP's enhanced GRE 1): the ConnectX parser reads the C, K and S
// bits (the PRM's gre_c/k/s_present, its only GRE flags) and ignores the version, as rdma-core's tests show:
// their GRE header is 0x2001 (version 1, key) and decap must restore the frame on hardware. Version 1's A
// bit (0x0080, RFC 2637 4.1) adds an acknowledgment number after the sequence number, as Linux's flow
// dissector reads it (__skb_flow_dissect_gre); in version 0 that bit is reserved (RFC 2784) and adds
// nothing. A routing header (R, RFC 1701) has a length of its own that the parser does not read: such a
// frame is no tunnel.
void ParseGre(const Ctx& c, size_t off) {
  if (c.Room(off) < 4) return;
  const uint16_t flags = hw::LoadBe16(c.p + off);
  if ((flags & 0x4000) != 0) return;  // routing present
  const bool checksum = flags & 0x8000, key = flags & 0x2000, seq = flags & 0x1000;
  const bool ack = (flags & 0x0007) == 1 && (flags & 0x0080) != 0;
  const size_t header = 4 + (checksum ? 4 : 0) + (key ? 4 : 0) + (seq ? 4 : 0) + (ack ? 4 : 0);
  if (c.Room(off) < header) return;
  RecordTunnel(c, TunnelType::kGre, off);
  const uint16_t protocol = hw::LoadBe16(c.p + off + 2);
  c.Set(Field::kGreCPresent, checksum);
  c.Set(Field::kGreKPresent, key);
  c.Set(Field::kGreSPresent, seq);
  c.Set(Field::kGreProtocol, protocol);
  if (key) {
    const uint32_t k = hw::LoadBe32(c.p + off + (checksum ? 8 : 4));
    c.Set(Field::kGreKeyH, k >> 8);
    c.Set(Field::kGreKeyL, k & 0xff);
  }
  const size_t inner = off + header;
  if (protocol == kEthMpls || protocol == kEthMplsMulticast) {
    if (size_t ip = ParseMplsStack(c, inner, Field::kOuterFirstMplsOverGreLabel)) ParseInnerIpByNibble(c, ip);
    return;
  }
  ParseInnerByEthertype(c, inner, protocol);
}

void ParseGtpu(const Ctx& c, size_t off) {
  const uint8_t* h = c.p + off;
  if (c.Room(off) < 8 || (h[0] & 0xf0) != 0x30) return;  // version 1, protocol type 1 (GTP)
  RecordTunnel(c, TunnelType::kGtpu, off);
  const uint8_t flags = h[0];
  c.Set(Field::kGtpuMsgFlags, flags);
  c.Set(Field::kGtpuMsgType, h[1]);
  c.Put(Field::kGtpuDw0, off, 4);
  c.Put(Field::kGtpuTeid, off + 4, 4);
  size_t at = off + 8;
  uint8_t next_type = 0;
  if (flags & 0x07) {  // E, S or PN: sequence number, N-PDU number, next extension header type
    if (c.Room(off) < 12) return;
    c.Put(Field::kGtpuDw2, off + 8, 4);
    at += 4;
    if (flags & 0x04) next_type = h[11];
    if (next_type != 0 && c.Room(at) >= 4) c.Put(Field::kGtpuFirstExtDw0, at, 4);
  }
  if (h[1] != 0xff) return;  // only G-PDUs carry a T-PDU
  for (int n = 0; next_type != 0; ++n) {
    if (n == kMaxGtpuExtensions || c.Room(at) < 1) return;
    const size_t ext = c.p[at] * 4u;
    if (ext == 0 || c.Room(at) < ext) return;
    next_type = c.p[at + ext - 1];
    at += ext;
  }
  ParseInnerIpByNibble(c, at);
}

void ParseBth(const Ctx& c, size_t off) {
  const uint8_t* h = c.p + off;
  if (c.Room(off) < 12 || (h[1] & 0x0f) != 0) return;  // transport header version 0
  c.layers->bth = static_cast<uint16_t>(off);
  c.Set(Field::kBthOpcode, h[0]);
  c.Put(Field::kBthDstQp, off + 5, 3);
  c.Set(Field::kBthA, h[8] >> 7);
}

// What follows a UDP header, by destination port.
void ParseUdpPayload(const Ctx& c, size_t udp, size_t off) {
  switch (hw::LoadBe16(c.p + udp + 2)) {
    case kPortVxlan:
      return ParseVxlan(c, off);
    case kPortVxlanGpe:
      return ParseVxlanGpe(c, off);
    case kPortGeneve:
      return ParseGeneve(c, off);
    case kPortMplsOverUdp:
      return ParseMplsTunnel(c, off, TunnelType::kMplsOverUdp, Field::kOuterFirstMplsOverUdpLabel);
    case kPortGtpu:
      return ParseGtpu(c, off);
    case kPortRoceV2:
      return ParseBth(c, off);
    default:
      return;
  }
}

// The outer Ethernet header and VLAN tags, then an outer IP packet and its L4 header, as far as they are
// valid: what the outer headers section is filled from.
struct OuterHeaders {
  size_t l2_end = 0;  // after the Ethernet header and VLAN tags; 0 when the Ethernet header does not fit
  uint16_t ethertype = 0;
  IpLayers ip;  // ip.l3 == 0: no valid IP header
};

OuterHeaders ParseOuterStack(const Ctx& c) {
  OuterHeaders o;
  o.l2_end = ParseEthernet<OuterStack>(c, 0, &o.ethertype);
  if (o.l2_end != 0 && (o.ethertype == kEthIpv4 || o.ethertype == kEthIpv6)) {
    o.ip = ParseIp<OuterStack>(c, o.l2_end, o.ethertype == kEthIpv4 ? 4 : 6);
  }
  return o;
}

// The outer IP packet's layers (all 0 when there is none).
void SetOuterLayers(const IpLayers& ip, PacketLayers* layers) {
  layers->l3 = static_cast<uint16_t>(ip.l3);
  layers->l4 = static_cast<uint16_t>(ip.l4);
  layers->payload = static_cast<uint16_t>(ip.payload);
}

static_assert(hw::Info(Field::kSourceEswitchOwnerVhcaId).word_offset() == kSourcePortWord);

// The outer headers section of a plain IPv4 frame, cleared first, as ParseOuterStack fills it: whole words,
// so that the key's word loads that follow take them straight from these stores.
void FillPlainIpv4(const uint8_t* frame, uint8_t* out) {
#pragma GCC unroll 16
  for (const size_t offset : kPlainOuterWords) {
    const uint32_t v = PlainWordValue(PlainWordAt(offset), frame, /*source_port=*/0);
    std::memcpy(out + offset, &v, sizeof v);
  }
}

}  // namespace

PacketLayers ParsePacket(const uint8_t* frame, size_t len, uint16_t source_port, hw::HeaderVector* hv,
                         GeneveOptionSelector geneve_option) {
  // Cleared a cache line at a time, which compiles to vector stores; one memset of the whole vector
  // becomes `rep stos`, whose stores the field updates below then stall on.
  static_assert(sizeof hv->bytes % 64 == 0);
  for (size_t line = 0; line < sizeof hv->bytes; line += 64) std::memset(hv->bytes + line, 0, 64);
  hw::SetField(hv->bytes, Field::kSourcePort, source_port);
  PacketLayers layers;
  if (frame == nullptr) return layers;
  const Ctx c{frame, len, hv, &layers, geneve_option};
  const OuterHeaders outer = ParseOuterStack(c);
  if (outer.ethertype == kEthMpls || outer.ethertype == kEthMplsMulticast) {
    ParseMplsTunnel(c, outer.l2_end, TunnelType::kMpls, Field::kOuterFirstMplsLabel);
    return layers;
  }
  const IpLayers& ip = outer.ip;
  if (ip.l3 == 0) return layers;
  SetOuterLayers(ip, &layers);
  if (ip.fragmented) return layers;       // no tunnel in a fragment
  const Ctx datagram = c.Within(ip.end);  // what follows lies inside the outer datagram, not the padding
  if (ip.protocol == kProtoUdp && ip.payload != 0) ParseUdpPayload(datagram, ip.l4, ip.payload);
  if (ip.protocol == kProtoGre && ip.upper != 0) ParseGre(datagram, ip.upper);
  return layers;
}

PacketLayers ParseOuterHeaders(const uint8_t* frame, size_t len, uint16_t source_port, hw::HeaderVector* hv) {
  std::memset(hv->bytes + hw::SectionOffset(hw::Section::kOuter), 0, hw::kSectionBytes);
  hw::StoreBe32(hv->bytes + kSourcePortWord, source_port);
  PacketLayers layers;
  if (IsPlainIpv4Frame(frame, len)) {
    FillPlainIpv4(frame, hv->bytes);
    layers.l3 = kPlainL3;
    const uint8_t protocol = frame[kPlainL3 + 9];
    if (protocol == kPlainTcp || protocol == kPlainUdp) {  // (IsPlainIpv4Frame checked their header fits)
      layers.l4 = kPlainL4;
      layers.payload = static_cast<uint16_t>(
          protocol == kPlainTcp ? kPlainL4 + (frame[kPlainL4 + 12] >> 4) * 4 : kPlainL4 + 8);
    } else if (const size_t payload =
                   ParseL4<OuterStack>(Ctx{frame, len, hv, &layers, {}}.Within(PlainDatagramEnd(frame, len)),
                                       kPlainL4, protocol)) {
      // Another protocol's L4 layer, found as the full parse finds it (ICMP's header; none for most).
      layers.l4 = kPlainL4;
      layers.payload = static_cast<uint16_t>(payload);
    }
    return layers;
  }
  if (frame == nullptr) return layers;
  const OuterHeaders outer = ParseOuterStack({frame, len, hv, &layers, {}});
  SetOuterLayers(outer.ip, &layers);
  return layers;
}

}  // namespace drsim::sim
