#include "sim/packet_parser.h"

#include <cstring>

#include "hw/byte_order.h"

namespace drsim::sim {
namespace {

using hw::Field;

constexpr uint16_t kEthIpv4 = 0x0800;
constexpr uint16_t kEthIpv6 = 0x86dd;
constexpr uint16_t kEthCvlan = 0x8100;
constexpr uint16_t kEthSvlan = 0x88a8;
constexpr uint8_t kProtoIcmp = 1;
constexpr uint8_t kProtoTcp = 6;
constexpr uint8_t kProtoUdp = 17;
constexpr uint8_t kProtoIcmpv6 = 58;

// Copies `n` bytes of the frame to the byte offset of a byte-aligned field.
inline void Put(hw::HeaderVector* hv, Field f, const uint8_t* src, size_t n) {
  std::memcpy(hv->bytes + hw::Info(f).abs_bit() / 8, src, n);
}
inline void Set(hw::HeaderVector* hv, Field f, uint32_t v) { hw::SetField(hv->bytes, f, v); }

// L4 of a first fragment (or an unfragmented packet). Returns the payload offset, or 0.
size_t ParseL4(const uint8_t* p, size_t len, size_t off, uint8_t proto, hw::HeaderVector* hv) {
  const uint8_t* l4 = p + off;
  const size_t room = len - off;
  switch (proto) {
    case kProtoTcp: {
      if (room < 20) return 0;
      const size_t hdr = (l4[12] >> 4) * 4u;
      if (hdr < 20 || hdr > room) return 0;
      Put(hv, Field::kOuterTcpSport, l4, 4);  // sport and dport are adjacent in both
      Set(hv, Field::kOuterTcpFlags, ((l4[12] & 1u) << 8) | l4[13]);
      Put(hv, Field::kOuterTcpSeqNum, l4 + 4, 4);
      Put(hv, Field::kOuterTcpAckNum, l4 + 8, 4);
      return off + hdr;
    }
    case kProtoUdp:
      if (room < 8) return 0;
      Put(hv, Field::kOuterUdpSport, l4, 4);
      return off + 8;
    case kProtoIcmp:
    case kProtoIcmpv6: {
      if (room < 8) return 0;
      const bool v6 = proto == kProtoIcmpv6;
      Set(hv, v6 ? Field::kIcmpv6Type : Field::kIcmpType, l4[0]);
      Set(hv, v6 ? Field::kIcmpv6Code : Field::kIcmpCode, l4[1]);
      Put(hv, v6 ? Field::kIcmpv6HeaderData : Field::kIcmpHeaderData, l4 + 4, 4);
      return off + 8;
    }
    default:
      return 0;
  }
}

void ParseIpv4(const uint8_t* p, size_t len, size_t off, hw::HeaderVector* hv, PacketLayers* layers) {
  const uint8_t* ip = p + off;
  if (len - off < 20 || (ip[0] >> 4) != 4) return;
  const size_t ihl = ip[0] & 0xf;
  if (ihl < 5 || ihl * 4 > len - off) return;
  layers->l3 = static_cast<uint16_t>(off);
  Set(hv, Field::kOuterIpVersion, 4);
  Set(hv, Field::kOuterIpv4Ihl, ihl);
  Set(hv, Field::kOuterIpDscp, ip[1] >> 2);
  Set(hv, Field::kOuterIpEcn, ip[1] & 3);
  Set(hv, Field::kOuterIpTtlHoplimit, ip[8]);
  Set(hv, Field::kOuterIpProtocol, ip[9]);
  Put(hv, Field::kOuterSrcIp31_0, ip + 12, 4);
  Put(hv, Field::kOuterDstIp31_0, ip + 16, 4);
  const uint16_t frag = hw::LoadBe16(ip + 6);
  const bool more_fragments = frag & 0x2000;
  const uint16_t frag_offset = frag & 0x1fff;
  if (more_fragments || frag_offset != 0) Set(hv, Field::kOuterFrag, 1);
  if (frag_offset != 0) return;  // no L4 header in later fragments
  const size_t l4 = off + ihl * 4;
  if (size_t payload = ParseL4(p, len, l4, ip[9], hv)) {
    layers->l4 = static_cast<uint16_t>(l4);
    layers->payload = static_cast<uint16_t>(payload);
  }
}

void ParseIpv6(const uint8_t* p, size_t len, size_t off, hw::HeaderVector* hv, PacketLayers* layers) {
  const uint8_t* ip = p + off;
  if (len - off < 40 || (ip[0] >> 4) != 6) return;
  layers->l3 = static_cast<uint16_t>(off);
  const uint32_t first = hw::LoadBe32(ip);
  const uint32_t traffic_class = (first >> 20) & 0xff;
  Set(hv, Field::kOuterIpVersion, 6);
  Set(hv, Field::kOuterIpDscp, traffic_class >> 2);
  Set(hv, Field::kOuterIpEcn, traffic_class & 3);
  Set(hv, Field::kOuterIpv6FlowLabel, first & 0xfffff);
  Set(hv, Field::kOuterIpTtlHoplimit, ip[7]);
  Put(hv, Field::kOuterSrcIp127_96, ip + 8, 16);
  Put(hv, Field::kOuterDstIp127_96, ip + 24, 16);

  // Walk the extension headers to the upper-layer protocol.
  uint8_t next = ip[6];
  size_t at = off + 40;
  bool later_fragment = false;
  for (int headers = 0; headers < 8; ++headers) {
    const size_t room = len - at;
    if (next == 0 || next == 43 || next == 60) {  // hop-by-hop, routing, destination options
      if (room < 8) return;
      const size_t ext = (p[at + 1] + 1u) * 8;
      if (ext > room) return;
      next = p[at];
      at += ext;
    } else if (next == 44) {  // fragment
      if (room < 8) return;
      Set(hv, Field::kOuterFrag, 1);
      later_fragment = (hw::LoadBe16(p + at + 2) & 0xfff8) != 0;
      next = p[at];
      at += 8;
    } else if (next == 51) {  // authentication header: length in 4-byte units, minus 2
      if (room < 8) return;
      const size_t ext = (p[at + 1] + 2u) * 4;
      if (ext > room) return;
      next = p[at];
      at += ext;
    } else {
      break;
    }
  }
  Set(hv, Field::kOuterIpProtocol, next);
  if (later_fragment) return;
  if (size_t payload = ParseL4(p, len, at, next, hv)) {
    layers->l4 = static_cast<uint16_t>(at);
    layers->payload = static_cast<uint16_t>(payload);
  }
}

}  // namespace

PacketLayers ParsePacket(const uint8_t* frame, size_t len, uint16_t source_port, hw::HeaderVector* hv) {
  std::memset(hv->bytes, 0, sizeof hv->bytes);
  Set(hv, Field::kSourcePort, source_port);
  PacketLayers layers;
  if (frame == nullptr || len < 14) return layers;
  Put(hv, Field::kOuterDmac47_16, frame, 6);
  Put(hv, Field::kOuterSmac47_16, frame + 6, 6);
  uint16_t ethertype = hw::LoadBe16(frame + 12);
  size_t off = 14;
  // Up to two VLAN tags; the ethertype reported is the one after the last tag parsed.
  for (int tag = 0; tag < 2 && (ethertype == kEthCvlan || ethertype == kEthSvlan); ++tag) {
    if (len - off < 4) break;
    const uint16_t tci = hw::LoadBe16(frame + off);
    const bool svlan = ethertype == kEthSvlan;
    if (tag == 0) {
      Set(hv, svlan ? Field::kOuterSvlanTag : Field::kOuterCvlanTag, 1);
      Set(hv, Field::kOuterFirstPrio, tci >> 13);
      Set(hv, Field::kOuterFirstCfi, (tci >> 12) & 1);
      Set(hv, Field::kOuterFirstVid, tci & 0xfff);
    } else {
      Set(hv, svlan ? Field::kOuterSecondSvlanTag : Field::kOuterSecondCvlanTag, 1);
      Set(hv, Field::kOuterSecondPrio, tci >> 13);
      Set(hv, Field::kOuterSecondCfi, (tci >> 12) & 1);
      Set(hv, Field::kOuterSecondVid, tci & 0xfff);
    }
    ethertype = hw::LoadBe16(frame + off + 2);
    off += 4;
  }
  Set(hv, Field::kOuterEthertype, ethertype);
  if (ethertype == kEthIpv4) {
    ParseIpv4(frame, len, off, hv, &layers);
  } else if (ethertype == kEthIpv6) {
    ParseIpv6(frame, len, off, hv, &layers);
  }
  return layers;
}

}  // namespace drsim::sim
