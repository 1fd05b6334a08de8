#include "testpmd/lowering.h"

#include <arpa/inet.h>

#include <functional>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "hw/match_layout.h"
#include "testpmd/encap.h"
#include "testpmd/modify.h"
#include "testpmd/registers.h"
#include "testpmd/rss.h"
#include "testpmd/status_macros.h"

namespace drsim::testpmd {
namespace {

using absl::StatusCode;

// mlx5's largest mark id: the last 16 values of the 24 bits are reserved (MLX5_FLOW_MARK_MAX).
constexpr uint32_t kMaxMark = 0xffffef;
// What `flag` sets as the flow tag (MLX5_FLOW_MARK_DEFAULT).
constexpr uint32_t kFlagMark = 0xffffff;

absl::Status At(const Action& a, StatusCode code, absl::string_view message) {
  return ErrorAt(a.pos, code, absl::StrCat(a.def->name, ": ", message));
}

// A DR action list under construction, with the testpmd action each entry came from (nullptr: the
// engine's own, like a meter's flow-id tag).
struct DrList {
  std::vector<const dr::Action*> actions;
  std::vector<const Action*> origins;
  void Add(const dr::Action* a, const Action* origin) {
    actions.push_back(a);
    origins.push_back(origin);
  }
};

// DR names the culprit of a rule error as "action[N]"; point at the testpmd action behind entry N.
absl::Status Blame(const absl::Status& s, const DrList& list, SourcePos fallback) {
  const absl::string_view msg = s.message();
  const size_t at = msg.find("action[");
  size_t index = 0;
  if (at != absl::string_view::npos) {
    const size_t end = msg.find(']', at);
    if (end != absl::string_view::npos && absl::SimpleAtoi(msg.substr(at + 7, end - at - 7), &index) &&
        index < list.origins.size() && list.origins[index] != nullptr) {
      const Action& a = *list.origins[index];
      return ErrorAt(a.pos, s.code(), absl::StrCat(a.def->name, ": DR rejects the rule: ", msg));
    }
  }
  return ErrorAt(fallback, s.code(), absl::StrCat("DR rejects the rule: ", msg));
}

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
  const Action* decap = nullptr;  // vxlan_decap, nvgre_decap, raw_decap
  const Action* encap = nullptr;  // vxlan_encap, nvgre_encap, raw_encap
  std::vector<PushVlan> pushes;
  std::vector<const Action*> pops;
  std::vector<const Action*> rewrites;  // modify-header actions
  const Action* last = nullptr;         // the last action that is not void
};

absl::StatusOr<Classified> Classify(absl::Span<const Action> actions) {
  Classified c;
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
        TESTPMD_RETURN_IF_ERROR(once(c.fate, a, "fate action"));
        break;
      case ActionType::kMeter:
        TESTPMD_RETURN_IF_ERROR(once(c.meter, a, "meter"));
        break;
      case ActionType::kSample:
        TESTPMD_RETURN_IF_ERROR(once(c.sample, a, "sample"));
        break;
      case ActionType::kMark:
      case ActionType::kFlag:
        TESTPMD_RETURN_IF_ERROR(once(c.mark, a, "mark or flag"));
        break;
      case ActionType::kCount:
        TESTPMD_RETURN_IF_ERROR(once(c.count, a, "count"));
        break;
      case ActionType::kVxlanDecap:
      case ActionType::kNvgreDecap:
      case ActionType::kRawDecap:
        TESTPMD_RETURN_IF_ERROR(once(c.decap, a, "decapsulation"));
        break;
      case ActionType::kVxlanEncap:
      case ActionType::kNvgreEncap:
      case ActionType::kRawEncap:
        TESTPMD_RETURN_IF_ERROR(once(c.encap, a, "encapsulation"));
        break;
      case ActionType::kOfPushVlan:
        if (c.pushes.size() == 2)
          return At(a, StatusCode::kInvalidArgument, "DR pushes at most two VLAN tags");
        c.pushes.push_back({&a});
        break;
      case ActionType::kOfPopVlan:
        if (c.pops.size() == 2) return At(a, StatusCode::kInvalidArgument, "DR pops at most two VLAN tags");
        c.pops.push_back(&a);
        break;
      case ActionType::kOfSetVlanVid:
      case ActionType::kOfSetVlanPcp:
        if (!c.pushes.empty()) {
          const Action*& slot =
              a.def->type == ActionType::kOfSetVlanVid ? c.pushes.back().vid : c.pushes.back().pcp;
          TESTPMD_RETURN_IF_ERROR(once(slot, a, "VID/PCP per pushed tag"));
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
    return At(*c.sample, StatusCode::kUnimplemented, "meter and sample in one flow are not supported");
  }
  return c;
}

uint32_t Param(const Action& a, absl::string_view name, uint32_t fallback = 0) {
  const ActionArg* arg = a.Find(name);
  return arg == nullptr ? fallback : static_cast<uint32_t>(arg->value.number);
}

class Lowering {
 public:
  Lowering(EngineContext& ctx, std::shared_ptr<DomainRes> domain, uint16_t port, const PatternInfo& info,
           FlowObjects* out)
      : ctx_(ctx), domain_(std::move(domain)), port_(port), info_(info), out_(out) {}

  mlx5dv_dr_domain_type type() const { return domain_->type(); }

  // Adds decap, pops, the merged rewrites (plus `extra_words`), pushes, tag, counter (when `with_count`)
  // and encap to `list`, for a rule in a root table when `root`.
  absl::Status AddModifiers(const Classified& c, bool with_count, bool root,
                            absl::Span<const uint64_t> extra_words, DrList* list) {
    const uint32_t flags = root ? MLX5DV_DR_ACTION_FLAGS_ROOT_LEVEL : 0;
    Reformats reformats;
    TESTPMD_RETURN_IF_ERROR(PlanReformats(c, &reformats));
    if (reformats.decap) TESTPMD_RETURN_IF_ERROR(AddReformat(*reformats.decap, flags, list));
    for (const Action* pop : c.pops) {
      absl::StatusOr<dr::Action> a = dr::Action::PopVlan();
      if (!a.ok()) return Fail(a.status(), pop);
      list->Add(Own(*std::move(a)), pop);
    }
    std::vector<uint64_t> words;
    const HeaderLayers& layers = c.decap != nullptr && info_.tunnel ? info_.inner : info_.outer;
    for (const Action* r : c.rewrites) TESTPMD_RETURN_IF_ERROR(AppendModifyWords(*r, layers, &words));
    words.insert(words.end(), extra_words.begin(), extra_words.end());
    if (!words.empty()) {
      const Action* origin = c.rewrites.empty() ? nullptr : c.rewrites.front();
      absl::StatusOr<dr::Action> modify = dr::Action::ModifyHeader(domain_->domain(), flags, words);
      if (!modify.ok()) return Fail(modify.status(), origin);
      list->Add(Own(*std::move(modify)), origin);
    }
    for (const PushVlan& p : c.pushes) TESTPMD_RETURN_IF_ERROR(AddPush(p, list));
    if (c.mark != nullptr) TESTPMD_RETURN_IF_ERROR(AddMark(*c.mark, list));
    if (with_count && c.count != nullptr) {
      TESTPMD_ASSIGN_OR_RETURN(const dr::Action* counter, Counter(*c.count, &out_->counter));
      list->Add(counter, c.count);
    }
    if (reformats.encap) TESTPMD_RETURN_IF_ERROR(AddReformat(*reformats.encap, flags, list));
    return absl::OkStatus();
  }

  // The DR destination of fate action `fate`. With `single_tir`, an rss that needs a dispatch table is an
  // error (sampled copies take a TIR, not a table).
  absl::StatusOr<const dr::Action*> Fate(const Action& fate, const std::string& label, bool single_tir) {
    switch (fate.def->type) {
      case ActionType::kDrop: {
        absl::StatusOr<dr::Action> drop = dr::Action::Drop();
        if (!drop.ok()) return Fail(drop.status(), &fate);
        return Own(*std::move(drop));
      }
      case ActionType::kQueue: {
        TESTPMD_RETURN_IF_ERROR(NeedIngress(fate));
        absl::StatusOr<uint32_t> qp = ctx_.QueueNumber(port_, Param(fate, "index"));
        if (!qp.ok()) return Fail(qp.status(), &fate);
        absl::StatusOr<dr::Action> dest = dr::Action::DestQp(domain_->function(), *qp);
        if (!dest.ok()) return Fail(dest.status(), &fate);
        return Own(*std::move(dest));
      }
      case ActionType::kRss:
        return Rss(fate, label, single_tir);
      case ActionType::kJump: {
        const uint32_t group = Param(fate, "group");
        if (group > kMaxGroup) {
          return At(fate, StatusCode::kInvalidArgument,
                    absl::StrFormat("group %d is above %d", group, kMaxGroup));
        }
        absl::StatusOr<std::shared_ptr<TableRes>> table = ctx_.objects.GroupTable(domain_, group);
        if (!table.ok()) return Fail(table.status(), &fate);
        out_->holds.push_back(*table);
        absl::StatusOr<const dr::Action*> jump = (*table)->JumpAction();
        if (!jump.ok()) return Fail(jump.status(), &fate);
        return *jump;
      }
      default: {  // port_id, represented_port
        if (type() != MLX5DV_DR_DOMAIN_TYPE_FDB) {
          return At(fate, StatusCode::kInvalidArgument,
                    "sends to an eSwitch port: only transfer rules can (DR's dest_vport exists only in FDB "
                    "domains)");
        }
        const uint32_t port = Param(fate, fate.def->type == ActionType::kPortId ? "id" : "ethdev_port_id");
        absl::StatusOr<uint16_t> vport = ctx_.VportOfPort(port);
        if (!vport.ok()) return Fail(vport.status(), &fate);
        absl::StatusOr<dr::Action> dest = dr::Action::DestVport(domain_->domain(), *vport);
        if (!dest.ok()) return Fail(dest.status(), &fate);
        return Own(*std::move(dest));
      }
    }
  }

  // A counter for `count`; its id goes to `id` when given.
  absl::StatusOr<const dr::Action*> Counter(const Action& count, std::optional<uint32_t>* id) {
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

  absl::Status Insert(const std::shared_ptr<MatcherRes>& matcher, const hw::MatchParams& value,
                      const DrList& list, const std::string& label, SourcePos fallback) {
    absl::StatusOr<std::unique_ptr<InstalledRule>> rule =
        ctx_.objects.InsertRule(matcher, value, list.actions, label);
    if (!rule.ok()) return Blame(rule.status(), list, fallback);
    out_->rules.push_back(*std::move(rule));
    return absl::OkStatus();
  }

  absl::StatusOr<std::shared_ptr<MatcherRes>> MatcherIn(const std::shared_ptr<TableRes>& table,
                                                        uint16_t priority, const hw::MatchParams& mask,
                                                        SourcePos pos) {
    absl::StatusOr<std::shared_ptr<MatcherRes>> m = ctx_.objects.Matcher(table, priority, mask);
    if (!m.ok())
      return ErrorAt(pos, m.status().code(), absl::StrCat("DR rejects the pattern: ", m.status().message()));
    return m;
  }

  absl::Status NeedIngress(const Action& a) const {
    if (type() == MLX5DV_DR_DOMAIN_TYPE_NIC_RX) return absl::OkStatus();
    return At(a, StatusCode::kInvalidArgument, "delivers to receive queues: only ingress (NIC_RX) rules can");
  }

  const dr::Action* Own(dr::Action a, std::function<void()> release = {}) {
    out_->actions.push_back(std::make_unique<OwnedAction>(std::move(a), std::move(release)));
    return out_->actions.back()->get();
  }

  absl::Status Fail(const absl::Status& s, const Action* origin) const {
    if (origin == nullptr) return s;
    return ErrorAt(origin->pos, s.code(), absl::StrCat(origin->def->name, ": ", s.message()));
  }

  const std::shared_ptr<DomainRes>& domain() const { return domain_; }
  FlowObjects* out() const { return out_; }
  EngineContext& ctx() const { return ctx_; }
  uint16_t port() const { return port_; }

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
  absl::StatusOr<std::optional<std::vector<uint8_t>>> ReformatBytes(const Action& a) {
    switch (a.def->type) {
      case ActionType::kVxlanEncap:
        return std::optional<std::vector<uint8_t>>(TunnelEncapHeader(ctx_.vxlan));
      case ActionType::kNvgreEncap:
        return std::optional<std::vector<uint8_t>>(TunnelEncapHeader(ctx_.nvgre));
      case ActionType::kRawEncap:
      case ActionType::kRawDecap: {
        const bool encap = a.def->type == ActionType::kRawEncap;
        const uint32_t index = Param(a, "index");
        const std::map<uint32_t, std::vector<uint8_t>>& buffers = encap ? ctx_.raw_encap : ctx_.raw_decap;
        auto it = buffers.find(index);
        if (it == buffers.end() || it->second.empty()) {
          return At(a, StatusCode::kInvalidArgument,
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
  absl::Status PlanReformats(const Classified& c, Reformats* out) {
    std::optional<std::vector<uint8_t>> decap, encap;
    if (c.decap != nullptr) {
      TESTPMD_ASSIGN_OR_RETURN(decap, ReformatBytes(*c.decap));
    }
    if (c.encap != nullptr) {
      TESTPMD_ASSIGN_OR_RETURN(encap, ReformatBytes(*c.encap));
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
        return At(
            *c.decap, StatusCode::kInvalidArgument,
            absl::StrFormat("a %d-byte decap removes an L2 header only: it needs a raw_encap of a tunnel "
                            "(L3 encapsulation)",
                            decap->size()));
      }
      out->decap = Reformat{MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TUNNEL_TO_L2, {}, c.decap};
    }
    if (c.encap != nullptr) {
      if (!big_encap) {
        return At(*c.encap, StatusCode::kInvalidArgument,
                  absl::StrFormat("a %d-byte encap is an L2 header only: it needs a raw_decap of a tunnel "
                                  "(L3 decapsulation)",
                                  encap->size()));
      }
      out->encap = Reformat{MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TO_L2_TUNNEL, *encap, c.encap};
    }
    return absl::OkStatus();
  }

  absl::Status AddReformat(const Reformat& r, uint32_t flags, DrList* list) {
    absl::StatusOr<dr::Action> a = dr::Action::PacketReformat(domain_->domain(), flags, r.type, r.data);
    if (!a.ok()) return Fail(a.status(), r.origin);
    list->Add(Own(*std::move(a)), r.origin);
    return absl::OkStatus();
  }

  absl::Status AddPush(const PushVlan& p, DrList* list) {
    const uint32_t tpid = Param(*p.push, "ethertype");
    if (tpid != 0x8100 && tpid != 0x88a8) {
      return At(*p.push, StatusCode::kInvalidArgument,
                absl::StrFormat("ethertype 0x%x: DR pushes 0x8100 or 0x88a8 tags", tpid));
    }
    // The VID and PCP: of_set_vlan_vid/pcp after the push, else the pattern's vlan item, else 0.
    const uint32_t vid = p.vid != nullptr ? Param(*p.vid, "vlan_vid") : info_.vlan_vid.value_or(0);
    const uint32_t pcp = p.pcp != nullptr ? Param(*p.pcp, "vlan_pcp") : info_.vlan_pcp.value_or(0);
    if (vid > 0xfff) return At(*p.vid, StatusCode::kInvalidArgument, "vlan_vid must be 0..4095");
    if (pcp > 7) return At(*p.pcp, StatusCode::kInvalidArgument, "vlan_pcp must be 0..7");
    absl::StatusOr<dr::Action> a =
        dr::Action::PushVlan(domain_->domain(), htonl(tpid << 16 | pcp << 13 | vid));
    if (!a.ok()) return Fail(a.status(), p.push);
    list->Add(Own(*std::move(a)), p.push);
    return absl::OkStatus();
  }

  absl::Status AddMark(const Action& mark, DrList* list) {
    if (type() != MLX5DV_DR_DOMAIN_TYPE_NIC_RX) {
      return At(mark, StatusCode::kInvalidArgument, "DR's tag action exists only in ingress (NIC_RX) rules");
    }
    uint32_t tag = kFlagMark;
    if (mark.def->type == ActionType::kMark) {
      tag = Param(mark, "id");
      if (tag > kMaxMark) {
        return At(mark, StatusCode::kInvalidArgument,
                  absl::StrFormat("id 0x%x is above 0x%x (mlx5 reserves the last 16 of the 24 bits)", tag,
                                  kMaxMark));
      }
    }
    absl::StatusOr<dr::Action> a = dr::Action::Tag(tag);
    if (!a.ok()) return Fail(a.status(), &mark);
    list->Add(Own(*std::move(a)), &mark);
    return absl::OkStatus();
  }

  absl::StatusOr<const dr::Action*> Tir(uint64_t hash_fields, const RssPlan& plan, const Action& rss) {
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

  absl::StatusOr<const dr::Action*> Rss(const Action& rss, const std::string& label, bool single_tir) {
    TESTPMD_RETURN_IF_ERROR(NeedIngress(rss));
    absl::StatusOr<RssPlan> plan = PlanRss(rss, info_.outer, ctx_.options.rx_queues);
    if (!plan.ok()) return plan.status();
    if (plan->cases.size() == 1) return Tir(plan->cases.front().hash_fields, *plan, rss);
    if (single_tir) {
      return At(rss, StatusCode::kUnimplemented,
                "these types need one TIR per packet kind (a dispatch table), which a sampled copy cannot "
                "take: pin the L3/L4 in the pattern or narrow the types");
    }
    // A dispatch table: most specific matchers first, one TIR per hash-field set.
    absl::StatusOr<std::shared_ptr<TableRes>> table = ctx_.objects.HiddenTable(domain_, false);
    if (!table.ok()) return Fail(table.status(), &rss);
    out_->holds.push_back(*table);
    std::map<uint64_t, const dr::Action*> tirs;
    for (const RssCase& c : plan->cases) {
      if (!tirs.count(c.hash_fields)) {
        TESTPMD_ASSIGN_OR_RETURN(tirs[c.hash_fields], Tir(c.hash_fields, *plan, rss));
      }
      hw::MatchBuilder mask, value;
      uint16_t priority = 2;
      if (c.l3) {
        const uint32_t version = *c.l3 == L3::kIpv4 ? 4 : 6;  // rdma-core: the mask holds the version too
        mask.IpVersion(hw::kOuter, version);
        value.IpVersion(hw::kOuter, version);
        priority = 1;
      }
      if (c.l4) {
        mask.IpProtocol(hw::kOuter, 0xff);
        value.IpProtocol(hw::kOuter, *c.l4 == L4::kTcp ? 6 : 17);
        priority = 0;
      }
      TESTPMD_ASSIGN_OR_RETURN(std::shared_ptr<MatcherRes> m,
                               MatcherIn(*table, priority, *mask.Build(), rss.pos));
      DrList list;
      list.Add(tirs[c.hash_fields], &rss);
      TESTPMD_RETURN_IF_ERROR(Insert(m, *value.Build(), list, absl::StrCat(label, " rss dispatch"), rss.pos));
    }
    absl::StatusOr<const dr::Action*> jump = (*table)->JumpAction();
    if (!jump.ok()) return Fail(jump.status(), &rss);
    return *jump;
  }

  EngineContext& ctx_;
  std::shared_ptr<DomainRes> domain_;
  uint16_t port_;
  const PatternInfo& info_;
  FlowObjects* out_;
};

hw::MatchParams MeterRegMask(uint32_t mask) { return *hw::MatchBuilder().RegC(kMeterRegC, mask).Build(); }
hw::MatchParams MeterRegValue(uint32_t value) { return *hw::MatchBuilder().RegC(kMeterRegC, value).Build(); }

// The policy rules of one colour of a non-default policy.
absl::Status LowerPolicyColour(Lowering& lowering, const MeterInstance& instance,
                               const std::vector<Action>& actions, uint32_t prm_color,
                               const std::string& label) {
  TESTPMD_ASSIGN_OR_RETURN(Classified c, Classify(actions));
  DrList list;
  TESTPMD_RETURN_IF_ERROR(lowering.AddModifiers(c, false, false, {}, &list));
  if (c.fate != nullptr) {
    TESTPMD_ASSIGN_OR_RETURN(const dr::Action* fate, lowering.Fate(*c.fate, label, false));
    list.Add(fate, c.fate);
  }
  return lowering.Insert(instance.color_matcher, MeterRegValue(prm_color), list, label, SourcePos{});
}

// The meter's instance in `domain`, made on first use: flow meter, policy table and colour rules.
absl::StatusOr<std::shared_ptr<MeterInstance>> MeterInstanceFor(EngineContext& ctx, uint16_t port,
                                                                uint32_t id,
                                                                const std::shared_ptr<DomainRes>& domain) {
  Meter* meter = ctx.meters.FindMeter(port, id);
  std::weak_ptr<MeterInstance>& slot = meter->instances[static_cast<int>(domain->type())];
  if (std::shared_ptr<MeterInstance> existing = slot.lock()) return existing;
  const MeterPolicy& policy = *ctx.meters.Policy(port, meter->policy_id);
  auto instance = std::make_shared<MeterInstance>();
  TESTPMD_ASSIGN_OR_RETURN(instance->policy_table, ctx.objects.HiddenTable(domain, true));
  TESTPMD_ASSIGN_OR_RETURN(instance->color_matcher,
                           ctx.objects.Matcher(instance->policy_table, 0, MeterRegMask(kMeterColorMask)));
  if (policy.default_policy) {
    TESTPMD_ASSIGN_OR_RETURN(instance->flow_matcher,
                             ctx.objects.Matcher(instance->policy_table, 1, MeterRegMask(0xffffffff)));
  }
  sim::MeterParams params = *ctx.meters.Profile(port, meter->profile_id);
  params.start_color = meter->start_color;
  std::array<uint8_t, 32> prm{};
  params.Serialize(prm.data());
  TESTPMD_ASSIGN_OR_RETURN(instance->meter, dr::Action::FlowMeter(instance->policy_table->table(),
                                                                  meter->enabled, kMeterRegC, prm));
  const std::string label = absl::StrFormat("port %d meter %d policy", port, id);
  PatternInfo no_pattern;
  Lowering lowering(ctx, domain, port, no_pattern, &instance->policy);
  absl::StatusOr<dr::Action> drop = dr::Action::Drop();
  if (!drop.ok()) return drop.status();
  DrList red;
  red.Add(lowering.Own(*std::move(drop)), nullptr);
  TESTPMD_RETURN_IF_ERROR(lowering.Insert(instance->color_matcher, MeterRegValue(PrmColor(2)), red,
                                          absl::StrCat(label, " red"), SourcePos{}));
  if (!policy.default_policy) {
    TESTPMD_RETURN_IF_ERROR(
        LowerPolicyColour(lowering, *instance, policy.cmd.green, PrmColor(0), absl::StrCat(label, " green")));
    if (!policy.cmd.yellow.empty()) {  // no rule: yellow misses and takes the domain default
      TESTPMD_RETURN_IF_ERROR(LowerPolicyColour(lowering, *instance, policy.cmd.yellow, PrmColor(1),
                                                absl::StrCat(label, " yellow")));
    }
  }
  slot = instance;
  return instance;
}

class FlowLowering {
 public:
  FlowLowering(EngineContext& ctx, const FlowRule& rule, const TranslatedPattern& pattern,
               const RuleTarget& target, FlowObjects* out)
      : ctx_(ctx),
        rule_(rule),
        pattern_(pattern),
        target_(target),
        out_(out),
        lowering_(ctx, target.domain, target.port, pattern.info, out) {}

  absl::Status Run() {
    TESTPMD_ASSIGN_OR_RETURN(c_, Classify(rule_.actions));
    const bool rx = target_.domain->type() == MLX5DV_DR_DOMAIN_TYPE_NIC_RX;
    const MeterPolicy* policy = nullptr;
    if (c_.meter != nullptr) {
      TESTPMD_ASSIGN_OR_RETURN(policy, FindPolicy(*c_.meter));
    }
    const bool policy_decides = policy != nullptr && !policy->default_policy;
    if (rx && c_.fate == nullptr && !policy_decides) {
      return ErrorAt(
          target_.actions_pos, StatusCode::kInvalidArgument,
          "no fate action (drop, queue, rss, jump, meter with a policy): mlx5 needs one in ingress "
          "rules");
    }
    TESTPMD_ASSIGN_OR_RETURN(
        std::shared_ptr<MatcherRes> matcher,
        lowering_.MatcherIn(target_.table, target_.priority, pattern_.mask, target_.pattern_pos));
    if (c_.meter != nullptr) return LowerMeter(*c_.meter, *policy, matcher);
    if (c_.sample != nullptr) return LowerSample(*c_.sample, matcher);
    DrList list;
    TESTPMD_RETURN_IF_ERROR(lowering_.AddModifiers(c_, true, target_.table->root(), {}, &list));
    TESTPMD_RETURN_IF_ERROR(AddFate(&list));
    return lowering_.Insert(matcher, pattern_.value, list, target_.label, target_.actions_pos);
  }

 private:
  absl::Status AddFate(DrList* list) {
    if (c_.fate == nullptr) return absl::OkStatus();
    TESTPMD_ASSIGN_OR_RETURN(const dr::Action* fate, lowering_.Fate(*c_.fate, target_.label, false));
    list->Add(fate, c_.fate);
    return absl::OkStatus();
  }

  absl::StatusOr<const MeterPolicy*> FindPolicy(const Action& meter) {
    const uint32_t id = Param(meter, "mtr_id");
    const Meter* m = ctx_.meters.FindMeter(target_.port, id);
    if (m == nullptr) {
      return At(meter, StatusCode::kNotFound,
                absl::StrFormat("no meter %d on port %d (create port meter ...)", id, target_.port));
    }
    return ctx_.meters.Policy(target_.port, m->policy_id);
  }

  absl::Status LowerMeter(const Action& meter, const MeterPolicy& policy,
                          const std::shared_ptr<MatcherRes>& matcher) {
    const uint32_t id = Param(meter, "mtr_id");
    absl::StatusOr<std::shared_ptr<MeterInstance>> instance =
        MeterInstanceFor(ctx_, target_.port, id, target_.domain);
    if (!instance.ok()) return lowering_.Fail(instance.status(), &meter);
    out_->holds.push_back(*instance);
    DrList prefix;
    if (!policy.default_policy) {
      if (c_.fate != nullptr || c_.last != &meter) {
        return At(
            meter, StatusCode::kInvalidArgument,
            absl::StrFormat("meter %d's policy %d decides the fate: the meter must be the flow's last action "
                            "and the flow takes no other fate action (mlx5)",
                            id, policy.cmd.policy_id));
      }
      TESTPMD_RETURN_IF_ERROR(lowering_.AddModifiers(c_, true, target_.table->root(), {}, &prefix));
      prefix.Add(&(*instance)->meter, &meter);
      return lowering_.Insert(matcher, pattern_.value, prefix, target_.label, target_.actions_pos);
    }
    // Default policy: tag the flow, meter, then continue with the flow's actions for green and yellow.
    uint32_t flow_id = 0;
    absl::StatusOr<std::shared_ptr<const void>> hold = ctx_.meters.AllocateFlowId(&flow_id);
    if (!hold.ok()) return lowering_.Fail(hold.status(), &meter);
    out_->holds.push_back(*hold);
    const std::vector<uint64_t> tag_words =
        SetRegisterWords(kMeterRegC, flow_id << kMeterFlowIdShift, 0xffffff00);
    Classified prefix_actions;
    prefix_actions.count = c_.count;
    TESTPMD_RETURN_IF_ERROR(
        lowering_.AddModifiers(prefix_actions, true, target_.table->root(), tag_words, &prefix));
    prefix.Add(&(*instance)->meter, &meter);
    TESTPMD_RETURN_IF_ERROR(
        lowering_.Insert(matcher, pattern_.value, prefix, target_.label, target_.actions_pos));
    for (uint32_t colour : {0u, 1u}) {  // green, yellow
      DrList suffix;
      TESTPMD_RETURN_IF_ERROR(lowering_.AddModifiers(c_, false, false, {}, &suffix));
      TESTPMD_RETURN_IF_ERROR(AddFate(&suffix));
      const uint32_t value = flow_id << kMeterFlowIdShift | PrmColor(colour);
      TESTPMD_RETURN_IF_ERROR(lowering_.Insert(
          (*instance)->flow_matcher, MeterRegValue(value), suffix,
          absl::StrFormat("%s meter %d %s", target_.label, id, colour == 0 ? "green" : "yellow"), meter.pos));
    }
    return absl::OkStatus();
  }

  absl::Status LowerSample(const Action& sample, const std::shared_ptr<MatcherRes>& matcher) {
    const uint32_t ratio = Param(sample, "ratio");
    const uint32_t index = Param(sample, "index");
    if (ratio == 0) return At(sample, StatusCode::kInvalidArgument, "ratio must be at least 1");
    auto set = ctx_.sample_actions.find(index);
    if (set == ctx_.sample_actions.end()) {
      return At(sample, StatusCode::kInvalidArgument,
                absl::StrFormat("no sample action list %d: run `set sample_actions %d ... / end` first",
                                index, index));
    }
    // The flow's other actions run on every packet, in an engine table after the sampler.
    absl::StatusOr<std::shared_ptr<TableRes>> suffix = ctx_.objects.HiddenTable(target_.domain, false);
    if (!suffix.ok()) return lowering_.Fail(suffix.status(), &sample);
    out_->holds.push_back(*suffix);
    TESTPMD_ASSIGN_OR_RETURN(std::shared_ptr<MatcherRes> all,
                             lowering_.MatcherIn(*suffix, 0, hw::MatchParams(), sample.pos));
    DrList rest;
    TESTPMD_RETURN_IF_ERROR(lowering_.AddModifiers(c_, false, false, {}, &rest));
    TESTPMD_RETURN_IF_ERROR(AddFate(&rest));
    TESTPMD_RETURN_IF_ERROR(lowering_.Insert(all, hw::MatchParams(), rest,
                                             absl::StrCat(target_.label, " sample suffix"), sample.pos));

    // The sampled copy.
    TESTPMD_ASSIGN_OR_RETURN(Classified s, Classify(set->second));
    for (const Action& a : set->second) {
      const ActionType t = a.def->type;
      const bool allowed = t == ActionType::kQueue || t == ActionType::kRss || t == ActionType::kMark ||
                           t == ActionType::kCount || t == ActionType::kPortId ||
                           t == ActionType::kRepresentedPort || t == ActionType::kRawEncap ||
                           t == ActionType::kVxlanEncap || t == ActionType::kNvgreEncap ||
                           t == ActionType::kVoid;
      if (!allowed) {
        return At(a, StatusCode::kInvalidArgument,
                  "not a sample action (testpmd takes queue, rss, mark, count, port_id, represented_port, "
                  "raw_encap, vxlan_encap, nvgre_encap)");
      }
    }
    if (s.fate == nullptr) {
      return At(sample, StatusCode::kInvalidArgument,
                absl::StrFormat("sample action list %d has no destination (queue, rss, port_id or "
                                "represented_port)",
                                index));
    }
    TESTPMD_ASSIGN_OR_RETURN(const dr::Action* copy_dest,
                             lowering_.Fate(*s.fate, absl::StrCat(target_.label, " sample"), true));
    const dr::Action* copy_counter = nullptr;
    if (s.count != nullptr) {
      TESTPMD_ASSIGN_OR_RETURN(copy_counter, lowering_.Counter(*s.count, nullptr));
    }
    absl::StatusOr<const dr::Action*> next = (*suffix)->JumpAction();
    if (!next.ok()) return lowering_.Fail(next.status(), &sample);
    dr::Action splitter;
    if (ratio == 1) {
      // Mirroring: a dest array of the copy (behind its encapsulation) and the flow's path.
      if (s.mark != nullptr) {
        return At(*s.mark, StatusCode::kUnimplemented,
                  "a mirrored copy (ratio 1, a DR dest array) takes no tag");
      }
      const dr::Action* reformat = nullptr;
      if (s.encap != nullptr) {
        DrList encap;
        Classified only_encap;
        only_encap.encap = s.encap;
        TESTPMD_RETURN_IF_ERROR(lowering_.AddModifiers(only_encap, false, false, {}, &encap));
        reformat = encap.actions.front();
      }
      std::vector<dr::Action::ArrayDestination> dests = {{copy_dest, reformat}};
      if (copy_counter != nullptr) dests.push_back({copy_counter, nullptr});
      dests.push_back({*next, nullptr});
      absl::StatusOr<dr::Action> array = dr::Action::DestArray(target_.domain->domain(), dests);
      if (!array.ok()) return lowering_.Fail(array.status(), &sample);
      splitter = *std::move(array);
    } else {
      if (s.encap != nullptr) {
        return At(
            *s.encap, StatusCode::kUnimplemented,
            "a DR flow sampler's copy takes no encapsulation: mirror with ratio 1 (a dest array) instead");
      }
      std::vector<const dr::Action*> copy;
      if (s.mark != nullptr) {
        DrList tag;
        Classified only_mark;
        only_mark.mark = s.mark;
        TESTPMD_RETURN_IF_ERROR(lowering_.AddModifiers(only_mark, false, false, {}, &tag));
        copy.push_back(tag.actions.front());
      }
      if (copy_counter != nullptr) copy.push_back(copy_counter);
      copy.push_back(copy_dest);
      absl::StatusOr<dr::Action> sampler = dr::Action::FlowSampler(ratio, (*suffix)->table(), copy);
      if (!sampler.ok()) return lowering_.Fail(sampler.status(), &sample);
      splitter = *std::move(sampler);
    }
    DrList prefix;
    Classified prefix_actions;
    prefix_actions.count = c_.count;
    TESTPMD_RETURN_IF_ERROR(lowering_.AddModifiers(prefix_actions, true, target_.table->root(), {}, &prefix));
    prefix.Add(lowering_.Own(std::move(splitter)), &sample);
    return lowering_.Insert(matcher, pattern_.value, prefix, target_.label, target_.actions_pos);
  }

  EngineContext& ctx_;
  const FlowRule& rule_;
  const TranslatedPattern& pattern_;
  const RuleTarget& target_;
  FlowObjects* out_;
  Lowering lowering_;
  Classified c_;
};

}  // namespace

absl::Status LowerFlow(EngineContext& ctx, const FlowRule& rule, const TranslatedPattern& pattern,
                       const RuleTarget& target, FlowObjects* out) {
  return FlowLowering(ctx, rule, pattern, target, out).Run();
}

}  // namespace drsim::testpmd
