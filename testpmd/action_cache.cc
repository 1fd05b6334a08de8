#include "testpmd/action_cache.h"

#include <utility>

namespace drsim::testpmd {
namespace {

// What the cache's shared_ptr owns: the action, then (destroyed after it) what it needs alive.
struct SharedAction {
  std::shared_ptr<const void> keep_alive;
  dr::Action action;
};

}  // namespace

absl::StatusOr<std::shared_ptr<const dr::Action>> ActionCache::Get(
    const std::string& key, std::shared_ptr<const void> keep_alive,
    absl::FunctionRef<absl::StatusOr<dr::Action>()> make) {
  if (key == last_key_) {
    if (std::shared_ptr<const dr::Action> live = last_.lock()) return live;
  }
  std::weak_ptr<const dr::Action>& slot = entries_[key];
  if (std::shared_ptr<const dr::Action> live = slot.lock()) {
    last_key_ = key;
    last_ = live;
    return live;
  }
  absl::StatusOr<dr::Action> action = make();
  if (!action.ok()) {
    entries_.erase(key);
    return action.status();
  }
  // The last holder destroys the action and takes its entry out (under a key not yet taken again: the
  // entry is only looked up while a holder lives).
  std::shared_ptr<SharedAction> shared(new SharedAction{std::move(keep_alive), *std::move(action)},
                                       [this, key](SharedAction* s) {
                                         entries_.erase(key);
                                         delete s;
                                       });
  std::shared_ptr<const dr::Action> handle(shared, &shared->action);
  slot = handle;  // (`slot` is still valid: nothing was inserted since)
  last_key_ = key;
  last_ = handle;
  return handle;
}

}  // namespace drsim::testpmd
