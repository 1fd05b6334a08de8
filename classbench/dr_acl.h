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
#include <optional>
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

// A move of a filter's rules to keys their matchers do not hold, as an update that changes a rule's match
// makes: one of its addresses with its first kMoveBits bits changed, to one of kMoveValues other values.
inline constexpr uint32_t kMoveBits = 5;
inline constexpr uint32_t kMoveValues = (1u << kMoveBits) - 1;
struct FilterMove {
  bool source;          // the source address moves, else the destination
  uint32_t first_bits;  // XORed into the address (host order)
};
// Where a churn or a bench moves filter `index` (`f`) for a while: its source prefix (its destination's when
// the source prefix is shorter than kMoveBits) with the first kMoveBits bits changed, by `index`, to one of
// the kMoveValues other values. nullopt when both prefixes are shorter. MovedFilter is `f` moved so, and
// MoveValue `value` (the DR value of a rule of `f`, as DrAcl::value_of_rule holds it).
std::optional<FilterMove> MoveOf(const Filter& f, uint32_t index);
Filter MovedFilter(const Filter& f, const FilterMove& move);
void MoveValue(const FilterMove& move, hw::MatchParams* value);

}  // namespace drsim::classbench

#endif  // DRSIM_CLASSBENCH_DR_ACL_H_
