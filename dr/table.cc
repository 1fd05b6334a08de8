#include "absl/strings/str_format.h"
#include "dr/compiled_table.h"
#include "dr/dr.h"
#include "dr/objects.h"

namespace drsim::dr {

using internal::DomainLock;
using internal::TableObj;

absl::StatusOr<Table> Table::Create(const Domain& domain, uint32_t level) {
  if (!domain.valid()) return absl::InvalidArgumentError("domain handle is empty");
  DomainLock lock(domain.obj_);
  internal::DomainObj* dobj = domain.obj_.get();
  auto* table = new TableObj;
  table->domain = domain.obj_;
  table->ft.id = internal::NextObjectId();
  table->ft.level = level;
  table->ft.domain = dobj->type;
  ++dobj->refs;
  table->in_domain = dobj->tables.insert(dobj->tables.end(), table);
  if (level == 0) dobj->device->AttachRootTable(&table->ft);
  return Table(table);
}

absl::Status Table::Destroy() {
  TableObj* table = handle_.get();
  if (table == nullptr) return absl::InvalidArgumentError("table handle is empty");
  DomainLock lock(table->domain);  // held across the check and the release
  if (table->refs > 1) {
    size_t matchers = table->matchers.size();
    return absl::FailedPreconditionError(absl::StrFormat(
        "table %d (level %d) is still referenced by %d matcher(s) and %d action(s)", table->ft.id,
        table->ft.level, matchers, table->refs - 1 - static_cast<int>(matchers)));
  }
  handle_.Reset();
  return absl::OkStatus();
}

uint32_t Table::level() const { return handle_.get() ? handle_.get()->ft.level : 0; }
uint32_t Table::id() const { return handle_.get() ? handle_.get()->ft.id : 0; }

const hw::FlowTable* CompiledTableOf(const Table& table) {
  return table.obj() != nullptr ? &table.obj()->ft : nullptr;
}

}  // namespace drsim::dr
