#include "dr/kernel_steering.h"

#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "dr/objects.h"

namespace drsim::dr {

using actions::ActionType;
using internal::ActionObj;

absl::StatusOr<Table> KernelSteering::CreateRootTable(const Domain& domain, hw::RootNamespace ns) {
  if (!domain.valid()) return absl::InvalidArgumentError("domain handle is empty");
  internal::DomainObj* d = domain.obj();
  internal::DomainLock lock(domain.obj_);
  auto* table = new internal::TableObj;
  table->domain = domain.obj_;
  table->ft.id = internal::NextObjectId();
  table->ft.level = 0;
  table->ft.domain = d->type;
  table->ft.root_ns = ns;
  ++d->refs;
  table->in_domain = d->tables.insert(d->tables.end(), table);
  d->device->AttachRootTable(&table->ft);
  return Table(table);
}

absl::StatusOr<Action> KernelSteering::Destinations(const Domain& domain,
                                                    absl::Span<const Destination> destinations) {
  internal::DomainObj* d = domain.obj();
  if (d == nullptr) return absl::InvalidArgumentError("kernel destinations: domain handle is empty");
  if (d->type == MLX5DV_DR_DOMAIN_TYPE_FDB) {
    return absl::UnimplementedError("kernel destinations: kernel flow entries exist in NIC_RX and NIC_TX");
  }
  std::vector<hw::Replica> legs;
  std::vector<ActionObj*> members;
  for (size_t i = 0; i < destinations.size(); ++i) {
    const Destination& dest = destinations[i];
    const std::string what = absl::StrFormat("kernel destination[%d]", i);
    hw::Replica leg;
    switch (dest.kind) {
      case Destination::Kind::kQueue:
      case Destination::Kind::kCounter: {
        if (dest.action == nullptr || !dest.action->valid()) {
          return absl::InvalidArgumentError(what + ": the action is null or an empty handle");
        }
        ActionObj* a = dest.action->obj();
        if (dest.kind == Destination::Kind::kQueue) {
          if (a->spec.type != ActionType::kQp || a->spec.device != d->device) {
            return absl::InvalidArgumentError(
                what +
                ": a queue destination takes a dest_ibv_qp or dest_devx_tir action of the domain's "
                "device");
          }
          if (a->spec.is_tir) {
            leg.destination = hw::Destination::kTir;
            leg.tir = a->spec.tir;
          } else {
            leg.destination = hw::Destination::kQueue;
            leg.queue = a->spec.qp_num;
          }
        } else {
          if (a->spec.type != ActionType::kCtr) {
            return absl::InvalidArgumentError(what + ": a counter destination takes a flow_counter action");
          }
          leg.ops.push_back({hw::OpCode::kCounter, a->spec.counter_id});
        }
        members.push_back(a);
        break;
      }
      case Destination::Kind::kNextPriority:
        leg.destination = hw::Destination::kRootTable;
        leg.root_rank = dest.root_rank;
        break;
      case Destination::Kind::kAllow:
        leg.destination = hw::Destination::kDefaultMiss;
        break;
    }
    legs.push_back(std::move(leg));
  }
  auto* a = new ActionObj;
  a->spec.type = ActionType::kDestArray;
  a->replicas = std::move(legs);
  a->spec.replicas = &a->replicas;
  for (ActionObj* m : members) m->refs.fetch_add(1, std::memory_order_relaxed);
  a->members = std::move(members);
  {
    std::lock_guard<std::recursive_mutex> lock(d->mu);
    ++d->refs;
  }
  a->referenced_domain = domain.obj_;
  a->spec.domain = d;
  return Action(a);
}

}  // namespace drsim::dr
