// Internal to the engine: flow aging, as the mlx5 PMD does it, on the NIC's clock.
//
// What. An `age timeout N` action (or an indirect age) ages its rule once the rule has gone more than N
// whole seconds without a hit. Aging is final: a later hit does not bring the rule back (mlx5's
// AGE_TMOUT state). `flow aged` reports each aged rule or indirect age once, and `flow query ... age`
// says whether it aged and, if not, the whole seconds since its last hit.
//
// How. mlx5 counts the hits of an aged rule in a flow counter (in root tables) or an ASO flow-hit
// context (elsewhere) and polls them every second, adding the seconds a poll finds no new hit. Here the
// rule counts into a flow counter whose hit history the NIC keeps (hw::CounterActivity): the rule has
// aged when the longest stretch without a hit, from the rule's creation to now, exceeds N whole seconds.
// That is the poller's verdict without its one-second jitter (docs/semantics.md, "Flow aging").
//
// Not thread-safe.
#ifndef DRSIM_TESTPMD_AGING_H_
#define DRSIM_TESTPMD_AGING_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sim/nic.h"
#include "testpmd/ast.h"
#include "testpmd/engine.h"

namespace drsim::testpmd {

// What an age keeps: its timeout and the flow counter whose hit history it reads (the counter lives as
// long as whatever holds the age: its flow or its indirect action).
struct AgeState {
  uint32_t timeout_s = 0;
  uint32_t counter = 0;
  bool reported = false;  // `flow aged` listed it already
};

// The timeout of an `age` action; InvalidArgument at the action for 0 (mlx5: invalid timeout value 0).
absl::StatusOr<uint32_t> AgeTimeout(const Action& age);

// Whether `age` has aged, and the seconds since its last hit (when it has not).
absl::StatusOr<AgeResult> QueryAge(sim::Nic& nic, const AgeState& age);

// testpmd's text for an age query: `title` is "AGE" (flow query) or "Indirect AGE action" (indirect).
std::string FormatAge(absl::string_view title, const AgeResult& age);

}  // namespace drsim::testpmd

#endif  // DRSIM_TESTPMD_AGING_H_
