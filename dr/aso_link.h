// Internal: ASO CT objects linked to other domains (Domain::LinkAsoCt, mlx5dv_dr_aso_other_domain_link),
// and the claims rules make on their contexts.
//
// What. A CT action serves the rules of the domain it was made in. Linking its object to another domain
// lets the rules of that domain use the object's CT actions too, as in rdma-core 44:
//  - an object is linked to one domain at a time;
//  - through the link, a CT context serves one rule at a time (rdma-core pre-builds one pair of steering
//    entries per context and takes one reference on them per rule pipe);
//  - when the rule's device is not the action's (another function: another GVMI), the packet goes through
//    the entries the link built, so the link's direction and result register apply; on the same device,
//    the action's own apply.
//
// How. One process-wide table of links, by (ASO space, object). A link holds a reference on both domains
// and on the object. A rule compiles a CT action of another domain to LinkedCtSpec's spec and, once its
// actions compile, claims the action's context (ClaimLinkedCt); the claim lives in the rule's programs,
// which serve that rule alone, and is released when they lose it.
//
// Thread-safety. One lock guards the table. It is taken under domain locks, never the other way round;
// linking and unlinking hold the linked domain's lock, so no rule of that domain compiles meanwhile.
#ifndef DRSIM_DR_ASO_LINK_H_
#define DRSIM_DR_ASO_LINK_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "actions/action_compiler.h"

namespace drsim::dr::internal {

struct ActionObj;
struct DomainObj;
struct AsoLink;

// One rule's use of one CT context through a link; gives the context back when destroyed.
class LinkedCtClaim {
 public:
  LinkedCtClaim(AsoLink* link, uint32_t context) : link_(link), context_(context) {}
  LinkedCtClaim(LinkedCtClaim&& other) noexcept : link_(other.link_), context_(other.context_) {
    other.link_ = nullptr;
  }
  LinkedCtClaim& operator=(LinkedCtClaim&&) = delete;
  LinkedCtClaim(const LinkedCtClaim&) = delete;
  ~LinkedCtClaim();

 private:
  AsoLink* link_;
  uint32_t context_;
};

// Whether a rule of `domain` reaches `action` only through a link: a CT action of another domain.
bool IsLinkedCt(const ActionObj& action, const DomainObj& domain);

// The spec a rule of `domain` compiles such an action to: ct_link_domain names the domain its object is
// linked to (null: none); when that is `domain` and the devices differ, the link's direction and
// register replace the action's.
actions::ActionSpec LinkedCtSpec(const ActionObj& action, const DomainObj& domain);

// Claims the CT context of such an action (action[`index`] of the rule), whose object is linked to
// `domain`, for one rule in `pipes` pipes (1, or 2 for an FDB rule in both): FailedPrecondition (EBUSY)
// when another rule holds it, or for two pipes (rdma-core takes the context once per pipe, and the second
// fails).
absl::StatusOr<LinkedCtClaim> ClaimLinkedCt(const ActionObj& action, const DomainObj& domain, size_t index,
                                            int pipes);

}  // namespace drsim::dr::internal

#endif  // DRSIM_DR_ASO_LINK_H_
