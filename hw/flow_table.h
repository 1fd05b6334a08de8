// The compiled steering state the device walks: flow tables, each an ordered chain of compiled matchers
// (definer + hashed match table), whose hits yield rule records carrying action programs
// (hw/action_program.h).
//
// The driver (dr/) owns all of these objects and keeps them alive while the device can reach them; the
// device (sim/) only reads them. A FlowTable's chain is already in lookup order: ascending priority, newest
// first among equal priorities.
#ifndef DRSIM_HW_FLOW_TABLE_H_
#define DRSIM_HW_FLOW_TABLE_H_

#include <infiniband/mlx5dv.h>

#include <cstdint>
#include <vector>

#include "hw/action_program.h"
#include "hw/definer.h"
#include "hw/match_table.h"

namespace drsim::hw {

struct CompiledMatcher {
  CompiledMatcher(uint32_t id, uint16_t priority, uint64_t sequence, Definer definer)
      : id(id),
        priority(priority),
        sequence(sequence),
        definer(std::move(definer)),
        table(this->definer.key_words()) {}

  uint32_t id;
  uint16_t priority;
  uint64_t sequence;  // creation order across the device; newer matchers are tried first on equal priority
  Definer definer;
  MatchTable table;
};

// Lookup order of matchers: ascending priority, then newest first.
inline bool LookupBefore(const CompiledMatcher& a, const CompiledMatcher& b) {
  if (a.priority != b.priority) return a.priority < b.priority;
  return a.sequence > b.sequence;
}

struct FlowTable {
  uint32_t id = 0;
  uint32_t level = 0;
  mlx5dv_dr_domain_type domain = MLX5DV_DR_DOMAIN_TYPE_NIC_RX;
  std::vector<const CompiledMatcher*> chain;  // lookup order
};

}  // namespace drsim::hw

#endif  // DRSIM_HW_FLOW_TABLE_H_
