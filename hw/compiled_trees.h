// The compiled form of a TableIndex: decision trees over its words' bits, the job that builds them, and the
// functions that compile an index and look packets up in its trees. Internal to //hw:table_index
// (hw/compiled_trees.cc builds and serves the trees, hw/table_index.cc times them against its walk);
// hw/table_index.h describes when an index compiles itself.
#ifndef DRSIM_HW_COMPILED_TREES_H_
#define DRSIM_HW_COMPILED_TREES_H_

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "hw/answer_automata.h"
#include "hw/flow_table.h"
#include "hw/lookup_memory.h"
#include "hw/table_index.h"

// DRSIM_SEQUENCE_LOCKED_READS: a function whose plain reads a sequence lock makes safe (ScanLeaf).
// ThreadSanitizer does not instrument it in its builds (where it cannot be inlined into instrumented code);
// elsewhere it is inlined into its caller. DRSIM_INLINED_UNLESS_THREAD_SANITIZED: a function such a reader
// calls whose acquires ThreadSanitizer must see (TakeIfUnchanged): inlined too, but not in its builds, where
// it stays an instrumented call.
#if defined(__SANITIZE_THREAD__)
#define DRSIM_THREAD_SANITIZED_BUILD 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DRSIM_THREAD_SANITIZED_BUILD 1
#endif
#endif
#ifdef DRSIM_THREAD_SANITIZED_BUILD
#define DRSIM_SEQUENCE_LOCKED_READS __attribute__((no_sanitize("thread")))
#define DRSIM_INLINED_UNLESS_THREAD_SANITIZED
#else
#define DRSIM_SEQUENCE_LOCKED_READS __attribute__((always_inline))
#define DRSIM_INLINED_UNLESS_THREAD_SANITIZED __attribute__((always_inline))
#endif

namespace drsim::hw {

// The compiled form: decision trees over the entries published at one version of the index, read as their
// tries read them (TrieKey: a prefix is a word's leading bits), and kept up with the versions after it (see
// "Changes as they come"). The entries are grouped by the words they test (kTestedBits or more of them), a
// tree a group, so that an entry seldom meets a bit it does not test: it follows both branches of one. A
// leaf holds the entries that reach it, in rank order when built, with their named hits, at most
// kLeafEntries of them unless no bit parts them, and a free slot; its node says in which rank bucket its
// entries start. A node cuts on neighbouring bits of one word, up to kMaxCut of them (a stride: its children
// are the values of those bits): the bit that parts its entries best, widened a bit at a time while that
// makes its largest child smaller and its children together hold at most kCutCopies times its entries (as
// HiCuts does). A lookup goes down the trees in order of their least ranks and skips those whose least is
// past its exact candidate's rank. Its packets (a burst's, up to 32) go down each tree together, a level at a
// time: 16 or 8 a vector step in AVX-512 or AVX2 lanes, or one at a time (TableIndex::TreeDescent, chosen at
// run time); a lane at a leaf waits, masked off, for the others. Then each packet scans its leaf, unless the
// leaf's rank bucket starts past the packet's exact candidate (an empty leaf's is past any): on ClassBench's
// acl4 set, close to half the leaves a packet reaches hold only entries past its answer.
//
// Why: a walk's step through the tries costs a hundred instructions or so (its pending steps, bounds and
// interleaving), even with every line in the caches; a tree's step is a load, a shift and a mask. On sets
// whose packets meet many groups the trees may be slower than the walk, so each compiled form first times
// both ways on the lookups it serves (TrialCalls() of them), and its automata as a third when it has them,
// and keeps the fastest. It is built once the index stops changing (kQuietLookups).
//
// Changes as they come (hw/tree_updates.cc): the writer takes each change of the index into the form that
// serves, in place, so that lookups under churn stay on the trees. An entry published goes into every leaf
// its bits reach: into a free slot after the leaf's entries, then counted in by one 8-byte store of the
// leaf's node; or, when the leaf has none left, into a copy of the leaf with more free slots, made in room
// kept at the end of `entries`, the node replaced likewise (a reader finds the old leaf or the new). A
// leaf's entries are thus in rank order only until the writer adds one. An entry removed is marked gone
// (kGone) where it lies, and one published again with the values it had is marked live again, so a rule
// deleted and put back leaves nothing behind; a new entry takes a gone one's slot before a free one. A named
// hit is set in place. The copies and gone entries a form gathers make it slower and fill its room, so once
// they come to a share of what it was built with the writer folds them: it collects the index's entries, a
// thread of the index's own builds new trees of them, and the writer takes the changes made meanwhile into
// the new form before it publishes it. A change the form cannot take (an entry reaching more than
// kMaxLeavesPerChange leaves, or no room left) retires it, and a fold follows.
struct TableIndex::CompiledTrees {
  static constexpr size_t kLeafEntries = 4;
  static constexpr size_t kMaxEntries = size_t{1} << 19;  // more published entries than this: not compiled
  static constexpr size_t kLeafCopies = 24;  // leaves may name kLeafCopies times the entries, no more
  static constexpr int kMaxCut = 12;
  static constexpr uint8_t kLeaf = 0xff;
  // (Eight bytes, in this order: the vector descents load a node whole, and the writer replaces a leaf's
  // node with one store.)
  struct alignas(8) TreeNode {
    uint32_t next;  // an inner node's children, nodes[next + the packet's bits]; a leaf's entries[next, ...)
    uint8_t word;   // an inner node's word; kLeaf: a leaf
    uint8_t shift;  // an inner node's bits, key[word] >> shift & bits (a leaf's: the rank bucket of its
                    // least entry, RankBucketOf)
    uint16_t bits;  // (a leaf's: how many entries it holds)
  };
  // Ranks in buckets, so that a leaf's node can say how early its entries start: bucket b < kEmptyLeafBucket
  // holds the ranks from bucket_least[b] up to the next bucket's (a 255th of the built entries each; bucket 0
  // from rank 0). A leaf's bucket is its least entry's, or lower: the writer lowers it before a leaf takes an
  // entry of a lower bucket, and never raises it. An empty leaf's is kEmptyLeafBucket, whose least is past
  // every rank. A packet whose bound is below its leaf's bucket_least has no candidate there, and skips the
  // leaf's lines.
  static constexpr size_t kRankBuckets = 256;
  static constexpr uint8_t kEmptyLeafBucket = kRankBuckets - 1;
  std::array<uint64_t, kRankBuckets> bucket_least{};
  uint8_t RankBucketOf(uint64_t rank) const {
    return static_cast<uint8_t>(
        std::upper_bound(bucket_least.begin(), bucket_least.begin() + kEmptyLeafBucket, rank) -
        bucket_least.begin() - 1);
  }
  // Free slots a leaf gets after its entries when built, and when the writer copies it (as many as its
  // entries, at least kCopiedLeafRoom, at most 255). The writer's count of them, by node (0 for inner
  // nodes): `leaf_room`.
  static constexpr uint8_t kBuiltLeafRoom = 1;
  static constexpr uint8_t kCopiedLeafRoom = 4;
  std::vector<uint8_t> leaf_room;
  // A leaf's entry: what a walk reads of it (value and mask as trie keys). Once its leaf is published, the
  // writer changes `matcher` (kGone set or cleared) and `hit`, and may fill a gone entry with another
  // (a new generation in `matcher`'s top byte, a sequence lock for readers), all with atomic stores; readers
  // load every field atomically.
  static constexpr uintptr_t kGone = 2;        // (TagMatcher uses bit 0; a matcher is aligned wider)
  static constexpr int kGenerationShift = 56;  // (user-space addresses have fewer bits)
  static constexpr uintptr_t kGenerations = ~uintptr_t{0} << kGenerationShift;
  static constexpr uintptr_t kTagged = ~(kGone | kGenerations);  // TagMatcher's word
  // (A line each: at 56 bytes most entries would straddle two, and a leaf scan would wait on both.)
  struct alignas(64) LeafEntry {
    std::array<uint32_t, kWords> value;
    std::array<uint32_t, kWords> mask;
    uint64_t rank;
    uintptr_t matcher;  // TagMatcher, kGone set while the entry is removed, and its generation
    const RuleRecord* hit;
    // Whether `other` is this entry (its matcher, values and masks), gone or not.
    bool Is(const LeafEntry& other) const {
      return (matcher & kTagged) == (other.matcher & kTagged) && value == other.value && mask == other.mask;
    }
  };
  // The automata (hw/answer_automata.h) over the entries built, when they fit kAutomataLimits in one
  // automaton (a quiet table's compile only, on a CPU with AVX-512; Compile(true) anywhere): when the trial
  // keeps them (kAutomata), and while `automata_serve` holds, lookups go down them instead of the trees, and
  // a packet's leaf lists its candidates whole (a tree's leaf lists entries to scan). The form builds one or
  // none: a split set's build takes a second or two, and the compile publishes the trees only once it is
  // done. Rule i of the automata is `answers[i]`, the built entries in rank order. The writer takes each
  // change into them as into the trees: an entry removed is marked gone in `answers` or `delta`, one
  // published again with the values it had is marked live again, and a new entry goes into `delta` (a gone
  // one's slot first), which every lookup also scans; a named hit is set in place. When `delta` is full the
  // automata stop serving (the trees serve until the next fold). A packet whose leaf ends with an exact entry
  // that is gone, or that its query starts past, may have lost candidates the automata cut after it: it is
  // looked up in the trees. Sized so that a set that does not fit is refused in well under a second: acl1's
  // 13,343 entries fit (341K cells, built in 0.3 s), and the other profiles' sets are refused in 0.1-0.4 s.
  static constexpr AnswerAutomata::Limits kAutomataLimits{size_t{1} << 18, size_t{1} << 21, uint64_t{1} << 24,
                                                          1};
  static constexpr uint32_t kDeltaEntries = 64;
  std::unique_ptr<AnswerAutomata> automata;
  std::vector<LeafEntry, LookupAllocator<LeafEntry>> answers;
  std::vector<uint64_t> automaton_least;  // each automaton's least rank
  std::array<LeafEntry, kDeltaEntries> delta{};
  std::atomic<uint32_t> delta_count{0};  // delta[0, delta_count) are published
  std::atomic<bool> automata_serve{false};
  // The writer's: where each built entry is in `answers` (by matcher word without kGone and generation,
  // values and masks).
  struct AnswerKey {
    uintptr_t matcher;
    std::array<uint32_t, kWords> value, mask;
    bool operator==(const AnswerKey& other) const {
      return matcher == other.matcher && value == other.value && mask == other.mask;
    }
    template <typename H>
    friend H AbslHashValue(H h, const AnswerKey& k) {
      return H::combine(std::move(h), k.matcher, k.value, k.mask);
    }
    static AnswerKey Of(const LeafEntry& e) { return {e.matcher & kTagged, e.value, e.mask}; }
  };
  absl::flat_hash_map<AnswerKey, uint32_t> answer_of;
  // The index's version the form stands for: the one it was built at, then each change's that the writer
  // took into it (readers use the form only at that version, or while the change after it is under way).
  std::atomic<uint64_t> version{0};
  // The trees' nodes and leaf entries. Both keep room at their ends (reserved when built) for what the
  // writer adds: the vectors never grow past it, so readers index them while the writer appends. They are
  // lookup memory (huge pages): a lookup's descent and leaf land on lines scattered over megabytes.
  std::vector<TreeNode, LookupAllocator<TreeNode>> nodes;
  std::vector<LeafEntry, LookupAllocator<LeafEntry>> entries;
  // A tree for each group of entries that test the same index words (at least kTestedBits bits of each):
  // its root, and the least rank of its entries; in that order.
  static constexpr int kTestedBits = 4;
  // (`least` is lowered by the writer, with an atomic store, before an entry of lower rank is published.)
  struct Tree {
    uint32_t root;
    uint64_t least;
  };
  static constexpr size_t kGroups = size_t{1} << kWords;
  std::array<Tree, kGroups> trees{};
  std::atomic<uint32_t> tree_count{0};  // trees[0, tree_count) are published
  // The writer's: each group's tree (-1: none yet), and what the form gathered since it was built.
  std::array<int8_t, kGroups> tree_of_group{};
  size_t built_entries = 0;  // leaf entries when built
  size_t gone = 0;           // leaf entries marked gone
  // Room kept for the writer: entries twice the built ones (at least kEntryRoom), nodes kNodeRoom.
  // (Reserved, not touched: it takes memory only as copies fill it.)
  static constexpr size_t kEntryRoom = size_t{1} << 17;
  static constexpr size_t kNodeRoom = kGroups;
  // An entry that would reach more leaves than this is not taken in: the form is retired.
  static constexpr size_t kMaxLeavesPerChange = 256;
  // The group of an entry whose masks are `mask`: the words it tests with kTestedBits bits or more.
  static unsigned GroupOf(const std::array<uint32_t, kWords>& mask) {
    unsigned tested = 0;
    for (int w = 0; w < kWords; ++w) tested |= unsigned{__builtin_popcount(mask[w]) >= kTestedBits} << w;
    return tested;
  }
  // Reads a node that the writer may replace (a leaf's).
  TreeNode LoadNode(uint32_t at) const {
    TreeNode node;
    __atomic_load(&nodes[at], &node, __ATOMIC_ACQUIRE);
    return node;
  }
  // The trial: lookups go by the trees (kTrees) and by the walk (kWalk) in turn, TrialRun() calls a run, and
  // each run counts the time its calls took and the packets they looked up; then the method kept. Only the
  // second half of each run is timed, once its method's lines are back in the caches: timed cold, or a call
  // each way in turn, the trees can lose to a walk that is slower for good. Each method is judged by its
  // median run. Not by the sum of its runs: a run in which the thread lost its CPU (a busy machine's) would
  // decide it, and kept walks several times slower than the trees. Nor by its fastest run: each run looks
  // up other packets, and a walk finds some stretches of a trace far cheaper than others, so one lucky run
  // of the walk kept it at half the trees' rate (bench/README.md, "Where the time goes", has the figures).
  // With automata (hw/answer_automata.h) the trial has three ways: the trees, the walk and the automata; and
  // its runs are longer (kAutomataTrialRun calls), as the automata's cells take longer to come back into
  // the caches than the trees' nodes: on acl1, in runs of 256 or 1,024 calls the automata took 40-95 ns a
  // packet against the trees' 38-60, and in runs of 4,096, 30-36 against 40-43, as they do for good.
  static constexpr uint64_t kTrialRun = 256;
  static constexpr uint64_t kAutomataTrialRun = 4096;
  static constexpr size_t kTrialRuns = 12;
  enum LookupMethod : int { kTrees = 0, kWalk = 1, kAutomata = 2, kUndecided = 3 };
  // Whether `method` looks packets up by the compiled form (its trees or its automata), not the walk.
  static bool ByForm(int method) { return method == kTrees || method == kAutomata; }
  int TrialWays() const { return automata != nullptr ? 3 : 2; }
  uint64_t TrialRun() const { return automata != nullptr ? kAutomataTrialRun : kTrialRun; }
  uint64_t TrialCalls() const { return TrialRun() * kTrialRuns; }
  int TrialMethodOf(uint64_t call) const { return static_cast<int>(call / TrialRun() % TrialWays()); }
  static_assert(kTrees == 0 && kWalk == 1 && kAutomata == 2, "TrialWinner: run r is way r % ways");
  mutable std::atomic<uint64_t> calls{0};
  mutable std::array<std::atomic<uint64_t>, kTrialRuns> run_nanoseconds{};
  mutable std::array<std::atomic<uint64_t>, kTrialRuns> run_packets{};
  mutable std::atomic<int> method{kUndecided};
  // The packets looked up while it was the index's, unless it had kept the walk.
  mutable std::atomic<uint64_t> served{0};

  // The entries published in `index` (as a walk reads them), into `filed`; false when there are more than
  // kMaxEntries. (Reads made while a change is under way may see part of it: the form is then tagged with
  // the version it began at, which the index has left.)
  static bool CollectEntries(const TableIndex& index, std::vector<LeafEntry>* filed);
  // The leaf entry of the tries' entry `e` as it is published (its matcher word and hit as they are now).
  static LeafEntry LeafEntryOf(const TableIndex& index, const Entry& e);
  // The compiled form of `filed` (CollectEntries', taken at `version`), or nullptr when its leaves would hold
  // too many entries. Reads nothing else: it runs on the compiler thread. With `with_automata`, the form
  // also has automata when they fit kAutomataLimits (a quiet table's compile; a fold's form has none: their
  // build would take a fold several times as long).
  static std::unique_ptr<CompiledTrees> Build(std::vector<LeafEntry> filed, uint64_t version,
                                              bool with_automata);
  // Ends the trial: keeps the method whose median run took less time a packet (TrialWinner), and returns
  // it.
  int EndTrial() const {
    std::array<uint64_t, kTrialRuns> took, looked_up;
    for (size_t run = 0; run < kTrialRuns; ++run) {
      took[run] = run_nanoseconds[run].load(std::memory_order_relaxed);
      looked_up[run] = run_packets[run].load(std::memory_order_relaxed);
    }
    const int kept = TrialWinner(took, looked_up, TrialWays());
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
  std::chrono::steady_clock::duration took{};  // (building it)
};

// A change of the index, as the compiled form takes it: `entry` published (kAdd, with its hit), removed
// (kRemove), or its named hit set (kNameHit: entry.hit, nullptr when dropped).
struct TableIndex::TreeChange {
  enum Kind : uint8_t { kAdd, kRemove, kNameHit };
  Kind kind;
  CompiledTrees::LeafEntry entry;
};

// Where the writer last put an entry in a form, so that the next change of the same entry (a rule's hit
// named after it came, dropped before it goes, its key put back) finds its slots without a walk: in
// `form`, every slot holding `entry` in the leaves it reaches (all of them when `complete`). Any other
// change of the form, and its retirement, end it (form nullptr).
struct TableIndex::PlacedEntry {
  const CompiledTrees* form = nullptr;
  CompiledTrees::LeafEntry entry{};
  std::vector<uint32_t> slots;
  bool complete = false;
};

// The writer's upkeep of the compiled form (hw/tree_updates.cc), under the driver's lock but for the two
// atomics readers count into.
struct TableIndex::TreeUpkeep {
  // The form the change under way takes its changes into (nullptr: none serves, or it was retired), and
  // where its last change put its entry.
  CompiledTrees* maintained = nullptr;
  PlacedEntry placed;
  // A fold under way: its entries, collected by the writer at `job->version`, are built on `thread`; the
  // changes made since go into `changes` (up to kMaxFoldChanges: past that, the fold is dropped).
  static constexpr size_t kMaxFoldChanges = size_t{1} << 20;
  std::unique_ptr<CompileJob> job;
  std::thread thread;
  std::atomic<bool> built{false};
  std::vector<TreeChange> changes;
  bool dropped = false;
  // When the last fold was published, and how long building it took (a fold's pace: FoldDue).
  std::chrono::steady_clock::time_point last_fold_end{};
  std::chrono::steady_clock::duration last_fold_took{};
  // Readers: lookups that found no form to use since one was last published, whatever the index did
  // meanwhile; once they come to quiet_needed_, a fold is wanted.
  std::atomic<uint64_t> formless_lookups{0};
  std::atomic<bool> fold_wanted{false};
  // The pace of changes: a form is kept up only while they come at most kMaxKeptUpRate a second, measured
  // over windows of kRateWindow changes (faster, each costs more than the form saves the lookups: a burst
  // of updates retires it, and a fold follows once lookups have gone without a form for a while). It takes
  // two fast windows in a row: one alone is a control path making up for time it lost, soon over.
  static constexpr uint32_t kRateWindow = 4096;
  static constexpr double kMaxKeptUpRate = 800e3;
  std::chrono::steady_clock::time_point window_start{};
  uint32_t window_changes = 0;
  bool last_window_fast = false;
  // For tests and benches: folds published, forms retired because they could not take a change, and
  // forms retired because changes came too fast.
  uint64_t folds = 0;
  uint64_t overflows = 0;
  uint64_t busy_retirements = 0;
  std::chrono::steady_clock::duration fold_time{};
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
  // when `on_thread` (and one can be had), else there and then; with automata when `with_automata` (a quiet
  // index's compile; Compile's for tests only when asked). FinishCompile, once the form is built
  // (compile_built_), publishes it (PublishTrees).
  static void StartCompile(const TableIndex& index, uint64_t version, bool on_thread, bool with_automata);
  static void FinishCompile(const TableIndex& index);
  // Publishes `fresh` (built from the index at `version`) unless the index changed since; marks `version`
  // too large to compile when `fresh` is nullptr.
  static void PublishTrees(const TableIndex& index, std::unique_ptr<CompiledTrees> fresh, uint64_t version);
  // The writer's, as a change begins: takes the compiled form out of use, judges whether it was worth
  // compiling (quiet_needed_), and retires it.
  static void RetireTrees(TableIndex* index);
  // The writer's, in hw/tree_updates.cc. BeginChange, as the change from `version` begins: the form that
  // serves goes on serving when it stands for `version` and has not kept the walk (upkeep_->maintained),
  // else it is retired. TakeChange takes one change into the maintained form, and logs it for a fold under
  // way; a form that cannot take it is retired and a fold wanted. EndChange, before the index moves to
  // `version` (the change's end): the maintained form stands for it; a fold built is finished (its changes
  // taken in, then published), or one is started when wanted, or when the form gathered too much.
  static void BeginChange(TableIndex* index, uint64_t version);
  static void TakeChange(TableIndex* index, TreeChange::Kind kind, const Entry& e);
  static void EndChange(TableIndex* index, uint64_t version);
  // Counts a change against the pace (TreeUpkeep::kMaxKeptUpRate); true when the window it ends came too
  // fast, as did the one before.
  static bool ChangingTooFast(TreeUpkeep* upkeep);
  // Takes `change` into `form` (published or not); false, having changed nothing, when it cannot. With
  // `placed` (the maintained form's), it starts from where the last change put the same entry, and records
  // where this one leaves it. TakeAt takes it into one slot holding the entry.
  static bool TakeInto(CompiledTrees* form, const TreeChange& change, PlacedEntry* placed);
  static bool TakeIntoTrees(CompiledTrees* form, const TreeChange& change, PlacedEntry* placed);
  static void TakeAt(CompiledTrees* form, const TreeChange& change, CompiledTrees::LeafEntry* e);
  // TakeAt's change of one slot; returns how it changed the count of gone entries (-1, 0 or 1).
  static int TakeAtSlot(const TreeChange& change, CompiledTrees::LeafEntry* e);
  // The automata's part of a form (BuildAutomata in hw/compiled_trees.cc, TakeIntoAutomata in
  // hw/tree_updates.cc): BuildAutomata builds them of the entries built (`sorted`, in rank order) when they
  // fit; TakeIntoAutomata takes a change into them, or stops them serving when it cannot.
  static void BuildAutomata(CompiledTrees* form, const std::vector<CompiledTrees::LeafEntry>& sorted);
  static void TakeIntoAutomata(CompiledTrees* form, const TreeChange& change);
  // Starts a fold at `version` (the writer's, between changes); FinishFold publishes the fold built.
  static void StartFold(TableIndex* index, uint64_t version);
  static void FinishFold(TableIndex* index, uint64_t version);
  // The candidates of queries[0, n) (n <= 32) of `index`, from `compiled`, as CandidatesOf sets them.
  // ScanLeaf takes a packet's (its words `key`, as trie keys) from the `count` entries at `e` (the leaf it
  // reached, or the automata's delta) into its list;
  // TakeIfUnchanged takes an entry it found the packet matches, with rank `rank`, if the entry's matcher
  // word is still `matcher`, as read before the rest (its sequence lock), and returns false once the list
  // overflowed. (TakeIfUnchanged is instrumented: its acquire of the named hit is what a sanitizer sees.)
  static void CandidatesFromTrees(const TableIndex& index, const CompiledTrees& compiled, Query* queries,
                                  size_t n);
  static void ScanLeaf(const CompiledTrees::LeafEntry* e, uint32_t count, const uint32_t* key,
                       CandidateList* list) DRSIM_SEQUENCE_LOCKED_READS;
  // CandidatesFromTrees' way through the automata (while they serve): each packet's leaf, then `delta`;
  // the packets whose leaves may lack candidates go through the trees.
  static void CandidatesFromAutomata(const TableIndex& index, const CompiledTrees& compiled, Query* queries,
                                     size_t n);
  static bool TakeIfUnchanged(const CompiledTrees::LeafEntry& e, uintptr_t matcher, uint64_t rank,
                              CandidateList* list) DRSIM_INLINED_UNLESS_THREAD_SANITIZED;
};

}  // namespace drsim::hw

#endif  // DRSIM_HW_COMPILED_TREES_H_
