// dr: the Direct Rule object model in C++ — domains, tables, matchers, rules and actions with the
// semantics of rdma-core's mlx5dv_dr_* API, compiled for a device behind the hw::Device interface
// (the software NIC, sim::Nic).
//
// What it is. A domain (NIC_RX, NIC_TX or FDB) holds tables; a table (a level) holds matchers; a matcher
// (a priority, a match_criteria_enable and a mask over the 448-byte mlx5 match layout) holds rules; a rule
// (a value under the matcher's mask and a list of actions) says what happens to a packet whose masked
// fields equal the value. Packets enter a domain at its level-0 tables. In a table, matchers are tried in
// ascending priority, the newest first among equal priorities; the first matcher holding the packet's key
// ends the walk of that table and its rule's actions run (a dest_table action continues the walk in
// another table). A miss in every matcher, and a hit whose actions do not say where the packet goes, take
// the domain default: NIC_RX drops, NIC_TX sends to the wire, FDB sends to the eSwitch manager.
//
// How it works. Creating a matcher compiles its mask once (matcher/mask_compiler.h): the mask is checked
// exactly as rdma-core checks it and becomes a definer, a short program of masked word loads. Creating a
// rule checks the value and the action list (actions/action_compiler.h), turns the value into a key with
// the definer and inserts it into the matcher's hashed match table; the device reads those tables
// directly (hw/flow_table.h). Duplicate values are accepted by default, the older rule winning until it
// is destroyed; Domain::AllowDuplicateRules(false) makes them fail with AlreadyExists (EEXIST).
//
// Lifetimes. Every object counts the references to it as rdma-core does: a domain is referenced by its
// tables; a table by its matchers and by dest_table actions; a matcher by its rules; an action by the
// rules using it. Each handle owns its object: Destroy() destroys it now, or fails with
// FailedPrecondition (EBUSY) and changes nothing while something references it; dropping a handle
// without Destroy() lets the object go as soon as nothing references it any more. Calls on a destroyed or
// moved-from handle fail with InvalidArgument; its getters return 0 / empty.
//
// Errors are absl::Status codes whose errno equivalents are listed in docs/errors.md; each message names
// the culprit (field, action index, parameter).
//
// The device must outlive every object created on it.
//
// Thread-safety. Control calls on objects of one domain are serialised by the domain's lock and may come
// from several threads. The device may process packets on other threads meanwhile (sim::Worker): every
// change is published so that a lookup sees a rule completely or not at all, and what a change replaces is
// freed through the device's reclaimer (hw/reclaimer.h) once no lookup can still hold it.
#ifndef DRSIM_DR_DR_H_
#define DRSIM_DR_DR_H_

#include <infiniband/mlx5dv.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "hw/device.h"
#include "hw/match_params.h"
#include "matcher/mask_consumption.h"

namespace drsim::dr {

namespace internal {
struct DomainObj;
struct TableObj;
struct MatcherObj;
struct RuleObj;
struct ActionObj;

// A move-only owner of one reference to an object (see "Lifetimes" above).
template <typename Obj>
class Handle {
 public:
  Handle() = default;
  explicit Handle(Obj* obj) : obj_(obj) {}
  Handle(Handle&& other) noexcept : obj_(other.obj_) { other.obj_ = nullptr; }
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      Reset();
      obj_ = other.obj_;
      other.obj_ = nullptr;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { Reset(); }

  Obj* get() const { return obj_; }
  Obj* release() {
    Obj* obj = obj_;
    obj_ = nullptr;
    return obj;
  }
  void Reset();  // drops the reference

 private:
  Obj* obj_ = nullptr;
};
}  // namespace internal

class Table;
class Matcher;
class Action;
class KernelSteering;  // dr/kernel_steering.h: drsim-internal objects of kernel-owned steering

class Domain {
 public:
  Domain() = default;  // an empty handle
  // A domain of `type` on `device`. InvalidArgument for a type other than NIC_RX, NIC_TX or FDB.
  static absl::StatusOr<Domain> Create(hw::Device& device, mlx5dv_dr_domain_type type);

  // Waits for queued rule updates. Rules take effect on the software NIC when their call returns, so this
  // only checks `flags` (MLX5DV_DR_DOMAIN_SYNC_FLAGS_SW|HW|MEM; anything else is Unimplemented, EOPNOTSUPP).
  absl::Status Sync(uint32_t flags) const;
  // Duplicate rules (same value in one matcher) are allowed by default; when disallowed, inserting one
  // fails with AlreadyExists. Applies to rules of non-root (level > 0) tables, as in rdma-core.
  absl::Status AllowDuplicateRules(bool allow) const;
  // mlx5dv_dr_aso_other_domain_link: links ASO connection-tracking object `object` of `peer`'s NIC (the
  // domain its CT actions were made in) to this domain, whose rules may then use those actions. Through
  // the link each CT context serves one rule at a time (FailedPrecondition, EBUSY, for a second, and for
  // an FDB rule in both pipes). A rule on another device than the action's (another function) tracks
  // with the link's direction (`flags`: exactly one of MLX5DV_DR_ACTION_FLAGS_ASO_CT_DIRECTION_INITIATOR /
  // _RESPONDER) and writes the packet state to reg_c[`return_reg_c`]; on the action's device, the
  // action's own apply. The link holds both domains and the object (their destroy is EBUSY until
  // unlinked). Errors: Unimplemented (EOPNOTSUPP) for an object that is not a CT object; InvalidArgument
  // for an empty handle, an unknown object, bad flags, return_reg_c other than 1, 3 or 5, or a domain on
  // another NIC than the object; AlreadyExists (EEXIST) while the object is linked (rdma-core 44 would
  // overwrite the first link).
  absl::Status LinkAsoCt(const Domain& peer, uint32_t object, uint32_t flags, uint8_t return_reg_c) const;
  // mlx5dv_dr_aso_other_domain_unlink: ends the link of `object` to this domain. InvalidArgument when the
  // object is not linked, or linked to another domain; FailedPrecondition (EBUSY) while rules of this
  // domain use its contexts through the link.
  absl::Status UnlinkAsoCt(uint32_t object) const;
  // FailedPrecondition (EBUSY) while tables, domain-bound actions or ASO CT links reference it.
  absl::Status Destroy();

  mlx5dv_dr_domain_type type() const;
  uint32_t id() const;  // unique in the process (dumps with stable ids print it)
  bool valid() const { return obj_ != nullptr; }
  internal::DomainObj* obj() const { return obj_.get(); }

  Domain(Domain&&) noexcept = default;
  Domain& operator=(Domain&& other) noexcept;
  ~Domain();

 private:
  friend class Table;
  friend class Action;
  friend class KernelSteering;
  explicit Domain(std::shared_ptr<internal::DomainObj> obj) : obj_(std::move(obj)) {}
  void Release();
  // A domain's memory is shared with its tables (which hold its lock); its reference count is separate.
  std::shared_ptr<internal::DomainObj> obj_;
};

class Table {
 public:
  Table() = default;  // an empty handle
  // A table at `level` (0 = where packets enter the domain). Levels need not increase along jumps.
  static absl::StatusOr<Table> Create(const Domain& domain, uint32_t level);
  // FailedPrecondition (EBUSY) while matchers or dest_table actions reference the table.
  absl::Status Destroy();

  uint32_t level() const;
  uint32_t id() const;  // unique in the process, reported in traces
  bool valid() const { return handle_.get() != nullptr; }
  internal::TableObj* obj() const { return handle_.get(); }

 private:
  friend class KernelSteering;
  explicit Table(internal::TableObj* obj) : handle_(obj) {}
  internal::Handle<internal::TableObj> handle_;
};

class Matcher {
 public:
  Matcher() = default;  // an empty handle
  // A matcher of `priority` (lower is tried first) in `table`, matching the sections enabled in
  // `match_criteria_enable` under `mask` (null = all zero). Mask errors as in rdma-core:
  // InvalidArgument (EINVAL) for criteria >= 0x80, match_sz > 448 or nothing to match on (on a root table,
  // whose masks rdma-core hands to the kernel: match_sz 0 or over 512; masks the firmware refuses are
  // taken, and their rules refused, see Rule::Create);
  // Unimplemented (EOPNOTSUPP/ENOTSUP) for an ip_version mask other than 4/6, a partial source_port mask,
  // or a masked field that cannot be matched (named in the message).
  static absl::StatusOr<Matcher> Create(const Table& table, uint16_t priority, uint8_t match_criteria_enable,
                                        const mlx5dv_flow_match_parameters* mask);
  // Same, with the criteria of every section `mask` sets a bit in.
  static absl::StatusOr<Matcher> Create(const Table& table, uint16_t priority, const hw::MatchParams& mask);

  // Size hints (struct mlx5dv_dr_matcher_layout): NUM_RULE sizes the match table for
  // 2^log_num_of_rules_hint rules (hint <= 24); without RESIZABLE the table keeps its size until it is
  // full. Unimplemented (ENOTSUP) on a root table or for other flags.
  absl::Status SetLayout(const mlx5dv_dr_matcher_layout& layout) const;
  // FailedPrecondition (EBUSY) while rules exist.
  absl::Status Destroy();

  uint32_t id() const;  // unique in the process, reported in traces
  uint16_t priority() const;
  // The steering lookups rdma-core would build for the mask (first pipe of the domain).
  std::vector<matcher::SteBuilder> builders() const;
  bool valid() const { return handle_.get() != nullptr; }
  internal::MatcherObj* obj() const { return handle_.get(); }

 private:
  explicit Matcher(internal::MatcherObj* obj) : handle_(obj) {}
  internal::Handle<internal::MatcherObj> handle_;
};

class Action {
 public:
  Action() = default;  // an empty handle
  // Terminating: the packet is dropped. Any domain.
  static absl::StatusOr<Action> Drop();
  // Non-terminating: the receive completion carries `tag & 0xffffff` as its flow tag. NIC_RX only.
  static absl::StatusOr<Action> Tag(uint32_t tag);
  // Terminating: the packet goes to the receive queue with QP number `qp_num` on `device`
  // (InvalidArgument if there is none). NIC_RX only.
  static absl::StatusOr<Action> DestQp(hw::Device& device, uint32_t qp_num);
  // Terminating: the walk continues in `table` (InvalidArgument for a level-0 table).
  static absl::StatusOr<Action> DestTable(const Table& table);
  // Terminating: the domain default (NIC_RX drop, NIC_TX wire, FDB eSwitch manager).
  static absl::StatusOr<Action> DefaultMiss();
  // Terminating, FDB only (Unimplemented otherwise): the frame goes to `vport` (0 = the PF, 1..N the VFs,
  // 0xffff the uplink; from the FDB RX pipe, the uplink is a drop). InvalidArgument for a number above
  // 0xffff or a vport the device does not have.
  static absl::StatusOr<Action> DestVport(const Domain& domain, uint32_t vport);
  // Terminating, FDB only (Unimplemented otherwise): the vport of IB port `ib_port` — the software NIC has
  // one port, whose vport is the PF's. InvalidArgument for port 0; Unimplemented (ENOTSUP) past the last.
  static absl::StatusOr<Action> DestIbPort(const Domain& domain, uint32_t ib_port);
  // Non-terminating: counts packets and bytes in counter `counter_id + offset` of `device` (a bulk from
  // sim::Nic::AllocateCounters). InvalidArgument when there is no such counter.
  static absl::StatusOr<Action> FlowCounter(hw::Device& device, uint32_t counter_id, uint32_t offset);
  // Modify header: `actions` are PRM action words as they lie in memory (__be64; build them with
  // hw::ModifySetWord/AddWord/CopyWord). `flags` may hold MLX5DV_DR_ACTION_FLAGS_ROOT_LEVEL (for
  // level-0 tables only). Errors per actions/modify_header_compiler.h. Holds a reference on the domain.
  static absl::StatusOr<Action> ModifyHeader(const Domain& domain, uint32_t flags,
                                             absl::Span<const uint64_t> actions);
  // Packet reformat of `type`: L2_TUNNEL_TO_L2 (decap; data ignored), L2_TO_L2_TUNNEL (encap: `data` is
  // the whole outer header stack from Ethernet), L3_TUNNEL_TO_L2 (decap; `data` is the new 14- or
  // 18-byte L2 header), L2_TO_L3_TUNNEL (encap replacing the L2 header). InvalidArgument, as in rdma-core,
  // for flags other than ROOT_LEVEL, data and size disagreeing (null with a size, or a size of 0 with
  // data), more than 128 bytes, a type above 3, a decap type on NIC_TX or an encap type on NIC_RX, an L3
  // decap header not 14 or 18 bytes. Holds a reference on the domain.
  static absl::StatusOr<Action> PacketReformat(const Domain& domain, uint32_t flags,
                                               mlx5dv_flow_action_packet_reformat_type type,
                                               absl::Span<const uint8_t> data);
  // Inserts the 4-byte tag `vlan_hdr` (network order: TPID 0x8100 or 0x88a8, then the TCI; InvalidArgument
  // for another TPID) after the MAC addresses. At most two per rule.
  static absl::StatusOr<Action> PushVlan(const Domain& domain, uint32_t vlan_hdr_be);
  // Removes the first VLAN tag (a no-op on an untagged frame). At most two per rule.
  static absl::StatusOr<Action> PopVlan();
  // Terminating, NIC_RX: RSS — the frame goes to one of TIR `tir`'s queues (sim::Function::CreateTir).
  static absl::StatusOr<Action> DestTir(hw::Device& device, uint32_t tir);
  // Terminating: back into the root (level 0) table `root_table`, from its matchers of priority >=
  // `priority`. InvalidArgument when the table is not a root table.
  static absl::StatusOr<Action> DestRootTable(const Table& root_table, uint16_t priority);
  // Terminating: a legacy flow meter (mlx5dv_dr_action_create_flow_meter). The frame is coloured by the
  // token meter of the 32-byte PRM `params` (sim/meter.h) — red 0, yellow 1, green 2 into the low 8 bits
  // of reg_c[`reg_c_index`] — and continues in `next_table`. Unimplemented for a root next table;
  // InvalidArgument for more than 32 bytes of parameters, an invalid (valid bit 0) set, or reg_c_index > 7.
  // At rule creation the next table must be of the rule's domain and at a higher level (InvalidArgument).
  static absl::StatusOr<Action> FlowMeter(const Table& next_table, bool active, uint8_t reg_c_index,
                                          absl::Span<const uint8_t> params);
  // mlx5dv_dr_action_modify_flow_meter: applies the fields of `params` selected by `modify_field_select`
  // (ACTIVE 1<<0, CBS 1<<1, CIR 1<<2, EBS 1<<3, EIR 1<<4). InvalidArgument on another kind of action.
  absl::Status ModifyFlowMeter(bool active, absl::Span<const uint8_t> params,
                               uint64_t modify_field_select) const;
  // Terminating, NIC_RX and FDB (Unimplemented on NIC_TX): every frame continues in `default_next_table`;
  // 1 in `sample_ratio` (deterministically, every Nth) is copied to `sample_actions` — tag, flow counter,
  // and a destination: dest QP/TIR (NIC_RX), dest vport (FDB) or default miss; a tag, counter or QP in an
  // FDB sampler is Unimplemented. InvalidArgument for ratio 0 or no sample actions. Holds a reference on the
  // domain, the table and the sample actions.
  static absl::StatusOr<Action> FlowSampler(uint32_t sample_ratio, const Table& default_next_table,
                                            absl::Span<const Action* const> sample_actions);
  // One destination of a dest array: `dest` (dest QP/TIR, dest table, flow counter; dest vport and default
  // miss in FDB), optionally behind an encapsulation `reformat` (L2_TO_L2_TUNNEL or L2_TO_L3_TUNNEL).
  struct ArrayDestination {
    const Action* dest = nullptr;
    const Action* reformat = nullptr;
  };
  // Terminating: a copy of the frame to each destination. InvalidArgument for fewer than 2; Unimplemented
  // on NIC_TX or for another kind of destination or reformat. Holds references on the domain and members.
  static absl::StatusOr<Action> DestArray(const Domain& domain,
                                          absl::Span<const ArrayDestination> destinations);
  // Non-terminating aso action on context `offset` of ASO `object` (sim::Nic::CreateAsoObject): a flow
  // meter (flags: exactly one of MLX5DV_DR_ACTION_FLAGS_ASO_FLOW_METER_RED/YELLOW/GREEN/UNDEFINED, the
  // initial colour) writes the colour to reg_c[`return_reg_c`]; a first hit (flags within
  // MLX5DV_DR_ACTION_FLAGS_ASO_FIRST_HIT_SET) writes 1 when the context had been hit before; a connection
  // tracking object (flags: exactly one of MLX5DV_DR_ACTION_FLAGS_ASO_CT_DIRECTION_INITIATOR/_RESPONDER, the
  // side whose segments the rule sees) tracks the outer TCP segment in CT context `offset` and writes the
  // packet state to the low byte of reg_c[`return_reg_c`] (sim/conntrack.h: CtResultMatch gives the value
  // and mask a later matcher uses). A CT action serves rules of its own domain, on non-root tables, and
  // those of a domain its object is linked to (Domain::LinkAsoCt; InvalidArgument in any other domain).
  // InvalidArgument for return_reg_c other than 1, 3 or 5, bad flags, or an unknown object or offset.
  static absl::StatusOr<Action> Aso(const Domain& domain, uint32_t object, uint32_t offset, uint32_t flags,
                                    uint8_t return_reg_c);
  // mlx5dv_dr_action_modify_aso: new offset, flags and register (checked as Aso checks them; a CT action
  // may change direction), for rules created afterwards.
  absl::Status ModifyAso(uint32_t offset, uint32_t flags, uint8_t return_reg_c) const;

  // FailedPrecondition (EBUSY) while rules use the action.
  absl::Status Destroy();
  uint32_t id() const;  // unique in the process (dumps with stable ids print it)
  // The action and its parameters as DR's messages name them ("tag 0x5", "dest_table 12", ...); "" for an
  // empty handle.
  std::string Describe() const;
  bool valid() const { return handle_.get() != nullptr; }
  internal::ActionObj* obj() const { return handle_.get(); }

 private:
  friend class KernelSteering;
  explicit Action(internal::ActionObj* obj) : handle_(obj) {}
  internal::Handle<internal::ActionObj> handle_;
};

class Rule {
 public:
  Rule() = default;  // an empty handle
  // Inserts a rule. Errors, in rdma-core's order: the value (InvalidArgument for a bad size or bits
  // outside the mask, Unimplemented for an ip_version other than the mask's; a bad size is one that is not
  // a multiple of 4 or over 448, but on a root table, whose values rdma-core hands to the kernel, 0 or over
  // 512: there any size in between is zero-extended, and bits outside the mask are refused in every
  // section; then InvalidArgument when the firmware refuses the mask, naming the masked reserved bit or
  // unmatchable field), then the actions (see
  // actions/action_compiler.h; messages name the action index), then AlreadyExists (EEXIST) for a
  // duplicate when the domain disallows them.
  static absl::StatusOr<Rule> Create(const Matcher& matcher, const mlx5dv_flow_match_parameters* value,
                                     absl::Span<const Action* const> actions);
  static absl::StatusOr<Rule> Create(const Matcher& matcher, const hw::MatchParams& value,
                                     absl::Span<const Action* const> actions) {
    return Create(matcher, value.get(), actions);
  }
  // Inserts one rule per value, all with the same actions, as many Create calls in a row would (ids in
  // value order; among equal values the earlier one wins), under one hold of the domain's lock and with
  // the table's memory requested a few rules ahead, so a large rule set goes in faster (the way
  // rte_flow's asynchronous rule creation and HWS's burst flag batch inserts); `rules[i]` receives value
  // i's rule. All or nothing: InvalidArgument when `rules` and `values` differ in size or a handle in
  // `rules` is not empty; then every value is checked, then the actions for the pipes the values need,
  // then duplicates (AlreadyExists, also between values of the call, when the domain disallows them); a
  // failure installs none, leaves `rules` empty and names the value (`value[i]: ...`) or the action.
  // Lookups may see the call's rules appear one by one.
  static absl::Status CreateMany(const Matcher& matcher,
                                 absl::Span<const mlx5dv_flow_match_parameters* const> values,
                                 absl::Span<const Action* const> actions, absl::Span<Rule> rules);

  // One change for UpdateMany: the rule `*rule` holds gives way to a new rule of its matcher with `value`
  // and `actions`, which `*rule` then holds.
  struct Update {
    Rule* rule;
    const mlx5dv_flow_match_parameters* value;
    absl::Span<const Action* const> actions;
  };
  // Applies `updates` in order, each as `rule->Destroy()` and then Create (its matcher, its value and
  // actions) would (the new rule takes a new id; lookups see the old rule go, then the new one come), under
  // one hold of the domain's lock and with the memory of the next few updates requested while one is
  // done: a stream of rule changes (an ACL's, a revalidator's) waits on its cache misses together rather
  // than one after another. All or nothing; the checks, in order: InvalidArgument for a null `rule` or an
  // empty handle; then for each update, its rule's domain (that of update 0's), its value against its
  // matcher (as Create checks it) and its actions (named by index); then InvalidArgument for a rule named
  // by two updates; then, where the domain disallows duplicates, AlreadyExists for a value equal to that of
  // a rule of its matcher that the call leaves in place, or to an earlier update's in the same matcher. A
  // failure changes no rule and names the update (`update[i]: ...`). (Running out of memory throws
  // std::bad_alloc, as in Create, with the updates before the one that ran out applied.)
  static absl::Status UpdateMany(absl::Span<const Update> updates);

  // The rule's hits on the device's clock (sim::Nic::set_time_ns), from its flow_counter action: when the
  // counter began counting (its bulk's allocation: allocate it with the rule to age the rule from its
  // creation), its last hit, how long it has been idle now (`idle_ns()`: the rule's age) and the longest
  // stretch it went without a hit. A counter several rules share reports the hits of them all. Counters
  // in a sampler's or dest array's actions are not the rule's. Without a counter, from its aso action
  // that sets an ASO first-hit context (MLX5DV_DR_ACTION_FLAGS_ASO_FIRST_HIT_SET), counted from when the
  // context was made or last cleared (sim::Nic::ClearAsoFirstHit). FailedPrecondition when the rule has
  // neither; Unimplemented on a device that keeps no hit history; InvalidArgument for an empty handle.
  absl::StatusOr<hw::CounterActivity> QueryActivity() const;

  absl::Status Destroy();
  uint32_t id() const;  // unique in the process, reported in traces
  bool valid() const { return handle_.get() != nullptr; }
  internal::RuleObj* obj() const { return handle_.get(); }

 private:
  explicit Rule(internal::RuleObj* obj) : handle_(obj) {}
  internal::Handle<internal::RuleObj> handle_;
};

}  // namespace drsim::dr

#endif  // DRSIM_DR_DR_H_
