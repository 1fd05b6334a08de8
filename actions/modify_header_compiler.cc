#include "actions/modify_header_compiler.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"

namespace drsim::actions {
namespace {

using hw::ModifyField;
using hw::ModifyLayer;
using hw::ModifyOp;

std::string FieldName(uint16_t id) {
  const hw::ModifyFieldInfo* f = hw::FindModifyField(id);
  return f ? std::string(f->name) : absl::StrFormat("field 0x%x", id);
}

std::string Describe(size_t i, const hw::ModifyAction& a) {
  switch (static_cast<ModifyOp>(a.op)) {
    case ModifyOp::kSet:
      return absl::StrFormat("modify_header action[%d] (SET %s)", i, FieldName(a.field));
    case ModifyOp::kAdd:
      return absl::StrFormat("modify_header action[%d] (ADD %s)", i, FieldName(a.field));
    case ModifyOp::kCopy:
      return absl::StrFormat("modify_header action[%d] (COPY %s -> %s)", i, FieldName(a.field),
                             FieldName(a.dst_field));
  }
  return absl::StrFormat("modify_header action[%d] (type %d)", i, a.op);
}

// METADATA_REGA exists only on transmit, METADATA_REGB only on receive (rdma-core's field limits).
absl::Status CheckRegister(mlx5dv_dr_domain_type domain, uint16_t field, const std::string& what) {
  if (field == static_cast<uint16_t>(ModifyField::kMetadataRegA) && domain != MLX5DV_DR_DOMAIN_TYPE_NIC_TX) {
    return absl::InvalidArgumentError(what + ": METADATA_REGA can only be modified in NIC_TX domains");
  }
  if (field == static_cast<uint16_t>(ModifyField::kMetadataRegB) && domain != MLX5DV_DR_DOMAIN_TYPE_NIC_RX) {
    return absl::InvalidArgumentError(what + ": METADATA_REGB can only be modified in NIC_RX domains");
  }
  return absl::OkStatus();
}

// The field, or InvalidArgument naming it.
absl::StatusOr<const hw::ModifyFieldInfo*> Field(uint16_t id, const std::string& what) {
  const hw::ModifyFieldInfo* f = hw::FindModifyField(id);
  if (f == nullptr) return absl::InvalidArgumentError(what + absl::StrFormat(": unknown field 0x%x", id));
  return f;
}

absl::Status CheckFits(const hw::ModifyFieldInfo& f, int offset, int length, const std::string& what) {
  if (offset + length > f.width) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: offset %d + length %d exceeds %s's %d bits", what,
                                                      offset, length, f.name, f.width));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<hw::ModifyProgram> CompileModifyHeader(mlx5dv_dr_domain_type domain,
                                                      absl::Span<const uint64_t> words) {
  if (words.empty()) return absl::InvalidArgumentError("modify_header: the action list is empty");
  std::vector<hw::ModifyAction> out;
  ModifyLayer l3 = ModifyLayer::kMeta, l4 = ModifyLayer::kMeta;  // kMeta: none seen yet
  for (size_t i = 0; i < words.size(); ++i) {
    const hw::ModifyAction a = hw::DecodeModifyWord(words[i]);
    const std::string what = Describe(i, a);
    const hw::ModifyFieldInfo* dst = nullptr;
    switch (static_cast<ModifyOp>(a.op)) {
      case ModifyOp::kSet: {
        DRSIM_RETURN_IF_ERROR(CheckRegister(domain, a.field, what));
        DRSIM_ASSIGN_OR_RETURN(const hw::ModifyFieldInfo* f, Field(a.field, what));
        DRSIM_RETURN_IF_ERROR(CheckFits(*f, a.offset, a.length, what));
        dst = f;
        break;
      }
      case ModifyOp::kAdd: {
        const ModifyField f = static_cast<ModifyField>(a.field);
        if (f != ModifyField::kIpTtl && f != ModifyField::kIpv6Hoplimit && f != ModifyField::kTcpSeqNum &&
            f != ModifyField::kTcpAckNum) {
          return absl::InvalidArgumentError(
              what + ": ADD is only supported on IP_TTL, IPV6_HOPLIMIT, TCP_SEQ_NUM and TCP_ACK_NUM");
        }
        dst = hw::FindModifyField(a.field);
        break;
      }
      case ModifyOp::kCopy: {
        DRSIM_RETURN_IF_ERROR(CheckRegister(domain, a.field, what));
        DRSIM_RETURN_IF_ERROR(CheckRegister(domain, a.dst_field, what));
        DRSIM_ASSIGN_OR_RETURN(const hw::ModifyFieldInfo* src, Field(a.field, what));
        DRSIM_ASSIGN_OR_RETURN(const hw::ModifyFieldInfo* d, Field(a.dst_field, what));
        DRSIM_RETURN_IF_ERROR(CheckFits(*src, a.offset, a.length, what));
        DRSIM_RETURN_IF_ERROR(CheckFits(*d, a.dst_offset, a.length, what));
        dst = d;
        break;
      }
      default:
        return absl::UnimplementedError(
            absl::StrFormat("modify_header action[%d]: unknown action type %d", i, a.op));
    }
    // The hardware modifies one L3 type and one L4 type per list.
    if (dst->layer == ModifyLayer::kIpv4 || dst->layer == ModifyLayer::kIpv6) {
      if (l3 != ModifyLayer::kMeta && l3 != dst->layer) {
        return absl::UnimplementedError(what + ": a list cannot modify both IPv4 and IPv6 fields");
      }
      l3 = dst->layer;
    }
    if (dst->layer == ModifyLayer::kTcp || dst->layer == ModifyLayer::kUdp) {
      if (l4 != ModifyLayer::kMeta && l4 != dst->layer) {
        return absl::InvalidArgumentError(what + ": a list cannot modify both TCP and UDP fields");
      }
      l4 = dst->layer;
    }
    out.push_back(a);
  }
  return hw::MakeModifyProgram(std::move(out));
}

}  // namespace drsim::actions
