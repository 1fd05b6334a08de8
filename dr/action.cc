#include "absl/strings/str_format.h"
#include "dr/dr.h"
#include "dr/objects.h"

namespace drsim::dr {

using actions::ActionType;
using internal::ActionObj;

namespace {
ActionObj* NewAction(ActionType type) {
  auto* a = new ActionObj;
  a->spec.type = type;
  return a;
}
}  // namespace

absl::StatusOr<Action> Action::Drop() { return Action(NewAction(ActionType::kDrop)); }

absl::StatusOr<Action> Action::DefaultMiss() { return Action(NewAction(ActionType::kMiss)); }

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
  a->spec.table_domain = t->domain.get();
  a->dest_table = t;
  ++t->refs;
  return Action(a);
}

absl::Status Action::Destroy() {
  ActionObj* a = handle_.get();
  if (a == nullptr) return absl::InvalidArgumentError("action handle is empty");
  int refs = a->refs.load(std::memory_order_acquire);
  if (refs > 1) {
    return absl::FailedPreconditionError(absl::StrFormat("%s action is still used by %d rule(s)",
                                                         actions::ActionTypeName(a->spec.type), refs - 1));
  }
  handle_.Reset();
  return absl::OkStatus();
}

}  // namespace drsim::dr
