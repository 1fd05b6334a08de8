// Internal to the engine: a flow's actions -> DR actions and rules.
//
// rte_flow actions are a set; DR checks an ordered list against a per-domain state machine. The lowering
// emits each rule's DR actions in one canonical order the state machine accepts in every domain —
// decapsulation, VLAN pops, one modify-header (all rewrites merged), VLAN pushes, tag, counter,
// encapsulation, then the destination — and DR checks the rest (its errors are tied back to the testpmd
// action they name).
//
//   drop -> drop; queue -> dest QP; rss -> dest TIR, or a jump into an engine table dispatching by
//   ip_version/ip_protocol to one TIR per hash-field set (rss.h); jump -> dest_table; port_id /
//   represented_port -> dest_vport; mark/flag -> tag; count -> a flow counter; vxlan/nvgre/raw
//   encap/decap -> packet reformats (raw sizes choose L2 or L3 types as mlx5 does); of_push/pop_vlan ->
//   push/pop VLAN; rewrites -> modify header (modify.h).
//   meter -> a flow split: [tag the flow id, count, DR flow meter] then the meter's policy table (meters.h);
//   sample -> a flow split: [count, flow sampler (ratio > 1) or dest array (ratio 1, mirroring, with the
//   sampled copy's encapsulation)] whose default path is an engine table holding the flow's other actions.
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
  std::string label;      // names the flow's rules in traces: "port 0 flow 3"
  SourcePos pattern_pos;  // for matcher errors
  SourcePos actions_pos;  // for errors about the action list as a whole
};

// Makes `rule`'s DR objects (its pattern translated into `pattern`) in `out`. Errors carry positions.
absl::Status LowerFlow(EngineContext& ctx, const FlowRule& rule, const TranslatedPattern& pattern,
                       const RuleTarget& target, FlowObjects* out);

}  // namespace drsim::testpmd

#endif  // DRSIM_TESTPMD_LOWERING_H_
