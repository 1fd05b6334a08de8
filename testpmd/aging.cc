#include "testpmd/aging.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "sim/aso.h"
#include "testpmd/action_lowering.h"

namespace drsim::testpmd {
namespace {

constexpr uint64_t kNsPerSecond = 1'000'000'000;

}  // namespace

FlowHitContext::~FlowHitContext() { pool_.GiveBack(object_, offset_); }

FlowHitPool::~FlowHitPool() {
  for (uint32_t object : objects_) nic_.DestroyAsoObject(object).IgnoreError();
}

absl::StatusOr<std::unique_ptr<FlowHitContext>> FlowHitPool::Take() {
  if (free_.empty()) {
    DRSIM_ASSIGN_OR_RETURN(const uint32_t object, nic_.CreateAsoObject(hw::AsoKind::kFirstHit, 0));
    objects_.push_back(object);
    // Handed out from offset 0 up.
    for (uint32_t offset = sim::AsoBank::kFirstHitsPerLine; offset-- > 0;) free_.push_back({object, offset});
  }
  const Slot slot = free_.back();
  DRSIM_RETURN_IF_ERROR(nic_.ClearAsoFirstHit(slot.object, slot.offset));
  free_.pop_back();
  ++in_use_;
  return std::make_unique<FlowHitContext>(*this, slot.object, slot.offset);
}

void FlowHitPool::GiveBack(uint32_t object, uint32_t offset) {
  free_.push_back({object, offset});
  --in_use_;
}

absl::StatusOr<uint32_t> AgeTimeout(const Action& age) {
  const uint32_t timeout = ActionParam(age, "timeout");
  if (timeout == 0) {
    return ActionError(age, absl::StatusCode::kInvalidArgument,
                       "invalid timeout value 0 (give `timeout N`, N seconds from 1 to 16777215)");
  }
  return timeout;
}

absl::StatusOr<std::shared_ptr<AgeState>> NewFlowHitAge(FlowHitPool& pool, uint32_t timeout_s,
                                                        const Action& origin) {
  absl::StatusOr<std::unique_ptr<FlowHitContext>> context = pool.Take();
  if (!context.ok()) {
    return ActionError(origin, context.status().code(),
                       absl::StrCat("failed to create ASO age pool: ", context.status().message()));
  }
  auto age = std::make_shared<AgeState>();
  age->timeout_s = timeout_s;
  age->flow_hit = *std::move(context);
  return age;
}

absl::StatusOr<AgeResult> QueryAge(sim::Nic& nic, const AgeState& age) {
  const absl::StatusOr<hw::CounterActivity> activity =
      age.flow_hit != nullptr ? nic.QueryAsoFirstHitActivity(age.flow_hit->object(), age.flow_hit->offset())
                              : nic.QueryCounterActivity(age.counter.value_or(~0u));
  if (!activity.ok()) return activity.status();
  AgeResult r;
  r.aged = activity->longest_idle_ns / kNsPerSecond > age.timeout_s;
  r.sec_since_last_hit_valid = !r.aged;
  if (!r.aged) {
    r.sec_since_last_hit = static_cast<uint32_t>(
        std::min<uint64_t>(activity->idle_ns() / kNsPerSecond, std::numeric_limits<uint32_t>::max()));
  }
  return r;
}

std::string FormatAge(absl::string_view title, const AgeResult& age) {
  return absl::StrFormat("%s:\n aged: %d\n sec_since_last_hit_valid: %d\n sec_since_last_hit: %d\n", title,
                         age.aged ? 1 : 0, age.sec_since_last_hit_valid ? 1 : 0, age.sec_since_last_hit);
}

}  // namespace drsim::testpmd
