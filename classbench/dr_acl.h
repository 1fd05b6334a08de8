// A ClassBench filter set as Direct Rule rules in one table, so that the first filter a packet fits decides,
// as FirstMatch does: filter i's rules sit in matchers of priority i, one matcher per distinct pair of
// port-prefix masks the filter's ranges split into (RangeToPrefixes), every rule carrying filter i's actions.
// A set of more than 65,536 filters (matcher priorities are 16 bits) shares priorities: filter i's is
// i * 65536 / size, and filters are installed last first, as a newer matcher is tried before an older one of
// its priority.
// TCP and UDP ports share the L4 lookup (the tcp_* fields also match UDP), so a filter on ports matches
// either protocol unless its protocol says which.
//
// Not thread-safe (DR objects are not shared across threads here).
#ifndef DRSIM_CLASSBENCH_DR_ACL_H_
#define DRSIM_CLASSBENCH_DR_ACL_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "classbench/filter.h"
#include "dr/dr.h"
#include "hw/match_params.h"

namespace drsim::classbench {

struct DrAcl {
  std::vector<dr::Matcher> matchers;
  std::vector<dr::Rule> rules;
  // Parallel to `rules`: the filter index, the matcher (index in `matchers`) and the value of each, so a
  // rule can be removed and put back.
  std::vector<uint32_t> filter_of_rule;
  std::vector<uint32_t> matcher_of_rule;
  std::vector<hw::MatchParams> value_of_rule;
};

// Installs `filters` into `table`; `actions(i)` is filter i's action list (the actions must outlive the
// rules). DR's errors, prefixed with the filter's index. On error the objects made so far are destroyed.
absl::StatusOr<DrAcl> InstallAcl(const dr::Table& table, const std::vector<Filter>& filters,
                                 const std::function<std::vector<const dr::Action*>(size_t)>& actions);

}  // namespace drsim::classbench

#endif  // DRSIM_CLASSBENCH_DR_ACL_H_
