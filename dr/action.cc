#include <arpa/inet.h>

#include "absl/strings/str_format.h"
#include "actions/modify_header_compiler.h"
#include "dr/dr.h"
#include "dr/objects.h"

namespace drsim::dr {

using actions::ActionType;
using internal::ActionObj;

namespace {

// The largest encapsulation header the modelled device takes (its max_encap_header_size).
constexpr size_t kMaxEncapBytes = 128;

ActionObj* NewAction(ActionType type) {
  auto* a = new ActionObj;
  a->spec.type = type;
  return a;
}

// Takes a reference on the domain for an action bound to it (modify_header, packet_reformat).
void ReferenceDomain(ActionObj* a, const std::shared_ptr<internal::DomainObj>& domain) {
  std::lock_guard<std::recursive_mutex> lock(domain->mu);
  ++domain->refs;
  a->referenced_domain = domain;
  a->spec.domain = domain.get();
}

}  // namespace

absl::StatusOr<Action> Action::Drop() { return Action(NewAction(ActionType::kDrop)); }

absl::StatusOr<Action> Action::DefaultMiss() { return Action(NewAction(ActionType::kMiss)); }

absl::StatusOr<Action> Action::PopVlan() { return Action(NewAction(ActionType::kPopVlan)); }

absl::StatusOr<Action> Action::Tag(uint32_t tag) {
  ActionObj* a = NewAction(ActionType::kTag);
  a->spec.tag = tag & 0xffffff;  // rdma-core keeps the low 24 bits, the width of a CQE flow tag
  return Action(a);
}

absl::StatusOr<Action> Action::DestQp(hw::Device& device, uint32_t qp_num) {
  if (absl::Status s = device.RetainQueue(qp_num); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrFormat("dest_ibv_qp: %s", s.message()));
  }
  ActionObj* a = NewAction(ActionType::kQp);
  a->spec.qp_num = qp_num;
  a->spec.queue_device = &device;
  a->queue_device = &device;
  return Action(a);
}

absl::StatusOr<Action> Action::DestTable(const Table& table) {
  internal::TableObj* t = table.obj();
  if (t == nullptr) return absl::InvalidArgumentError("dest_table: table handle is empty");
  internal::DomainLock lock(t->domain);
  if (t->ft.level == 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "dest_table: table %d is a root (level 0) table, which rules cannot jump to", t->ft.id));
  }
  ActionObj* a = NewAction(ActionType::kFt);
  a->spec.table = &t->ft;
  a->spec.domain = t->domain.get();
  a->dest_table = t;
  ++t->refs;
  return Action(a);
}

absl::StatusOr<Action> Action::DestVport(const Domain& domain, uint32_t vport) {
  internal::DomainObj* d = domain.obj();
  if (d == nullptr) return absl::InvalidArgumentError("dest_vport: domain handle is empty");
  if (d->type != MLX5DV_DR_DOMAIN_TYPE_FDB) {
    return absl::UnimplementedError("dest_vport: vport destinations exist only in FDB domains");
  }
  if (vport > hw::kWireVport) {
    return absl::InvalidArgumentError(absl::StrFormat("dest_vport: vport %d is above 0xffff", vport));
  }
  if (!d->device->HasVport(vport)) {
    return absl::InvalidArgumentError(absl::StrFormat("dest_vport: the eSwitch has no vport %d", vport));
  }
  ActionObj* a = NewAction(ActionType::kVport);
  a->spec.vport = static_cast<uint16_t>(vport);
  a->spec.domain = d;
  return Action(a);
}

absl::StatusOr<Action> Action::FlowCounter(hw::Device& device, uint32_t counter_id, uint32_t offset) {
  const uint32_t id = counter_id + offset;
  if (id < counter_id) {
    return absl::InvalidArgumentError(
        absl::StrFormat("flow_counter: id %d + offset %d overflows", counter_id, offset));
  }
  if (absl::Status s = device.RetainCounter(id); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrFormat("flow_counter: %s", s.message()));
  }
  ActionObj* a = NewAction(ActionType::kCtr);
  a->spec.counter_id = id;
  a->counter_device = &device;
  return Action(a);
}

absl::StatusOr<Action> Action::ModifyHeader(const Domain& domain, uint32_t flags,
                                            absl::Span<const uint64_t> words) {
  internal::DomainObj* d = domain.obj();
  if (d == nullptr) return absl::InvalidArgumentError("modify_header: domain handle is empty");
  if (flags & ~static_cast<uint32_t>(MLX5DV_DR_ACTION_FLAGS_ROOT_LEVEL)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("modify_header: flags 0x%x: only ROOT_LEVEL (0x1) is known", flags));
  }
  absl::StatusOr<std::vector<hw::ModifyAction>> decoded = actions::CompileModifyHeader(d->type, words);
  if (!decoded.ok()) return decoded.status();
  ActionObj* a = NewAction(ActionType::kModifyHdr);
  a->modify = *std::move(decoded);
  a->spec.modify = &a->modify;
  a->spec.root_level = flags & MLX5DV_DR_ACTION_FLAGS_ROOT_LEVEL;
  ReferenceDomain(a, domain.obj_);
  return Action(a);
}

absl::StatusOr<Action> Action::PacketReformat(const Domain& domain, uint32_t flags,
                                              mlx5dv_flow_action_packet_reformat_type type,
                                              absl::Span<const uint8_t> data) {
  internal::DomainObj* d = domain.obj();
  if (d == nullptr) return absl::InvalidArgumentError("packet_reformat: domain handle is empty");
  if (flags & ~static_cast<uint32_t>(MLX5DV_DR_ACTION_FLAGS_ROOT_LEVEL)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("packet_reformat: flags 0x%x: only ROOT_LEVEL (0x1) is known", flags));
  }
  if ((data.data() == nullptr) != data.empty()) {
    return absl::InvalidArgumentError(
        "packet_reformat: data and data size disagree (one is null/zero, the other not)");
  }
  if (data.size() > kMaxEncapBytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "packet_reformat: %d bytes of data exceed the device's %d", data.size(), kMaxEncapBytes));
  }
  if (type > MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TO_L3_TUNNEL) {
    return absl::InvalidArgumentError(
        absl::StrFormat("packet_reformat: unknown type %d", static_cast<int>(type)));
  }
  const bool decap = type == MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TUNNEL_TO_L2 ||
                     type == MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L3_TUNNEL_TO_L2;
  if (decap && d->type == MLX5DV_DR_DOMAIN_TYPE_NIC_TX) {
    return absl::InvalidArgumentError("packet_reformat: NIC_TX domains take only encapsulation types");
  }
  if (!decap && d->type == MLX5DV_DR_DOMAIN_TYPE_NIC_RX) {
    return absl::InvalidArgumentError("packet_reformat: NIC_RX domains take only decapsulation types");
  }
  if (type == MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L3_TUNNEL_TO_L2 && data.size() != 14 &&
      data.size() != 18) {
    return absl::InvalidArgumentError(
        absl::StrFormat("packet_reformat L3_TUNNEL_TO_L2: the new L2 header is %d bytes; it must be 14 "
                        "(DMAC, SMAC, ethertype) "
                        "or 18 (with a VLAN tag)",
                        data.size()));
  }
  if (decap) {
    return absl::UnimplementedError(
        "packet_reformat: decapsulation needs the tunnel parser, which lands next");
  }
  static constexpr ActionType kTypes[] = {ActionType::kTnlL2ToL2, ActionType::kL2ToTnlL2,
                                          ActionType::kTnlL3ToL2, ActionType::kL2ToTnlL3};
  ActionObj* a = NewAction(kTypes[type]);
  if (type != MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TUNNEL_TO_L2)
    a->reformat.assign(data.begin(), data.end());
  a->spec.reformat = &a->reformat;
  a->spec.root_level = flags & MLX5DV_DR_ACTION_FLAGS_ROOT_LEVEL;
  ReferenceDomain(a, domain.obj_);
  return Action(a);
}

absl::StatusOr<Action> Action::PushVlan(const Domain& domain, uint32_t vlan_hdr_be) {
  if (domain.obj() == nullptr) return absl::InvalidArgumentError("push_vlan: domain handle is empty");
  const uint32_t header = ntohl(vlan_hdr_be);
  const uint16_t tpid = header >> 16;
  if (tpid != 0x8100 && tpid != 0x88a8) {
    return absl::InvalidArgumentError(
        absl::StrFormat("push_vlan: TPID 0x%04x; it must be 0x8100 (C-tag) or 0x88a8 (S-tag)", tpid));
  }
  ActionObj* a = NewAction(ActionType::kPushVlan);
  a->spec.vlan_header = header;
  return Action(a);
}

absl::Status Action::Destroy() {
  ActionObj* a = handle_.get();
  if (a == nullptr) return absl::InvalidArgumentError("action handle is empty");
  int refs = a->refs.load(std::memory_order_acquire);
  if (refs > 1) {
    return absl::FailedPreconditionError(
        absl::StrFormat("%s action is still used by %d rule(s)", actions::DescribeAction(a->spec), refs - 1));
  }
  handle_.Reset();
  return absl::OkStatus();
}

}  // namespace drsim::dr
