// testpmd::FlowEngine — executes testpmd commands (parser.h) against the Direct Rule API on a sim::Nic and
// owns every DR object it makes.
//
// Ports. testpmd port N is function N of the NIC (port 0 = the PF, vport 0; port N = VF N): its queues, its
// ingress and egress rules. In transfer rules a port stands for an eSwitch vport as in mlx5 switchdev, where
// the PF's ethdev is the uplink representor: port 0 is the uplink (the wire), port N VF N. A transfer rule
// without a port_id / represented_port item matches its own port as the source (mlx5 adds that match), so
// rules on port 0 see the wire's traffic (the FDB RX pipe) and rules on port N what VF N sends. The items
// also take mlx5's E-Switch manager ids (port_id 0xffffffff, represented_port 0xffff): what the PF sends.
//
// Domains and tables. `ingress` rules of port N live in function N's NIC_RX domain, `egress` rules in its
// NIC_TX domain, `transfer` rules (on any port) in the PF's FDB domain (ingress/egress are ignored with
// transfer, as mlx5 ignores them). `group G` is the table of level G, made on first use (by a rule or a
// `jump group G`); group 0 is the root table (level 0) — except in the FDB when fdb_default_rule is set
// (mlx5's fdb_def_rule_en, its default), where group G is level G + 1 and the FDB root holds one rule
// jumping to level 1. `priority P` is the matcher priority P (0..65535); rules of one (domain, group,
// priority, mask) share one matcher. Within a table, matchers are tried by priority, the newest matcher
// first among equal priorities (rdma-core's order; rte_flow leaves it undefined).
//
// Queues. The first use of a port (a rule naming a queue, or QueueNumber) creates EngineOptions::rx_queues
// receive queues on its function; `queue index Q` and RSS queue Q are the Q-th of them.
//
// Flows. Flow ids are per port, assigned as testpmd assigns them (the newest flow's id + 1, 0 first).
// Each flow owns its DR rules and actions; tables, matchers, meters and jump actions are shared and freed
// when the last flow using them goes (destroy/flush free rules, then actions, counters and TIRs, then
// matchers, tables and domains). docs/testpmd.md maps every item and action to DR and lists what is
// rejected and why. `flow validate` builds the flow and tears it down again.
//
// Errors are absl::Status with the source position of the culprit attached (source.h): the item, field,
// action or parameter at fault, or the command. DR's own errors keep their code and message, prefixed with
// the testpmd action they concern when DR names an action index.
//
// Not thread-safe: one thread drives an engine, and frames must not flow through the NIC while it runs a
// command. The NIC must outlive the engine.
#ifndef DRSIM_TESTPMD_ENGINE_H_
#define DRSIM_TESTPMD_ENGINE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "dr/dr.h"
#include "hw/match_params.h"
#include "sim/nic.h"
#include "testpmd/ast.h"

namespace drsim::testpmd {

struct EngineOptions {
  uint16_t rx_queues = 16;          // receive queues per port
  size_t rx_queue_capacity = 4096;  // completions each holds
  bool fdb_default_rule = true;     // mlx5's fdb_def_rule_en
  // Keep history(): what checking a file against a non-pristine engine replays (runner.h). Without it,
  // the engine keeps no parsed command, and such checks fail.
  bool keep_history = true;
};

class FlowTemplate;  // engine_templates.cc

// One line of `flow list`.
struct FlowInfo {
  uint32_t id = 0;
  uint32_t group = 0;
  uint32_t priority = 0;
  bool ingress = false, egress = false, transfer = false;
  std::vector<std::string> items;    // rte_flow names: "ETH", "IPV4", ...
  std::vector<std::string> actions;  // "QUEUE", "MARK", ...
  std::optional<uint64_t> user_id;   // the user_id attribute
};

// `flow query ... count`.
struct CountResult {
  bool hits_set = true;
  bool bytes_set = true;
  uint64_t hits = 0;
  uint64_t bytes = 0;
};

// `flow query ... age` (rte_flow_query_age).
struct AgeResult {
  bool aged = false;
  bool sec_since_last_hit_valid = false;
  uint32_t sec_since_last_hit = 0;
};

// `flow aged`: what aged since the last report.
struct AgedReport {
  std::vector<FlowInfo> flows;      // aged flows, by id
  std::vector<uint32_t> indirect;   // aged indirect age actions, by id
  std::vector<uint32_t> destroyed;  // with `destroy`: the flows destroyed
};

// What one command did, as data and as the text testpmd prints for it.
struct CommandResult {
  std::string text;                  // e.g. "Flow rule #3 created\n"; empty when testpmd prints nothing
  std::optional<uint32_t> flow_id;   // flow create
  std::vector<uint32_t> destroyed;   // flow destroy / flush; indirect_action destroy
  std::vector<FlowInfo> flows;       // flow list
  std::optional<CountResult> count;  // flow query ... count, indirect count query
  std::optional<AgeResult> age;      // flow query ... age, indirect age query
  std::optional<sim::CtContext> conntrack;  // indirect conntrack query
  std::optional<AgedReport> aged;           // flow aged
  std::optional<uint32_t> indirect_id;      // indirect_action create / update
};

// Where a receive queue of the engine belongs.
struct QueueRef {
  uint16_t port = 0;
  uint16_t index = 0;
};

// Live DR objects the engine made (tables include engine tables such as the FDB root).
struct EngineCounts {
  int domains = 0;
  int tables = 0;
  int matchers = 0;
  int rules = 0;
  int flows = 0;
  int flow_hit_contexts = 0;  // ASO flow-hit contexts ages hold (taken from the engine's pools)
  int shared_actions = 0;     // DR actions shared by the flows that ask for the same (action_cache.h)
};

class EngineContext;
class IndirectObject;

class FlowEngine {
 public:
  explicit FlowEngine(sim::Nic& nic, EngineOptions options = {});
  ~FlowEngine();  // flushes every port, then frees the queues it made
  FlowEngine(const FlowEngine&) = delete;
  FlowEngine& operator=(const FlowEngine&) = delete;

  // Runs one command. Without `with_text`, the result's text is left empty for flow commands (a stream of
  // a million rules has no use for a million "Flow rule #N created").
  absl::StatusOr<CommandResult> Execute(const Command& command, bool with_text = true);

  // The commands that changed the engine's state, in order (flows created, destroyed or flushed through
  // Execute or the typed calls, set and meter commands); replaying them on a fresh engine of the same NIC
  // shape rebuilds the same state (runner.h checks files that way).
  const std::vector<Command>& history() const { return history_; }
  // Whether nothing has run on the engine yet (no command, typed call or queue), or since Reset().
  bool pristine() const { return pristine_; }
  // Destroys every flow, indirect action, meter, queue and set buffer the engine made: it is as new.
  void Reset();

  // Typed operations (what Execute runs).
  absl::Status ValidateFlow(const FlowRule& rule);
  absl::StatusOr<uint32_t> CreateFlow(const FlowRule& rule);

  // Flow templates (engine_templates.cc): flows made as copies of an earlier flow with other values in its
  // pattern's slots, without parsing, translating or lowering them. A rule file's loader (runner.h) makes
  // one for each shape of command it sees again. The template of flow `flow_id`, made from `rule` (it must
  // be the rule's last flow), whose pattern's `slots` vary, and with `mark_varies` its mark action's id
  // too (a flow's mark is mostly its own): FailedPrecondition when the engine keeps its history (each flow
  // then needs its command), when the flow made more than one rule or anything of its own (a counter, an
  // age, an action only it uses) or uses an indirect action, or when its pattern is no template
  // (pattern_template.h). A template holds what its flows share (several holds as one, which its flows
  // hold); it must be dropped before the engine is Reset or destroyed.
  absl::StatusOr<std::shared_ptr<const FlowTemplate>> TemplateOfFlow(const FlowRule& rule, uint32_t flow_id,
                                                                     absl::Span<const PatternSlot> slots,
                                                                     bool mark_varies = false);
  // Creates a flow from `t` with its slots set to `values` (each within its field's width; the mark's id
  // last, when it varies), as the command on line `line` would: the same id, DR rule, actions, shape and
  // line. On an error (a mark id above kMaxMark, DR's, without the positions Execute adds) nothing is made,
  // and the command's own Execute reports it.
  absl::StatusOr<uint32_t> CreateFromTemplate(const FlowTemplate& t, absl::Span<const absl::uint128> values,
                                              int line);
  // Destroys the flows of `ids` that exist; returns those destroyed, in the order given.
  absl::StatusOr<std::vector<uint32_t>> DestroyFlows(uint16_t port, absl::Span<const uint32_t> ids);
  absl::StatusOr<std::vector<uint32_t>> FlushFlows(uint16_t port);
  // Flows sorted by group, priority and id; `groups` (if not empty) filters.
  absl::StatusOr<std::vector<FlowInfo>> ListFlows(uint16_t port, absl::Span<const uint32_t> groups) const;
  absl::StatusOr<CountResult> QueryCount(uint16_t port, uint32_t flow_id) const;
  // The age of a flow with an age action (its own or an indirect one).
  absl::StatusOr<AgeResult> QueryAge(uint16_t port, uint32_t flow_id) const;
  // The flows and indirect ages of `port` that aged since the last call (each is reported once); with
  // `destroy`, the flows are destroyed too (indirect actions are not: testpmd only lists them).
  absl::StatusOr<AgedReport> AgedFlows(uint16_t port, bool destroy);
  // The line of the command that created flow `flow_id` of `port` (through Execute), if it exists and
  // was created from a command with a position.
  std::optional<int> FlowLine(uint16_t port, uint32_t flow_id) const;
  // The id of the flow of `port` whose user_id attribute is `user_id`; NotFound if none.
  absl::StatusOr<uint32_t> FlowOfUserId(uint16_t port, uint64_t user_id) const;
  // flow indirect_action: create, update, destroy or query (engine_indirect.cc).
  absl::StatusOr<CommandResult> RunIndirectAction(const IndirectActionCmd& cmd);

  // Ports and queues.
  int num_ports() const;  // the functions: PF and VFs
  // The QP number of queue `index` of `port` (creating the port's queues on first use).
  absl::StatusOr<uint32_t> QueueNumber(uint16_t port, uint16_t index);
  // The port and index of a queue the engine made, or nullopt.
  std::optional<QueueRef> QueueOf(uint32_t qp_num) const;

  // What made DR rule `rule_id` ("port 0 flow 3", "port 0 flow 3 rss dispatch", "port 0 meter 1 policy
  // red", "fdb_def_rule ..."), or "" for a rule the engine did not make. For traces.
  std::string DescribeRule(uint32_t rule_id) const;
  // The DR actions of rule `rule_id` in order ("tag 0x5", "dest_ibv_qp 0x100"), empty for a rule the engine
  // did not make. For traces.
  std::vector<std::string> RuleActions(uint32_t rule_id) const;
  // The mask of DR matcher `matcher_id` if the engine made it (for traces), else nullopt.
  std::optional<hw::MatchParams> MatcherMask(uint32_t matcher_id) const;
  // The DR domains the engine holds now (for dumps), by type, then function.
  std::vector<const dr::Domain*> Domains() const;
  EngineCounts counts() const;
  const EngineOptions& options() const { return options_; }
  sim::Nic& nic() const { return nic_; }

  // testpmd's text for a flow list and a count query.
  static std::string FormatFlowList(const std::vector<FlowInfo>& flows);
  static std::string FormatCount(const CountResult& count);
  static std::string FormatAged(uint16_t port, const AgedReport& report);

 private:
  // CreateFlow of the command on line `line` of a file (0: none).
  absl::StatusOr<uint32_t> CreateFlowOfLine(const FlowRule& rule, int line);
  // Destroys the flows of `port` whose ids are in `ids`, newest first (testpmd's order); returns them.
  std::vector<uint32_t> EraseFlows(uint16_t port, absl::Span<const uint32_t> ids);
  // The ids of the flows of `port` that hold indirect object `object`.
  std::vector<uint32_t> FlowsUsing(uint16_t port, const IndirectObject& object) const;
  // The flow id `c` names (by id or by user_id), checked to exist.
  absl::StatusOr<uint32_t> QueriedFlow(const FlowQueryCmd& c) const;
  // Appends `command` to history_ when the engine keeps one.
  void Record(Command command);

  sim::Nic& nic_;
  EngineOptions options_;
  std::unique_ptr<EngineContext> context_;
  std::vector<Command> history_;
  bool pristine_ = true;
};

}  // namespace drsim::testpmd

#endif  // DRSIM_TESTPMD_ENGINE_H_
