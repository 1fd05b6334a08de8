// The compiled steering state the device walks: flow tables, each an ordered chain of compiled matchers
// (definer + hashed match table), whose hits yield rule records carrying action programs
// (hw/action_program.h).
//
// The driver (dr/) owns all of these objects and keeps them alive while the device can reach them; the
// device (sim/) only reads them. A FlowTable's chain is already in lookup order: ascending priority, newest
// first among equal priorities. Lookups walk it as a linked list (first_matcher(), then each matcher's
// next), as hardware steering links matchers by their miss addresses: the driver links a matcher in and
// out with one release store each (LinkMatcher, UnlinkMatcher), so workers walk it without locks while
// it changes, and an unlinked matcher is retired, not freed, while a walk may still be on it
// (hw/reclaimer.h). A walk through many small matchers (an ACL's) passes most of them on one key word
// (CompiledMatcher::MayMatch, against the match table's summary) without extracting or hashing the key, and
// requests each matcher a few places before it reaches it (CompiledMatcher::PrefetchAhead, on hints the
// driver's link and unlink keep), so a chain larger than the caches costs few waits on memory. A table of
// many matchers also gets an index (hw/table_index.h) naming the few matchers that may hold a packet's
// hit: past the chain's first matchers, lookups probe those, in lookup order, instead of walking on.
//
// Root (level-0) tables of one domain type on a function are merged into one lookup order. On hardware
// they are flow tables of the kernel's steering tree, and rdma-core's root tables share its "bypass"
// namespace with verbs flows; the kernel also owns tables elsewhere in that tree (sniffer, DONT_TRAP
// priorities, multicast, leftovers). A root table's RootNamespace says where its matchers go, and
// RootRank orders the merged root: namespace, then priority (DONT_TRAP just before bypass at equal
// priority), then newest matcher first.
#ifndef DRSIM_HW_FLOW_TABLE_H_
#define DRSIM_HW_FLOW_TABLE_H_

#include <infiniband/mlx5dv.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <iterator>

#include "absl/container/btree_set.h"
#include "hw/action_program.h"
#include "hw/definer.h"
#include "hw/match_table.h"
#include "hw/reclaimer.h"

namespace drsim::hw {

class TableIndex;

// How many matchers ahead of its position a walk requests the next one it will read
// (CompiledMatcher::PrefetchAhead): about a miss's latency over the cost of passing a matcher on its summary.
inline constexpr int kWalkAhead = 6;

// Aligned on a cache line: what a walk reads of a matcher it passes (the link, the summary word, the table's
// summary) is then one line, the one PrefetchAhead requests.
struct alignas(64) CompiledMatcher {
  // `reclaimer`: the device's, where the match table retires what concurrent lookups may still read.
  CompiledMatcher(uint32_t id, uint16_t priority, uint64_t sequence, Definer definer,
                  Reclaimer* reclaimer = nullptr)
      : summary_word(definer.word(definer.widest_word())),
        id(id),
        priority(priority),
        sequence(sequence),
        table(definer.key_words(), reclaimer, definer.widest_word()),
        definer(std::move(definer)) {}

  // The matcher after this one in its table's lookup order (FlowTable::LinkMatcher writes it).
  const CompiledMatcher* next_matcher() const { return next.load(std::memory_order_acquire); }
  // Starts loading the first line of the matcher kWalkAhead places later in the lookup order, which a walk
  // passing this one will soon reach: the walk through thousands of matchers (an ACL's, larger than the
  // caches) then waits on one miss per kWalkAhead matchers instead of one per matcher.
  // (Not a null hint: a prefetch of an unmapped address can cost a page walk.)
  void PrefetchAhead() const {
    if (const CompiledMatcher* a = ahead.load(std::memory_order_relaxed)) __builtin_prefetch(a);
  }

  // False when no rule of this matcher can match the header vector `input` (448 bytes, PRM layout), judged
  // on its table's summary word alone; true when one may (then extract the key and Find it). A walk through
  // many matchers passes most of them on this one word.
  bool MayMatch(const uint8_t* input) const { return table.MayHold(summary_word.Read(input)); }

  // In the order a walk reads them: the link, the summary word and the table's summary (its first field);
  // the definer only when the summary lets the packet through.
  mutable std::atomic<const CompiledMatcher*> next{nullptr};  // lookup links, written by the driver
  // A prefetch hint, never dereferenced: the matcher kWalkAhead places later when the driver last linked or
  // unlinked a matcher near it (it may since have been freed: prefetching an address never faults).
  mutable std::atomic<const CompiledMatcher*> ahead{nullptr};
  Definer::Word summary_word;  // the definer's word the table's summary is built on
  uint32_t id;
  uint16_t priority;
  uint64_t sequence;  // creation order across the device; newer matchers are tried first on equal priority
  alignas(16) MatchTable table;  // (at 48: 8 bytes of padding before it)
  Definer definer;
};
static_assert(offsetof(CompiledMatcher, table) == 48, "MatchTable lays its fields out for this offset");

// Lookup order of matchers: ascending priority, then newest first.
inline bool LookupBefore(const CompiledMatcher& a, const CompiledMatcher& b) {
  if (a.priority != b.priority) return a.priority < b.priority;
  return a.sequence > b.sequence;
}

// LookupBefore as one number: a is tried before b iff LookupRank(a) < LookupRank(b) (for sequence numbers
// below 2^48, which a device would take centuries to hand out).
inline uint64_t LookupRank(const CompiledMatcher& m) {
  constexpr uint64_t kSequenceMask = (uint64_t{1} << 48) - 1;
  return uint64_t{m.priority} << 48 | (kSequenceMask - (m.sequence & kSequenceMask));
}

// The kernel steering namespaces a root table can sit in, in lookup order (Linux mlx5: the sniffer
// namespaces, then in the bypass namespace the DONT_TRAP priority 2p and the regular priority 2p + 1 of
// each verbs priority p, its multicast priority, and the leftovers namespace). rdma-core's root tables
// are kBypass; the others hold verbs flows (dr/kernel_steering.h).
enum class RootNamespace : uint8_t {
  kSniffer,    // before all steering
  kDontTrap,   // priority p: just before kBypass priority p
  kBypass,     // rdma-core's root tables and verbs NORMAL flows
  kMulticast,  // after every kBypass priority
  kLeftovers,  // after everything
};

// The position of a root matcher of `priority` in namespace `ns` in its merged root: lower is tried
// first. A walk that re-enters the root "from" a rank skips every matcher of a lower rank.
constexpr uint32_t RootRank(RootNamespace ns, uint16_t priority) {
  uint32_t major = 0, minor = 0;
  switch (ns) {
    case RootNamespace::kSniffer:
      break;
    case RootNamespace::kDontTrap:
      major = 1;
      break;
    case RootNamespace::kBypass:
      major = 1;
      minor = 1;
      break;
    case RootNamespace::kMulticast:
      major = 2;
      break;
    case RootNamespace::kLeftovers:
      major = 3;
      break;
  }
  return major << 17 | uint32_t{priority} << 1 | minor;
}

// LookupBefore as a set's order.
struct InLookupOrder {
  bool operator()(const CompiledMatcher* a, const CompiledMatcher* b) const { return LookupBefore(*a, *b); }
};

// A table's matchers in lookup order: finding, adding and removing one cost O(log n), as tables hold
// 10,000s of matchers (an ACL's prefix combinations) that are created and destroyed in any order.
using MatcherChain = absl::btree_set<const CompiledMatcher*, InLookupOrder>;

struct FlowTable {
  uint32_t id = 0;
  uint32_t level = 0;
  mlx5dv_dr_domain_type domain = MLX5DV_DR_DOMAIN_TYPE_NIC_RX;
  MatcherChain chain;                              // lookup order; the driver's copy
  RootNamespace root_ns = RootNamespace::kBypass;  // level 0: where the chain goes in the merged root
  // What lookups walk: the chain's first matcher, then next links.
  std::atomic<const CompiledMatcher*> first{nullptr};
  // Which matchers may hit a packet (hw/table_index.h), once the driver indexes the table (nullptr until
  // then): past the chain's first matchers, a lookup may probe only those, in lookup order. Published
  // complete; a new one replaces it when the driver builds it again, and the old one is retired.
  std::atomic<const TableIndex*> index{nullptr};

  // The first matcher lookups try (then each one's next_matcher()), or nullptr.
  const CompiledMatcher* first_matcher() const { return first.load(std::memory_order_acquire); }

  // Adds `m` to `chain` and links it into the walk: it points at its successor, then its predecessor points
  // at it (the release store that makes it visible). O(log n + kWalkAhead).
  void LinkMatcher(const CompiledMatcher* m) {
    const auto at = chain.insert(m).first;
    const auto after = std::next(at);
    m->next.store(after == chain.end() ? nullptr : *after, std::memory_order_relaxed);
    (at == chain.begin() ? first : (*std::prev(at))->next).store(m, std::memory_order_release);
    AimAhead(at);
  }
  // Takes `m` out of the walk and out of `chain`. A walk already on it goes on to its successor, so the
  // matcher must be retired, not freed. O(log n + kWalkAhead).
  void UnlinkMatcher(const CompiledMatcher* m) {
    const auto at = chain.find(m);
    const auto after = std::next(at);
    (at == chain.begin() ? first : (*std::prev(at))->next)
        .store(after == chain.end() ? nullptr : *after, std::memory_order_release);
    AimAhead(chain.erase(at));
  }
  // Links the whole `chain` in order: for a table no lookup can reach yet.
  void LinkAll() {
    const CompiledMatcher* after = nullptr;
    for (auto m = chain.rbegin(); m != chain.rend(); ++m) {
      (*m)->next.store(after, std::memory_order_relaxed);
      after = *m;
    }
    auto lead = chain.begin();
    for (int i = 0; i < kWalkAhead && lead != chain.end(); ++i) ++lead;
    for (const CompiledMatcher* m : chain) {
      m->ahead.store(lead == chain.end() ? nullptr : *lead, std::memory_order_relaxed);
      if (lead != chain.end()) ++lead;
    }
    first.store(after, std::memory_order_release);
  }

 private:
  // Re-aims the `ahead` hints a link at `at`, or an unlink just before it, changed: those of the
  // kWalkAhead matchers before `at` and of `at` itself (none for chain.end()), each at the matcher
  // kWalkAhead places after it, or nullptr past the end.
  void AimAhead(MatcherChain::const_iterator at) {
    MatcherChain::const_iterator from = at, to = at;
    int gap = 0;  // how many places `to` is after `from`, up to kWalkAhead; `to` stops at chain.end()
    for (; gap < kWalkAhead && to != chain.end(); ++gap) ++to;
    for (int aimed = 0; aimed <= kWalkAhead; ++aimed) {
      if (from != chain.end()) {
        (*from)->ahead.store(gap == kWalkAhead && to != chain.end() ? *to : nullptr,
                             std::memory_order_relaxed);
      }
      if (from == chain.begin()) return;
      --from;
      if (gap == kWalkAhead) {
        --to;
      } else {
        ++gap;
      }
    }
  }
};

}  // namespace drsim::hw

#endif  // DRSIM_HW_FLOW_TABLE_H_
