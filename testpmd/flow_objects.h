// Internal to the engine: what one flow (or one colour of a meter policy) made on the DR API, destroyed in
// the right order by construction — its rules first, then its own actions (and after each action the
// counter bulk or TIR it used), then its holds on shared tables, matchers and meters.
//
// Not thread-safe.
#ifndef DRSIM_TESTPMD_FLOW_OBJECTS_H_
#define DRSIM_TESTPMD_FLOW_OBJECTS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "dr/dr.h"
#include "testpmd/aging.h"
#include "testpmd/dr_objects.h"

namespace drsim::testpmd {

// A DR action a flow made for itself.
class OwnedAction {
 public:
  // `release` runs after the action is destroyed (frees a counter bulk or a TIR the action used).
  OwnedAction(dr::Action action, std::function<void()> release)
      : action_(std::move(action)), release_(std::move(release)) {}
  ~OwnedAction() {
    action_ = dr::Action();
    if (release_) release_();
  }
  OwnedAction(const OwnedAction&) = delete;
  OwnedAction& operator=(const OwnedAction&) = delete;

  const dr::Action* get() const { return &action_; }

 private:
  dr::Action action_;
  std::function<void()> release_;
};

struct FlowObjects {
  // Declared in reverse order of destruction.
  // Tables jumped to, engine tables, meter instances, ids, shared actions (most flows hold one: inline).
  absl::InlinedVector<std::shared_ptr<const void>, 1> holds;
  std::shared_ptr<AgeState> age;  // its age action's (its own, or an indirect one's); its flow-hit context
                                  // goes back to the pool once the aso actions using it are gone
  std::vector<std::unique_ptr<OwnedAction>> actions;
  absl::InlinedVector<InstalledRulePtr, 1> rules;  // most flows make one
  std::optional<uint32_t> counter;  // the id of the count action's counter (its own or an indirect one)
  bool indirect_age = false;        // `age` is an indirect action's (flow aged reports that instead)

  FlowObjects() = default;
  FlowObjects(FlowObjects&&) = default;
  FlowObjects& operator=(FlowObjects&&) = default;
  ~FlowObjects() {  // as declared, but the holds oldest first (an InlinedVector destroys newest first)
    rules.clear();
    actions.clear();
    age.reset();
    for (std::shared_ptr<const void>& hold : holds) hold.reset();
  }
};

}  // namespace drsim::testpmd

#endif  // DRSIM_TESTPMD_FLOW_OBJECTS_H_
