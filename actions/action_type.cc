#include "actions/action_type.h"

namespace drsim::actions {

absl::string_view ActionTypeName(ActionType type) {
  static constexpr absl::string_view kNames[kNumActionTypes] = {
      "packet_reformat(L2_TUNNEL_TO_L2)",
      "packet_reformat(L2_TO_L2_TUNNEL)",
      "packet_reformat(L3_TUNNEL_TO_L2)",
      "packet_reformat(L2_TO_L3_TUNNEL)",
      "drop",
      "dest_ibv_qp",
      "dest_table",
      "flow_counter",
      "tag",
      "modify_header",
      "dest_vport",
      "flow_meter",
      "default_miss",
      "flow_sampler",
      "dest_array",
      "pop_vlan",
      "push_vlan",
      "aso(first_hit)",
      "aso(flow_meter)",
      "aso(ct)",
      "dest_root_table",
  };
  return kNames[static_cast<int>(type)];
}

bool IsTerminating(ActionType type) {
  switch (type) {
    case ActionType::kDrop:
    case ActionType::kQp:
    case ActionType::kFt:
    case ActionType::kMeter:
    case ActionType::kSampler:
    case ActionType::kDestArray:
    case ActionType::kMiss:
    case ActionType::kVport:
    case ActionType::kRootFt:
      return true;
    default:
      return false;
  }
}

absl::string_view ActionDomainName(ActionDomain domain) {
  static constexpr absl::string_view kNames[kNumActionDomains] = {
      "NIC_RX", "NIC_TX", "FDB (RX pipe, from the wire)", "FDB (TX pipe, from vports)"};
  return kNames[static_cast<int>(domain)];
}

DomainPipes PipesOf(mlx5dv_dr_domain_type domain) {
  switch (domain) {
    case MLX5DV_DR_DOMAIN_TYPE_NIC_RX:
      return {{ActionDomain::kNicIngress, ActionDomain::kNicIngress}, 1};
    case MLX5DV_DR_DOMAIN_TYPE_NIC_TX:
      return {{ActionDomain::kNicEgress, ActionDomain::kNicEgress}, 1};
    default:
      return {{ActionDomain::kFdbIngress, ActionDomain::kFdbEgress}, 2};
  }
}

}  // namespace drsim::actions
