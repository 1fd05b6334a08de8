#include "testpmd/indirect_actions.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "testpmd/action_lowering.h"
#include "testpmd/context.h"
#include "testpmd/indirect_conntrack.h"

namespace drsim::testpmd {
namespace {

using absl::StatusCode;

// A flow counter of its own, freed with the object (rules using it are gone by then: they hold it).
class OwnedCounter {
 public:
  OwnedCounter(sim::Nic& nic, uint32_t id) : nic_(nic), id_(id) {}
  ~OwnedCounter() { nic_.FreeCounters(id_).IgnoreError(); }
  OwnedCounter(const OwnedCounter&) = delete;
  OwnedCounter& operator=(const OwnedCounter&) = delete;
  uint32_t id() const { return id_; }

 private:
  sim::Nic& nic_;
  uint32_t id_;
};

absl::StatusOr<std::unique_ptr<OwnedCounter>> NewCounter(sim::Nic& nic, const Action& origin) {
  absl::StatusOr<uint32_t> id = nic.AllocateCounters(1);
  if (!id.ok()) return ActionError(origin, id.status().code(), id.status().message());
  return std::make_unique<OwnedCounter>(nic, *id);
}

// count: a shared counter.
class IndirectCount : public IndirectObject {
 public:
  IndirectCount(const ActionDef& def, std::unique_ptr<OwnedCounter> counter)
      : def_(def), counter_(std::move(counter)) {}
  const ActionDef& def() const override { return def_; }
  std::optional<uint32_t> counter() const override { return counter_->id(); }
  absl::Status Query(sim::Nic& nic, CommandResult* result) const override {
    CountResult r;
    DRSIM_RETURN_IF_ERROR(nic.QueryCounter(counter_->id(), &r.hits, &r.bytes));
    result->count = r;
    result->text = absl::StrFormat("Indirect COUNT action:\n hits_set: 1\n bytes_set: 1\n hits: %d\n bytes: %d\n",
                                   r.hits, r.bytes);
    return absl::OkStatus();
  }
  absl::Status CheckDestroy(uint32_t id, const std::vector<uint32_t>& users) const override {
    if (users.empty()) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrFormat(
        "Indirect count action #%d has references: %d flow(s) use it (flow #%s; destroy them first; mlx5: "
        "EBUSY)",
        id, users.size(), absl::StrJoin(users, ", #")));
  }

 private:
  const ActionDef& def_;
  std::unique_ptr<OwnedCounter> counter_;
};

// age: an age that rules using it keep alive, through one ASO flow-hit context (mlx5 allocates it when
// the action is made). mlx5 lets it go with its last rule.
class IndirectAge : public IndirectObject {
 public:
  IndirectAge(const ActionDef& def, std::shared_ptr<AgeState> age) : def_(def), age_(std::move(age)) {}
  const ActionDef& def() const override { return def_; }
  std::shared_ptr<AgeState> age() const override { return age_; }
  absl::Status Query(sim::Nic& nic, CommandResult* result) const override {
    DRSIM_ASSIGN_OR_RETURN(const AgeResult r, QueryAge(nic, *age_));
    result->age = r;
    result->text = FormatAge("Indirect AGE action", r);
    return absl::OkStatus();
  }

 private:
  const ActionDef& def_;
  std::shared_ptr<AgeState> age_;
};

// The object of `action`: the one place where kinds are told apart (see the header to add one).
absl::StatusOr<std::shared_ptr<IndirectObject>> MakeIndirectObject(EngineContext& ctx, uint16_t port,
                                                                   const Action& action) {
  switch (action.def->type) {
    case ActionType::kCount: {
      DRSIM_ASSIGN_OR_RETURN(std::unique_ptr<OwnedCounter> counter, NewCounter(ctx.nic, action));
      return std::make_shared<IndirectCount>(*action.def, std::move(counter));
    }
    case ActionType::kAge: {
      DRSIM_ASSIGN_OR_RETURN(const uint32_t timeout, AgeTimeout(action));
      DRSIM_ASSIGN_OR_RETURN(std::shared_ptr<AgeState> age, NewFlowHitAge(ctx.flow_hits, timeout, action));
      return std::make_shared<IndirectAge>(*action.def, std::move(age));
    }
    case ActionType::kConntrack:
      return MakeIndirectConntrack(ctx, port, action);
    default:
      return ActionError(action, StatusCode::kUnimplemented,
                         "cannot be an indirect action here (indirect kinds: count, age, conntrack)");
  }
}

}  // namespace

absl::Status IndirectObject::AddToRule(ActionLowering&, const Classified&, bool, const Action&, DrList*) {
  return absl::OkStatus();
}

absl::Status IndirectObject::Update(EngineContext&, const Action& action) {
  return ActionError(action, StatusCode::kUnimplemented,
                     absl::StrFormat("action type update not supported: mlx5 updates indirect rss and "
                                     "conntrack actions only, not %s",
                                     def().name));
}

absl::Status IndirectObject::CheckDestroy(uint32_t, const std::vector<uint32_t>&) const {
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> IndirectTable::Create(EngineContext& ctx, const IndirectActionCmd& cmd) {
  std::map<uint32_t, IndirectEntry>& entries = by_port_[cmd.port];
  uint32_t id = 0;
  if (!cmd.ids.empty()) {
    id = cmd.ids.front();
    if (entries.count(id)) {
      return ErrorAt(cmd.id_pos, StatusCode::kInvalidArgument,
                     absl::StrFormat("Indirect action #%d is already assigned, delete it first", id));
    }
  } else if (!entries.empty()) {
    if (entries.rbegin()->first >= 0xfffffffe) {
      return ErrorAt(cmd.action_pos, StatusCode::kResourceExhausted,
                     "Highest indirect action ID is already assigned, delete it first");
    }
    id = entries.rbegin()->first + 1;  // testpmd: the highest id in use plus one
  }
  DRSIM_ASSIGN_OR_RETURN(std::shared_ptr<IndirectObject> object,
                         MakeIndirectObject(ctx, cmd.port, cmd.actions.front()));
  entries[id] = IndirectEntry{cmd.ingress, cmd.egress, cmd.transfer, std::move(object)};
  return id;
}

absl::StatusOr<IndirectEntry*> IndirectTable::Find(uint16_t port, uint32_t id) {
  auto entries = by_port_.find(port);
  if (entries != by_port_.end()) {
    auto it = entries->second.find(id);
    if (it != entries->second.end()) return &it->second;
  }
  return absl::NotFoundError(absl::StrFormat("Failed to find indirect action #%d on port %d", id, port));
}

IndirectTable::DestroyOutcome IndirectTable::Destroy(
    uint16_t port, const std::vector<uint32_t>& ids,
    absl::FunctionRef<std::vector<uint32_t>(const IndirectObject&)> users) {
  std::map<uint32_t, IndirectEntry>& entries = by_port_[port];
  DestroyOutcome out;
  std::vector<std::string> reasons;
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    if (std::find(ids.begin(), ids.end(), it->first) == ids.end()) continue;
    const absl::Status s = it->second.object->CheckDestroy(it->first, users(*it->second.object));
    if (s.ok()) {
      out.destroyed.push_back(it->first);
    } else {
      if (out.refused.ok()) out.refused = s;
      reasons.emplace_back(s.message());
    }
  }
  if (!out.refused.ok()) out.refused = absl::Status(out.refused.code(), absl::StrJoin(reasons, "; "));
  for (uint32_t id : out.destroyed) entries.erase(id);
  return out;
}

std::vector<std::pair<uint32_t, std::shared_ptr<AgeState>>> IndirectTable::Ages(uint16_t port) const {
  std::vector<std::pair<uint32_t, std::shared_ptr<AgeState>>> out;
  auto entries = by_port_.find(port);
  if (entries == by_port_.end()) return out;
  for (const auto& [id, entry] : entries->second) {
    if (std::shared_ptr<AgeState> age = entry.object->age()) out.emplace_back(id, std::move(age));
  }
  return out;
}

}  // namespace drsim::testpmd
