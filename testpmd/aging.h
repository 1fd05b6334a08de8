// Internal to the engine: flow aging, as the mlx5 PMD does it, on the NIC's clock.
//
// What. An `age timeout N` action (or an indirect age) ages its rule once the rule has gone more than N
// whole seconds without a hit. Aging is final: a later hit does not bring the rule back (mlx5's
// AGE_TMOUT state). `flow aged` reports each aged rule or indirect age once, and `flow query ... age`
// says whether it aged and, if not, the whole seconds since its last hit.
//
// How. mlx5 sees an aged rule's hits in one of two places and polls them every second, adding the
// seconds a poll finds no new hit:
//   - a flow counter, in root tables (group 0), and wherever the rule's own age sits beside its own
//     count (one counter serves both);
//   - elsewhere an ASO flow-hit context: one bit of a first-hit object that the rule's aso action sets,
//     taken from pools of 512 (FlowHitPool; an indirect age is always one).
// Here the NIC keeps the hit history of both (hw::CounterActivity): the rule has aged when the longest
// stretch without a hit, from the age's start to now, exceeds N whole seconds. That is the poller's
// verdict without its one-second jitter (docs/semantics.md, "Flow aging").
//
// Not thread-safe.
#ifndef DRSIM_TESTPMD_AGING_H_
#define DRSIM_TESTPMD_AGING_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sim/nic.h"
#include "testpmd/ast.h"
#include "testpmd/engine.h"

namespace drsim::testpmd {

class FlowHitPool;

// One ASO flow-hit context taken from a FlowHitPool; it goes back to the pool's free list when this goes.
class FlowHitContext {
 public:
  FlowHitContext(FlowHitPool& pool, uint32_t object, uint32_t offset)
      : pool_(pool), object_(object), offset_(offset) {}
  ~FlowHitContext();
  FlowHitContext(const FlowHitContext&) = delete;
  FlowHitContext& operator=(const FlowHitContext&) = delete;
  uint32_t object() const { return object_; }
  uint32_t offset() const { return offset_; }

 private:
  FlowHitPool& pool_;
  uint32_t object_, offset_;
};

// mlx5's ASO age pools: first-hit objects of one line (512 contexts), made when the free list is empty
// and kept until the engine goes; a freed context is the next one handed out. Outlives every context.
class FlowHitPool {
 public:
  explicit FlowHitPool(sim::Nic& nic) : nic_(nic) {}
  ~FlowHitPool();  // destroys its objects (no aso action uses them by then)
  FlowHitPool(const FlowHitPool&) = delete;
  FlowHitPool& operator=(const FlowHitPool&) = delete;

  // A free context, cleared at the NIC's present time (the age starts now).
  absl::StatusOr<std::unique_ptr<FlowHitContext>> Take();
  // Contexts handed out and not given back.
  int in_use() const { return in_use_; }

 private:
  friend class FlowHitContext;
  struct Slot {
    uint32_t object, offset;
  };
  void GiveBack(uint32_t object, uint32_t offset);

  sim::Nic& nic_;
  std::vector<uint32_t> objects_;
  std::vector<Slot> free_;  // the back is handed out next
  int in_use_ = 0;
};

// What an age keeps: its timeout and where its hits are seen — a flow counter (that lives as long as
// whatever holds the age: its flow or its indirect action) or a flow-hit context of its own.
struct AgeState {
  uint32_t timeout_s = 0;
  std::optional<uint32_t> counter;
  std::unique_ptr<FlowHitContext> flow_hit;
  bool reported = false;  // `flow aged` listed it already
};

// The timeout of an `age` action; InvalidArgument at the action for 0 (mlx5: invalid timeout value 0).
absl::StatusOr<uint32_t> AgeTimeout(const Action& age);

// An age of `timeout_s` seen through a new flow-hit context of `pool`; errors at `origin`.
absl::StatusOr<std::shared_ptr<AgeState>> NewFlowHitAge(FlowHitPool& pool, uint32_t timeout_s,
                                                        const Action& origin);

// Whether `age` has aged, and the seconds since its last hit (when it has not).
absl::StatusOr<AgeResult> QueryAge(sim::Nic& nic, const AgeState& age);

// testpmd's text for an age query: `title` is "AGE" (flow query) or "Indirect AGE action" (indirect).
std::string FormatAge(absl::string_view title, const AgeResult& age);

}  // namespace drsim::testpmd

#endif  // DRSIM_TESTPMD_AGING_H_
