#include <arpa/inet.h>

#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "actions/modify_header_compiler.h"
#include "base/status_macros.h"
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
  a->spec.device = &device;
  a->device = &device;
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
  a->referenced_table = t;
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

absl::StatusOr<Action> Action::DestIbPort(const Domain& domain, uint32_t ib_port) {
  internal::DomainObj* d = domain.obj();
  if (d == nullptr) return absl::InvalidArgumentError("dest_ib_port: domain handle is empty");
  if (d->type != MLX5DV_DR_DOMAIN_TYPE_FDB) {
    return absl::UnimplementedError("dest_ib_port: port destinations exist only in FDB domains");
  }
  if (ib_port == 0) return absl::InvalidArgumentError("dest_ib_port: IB ports are numbered from 1");
  if (ib_port > 1) {
    return absl::UnimplementedError(absl::StrFormat("dest_ib_port: port %d; the device has 1 port", ib_port));
  }
  return DestVport(domain, 0);  // port 1 belongs to the PF
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
  a->device = &device;
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
  DRSIM_ASSIGN_OR_RETURN(hw::ModifyProgram decoded, actions::CompileModifyHeader(d->type, words));
  ActionObj* a = NewAction(ActionType::kModifyHdr);
  a->modify = std::move(decoded);
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
  // rdma-core passes an empty encapsulation on to the device, whose firmware refuses a reformat context
  // of no bytes; refuse it here, where the message can say why.
  if (!decap && data.empty()) {
    return absl::InvalidArgumentError(
        "packet_reformat: an encapsulation (L2_TO_L2_TUNNEL, L2_TO_L3_TUNNEL) needs the header bytes to "
        "prepend; data is empty");
  }
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

absl::StatusOr<Action> Action::DestTir(hw::Device& device, uint32_t tir) {
  if (absl::Status s = device.RetainTir(tir); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrFormat("dest_devx_tir: %s", s.message()));
  }
  ActionObj* a = NewAction(ActionType::kQp);
  a->spec.is_tir = true;
  a->spec.tir = tir;
  a->spec.device = &device;
  a->device = &device;
  return Action(a);
}

absl::StatusOr<Action> Action::DestRootTable(const Table& root_table, uint16_t priority) {
  internal::TableObj* t = root_table.obj();
  if (t == nullptr) return absl::InvalidArgumentError("dest_root_table: table handle is empty");
  internal::DomainLock lock(t->domain);
  if (t->ft.level != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "dest_root_table: table %d is at level %d, not a root (level 0) table", t->ft.id, t->ft.level));
  }
  ActionObj* a = NewAction(ActionType::kRootFt);
  a->spec.table = &t->ft;
  a->spec.root_priority = priority;
  a->spec.domain = t->domain.get();
  a->referenced_table = t;
  ++t->refs;
  return Action(a);
}

absl::StatusOr<Action> Action::FlowMeter(const Table& next_table, bool active, uint8_t reg_c_index,
                                         absl::Span<const uint8_t> params) {
  internal::TableObj* t = next_table.obj();
  if (t == nullptr) return absl::InvalidArgumentError("flow_meter: next table handle is empty");
  internal::DomainLock lock(t->domain);
  if (t->ft.level == 0) {
    return absl::UnimplementedError(
        absl::StrFormat("flow_meter: next table %d is a root (level 0) table", t->ft.id));
  }
  if (params.size() > 32) {
    return absl::InvalidArgumentError(
        absl::StrFormat("flow_meter: %d bytes of parameters; flow_meter_parameters is 32", params.size()));
  }
  if (reg_c_index > 7) {
    return absl::InvalidArgumentError(
        absl::StrFormat("flow_meter: reg_c_index %d; the registers are 0..7", reg_c_index));
  }
  hw::Device* device = t->domain->device;
  absl::StatusOr<uint32_t> meter = device->CreateMeter(params, active);
  if (!meter.ok())
    return absl::InvalidArgumentError(absl::StrFormat("flow_meter: %s", meter.status().message()));
  ActionObj* a = NewAction(ActionType::kMeter);
  a->spec.meter = *meter;
  a->spec.meter_reg = reg_c_index;
  a->spec.table = &t->ft;
  a->spec.domain = t->domain.get();
  a->device = device;
  a->referenced_table = t;
  ++t->refs;
  return Action(a);
}

absl::Status Action::ModifyFlowMeter(bool active, absl::Span<const uint8_t> params, uint64_t select) const {
  ActionObj* a = handle_.get();
  if (a == nullptr) return absl::InvalidArgumentError("action handle is empty");
  if (a->spec.type != ActionType::kMeter) {
    return absl::InvalidArgumentError(absl::StrFormat("modify_flow_meter: %s is not a flow_meter action",
                                                      actions::DescribeAction(a->spec)));
  }
  absl::Status s = a->device->ModifyMeter(a->spec.meter, params, active, select);
  if (!s.ok()) return absl::InvalidArgumentError(absl::StrFormat("modify_flow_meter: %s", s.message()));
  return absl::OkStatus();
}

namespace {

// The replica (copy path) a sample action or dest-array entry list describes, or an error naming `what`.
absl::StatusOr<hw::Replica> ReplicaOf(const std::vector<ActionObj*>& parts, const std::string& what) {
  hw::Replica r;
  for (const ActionObj* m : parts) {
    const actions::ActionSpec& s = m->spec;
    switch (s.type) {
      case ActionType::kTag:
        r.ops.push_back({hw::OpCode::kTag, s.tag});
        break;
      case ActionType::kCtr:
        r.ops.push_back({hw::OpCode::kCounter, s.counter_id});
        break;
      case ActionType::kL2ToTnlL2:
        r.ops.push_back({hw::OpCode::kEncapL2, 0, nullptr, s.reformat});
        break;
      case ActionType::kL2ToTnlL3:
        r.ops.push_back({hw::OpCode::kEncapL3, 0, nullptr, s.reformat});
        break;
      case ActionType::kQp:
        r.destination = s.is_tir ? hw::Destination::kTir : hw::Destination::kQueue;
        r.queue = s.qp_num;
        r.tir = s.tir;
        break;
      case ActionType::kVport:
        r.destination = hw::Destination::kVport;
        r.vport = s.vport;
        break;
      case ActionType::kFt:
        r.destination = hw::Destination::kTable;
        r.table = s.table;
        break;
      case ActionType::kMiss:
        r.destination = hw::Destination::kDefaultMiss;
        break;
      default:
        return absl::UnimplementedError(
            absl::StrFormat("%s: %s cannot be used there", what, actions::DescribeAction(s)));
    }
  }
  return r;
}

}  // namespace

absl::StatusOr<Action> Action::FlowSampler(uint32_t sample_ratio, const Table& default_next_table,
                                           absl::Span<const Action* const> sample_actions) {
  internal::TableObj* t = default_next_table.obj();
  if (t == nullptr) return absl::InvalidArgumentError("flow_sampler: default next table handle is empty");
  internal::DomainLock lock(t->domain);
  internal::DomainObj* d = t->domain.get();
  if (d->type == MLX5DV_DR_DOMAIN_TYPE_NIC_TX) {
    return absl::UnimplementedError("flow_sampler: samplers exist only in NIC_RX and FDB domains");
  }
  if (sample_ratio == 0) return absl::InvalidArgumentError("flow_sampler: sample_ratio is 0");
  if (sample_actions.empty()) return absl::InvalidArgumentError("flow_sampler: no sample actions");
  std::vector<ActionObj*> parts;
  for (size_t i = 0; i < sample_actions.size(); ++i) {
    const Action* act = sample_actions[i];
    if (act == nullptr || !act->valid()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("flow_sampler: sample action[%d] is null or empty", i));
    }
    const actions::ActionSpec& s = act->obj()->spec;
    const bool rx_only =
        s.type == ActionType::kQp || s.type == ActionType::kCtr || s.type == ActionType::kTag;
    const bool allowed = rx_only || s.type == ActionType::kVport || s.type == ActionType::kMiss;
    if (!allowed || (rx_only && d->type != MLX5DV_DR_DOMAIN_TYPE_NIC_RX)) {
      return absl::UnimplementedError(absl::StrFormat(
          "flow_sampler: sample action[%d] (%s) is not supported in a%s domain", i,
          actions::DescribeAction(s), d->type == MLX5DV_DR_DOMAIN_TYPE_FDB ? "n FDB" : " NIC_RX"));
    }
    parts.push_back(act->obj());
  }
  DRSIM_ASSIGN_OR_RETURN(hw::Replica sample, ReplicaOf(parts, "flow_sampler"));
  ActionObj* a = NewAction(ActionType::kSampler);
  a->sample = std::move(sample);
  a->spec.sample = &a->sample;
  a->spec.sampler = d->device->CreateSampler(sample_ratio);
  a->spec.table = &t->ft;
  a->device = d->device;
  a->referenced_table = t;
  ++t->refs;
  for (ActionObj* m : parts) m->refs.fetch_add(1, std::memory_order_relaxed);
  a->members = std::move(parts);
  ReferenceDomain(a, t->domain);
  return Action(a);
}

absl::StatusOr<Action> Action::DestArray(const Domain& domain,
                                         absl::Span<const ArrayDestination> destinations) {
  internal::DomainObj* d = domain.obj();
  if (d == nullptr) return absl::InvalidArgumentError("dest_array: domain handle is empty");
  if (destinations.size() <= 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("dest_array: %d destination(s); an array takes at least 2", destinations.size()));
  }
  if (d->type == MLX5DV_DR_DOMAIN_TYPE_NIC_TX) {
    return absl::UnimplementedError("dest_array: not supported in NIC_TX domains");
  }
  std::vector<hw::Replica> replicas;
  std::vector<ActionObj*> members;
  for (size_t i = 0; i < destinations.size(); ++i) {
    const std::string what = absl::StrFormat("dest_array destination[%d]", i);
    const ArrayDestination& e = destinations[i];
    if (e.dest == nullptr || !e.dest->valid())
      return absl::InvalidArgumentError(what + ": dest is null or empty");
    const actions::ActionSpec& s = e.dest->obj()->spec;
    const bool fdb_only = s.type == ActionType::kVport || s.type == ActionType::kMiss;
    const bool allowed =
        fdb_only || s.type == ActionType::kQp || s.type == ActionType::kCtr || s.type == ActionType::kFt;
    if (!allowed || (fdb_only && d->type != MLX5DV_DR_DOMAIN_TYPE_FDB)) {
      return absl::UnimplementedError(
          absl::StrFormat("%s: %s is not a supported destination here", what, actions::DescribeAction(s)));
    }
    std::vector<ActionObj*> parts;
    if (e.reformat != nullptr) {
      if (!e.reformat->valid()) return absl::InvalidArgumentError(what + ": reformat handle is empty");
      const actions::ActionSpec& r = e.reformat->obj()->spec;
      if ((r.type != ActionType::kL2ToTnlL2 && r.type != ActionType::kL2ToTnlL3) || r.root_level) {
        return absl::UnimplementedError(
            absl::StrFormat("%s: the reformat must be a non-root L2_TO_L2_TUNNEL or L2_TO_L3_TUNNEL, not %s",
                            what, actions::DescribeAction(r)));
      }
      parts.push_back(e.reformat->obj());
    }
    parts.push_back(e.dest->obj());
    DRSIM_ASSIGN_OR_RETURN(hw::Replica replica, ReplicaOf(parts, what));
    replicas.push_back(std::move(replica));
    members.insert(members.end(), parts.begin(), parts.end());
  }
  ActionObj* a = NewAction(ActionType::kDestArray);
  a->replicas = std::move(replicas);
  a->spec.replicas = &a->replicas;
  for (ActionObj* m : members) m->refs.fetch_add(1, std::memory_order_relaxed);
  a->members = std::move(members);
  ReferenceDomain(a, domain.obj_);
  return Action(a);
}

absl::Status internal::CheckAsoParameters(hw::AsoKind kind, uint32_t flags, uint8_t return_reg_c) {
  if (return_reg_c != 1 && return_reg_c != 3 && return_reg_c != 5) {
    return absl::InvalidArgumentError(
        absl::StrFormat("aso: return_reg_c %d; it must be 1, 3 or 5 (a register pair)", return_reg_c));
  }
  if (kind == hw::AsoKind::kFirstHit) {
    if (flags & ~static_cast<uint32_t>(MLX5DV_DR_ACTION_FLAGS_ASO_FIRST_HIT_SET)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("aso first hit: flags 0x%x; only SET (0x1) is known", flags));
    }
    return absl::OkStatus();
  }
  if (kind == hw::AsoKind::kConnTrack) {
    if (flags != MLX5DV_DR_ACTION_FLAGS_ASO_CT_DIRECTION_INITIATOR &&
        flags != MLX5DV_DR_ACTION_FLAGS_ASO_CT_DIRECTION_RESPONDER) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "aso ct: flags 0x%x; exactly one direction, INITIATOR (0x1) or RESPONDER (0x2)", flags));
    }
    return absl::OkStatus();
  }
  constexpr uint32_t kColors =
      MLX5DV_DR_ACTION_FLAGS_ASO_FLOW_METER_RED | MLX5DV_DR_ACTION_FLAGS_ASO_FLOW_METER_YELLOW |
      MLX5DV_DR_ACTION_FLAGS_ASO_FLOW_METER_GREEN | MLX5DV_DR_ACTION_FLAGS_ASO_FLOW_METER_UNDEFINED;
  if ((flags & ~kColors) || __builtin_popcount(flags) != 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "aso flow meter: flags 0x%x; exactly one initial colour (RED, YELLOW, GREEN or UNDEFINED)", flags));
  }
  return absl::OkStatus();
}

namespace {

ActionType AsoActionType(hw::AsoKind kind) {
  switch (kind) {
    case hw::AsoKind::kFlowMeter:
      return ActionType::kAsoFlowMeter;
    case hw::AsoKind::kFirstHit:
      return ActionType::kAsoFirstHit;
    case hw::AsoKind::kConnTrack:
      return ActionType::kAsoCt;
  }
  return ActionType::kAsoFirstHit;
}

// Fills an aso action's spec from its parameters (already checked).
void SetAso(actions::ActionSpec& s, const hw::AsoContext& context, uint32_t flags, uint8_t return_reg_c) {
  s.type = AsoActionType(context.kind);
  s.aso_context = context.id;
  s.aso_reg = return_reg_c;
  s.aso_set = flags & MLX5DV_DR_ACTION_FLAGS_ASO_FIRST_HIT_SET;
  s.aso_initiator = flags == MLX5DV_DR_ACTION_FLAGS_ASO_CT_DIRECTION_INITIATOR;
  // The initial colour: red 0, yellow 1, green 2; undefined means colour blind (green).
  s.aso_initial_color = flags & MLX5DV_DR_ACTION_FLAGS_ASO_FLOW_METER_RED      ? 0
                        : flags & MLX5DV_DR_ACTION_FLAGS_ASO_FLOW_METER_YELLOW ? 1
                                                                               : 2;
}

bool IsAso(ActionType type) {
  return type == ActionType::kAsoFlowMeter || type == ActionType::kAsoFirstHit || type == ActionType::kAsoCt;
}

}  // namespace

absl::StatusOr<Action> Action::Aso(const Domain& domain, uint32_t object, uint32_t offset, uint32_t flags,
                                   uint8_t return_reg_c) {
  internal::DomainObj* d = domain.obj();
  if (d == nullptr) return absl::InvalidArgumentError("aso: domain handle is empty");
  absl::StatusOr<hw::AsoContext> context = d->device->RetainAso(object, offset);
  if (!context.ok())
    return absl::InvalidArgumentError(absl::StrFormat("aso: %s", context.status().message()));
  if (absl::Status s = internal::CheckAsoParameters(context->kind, flags, return_reg_c); !s.ok()) {
    d->device->ReleaseAso(object);
    return s;
  }
  ActionObj* a = NewAction(ActionType::kAsoFirstHit);
  SetAso(a->spec, *context, flags, return_reg_c);
  a->spec.device = d->device;
  a->spec.domain = d;  // a CT action serves rules of this domain only
  a->device = d->device;
  a->aso_object = object;
  return Action(a);
}

absl::Status Action::ModifyAso(uint32_t offset, uint32_t flags, uint8_t return_reg_c) const {
  ActionObj* a = handle_.get();
  if (a == nullptr) return absl::InvalidArgumentError("action handle is empty");
  if (!IsAso(a->spec.type)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("modify_aso: %s is not an aso action", actions::DescribeAction(a->spec)));
  }
  absl::StatusOr<hw::AsoContext> context = a->device->RetainAso(a->aso_object, offset);
  if (!context.ok())
    return absl::InvalidArgumentError(absl::StrFormat("modify_aso: %s", context.status().message()));
  if (absl::Status s = internal::CheckAsoParameters(context->kind, flags, return_reg_c); !s.ok()) {
    a->device->ReleaseAso(a->aso_object);
    return s;
  }
  a->device->ReleaseAso(a->aso_object);  // the action keeps its one reference on the object
  SetAso(a->spec, *context, flags, return_reg_c);
  ++a->revision;  // rules created from now on compile the new parameters (dr/rule.cc)
  return absl::OkStatus();
}

uint32_t Action::id() const { return handle_.get() ? handle_.get()->id : 0; }

std::string Action::Describe() const {
  return handle_.get() ? actions::DescribeAction(handle_.get()->spec) : std::string();
}

absl::Status Action::Destroy() {
  ActionObj* a = handle_.get();
  if (a == nullptr) return absl::InvalidArgumentError("action handle is empty");
  int refs = a->refs.load(std::memory_order_acquire);
  if (refs > 1) {
    return absl::FailedPreconditionError(
        absl::StrFormat("%s action is still used by rules, dest arrays or samplers (%d reference(s))",
                        actions::DescribeAction(a->spec), refs - 1));
  }
  handle_.Reset();
  return absl::OkStatus();
}

}  // namespace drsim::dr
