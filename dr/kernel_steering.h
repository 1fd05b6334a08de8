// dr::KernelSteering — drsim-internal: the parts of the kernel's own flow steering that rdma-core's Direct
// Rule API has no objects for, for front ends that model kernel-owned rules (the verbs flows of
// capi/verbs_flow.h).
//
// What and why. rdma-core reaches the kernel's steering tree only through root (level-0) tables, which sit
// in its bypass namespace. The kernel (Linux mlx5_ib) puts verbs flows there too, and also into
// namespaces of its own: a DONT_TRAP priority before each regular one, the multicast priority, the
// leftovers namespace and the sniffer namespaces (hw::RootNamespace, in lookup order). Its flow-table
// entries may hold several destinations at once: receive queues, counters and "the next priority"
// (FWD_NEXT_PRIO), which lets a frame that reached a queue go on to the rules after it.
//
// How. CreateRootTable makes an ordinary level-0 table whose matchers the device merges into the root at
// the namespace's place (hw::RootRank). Destinations makes a terminating action listing an entry's
// destinations; the device executes it as a dest array whose legs may go back into the merged root from a
// rank, or, on NIC_TX, deliver a copy of a sent frame to a receive queue (the kernel's TX sniffer).
// Matchers, rules and lifetimes are the ordinary dr:: ones; rules of these tables take the root-table
// (kernel) action path.
//
// Boundaries. Nothing here is reachable through the mlx5dv_dr_* C API, and the public dr:: calls behave as
// before: their root tables are kBypass, and their dest arrays still refuse NIC_TX domains and root-table
// legs.
//
// Thread-safety: as the rest of dr:: (the domain's lock serialises control calls).
#ifndef DRSIM_DR_KERNEL_STEERING_H_
#define DRSIM_DR_KERNEL_STEERING_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "dr/dr.h"
#include "hw/flow_table.h"

namespace drsim::dr {

class KernelSteering {
 public:
  // A level-0 table of `domain` in namespace `ns` of the merged root of the domain's type on its device.
  // InvalidArgument for an empty domain handle.
  static absl::StatusOr<Table> CreateRootTable(const Domain& domain, hw::RootNamespace ns);

  // One destination of a kernel flow-table entry.
  struct Destination {
    enum class Kind : uint8_t {
      kQueue,    // `action`, a dest_ibv_qp or dest_devx_tir action of the domain's device: the frame (or a
                 // copy) goes to that queue, or to one of the TIR's queues by its hash
      kCounter,  // `action`, a flow_counter action: counts the frame
      kNextPriority,  // the frame goes on through the merged root from hw::RootRank `root_rank`
      kAllow,         // the domain's default (NIC_TX: on to the eSwitch)
    };
    Kind kind = Kind::kAllow;
    const Action* action = nullptr;
    uint32_t root_rank = 0;
  };

  // Terminating, for rules of NIC_RX and NIC_TX root tables (Unimplemented in FDB domains): the frame
  // itself takes the first destination that is not a counter and every other one gets a copy, after the
  // rule's other actions ran; counters count the frame once each. With no destination but counters, the
  // frame is counted and dropped. On NIC_TX a queue receives a copy of the sent frame. InvalidArgument for
  // a queue action that is not a dest QP or TIR of the domain's device, a counter action that is not a
  // flow_counter, or an empty handle. Holds references on the domain and the actions it lists.
  static absl::StatusOr<Action> Destinations(const Domain& domain,
                                             absl::Span<const Destination> destinations);
};

}  // namespace drsim::dr

#endif  // DRSIM_DR_KERNEL_STEERING_H_
