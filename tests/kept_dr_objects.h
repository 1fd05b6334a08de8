// The C DR and DevX objects a test makes, destroyed when it ends.
//
// What: a base for gtest fixtures that drive the C API (mlx5dv_dr_*, mlx5dv_devx_*). Keep records an
// object the test made and fails the test, with drsim's last error, when the call that made it returned
// NULL. Rule creates a rule and keeps it.
//
// How: the fixture's TearDown calls DestroyDrObjects before it destroys its domains, then
// DestroyDevxObjects. The first destroys rules, matchers, actions and tables, each kind newest first: an
// object can only refer to older ones, and of the other kinds only to those destroyed after it. DevX
// objects go last, newest first, after the actions that use them. Every destroy must return 0. A test that
// destroys a kept object itself calls Forget (or DestroyLastRule) first.
//
// Thread-safety: none; one test thread.
#ifndef DRSIM_TESTS_KEPT_DR_OBJECTS_H_
#define DRSIM_TESTS_KEPT_DR_OBJECTS_H_

#include <infiniband/mlx5dv.h>

#include <vector>

#include "hw/match_params.h"

namespace drsim::tests {

class KeptDrObjects {
 public:
  mlx5dv_dr_rule* Keep(mlx5dv_dr_rule* rule);
  mlx5dv_dr_matcher* Keep(mlx5dv_dr_matcher* matcher);
  mlx5dv_dr_action* Keep(mlx5dv_dr_action* action);
  mlx5dv_dr_table* Keep(mlx5dv_dr_table* table);
  mlx5dv_devx_obj* Keep(mlx5dv_devx_obj* object);

  // A rule of `matcher` with `value` and `actions`, kept; NULL (and a test failure) when refused.
  mlx5dv_dr_rule* Rule(mlx5dv_dr_matcher* matcher, hw::MatchParams value,
                       std::vector<mlx5dv_dr_action*> actions);

  // Stops keeping an object the test destroys itself.
  void Forget(mlx5dv_dr_action* action);
  void Forget(mlx5dv_devx_obj* object);
  // Destroys the newest kept rule.
  void DestroyLastRule();

  void DestroyDrObjects();
  void DestroyDevxObjects();

 protected:
  std::vector<mlx5dv_dr_rule*> rules_;
  std::vector<mlx5dv_dr_matcher*> matchers_;
  std::vector<mlx5dv_dr_action*> actions_;
  std::vector<mlx5dv_dr_table*> tables_;
  std::vector<mlx5dv_devx_obj*> devx_;
};

}  // namespace drsim::tests

#endif  // DRSIM_TESTS_KEPT_DR_OBJECTS_H_
