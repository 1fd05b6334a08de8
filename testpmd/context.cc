#include "testpmd/context.h"

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "testpmd/encap.h"

namespace drsim::testpmd {

EngineContext::EngineContext(sim::Nic& nic, const EngineOptions& options)
    : nic(nic),
      options(options),
      objects(nic, options.fdb_default_rule),
      geneve_option(nic),
      vxlan(DefaultVxlanConf()),
      nvgre(DefaultNvgreConf()),
      flow_hits(nic) {}

EngineContext::~EngineContext() {
  flows.clear();
  for (const auto& [port, qps] : queues_) {
    for (uint32_t qp : qps) nic.function(port)->DestroyQueue(qp).IgnoreError();  // nothing targets them now
  }
}

const FlowShape* EngineContext::InternShape(const FlowRule& rule) {
  defs_scratch_.clear();
  for (const Item& item : rule.pattern) {
    if (item.def->type != ItemType::kVoid) defs_scratch_.push_back(item.def);
  }
  defs_scratch_.push_back(nullptr);
  for (const Action& action : rule.actions) {
    if (action.def->type != ActionType::kVoid) defs_scratch_.push_back(action.def);
  }
  // A file's usual case: the items and actions of the flow before.
  if (last_names_ == nullptr || defs_scratch_ != last_defs_) {
    names_scratch_.items.clear();
    names_scratch_.actions.clear();
    for (const Item& item : rule.pattern) {
      if (item.def->type != ItemType::kVoid) names_scratch_.items.emplace_back(item.def->list_name);
    }
    for (const Action& action : rule.actions) {
      if (action.def->type != ActionType::kVoid) names_scratch_.actions.emplace_back(action.def->list_name);
    }
    last_names_ = &*flow_names.insert(names_scratch_).first;
    std::swap(last_defs_, defs_scratch_);
  }
  const FlowAttr& attr = rule.attr;
  const FlowShape shape{attr.group,  attr.priority, attr.ingress,
                        attr.egress, attr.transfer, attr.user_id.has_value(),
                        last_names_};
  if (last_shape_ == nullptr || !(*last_shape_ == shape)) last_shape_ = &*flow_shapes.insert(shape).first;
  return last_shape_;
}

FlowInfo Flow::Info() const {
  FlowInfo info;
  info.id = id;
  if (shape == nullptr) return info;
  info.group = shape->group;
  info.priority = shape->priority;
  info.ingress = shape->ingress;
  info.egress = shape->egress;
  info.transfer = shape->transfer;
  if (shape->has_user_id) info.user_id = user_id;
  info.items = shape->names->items;
  info.actions = shape->names->actions;
  return info;
}

absl::Status EngineContext::CheckPort(uint32_t port) const {
  if (port < static_cast<uint32_t>(num_ports())) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrFormat("no port %d: the NIC has ports 0..%d (0 the PF, N VF N)", port, num_ports() - 1));
}

absl::StatusOr<uint16_t> EngineContext::VportOfPort(uint32_t port) const {
  DRSIM_RETURN_IF_ERROR(CheckPort(port));
  // mlx5 switchdev: the PF's ethdev is the uplink representor, a VF's port its representor.
  return port == 0 ? sim::Nic::kWirePort : static_cast<uint16_t>(port);
}

mlx5dv_dr_domain_type DomainTypeOf(const FlowAttr& attr) {
  return attr.transfer  ? MLX5DV_DR_DOMAIN_TYPE_FDB
         : attr.ingress ? MLX5DV_DR_DOMAIN_TYPE_NIC_RX
                        : MLX5DV_DR_DOMAIN_TYPE_NIC_TX;
}

absl::StatusOr<PatternContext> EngineContext::PatternContextOf(const FlowRule& rule) {
  PatternContext p;
  p.domain = DomainTypeOf(rule.attr);
  p.root_table = objects.GroupLevel(p.domain, rule.attr.group) == 0;
  p.vport_of_port = [this](uint32_t port) { return SourceVportOfPort(port); };
  if (p.domain == MLX5DV_DR_DOMAIN_TYPE_FDB) {
    // mlx5 matches the creating port as the source when the pattern names none.
    absl::StatusOr<uint16_t> own = VportOfPort(rule.port);
    if (!own.ok()) return WithPos(own.status(), rule.pattern_pos);
    p.implicit_source_vport = *own;
  }
  return p;
}

absl::StatusOr<uint16_t> EngineContext::SourceVportOfPort(uint32_t port) const {
  if (port == kEswManagerPortId || port == kEswManagerEthdevId) return 0;  // the PF function, vport 0
  return VportOfPort(port);
}

absl::StatusOr<uint32_t> EngineContext::QueueNumber(uint16_t port, uint32_t index) {
  DRSIM_RETURN_IF_ERROR(CheckPort(port));
  if (index >= options.rx_queues) {
    return absl::InvalidArgumentError(
        absl::StrFormat("queue index %d is out of range: port %d has %d Rx queues (EngineOptions::rx_queues)",
                        index, port, options.rx_queues));
  }
  std::vector<uint32_t>& qps = queues_[port];
  if (qps.empty()) {
    for (int i = 0; i < options.rx_queues; ++i) {
      qps.push_back(nic.function(port)->CreateQueue(options.rx_queue_capacity));
    }
  }
  return qps[index];
}

}  // namespace drsim::testpmd
