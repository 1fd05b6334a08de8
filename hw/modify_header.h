// Modify-header actions in the device's (PRM) format: each action is one 64-bit big-endian word,
// set_action_in / add_action_in / copy_action_in of mlx5_ifc.h:
//
//   bits (MSB first)  0..3 action_type (SET 1, ADD 2, COPY 3)   4..15 field (COPY: src_field)
//                     19..23 offset (COPY: src_offset)           27..31 length (0 means 32)
//   SET/ADD:          32..63 data
//   COPY:             36..47 dst_field                           51..55 dst_offset
//
// and the field IDs (MLX5_ACTION_IN_FIELD_OUT_*) SW steering accepts, with their widths and the header
// they live in. rdma-core keeps these in internal headers, so they are defined here once.
#ifndef DRSIM_HW_MODIFY_HEADER_H_
#define DRSIM_HW_MODIFY_HEADER_H_

#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"

namespace drsim::hw {

enum class ModifyOp : uint8_t { kSet = 1, kAdd = 2, kCopy = 3 };

// The header a modify field lives in; fields of different IPv4/IPv6 or TCP/UDP kinds cannot be mixed.
enum class ModifyLayer : uint8_t { kL2, kIp, kIpv4, kIpv6, kTcp, kUdp, kMeta, kGtpu };

// MLX5_ACTION_IN_FIELD_OUT_* values.
enum class ModifyField : uint16_t {
  kSmac47_16 = 0x01,
  kSmac15_0 = 0x02,
  kEthertype = 0x03,
  kDmac47_16 = 0x04,
  kDmac15_0 = 0x05,
  kIpDscp = 0x06,
  kTcpFlags = 0x07,
  kTcpSport = 0x08,
  kTcpDport = 0x09,
  kIpTtl = 0x0a,
  kUdpSport = 0x0b,
  kUdpDport = 0x0c,
  kSipv6_127_96 = 0x0d,
  kSipv6_95_64 = 0x0e,
  kSipv6_63_32 = 0x0f,
  kSipv6_31_0 = 0x10,
  kDipv6_127_96 = 0x11,
  kDipv6_95_64 = 0x12,
  kDipv6_63_32 = 0x13,
  kDipv6_31_0 = 0x14,
  kSipv4 = 0x15,
  kDipv4 = 0x16,
  kFirstVid = 0x17,  // the first VLAN tag's TCI: VID in bits 0..11, DEI 12, PCP 13..15
  kIpv6Hoplimit = 0x47,
  kMetadataRegA = 0x49,
  kMetadataRegB = 0x50,
  kMetadataRegC0 = 0x51,
  kMetadataRegC1 = 0x52,
  kMetadataRegC2 = 0x53,
  kMetadataRegC3 = 0x54,
  kMetadataRegC4 = 0x55,
  kMetadataRegC5 = 0x56,
  kTcpSeqNum = 0x59,
  kTcpAckNum = 0x5b,
  kGtpuTeid = 0x6e,
  kIpEcn = 0x73,
};

// The frame checksums that cover a field, as bits: rewriting the field obliges the device to fix them.
// The IPv4 header checksum covers DSCP, ECN, TTL and the addresses; a TCP/UDP checksum covers the IP
// addresses (its pseudo-header) and the TCP/UDP fields. MACs, VLAN, ethertype, IPv6 hop limit, GTP-U and
// the metadata registers lie under none.
enum ModifyChecksum : uint8_t {
  kModifyNoChecksum = 0,
  kModifyIpv4HeaderChecksum = 1,
  kModifyL4Checksum = 2,
};

struct ModifyFieldInfo {
  ModifyField id;
  absl::string_view name;  // "IP_TTL" etc., as in MLX5_ACTION_IN_FIELD_OUT_<name>
  uint8_t width;           // bits
  ModifyLayer layer;
  uint8_t checksums;  // ModifyChecksum bits
};

// The field with PRM id `id`, or nullptr when SW steering does not accept it.
const ModifyFieldInfo* FindModifyField(uint16_t id);

// One action word, decoded (no validation: see actions/modify_header_compiler.h).
struct ModifyAction {
  uint8_t op = 0;          // ModifyOp value as found
  uint16_t field = 0;      // SET/ADD: the field; COPY: the source field
  uint8_t offset = 0;      // SET: bit offset in the field; COPY: source offset
  uint8_t length = 0;      // 1..32 (the word's 0 means 32)
  uint32_t data = 0;       // SET/ADD
  uint16_t dst_field = 0;  // COPY
  uint8_t dst_offset = 0;  // COPY
};

// Decodes a big-endian action word (as the user passes it, __be64 in memory).
ModifyAction DecodeModifyWord(uint64_t be_word);

// A modify-header list as the device runs it, with what it rewrites decided once, when the list is made,
// rather than per packet: the checksums the device must fix after it, and whether it writes the packet
// at all (a list of register writes leaves every packet byte as it came).
struct ModifyProgram {
  std::vector<ModifyAction> actions;
  uint8_t checksums = kModifyNoChecksum;  // ModifyChecksum bits of the fields the list writes
  bool writes_packet = false;             // a field it writes lies in the packet, not in a register
};

// The program of `actions`, summarised by the fields they write (SET and ADD fields, COPY destinations;
// a COPY's source is only read). Fields FindModifyField does not know count as writing nothing.
// actions/modify_header_compiler.h validates the list first.
ModifyProgram MakeModifyProgram(std::vector<ModifyAction> actions);

// Builders of big-endian action words, for users and tests.
uint64_t ModifySetWord(ModifyField field, uint8_t offset, uint8_t length, uint32_t data);
uint64_t ModifyAddWord(ModifyField field, uint32_t data);
uint64_t ModifyCopyWord(ModifyField src, uint8_t src_offset, ModifyField dst, uint8_t dst_offset,
                        uint8_t length);

}  // namespace drsim::hw

#endif  // DRSIM_HW_MODIFY_HEADER_H_
