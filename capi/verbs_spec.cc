#include "capi/verbs_spec.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "hw/byte_order.h"
#include "hw/match_layout.h"

namespace drsim::capi {
namespace {

using hw::Field;
using hw::Headers;

constexpr size_t kSpecHeaderBytes = 8;  // enum ibv_flow_spec_type type; uint16_t size; padding
constexpr uint32_t kFlagsKnown = IBV_FLOW_ATTR_FLAGS_DONT_TRAP | IBV_FLOW_ATTR_FLAGS_EGRESS;
constexpr uint32_t kDmacMulticastBit = 0x01000000;  // the I/G bit of the first byte, in dmac_47_16

template <typename T>
T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

const char* TypeName(uint32_t base) {
  switch (base) {
    case IBV_FLOW_SPEC_ETH:
      return "ETH";
    case IBV_FLOW_SPEC_IPV4:
      return "IPV4";
    case IBV_FLOW_SPEC_IPV6:
      return "IPV6";
    case IBV_FLOW_SPEC_IPV4_EXT:
      return "IPV4_EXT";
    case IBV_FLOW_SPEC_ESP:
      return "ESP";
    case IBV_FLOW_SPEC_TCP:
      return "TCP";
    case IBV_FLOW_SPEC_UDP:
      return "UDP";
    case IBV_FLOW_SPEC_VXLAN_TUNNEL:
      return "VXLAN_TUNNEL";
    case IBV_FLOW_SPEC_GRE:
      return "GRE";
    case IBV_FLOW_SPEC_MPLS:
      return "MPLS";
    case IBV_FLOW_SPEC_ACTION_TAG:
      return "ACTION_TAG";
    case IBV_FLOW_SPEC_ACTION_DROP:
      return "ACTION_DROP";
    case IBV_FLOW_SPEC_ACTION_HANDLE:
      return "ACTION_HANDLE";
    case IBV_FLOW_SPEC_ACTION_COUNT:
      return "ACTION_COUNT";
  }
  return nullptr;
}

const char* AttrTypeName(unsigned type) {
  static const char* const kNames[] = {"NORMAL", "ALL_DEFAULT", "MC_DEFAULT", "SNIFFER"};
  return kNames[type];
}

// One header stack's specs so far (outer, or inner with IBV_FLOW_SPEC_INNER).
struct Stack {
  std::optional<size_t> eth, ip, l4, mpls;  // the spec index that filled each
  uint32_t ip_type = 0;                     // IBV_FLOW_SPEC_IPV4 (also for IPV4_EXT) or IBV_FLOW_SPEC_IPV6
  std::optional<size_t> proto_spec;         // who set ip_protocol, and how
  uint8_t proto_mask = 0, proto_value = 0;
  uint16_t ethertype_mask = 0, ethertype_value = 0;
};

class AttrReader {
 public:
  absl::StatusOr<VerbsFlowRequest> Read(const ibv_flow_attr* attr);

 private:
  absl::Status ReadHeader(const uint8_t* base);
  absl::Status ReadSpec(const uint8_t* p, uint16_t size, uint32_t prev_type);
  absl::Status Eth(const uint8_t* p, uint16_t size);
  absl::Status Ipv4(const uint8_t* p, uint16_t size, bool ext);
  absl::Status Ipv6(const uint8_t* p, uint16_t size);
  absl::Status TcpUdp(const uint8_t* p, uint16_t size, bool tcp);
  absl::Status Vxlan(const uint8_t* p, uint16_t size);
  absl::Status Gre(const uint8_t* p, uint16_t size);
  absl::Status Mpls(const uint8_t* p, uint16_t size, uint32_t prev_type);
  absl::Status Esp(const uint8_t* p, uint16_t size);
  absl::Status Action(const uint8_t* p, uint16_t size);
  absl::Status CheckCombination();

  // Errors naming the current spec.
  absl::Status Invalid(const std::string& why) const {
    return absl::InvalidArgumentError(absl::StrFormat("%s: %s", what_, why));
  }
  absl::Status Unsupported(const std::string& why) const {
    return absl::UnimplementedError(absl::StrFormat("%s: %s", what_, why));
  }
  absl::Status ExpectSize(uint16_t size, size_t expected, const char* type) const;
  // Copies the value and mask filters of an extensible spec (IPV4_EXT, IPV6, VXLAN_TUNNEL) as libibverbs
  // reads them: the spec's size decides the filter size; at least `min` bytes each, and mask bytes past
  // `min` must be zero.
  template <typename Filter>
  absl::Status ExtensibleFilters(const uint8_t* p, uint16_t size, size_t min, Filter* val,
                                 Filter* mask) const;
  // InvalidArgument unless every bit of `n` bytes of `val` is also set in `mask`.
  absl::Status CheckInMask(const char* field, const void* val, const void* mask, size_t n) const;
  absl::Status SetProtocol(uint8_t mask, uint8_t value);
  void Put(Field outer_field, uint32_t mask, uint32_t value);  // in the current stack
  void PutRaw(Field field, uint32_t mask, uint32_t value);     // a field of any section

  VerbsFlowRequest req_;
  uint16_t priority_ = 0;
  bool dont_trap_ = false;
  unsigned num_specs_ = 0;
  bool multicast_only_ = false;  // the kernel's flow_is_multicast_only, from spec[0]
  hw::MatchParams mask_, value_;
  Stack stacks_[2];  // outer, inner
  Headers h_ = Headers::kOuter;
  size_t index_ = 0;  // the spec being read
  std::string what_;  // "spec[1] (IPV4|INNER)"
  std::optional<size_t> vxlan_, gre_, esp_, tag_, drop_, count_, over_tunnel_mpls_;
};

absl::Status AttrReader::ExpectSize(uint16_t size, size_t expected, const char* type) const {
  if (size == expected) return absl::OkStatus();
  return Invalid(absl::StrFormat("size %d; struct %s is %d bytes", size, type, expected));
}

template <typename Filter>
absl::Status AttrReader::ExtensibleFilters(const uint8_t* p, uint16_t size, size_t min, Filter* val,
                                           Filter* mask) const {
  const size_t both = size - kSpecHeaderBytes;
  const size_t filter = both / 2;
  if (both % 2 != 0 || filter < min) {
    return Invalid(absl::StrFormat(
        "size %d: the value and mask filters after the 8-byte header must be equal and at least %d bytes "
        "each",
        size, min));
  }
  const uint8_t* mask_bytes = p + kSpecHeaderBytes + filter;
  for (size_t i = min; i < filter; ++i) {
    if (mask_bytes[i] != 0) {
      return Unsupported(absl::StrFormat(
          "mask byte %d is set; only the first %d bytes of the filter are fields drsim knows", i, min));
    }
  }
  std::memset(val, 0, sizeof *val);
  std::memset(mask, 0, sizeof *mask);
  const size_t n = std::min(filter, sizeof(Filter));
  std::memcpy(val, p + kSpecHeaderBytes, n);
  std::memcpy(mask, mask_bytes, n);
  return absl::OkStatus();
}

absl::Status AttrReader::CheckInMask(const char* field, const void* val, const void* mask, size_t n) const {
  const auto* v = static_cast<const uint8_t*>(val);
  const auto* m = static_cast<const uint8_t*>(mask);
  for (size_t i = 0; i < n; ++i) {
    if (v[i] & ~m[i]) return Invalid(absl::StrFormat("val.%s has bits outside mask.%s", field, field));
  }
  return absl::OkStatus();
}

void AttrReader::PutRaw(Field field, uint32_t mask, uint32_t value) {
  hw::SetField(mask_.bytes(), field, mask);
  hw::SetField(value_.bytes(), field, value & mask);
}

void AttrReader::Put(Field outer_field, uint32_t mask, uint32_t value) {
  PutRaw(hw::HeaderField(h_, outer_field), mask, value);
}

// The kernel's set_proto: the first spec to constrain ip_protocol sets it; a later one must ask the same.
absl::Status AttrReader::SetProtocol(uint8_t mask, uint8_t value) {
  if (mask == 0) return absl::OkStatus();
  Stack& s = stacks_[static_cast<int>(h_)];
  if (s.proto_spec.has_value()) {
    if (s.proto_mask != mask || s.proto_value != value) {
      return Invalid(absl::StrFormat("IP protocol %d/0x%02x contradicts %d/0x%02x of spec[%d]", value, mask,
                                     s.proto_value, s.proto_mask, *s.proto_spec));
    }
    return absl::OkStatus();
  }
  s.proto_spec = index_;
  s.proto_mask = mask;
  s.proto_value = value;
  Put(Field::kOuterIpProtocol, mask, value);
  return absl::OkStatus();
}

absl::Status AttrReader::Eth(const uint8_t* p, uint16_t size) {
  DRSIM_RETURN_IF_ERROR(ExpectSize(size, sizeof(ibv_flow_spec_eth), "ibv_flow_spec_eth"));
  const auto val = Load<ibv_flow_eth_filter>(p + offsetof(ibv_flow_spec_eth, val));
  const auto mask = Load<ibv_flow_eth_filter>(p + offsetof(ibv_flow_spec_eth, mask));
  for (absl::Status s : {CheckInMask("dst_mac", val.dst_mac, mask.dst_mac, 6),
                         CheckInMask("src_mac", val.src_mac, mask.src_mac, 6),
                         CheckInMask("ether_type", &val.ether_type, &mask.ether_type, 2),
                         CheckInMask("vlan_tag", &val.vlan_tag, &mask.vlan_tag, 2)}) {
    if (!s.ok()) return s;
  }
  Stack& st = stacks_[static_cast<int>(h_)];
  if (st.eth.has_value()) return Invalid(absl::StrFormat("a second ETH spec (spec[%d] is one)", *st.eth));
  st.eth = index_;
  Put(Field::kOuterDmac47_16, hw::LoadBe32(mask.dst_mac), hw::LoadBe32(val.dst_mac));
  Put(Field::kOuterDmac15_0, hw::LoadBe16(mask.dst_mac + 4), hw::LoadBe16(val.dst_mac + 4));
  Put(Field::kOuterSmac47_16, hw::LoadBe32(mask.src_mac), hw::LoadBe32(val.src_mac));
  Put(Field::kOuterSmac15_0, hw::LoadBe16(mask.src_mac + 4), hw::LoadBe16(val.src_mac + 4));
  st.ethertype_mask = ntohs(mask.ether_type);
  st.ethertype_value = ntohs(val.ether_type);
  Put(Field::kOuterEthertype, st.ethertype_mask, st.ethertype_value);
  if (mask.vlan_tag != 0) {
    // As mlx5_ib: a C-VLAN tag must be present; the first tag's PCP, DEI and VID under the mask.
    const uint16_t m = ntohs(mask.vlan_tag), v = ntohs(val.vlan_tag);
    Put(Field::kOuterCvlanTag, 1, 1);
    Put(Field::kOuterFirstVid, m & 0xfff, v & 0xfff);
    Put(Field::kOuterFirstCfi, (m >> 12) & 1, (v >> 12) & 1);
    Put(Field::kOuterFirstPrio, m >> 13, v >> 13);
  }
  if (index_ == 0 && h_ == Headers::kOuter) multicast_only_ = (mask.dst_mac[0] & 1) && (val.dst_mac[0] & 1);
  return absl::OkStatus();
}

absl::Status AttrReader::Ipv4(const uint8_t* p, uint16_t size, bool ext) {
  ibv_flow_ipv4_ext_filter val{}, mask{};
  if (ext) {
    const size_t min = offsetof(ibv_flow_ipv4_ext_filter, flags) + sizeof val.flags;
    DRSIM_RETURN_IF_ERROR(ExtensibleFilters(p, size, min, &val, &mask));
  } else {
    DRSIM_RETURN_IF_ERROR(ExpectSize(size, sizeof(ibv_flow_spec_ipv4), "ibv_flow_spec_ipv4"));
    std::memcpy(&val, p + offsetof(ibv_flow_spec_ipv4, val), sizeof(ibv_flow_ipv4_filter));
    std::memcpy(&mask, p + offsetof(ibv_flow_spec_ipv4, mask), sizeof(ibv_flow_ipv4_filter));
  }
  for (absl::Status s :
       {CheckInMask("src_ip", &val.src_ip, &mask.src_ip, 4),
        CheckInMask("dst_ip", &val.dst_ip, &mask.dst_ip, 4), CheckInMask("proto", &val.proto, &mask.proto, 1),
        CheckInMask("tos", &val.tos, &mask.tos, 1), CheckInMask("ttl", &val.ttl, &mask.ttl, 1),
        CheckInMask("flags", &val.flags, &mask.flags, 1)}) {
    if (!s.ok()) return s;
  }
  if (mask.flags != 0) {
    return Unsupported(
        "flags: the IPv4 flags (DF, MF) have no field in the mlx5 match layout (mlx5_ib refuses them too)");
  }
  Stack& st = stacks_[static_cast<int>(h_)];
  if (st.ip.has_value()) return Invalid(absl::StrFormat("a second IP spec (spec[%d] is one)", *st.ip));
  st.ip = index_;
  st.ip_type = IBV_FLOW_SPEC_IPV4;
  Put(Field::kOuterIpVersion, 0xf, 4);  // as mlx5_ib's parse_flow_attr: the whole field
  Put(Field::kOuterSrcIp31_0, ntohl(mask.src_ip), ntohl(val.src_ip));
  Put(Field::kOuterDstIp31_0, ntohl(mask.dst_ip), ntohl(val.dst_ip));
  Put(Field::kOuterIpDscp, mask.tos >> 2, val.tos >> 2);
  Put(Field::kOuterIpEcn, mask.tos & 3, val.tos & 3);
  Put(Field::kOuterIpTtlHoplimit, mask.ttl, val.ttl);
  if (index_ == 0 && h_ == Headers::kOuter) multicast_only_ = (ntohl(val.dst_ip) >> 28) == 0xe;
  return SetProtocol(mask.proto, val.proto);
}

absl::Status AttrReader::Ipv6(const uint8_t* p, uint16_t size) {
  ibv_flow_ipv6_filter val, mask;
  const size_t min = offsetof(ibv_flow_ipv6_filter, hop_limit) + sizeof val.hop_limit;
  DRSIM_RETURN_IF_ERROR(ExtensibleFilters(p, size, min, &val, &mask));
  for (absl::Status s : {CheckInMask("src_ip", val.src_ip, mask.src_ip, 16),
                         CheckInMask("dst_ip", val.dst_ip, mask.dst_ip, 16),
                         CheckInMask("flow_label", &val.flow_label, &mask.flow_label, 4),
                         CheckInMask("next_hdr", &val.next_hdr, &mask.next_hdr, 1),
                         CheckInMask("traffic_class", &val.traffic_class, &mask.traffic_class, 1),
                         CheckInMask("hop_limit", &val.hop_limit, &mask.hop_limit, 1)}) {
    if (!s.ok()) return s;
  }
  if (ntohl(mask.flow_label) > 0xfffff) {
    return Invalid(
        absl::StrFormat("mask.flow_label 0x%x: the flow label is 20 bits", ntohl(mask.flow_label)));
  }
  Stack& st = stacks_[static_cast<int>(h_)];
  if (st.ip.has_value()) return Invalid(absl::StrFormat("a second IP spec (spec[%d] is one)", *st.ip));
  st.ip = index_;
  st.ip_type = IBV_FLOW_SPEC_IPV6;
  Put(Field::kOuterIpVersion, 0xf, 6);
  const Field src[] = {Field::kOuterSrcIp127_96, Field::kOuterSrcIp95_64, Field::kOuterSrcIp63_32,
                       Field::kOuterSrcIp31_0};
  const Field dst[] = {Field::kOuterDstIp127_96, Field::kOuterDstIp95_64, Field::kOuterDstIp63_32,
                       Field::kOuterDstIp31_0};
  for (int w = 0; w < 4; ++w) {
    Put(src[w], hw::LoadBe32(mask.src_ip + 4 * w), hw::LoadBe32(val.src_ip + 4 * w));
    Put(dst[w], hw::LoadBe32(mask.dst_ip + 4 * w), hw::LoadBe32(val.dst_ip + 4 * w));
  }
  PutRaw(h_ == Headers::kOuter ? Field::kOuterIpv6FlowLabel : Field::kInnerIpv6FlowLabel,
         ntohl(mask.flow_label), ntohl(val.flow_label));
  Put(Field::kOuterIpDscp, mask.traffic_class >> 2, val.traffic_class >> 2);
  Put(Field::kOuterIpEcn, mask.traffic_class & 3, val.traffic_class & 3);
  Put(Field::kOuterIpTtlHoplimit, mask.hop_limit, val.hop_limit);
  return SetProtocol(mask.next_hdr, val.next_hdr);
}

absl::Status AttrReader::TcpUdp(const uint8_t* p, uint16_t size, bool tcp) {
  DRSIM_RETURN_IF_ERROR(ExpectSize(size, sizeof(ibv_flow_spec_tcp_udp), "ibv_flow_spec_tcp_udp"));
  const auto val = Load<ibv_flow_tcp_udp_filter>(p + offsetof(ibv_flow_spec_tcp_udp, val));
  const auto mask = Load<ibv_flow_tcp_udp_filter>(p + offsetof(ibv_flow_spec_tcp_udp, mask));
  for (absl::Status s : {CheckInMask("dst_port", &val.dst_port, &mask.dst_port, 2),
                         CheckInMask("src_port", &val.src_port, &mask.src_port, 2)}) {
    if (!s.ok()) return s;
  }
  Stack& st = stacks_[static_cast<int>(h_)];
  if (st.l4.has_value()) return Invalid(absl::StrFormat("a second TCP/UDP spec (spec[%d] is one)", *st.l4));
  st.l4 = index_;
  Put(tcp ? Field::kOuterTcpSport : Field::kOuterUdpSport, ntohs(mask.src_port), ntohs(val.src_port));
  Put(tcp ? Field::kOuterTcpDport : Field::kOuterUdpDport, ntohs(mask.dst_port), ntohs(val.dst_port));
  return SetProtocol(0xff, tcp ? IPPROTO_TCP : IPPROTO_UDP);
}

absl::Status AttrReader::Vxlan(const uint8_t* p, uint16_t size) {
  ibv_flow_tunnel_filter val, mask;
  const size_t min = offsetof(ibv_flow_tunnel_filter, tunnel_id) + sizeof val.tunnel_id;
  DRSIM_RETURN_IF_ERROR(ExtensibleFilters(p, size, min, &val, &mask));
  DRSIM_RETURN_IF_ERROR(CheckInMask("tunnel_id", &val.tunnel_id, &mask.tunnel_id, 4));
  if (vxlan_.has_value())
    return Invalid(absl::StrFormat("a second VXLAN_TUNNEL spec (spec[%d] is one)", *vxlan_));
  vxlan_ = index_;
  // The VNI is the low 24 bits of the network-order tunnel_id, i.e. tunnel_id = htonl(vni); bits 31:24 are
  // dropped as mlx5_ib drops them.
  PutRaw(Field::kVxlanVni, ntohl(mask.tunnel_id) & 0xffffff, ntohl(val.tunnel_id) & 0xffffff);
  return absl::OkStatus();
}

absl::Status AttrReader::Gre(const uint8_t* p, uint16_t size) {
  DRSIM_RETURN_IF_ERROR(ExpectSize(size, sizeof(ibv_flow_spec_gre), "ibv_flow_spec_gre"));
  const auto val = Load<ibv_flow_gre_filter>(p + offsetof(ibv_flow_spec_gre, val));
  const auto mask = Load<ibv_flow_gre_filter>(p + offsetof(ibv_flow_spec_gre, mask));
  for (absl::Status s : {CheckInMask("c_ks_res0_ver", &val.c_ks_res0_ver, &mask.c_ks_res0_ver, 2),
                         CheckInMask("protocol", &val.protocol, &mask.protocol, 2),
                         CheckInMask("key", &val.key, &mask.key, 4)}) {
    if (!s.ok()) return s;
  }
  constexpr uint16_t kC = 0x8000, kK = 0x2000, kS = 0x1000;
  const uint16_t flags_mask = ntohs(mask.c_ks_res0_ver), flags_value = ntohs(val.c_ks_res0_ver);
  if (flags_mask & ~(kC | kK | kS)) {
    return Unsupported(absl::StrFormat(
        "mask.c_ks_res0_ver 0x%04x: only the C, K and S bits (0xb000) are matchable; the reserved bits and "
        "the version have no field in the mlx5 match layout",
        flags_mask));
  }
  if (gre_.has_value()) return Invalid(absl::StrFormat("a second GRE spec (spec[%d] is one)", *gre_));
  gre_ = index_;
  PutRaw(Field::kGreCPresent, (flags_mask & kC) != 0, (flags_value & kC) != 0);
  PutRaw(Field::kGreKPresent, (flags_mask & kK) != 0, (flags_value & kK) != 0);
  PutRaw(Field::kGreSPresent, (flags_mask & kS) != 0, (flags_value & kS) != 0);
  PutRaw(Field::kGreProtocol, ntohs(mask.protocol), ntohs(val.protocol));
  PutRaw(Field::kGreKeyH, ntohl(mask.key) >> 8, ntohl(val.key) >> 8);
  PutRaw(Field::kGreKeyL, ntohl(mask.key) & 0xff, ntohl(val.key) & 0xff);
  return SetProtocol(0xff, IPPROTO_GRE);
}

absl::Status AttrReader::Mpls(const uint8_t* p, uint16_t size, uint32_t prev_type) {
  DRSIM_RETURN_IF_ERROR(ExpectSize(size, sizeof(ibv_flow_spec_mpls), "ibv_flow_spec_mpls"));
  const auto val = Load<ibv_flow_mpls_filter>(p + offsetof(ibv_flow_spec_mpls, val));
  const auto mask = Load<ibv_flow_mpls_filter>(p + offsetof(ibv_flow_spec_mpls, mask));
  DRSIM_RETURN_IF_ERROR(CheckInMask("label", &val.label, &mask.label, 4));
  // By position, as mlx5_ib: right after an outer UDP spec it is MPLS over UDP, after GRE MPLS over GRE;
  // otherwise the first label over Ethernet, of the inner packet with IBV_FLOW_SPEC_INNER.
  Field label = h_ == Headers::kInner ? Field::kInnerFirstMplsLabel : Field::kOuterFirstMplsLabel;
  std::optional<size_t>* slot = &stacks_[static_cast<int>(h_)].mpls;
  if (h_ == Headers::kOuter && prev_type == IBV_FLOW_SPEC_UDP) {
    label = Field::kOuterFirstMplsOverUdpLabel;
    slot = &over_tunnel_mpls_;
  } else if (h_ == Headers::kOuter && prev_type == IBV_FLOW_SPEC_GRE) {
    label = Field::kOuterFirstMplsOverGreLabel;
    slot = &over_tunnel_mpls_;
  }
  if (slot->has_value()) {
    return Invalid(absl::StrFormat("a second MPLS spec at the same place (spec[%d] is one)", **slot));
  }
  *slot = index_;
  // Label, exp (TC), bottom of stack and TTL follow each other in the layout as in the MPLS header.
  static_assert(
      static_cast<int>(Field::kOuterFirstMplsTtl) == static_cast<int>(Field::kOuterFirstMplsLabel) + 3 &&
      static_cast<int>(Field::kInnerFirstMplsTtl) == static_cast<int>(Field::kInnerFirstMplsLabel) + 3 &&
      static_cast<int>(Field::kOuterFirstMplsOverGreTtl) ==
          static_cast<int>(Field::kOuterFirstMplsOverGreLabel) + 3 &&
      static_cast<int>(Field::kOuterFirstMplsOverUdpTtl) ==
          static_cast<int>(Field::kOuterFirstMplsOverUdpLabel) + 3);
  const uint32_t m = ntohl(mask.label), v = ntohl(val.label);
  const int base = static_cast<int>(label);
  PutRaw(static_cast<Field>(base), m >> 12, v >> 12);
  PutRaw(static_cast<Field>(base + 1), (m >> 9) & 7, (v >> 9) & 7);
  PutRaw(static_cast<Field>(base + 2), (m >> 8) & 1, (v >> 8) & 1);
  PutRaw(static_cast<Field>(base + 3), m & 0xff, v & 0xff);
  return absl::OkStatus();
}

absl::Status AttrReader::Esp(const uint8_t* p, uint16_t size) {
  DRSIM_RETURN_IF_ERROR(ExpectSize(size, sizeof(ibv_flow_spec_esp), "ibv_flow_spec_esp"));
  const auto val = Load<ibv_flow_esp_filter>(p + offsetof(ibv_flow_spec_esp, val));
  const auto mask = Load<ibv_flow_esp_filter>(p + offsetof(ibv_flow_spec_esp, mask));
  for (absl::Status s :
       {CheckInMask("spi", &val.spi, &mask.spi, 4), CheckInMask("seq", &val.seq, &mask.seq, 4)}) {
    if (!s.ok()) return s;
  }
  if (esp_.has_value()) return Invalid(absl::StrFormat("a second ESP spec (spec[%d] is one)", *esp_));
  esp_ = index_;
  if (mask.spi != 0) {
    return Unsupported(
        "spi: misc.outer_esp_spi is not matchable by the software NIC's SW steering (no lookup builds it; "
        "docs/semantics.md)");
  }
  if (mask.seq != 0)
    return Unsupported("seq: the ESP sequence number is not matchable (mlx5_ib refuses it too)");
  return absl::OkStatus();
}

absl::Status AttrReader::Action(const uint8_t* p, uint16_t size) {
  const uint32_t type = Load<uint32_t>(p);
  switch (type) {
    case IBV_FLOW_SPEC_ACTION_TAG: {
      DRSIM_RETURN_IF_ERROR(ExpectSize(size, sizeof(ibv_flow_spec_action_tag), "ibv_flow_spec_action_tag"));
      if (tag_.has_value())
        return Invalid(absl::StrFormat("a second ACTION_TAG spec (spec[%d] is one)", *tag_));
      const auto tag = Load<uint32_t>(p + offsetof(ibv_flow_spec_action_tag, tag_id));
      if (tag >= (1u << 24)) return Invalid(absl::StrFormat("tag_id 0x%x: a flow tag is 24 bits", tag));
      tag_ = index_;
      req_.tag = tag;
      return absl::OkStatus();
    }
    case IBV_FLOW_SPEC_ACTION_DROP:
      DRSIM_RETURN_IF_ERROR(ExpectSize(size, sizeof(ibv_flow_spec_action_drop), "ibv_flow_spec_action_drop"));
      if (drop_.has_value())
        return Invalid(absl::StrFormat("a second ACTION_DROP spec (spec[%d] is one)", *drop_));
      drop_ = index_;
      req_.drop = true;
      return absl::OkStatus();
    case IBV_FLOW_SPEC_ACTION_COUNT:
      DRSIM_RETURN_IF_ERROR(
          ExpectSize(size, sizeof(ibv_flow_spec_counter_action), "ibv_flow_spec_counter_action"));
      if (count_.has_value()) {
        return Invalid(absl::StrFormat(
            "a second ACTION_COUNT spec (spec[%d] is one; a flow takes one counters)", *count_));
      }
      count_ = index_;
      req_.counters = Load<ibv_counters*>(p + offsetof(ibv_flow_spec_counter_action, counters));
      if (req_.counters == nullptr) return Invalid("counters is NULL");
      return absl::OkStatus();
    default:  // IBV_FLOW_SPEC_ACTION_HANDLE
      DRSIM_RETURN_IF_ERROR(
          ExpectSize(size, sizeof(ibv_flow_spec_action_handle), "ibv_flow_spec_action_handle"));
      return Unsupported(
          "flow actions (ibv_create_flow_action_esp: IPsec crypto) are not modelled by the software NIC");
  }
}

absl::Status AttrReader::ReadSpec(const uint8_t* p, uint16_t size, uint32_t prev_type) {
  const uint32_t type = Load<uint32_t>(p);
  const uint32_t base = type & ~static_cast<uint32_t>(IBV_FLOW_SPEC_INNER);
  const bool inner = type & IBV_FLOW_SPEC_INNER;
  const char* name = TypeName(base);
  if (name == nullptr)
    return absl::InvalidArgumentError(absl::StrFormat("spec[%d]: unknown type 0x%x", index_, type));
  what_ = absl::StrFormat("spec[%d] (%s%s)", index_, name, inner ? "|INNER" : "");
  h_ = inner ? Headers::kInner : Headers::kOuter;
  switch (base) {
    case IBV_FLOW_SPEC_ETH:
      return Eth(p, size);
    case IBV_FLOW_SPEC_IPV4:
    case IBV_FLOW_SPEC_IPV4_EXT:
      return Ipv4(p, size, base == IBV_FLOW_SPEC_IPV4_EXT);
    case IBV_FLOW_SPEC_IPV6:
      return Ipv6(p, size);
    case IBV_FLOW_SPEC_TCP:
    case IBV_FLOW_SPEC_UDP:
      return TcpUdp(p, size, base == IBV_FLOW_SPEC_TCP);
    case IBV_FLOW_SPEC_MPLS:
      return Mpls(p, size, prev_type);
    default:
      break;
  }
  if (inner)
    return Invalid("IBV_FLOW_SPEC_INNER applies to ETH, IPV4, IPV4_EXT, IPV6, TCP, UDP and MPLS specs");
  switch (base) {
    case IBV_FLOW_SPEC_VXLAN_TUNNEL:
      return Vxlan(p, size);
    case IBV_FLOW_SPEC_GRE:
      return Gre(p, size);
    case IBV_FLOW_SPEC_ESP:
      return Esp(p, size);
    default:
      return Action(p, size);
  }
}

absl::Status AttrReader::ReadHeader(const uint8_t* base) {
  const auto comp_mask = Load<uint32_t>(base + offsetof(ibv_flow_attr, comp_mask));
  const auto type = Load<uint32_t>(base + offsetof(ibv_flow_attr, type));
  const auto flags = Load<uint32_t>(base + offsetof(ibv_flow_attr, flags));
  const auto port = Load<uint8_t>(base + offsetof(ibv_flow_attr, port));
  priority_ = Load<uint16_t>(base + offsetof(ibv_flow_attr, priority));
  num_specs_ = Load<uint8_t>(base + offsetof(ibv_flow_attr, num_of_specs));
  if (comp_mask != 0)
    return absl::InvalidArgumentError(absl::StrFormat("comp_mask 0x%x: none is defined", comp_mask));
  if (type > IBV_FLOW_ATTR_SNIFFER) {
    return absl::InvalidArgumentError(
        absl::StrFormat("type %d: NORMAL (0), ALL_DEFAULT (1), MC_DEFAULT (2) or SNIFFER (3)", type));
  }
  req_.type = type;
  if (flags & ~kFlagsKnown) {
    return absl::InvalidArgumentError(
        absl::StrFormat("flags 0x%x: only DONT_TRAP (0x2) and EGRESS (0x4) are supported (bit 0, "
                        "ALLOW_LOOP_BACK, is deprecated)",
                        flags));
  }
  dont_trap_ = flags & IBV_FLOW_ATTR_FLAGS_DONT_TRAP;
  req_.egress = flags & IBV_FLOW_ATTR_FLAGS_EGRESS;
  if (dont_trap_ && type != IBV_FLOW_ATTR_NORMAL) {
    return absl::InvalidArgumentError(
        absl::StrFormat("flags: DONT_TRAP is for NORMAL rules only, not %s", AttrTypeName(type)));
  }
  if (req_.egress && (type == IBV_FLOW_ATTR_ALL_DEFAULT || type == IBV_FLOW_ATTR_MC_DEFAULT)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "flags: EGRESS does not apply to %s rules (they catch received frames)", AttrTypeName(type)));
  }
  if (num_specs_ > kMaxVerbsSpecs) {
    return absl::InvalidArgumentError(
        absl::StrFormat("num_of_specs %d: at most %d", num_specs_, kMaxVerbsSpecs));
  }
  if (port > 1) return absl::InvalidArgumentError(absl::StrFormat("port %d: the device has one port", port));
  if (priority_ > kMaxVerbsPriority) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("priority %d: the kernel's bypass namespace has verbs priorities 0 to %d", priority_,
                        kMaxVerbsPriority));
  }
  return absl::OkStatus();
}

// The kernel's is_valid_ethertype, per header stack: an ETH ether_type next to an IP spec must be a full
// mask naming that IP version (or MPLS).
absl::Status AttrReader::CheckCombination() {
  if (req_.type != IBV_FLOW_ATTR_NORMAL && num_specs_ > 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s rules take no specs (%d given; mlx5_ib installs its own match for them)",
                        AttrTypeName(req_.type), num_specs_));
  }
  for (const Stack& s : stacks_) {
    if (s.ethertype_mask == 0 || !s.ip.has_value()) continue;
    const uint16_t et = s.ethertype_value;
    const bool ok = s.ethertype_mask == 0xffff &&
                    ((et == 0x0800 && s.ip_type == IBV_FLOW_SPEC_IPV4) ||
                     (et == 0x86dd && s.ip_type == IBV_FLOW_SPEC_IPV6) || et == 0x8847 || et == 0x8848);
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrFormat("spec[%d] (ETH): ether_type 0x%04x/0x%04x contradicts spec[%d] (%s)", *s.eth, et,
                          s.ethertype_mask, *s.ip, s.ip_type == IBV_FLOW_SPEC_IPV4 ? "IPV4" : "IPV6"));
    }
  }
  if (req_.egress && req_.tag.has_value()) {
    return absl::UnimplementedError(absl::StrFormat(
        "spec[%d] (ACTION_TAG): a flow tag has no meaning on EGRESS (no completion carries it)", *tag_));
  }
  return absl::OkStatus();
}

absl::StatusOr<VerbsFlowRequest> AttrReader::Read(const ibv_flow_attr* attr) {
  if (attr == nullptr) return absl::InvalidArgumentError("flow_attr is NULL");
  const auto* base = reinterpret_cast<const uint8_t*>(attr);
  DRSIM_RETURN_IF_ERROR(ReadHeader(base));
  // As libibverbs' ibv_cmd_create_flow: num_of_specs specs right after the attribute, each as long as its
  // own size says; attr->size is not read (pyverbs sets it to sizeof(struct ibv_flow_attr) alone).
  const uint8_t* p = base + sizeof(ibv_flow_attr);
  uint32_t prev_type = 0;
  for (index_ = 0; index_ < num_specs_; ++index_) {
    const auto spec_size = Load<uint16_t>(p + offsetof(ibv_flow_spec_eth, size));
    if (spec_size < kSpecHeaderBytes) {
      return absl::InvalidArgumentError(
          absl::StrFormat("spec[%d]: size %d is smaller than a spec header (8 bytes)", index_, spec_size));
    }
    DRSIM_RETURN_IF_ERROR(ReadSpec(p, spec_size, prev_type));
    prev_type = Load<uint32_t>(p);
    p += spec_size;
  }
  DRSIM_RETURN_IF_ERROR(CheckCombination());

  const mlx5dv_dr_domain_type rx_or_tx =
      req_.egress ? MLX5DV_DR_DOMAIN_TYPE_NIC_TX : MLX5DV_DR_DOMAIN_TYPE_NIC_RX;
  switch (req_.type) {
    case IBV_FLOW_ATTR_NORMAL: {
      const hw::RootNamespace ns = dont_trap_        ? hw::RootNamespace::kDontTrap
                                   : multicast_only_ ? hw::RootNamespace::kMulticast
                                                     : hw::RootNamespace::kBypass;
      // One entry, as the kernel's: a TCP, UDP or GRE spec without an IP spec matches either version (root
      // tables take L4 fields without ip_version).
      req_.rules.push_back({rx_or_tx, ns, priority_, mask_, value_});
      break;
    }
    case IBV_FLOW_ATTR_ALL_DEFAULT:
    case IBV_FLOW_ATTR_MC_DEFAULT: {
      // mlx5_ib's leftovers rules: multicast destination MACs, and for ALL_DEFAULT unicast ones too.
      hw::MatchParams mask, multicast, unicast;
      hw::SetField(mask.bytes(), Field::kOuterDmac47_16, kDmacMulticastBit);
      hw::SetField(multicast.bytes(), Field::kOuterDmac47_16, kDmacMulticastBit);
      req_.rules.push_back({MLX5DV_DR_DOMAIN_TYPE_NIC_RX, hw::RootNamespace::kLeftovers, 0, mask, multicast});
      if (req_.type == IBV_FLOW_ATTR_ALL_DEFAULT) {
        req_.rules.push_back({MLX5DV_DR_DOMAIN_TYPE_NIC_RX, hw::RootNamespace::kLeftovers, 0, mask, unicast});
      }
      break;
    }
    default:  // SNIFFER: everything received and everything sent, or only what is sent with EGRESS
      if (!req_.egress) {
        req_.rules.push_back({MLX5DV_DR_DOMAIN_TYPE_NIC_RX, hw::RootNamespace::kSniffer, 0, {}, {}});
      }
      req_.rules.push_back({MLX5DV_DR_DOMAIN_TYPE_NIC_TX, hw::RootNamespace::kSniffer, 0, {}, {}});
      break;
  }
  return std::move(req_);
}

}  // namespace

absl::StatusOr<VerbsFlowRequest> ReadFlowAttr(const ibv_flow_attr* attr) { return AttrReader().Read(attr); }

}  // namespace drsim::capi
