// Internal to the engine: the pieces a flow's actions are lowered with — the actions sorted by role, and
// ActionLowering, which makes the DR actions of one rule in DR's canonical order and inserts rules.
//
// rte_flow actions are a set; DR checks an ordered list against a per-domain state machine. A rule's DR
// actions are emitted in one order the state machine accepts in every domain — decapsulation, VLAN pops,
// one modify-header (every rewrite merged, as mlx5 merges them), VLAN pushes, tag, ASO actions, counter,
// encapsulation, then the destination — and DR checks the rest; its errors naming "action[N]" are tied back
// to the testpmd action behind entry N.
//
//   drop -> drop; queue -> dest QP; rss -> dest TIR, or a jump into an engine table dispatching by
//   ip_version/ip_protocol to one TIR per hash-field set (rss.h); jump -> dest_table; port_id /
//   represented_port -> dest_vport; mark/flag -> tag; count -> a flow counter; age -> that counter or an
//   aso action setting an ASO flow-hit context (AddCounting); vxlan/nvgre/raw
//   encap/decap -> packet reformats (the raw sizes choose L2 or L3 types as mlx5 does); of_push/pop_vlan ->
//   push/pop VLAN; rewrites -> one modify header (modify.h).
//
// Not thread-safe.
#ifndef DRSIM_TESTPMD_ACTION_LOWERING_H_
#define DRSIM_TESTPMD_ACTION_LOWERING_H_

#include <infiniband/mlx5dv.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "dr/dr.h"
#include "hw/match_params.h"
#include "testpmd/action_cache.h"
#include "testpmd/ast.h"
#include "testpmd/context.h"
#include "testpmd/pattern.h"
#include "testpmd/rss.h"

namespace drsim::testpmd {

// Whether `a` was written before `b` on the command line.
bool WrittenBefore(SourcePos a, SourcePos b);

// An error at action `a`, its message prefixed with the action's name.
absl::Status ActionError(const Action& a, absl::StatusCode code, absl::string_view message);

// The number given for parameter `name` of `a`, or `fallback`.
uint32_t ActionParam(const Action& a, absl::string_view name, uint32_t fallback = 0);

// mlx5's largest mark id: the last 16 values of the 24 bits are reserved (MLX5_FLOW_MARK_MAX).
inline constexpr uint32_t kMaxMark = 0xffffef;

// The engine's shared DR tag action for flow tag `tag` (a mark's id, or flag's tag), made on first use:
// the mark action of every flow asking for that tag.
absl::StatusOr<std::shared_ptr<const dr::Action>> SharedTag(ActionCache& cache, uint32_t tag);

// A DR action list under construction, with the testpmd action each entry came from (nullptr: the
// engine's own, like a meter's flow-id tag).
struct DrList {
  absl::InlinedVector<const dr::Action*, 4> actions;  // (a list is short: no heap for most flows)
  absl::InlinedVector<const Action*, 4> origins;
  void Add(const dr::Action* a, const Action* origin) {
    actions.push_back(a);
    origins.push_back(origin);
  }
};

struct PushVlan {
  const Action* push = nullptr;
  const Action* vid = nullptr;  // of_set_vlan_vid after the push: the pushed tag's VID
  const Action* pcp = nullptr;
};

// The actions of a list, by role.
struct Classified {
  const Action* fate = nullptr;  // drop, queue, rss, jump, port_id, represented_port
  const Action* meter = nullptr;
  const Action* sample = nullptr;
  const Action* mark = nullptr;  // mark or flag
  const Action* count = nullptr;
  const Action* age = nullptr;
  std::vector<const Action*> indirects;  // `indirect ID`: kinds known once looked up (AddCounting)
  // The first `indirect ID` of a count, an age and a conntrack kind: filled by AddCounting for the checks
  // that look at the whole flow (it hands them to IndirectObject::AddToRule).
  const Action* indirect_count = nullptr;
  const Action* indirect_age = nullptr;
  const Action* indirect_conntrack = nullptr;
  const Action* decap = nullptr;  // vxlan_decap, nvgre_decap, raw_decap
  const Action* encap = nullptr;  // vxlan_encap, nvgre_encap, raw_encap
  std::vector<PushVlan> pushes;
  std::vector<const Action*> pops;
  std::vector<const Action*> rewrites;  // modify-header actions
  const Action* last = nullptr;         // the last action that is not void
  absl::Span<const Action> all;         // every action of the flow, in order (for mlx5's order checks)
};

// Sorts `actions` by role. InvalidArgument (at the action) for a second fate, meter, sample, mark/flag,
// count, age, decap or encap, or a third VLAN push/pop, as mlx5 rejects them; Unimplemented for meter with
// sample.
absl::StatusOr<Classified> Classify(absl::Span<const Action> actions);

// Makes the DR actions and rules of one flow (or meter policy) in one domain; everything goes to `out`.
class ActionLowering {
 public:
  ActionLowering(EngineContext& ctx, std::shared_ptr<DomainRes> domain, uint16_t port,
                 const PatternInfo& info, FlowObjects* out)
      : ctx_(ctx), domain_(std::move(domain)), port_(port), info_(info), out_(out) {}

  mlx5dv_dr_domain_type type() const { return domain_->type(); }
  const dr::Domain& dr_domain() const { return domain_->domain(); }
  // What the rule's pattern matches.
  const PatternInfo& info() const { return info_; }
  // The whole flow's actions, when the rules made are parts of it (a meter's or sampler's prefix): what
  // mlx5's checks look at. Without it, each call's own actions.
  void set_flow(const Classified* flow) { flow_ = flow; }

  // Adds decap, pops, the merged rewrites (plus `extra_words`), pushes, tag, the counting (when
  // `with_count`: AddCounting) and encap to `list`, for a rule in a root table when `root`.
  absl::Status AddModifiers(const Classified& c, bool with_count, bool root,
                            absl::Span<const uint64_t> extra_words, DrList* list);

  // The DR destination of fate action `fate`. With `single_tir`, an rss that needs a dispatch table is an
  // error (sampled copies take a TIR, not a table).
  absl::StatusOr<const dr::Action*> Fate(const Action& fate, const RuleLabel& label, bool single_tir);

  // A counter for `count`; its id goes to `id` when given.
  absl::StatusOr<const dr::Action*> Counter(const Action& count, std::optional<uint32_t>* id);

  // What the rule counts and ages with, as mlx5 chooses (aging.h): in a root table, or for an age of its
  // own beside a count of its own, one new flow counter serves both; otherwise an age sets an ASO
  // flow-hit context (its own, or the indirect age's) through an aso action writing reg_c_5, and a count
  // is a counter of its own or the indirect count's shared one. Also adds what other indirect kinds add
  // (IndirectObject::AddToRule), in the order written. Errors as mlx5's flow_dv_validate, checked action
  // by action: a second count or age (InvalidArgument, `duplicate ... actions set`), an indirect age in a
  // root table (Unimplemented), an age and an indirect count in a root table (InvalidArgument, `old age
  // and indirect count combination`), then CheckAsoActions.
  absl::Status AddCounting(const Classified& c, bool root, DrList* list);

  // The object of `indirect` action `a` on the rule's port (testpmd looks ids up in the rule's port);
  // NotFound at `a` naming both.
  absl::StatusOr<std::shared_ptr<IndirectObject>> Indirect(const Action& a);

  // The domain of `type` of the rule's port, held by the flow: for an action made in another domain than
  // the rule's (mlx5 makes CT actions in the NIC_RX domain whatever the rule's).
  absl::StatusOr<const dr::Domain*> PortDomain(mlx5dv_dr_domain_type type);

  // Inserts a rule of `list`'s actions; a DR error naming an action index points at its testpmd action,
  // others at `fallback`.
  absl::Status Insert(const std::shared_ptr<MatcherRes>& matcher, const hw::MatchParams& value,
                      const DrList& list, const RuleLabel& label, SourcePos fallback);

  // The shared matcher of `table`, `priority` and `mask`; DR's mask errors point at `pos`.
  absl::StatusOr<std::shared_ptr<MatcherRes>> MatcherIn(const std::shared_ptr<TableRes>& table,
                                                        uint16_t priority, const hw::MatchParams& mask,
                                                        SourcePos pos);

  // An error at `a` unless the rule is in a NIC_RX domain.
  absl::Status NeedIngress(const Action& a) const;

  // The engine's shared action under `key` (action_cache.h), made by `make` on first use and held by the
  // flow; a domain-bound action names its domain in `keep_alive` (keyed and kept alive by it).
  absl::StatusOr<const dr::Action*> Shared(const std::string& key, std::shared_ptr<const void> keep_alive,
                                           absl::FunctionRef<absl::StatusOr<dr::Action>()> make);

  // Keeps `a` with the flow (`release` runs after it is destroyed); returns it.
  const dr::Action* Own(dr::Action a, std::function<void()> release = {});

  // `s` at `origin` (when given), prefixed with its name.
  absl::Status Fail(const absl::Status& s, const Action* origin) const;

 private:
  struct Reformat {
    mlx5dv_flow_action_packet_reformat_type type;
    std::vector<uint8_t> data;
    const Action* origin;
  };
  struct Reformats {
    std::optional<Reformat> decap, encap;  // at the decap and at the encap position
  };

  // The header bytes of a decap/encap action; tunnel decaps have none (nullopt) and count as large.
  absl::StatusOr<std::optional<std::vector<uint8_t>>> ReformatBytes(const Action& a);

  // mlx5's choice of reformat types from the decap and encap sizes (MLX5_ENCAPSULATION_DECISION_SIZE).
  absl::Status PlanReformats(const Classified& c, Reformats* out);

  absl::Status AddReformat(const Reformat& r, uint32_t flags, DrList* list);

  // mlx5's one-ASO-action rule over the whole flow `flow` (Unimplemented): of an ASO-aged age (as mlx5's
  // validation counts it: not root, not an age of its own beside any count), a meter (mlx5 meters with
  // ASO on a ConnectX-6 Dx) and a conntrack, at most one; and none after a transfer mirror (sample ratio 1).
  absl::Status CheckAsoActions(const Classified& flow, bool root) const;

  absl::Status AddPush(const PushVlan& p, DrList* list);

  absl::Status AddMark(const Action& mark, DrList* list);

  absl::StatusOr<const dr::Action*> Tir(uint64_t hash_fields, const RssPlan& plan, const Action& rss);

  absl::StatusOr<const dr::Action*> Rss(const Action& rss, const RuleLabel& label, bool single_tir);

  EngineContext& ctx_;
  std::shared_ptr<DomainRes> domain_;
  uint16_t port_;
  const PatternInfo& info_;
  FlowObjects* out_;
  const Classified* flow_ = nullptr;
};

}  // namespace drsim::testpmd

#endif  // DRSIM_TESTPMD_ACTION_LOWERING_H_
