// The compiled form of a TableIndex: decision trees over its words' bits, the job that builds them, and the
// functions that compile an index and look packets up in its trees. Internal to //hw:table_index
// (hw/compiled_trees.cc builds and serves the trees, hw/table_index.cc times them against its walk);
// hw/table_index.h describes when an index compiles itself.
#ifndef DRSIM_HW_COMPILED_TREES_H_
#define DRSIM_HW_COMPILED_TREES_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "hw/flow_table.h"
#include "hw/table_index.h"

namespace drsim::hw {

// The compiled form: decision trees over the entries published at one version of the index, read as their
// tries read them (TrieKey: a prefix is a word's leading bits). The entries are grouped by the words they
// test (kTestedBits or more of them), a tree a group, so that an entry seldom meets a bit it does not test:
// it follows both branches of one. A leaf holds the entries that reach it in rank order, as they were
// published (their named hits too: a DropHit is a change), at most kLeafEntries of them unless no bit parts
// them. A node cuts on neighbouring bits of one word, up to kMaxCut of them (a stride: its children are the
// values of those bits): the bit that parts its entries best, widened a bit at a time while that makes its
// largest child smaller and its children together hold at most kCutCopies times its entries (as HiCuts
// does). A lookup goes down the trees in order of their least ranks and skips those whose least is past its
// exact candidate's rank. Its packets (a burst's, up to 32) go down each tree together, a level at a time:
// 16 or 8 a vector step in AVX-512 or AVX2 lanes, or one at a time (TableIndex::TreeDescent, chosen at run
// time); a lane at a leaf waits, masked off, for the others. Then each packet scans its leaf.
//
// Why: a walk's step through the tries costs a hundred instructions or so (its pending steps, bounds and
// interleaving), even with every line in the caches; a tree's step is a load, a shift and a mask. On sets
// whose packets meet many groups the trees may be slower than the walk, so each compiled form first times
// both ways on the lookups it serves (kTrialCalls of them) and keeps the faster. It is built once the index
// stops changing (kQuietLookups), and any change retires it from use: under churn, lookups walk.
struct TableIndex::CompiledTrees {
  static constexpr size_t kLeafEntries = 4;
  static constexpr size_t kMaxEntries = size_t{1} << 19;  // more published entries than this: not compiled
  static constexpr size_t kLeafCopies = 24;  // leaves may name kLeafCopies times the entries, no more
  static constexpr int kMaxCut = 12;
  static constexpr uint8_t kLeaf = 0xff;
  // (Eight bytes, in this order: the vector descents load a node whole.)
  struct TreeNode {
    uint32_t next;  // an inner node's children, nodes[next + the packet's bits]; a leaf's entries[next, ...)
    uint8_t word;   // an inner node's word; kLeaf: a leaf
    uint8_t shift;  // an inner node's bits, key[word] >> shift & bits
    uint16_t bits;  // (a leaf's: how many entries it holds)
  };
  // A leaf's entry as it was published at the version: what a walk reads of it (value and mask as trie keys).
  struct LeafEntry {
    std::array<uint32_t, kWords> value;
    std::array<uint32_t, kWords> mask;
    uint64_t rank;
    uintptr_t matcher;  // TagMatcher
    const RuleRecord* hit;
  };
  uint64_t version = 0;
  std::vector<TreeNode> nodes;
  std::vector<LeafEntry> entries;
  // A tree for each group of entries that test the same index words (at least kTestedBits bits of each):
  // its root, and the least rank of its entries; in that order.
  static constexpr int kTestedBits = 4;
  struct Tree {
    uint32_t root;
    uint64_t least;
  };
  std::vector<Tree> trees;
  // The trial: the time lookups took, and the packets they looked up, by the trees (kTrees) and by the walk
  // (kWalk), in turn, kTrialRun calls each; then the method kept. Only the second half of each run is timed,
  // once its method's lines are back in the caches: timed cold, or a call each way in turn, the trees can
  // lose to a walk that is slower for good.
  static constexpr uint64_t kTrialCalls = 2048;
  static constexpr uint64_t kTrialRun = 256;
  enum LookupMethod : int { kTrees = 0, kWalk = 1, kUndecided = 2 };
  mutable std::atomic<uint64_t> calls{0};
  mutable std::array<std::atomic<uint64_t>, 2> nanoseconds{};
  mutable std::array<std::atomic<uint64_t>, 2> packets{};
  mutable std::atomic<int> method{kUndecided};
  // The packets looked up while it was the index's, unless it had kept the walk.
  mutable std::atomic<uint64_t> served{0};

  // The entries published in `index` (as a walk reads them), into `filed`; false when there are more than
  // kMaxEntries. (Reads made while a change is under way may see part of it: the form is then tagged with
  // the version it began at, which the index has left.)
  static bool CollectEntries(const TableIndex& index, std::vector<LeafEntry>* filed);
  // The compiled form of `filed` (CollectEntries', taken at `version`), or nullptr when its leaves would hold
  // too many entries. Reads nothing else: it runs on the compiler thread.
  static std::unique_ptr<CompiledTrees> Build(std::vector<LeafEntry> filed, uint64_t version);
  // Ends the trial: keeps the method that took less time a packet, and returns it.
  int EndTrial() const {
    auto per_packet = [this](int w) {
      const uint64_t looked_up = packets[w].load(std::memory_order_relaxed);
      return looked_up == 0 ? 0.0
                            : double(nanoseconds[w].load(std::memory_order_relaxed)) / double(looked_up);
    };
    const int kept = per_packet(kTrees) < per_packet(kWalk) ? kTrees : kWalk;
    method.store(kept, std::memory_order_relaxed);
    return kept;
  }

 private:
  class Builder;
};

// A compile on the compiler thread: the entries collected, then the form built of them.
struct TableIndex::CompileJob {
  std::vector<CompiledTrees::LeafEntry> filed;
  uint64_t version;
  std::unique_ptr<CompiledTrees> built;
};

// Compiling an index, and its lookups through the trees: static functions over the index's members, so that
// its public header need not declare them.
class TableIndex::TreeCompiler {
 public:
  // Counts `n` lookups that found no compiled form at version `version`, and starts a compile once enough
  // did (StartCompile); or, while a compile is under way, finishes it once its form is built.
  static void CountQuietLookups(const TableIndex& index, uint64_t version, size_t n);
  // In a read section, on any thread. StartCompile, unless a compile is under way, collects the index's
  // entries as they are at `version` and builds the form of them: on a compiler thread of the index's own
  // when `on_thread` (and one can be had), else there and then. FinishCompile, once the form is built
  // (compile_built_), publishes it (PublishTrees).
  static void StartCompile(const TableIndex& index, uint64_t version, bool on_thread);
  static void FinishCompile(const TableIndex& index);
  // Publishes `fresh` (built from the index at `version`) unless the index changed since; marks `version`
  // too large to compile when `fresh` is nullptr.
  static void PublishTrees(const TableIndex& index, std::unique_ptr<CompiledTrees> fresh, uint64_t version);
  // The writer's, as a change begins: takes the compiled form out of use, judges whether it was worth
  // compiling (quiet_needed_), and retires it.
  static void RetireTrees(TableIndex* index);
  // The candidates of the queries of walks[0, n) (n <= 32; set up: query and words), from `compiled`.
  static void CandidatesFromTrees(const CompiledTrees& compiled, Walk* walks, size_t n);
};

}  // namespace drsim::hw

#endif  // DRSIM_HW_COMPILED_TREES_H_
