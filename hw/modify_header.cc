#include "hw/modify_header.h"

#include <endian.h>

#include <utility>

namespace drsim::hw {
namespace {

using F = ModifyField;
using L = ModifyLayer;

constexpr uint8_t kNone = kModifyNoChecksum, kIpv4 = kModifyIpv4HeaderChecksum, kL4 = kModifyL4Checksum;

// Widths follow rdma-core's STE v1 field map (dr_ste_v1_action_modify_field_arr).
constexpr ModifyFieldInfo kFields[] = {
    {F::kSmac47_16, "SMAC_47_16", 32, L::kL2, kNone},
    {F::kSmac15_0, "SMAC_15_0", 16, L::kL2, kNone},
    {F::kEthertype, "ETHERTYPE", 16, L::kL2, kNone},
    {F::kDmac47_16, "DMAC_47_16", 32, L::kL2, kNone},
    {F::kDmac15_0, "DMAC_15_0", 16, L::kL2, kNone},
    {F::kIpDscp, "IP_DSCP", 6, L::kIp, kIpv4},
    {F::kTcpFlags, "TCP_FLAGS", 9, L::kTcp, kL4},
    {F::kTcpSport, "TCP_SPORT", 16, L::kTcp, kL4},
    {F::kTcpDport, "TCP_DPORT", 16, L::kTcp, kL4},
    {F::kIpTtl, "IP_TTL", 8, L::kIpv4, kIpv4},
    {F::kUdpSport, "UDP_SPORT", 16, L::kUdp, kL4},
    {F::kUdpDport, "UDP_DPORT", 16, L::kUdp, kL4},
    {F::kSipv6_127_96, "SIPV6_127_96", 32, L::kIpv6, kL4},
    {F::kSipv6_95_64, "SIPV6_95_64", 32, L::kIpv6, kL4},
    {F::kSipv6_63_32, "SIPV6_63_32", 32, L::kIpv6, kL4},
    {F::kSipv6_31_0, "SIPV6_31_0", 32, L::kIpv6, kL4},
    {F::kDipv6_127_96, "DIPV6_127_96", 32, L::kIpv6, kL4},
    {F::kDipv6_95_64, "DIPV6_95_64", 32, L::kIpv6, kL4},
    {F::kDipv6_63_32, "DIPV6_63_32", 32, L::kIpv6, kL4},
    {F::kDipv6_31_0, "DIPV6_31_0", 32, L::kIpv6, kL4},
    {F::kSipv4, "SIPV4", 32, L::kIpv4, kIpv4 | kL4},
    {F::kDipv4, "DIPV4", 32, L::kIpv4, kIpv4 | kL4},
    {F::kFirstVid, "FIRST_VID", 16, L::kL2, kNone},
    {F::kIpv6Hoplimit, "IPV6_HOPLIMIT", 8, L::kIpv6, kNone},
    {F::kMetadataRegA, "METADATA_REGA", 32, L::kMeta, kNone},
    {F::kMetadataRegB, "METADATA_REGB", 32, L::kMeta, kNone},
    {F::kMetadataRegC0, "METADATA_REGC_0", 32, L::kMeta, kNone},
    {F::kMetadataRegC1, "METADATA_REGC_1", 32, L::kMeta, kNone},
    {F::kMetadataRegC2, "METADATA_REGC_2", 32, L::kMeta, kNone},
    {F::kMetadataRegC3, "METADATA_REGC_3", 32, L::kMeta, kNone},
    {F::kMetadataRegC4, "METADATA_REGC_4", 32, L::kMeta, kNone},
    {F::kMetadataRegC5, "METADATA_REGC_5", 32, L::kMeta, kNone},
    {F::kTcpSeqNum, "TCP_SEQ_NUM", 32, L::kTcp, kL4},
    {F::kTcpAckNum, "TCP_ACK_NUM", 32, L::kTcp, kL4},
    {F::kGtpuTeid, "GTPU_TEID", 32, L::kGtpu, kNone},
    {F::kIpEcn, "IP_ECN", 2, L::kIp, kIpv4},
};

}  // namespace

const ModifyFieldInfo* FindModifyField(uint16_t id) {
  for (const ModifyFieldInfo& f : kFields) {
    if (static_cast<uint16_t>(f.id) == id) return &f;
  }
  return nullptr;
}

ModifyProgram MakeModifyProgram(std::vector<ModifyAction> actions) {
  ModifyProgram program;
  program.actions = std::move(actions);
  for (const ModifyAction& a : program.actions) {
    const ModifyFieldInfo* f =
        FindModifyField(a.op == static_cast<uint8_t>(ModifyOp::kCopy) ? a.dst_field : a.field);
    if (f == nullptr) continue;
    program.checksums |= f->checksums;
    program.writes_packet |= f->layer != ModifyLayer::kMeta;
  }
  return program;
}

ModifyAction DecodeModifyWord(uint64_t be_word) {
  const uint64_t w = be64toh(be_word);
  ModifyAction a;
  a.op = static_cast<uint8_t>(w >> 60);
  a.field = static_cast<uint16_t>((w >> 48) & 0xfff);
  a.offset = static_cast<uint8_t>((w >> 40) & 0x1f);
  const uint8_t length = static_cast<uint8_t>((w >> 32) & 0x1f);
  a.length = length == 0 ? 32 : length;
  a.data = static_cast<uint32_t>(w);
  a.dst_field = static_cast<uint16_t>((w >> 16) & 0xfff);
  a.dst_offset = static_cast<uint8_t>((w >> 8) & 0x1f);
  return a;
}

uint64_t ModifySetWord(ModifyField field, uint8_t offset, uint8_t length, uint32_t data) {
  uint64_t w = uint64_t{1} << 60 | uint64_t{static_cast<uint16_t>(field) & 0xfffu} << 48 |
               uint64_t{offset & 0x1fu} << 40 | uint64_t{length & 0x1fu} << 32 | data;
  return htobe64(w);
}

uint64_t ModifyAddWord(ModifyField field, uint32_t data) {
  return htobe64(uint64_t{2} << 60 | uint64_t{static_cast<uint16_t>(field) & 0xfffu} << 48 | data);
}

uint64_t ModifyCopyWord(ModifyField src, uint8_t src_offset, ModifyField dst, uint8_t dst_offset,
                        uint8_t length) {
  uint64_t w = uint64_t{3} << 60 | uint64_t{static_cast<uint16_t>(src) & 0xfffu} << 48 |
               uint64_t{src_offset & 0x1fu} << 40 | uint64_t{length & 0x1fu} << 32 |
               uint64_t{static_cast<uint16_t>(dst) & 0xfffu} << 16 | uint64_t{dst_offset & 0x1fu} << 8;
  return htobe64(w);
}

}  // namespace drsim::hw
