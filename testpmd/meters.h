// Internal to the engine: testpmd's meter objects (rte_mtr) — profiles, policies and meters per port — and
// their DR form.
//
// A meter becomes, per domain it is used in, a MeterInstance: a DR flow meter action (the profile's PRM
// parameters, its colour written to reg_c_5, registers.h) whose next table is an engine table holding the
// meter's policy:
//   - red (colour 0): drop, in a matcher on reg_c_5 bits 0..7;
//   - a policy with green/yellow actions: one rule per colour, in the same matcher, with those actions;
//   - mlx5's default policy (g_actions end y_actions end r_actions drop): green and yellow go on with the
//     rest of each flow's actions. A flow using such a meter tags its packets with a flow id in reg_c_5
//     bits 8..31 before metering, and its own rules in the policy table match (flow id, colour).
// Instances are made when a flow first uses the meter in a domain (lowering.h) and live while flows use
// them; enable/disable reach every live instance.
//
// Not thread-safe.
#ifndef DRSIM_TESTPMD_METERS_H_
#define DRSIM_TESTPMD_METERS_H_

#include <infiniband/mlx5dv.h>

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "absl/status/status.h"
#include "dr/dr.h"
#include "sim/meter.h"
#include "testpmd/ast.h"
#include "testpmd/dr_objects.h"
#include "testpmd/flow_objects.h"

namespace drsim::testpmd {

struct MeterInstance {
  // Declared in reverse order of destruction.
  std::shared_ptr<TableRes> policy_table;
  std::shared_ptr<MatcherRes> color_matcher;  // reg_c_5 & 0xff
  std::shared_ptr<MatcherRes> flow_matcher;   // reg_c_5 whole (default policy)
  dr::Action meter;                           // the DR flow meter
  FlowObjects policy;                         // the colour rules and their actions
};

struct MeterPolicy {
  AddMeterPolicyCmd cmd;
  bool default_policy = false;  // green and yellow continue with the flow's actions
};

struct Meter {
  uint32_t profile_id = 0;
  uint32_t policy_id = 0;
  bool enabled = true;
  sim::MeterColor start_color = sim::MeterColor::kGreen;  // green: colour blind
  std::map<int, std::weak_ptr<MeterInstance>> instances;  // by domain type
  bool in_use() const;
};

class MeterBook {
 public:
  // The testpmd commands. Errors at `pos`: AlreadyExists for an id in use, NotFound for a missing
  // profile/policy/meter, FailedPrecondition (EBUSY) when deleting what something uses, InvalidArgument for
  // bad parameters or policy actions mlx5 does not take.
  absl::Status AddProfile(const AddMeterProfileCmd& cmd, SourcePos pos);
  absl::Status AddPolicy(const AddMeterPolicyCmd& cmd, SourcePos pos);
  absl::Status CreateMeter(const CreateMeterCmd& cmd, SourcePos pos);
  absl::Status Apply(const MeterObjectCmd& cmd, SourcePos pos);

  // The meter `id` of `port` and its profile and policy, or nullptr.
  Meter* FindMeter(uint16_t port, uint32_t id);
  const sim::MeterParams* Profile(uint16_t port, uint32_t id) const;
  const MeterPolicy* Policy(uint16_t port, uint32_t id) const;

  // Flow ids for default-policy meters (reg_c_5 bits 8..31): a fresh one, released through the returned
  // hold.
  absl::StatusOr<std::shared_ptr<const void>> AllocateFlowId(uint32_t* id);

 private:
  std::map<std::pair<uint16_t, uint32_t>, sim::MeterParams> profiles_;
  std::map<std::pair<uint16_t, uint32_t>, MeterPolicy> policies_;
  std::map<std::pair<uint16_t, uint32_t>, Meter> meters_;
  std::set<uint32_t> free_flow_ids_;
  uint32_t next_flow_id_ = 1;
};

}  // namespace drsim::testpmd

#endif  // DRSIM_TESTPMD_METERS_H_
