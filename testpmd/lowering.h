// Internal to the engine: one flow -> its DR rules. A plain flow is one rule in its group's table, its
// actions lowered by ActionLowering (action_lowering.h). Two actions split a flow over engine tables:
//   meter  -> [tag the flow id (default policy only), count, DR flow meter]; the meter's policy table
//             (meters.h) then drops red and either runs the policy's colour actions or, for mlx5's default
//             policy, the flow's own green/yellow rules with the flow's other actions;
//   sample -> [count, flow sampler (ratio > 1) or dest array (ratio 1: mirroring, with the sampled copy's
//             encapsulation)], the flow's other actions in an engine table every packet continues in.
// A flow in NIC_RX needs a fate action (mlx5's rule), unless a meter policy decides it.
//
// Not thread-safe.
#ifndef DRSIM_TESTPMD_LOWERING_H_
#define DRSIM_TESTPMD_LOWERING_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "testpmd/ast.h"
#include "testpmd/context.h"
#include "testpmd/pattern.h"

namespace drsim::testpmd {

// Where a flow's first rule goes.
struct RuleTarget {
  std::shared_ptr<DomainRes> domain;
  std::shared_ptr<TableRes> table;
  uint16_t port = 0;
  uint16_t priority = 0;
  RuleLabel label;        // names the flow's rules in traces: "port 0 flow 3"
  SourcePos pattern_pos;  // for matcher errors
  SourcePos actions_pos;  // for errors about the action list as a whole
};

// Makes `rule`'s DR objects (its pattern translated into `pattern`) in `out`. Errors carry positions.
absl::Status LowerFlow(EngineContext& ctx, const FlowRule& rule, const TranslatedPattern& pattern,
                       const RuleTarget& target, FlowObjects* out);

}  // namespace drsim::testpmd

#endif  // DRSIM_TESTPMD_LOWERING_H_
