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

// Most flows make one rule and hold one shared object (their action): those two sit in the record, and
// everything else a flow makes or holds in its Extra, made on first use.
class FlowObjects {
 public:
  FlowObjects() = default;
  FlowObjects(FlowObjects&&) = default;
  FlowObjects& operator=(FlowObjects&&) = default;
  ~FlowObjects();  // rules, then own actions, then the age, then the holds oldest first

  // Holds `object` (a table jumped to, an engine table, a meter instance, an id, a shared action) until
  // the flow's rules and actions are gone.
  void Hold(std::shared_ptr<const void> object);
  void AddRule(InstalledRulePtr rule);
  // Whether the flow holds `object`.
  bool Holds(const void* object) const;

  AgeState* age() const { return extra_ != nullptr ? extra_->age.get() : nullptr; }
  bool indirect_age() const { return extra_ != nullptr && extra_->indirect_age; }
  std::optional<uint32_t> counter() const { return extra_ != nullptr ? extra_->counter : std::nullopt; }

  // Sets the age (its own age action's, or an indirect one's; `indirect`: the latter).
  void SetAge(std::shared_ptr<AgeState> age, bool indirect);
  // The id of the count action's counter (its own or an indirect one).
  void SetCounter(std::optional<uint32_t> id) { Extras().counter = id; }
  // Keeps a DR action the flow made for itself; returns it.
  const dr::Action* Own(std::unique_ptr<OwnedAction> action);

  // The flow's one rule when that and its holds are all it has (no actions, age or counter of its own),
  // with its holds, oldest first, in `holds`; else nullptr. What a flow template copies (engine.h).
  const InstalledRule* OnlyRuleOfSharedParts(std::vector<std::shared_ptr<const void>>* holds) const;

 private:
  struct Extra {
    // Declared in reverse order of destruction.
    std::vector<std::shared_ptr<const void>> holds;  // after first_hold_
    std::shared_ptr<AgeState> age;  // its flow-hit context goes back to the pool once the aso actions using
                                    // it are gone
    std::vector<std::unique_ptr<OwnedAction>> actions;
    std::vector<InstalledRulePtr> rules;  // after first_rule_
    std::optional<uint32_t> counter;
    bool indirect_age = false;
  };
  Extra& Extras();

  std::shared_ptr<const void> first_hold_;
  InstalledRulePtr first_rule_;
  std::unique_ptr<Extra> extra_;  // nullptr: none
};

}  // namespace drsim::testpmd

#endif  // DRSIM_TESTPMD_FLOW_OBJECTS_H_
