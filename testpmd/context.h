// Internal to the engine: everything FlowEngine keeps between commands — the DR objects, the ports' queues
// and flows, testpmd's `set` state (raw encap/decap buffers, vxlan/nvgre outer headers, sample action
// lists), the meters and the indirect actions. Member order makes destruction safe: flows go first, then
// what they shared.
//
// Not thread-safe.
#ifndef DRSIM_TESTPMD_CONTEXT_H_
#define DRSIM_TESTPMD_CONTEXT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/status/statusor.h"
#include "hw/lookup_memory.h"
#include "sim/nic.h"
#include "testpmd/action_cache.h"
#include "testpmd/aging.h"
#include "testpmd/ast.h"
#include "testpmd/dr_objects.h"
#include "testpmd/engine.h"
#include "testpmd/flow_objects.h"
#include "testpmd/geneve_option.h"
#include "testpmd/indirect_actions.h"
#include "testpmd/meters.h"
#include "testpmd/pattern.h"
#include "testpmd/pattern_template.h"
#include "testpmd/record_pool.h"

namespace drsim::testpmd {

// The rte_flow names of a flow's items and actions, as `flow list` shows them.
struct FlowNames {
  std::vector<std::string> items;
  std::vector<std::string> actions;
  friend bool operator<(const FlowNames& a, const FlowNames& b) {
    return std::tie(a.items, a.actions) < std::tie(b.items, b.actions);
  }
};

// What `flow list` shows of a flow but its id: its attributes, and its names (interned apart: a file's
// rules mostly share them, and differ in attributes more often). Flows of one shape share one.
struct FlowShape {
  uint32_t group = 0;
  uint32_t priority = 0;
  bool ingress = false, egress = false, transfer = false;
  bool has_user_id = false;          // the flow has a user_id attribute (Flow::user_id)
  const FlowNames* names = nullptr;  // interned

  auto Tie() const { return std::tie(group, priority, ingress, egress, transfer, has_user_id, names); }
  friend bool operator==(const FlowShape& a, const FlowShape& b) { return a.Tie() == b.Tie(); }
  friend bool operator<(const FlowShape& a, const FlowShape& b) { return a.Tie() < b.Tie(); }
};

// What the engine keeps of a flow: what `flow list`, `flow query`, `flow destroy` and traces need, and its
// DR objects. Nothing of the command that made it; what flows share (the shape) is interned.
struct Flow {
  explicit Flow(RecordPool<Flow>* pool) : pool(pool) {}
  RecordPool<Flow>& record_pool() const { return *pool; }

  RecordPool<Flow>* pool;  // where it lives
  uint32_t id = 0;
  int line = 0;                      // of the command that created it (0: a typed call)
  const FlowShape* shape = nullptr;  // its attributes, items and actions (interned)
  uint64_t user_id = 0;              // when shape->has_user_id
  FlowObjects objects;

  // Its line of `flow list`.
  FlowInfo Info() const;
};

using FlowPtr = RecordPool<Flow>::Ptr;
// A port's flows by id. Its nodes are lookup memory (hw/lookup_memory.h): a million flows' nodes on huge
// pages fault in a few dozen times, where heap pages of 4 KiB fault thousands of times.
using PortFlows = absl::btree_map<uint32_t, FlowPtr, std::less<uint32_t>,
                                  hw::LookupAllocator<std::pair<const uint32_t, FlowPtr>>>;

// The DR domain type of a rule of `attr`: FDB for transfer, else NIC_RX for ingress, NIC_TX for egress.
mlx5dv_dr_domain_type DomainTypeOf(const FlowAttr& attr);

class EngineContext {
 public:
  EngineContext(sim::Nic& nic, const EngineOptions& options);
  ~EngineContext();  // destroys the flows, then the queues it made

  sim::Nic& nic;
  const EngineOptions options;
  DrObjects objects;
  ActionCache shared_actions;          // before everything holding its actions, which go first
  GeneveOptionResource geneve_option;  // the device's GENEVE TLV option, while flows use it
  MeterBook meters;
  std::map<uint32_t, std::vector<uint8_t>> raw_encap, raw_decap;  // set raw_encap / raw_decap buffers
  SetTunnelCmd vxlan, nvgre;
  ConntrackProfile conntrack;  // set conntrack com|orig|rply: what `action conntrack` creates
  std::map<uint32_t, std::vector<Action>> sample_actions;
  FlowHitPool flow_hits;            // ASO flow-hit contexts of ages outside root tables (aging.h)
  IndirectTable indirect;           // flow indirect_action (flows hold what they use)
  std::set<FlowNames> flow_names;   // FlowShape::names points into it
  std::set<FlowShape> flow_shapes;  // Flow::shape points into it
  // A flow's pattern while it is built, its buffers kept from flow to flow.
  TranslatedPattern pattern_scratch;
  PatternTemplateCache pattern_templates;  // flow templates' patterns (engine_templates.cc)
  RecordPool<Flow> flow_records;           // the flows' memory
  // By port, by id; a B-tree holds each id in about 12 bytes, where a std::map node takes 64.
  std::map<uint16_t, PortFlows> flows;

  // mlx5's ids of the E-Switch manager in port_id (MLX5_PORT_ESW_MGR) and represented_port
  // (MLX5_REPRESENTED_PORT_ESW_MGR) items.
  static constexpr uint32_t kEswManagerPortId = 0xffffffff;
  static constexpr uint32_t kEswManagerEthdevId = 0xffff;

  // The id of the next flow of a port whose flows are `port_flows`, as testpmd gives it: the newest flow's
  // + 1 (ids only grow while flows exist), 0 when the port has none.
  static uint32_t NextFlowId(const PortFlows& port_flows) {
    return port_flows.empty() ? 0 : port_flows.rbegin()->first + 1;
  }
  // The interned shape of `rule` (what Flow::shape points to).
  const FlowShape* InternShape(const FlowRule& rule);
  // What `rule`'s pattern is translated in: its domain, whether its group is a root table, the vports of
  // ports (an error at the pattern when a transfer rule's port has none).
  absl::StatusOr<PatternContext> PatternContextOf(const FlowRule& rule);

  int num_ports() const { return nic.num_vfs() + 1; }
  // InvalidArgument unless `port` is a function's port.
  absl::Status CheckPort(uint32_t port) const;
  // The eSwitch vport testpmd port `port` stands for in transfer rules, as in mlx5 switchdev: port 0 the
  // uplink (0xffff; the PF's ethdev is the uplink representor), port N VF N's vport.
  absl::StatusOr<uint16_t> VportOfPort(uint32_t port) const;
  // VportOfPort for port_id / represented_port items, which also take the E-Switch manager's ids: the PF
  // function's own vport 0 (what the PF itself sends).
  absl::StatusOr<uint16_t> SourceVportOfPort(uint32_t port) const;
  // The QP number of queue `index` of `port`, creating the port's queues on first use.
  absl::StatusOr<uint32_t> QueueNumber(uint16_t port, uint32_t index);
  const std::map<uint16_t, std::vector<uint32_t>>& queues() const { return queues_; }

 private:
  std::map<uint16_t, std::vector<uint32_t>> queues_;  // QP numbers by port
  FlowNames names_scratch_;                           // InternShape's key, its room kept from flow to flow
  // The item and action definitions InternShape saw last (items, a null, actions), and the ones it reads
  // now: equal definitions give equal names, found without building them.
  std::vector<const void*> last_defs_, defs_scratch_;
  const FlowNames* last_names_ = nullptr;  // the names InternShape gave last
  const FlowShape* last_shape_ = nullptr;  // the shape InternShape gave last
};

}  // namespace drsim::testpmd

#endif  // DRSIM_TESTPMD_CONTEXT_H_
