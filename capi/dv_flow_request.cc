#include "capi/dv_flow_request.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_format.h"
#include "capi/raw_enum.h"
#include "hw/match_layout.h"
#include "hw/match_params.h"

namespace drsim::capi {
namespace {

using hw::Field;

// libmlx5 hands at most this many flow actions to one flow (CREATE_FLOW_MAX_FLOW_ACTIONS_SUPPORTED).
constexpr size_t kMaxLibFlowActions = 8;
// match_criteria_enable bit 7 names no section of the layout.
constexpr uint8_t kReservedCriteria = 0x80;

// `p->match_sz` bytes of `p` in a zeroed kernel buffer, or EINVAL naming `what` when NULL or not 1..512
// bytes (the kernel's attribute size).
absl::StatusOr<std::array<uint8_t, kFteMatchParamBytes>> ReadParams(const mlx5dv_flow_match_parameters* p,
                                                                    const char* what) {
  if (p == nullptr) return absl::InvalidArgumentError(absl::StrFormat("%s is NULL", what));
  if (p->match_sz == 0 || p->match_sz > kFteMatchParamBytes) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s->match_sz %d: the kernel takes 1 to %d bytes (PRM fte_match_param)", what,
                        p->match_sz, kFteMatchParamBytes));
  }
  std::array<uint8_t, kFteMatchParamBytes> bytes{};
  std::memcpy(bytes.data(), p->match_buf, p->match_sz);
  return bytes;
}

// mlx5_ib's raw_fs_is_multicast, on the matcher's whole mask and the flow's value.
bool IsMulticast(const DvMatcherSpec& m, const std::array<uint8_t, kFteMatchParamBytes>& value) {
  if (!(m.criteria & hw::kCriteriaOuter)) return false;
  const uint32_t dmac_mask = hw::GetField(m.mask.data(), Field::kOuterDmac47_16);
  const uint32_t dmac = hw::GetField(value.data(), Field::kOuterDmac47_16);
  constexpr uint32_t kGroupBit = 1u << 24;  // the I/G bit of the first byte
  if ((dmac & kGroupBit) && (dmac_mask & kGroupBit)) return true;
  auto multicast = [](uint32_t ip) { return (ip & 0xf0000000u) == 0xe0000000u; };
  return multicast(hw::GetField(value.data(), Field::kOuterDstIp31_0)) &&
         multicast(hw::GetField(m.mask.data(), Field::kOuterDstIp31_0));
}

absl::Status InvalidAction(size_t i, unsigned type, const std::string& why) {
  return absl::InvalidArgumentError(
      absl::StrFormat("actions_attr[%d] (%s): %s", i, DvActionTypeName(type), why));
}
absl::Status UnsupportedAction(size_t i, unsigned type, const std::string& why) {
  return absl::UnimplementedError(
      absl::StrFormat("actions_attr[%d] (%s): %s", i, DvActionTypeName(type), why));
}

}  // namespace

std::string FlowTableTypeName(unsigned ft_type) {
  switch (ft_type) {
    case MLX5DV_FLOW_TABLE_TYPE_NIC_RX:
      return "NIC_RX";
    case MLX5DV_FLOW_TABLE_TYPE_NIC_TX:
      return "NIC_TX";
    case MLX5DV_FLOW_TABLE_TYPE_FDB:
      return "FDB";
    case MLX5DV_FLOW_TABLE_TYPE_RDMA_RX:
      return "RDMA_RX";
    case MLX5DV_FLOW_TABLE_TYPE_RDMA_TX:
      return "RDMA_TX";
    default:
      return absl::StrFormat("ft_type %d", ft_type);
  }
}

absl::StatusOr<DvMatcherSpec> ReadMatcherAttr(const mlx5dv_flow_matcher_attr* attr) {
  if (attr == nullptr) return absl::InvalidArgumentError("matcher_attr is NULL");
  if (attr->comp_mask & ~uint64_t{MLX5DV_FLOW_MATCHER_MASK_FT_TYPE}) {
    return absl::UnimplementedError(
        absl::StrFormat("matcher_attr->comp_mask 0x%x: only MLX5DV_FLOW_MATCHER_MASK_FT_TYPE (0x1) is known",
                        attr->comp_mask));
  }
  if (const unsigned type = RawEnum(attr->type); type != IBV_FLOW_ATTR_NORMAL) {
    return absl::UnimplementedError(
        absl::StrFormat("matcher_attr->type %d: DV matchers are IBV_FLOW_ATTR_NORMAL (0) only", type));
  }
  DvMatcherSpec spec;
  absl::StatusOr<std::array<uint8_t, kFteMatchParamBytes>> mask =
      ReadParams(attr->match_mask, "matcher_attr->match_mask");
  if (!mask.ok()) return mask.status();
  spec.mask = *mask;
  spec.priority = attr->priority;
  spec.criteria = attr->match_criteria_enable;
  if (attr->comp_mask & MLX5DV_FLOW_MATCHER_MASK_FT_TYPE) {
    if (attr->flags != 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "matcher_attr->flags 0x%x with MLX5DV_FLOW_MATCHER_MASK_FT_TYPE: give the table by ft_type only",
          attr->flags));
    }
    spec.ft_type = RawEnum(attr->ft_type);
    if (spec.ft_type > MLX5DV_FLOW_TABLE_TYPE_RDMA_TX) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "matcher_attr->ft_type %d: NIC_RX (0), NIC_TX (1), FDB (2), RDMA_RX (3) or RDMA_TX (4)",
          spec.ft_type));
    }
    return spec;
  }
  if (attr->flags & ~uint32_t{IBV_FLOW_ATTR_FLAGS_EGRESS}) {
    return absl::InvalidArgumentError(
        absl::StrFormat("matcher_attr->flags 0x%x: only IBV_FLOW_ATTR_FLAGS_EGRESS (0x%x) is known",
                        attr->flags, IBV_FLOW_ATTR_FLAGS_EGRESS));
  }
  spec.ft_type = attr->flags ? MLX5DV_FLOW_TABLE_TYPE_NIC_TX : MLX5DV_FLOW_TABLE_TYPE_NIC_RX;
  return spec;
}

absl::StatusOr<KernelRule> ReadMatchValue(const DvMatcherSpec& matcher,
                                          const mlx5dv_flow_match_parameters* value) {
  absl::StatusOr<std::array<uint8_t, kFteMatchParamBytes>> v = ReadParams(value, "match_value");
  if (!v.ok()) return v.status();
  // mlx5 fs_core's check_valid_spec: the whole value against the whole mask.
  for (size_t i = 0; i < kFteMatchParamBytes; ++i) {
    const uint8_t outside = (*v)[i] & ~matcher.mask[i];
    if (outside == 0) continue;
    const size_t bit = i * 8 + static_cast<size_t>(__builtin_clz(outside) - 24);
    return absl::InvalidArgumentError(absl::StrFormat(
        "match_value has bits outside the matcher's mask (byte 0x%x: value 0x%02x, mask 0x%02x, %s)", i,
        (*v)[i], matcher.mask[i],
        i < hw::kMatchParamBytes ? hw::BitOwnerName(bit) : std::string("reserved")));
  }
  if (matcher.criteria & kReservedCriteria) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the matcher's match_criteria_enable 0x%x: bit 7 names no section (outer, misc, inner, misc2..misc5 "
        "are bits 0..6)",
        matcher.criteria));
  }
  const auto reserved = std::find_if(matcher.mask.begin() + hw::kMatchParamBytes, matcher.mask.end(),
                                     [](uint8_t b) { return b != 0; });
  if (reserved != matcher.mask.end()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the matcher's mask sets reserved byte 0x%x (fte_match_param ends its fields at byte 0x%x)",
        reserved - matcher.mask.begin(), hw::kMatchParamBytes));
  }
  KernelRule rule;
  rule.domain = matcher.ft_type == MLX5DV_FLOW_TABLE_TYPE_NIC_TX ? MLX5DV_DR_DOMAIN_TYPE_NIC_TX
                                                                 : MLX5DV_DR_DOMAIN_TYPE_NIC_RX;
  rule.ns = IsMulticast(matcher, *v) ? hw::RootNamespace::kMulticast : hw::RootNamespace::kBypass;
  rule.priority = matcher.priority;
  // The device reads only the enabled sections.
  for (int s = 0; s < hw::kNumSections; ++s) {
    const auto section = static_cast<hw::Section>(s);
    if (!(matcher.criteria & hw::CriteriaBit(section))) continue;
    const size_t off = hw::SectionOffset(section);
    std::memcpy(rule.mask.bytes() + off, matcher.mask.data() + off, hw::kSectionBytes);
    std::memcpy(rule.value.bytes() + off, v->data() + off, hw::kSectionBytes);
  }
  return rule;
}

std::string DvActionTypeName(unsigned type) {
  switch (type) {
    case MLX5DV_FLOW_ACTION_DEST_IBV_QP:
      return "DEST_IBV_QP";
    case MLX5DV_FLOW_ACTION_DROP:
      return "DROP";
    case MLX5DV_FLOW_ACTION_IBV_COUNTER:
      return "IBV_COUNTER";
    case MLX5DV_FLOW_ACTION_IBV_FLOW_ACTION:
      return "IBV_FLOW_ACTION";
    case MLX5DV_FLOW_ACTION_TAG:
      return "TAG";
    case MLX5DV_FLOW_ACTION_DEST_DEVX:
      return "DEST_DEVX";
    case MLX5DV_FLOW_ACTION_COUNTERS_DEVX:
      return "COUNTERS_DEVX";
    case MLX5DV_FLOW_ACTION_DEFAULT_MISS:
      return "DEFAULT_MISS";
    default:
      return absl::StrFormat("type %d", type);
  }
}

absl::StatusOr<DvActionList> ReadActionList(size_t num_actions, const mlx5dv_flow_action_attr* actions) {
  if (actions == nullptr && num_actions > 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("actions_attr is NULL with num_actions %d", num_actions));
  }
  DvActionList list;
  using Dest = DvActionList::Dest;
  for (size_t i = 0; i < num_actions; ++i) {
    const mlx5dv_flow_action_attr& a = actions[i];
    const unsigned type = RawEnum(a.type);
    Dest dest = Dest::kNone;
    switch (type) {
      case MLX5DV_FLOW_ACTION_DEST_IBV_QP:
        if (a.qp == nullptr) return InvalidAction(i, type, "qp is NULL");
        dest = Dest::kQp;
        break;
      case MLX5DV_FLOW_ACTION_DEST_DEVX:
        if (a.obj == nullptr) return InvalidAction(i, type, "obj is NULL");
        dest = Dest::kDevx;
        break;
      case MLX5DV_FLOW_ACTION_DROP:
        dest = Dest::kDrop;
        break;
      case MLX5DV_FLOW_ACTION_DEFAULT_MISS:
        dest = Dest::kDefaultMiss;
        break;
      case MLX5DV_FLOW_ACTION_IBV_FLOW_ACTION:
        if (list.flow_actions.size() == kMaxLibFlowActions) {
          return UnsupportedAction(
              i, type, absl::StrFormat("libmlx5 takes at most %d flow actions", kMaxLibFlowActions));
        }
        if (a.action == nullptr) return InvalidAction(i, type, "action is NULL");
        list.flow_actions.push_back({i, a.action});
        break;
      case MLX5DV_FLOW_ACTION_TAG:
        if (list.tag.has_value()) {
          return InvalidAction(i, type, absl::StrFormat("actions_attr[%d] is a TAG already", list.tag_index));
        }
        list.tag = a.tag_value;
        list.tag_index = i;
        break;
      case MLX5DV_FLOW_ACTION_COUNTERS_DEVX:
        if (list.counters != nullptr) {
          return UnsupportedAction(
              i, type, absl::StrFormat("actions_attr[%d] is a COUNTERS_DEVX already", list.counters_index));
        }
        if (a.obj == nullptr) return InvalidAction(i, type, "obj is NULL");
        list.counters = a.obj;
        list.counters_index = i;
        break;
      case MLX5DV_FLOW_ACTION_IBV_COUNTER:
        return UnsupportedAction(
            i, type,
            "libmlx5 (rdma-core 44) does not take verbs counters in DV flows; count with "
            "a DEVX flow counter (COUNTERS_DEVX)");
      default:
        return UnsupportedAction(i, type, "unknown action type");
    }
    if (dest == Dest::kNone) continue;
    if (list.dest != Dest::kNone) {
      return UnsupportedAction(
          i, type,
          absl::StrFormat("a flow takes one of DEST_IBV_QP, DEST_DEVX, DROP and DEFAULT_MISS; "
                          "actions_attr[%d] is one",
                          list.dest_index));
    }
    list.dest = dest;
    list.dest_index = i;
    if (dest == Dest::kQp) list.qp = a.qp;
    if (dest == Dest::kDevx) list.dest_obj = a.obj;
  }
  return list;
}

}  // namespace drsim::capi
