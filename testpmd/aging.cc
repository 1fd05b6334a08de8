#include "testpmd/aging.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "testpmd/action_lowering.h"

namespace drsim::testpmd {
namespace {

constexpr uint64_t kNsPerSecond = 1'000'000'000;

}  // namespace

absl::StatusOr<uint32_t> AgeTimeout(const Action& age) {
  const uint32_t timeout = ActionParam(age, "timeout");
  if (timeout == 0) {
    return ActionError(age, absl::StatusCode::kInvalidArgument,
                       "invalid timeout value 0 (give `timeout N`, N seconds from 1 to 16777215)");
  }
  return timeout;
}

absl::StatusOr<AgeResult> QueryAge(sim::Nic& nic, const AgeState& age) {
  DRSIM_ASSIGN_OR_RETURN(const hw::CounterActivity activity, nic.QueryCounterActivity(age.counter));
  AgeResult r;
  r.aged = activity.longest_idle_ns / kNsPerSecond > age.timeout_s;
  r.sec_since_last_hit_valid = !r.aged;
  if (!r.aged) {
    r.sec_since_last_hit = static_cast<uint32_t>(
        std::min<uint64_t>(activity.idle_ns() / kNsPerSecond, std::numeric_limits<uint32_t>::max()));
  }
  return r;
}

std::string FormatAge(absl::string_view title, const AgeResult& age) {
  return absl::StrFormat("%s:\n aged: %d\n sec_since_last_hit_valid: %d\n sec_since_last_hit: %d\n", title,
                         age.aged ? 1 : 0, age.sec_since_last_hit_valid ? 1 : 0, age.sec_since_last_hit);
}

}  // namespace drsim::testpmd
