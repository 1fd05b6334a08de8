#include "capi/verbs_steering.h"

#include <algorithm>
#include <deque>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "dr/kernel_steering.h"
#include "hw/match_layout.h"

namespace drsim::capi {
namespace {

std::string Bytes(const hw::MatchParams& m) {
  return std::string(reinterpret_cast<const char*>(m.bytes()), hw::kMatchParamBytes);
}

const char* DomainName(mlx5dv_dr_domain_type type) {
  return type == MLX5DV_DR_DOMAIN_TYPE_NIC_TX ? "NIC_TX" : "NIC_RX";
}

}  // namespace

// A level-0 table of one namespace in a function's private domain of one direction.
struct VerbsSteering::Place {
  uint16_t vport;
  mlx5dv_dr_domain_type type;
  hw::RootNamespace ns;
  const dr::Domain* domain;
  dr::Table table;
};

struct VerbsSteering::SharedMatcher {
  Place* place;
  uint16_t priority;
  std::string mask;  // its key in matchers_, with place and priority
  dr::Matcher matcher;
  size_t entries = 0;
};

// One kernel flow-table entry: a value under a shared matcher, the flows that joined it (oldest first) and
// the rule built for them, with the actions that rule uses.
struct VerbsSteering::Entry {
  SharedMatcher* matcher;
  hw::MatchParams value;
  std::vector<Flow*> flows;
  dr::Rule rule;
  std::deque<dr::Action> actions;
};

VerbsSteering::VerbsSteering(sim::Nic& nic) : nic_(nic) {}
VerbsSteering::~VerbsSteering() = default;

absl::StatusOr<const dr::Domain*> VerbsSteering::DomainFor(uint16_t vport, mlx5dv_dr_domain_type type) {
  auto d = domains_.find({vport, type});
  if (d == domains_.end()) {
    DRSIM_ASSIGN_OR_RETURN(dr::Domain domain, dr::Domain::Create(*nic_.function(vport), type));
    d = domains_.emplace(std::make_pair(vport, static_cast<int>(type)), std::move(domain)).first;
  }
  return &d->second;
}

absl::StatusOr<VerbsSteering::Place*> VerbsSteering::PlaceFor(uint16_t vport, mlx5dv_dr_domain_type type,
                                                              hw::RootNamespace ns) {
  const auto key = std::make_tuple(vport, static_cast<int>(type), static_cast<int>(ns));
  if (auto it = places_.find(key); it != places_.end()) return it->second.get();
  DRSIM_ASSIGN_OR_RETURN(const dr::Domain* domain, DomainFor(vport, type));
  DRSIM_ASSIGN_OR_RETURN(dr::Table table, dr::KernelSteering::CreateRootTable(*domain, ns));
  auto place = std::make_unique<Place>(Place{vport, type, ns, domain, std::move(table)});
  return places_.emplace(key, std::move(place)).first->second.get();
}

absl::StatusOr<VerbsSteering::SharedMatcher*> VerbsSteering::MatcherFor(Place& place,
                                                                        const KernelRule& rule) {
  const auto key = std::make_tuple(&place, rule.priority, Bytes(rule.mask));
  if (auto it = matchers_.find(key); it != matchers_.end()) return it->second.get();
  absl::StatusOr<dr::Matcher> m = dr::Matcher::Create(place.table, rule.priority, rule.mask);
  if (!m.ok()) {
    return absl::Status(m.status().code(), absl::StrFormat("the flow's match in %s: %s",
                                                           DomainName(place.type), m.status().message()));
  }
  auto shared =
      std::make_unique<SharedMatcher>(SharedMatcher{&place, rule.priority, std::get<2>(key), *std::move(m)});
  return matchers_.emplace(key, std::move(shared)).first->second.get();
}

void VerbsSteering::ReleaseMatcher(SharedMatcher* m) {
  if (m->entries == 0)
    matchers_.erase(std::make_tuple(m->place, m->priority, m->mask));  // the handle destroys it
}

absl::Status VerbsSteering::Rebuild(Entry& e) {
  using Kind = dr::KernelSteering::Destination::Kind;
  const Place& place = *e.matcher->place;
  sim::Function& fn = *nic_.function(place.vport);
  const FlowContribution& oldest = e.flows.front()->contribution;
  std::deque<dr::Action> actions;  // stable addresses for the lists below
  std::vector<const dr::Action*> list;
  std::vector<dr::KernelSteering::Destination> dests;
  auto keep = [&](absl::StatusOr<dr::Action> a) -> absl::StatusOr<const dr::Action*> {
    if (!a.ok()) return a.status();
    actions.push_back(*std::move(a));
    return &actions.back();
  };
  if (oldest.tag.has_value()) {
    DRSIM_ASSIGN_OR_RETURN(const dr::Action* tag, keep(dr::Action::Tag(*oldest.tag)));
    list.push_back(tag);
  }
  // Every flow of the entry rewrites headers alike (Join checks it).
  for (const dr::Action* rewrite : {oldest.decap, oldest.modify_header, oldest.reformat}) {
    if (rewrite != nullptr) list.push_back(rewrite);
  }
  if (!oldest.drop) {
    bool next_namespace = false;
    for (const Flow* f : e.flows) next_namespace = next_namespace || f->contribution.default_miss;
    if (place.ns == hw::RootNamespace::kDontTrap) {
      dests.push_back(
          {Kind::kNextPriority, nullptr, hw::RootRank(hw::RootNamespace::kBypass, e.matcher->priority)});
    } else if (place.ns == hw::RootNamespace::kSniffer) {
      dests.push_back({Kind::kNextPriority, nullptr, hw::RootRank(hw::RootNamespace::kDontTrap, 0)});
    } else if (next_namespace) {
      // The kernel's netdev namespaces between bypass and leftovers are not modelled (docs/verbs_flow.md).
      dests.push_back({Kind::kNextPriority, nullptr, hw::RootRank(hw::RootNamespace::kLeftovers, 0)});
    } else if (place.type == MLX5DV_DR_DOMAIN_TYPE_NIC_TX) {
      dests.push_back({Kind::kAllow});
    }
    std::vector<uint32_t> qps, tirs;
    for (const Flow* f : e.flows) {
      const std::optional<uint32_t>& qp = f->contribution.qp_num;
      if (!qp.has_value() || std::find(qps.begin(), qps.end(), *qp) != qps.end()) continue;
      qps.push_back(*qp);
      DRSIM_ASSIGN_OR_RETURN(const dr::Action* to_qp, keep(dr::Action::DestQp(fn, *qp)));
      dests.push_back({Kind::kQueue, to_qp});
    }
    for (const Flow* f : e.flows) {
      const std::optional<uint32_t>& tir = f->contribution.tir;
      if (!tir.has_value() || std::find(tirs.begin(), tirs.end(), *tir) != tirs.end()) continue;
      tirs.push_back(*tir);
      DRSIM_ASSIGN_OR_RETURN(const dr::Action* to_tir, keep(dr::Action::DestTir(fn, *tir)));
      dests.push_back({Kind::kQueue, to_tir});
    }
  }
  std::vector<uint32_t> counters;
  for (const Flow* f : e.flows) {
    const std::optional<uint32_t>& id = f->contribution.counter_id;
    if (!id.has_value() || std::find(counters.begin(), counters.end(), *id) != counters.end()) continue;
    counters.push_back(*id);
    DRSIM_ASSIGN_OR_RETURN(const dr::Action* count, keep(dr::Action::FlowCounter(fn, *id, 0)));
    dests.push_back({Kind::kCounter, count});
  }
  DRSIM_ASSIGN_OR_RETURN(const dr::Action* fanout,
                         keep(dr::KernelSteering::Destinations(*place.domain, dests)));
  list.push_back(fanout);
  DRSIM_ASSIGN_OR_RETURN(dr::Rule rule, dr::Rule::Create(e.matcher->matcher, e.value, list));
  if (e.rule.valid()) {
    DRSIM_RETURN_IF_ERROR(e.rule.Destroy());
  }
  e.rule = std::move(rule);
  e.actions = std::move(actions);  // the old rule's actions go with their handles
  return absl::OkStatus();
}

absl::Status VerbsSteering::Join(Flow& flow, const KernelRule& rule) {
  DRSIM_ASSIGN_OR_RETURN(Place * place, PlaceFor(flow.vport, rule.domain, rule.ns));
  DRSIM_ASSIGN_OR_RETURN(SharedMatcher * matcher, MatcherFor(*place, rule));
  const auto key = std::make_pair(matcher, Bytes(rule.value));
  auto it = entries_.find(key);
  const bool created = it == entries_.end();
  const FlowContribution& mine = flow.contribution;
  if (!created) {
    // mlx5 fs_core's check_conflicting_ftes: the entry's actions and flow tag must agree.
    const FlowContribution& oldest = it->second->flows.front()->contribution;
    if (oldest.drop != mine.drop) {
      return absl::AlreadyExistsError(
          absl::StrFormat("an existing flow has the same match at the same priority and %s; this one %s "
                          "(conflicting actions)",
                          oldest.drop ? "drops" : "does not drop", mine.drop ? "drops" : "does not"));
    }
    if (oldest.modify_header != mine.modify_header || oldest.reformat != mine.reformat ||
        (oldest.decap != nullptr) != (mine.decap != nullptr)) {
      return absl::AlreadyExistsError(
          "an existing flow has the same match at the same priority and other header rewrites (decap, "
          "modify header or packet reformat flow actions) (conflicting actions)");
    }
    if (mine.tag.has_value() && oldest.tag.value_or(0) != *mine.tag) {
      return absl::AlreadyExistsError(absl::StrFormat(
          "an existing flow has the same match at the same priority and flow tag 0x%x, not 0x%x",
          oldest.tag.value_or(0), *mine.tag));
    }
  } else {
    auto entry = std::make_unique<Entry>();
    entry->matcher = matcher;
    entry->value = rule.value;
    it = entries_.emplace(key, std::move(entry)).first;
    ++matcher->entries;
  }
  Entry& e = *it->second;
  e.flows.push_back(&flow);
  if (absl::Status s = Rebuild(e); !s.ok()) {
    e.flows.pop_back();
    if (created) {
      entries_.erase(it);
      --matcher->entries;
    }
    ReleaseMatcher(matcher);
    return s;
  }
  flow.entries.push_back(&e);
  return absl::OkStatus();
}

absl::Status VerbsSteering::Leave(Flow& flow, Entry* entry) {
  entry->flows.erase(std::find(entry->flows.begin(), entry->flows.end(), &flow));
  if (!entry->flows.empty()) {
    absl::Status s = Rebuild(*entry);
    if (s.ok()) return s;
    return absl::InternalError(
        absl::StrFormat("rebuilding a flow-table entry without the flow: %s", s.message()));
  }
  SharedMatcher* m = entry->matcher;
  entries_.erase(std::make_pair(m, Bytes(entry->value)));  // its rule and actions go with it
  --m->entries;
  ReleaseMatcher(m);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<VerbsSteering::Flow>> VerbsSteering::Attach(
    uint16_t vport, absl::Span<const KernelRule> rules, const FlowContribution& contribution) {
  auto flow = std::make_unique<Flow>();
  flow->vport = vport;
  flow->contribution = contribution;
  for (const KernelRule& rule : rules) {
    if (absl::Status s = Join(*flow, rule); !s.ok()) {
      absl::Status undo;  // every entry must let go of the flow, whatever happens
      for (Entry* e : flow->entries) undo.Update(Leave(*flow, e));
      return undo.ok() ? s : undo;
    }
  }
  return flow;
}

absl::Status VerbsSteering::Detach(std::unique_ptr<Flow> flow) {
  absl::Status status;
  for (Entry* e : flow->entries) status.Update(Leave(*flow, e));
  return status;
}

}  // namespace drsim::capi
