#include "absl/strings/str_format.h"
#include "dr/dr.h"
#include "dr/objects.h"

namespace drsim::dr {

using internal::DomainObj;

absl::StatusOr<Domain> Domain::Create(hw::Device& device, mlx5dv_dr_domain_type type) {
  if (type != MLX5DV_DR_DOMAIN_TYPE_NIC_RX && type != MLX5DV_DR_DOMAIN_TYPE_NIC_TX &&
      type != MLX5DV_DR_DOMAIN_TYPE_FDB) {
    return absl::InvalidArgumentError(
        absl::StrFormat("domain type %d is not NIC_RX (0), NIC_TX (1) or FDB (2)", static_cast<int>(type)));
  }
  if (type == MLX5DV_DR_DOMAIN_TYPE_FDB && !device.IsEswitchManager()) {
    return absl::UnimplementedError("an FDB domain needs the eSwitch manager (the PF), not a VF");
  }
  auto obj = std::make_shared<DomainObj>();
  obj->id = internal::NextObjectId();
  obj->device = &device;
  obj->type = type;
  return Domain(std::move(obj));
}

Domain& Domain::operator=(Domain&& other) noexcept {
  if (this != &other) {
    Release();
    obj_ = std::move(other.obj_);
  }
  return *this;
}

Domain::~Domain() { Release(); }

void Domain::Release() {
  if (obj_ == nullptr) return;
  {
    std::lock_guard<std::recursive_mutex> lock(obj_->mu);
    --obj_->refs;
  }
  obj_.reset();
}

absl::Status Domain::Sync(uint32_t flags) const {
  if (obj_ == nullptr) return absl::InvalidArgumentError("domain handle is empty");
  constexpr uint32_t kKnown =
      MLX5DV_DR_DOMAIN_SYNC_FLAGS_SW | MLX5DV_DR_DOMAIN_SYNC_FLAGS_HW | MLX5DV_DR_DOMAIN_SYNC_FLAGS_MEM;
  if (flags & ~kKnown) {
    return absl::UnimplementedError(
        absl::StrFormat("domain sync flags 0x%x include bits other than SW|HW|MEM (0x7)", flags));
  }
  return absl::OkStatus();  // the software NIC applies every change before the call returns
}

absl::Status Domain::AllowDuplicateRules(bool allow) const {
  if (obj_ == nullptr) return absl::InvalidArgumentError("domain handle is empty");
  std::lock_guard<std::recursive_mutex> lock(obj_->mu);
  obj_->allow_duplicates = allow;
  return absl::OkStatus();
}

absl::Status Domain::Destroy() {
  if (obj_ == nullptr) return absl::InvalidArgumentError("domain handle is empty");
  std::shared_ptr<DomainObj> keep = obj_;  // outlives the lock below
  std::lock_guard<std::recursive_mutex> lock(keep->mu);
  if (keep->aso_links > 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "domain is still the peer or the linked domain of %d ASO CT link(s); unlink them first",
        keep->aso_links));
  }
  if (keep->refs > 1) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "domain is still referenced by %d table(s); destroy them first", keep->tables.size()));
  }
  --keep->refs;
  obj_.reset();
  return absl::OkStatus();
}

uint32_t Domain::id() const { return obj_ == nullptr ? 0 : obj_->id; }

mlx5dv_dr_domain_type Domain::type() const {
  return obj_ == nullptr ? MLX5DV_DR_DOMAIN_TYPE_NIC_RX : obj_->type;
}

}  // namespace drsim::dr
