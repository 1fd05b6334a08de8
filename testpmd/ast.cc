#include "testpmd/ast.h"

namespace drsim::testpmd {

const ActionArg* Action::Find(absl::string_view name) const {
  for (auto it = args.rbegin(); it != args.rend(); ++it) {
    if (it->def->name == name) return &*it;
  }
  return nullptr;
}

}  // namespace drsim::testpmd
