#include "tests/kept_dr_objects.h"

#include <algorithm>

#include "capi/drsim.h"
#include "gtest/gtest.h"

namespace drsim::tests {
namespace {

// Records `object` in `kept`; a NULL fails the test with the call's error.
template <typename T>
T* KeepIn(std::vector<T*>& kept, T* object) {
  EXPECT_NE(object, nullptr) << drsim_last_error();
  if (object != nullptr) kept.push_back(object);
  return object;
}

template <typename T>
void ForgetIn(std::vector<T*>& kept, T* object) {
  auto it = std::find(kept.begin(), kept.end(), object);
  ASSERT_NE(it, kept.end()) << "the object was not kept";
  kept.erase(it);
}

// Destroys `kept` newest first with `destroy`, each destroy expected to return 0.
template <typename T>
void DestroyNewestFirst(std::vector<T*>& kept, int (*destroy)(T*)) {
  for (auto it = kept.rbegin(); it != kept.rend(); ++it) EXPECT_EQ(destroy(*it), 0) << drsim_last_error();
  kept.clear();
}

}  // namespace

mlx5dv_dr_rule* KeptDrObjects::Keep(mlx5dv_dr_rule* rule) { return KeepIn(rules_, rule); }
mlx5dv_dr_matcher* KeptDrObjects::Keep(mlx5dv_dr_matcher* matcher) { return KeepIn(matchers_, matcher); }
mlx5dv_dr_action* KeptDrObjects::Keep(mlx5dv_dr_action* action) { return KeepIn(actions_, action); }
mlx5dv_dr_table* KeptDrObjects::Keep(mlx5dv_dr_table* table) { return KeepIn(tables_, table); }
mlx5dv_devx_obj* KeptDrObjects::Keep(mlx5dv_devx_obj* object) { return KeepIn(devx_, object); }

mlx5dv_dr_rule* KeptDrObjects::Rule(mlx5dv_dr_matcher* matcher, hw::MatchParams value,
                                    std::vector<mlx5dv_dr_action*> actions) {
  return Keep(mlx5dv_dr_rule_create(matcher, value.get(), actions.size(), actions.data()));
}

void KeptDrObjects::Forget(mlx5dv_dr_action* action) { ForgetIn(actions_, action); }
void KeptDrObjects::Forget(mlx5dv_devx_obj* object) { ForgetIn(devx_, object); }

void KeptDrObjects::DestroyLastRule() {
  ASSERT_FALSE(rules_.empty());
  ASSERT_EQ(mlx5dv_dr_rule_destroy(rules_.back()), 0) << drsim_last_error();
  rules_.pop_back();
}

void KeptDrObjects::DestroyDrObjects() {
  DestroyNewestFirst(rules_, mlx5dv_dr_rule_destroy);
  DestroyNewestFirst(matchers_, mlx5dv_dr_matcher_destroy);
  DestroyNewestFirst(actions_, mlx5dv_dr_action_destroy);
  DestroyNewestFirst(tables_, mlx5dv_dr_table_destroy);
}

void KeptDrObjects::DestroyDevxObjects() { DestroyNewestFirst(devx_, mlx5dv_devx_obj_destroy); }

}  // namespace drsim::tests
