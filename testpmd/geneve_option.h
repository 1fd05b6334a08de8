// Internal to the engine: mlx5's GENEVE TLV option resource, as the PMD keeps it for SW steering.
//
// What
//   A flow with a geneve-opt item uses the device's GENEVE TLV option parser object for the item's class,
//   type and length. The first such flow creates the object (mlx5's
//   flow_dev_geneve_tlv_option_resource_register); later flows share it if they name the same option and
//   fail otherwise, as the device parses one option; the last flow to go destroys it.
//
// How
//   Acquire returns a hold, which the flow keeps among its holds (FlowObjects::Hold): they are released after
//   its rules and matchers, so the object is destroyed once no matcher reads the option 0 fields. The
//   object is the NIC's (sim::Nic::CreateGeneveTlvOption), shared by all ports as mlx5 shares it across
//   the ports of one device.
//
// Not thread-safe.
#ifndef DRSIM_TESTPMD_GENEVE_OPTION_H_
#define DRSIM_TESTPMD_GENEVE_OPTION_H_

#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "sim/geneve_option.h"
#include "sim/nic.h"
#include "testpmd/pattern.h"

namespace drsim::testpmd {

class GeneveOptionResource {
 public:
  explicit GeneveOptionResource(sim::Nic& nic) : nic_(nic) {}

  // A hold on the object for `use`, created if none exists. Unimplemented, at the item, when the object
  // holds another option; the NIC's error when it refuses the object.
  absl::StatusOr<std::shared_ptr<const void>> Acquire(const GeneveOptionUse& use);
  // The option the object holds, while flows hold it.
  std::optional<sim::GeneveTlvOption> current() const;

 private:
  struct Object;
  sim::Nic& nic_;
  std::weak_ptr<Object> object_;
};

}  // namespace drsim::testpmd

#endif  // DRSIM_TESTPMD_GENEVE_OPTION_H_
