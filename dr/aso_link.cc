#include "dr/aso_link.h"

#include <memory>
#include <mutex>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "dr/dr.h"
#include "dr/objects.h"

namespace drsim::dr {

using internal::AsoLink;
using internal::DomainObj;

namespace internal {

struct AsoLink {
  uint32_t object = 0;
  hw::Device* device = nullptr;  // the peer's: it retains the object for the link
  std::shared_ptr<DomainObj> peer;
  std::shared_ptr<DomainObj> linked;
  bool initiator = false;  // the link's direction and register, for rules on another device
  uint8_t reg = 0;
  absl::flat_hash_set<uint32_t> claimed;  // the CT contexts rules of `linked` use through the link
};

namespace {

// The links of the process, by (ASO space, object).
struct LinkTable {
  std::mutex mu;
  absl::flat_hash_map<std::pair<const void*, uint32_t>, std::unique_ptr<AsoLink>> links;
};

LinkTable& Links() {
  static auto* table = new LinkTable;
  return *table;
}

// The link of the object behind CT action `action`, or nullptr. Links().mu must be held.
AsoLink* LinkOf(const ActionObj& action) {
  auto it = Links().links.find({action.device->aso_space(), action.aso_object});
  return it == Links().links.end() ? nullptr : it->second.get();
}

// A link starts or ends holding `domain`.
void CountLink(DomainObj& domain, int change) {
  std::lock_guard<std::recursive_mutex> lock(domain.mu);
  domain.refs += change;
  domain.aso_links += change;
}

}  // namespace

LinkedCtClaim::~LinkedCtClaim() {
  if (link_ == nullptr) return;
  std::lock_guard<std::mutex> lock(Links().mu);
  link_->claimed.erase(context_);
}

bool IsLinkedCt(const ActionObj& action, const DomainObj& domain) {
  return action.spec.type == actions::ActionType::kAsoCt && action.spec.domain != &domain;
}

actions::ActionSpec LinkedCtSpec(const ActionObj& action, const DomainObj& domain) {
  actions::ActionSpec spec = action.spec;
  std::lock_guard<std::mutex> lock(Links().mu);
  const AsoLink* link = LinkOf(action);
  if (link == nullptr) return spec;
  spec.ct_link_domain = link->linked.get();
  if (link->linked.get() == &domain && action.device != domain.device) {
    spec.aso_initiator = link->initiator;
    spec.aso_reg = link->reg;
  }
  return spec;
}

absl::StatusOr<LinkedCtClaim> ClaimLinkedCt(const ActionObj& action, const DomainObj& domain, size_t index,
                                            int pipes) {
  std::lock_guard<std::mutex> lock(Links().mu);
  AsoLink* link = LinkOf(action);
  if (link == nullptr || link->linked.get() != &domain) {
    // (The rule's domain lock keeps its links as LinkedCtSpec found them.)
    return absl::InternalError(
        absl::StrFormat("action[%d] (aso(ct)): its link changed while compiling", index));
  }
  if (pipes > 1) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "action[%d] (aso(ct)): an FDB rule in both pipes takes its linked CT context once per pipe, and a "
        "linked context serves one at a time; match source_port to put the rule in one pipe",
        index));
  }
  if (!link->claimed.insert(action.spec.aso_context).second) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "action[%d] (aso(ct)): its CT context (ASO object %d) is in use by another rule of this domain "
        "through the link, which serves one rule per context",
        index, action.aso_object));
  }
  return LinkedCtClaim(link, action.spec.aso_context);
}

}  // namespace internal

absl::Status Domain::LinkAsoCt(const Domain& peer, uint32_t object, uint32_t flags,
                               uint8_t return_reg_c) const {
  if (obj_ == nullptr || peer.obj_ == nullptr) {
    return absl::InvalidArgumentError("aso link: domain or peer domain handle is empty");
  }
  hw::Device* device = peer.obj_->device;
  absl::StatusOr<hw::AsoContext> context = device->RetainAso(object, 0);
  if (!context.ok()) {
    return absl::InvalidArgumentError(absl::StrFormat("aso link: %s", context.status().message()));
  }
  absl::Status s;
  if (context->kind != hw::AsoKind::kConnTrack) {
    s = absl::UnimplementedError(absl::StrFormat(
        "aso link: ASO object %d is not a connection-tracking object; only those link to other domains",
        object));
  } else if (absl::Status p = internal::CheckAsoParameters(context->kind, flags, return_reg_c); !p.ok()) {
    s = absl::InvalidArgumentError(absl::StrFormat("aso link: %s", p.message()));
  } else if (obj_->device->aso_space() != device->aso_space()) {
    s = absl::InvalidArgumentError(absl::StrFormat(
        "aso link: domain %d is on another NIC than ASO object %d (peer domain %d's); its rules cannot "
        "reach the object's contexts",
        obj_->id, object, peer.obj_->id));
  }
  if (!s.ok()) {
    device->ReleaseAso(object);
    return s;
  }
  {
    // Under the linked domain's lock: no rule of it compiles meanwhile (dr/aso_link.h).
    std::lock_guard<std::recursive_mutex> domain_lock(obj_->mu);
    std::lock_guard<std::mutex> lock(internal::Links().mu);
    auto [it, added] = internal::Links().links.try_emplace({device->aso_space(), object});
    if (!added) {
      device->ReleaseAso(object);
      return absl::AlreadyExistsError(
          absl::StrFormat("aso link: ASO object %d is linked to domain %d already; unlink it first", object,
                          it->second->linked->id));
    }
    auto link = std::make_unique<AsoLink>();
    link->object = object;
    link->device = device;
    link->peer = peer.obj_;
    link->linked = obj_;
    link->initiator = flags == MLX5DV_DR_ACTION_FLAGS_ASO_CT_DIRECTION_INITIATOR;
    link->reg = return_reg_c;
    it->second = std::move(link);
    internal::CountLink(*obj_, 1);
  }
  internal::CountLink(*peer.obj_, 1);
  return absl::OkStatus();
}

absl::Status Domain::UnlinkAsoCt(uint32_t object) const {
  if (obj_ == nullptr) return absl::InvalidArgumentError("aso unlink: domain handle is empty");
  std::unique_ptr<AsoLink> link;
  {
    std::lock_guard<std::recursive_mutex> domain_lock(obj_->mu);
    std::lock_guard<std::mutex> lock(internal::Links().mu);
    auto it = internal::Links().links.find({obj_->device->aso_space(), object});
    if (it == internal::Links().links.end()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("aso unlink: ASO object %d is not linked to any domain", object));
    }
    if (it->second->linked != obj_) {
      return absl::InvalidArgumentError(
          absl::StrFormat("aso unlink: ASO object %d is linked to domain %d, not to this one (domain %d)",
                          object, it->second->linked->id, obj_->id));
    }
    if (!it->second->claimed.empty()) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "aso unlink: %d rule(s) of domain %d use CT contexts of ASO object %d through the link; destroy "
          "them first",
          it->second->claimed.size(), obj_->id, object));
    }
    link = std::move(it->second);
    internal::Links().links.erase(it);
  }
  link->device->ReleaseAso(object);
  internal::CountLink(*link->linked, -1);
  internal::CountLink(*link->peer, -1);
  return absl::OkStatus();
}

}  // namespace drsim::dr
