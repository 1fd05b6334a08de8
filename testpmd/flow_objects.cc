#include "testpmd/flow_objects.h"

#include <utility>

namespace drsim::testpmd {

FlowObjects::~FlowObjects() {
  first_rule_.reset();
  if (extra_ != nullptr) {
    extra_->rules.clear();
    extra_->actions.clear();
    extra_->age.reset();
  }
  first_hold_.reset();
  if (extra_ != nullptr) {
    for (std::shared_ptr<const void>& hold : extra_->holds) hold.reset();  // oldest first
  }
}

FlowObjects::Extra& FlowObjects::Extras() {
  if (extra_ == nullptr) extra_ = std::make_unique<Extra>();
  return *extra_;
}

void FlowObjects::Hold(std::shared_ptr<const void> object) {
  if (first_hold_ == nullptr) {
    first_hold_ = std::move(object);
  } else {
    Extras().holds.push_back(std::move(object));
  }
}

void FlowObjects::AddRule(InstalledRulePtr rule) {
  if (first_rule_ == nullptr) {
    first_rule_ = std::move(rule);
  } else {
    Extras().rules.push_back(std::move(rule));
  }
}

bool FlowObjects::Holds(const void* object) const {
  if (first_hold_.get() == object) return true;
  if (extra_ == nullptr) return false;
  for (const std::shared_ptr<const void>& hold : extra_->holds) {
    if (hold.get() == object) return true;
  }
  return false;
}

void FlowObjects::SetAge(std::shared_ptr<AgeState> age, bool indirect) {
  Extra& extra = Extras();
  extra.age = std::move(age);
  extra.indirect_age = indirect;
}

const dr::Action* FlowObjects::Own(std::unique_ptr<OwnedAction> action) {
  std::vector<std::unique_ptr<OwnedAction>>& actions = Extras().actions;
  actions.push_back(std::move(action));
  return actions.back()->get();
}

const InstalledRule* FlowObjects::OnlyRuleOfSharedParts(
    std::vector<std::shared_ptr<const void>>* holds) const {
  if (first_rule_ == nullptr) return nullptr;
  if (extra_ != nullptr && (!extra_->rules.empty() || !extra_->actions.empty() || extra_->age != nullptr ||
                            extra_->counter.has_value())) {
    return nullptr;
  }
  holds->clear();
  if (first_hold_ != nullptr) holds->push_back(first_hold_);
  if (extra_ != nullptr) holds->insert(holds->end(), extra_->holds.begin(), extra_->holds.end());
  return first_rule_.get();
}

}  // namespace drsim::testpmd
