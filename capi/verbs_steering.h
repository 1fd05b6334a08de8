// The kernel's flow tables behind the verbs flows (ibv_create_flow) and DV flows (mlx5dv_create_flow) of one
// software NIC, built on dr:: objects the context owns, the way Linux mlx5_ib keeps them
// (drivers/infiniband/hw/mlx5/fs.c and mlx5 fs_core): both kinds of flow go into the same tables.
//
// What. Per function and direction (NIC_RX, NIC_TX) a private domain holds one level-0 table per kernel
// namespace (dr/kernel_steering.h), so kernel flows merge with the user's own DR root tables in the
// function's merged root. In a table, entries of equal priority and mask share a matcher. A flow joins one
// or more flow-table entries (verbs_spec.h's KernelRule: a match at a place); entries with the same match
// at the same place are one entry, shared by every flow that asks for it, as the kernel merges them.
//
// How an entry steers. Its rule runs the flow tag (of its oldest flow, if any), the header rewrites its
// flows agree on (decap, modify header, encap: DV flow actions, made in the private domain by DomainFor)
// and one destination list: each QP and each TIR of its flows once, each counter once, then — in the
// DONT_TRAP namespace — the rest of the root from this priority's regular rules on (FWD_NEXT_PRIO), in the
// sniffer namespace the rest of the root after the sniffers, for a DV default miss the next namespace
// (FWD_NEXT_NS: the leftovers), and on NIC_TX "allow" (on to the eSwitch). An entry of dropping flows
// counts and drops. A flow joining an entry whose flows drop while it does not (or the reverse), that
// rewrites headers otherwise, or that names another flow tag, conflicts: EEXIST (the kernel's
// check_conflicting_ftes). When the flows of an entry change, its rule is rebuilt: the new rule is inserted
// before the old one is removed.
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
  std::optional<uint32_t> counter_id;  // the NIC flow counter of its ibv_counters or DEVX counter bulk
  // A TIR of the flow's function: DEST_DEVX of a DV flow, or an RSS QP's.
  std::optional<uint32_t> tir;
  // DV flows only.
  bool default_miss = false;    // NIC_RX: on to the next namespace
  // Root-level actions of the private domain of the flow's function and direction (DomainFor), owned by
  // the caller for as long as the flow exists; entries compare them by identity (decap by presence).
  const dr::Action* decap = nullptr;          // L2_TUNNEL_TO_L2
  const dr::Action* modify_header = nullptr;  // modify header
  const dr::Action* reformat = nullptr;       // L2_TO_L2_TUNNEL, L2_TO_L3_TUNNEL or L3_TUNNEL_TO_L2
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

  // The private domain of function `vport` and direction `type` (NIC_RX or NIC_TX), made on first use, for
  // the root-level actions a FlowContribution names.
  absl::StatusOr<const dr::Domain*> DomainFor(uint16_t vport, mlx5dv_dr_domain_type type);

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
