// The kernel's flow tables behind the verbs flows of one software NIC, built on dr:: objects the context
// owns, the way Linux mlx5_ib keeps them (drivers/infiniband/hw/mlx5/fs.c and mlx5 fs_core).
//
// What. Per function and direction (NIC_RX, NIC_TX) a private domain holds one level-0 table per kernel
// namespace (dr/kernel_steering.h), so verbs flows merge with the user's own DR root tables in the
// function's merged root. In a table, entries of equal priority and mask share a matcher. A flow joins one
// or more flow-table entries (verbs_spec.h's KernelRule: a match at a place); entries with the same match
// at the same place are one entry, shared by every flow that asks for it, as the kernel merges them.
//
// How an entry steers. Its rule runs the flow tag (of its oldest flow, if any) and one destination list:
// each QP of its flows once, each counters object once, then — in the DONT_TRAP namespace — the rest of
// the root from this priority's regular rules on (FWD_NEXT_PRIO), in the sniffer namespace the rest of the
// root after the sniffers, and on NIC_TX without those "allow" (on to the eSwitch). An entry of dropping
// flows counts and drops. A flow joining an entry whose flows drop while it does not (or the reverse), or
// with another flow tag, conflicts: EEXIST (the kernel's check_conflicting_ftes). When the flows of an
// entry change, its rule is rebuilt: the new rule is inserted before the old one is removed.
//
// Thread-safety: none of its own; the C API calls it under the context's lock.
#ifndef DRSIM_CAPI_VERBS_STEERING_H_
#define DRSIM_CAPI_VERBS_STEERING_H_

#include <infiniband/mlx5dv.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "capi/verbs_spec.h"
#include "dr/dr.h"
#include "sim/nic.h"

namespace drsim::capi {

// What one flow adds to every entry it joins.
struct FlowContribution {
  bool drop = false;
  std::optional<uint32_t> tag;
  std::optional<uint32_t> qp_num;      // the QP that receives the frame (receive side and sniffers)
  std::optional<uint32_t> counter_id;  // the NIC flow counter of its ibv_counters
};

class VerbsSteering {
 private:
  struct Place;
  struct SharedMatcher;
  struct Entry;

 public:
  explicit VerbsSteering(sim::Nic& nic);
  VerbsSteering(const VerbsSteering&) = delete;
  VerbsSteering& operator=(const VerbsSteering&) = delete;
  ~VerbsSteering();

  // One flow's place in the entries it joined; opaque to callers.
  class Flow {
   private:
    friend class VerbsSteering;
    uint16_t vport = 0;
    FlowContribution contribution;
    std::vector<Entry*> entries;
  };

  // Joins the entries `rules` ask for on function `vport` with `contribution`, all or nothing. Errors:
  // the matcher's (a mask the software NIC cannot match, named), AlreadyExists for a conflict with the
  // flows of an existing entry.
  absl::StatusOr<std::unique_ptr<Flow>> Attach(uint16_t vport, absl::Span<const KernelRule> rules,
                                               const FlowContribution& contribution);
  // Leaves every entry `flow` joined; entries and matchers no flow uses any more go. Fails only on an
  // internal error (Internal: a rebuilt rule the device refused).
  absl::Status Detach(std::unique_ptr<Flow> flow);

 private:
  absl::StatusOr<Place*> PlaceFor(uint16_t vport, mlx5dv_dr_domain_type type, hw::RootNamespace ns);
  absl::StatusOr<SharedMatcher*> MatcherFor(Place& place, const KernelRule& rule);
  absl::Status Join(Flow& flow, const KernelRule& rule);
  absl::Status Leave(Flow& flow, Entry* entry);
  // Replaces the entry's rule by one for its current flows.
  absl::Status Rebuild(Entry& entry);

  // Releases `m` when no entry uses it any more.
  void ReleaseMatcher(SharedMatcher* m);

  // Destroyed in reverse order: entries (their rules) first, the domains last.
  sim::Nic& nic_;
  std::map<std::pair<uint16_t, int>, dr::Domain> domains_;                   // vport, domain type
  std::map<std::tuple<uint16_t, int, int>, std::unique_ptr<Place>> places_;  // vport, domain type, ns
  std::map<std::tuple<Place*, uint16_t, std::string>, std::unique_ptr<SharedMatcher>> matchers_;
  std::map<std::pair<SharedMatcher*, std::string>, std::unique_ptr<Entry>> entries_;
};

}  // namespace drsim::capi

#endif  // DRSIM_CAPI_VERBS_STEERING_H_
