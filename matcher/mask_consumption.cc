#include "matcher/mask_consumption.h"

#include <array>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "hw/match_layout.h"
#include "hw/match_params.h"

namespace drsim::matcher {
namespace {

using hw::Field;
using hw::Headers;

// STE v1 lookup types (rdma-core dr_ste_v1.h), outer/inner pairs where the builder has both.
constexpr uint16_t kLuDontCare = 0x000f;
constexpr uint16_t kLuEthL2Tnl = 0x0002;
constexpr uint16_t kLuEthL2[2] = {0x0003, 0x0004};
constexpr uint16_t kLuIbL4 = 0x0103;
constexpr uint16_t kLuSrcQpGvmi = 0x0104;
constexpr uint16_t kLuEthL2Src[2] = {0x0005, 0x0006};
constexpr uint16_t kLuIpv4FiveTuple[2] = {0x0007, 0x0008};
constexpr uint16_t kLuIpv6Dst[2] = {0x0107, 0x0108};
constexpr uint16_t kLuEthL4[2] = {0x0009, 0x000a};
constexpr uint16_t kLuIpv6Src[2] = {0x0109, 0x010a};
constexpr uint16_t kLuEthL2SrcDst[2] = {0x000b, 0x000c};
constexpr uint16_t kLuMpls[2] = {0x010b, 0x010c};
constexpr uint16_t kLuIpv4Misc[2] = {0x000d, 0x000f};
constexpr uint16_t kLuGre = 0x010d;
constexpr uint16_t kLuFlexParserTnlHeader = 0x000e;
constexpr uint16_t kLuGeneralPurpose = 0x010e;
constexpr uint16_t kLuSteeringRegisters0 = 0x010f;
constexpr uint16_t kLuSteeringRegisters1 = 0x0110;
constexpr uint16_t kLuFlexParserOk = 0x0011;
constexpr uint16_t kLuFlexParser0 = 0x0111;
constexpr uint16_t kLuEthL4Misc = 0x0113;
constexpr uint16_t kLuTnlHeader = 0x0117;

using Fields = absl::Span<const Field>;

// The mask being consumed, and the builders built so far.
class Consumer {
 public:
  explicit Consumer(const uint8_t* mask) { std::memcpy(mask_.data(), mask, hw::kMatchParamBytes); }

  uint32_t Get(Field f) const { return hw::GetField(mask_.data(), f); }
  bool Any(Fields fields) const {
    for (Field f : fields) {
      if (Get(f) != 0) return true;
    }
    return false;
  }
  void Clear(Field f) { hw::SetField(mask_.data(), f, 0); }
  // Builds `name`, clearing `consumed` from the mask.
  void Build(absl::string_view name, bool inner, uint16_t lu_type, Fields consumed) {
    for (Field f : consumed) Clear(f);
    builders_.push_back({name, inner, lu_type});
  }

  const uint8_t* mask() const { return mask_.data(); }
  std::vector<SteBuilder>& builders() { return builders_; }

 private:
  std::array<uint8_t, hw::kMatchParamBytes> mask_;
  std::vector<SteBuilder> builders_;
};

Field H(Headers h, Field outer_field) { return hw::HeaderField(h, outer_field); }

// The L2 builders of one header stack (outer or inner): eth_l2_src_dst, eth_l2_src, eth_l2_dst.
void BuildL2(Consumer& c, Headers h) {
  const bool inner = h == Headers::kInner;
  const int io = inner ? 1 : 0;
  const Field smac[] = {H(h, Field::kOuterSmac47_16), H(h, Field::kOuterSmac15_0)};
  const Field dmac[] = {H(h, Field::kOuterDmac47_16), H(h, Field::kOuterDmac15_0)};
  const Field second_cvlan = inner ? Field::kInnerSecondCvlanTag : Field::kOuterSecondCvlanTag;
  const Field second_svlan = inner ? Field::kInnerSecondSvlanTag : Field::kOuterSecondSvlanTag;
  const Field second_vid = inner ? Field::kInnerSecondVid : Field::kOuterSecondVid;
  const Field second_cfi = inner ? Field::kInnerSecondCfi : Field::kOuterSecondCfi;
  const Field second_prio = inner ? Field::kInnerSecondPrio : Field::kOuterSecondPrio;
  const Field first_vid = H(h, Field::kOuterFirstVid), first_cfi = H(h, Field::kOuterFirstCfi),
              first_prio = H(h, Field::kOuterFirstPrio), cvlan = H(h, Field::kOuterCvlanTag),
              svlan = H(h, Field::kOuterSvlanTag), ip_version = H(h, Field::kOuterIpVersion),
              ethertype = H(h, Field::kOuterEthertype), frag = H(h, Field::kOuterFrag);

  if (c.Any({smac[0], smac[1]}) && c.Any({dmac[0], dmac[1]})) {
    c.Build("eth_l2_src_dst", inner, kLuEthL2SrcDst[io],
            {dmac[0], dmac[1], smac[0], smac[1], first_vid, first_cfi, first_prio, ip_version, cvlan, svlan});
  }
  // The fields eth_l2_src and eth_l2_dst share (dr_ste_v1_build_eth_l2_src_or_dst_bit_mask), after
  // the MAC pair each one adds in front.
  auto with_shared = [&](Field mac_hi, Field mac_lo) {
    return std::array<Field, 15>{mac_hi,       mac_lo,       first_vid,  first_cfi,  first_prio,
                                 frag,         ethertype,    ip_version, cvlan,      svlan,
                                 second_cvlan, second_svlan, second_vid, second_cfi, second_prio};
  };
  if (c.Any({smac[0], smac[1]})) {
    c.Build("eth_l2_src", inner, kLuEthL2Src[io], with_shared(smac[0], smac[1]));
  }
  if (c.Any({first_vid, first_cfi, first_prio, cvlan, svlan, dmac[0], dmac[1], ethertype, ip_version,
             second_vid, second_cfi, second_prio, second_cvlan, second_svlan})) {
    c.Build("eth_l2_dst", inner, kLuEthL2[io], with_shared(dmac[0], dmac[1]));
  }
}

// The L3/L4 builders of one header stack, chosen by the mask's ip_version read before any builder ran.
void BuildL3(Consumer& c, Headers h, uint32_t ipv) {
  const bool inner = h == Headers::kInner;
  const int io = inner ? 1 : 0;
  const Field proto = H(h, Field::kOuterIpProtocol), frag = H(h, Field::kOuterFrag),
              tcp_flags = H(h, Field::kOuterTcpFlags), ecn = H(h, Field::kOuterIpEcn),
              dscp = H(h, Field::kOuterIpDscp), ttl = H(h, Field::kOuterIpTtlHoplimit),
              ihl = H(h, Field::kOuterIpv4Ihl), tcp_sport = H(h, Field::kOuterTcpSport),
              tcp_dport = H(h, Field::kOuterTcpDport), udp_sport = H(h, Field::kOuterUdpSport),
              udp_dport = H(h, Field::kOuterUdpDport);
  const Field src[] = {H(h, Field::kOuterSrcIp127_96), H(h, Field::kOuterSrcIp95_64),
                       H(h, Field::kOuterSrcIp63_32), H(h, Field::kOuterSrcIp31_0)};
  const Field dst[] = {H(h, Field::kOuterDstIp127_96), H(h, Field::kOuterDstIp95_64),
                       H(h, Field::kOuterDstIp63_32), H(h, Field::kOuterDstIp31_0)};
  const Field flow_label = inner ? Field::kInnerIpv6FlowLabel : Field::kOuterIpv6FlowLabel;

  if (ipv == 4) {
    if (c.Any({ttl, ihl})) c.Build("eth_l3_ipv4_misc", inner, kLuIpv4Misc[io], {ttl, ihl});
    if (c.Any({proto, frag, tcp_flags, ecn, dscp, tcp_sport, tcp_dport, udp_sport, udp_dport, src[3],
               dst[3]})) {
      c.Build(
          "eth_l3_ipv4_5_tuple", inner, kLuIpv4FiveTuple[io],
          {dst[3], src[3], tcp_dport, udp_dport, tcp_sport, udp_sport, proto, frag, dscp, ecn, tcp_flags});
    }
  } else if (ipv == 6) {
    if (c.Any({dst[0], dst[1], dst[2], dst[3]})) {
      c.Build("eth_l3_ipv6_dst", inner, kLuIpv6Dst[io], {dst[0], dst[1], dst[2], dst[3]});
    }
    if (c.Any({src[0], src[1], src[2], src[3]})) {
      c.Build("eth_l3_ipv6_src", inner, kLuIpv6Src[io], {src[0], src[1], src[2], src[3]});
    }
    if (c.Any({proto, frag, tcp_flags, ecn, dscp, tcp_sport, tcp_dport, udp_sport, udp_dport, ttl,
               flow_label})) {
      c.Build(
          "eth_ipv6_l3_l4", inner, kLuEthL4[io],
          {tcp_dport, tcp_sport, udp_dport, udp_sport, proto, frag, dscp, ecn, ttl, flow_label, tcp_flags});
    }
  }
}

// TCP seq/ack, the first MPLS label, then MPLS over GRE (else over UDP), for one header stack.
void BuildL4MiscAndMpls(Consumer& c, Headers h) {
  const bool inner = h == Headers::kInner;
  const Field l4_misc[] = {inner ? Field::kInnerTcpSeqNum : Field::kOuterTcpSeqNum,
                           inner ? Field::kInnerTcpAckNum : Field::kOuterTcpAckNum};
  if (c.Any(l4_misc)) c.Build("eth_l4_misc", inner, kLuEthL4Misc, l4_misc);
  const Field mpls[] = {inner ? Field::kInnerFirstMplsLabel : Field::kOuterFirstMplsLabel,
                        inner ? Field::kInnerFirstMplsExp : Field::kOuterFirstMplsExp,
                        inner ? Field::kInnerFirstMplsSBos : Field::kOuterFirstMplsSBos,
                        inner ? Field::kInnerFirstMplsTtl : Field::kOuterFirstMplsTtl};
  if (c.Any(mpls)) c.Build("mpls", inner, kLuMpls[inner ? 1 : 0], mpls);
  // Both blocks test the outer MPLS-over-tunnel fields (as rdma-core does).
  const Field gre[] = {Field::kOuterFirstMplsOverGreLabel, Field::kOuterFirstMplsOverGreExp,
                       Field::kOuterFirstMplsOverGreSBos, Field::kOuterFirstMplsOverGreTtl};
  const Field udp[] = {Field::kOuterFirstMplsOverUdpLabel, Field::kOuterFirstMplsOverUdpExp,
                       Field::kOuterFirstMplsOverUdpSBos, Field::kOuterFirstMplsOverUdpTtl};
  if (c.Any(gre)) {
    c.Build("tnl_mpls_over_gre", inner, kLuFlexParser0, gre);
  } else if (c.Any(udp)) {
    c.Build("tnl_mpls_over_udp", inner, kLuFlexParser0, udp);
  }
}

void BuildOuterBlock(Consumer& c, mlx5dv_dr_domain_type domain) {
  const uint32_t ipv = c.Get(Field::kOuterIpVersion);
  if (c.Any({Field::kMetadataRegA})) {
    c.Build("general_purpose", false, kLuGeneralPurpose, {Field::kMetadataRegA});
  }
  const Field reg_c_0_3[] = {Field::kMetadataRegC0, Field::kMetadataRegC1, Field::kMetadataRegC2,
                             Field::kMetadataRegC3};
  if (c.Any(reg_c_0_3)) c.Build("register_0", false, kLuSteeringRegisters0, reg_c_0_3);
  const Field reg_c_4_7[] = {Field::kMetadataRegC4, Field::kMetadataRegC5, Field::kMetadataRegC6,
                             Field::kMetadataRegC7};
  if (c.Any(reg_c_4_7)) c.Build("register_1", false, kLuSteeringRegisters1, reg_c_4_7);
  if (c.Any({Field::kSourceSqn, Field::kSourcePort}) &&
      (domain == MLX5DV_DR_DOMAIN_TYPE_FDB || domain == MLX5DV_DR_DOMAIN_TYPE_NIC_RX)) {
    c.Build("src_gvmi_qpn", false, kLuSrcQpGvmi, {Field::kSourcePort, Field::kSourceSqn});
  }
  BuildL2(c, Headers::kOuter);
  BuildL3(c, Headers::kOuter, ipv);

  // One tunnel family: VXLAN-GPE, else GENEVE (+ option 0 data, + option 0 exist), else GTP-U, else the
  // generic tunnel header words.
  const Field gpe[] = {Field::kOuterVxlanGpeVni, Field::kOuterVxlanGpeNextProtocol,
                       Field::kOuterVxlanGpeFlags};
  const Field geneve[] = {Field::kGeneveVni, Field::kGeneveOam, Field::kGeneveProtocolType,
                          Field::kGeneveOptLen};
  const Field gtpu_flex[] = {Field::kGtpuDw0, Field::kGtpuTeid, Field::kGtpuDw2, Field::kGtpuFirstExtDw0};
  const Field gtpu[] = {Field::kGtpuMsgFlags, Field::kGtpuMsgType, Field::kGtpuTeid};
  const Field tunnel_header[] = {Field::kTunnelHeader0, Field::kTunnelHeader1, Field::kTunnelHeader2,
                                 Field::kTunnelHeader3};
  if (c.Any(gpe)) {
    c.Build("tnl_vxlan_gpe", false, kLuFlexParserTnlHeader, gpe);
  } else if (c.Any(geneve) || c.Any({Field::kGeneveTlvOption0Data})) {
    if (c.Any(geneve)) c.Build("tnl_geneve", false, kLuFlexParserTnlHeader, geneve);
    if (c.Any({Field::kGeneveTlvOption0Data})) {
      c.Build("tnl_geneve_tlv_opt", false, kLuFlexParser0, {Field::kGeneveTlvOption0Data});
    }
    if (c.Any({Field::kGeneveTlvOption0Exist})) {
      c.Build("tnl_geneve_tlv_opt_exist", false, kLuFlexParserOk, {Field::kGeneveTlvOption0Exist});
    }
  } else if (c.Any(gtpu_flex) || c.Any(gtpu)) {
    if (c.Any(gtpu_flex)) c.Build("tnl_gtpu_flex_parser_0", false, kLuFlexParser0, gtpu_flex);
    if (c.Any(gtpu)) c.Build("tnl_gtpu", false, kLuFlexParserTnlHeader, gtpu);
  } else if (c.Any(tunnel_header)) {
    c.Build("tunnel_header", false, kLuTnlHeader, tunnel_header);
  }

  BuildL4MiscAndMpls(c, Headers::kOuter);

  const Field icmp4[] = {Field::kIcmpType, Field::kIcmpCode, Field::kIcmpHeaderData};
  const Field icmp6[] = {Field::kIcmpv6Type, Field::kIcmpv6Code, Field::kIcmpv6HeaderData};
  if (c.Any(icmp4)) {
    c.Build("icmp", false, kLuEthL4Misc, icmp4);
  } else if (c.Any(icmp6)) {
    c.Build("icmp", false, kLuEthL4Misc, icmp6);
  }

  const Field gre[] = {Field::kGreKeyH,     Field::kGreKeyL,     Field::kGreProtocol,
                       Field::kGreCPresent, Field::kGreKPresent, Field::kGreSPresent};
  if (c.Any(gre)) c.Build("tnl_gre", false, kLuGre, gre);
}

void BuildInnerBlock(Consumer& c) {
  const uint32_t ipv = c.Get(Field::kInnerIpVersion);
  if (c.Any({Field::kVxlanVni})) {
    c.Build("eth_l2_tnl", true, kLuEthL2Tnl,
            {Field::kVxlanVni, Field::kInnerDmac47_16, Field::kInnerDmac15_0, Field::kInnerFirstVid,
             Field::kInnerFirstCfi, Field::kInnerFirstPrio, Field::kInnerFrag, Field::kInnerEthertype,
             Field::kInnerIpVersion, Field::kInnerCvlanTag, Field::kInnerSvlanTag});
  }
  BuildL2(c, Headers::kInner);
  BuildL3(c, Headers::kInner, ipv);
  BuildL4MiscAndMpls(c, Headers::kInner);
}

bool IsL3L4Field(Headers h, Field f) {
  for (Field outer :
       {Field::kOuterIpProtocol, Field::kOuterIpDscp, Field::kOuterIpEcn, Field::kOuterTcpFlags,
        Field::kOuterTcpSport, Field::kOuterTcpDport, Field::kOuterIpv4Ihl, Field::kOuterIpTtlHoplimit,
        Field::kOuterUdpSport, Field::kOuterUdpDport, Field::kOuterSrcIp127_96, Field::kOuterSrcIp95_64,
        Field::kOuterSrcIp63_32, Field::kOuterSrcIp31_0, Field::kOuterDstIp127_96, Field::kOuterDstIp95_64,
        Field::kOuterDstIp63_32, Field::kOuterDstIp31_0, Field::kOuterFrag}) {
    if (H(h, outer) == f) return true;
  }
  return f == (h == Headers::kOuter ? Field::kOuterIpv6FlowLabel : Field::kInnerIpv6FlowLabel);
}

// Why a masked field was left over: the most likely reason, for the error message.
std::string Reason(Field f, const uint8_t* original_mask, mlx5dv_dr_domain_type domain) {
  switch (f) {
    case Field::kOuterL3Ok:
    case Field::kOuterL4Ok:
    case Field::kOuterIpv4ChecksumOk:
    case Field::kOuterL4ChecksumOk:
    case Field::kInnerL3Ok:
    case Field::kInnerL4Ok:
    case Field::kInnerIpv4ChecksumOk:
    case Field::kInnerL4ChecksumOk:
      return "the ok/checksum bits are only matchable through firmware definers, which SW steering "
             "matchers do not use";
    case Field::kSourceVhcaPort:
    case Field::kSourceEswitchOwnerVhcaId:
    case Field::kOuterEmdTag:
    case Field::kInnerEspSpi:
    case Field::kOuterEspSpi:
    case Field::kMacsecTag0:
    case Field::kMacsecTag1:
    case Field::kMacsecTag2:
    case Field::kMacsecTag3:
      return "no SW steering builder matches this field";
    case Field::kSourcePort:
    case Field::kSourceSqn:
      if (domain == MLX5DV_DR_DOMAIN_TYPE_NIC_TX) return "not matchable in a NIC_TX domain";
      break;
    default:
      break;
  }
  if (hw::Info(f).section == hw::Section::kMisc4) {
    return "programmable flex-parser samples are not modelled by the software NIC";
  }
  if (f == Field::kOuterFrag || f == Field::kInnerFrag) {
    return "frag is matched by an L2 lookup (with a MAC, VLAN or ethertype field) or, with ip_version in the "
           "mask, by the L3 lookup";
  }
  for (Headers h : {Headers::kOuter, Headers::kInner}) {
    if (!IsL3L4Field(h, f)) continue;
    const char* side = h == Headers::kOuter ? "outer" : "inner";
    uint32_t ipv = hw::GetField(original_mask, H(h, Field::kOuterIpVersion));
    if (ipv == 0) {
      return absl::StrFormat("IP and L4 fields need %s.ip_version (4 or 6) in the mask", side);
    }
    return absl::StrFormat("not matchable with %s.ip_version %d", side, ipv);
  }
  return "it conflicts with another field of the mask (one tunnel type, ICMPv4 or ICMPv6, per matcher)";
}

}  // namespace

absl::StatusOr<std::vector<SteBuilder>> ConsumeMask(mlx5dv_dr_domain_type domain, bool rx, uint8_t criteria,
                                                    const uint8_t* mask) {
  Consumer c(mask);
  // The FDB RX pipe only sees wire traffic: it drops the source_port match (rdma-core's optimize_rx) and
  // lets a matcher of nothing else hit everything.
  const bool optimize_rx = domain == MLX5DV_DR_DOMAIN_TYPE_FDB && rx;
  const bool allow_empty = optimize_rx && (criteria & hw::kCriteriaMisc) && c.Get(Field::kSourcePort) != 0;
  if (optimize_rx) c.Clear(Field::kSourcePort);

  if (criteria & (hw::kCriteriaOuter | hw::kCriteriaMisc | hw::kCriteriaMisc2 | hw::kCriteriaMisc3 |
                  hw::kCriteriaMisc5)) {
    BuildOuterBlock(c, domain);
  }
  if (criteria & (hw::kCriteriaInner | hw::kCriteriaMisc | hw::kCriteriaMisc2 | hw::kCriteriaMisc3)) {
    BuildInnerBlock(c);
  }
  const Field ib_l4[] = {Field::kBthOpcode, Field::kBthDstQp, Field::kBthA};
  if ((criteria & hw::kCriteriaMisc) && c.Any(ib_l4)) c.Build("ib_l4", false, kLuIbL4, ib_l4);

  std::vector<SteBuilder>& builders = c.builders();
  if ((builders.empty() && allow_empty) || criteria == 0) {
    builders.push_back({"empty_always_hit", false, kLuDontCare});
  }
  // The first masked bit no builder took, named, with the likely reason.
  std::string leftover;
  for (size_t byte = 0; byte < hw::kMatchParamBytes && leftover.empty(); ++byte) {
    if (c.mask()[byte] == 0) continue;
    size_t bit = byte * 8 + __builtin_clz(static_cast<unsigned>(c.mask()[byte]) << 24);
    std::optional<Field> f = hw::FieldAtBit(bit);
    leftover =
        absl::StrCat("mask field ", hw::BitOwnerName(bit),
                     " cannot be matched: ", f ? Reason(*f, mask, domain) : "reserved bits must be zero");
  }
  if (builders.empty()) {
    // rdma-core checks "no builder at all" (EINVAL) before "bits left over" (EOPNOTSUPP).
    if (!leftover.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("no steering lookup can be built: ", leftover));
    }
    return absl::InvalidArgumentError(absl::StrFormat(
        "match_criteria_enable 0x%02x selects sections whose mask sets no bit: nothing to match on "
        "(use match_criteria_enable 0 for a match-all matcher)",
        criteria));
  }
  if (!leftover.empty()) return absl::UnimplementedError(leftover);
  return std::move(builders);
}

}  // namespace drsim::matcher
