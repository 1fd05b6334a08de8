// Internal to the engine: DR actions shared by every rule that asks for the same one.
//
// What
//   The mlx5 PMD keeps its DR actions in hash lists keyed by what they do (encap/decap and modify-header
//   resources, jumps, port ids, tags, push VLAN headers; queues through shared hash Rx queues) and hands
//   each flow a reference: a million flows that all queue to one queue hold one action. ActionCache does the
//   same for the engine. Sharing one action object also lets DR reuse the compiled program of a matcher's
//   rules (dr/rule.cc caches programs by their actions), so a rule's insert compiles nothing.
//
// How
//   Get(key, make) returns the live action under `key` (a string saying what the action does, in which
//   domain or function), or makes it with `make`. Holders keep it alive through the shared_ptr; the last one
//   to go destroys it and takes its entry out. An action bound to a domain keeps the domain alive
//   (`keep_alive`) until it is destroyed. Counters, ASO actions and samplers stay each flow's own: they
//   carry per-flow state.
//
// Thread-safety
//   Not thread-safe: the engine serialises its calls. Every holder must go before the cache.
#ifndef DRSIM_TESTPMD_ACTION_CACHE_H_
#define DRSIM_TESTPMD_ACTION_CACHE_H_

#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "dr/dr.h"

namespace drsim::testpmd {

class ActionCache {
 public:
  ActionCache() = default;
  ActionCache(const ActionCache&) = delete;
  ActionCache& operator=(const ActionCache&) = delete;

  // The shared action under `key`, made by `make` when there is none; `keep_alive` is held with it.
  absl::StatusOr<std::shared_ptr<const dr::Action>> Get(const std::string& key,
                                                        std::shared_ptr<const void> keep_alive,
                                                        absl::FunctionRef<absl::StatusOr<dr::Action>()> make);
  // Live shared actions.
  size_t size() const { return entries_.size(); }

 private:
  absl::flat_hash_map<std::string, std::weak_ptr<const dr::Action>> entries_;
  // The key and action Get gave last: a file's rules mostly ask for their neighbour's action, found by one
  // comparison without hashing the key.
  std::string last_key_;
  std::weak_ptr<const dr::Action> last_;
};

}  // namespace drsim::testpmd

#endif  // DRSIM_TESTPMD_ACTION_CACHE_H_
