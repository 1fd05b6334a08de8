// Internal to the engine: testpmd's indirect actions (`flow indirect_action`), objects that any number of
// flow rules use through the `indirect ID` action.
//
// What. Each port has a table of indirect actions by id. An entry holds its object, one per kind:
//   count  a flow counter every rule using it counts into (a shared counter): a query reads the sum;
//   age    an age every rule using it keeps alive: one ASO flow-hit context (aging.h) every rule's aso
//          action sets (not in root tables); `flow aged` reports it as an indirect action once it has aged;
//   conntrack  a CT context rules track TCP segments through (indirect_conntrack.h).
// Ids are testpmd's: the one asked for, else the highest in use plus one (0 first).
//
// How. MakeIndirectObject (indirect_actions.cc) is the one place that turns an action into an object of
// its kind. To add a kind (conntrack, say): write an IndirectObject subclass — its query text, its update,
// whether it may go while rules use it, and what it adds to a rule (AddToRule: DR actions into the rule's
// list, through the ActionLowering of the rule) — and add its case to MakeIndirectObject. The counter and
// age kinds add nothing in AddToRule: ActionLowering::AddCounting chooses the rule's flow counter and
// flow-hit context from counter() and age(), as mlx5 combines them.
//
// Lifetimes. The table holds a reference on each object and every flow using it another: destroying the
// entry drops the table's; the object (and its counter) goes with the last flow. mlx5 refuses to destroy
// a shared counter still in use (EBUSY) and lets an age or a CT go with its last rule; CheckDestroy says
// which.
//
// Not thread-safe.
#ifndef DRSIM_TESTPMD_INDIRECT_ACTIONS_H_
#define DRSIM_TESTPMD_INDIRECT_ACTIONS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "testpmd/aging.h"
#include "testpmd/ast.h"
#include "testpmd/engine.h"

namespace drsim::testpmd {

class EngineContext;
class ActionLowering;
struct DrList;
struct Classified;

// The object behind one indirect action.
class IndirectObject {
 public:
  virtual ~IndirectObject() = default;

  // The action it was made from (its def's type names the kind).
  virtual const ActionDef& def() const = 0;
  // The flow counter rules using it count into, if it has one.
  virtual std::optional<uint32_t> counter() const { return std::nullopt; }
  // The age rules using it keep alive, if it is one.
  virtual std::shared_ptr<AgeState> age() const { return nullptr; }
  // Adds what a rule using it (through `origin`, its `indirect` action) does, to the rule's DR list.
  // `c` is the whole flow's actions by role (with its indirect count and age), `root` whether it goes to a
  // root table.
  virtual absl::Status AddToRule(ActionLowering& lowering, const Classified& c, bool root, const Action& origin,
                                 DrList* list);
  // flow indirect_action ... query: fills `result` (its text as testpmd prints it).
  virtual absl::Status Query(sim::Nic& nic, CommandResult* result) const = 0;
  // flow indirect_action ... update with `action`. mlx5's DV flow engine updates RSS and conntrack only:
  // Unimplemented (action type update not supported) unless a kind says otherwise.
  virtual absl::Status Update(EngineContext& ctx, const Action& action);
  // Whether the entry `id` may be destroyed while the flows `users` (ids) use the object.
  virtual absl::Status CheckDestroy(uint32_t id, const std::vector<uint32_t>& users) const;
};

struct IndirectEntry {
  bool ingress = false, egress = false, transfer = false;
  std::shared_ptr<IndirectObject> object;
};

class IndirectTable {
 public:
  // Creates the indirect action `cmd` asks for on its port (checked by the caller); returns its id.
  absl::StatusOr<uint32_t> Create(EngineContext& ctx, const IndirectActionCmd& cmd);
  // The entry `id` of `port`; NotFound naming both.
  absl::StatusOr<IndirectEntry*> Find(uint16_t port, uint32_t id);
  // What Destroy did: the ids destroyed, in order, and why the others of those asked for stayed.
  struct DestroyOutcome {
    std::vector<uint32_t> destroyed;
    absl::Status refused;  // each entry that may not go (CheckDestroy), its reasons joined; OK if none
  };
  // Destroys the entries of `ids` that exist, highest id first (testpmd's order). As testpmd's
  // port_action_handle_destroy, one that may not go stays and the others still go. `users` gives the ids of
  // the flows of `port` using an object.
  DestroyOutcome Destroy(uint16_t port, const std::vector<uint32_t>& ids,
                         absl::FunctionRef<std::vector<uint32_t>(const IndirectObject&)> users);
  // The ages of `port`'s indirect actions, by id.
  std::vector<std::pair<uint32_t, std::shared_ptr<AgeState>>> Ages(uint16_t port) const;
  void Clear() { by_port_.clear(); }

 private:
  std::map<uint16_t, std::map<uint32_t, IndirectEntry>> by_port_;
};

}  // namespace drsim::testpmd

#endif  // DRSIM_TESTPMD_INDIRECT_ACTIONS_H_
