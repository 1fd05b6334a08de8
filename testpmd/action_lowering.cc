#include "testpmd/action_lowering.h"

#include <arpa/inet.h>

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "testpmd/encap.h"
#include "testpmd/indirect_actions.h"
#include "testpmd/modify.h"
#include "testpmd/registers.h"

namespace drsim::testpmd {
namespace {

using absl::StatusCode;

// What `flag` sets as the flow tag (MLX5_FLOW_MARK_DEFAULT).
constexpr uint32_t kFlagMark = 0xffffff;

// A transfer rule matching a VF as its source is in the FDB's TX pipe only (dr_rule_skip); when that pipe
// refuses an action, say which rules see the wire's traffic.
std::string WithPipeHint(absl::string_view msg) {
  if (!absl::StrContains(msg, "FDB (TX pipe")) return std::string(msg);
  return absl::StrCat(msg,
                      " (the rule matches what a VF sends: its port item, or the port that created it; "
                      "traffic from the wire is port 0's, as in mlx5 switchdev)");
}

// mlx5 makes a CT object's DR actions in the port's NIC_RX domain and links them to no other
// (flow_dv_aso_ct_alloc; no mlx5dv_dr_aso_other_domain_link), so DR refuses them in egress and transfer
// rules; say so when DR does.
std::string WithCtDomainHint(absl::string_view msg) {
  if (!absl::StrContains(msg, "the ASO CT action was made for another domain")) return std::string(msg);
  return absl::StrCat("hardware refuses to create flow: ", msg,
                      " (CT works in ingress rules only: mlx5 makes CT actions in the port's NIC_RX domain, "
                      "flow_dv_aso_ct_alloc, and links them to no egress or transfer domain)");
}

// DR names the culprit of a rule error as "action[N]"; point at the testpmd action behind entry N.
absl::Status Blame(const absl::Status& s, const DrList& list, SourcePos fallback) {
  const std::string msg = WithCtDomainHint(WithPipeHint(s.message()));
  const size_t at = msg.find("action[");
  size_t index = 0;
  if (at != std::string::npos) {
    const size_t end = msg.find(']', at);
    if (end != std::string::npos &&
        absl::SimpleAtoi(absl::string_view(msg).substr(at + 7, end - at - 7), &index) &&
        index < list.origins.size() && list.origins[index] != nullptr) {
      const Action& a = *list.origins[index];
      return ErrorAt(a.pos, s.code(), absl::StrCat(a.def->name, ": DR rejects the rule: ", msg));
    }
  }
  return ErrorAt(fallback, s.code(), absl::StrCat("DR rejects the rule: ", msg));
}

}  // namespace

bool WrittenBefore(SourcePos a, SourcePos b) {
  return a.line < b.line || (a.line == b.line && a.column < b.column);
}

absl::Status ActionError(const Action& a, StatusCode code, absl::string_view message) {
  return ErrorAt(a.pos, code, absl::StrCat(a.def->name, ": ", message));
}

uint32_t ActionParam(const Action& a, absl::string_view name, uint32_t fallback) {
  const ActionArg* arg = a.Find(name);
  return arg == nullptr ? fallback : static_cast<uint32_t>(arg->value.number);
}

absl::StatusOr<Classified> Classify(absl::Span<const Action> actions) {
  Classified c;
  c.all = actions;
  auto once = [](const Action*& slot, const Action& a, absl::string_view what) -> absl::Status {
    if (slot != nullptr) {
      return ErrorAt(a.pos, StatusCode::kInvalidArgument,
                     absl::StrFormat("a flow takes one %s, and '%s' at %d:%d is one already (mlx5 rejects a "
                                     "second)",
                                     what, slot->def->name, slot->pos.line, slot->pos.column));
    }
    slot = &a;
    return absl::OkStatus();
  };
  for (const Action& a : actions) {
    if (a.def->type != ActionType::kVoid) c.last = &a;
    switch (a.def->type) {
      case ActionType::kVoid:
        break;
      case ActionType::kDrop:
      case ActionType::kQueue:
      case ActionType::kRss:
      case ActionType::kJump:
      case ActionType::kPortId:
      case ActionType::kRepresentedPort:
        DRSIM_RETURN_IF_ERROR(once(c.fate, a, "fate action"));
        break;
      case ActionType::kMeter:
        DRSIM_RETURN_IF_ERROR(once(c.meter, a, "meter"));
        break;
      case ActionType::kSample:
        DRSIM_RETURN_IF_ERROR(once(c.sample, a, "sample"));
        break;
      case ActionType::kMark:
      case ActionType::kFlag:
        DRSIM_RETURN_IF_ERROR(once(c.mark, a, "mark or flag"));
        break;
      case ActionType::kCount:
        DRSIM_RETURN_IF_ERROR(once(c.count, a, "count"));
        break;
      case ActionType::kAge:
        DRSIM_RETURN_IF_ERROR(once(c.age, a, "age"));
        break;
      case ActionType::kIndirect:
        c.indirects.push_back(&a);
        break;
      case ActionType::kConntrack:
      case ActionType::kConntrackUpdate:
        return ActionError(a, StatusCode::kUnimplemented,
                           "mlx5 takes conntrack as an indirect action only: create it with 'flow "
                           "indirect_action PORT create action conntrack / end' and use 'indirect ID'");
      case ActionType::kVxlanDecap:
      case ActionType::kNvgreDecap:
      case ActionType::kRawDecap:
        DRSIM_RETURN_IF_ERROR(once(c.decap, a, "decapsulation"));
        break;
      case ActionType::kVxlanEncap:
      case ActionType::kNvgreEncap:
      case ActionType::kRawEncap:
        DRSIM_RETURN_IF_ERROR(once(c.encap, a, "encapsulation"));
        break;
      case ActionType::kOfPushVlan:
        if (c.pushes.size() == 2)
          return ActionError(a, StatusCode::kInvalidArgument, "DR pushes at most two VLAN tags");
        c.pushes.push_back({&a});
        break;
      case ActionType::kOfPopVlan:
        if (c.pops.size() == 2)
          return ActionError(a, StatusCode::kInvalidArgument, "DR pops at most two VLAN tags");
        c.pops.push_back(&a);
        break;
      case ActionType::kOfSetVlanVid:
      case ActionType::kOfSetVlanPcp:
        if (!c.pushes.empty()) {
          const Action*& slot =
              a.def->type == ActionType::kOfSetVlanVid ? c.pushes.back().vid : c.pushes.back().pcp;
          DRSIM_RETURN_IF_ERROR(once(slot, a, "VID/PCP per pushed tag"));
        } else {
          c.rewrites.push_back(&a);
        }
        break;
      default:
        c.rewrites.push_back(&a);
        break;
    }
  }
  if (c.meter != nullptr && c.sample != nullptr) {
    return ActionError(*c.sample, StatusCode::kUnimplemented,
                       "meter and sample in one flow are not supported");
  }
  return c;
}

absl::Status ActionLowering::AddModifiers(const Classified& c, bool with_count, bool root,
                                          absl::Span<const uint64_t> extra_words, DrList* list) {
  const uint32_t flags = root ? MLX5DV_DR_ACTION_FLAGS_ROOT_LEVEL : 0;
  Reformats reformats;
  DRSIM_RETURN_IF_ERROR(PlanReformats(c, &reformats));
  if (reformats.decap) DRSIM_RETURN_IF_ERROR(AddReformat(*reformats.decap, flags, list));
  for (const Action* pop : c.pops) {
    absl::StatusOr<const dr::Action*> a = Shared("pop_vlan", nullptr, [] { return dr::Action::PopVlan(); });
    if (!a.ok()) return Fail(a.status(), pop);
    list->Add(*a, pop);
  }
  std::vector<uint64_t> words;
  const HeaderLayers& layers = c.decap != nullptr && info_.tunnel ? info_.inner : info_.outer;
  for (const Action* r : c.rewrites) DRSIM_RETURN_IF_ERROR(AppendModifyWords(*r, layers, &words));
  words.insert(words.end(), extra_words.begin(), extra_words.end());
  if (!words.empty()) {
    const Action* origin = c.rewrites.empty() ? nullptr : c.rewrites.front();
    std::string key = absl::StrCat("modify_header ", flags, " ");
    key.append(reinterpret_cast<const char*>(words.data()), words.size() * sizeof(uint64_t));
    absl::StatusOr<const dr::Action*> modify =
        Shared(key, domain_, [&] { return dr::Action::ModifyHeader(domain_->domain(), flags, words); });
    if (!modify.ok()) return Fail(modify.status(), origin);
    list->Add(*modify, origin);
  }
  for (const PushVlan& p : c.pushes) DRSIM_RETURN_IF_ERROR(AddPush(p, list));
  if (c.mark != nullptr) DRSIM_RETURN_IF_ERROR(AddMark(*c.mark, list));
  if (with_count) DRSIM_RETURN_IF_ERROR(AddCounting(c, root, list));
  if (reformats.encap) DRSIM_RETURN_IF_ERROR(AddReformat(*reformats.encap, flags, list));
  return absl::OkStatus();
}

// The DR destination of fate action `fate`. With `single_tir`, an rss that needs a dispatch table is an
// error (sampled copies take a TIR, not a table).
absl::StatusOr<const dr::Action*> ActionLowering::Fate(const Action& fate, const RuleLabel& label,
                                                       bool single_tir) {
  switch (fate.def->type) {
    case ActionType::kDrop: {
      absl::StatusOr<const dr::Action*> drop = Shared("drop", nullptr, [] { return dr::Action::Drop(); });
      if (!drop.ok()) return Fail(drop.status(), &fate);
      return *drop;
    }
    case ActionType::kQueue: {
      DRSIM_RETURN_IF_ERROR(NeedIngress(fate));
      absl::StatusOr<uint32_t> qp = ctx_.QueueNumber(port_, ActionParam(fate, "index"));
      if (!qp.ok()) return Fail(qp.status(), &fate);
      sim::Function& fn = domain_->function();
      absl::StatusOr<const dr::Action*> dest = Shared(absl::StrCat("dest_qp ", fn.vport(), " ", *qp), nullptr,
                                                      [&] { return dr::Action::DestQp(fn, *qp); });
      if (!dest.ok()) return Fail(dest.status(), &fate);
      return *dest;
    }
    case ActionType::kRss:
      return Rss(fate, label, single_tir);
    case ActionType::kJump: {
      const uint32_t group = ActionParam(fate, "group");
      if (group > kMaxGroup) {
        return ActionError(fate, StatusCode::kInvalidArgument,
                           absl::StrFormat("group %d is above %d", group, kMaxGroup));
      }
      absl::StatusOr<std::shared_ptr<TableRes>> table = ctx_.objects.GroupTable(domain_, group);
      if (!table.ok()) return Fail(table.status(), &fate);
      out_->Hold(*table);
      absl::StatusOr<const dr::Action*> jump = (*table)->JumpAction();
      if (!jump.ok()) return Fail(jump.status(), &fate);
      return *jump;
    }
    default: {  // port_id, represented_port
      if (type() != MLX5DV_DR_DOMAIN_TYPE_FDB) {
        return ActionError(
            fate, StatusCode::kInvalidArgument,
            "sends to an eSwitch port: only transfer rules can (DR's dest_vport exists only in FDB "
            "domains)");
      }
      const uint32_t port =
          ActionParam(fate, fate.def->type == ActionType::kPortId ? "id" : "ethdev_port_id");
      absl::StatusOr<uint16_t> vport = ctx_.VportOfPort(port);
      if (!vport.ok()) return Fail(vport.status(), &fate);
      absl::StatusOr<const dr::Action*> dest = Shared(absl::StrCat("dest_vport ", *vport), domain_, [&] {
        return dr::Action::DestVport(domain_->domain(), *vport);
      });
      if (!dest.ok()) return Fail(dest.status(), &fate);
      return *dest;
    }
  }
}

// A counter for `count`; its id goes to `id` when given.
absl::StatusOr<const dr::Action*> ActionLowering::Counter(const Action& count, std::optional<uint32_t>* id) {
  absl::StatusOr<uint32_t> base = ctx_.nic.AllocateCounters(1);
  if (!base.ok()) return Fail(base.status(), &count);
  sim::Nic& nic = ctx_.nic;
  const uint32_t counter = *base;
  absl::StatusOr<dr::Action> action = dr::Action::FlowCounter(domain_->function(), counter, 0);
  if (!action.ok()) {
    nic.FreeCounters(counter).IgnoreError();
    return Fail(action.status(), &count);
  }
  if (id != nullptr) *id = counter;
  return Own(*std::move(action), [&nic, counter] { nic.FreeCounters(counter).IgnoreError(); });
}

absl::Status ActionLowering::AddCounting(const Classified& c, bool root, DrList* list) {
  // A flow without counts, ages or indirect actions (a rule file's usual one) only has the ASO checks.
  if (c.indirects.empty() && c.count == nullptr && c.age == nullptr) {
    return CheckAsoActions(flow_ != nullptr ? *flow_ : c, root);
  }
  // The indirect actions, looked up; count and age ones by kind.
  Classified flow = flow_ != nullptr ? *flow_ : c;  // what mlx5 validates: the whole flow's actions
  std::shared_ptr<IndirectObject> shared_count, shared_age;
  std::vector<std::pair<const Action*, std::shared_ptr<IndirectObject>>> others;
  for (const Action* a : c.indirects) {
    DRSIM_ASSIGN_OR_RETURN(const std::shared_ptr<IndirectObject> object, Indirect(*a));
    out_->Hold(object);
    const ActionType kind = object->def().type;
    if (kind == ActionType::kCount && flow.indirect_count == nullptr) {
      flow.indirect_count = a;
      shared_count = object;
    } else if (kind == ActionType::kAge && flow.indirect_age == nullptr) {
      flow.indirect_age = a;
      shared_age = object;
    } else {
      if (kind == ActionType::kConntrack) flow.indirect_conntrack = a;
      others.emplace_back(a, object);
    }
  }
  // mlx5's checks, action by action in the order written.
  std::vector<const Action*> ordered(c.indirects.begin(), c.indirects.end());
  if (c.count != nullptr) ordered.push_back(c.count);
  if (c.age != nullptr) ordered.push_back(c.age);
  std::sort(ordered.begin(), ordered.end(),
            [](const Action* a, const Action* b) { return WrittenBefore(a->pos, b->pos); });
  constexpr absl::string_view kOldAge =
      "old age and indirect count combination is not supported (in the root table, mlx5 ages a rule by its "
      "own counter)";
  const Action* count_seen = nullptr;
  const Action* age_seen = nullptr;
  std::optional<uint32_t> age_timeout;
  for (const Action* a : ordered) {
    if (a == c.count || a == flow.indirect_count) {
      if (count_seen != nullptr) {
        return ActionError(*a, StatusCode::kInvalidArgument, "duplicate count actions set");
      }
      if (a == flow.indirect_count && root && age_seen != nullptr) {
        return ActionError(*a, StatusCode::kInvalidArgument, kOldAge);
      }
      count_seen = a;
    } else if (a == c.age) {
      DRSIM_ASSIGN_OR_RETURN(age_timeout, AgeTimeout(*a));
      if (age_seen != nullptr) {
        return ActionError(*a, StatusCode::kInvalidArgument, "duplicate age actions set");
      }
      if (root && count_seen != nullptr && count_seen == flow.indirect_count) {
        return ActionError(*a, StatusCode::kInvalidArgument, kOldAge);
      }
      age_seen = a;
    } else if (a == flow.indirect_age) {
      if (root) {
        return ActionError(*a, StatusCode::kUnimplemented,
                           "Shared ASO age action is not supported for group 0 (the root table)");
      }
      if (age_seen != nullptr) {
        return ActionError(*a, StatusCode::kInvalidArgument, "duplicate age actions set");
      }
      age_seen = a;
    } else {
      auto other = std::find_if(others.begin(), others.end(), [a](const auto& o) { return o.first == a; });
      const ActionType kind = other->second->def().type;
      if (kind == ActionType::kCount || kind == ActionType::kAge) {
        return ActionError(
            *a, StatusCode::kInvalidArgument,
            absl::StrFormat("duplicate %s actions set", kind == ActionType::kCount ? "count" : "age"));
      }
      DRSIM_RETURN_IF_ERROR(other->second->AddToRule(*this, flow, root, *a, list));
    }
  }
  DRSIM_RETURN_IF_ERROR(CheckAsoActions(flow, root));
  // Counter-aged: in root tables, and an age of its own beside a count of its own (one counter for both).
  const Action* age = age_seen;
  if (age != nullptr && (root || c.count != nullptr) && age == c.age) {
    std::optional<uint32_t> id;
    DRSIM_ASSIGN_OR_RETURN(const dr::Action* counter, Counter(*age, &id));
    list->Add(counter, c.count != nullptr ? c.count : age);
    if (c.count != nullptr) out_->SetCounter(id);
    auto state = std::make_shared<AgeState>();
    state->timeout_s = *age_timeout;
    state->counter = *id;
    out_->SetAge(std::move(state), false);
    return absl::OkStatus();
  }
  // Aged by an ASO flow-hit context: its own, or the indirect age's.
  if (age != nullptr) {
    std::shared_ptr<AgeState> state;
    if (age == c.age) {
      DRSIM_ASSIGN_OR_RETURN(state, NewFlowHitAge(ctx_.flow_hits, *age_timeout, *age));
    } else {
      state = shared_age->age();
    }
    absl::StatusOr<dr::Action> aso =
        dr::Action::Aso(domain_->domain(), state->flow_hit->object(), state->flow_hit->offset(),
                        MLX5DV_DR_ACTION_FLAGS_ASO_FIRST_HIT_SET, kMeterRegC);
    if (!aso.ok()) return Fail(aso.status(), age);
    list->Add(Own(*std::move(aso)), age);
    out_->SetAge(std::move(state), age != c.age);
  }
  if (c.count != nullptr) {
    std::optional<uint32_t> id;
    DRSIM_ASSIGN_OR_RETURN(const dr::Action* counter, Counter(*c.count, &id));
    list->Add(counter, c.count);
    out_->SetCounter(id);
  } else if (shared_count != nullptr) {
    const uint32_t id = *shared_count->counter();
    absl::StatusOr<dr::Action> action = dr::Action::FlowCounter(domain_->function(), id, 0);
    if (!action.ok()) return Fail(action.status(), flow.indirect_count);
    list->Add(Own(*std::move(action)), flow.indirect_count);
    out_->SetCounter(id);
  }
  return absl::OkStatus();
}

absl::Status ActionLowering::CheckAsoActions(const Classified& flow, bool root) const {
  const Action* age = flow.age != nullptr ? flow.age : flow.indirect_age;
  const Action* ct = flow.indirect_conntrack;
  // As mlx5's flow_dv_validate counts them: an age of its own beside any count is counter-aged there.
  const bool age_is_aso = age != nullptr && !root &&
                          !(flow.age != nullptr && (flow.count != nullptr || flow.indirect_count != nullptr));
  std::vector<const Action*> aso;
  for (const Action* a : {age_is_aso ? age : nullptr, flow.meter, ct}) {
    if (a != nullptr) aso.push_back(a);
  }
  if (aso.size() > 1) {
    // Blamed on the one written last, where mlx5's action-by-action validation stops.
    std::sort(aso.begin(), aso.end(),
              [](const Action* a, const Action* b) { return WrittenBefore(a->pos, b->pos); });
    const Action& first = *aso.front();
    return ActionError(
        *aso.back(), StatusCode::kUnimplemented,
        absl::StrFormat("unsupported combining AGE, METER, CT ASO actions in a single rule ('%s' "
                        "at %d:%d is one too: each is an ASO object on a ConnectX-6 Dx, and a "
                        "rule takes one)",
                        first.def->name, first.pos.line, first.pos.column));
  }
  // A transfer mirror (sample ratio 1) before an ASO action.
  if (!aso.empty() && flow.sample != nullptr && type() == MLX5DV_DR_DOMAIN_TYPE_FDB &&
      ActionParam(*flow.sample, "ratio") == 1) {
    for (const Action* a : {root ? nullptr : age, ct}) {
      if (a != nullptr && WrittenBefore(flow.sample->pos, a->pos)) {
        return ActionError(*a, StatusCode::kUnimplemented, "sample before ASO action is not supported");
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<IndirectObject>> ActionLowering::Indirect(const Action& a) {
  absl::StatusOr<IndirectEntry*> entry = ctx_.indirect.Find(port_, ActionParam(a, "action_id"));
  if (!entry.ok()) return Fail(entry.status(), &a);
  return (*entry)->object;
}

absl::StatusOr<const dr::Domain*> ActionLowering::PortDomain(mlx5dv_dr_domain_type type) {
  if (type == domain_->type()) return &domain_->domain();
  absl::StatusOr<std::shared_ptr<DomainRes>> domain = ctx_.objects.Domain(type, port_);
  if (!domain.ok()) return domain.status();
  out_->Hold(*domain);
  return &(*domain)->domain();
}

absl::Status ActionLowering::Insert(const std::shared_ptr<MatcherRes>& matcher, const hw::MatchParams& value,
                                    const DrList& list, const RuleLabel& label, SourcePos fallback) {
  absl::StatusOr<InstalledRulePtr> rule = ctx_.objects.InsertRule(matcher, value, list.actions, label);
  if (!rule.ok()) return Blame(rule.status(), list, fallback);
  out_->AddRule(*std::move(rule));
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<MatcherRes>> ActionLowering::MatcherIn(const std::shared_ptr<TableRes>& table,
                                                                      uint16_t priority,
                                                                      const hw::MatchParams& mask,
                                                                      SourcePos pos) {
  absl::StatusOr<std::shared_ptr<MatcherRes>> m = ctx_.objects.Matcher(table, priority, mask);
  if (!m.ok())
    return ErrorAt(pos, m.status().code(), absl::StrCat("DR rejects the pattern: ", m.status().message()));
  return m;
}

absl::Status ActionLowering::NeedIngress(const Action& a) const {
  if (type() == MLX5DV_DR_DOMAIN_TYPE_NIC_RX) return absl::OkStatus();
  return ActionError(a, StatusCode::kInvalidArgument,
                     "delivers to receive queues: only ingress (NIC_RX) rules can");
}

absl::StatusOr<std::shared_ptr<const dr::Action>> SharedTag(ActionCache& cache, uint32_t tag) {
  return cache.Get(absl::StrCat("tag ", tag), nullptr, [tag] { return dr::Action::Tag(tag); });
}

absl::StatusOr<const dr::Action*> ActionLowering::Shared(
    const std::string& key, std::shared_ptr<const void> keep_alive,
    absl::FunctionRef<absl::StatusOr<dr::Action>()> make) {
  // Domain-bound actions are keyed by their domain too.
  const std::string full_key =
      keep_alive == nullptr ? key : absl::StrCat(key, " @", reinterpret_cast<uintptr_t>(keep_alive.get()));
  DRSIM_ASSIGN_OR_RETURN(std::shared_ptr<const dr::Action> action,
                         ctx_.shared_actions.Get(full_key, std::move(keep_alive), make));
  const dr::Action* raw = action.get();
  out_->Hold(std::move(action));
  return raw;
}

const dr::Action* ActionLowering::Own(dr::Action a, std::function<void()> release) {
  return out_->Own(std::make_unique<OwnedAction>(std::move(a), std::move(release)));
}

absl::Status ActionLowering::Fail(const absl::Status& s, const Action* origin) const {
  if (origin == nullptr) return s;
  return ErrorAt(origin->pos, s.code(), absl::StrCat(origin->def->name, ": ", s.message()));
}

// The header bytes of a decap/encap action; tunnel decaps have none (nullopt) and count as large.
absl::StatusOr<std::optional<std::vector<uint8_t>>> ActionLowering::ReformatBytes(const Action& a) {
  switch (a.def->type) {
    case ActionType::kVxlanEncap:
      return std::optional<std::vector<uint8_t>>(TunnelEncapHeader(ctx_.vxlan));
    case ActionType::kNvgreEncap:
      return std::optional<std::vector<uint8_t>>(TunnelEncapHeader(ctx_.nvgre));
    case ActionType::kRawEncap:
    case ActionType::kRawDecap: {
      const bool encap = a.def->type == ActionType::kRawEncap;
      const uint32_t index = ActionParam(a, "index");
      const std::map<uint32_t, std::vector<uint8_t>>& buffers = encap ? ctx_.raw_encap : ctx_.raw_decap;
      auto it = buffers.find(index);
      if (it == buffers.end() || it->second.empty()) {
        return ActionError(a, StatusCode::kInvalidArgument,
                           absl::StrFormat("buffer %d is empty: run `set %s %d ... / end_set` first", index,
                                           encap ? "raw_encap" : "raw_decap", index));
      }
      return std::optional<std::vector<uint8_t>>(it->second);
    }
    default:
      return std::optional<std::vector<uint8_t>>();
  }
}

// mlx5's choice of reformat types from the decap and encap sizes (MLX5_ENCAPSULATION_DECISION_SIZE).
absl::Status ActionLowering::PlanReformats(const Classified& c, Reformats* out) {
  std::optional<std::vector<uint8_t>> decap, encap;
  if (c.decap != nullptr) {
    DRSIM_ASSIGN_OR_RETURN(decap, ReformatBytes(*c.decap));
  }
  if (c.encap != nullptr) {
    DRSIM_ASSIGN_OR_RETURN(encap, ReformatBytes(*c.encap));
  }
  const bool big_decap = c.decap != nullptr && (!decap || decap->size() > kEncapDecisionSize);
  const bool big_encap = c.encap != nullptr && encap->size() > kEncapDecisionSize;
  if (c.decap != nullptr && c.encap != nullptr && big_decap != big_encap) {
    if (big_decap) {  // tunnel off, new L2 header on: L3 decap
      out->decap = Reformat{MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L3_TUNNEL_TO_L2, *encap, c.encap};
    } else {  // L2 header off, tunnel on: L3 encap
      out->encap = Reformat{MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TO_L3_TUNNEL, *encap, c.encap};
    }
    return absl::OkStatus();
  }
  if (c.decap != nullptr) {
    if (!big_decap) {
      return ActionError(
          *c.decap, StatusCode::kInvalidArgument,
          absl::StrFormat("a %d-byte decap removes an L2 header only: it needs a raw_encap of a tunnel "
                          "(L3 encapsulation)",
                          decap->size()));
    }
    out->decap = Reformat{MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TUNNEL_TO_L2, {}, c.decap};
  }
  if (c.encap != nullptr) {
    if (!big_encap) {
      return ActionError(
          *c.encap, StatusCode::kInvalidArgument,
          absl::StrFormat("a %d-byte encap is an L2 header only: it needs a raw_decap of a tunnel "
                          "(L3 decapsulation)",
                          encap->size()));
    }
    out->encap = Reformat{MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TO_L2_TUNNEL, *encap, c.encap};
  }
  return absl::OkStatus();
}

absl::Status ActionLowering::AddReformat(const Reformat& r, uint32_t flags, DrList* list) {
  std::string key = absl::StrCat("packet_reformat ", flags, " ", r.type, " ");
  key.append(r.data.begin(), r.data.end());
  absl::StatusOr<const dr::Action*> a = Shared(
      key, domain_, [&] { return dr::Action::PacketReformat(domain_->domain(), flags, r.type, r.data); });
  if (!a.ok()) return Fail(a.status(), r.origin);
  list->Add(*a, r.origin);
  return absl::OkStatus();
}

absl::Status ActionLowering::AddPush(const PushVlan& p, DrList* list) {
  const uint32_t tpid = ActionParam(*p.push, "ethertype");
  if (tpid != 0x8100 && tpid != 0x88a8) {
    return ActionError(*p.push, StatusCode::kInvalidArgument,
                       absl::StrFormat("ethertype 0x%x: DR pushes 0x8100 or 0x88a8 tags", tpid));
  }
  // The VID and PCP: of_set_vlan_vid/pcp after the push, else the pattern's vlan item, else 0.
  const uint32_t vid = p.vid != nullptr ? ActionParam(*p.vid, "vlan_vid") : info_.vlan_vid.value_or(0);
  const uint32_t pcp = p.pcp != nullptr ? ActionParam(*p.pcp, "vlan_pcp") : info_.vlan_pcp.value_or(0);
  if (vid > 0xfff) return ActionError(*p.vid, StatusCode::kInvalidArgument, "vlan_vid must be 0..4095");
  if (pcp > 7) return ActionError(*p.pcp, StatusCode::kInvalidArgument, "vlan_pcp must be 0..7");
  const uint32_t header = htonl(tpid << 16 | pcp << 13 | vid);
  absl::StatusOr<const dr::Action*> a = Shared(absl::StrCat("push_vlan ", header), domain_, [&] {
    return dr::Action::PushVlan(domain_->domain(), header);
  });
  if (!a.ok()) return Fail(a.status(), p.push);
  list->Add(*a, p.push);
  return absl::OkStatus();
}

absl::Status ActionLowering::AddMark(const Action& mark, DrList* list) {
  if (type() != MLX5DV_DR_DOMAIN_TYPE_NIC_RX) {
    return ActionError(mark, StatusCode::kInvalidArgument,
                       "DR's tag action exists only in ingress (NIC_RX) rules");
  }
  uint32_t tag = kFlagMark;
  if (mark.def->type == ActionType::kMark) {
    tag = ActionParam(mark, "id");
    if (tag > kMaxMark) {
      return ActionError(
          mark, StatusCode::kInvalidArgument,
          absl::StrFormat("id 0x%x is above 0x%x (mlx5 reserves the last 16 of the 24 bits)", tag, kMaxMark));
    }
  }
  absl::StatusOr<std::shared_ptr<const dr::Action>> a = SharedTag(ctx_.shared_actions, tag);
  if (!a.ok()) return Fail(a.status(), &mark);
  list->Add(a->get(), &mark);
  out_->Hold(*std::move(a));
  return absl::OkStatus();
}

absl::StatusOr<const dr::Action*> ActionLowering::Tir(uint64_t hash_fields, const RssPlan& plan,
                                                      const Action& rss) {
  std::vector<uint32_t> qps;
  for (uint16_t q : plan.queues) {
    absl::StatusOr<uint32_t> qp = ctx_.QueueNumber(port_, q);
    if (!qp.ok()) return Fail(qp.status(), &rss);
    qps.push_back(*qp);
  }
  sim::Function& fn = domain_->function();
  absl::StatusOr<uint32_t> tir = fn.CreateTir(std::move(qps), hash_fields, plan.key, plan.symmetry);
  if (!tir.ok()) return Fail(tir.status(), &rss);
  const uint32_t number = *tir;
  absl::StatusOr<dr::Action> dest = dr::Action::DestTir(fn, number);
  if (!dest.ok()) {
    fn.DestroyTir(number).IgnoreError();
    return Fail(dest.status(), &rss);
  }
  return Own(*std::move(dest), [&fn, number] { fn.DestroyTir(number).IgnoreError(); });
}

absl::StatusOr<const dr::Action*> ActionLowering::Rss(const Action& rss, const RuleLabel& label,
                                                      bool single_tir) {
  DRSIM_RETURN_IF_ERROR(NeedIngress(rss));
  DRSIM_ASSIGN_OR_RETURN(RssPlan plan, PlanRss(rss, info_, ctx_.options.rx_queues));
  if (plan.cases.size() == 1) return Tir(plan.cases.front().hash_fields, plan, rss);
  if (single_tir) {
    return ActionError(
        rss, StatusCode::kUnimplemented,
        "these types need one TIR per packet kind (a dispatch table), which a sampled copy cannot "
        "take: pin the L3/L4 in the pattern or narrow the types");
  }
  // A dispatch table: most specific matchers first, one TIR per hash-field set.
  absl::StatusOr<std::shared_ptr<TableRes>> table = ctx_.objects.HiddenTable(domain_, false);
  if (!table.ok()) return Fail(table.status(), &rss);
  out_->Hold(*table);
  std::map<uint64_t, const dr::Action*> tirs;
  for (const RssCase& c : plan.cases) {
    if (!tirs.count(c.hash_fields)) {
      DRSIM_ASSIGN_OR_RETURN(tirs[c.hash_fields], Tir(c.hash_fields, plan, rss));
    }
    hw::MatchBuilder mask, value;
    const hw::Headers stack = plan.inner ? hw::kInner : hw::kOuter;
    uint16_t priority = 2;
    if (c.l3) {
      const uint32_t version = *c.l3 == L3::kIpv4 ? 4 : 6;  // rdma-core: the mask holds the version too
      mask.IpVersion(stack, version);
      value.IpVersion(stack, version);
      priority = 1;
    }
    if (c.l4) {
      mask.IpProtocol(stack, 0xff);
      value.IpProtocol(stack, *c.l4 == L4::kTcp ? 6 : 17);
      priority = 0;
    }
    DRSIM_ASSIGN_OR_RETURN(std::shared_ptr<MatcherRes> m,
                           MatcherIn(*table, priority, *mask.Build(), rss.pos));
    DrList list;
    list.Add(tirs[c.hash_fields], &rss);
    DRSIM_RETURN_IF_ERROR(Insert(m, *value.Build(), list, label.With(" rss dispatch"), rss.pos));
  }
  absl::StatusOr<const dr::Action*> jump = (*table)->JumpAction();
  if (!jump.ok()) return Fail(jump.status(), &rss);
  return *jump;
}

}  // namespace drsim::testpmd
