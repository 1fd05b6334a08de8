// A TableIndex's compiled form through changes (hw/compiled_trees.h, "Changes as they come"): the writer
// takes each change of the index into the form that serves, and folds what that leaves behind into new
// trees built on a thread of the index's own.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "hw/compiled_trees.h"
#include "hw/reclaimer.h"
#include "hw/table_index.h"
#include "hw/table_index_tries.h"

namespace drsim::hw {
namespace {

// (Templates of the compiled form's type, as in hw/compiled_trees.cc: it is private to the index.)
template <typename Trees>
using Leaves = absl::InlinedVector<uint32_t, Trees::kMaxLeavesPerChange>;

// Whether the form that serves should be folded now: half its room is used by copies of leaves; or a
// quarter is, or half as many entries as it was built with are gone (new entries fill gone ones first, so
// they gather only as the table shrinks), and its fold thread has been idle sixteen times as long as the
// last fold took (so that folds take a seventeenth of a core at most while there is room).
template <typename Trees, typename Upkeep>
bool FoldDue(const Trees& form, const Upkeep& upkeep) {
  const size_t room = form.entries.capacity() - form.built_entries;
  const size_t used = form.entries.size() - form.built_entries;
  if (2 * used >= room) return true;
  if (4 * used < room && 2 * form.gone < form.built_entries) return false;
  return std::chrono::steady_clock::now() - upkeep.last_fold_end >= 16 * upkeep.last_fold_took;
}

// The leaves of the tree at `root` that an entry with `value` and `mask` (trie keys) reaches: at each node,
// every child whose bits it matches (those it does not test take either value). False when there are more
// than `most`.
template <typename Trees, typename LeafEntry = typename Trees::LeafEntry>
bool LeavesReached(const Trees& form, uint32_t root, const LeafEntry& entry, size_t most,
                   Leaves<Trees>* leaves) {
  absl::InlinedVector<uint32_t, 64> stack = {root};
  while (!stack.empty()) {
    const uint32_t at = stack.back();
    stack.pop_back();
    const typename Trees::TreeNode node = form.nodes[at];  // (the writer's own: read plainly)
    if (node.word == Trees::kLeaf) {
      if (leaves->size() == most) return false;
      leaves->push_back(at);
      continue;
    }
    const uint32_t free = node.bits & ~(entry.mask[node.word] >> node.shift);
    const uint32_t bits = entry.value[node.word] >> node.shift & node.bits & ~free;
    for (uint32_t sub = free;; sub = (sub - 1) & free) {
      stack.push_back(node.next + (bits | sub));
      if (sub == 0) break;
    }
  }
  return true;
}

// Where `entry` is in the leaf `leaf` (gone or not), or leaf.next + leaf.bits.
template <typename Trees, typename TreeNode = typename Trees::TreeNode,
          typename LeafEntry = typename Trees::LeafEntry>
uint32_t FindInLeaf(const Trees& form, const TreeNode& leaf, const LeafEntry& entry) {
  uint32_t i = leaf.next;
  while (i < leaf.next + leaf.bits && !form.entries[i].Is(entry)) ++i;
  return i;
}

// Free slots for a copy of a leaf with `live` entries: as many again (so that copies, each twice the last,
// come to a few entries an entry added), at least kCopiedLeafRoom, at most 255.
template <typename Trees>
uint32_t CopyRoom(uint32_t live) {
  return std::min<uint32_t>(255, std::max<uint32_t>(Trees::kCopiedLeafRoom, live));
}

// The leaf's first gone entry, or leaf.next + leaf.bits.
template <typename Trees, typename TreeNode = typename Trees::TreeNode>
uint32_t FirstGoneIn(const Trees& form, const TreeNode& leaf) {
  uint32_t i = leaf.next;
  while (i < leaf.next + leaf.bits && (form.entries[i].matcher & Trees::kGone) == 0) ++i;
  return i;
}

// Fills the gone entry `slot` of a published leaf with `entry`, under a new generation: every field with an
// atomic store, the matcher word last (readers check it before and after they read the rest).
template <typename Trees, typename LeafEntry = typename Trees::LeafEntry>
void FillGone(LeafEntry* slot, const LeafEntry& entry) {
  const uintptr_t generation = (slot->matcher >> Trees::kGenerationShift) + 1;
  std::atomic_thread_fence(std::memory_order_release);
  for (int k = 0; k < TableIndex::kWords; ++k) {
    __atomic_store_n(&slot->value[k], entry.value[k], __ATOMIC_RELAXED);
    __atomic_store_n(&slot->mask[k], entry.mask[k], __ATOMIC_RELAXED);
  }
  __atomic_store_n(&slot->rank, entry.rank, __ATOMIC_RELAXED);
  __atomic_store_n(&slot->hit, entry.hit, __ATOMIC_RELAXED);
  __atomic_store_n(&slot->matcher, (entry.matcher & Trees::kTagged) | generation << Trees::kGenerationShift,
                   __ATOMIC_RELEASE);
}

// The entries a copy of the leaf at `at` with one entry more takes at the end of the form's entries, its free
// slots included, when adding an entry to it needs one: when it has no gone entry and no free slot (else 0).
template <typename Trees, typename TreeNode = typename Trees::TreeNode>
uint32_t CopyToAddTo(const Trees& form, uint32_t at) {
  const TreeNode leaf = form.nodes[at];
  if (form.leaf_room[at] > 0 || FirstGoneIn(form, leaf) < leaf.next + leaf.bits) return 0;
  return leaf.bits + 1 + CopyRoom<Trees>(leaf.bits + 1);
}

// Adds `entry` to the leaf at `at`: in a gone entry's slot, else its next free slot, else a copy with more
// free slots (CopyToAddTo; the room for it was checked). A leaf's node changes by at most one store, which
// lowers its rank bucket to the entry's (`entry_bucket`, RankBucketOf its rank) when that is lower: before a
// gone slot is filled, and with the count that takes a new slot in. Returns the entry's slot.
template <typename Trees, typename TreeNode = typename Trees::TreeNode,
          typename LeafEntry = typename Trees::LeafEntry>
uint32_t AddToLeaf(Trees* form, uint32_t at, const LeafEntry& entry, uint8_t entry_bucket) {
  const TreeNode old = form->nodes[at];
  const uint8_t bucket = std::min(old.shift, entry_bucket);
  if (const uint32_t gone = FirstGoneIn(*form, old); gone < old.next + old.bits) {
    if (bucket != old.shift) {
      TreeNode lowered = {old.next, Trees::kLeaf, bucket, old.bits};  // (not const: clang's __atomic_store)
      __atomic_store(&form->nodes[at], &lowered, __ATOMIC_RELEASE);
    }
    FillGone<Trees>(&form->entries[gone], entry);
    --form->gone;
    return gone;
  }
  TreeNode fresh;
  uint8_t& room = form->leaf_room[at];
  if (room > 0) {
    // (No reader reads past the leaf's count: the slot is the writer's until the node counts it.)
    form->entries[old.next + old.bits] = entry;
    fresh = {old.next, Trees::kLeaf, bucket, static_cast<uint16_t>(old.bits + 1)};
    --room;
  } else {
    const auto next = static_cast<uint32_t>(form->entries.size());
    for (uint32_t i = old.next; i < old.next + old.bits; ++i) form->entries.push_back(form->entries[i]);
    form->entries.push_back(entry);
    const auto count = static_cast<uint32_t>(form->entries.size() - next);
    room = static_cast<uint8_t>(CopyRoom<Trees>(count));
    form->entries.resize(form->entries.size() + room);
    fresh = {next, Trees::kLeaf, bucket, static_cast<uint16_t>(count)};
  }
  __atomic_store(&form->nodes[at], &fresh, __ATOMIC_RELEASE);
  return fresh.next + fresh.bits - 1;
}

}  // namespace

bool TableIndex::TreeCompiler::TakeInto(CompiledTrees* form, const TreeChange& change, PlacedEntry* placed) {
  if (!TakeIntoTrees(form, change, placed)) return false;
  TakeIntoAutomata(form, change);
  return true;
}

void TableIndex::TreeCompiler::TakeIntoAutomata(CompiledTrees* form, const TreeChange& change) {
  if (!form->automata_serve.load(std::memory_order_relaxed)) return;
  const CompiledTrees::LeafEntry& entry = change.entry;
  if (const auto built = form->answer_of.find(CompiledTrees::AnswerKey::Of(entry));
      built != form->answer_of.end()) {
    TakeAtSlot(change, &form->answers[built->second]);
    return;
  }
  const uint32_t count = form->delta_count.load(std::memory_order_relaxed);
  uint32_t gone = count;
  for (uint32_t i = 0; i < count; ++i) {
    CompiledTrees::LeafEntry& slot = form->delta[i];
    if (slot.Is(entry)) {
      TakeAtSlot(change, &slot);
      return;
    }
    if (gone == count && (slot.matcher & CompiledTrees::kGone) != 0) gone = i;
  }
  if (change.kind != TreeChange::kAdd) return;  // (not in the automata: nothing to change)
  if (gone < count) {
    FillGone<CompiledTrees>(&form->delta[gone], entry);
  } else if (count < CompiledTrees::kDeltaEntries) {
    // (No reader reads past the count: the slot is the writer's until the count takes it in.)
    form->delta[count] = entry;
    form->delta_count.store(count + 1, std::memory_order_release);
  } else {
    form->automata_serve.store(false, std::memory_order_release);
  }
}

bool TableIndex::TreeCompiler::TakeIntoTrees(CompiledTrees* form, const TreeChange& change,
                                             PlacedEntry* placed) {
  using TreeNode = CompiledTrees::TreeNode;
  const CompiledTrees::LeafEntry& entry = change.entry;
  // The entry's slots, as the change before left them when it was this entry's (a rule's hit dropped
  // before it goes, named after it came, or its key put back): no walk down the trees.
  if (placed != nullptr && placed->form == form && placed->entry.Is(entry) &&
      (placed->complete || change.kind != TreeChange::kAdd)) {
    for (const uint32_t i : placed->slots) TakeAt(form, change, &form->entries[i]);
    return true;
  }
  if (placed != nullptr) placed->form = nullptr;
  const unsigned group = CompiledTrees::GroupOf(entry.mask);
  int tree = form->tree_of_group[group];
  if (tree < 0) {
    if (change.kind != TreeChange::kAdd) return true;  // (no entry of its group is in the trees)
    // A tree for the group: one empty leaf, published by the count.
    const uint32_t count = form->tree_count.load(std::memory_order_relaxed);
    if (form->nodes.size() == form->nodes.capacity() || count == CompiledTrees::kGroups) return false;
    const auto root = static_cast<uint32_t>(form->nodes.size());
    form->nodes.push_back({static_cast<uint32_t>(form->entries.size()), CompiledTrees::kLeaf,
                           CompiledTrees::kEmptyLeafBucket, 0});
    form->leaf_room.push_back(0);
    form->trees[count] = {root, entry.rank};
    tree = static_cast<int>(count);
    form->tree_of_group[group] = static_cast<int8_t>(tree);
    form->tree_count.store(count + 1, std::memory_order_release);
  }
  CompiledTrees::Tree& into = form->trees[tree];
  Leaves<CompiledTrees> leaves;
  const size_t most = change.kind == TreeChange::kAdd ? CompiledTrees::kMaxLeavesPerChange : SIZE_MAX;
  if (!LeavesReached(*form, into.root, entry, most, &leaves)) return false;
  // Where the entry is in each leaf (gone or not), or the leaf's end.
  absl::InlinedVector<uint32_t, 8> found;
  bool everywhere = true;
  for (const uint32_t at : leaves) {
    const TreeNode leaf = form->nodes[at];
    found.push_back(FindInLeaf(*form, leaf, entry));
    everywhere &= found.back() < leaf.next + leaf.bits;
  }
  if (change.kind == TreeChange::kAdd && !everywhere) {
    // An entry published into leaves that lack it: first whether the copies of full leaves fit, so that a
    // form that cannot take it is left as it was.
    size_t room = 0;
    for (size_t l = 0; l < leaves.size(); ++l) {
      const TreeNode leaf = form->nodes[leaves[l]];
      if (found[l] < leaf.next + leaf.bits) continue;
      const uint32_t copy = CopyToAddTo(*form, leaves[l]);
      if (copy > 0xffff) return false;
      room += copy;
    }
    if (form->entries.capacity() - form->entries.size() < room) return false;
    if (entry.rank < into.least) __atomic_store_n(&into.least, entry.rank, __ATOMIC_RELAXED);
    const uint8_t entry_bucket = form->RankBucketOf(entry.rank);  // (once, for every leaf it goes into)
    for (size_t l = 0; l < leaves.size(); ++l) {
      const TreeNode leaf = form->nodes[leaves[l]];
      if (found[l] == leaf.next + leaf.bits) found[l] = AddToLeaf(form, leaves[l], entry, entry_bucket);
    }
    everywhere = true;
  }
  std::vector<uint32_t> slots;
  for (size_t l = 0; l < leaves.size(); ++l) {
    const TreeNode leaf = form->nodes[leaves[l]];
    if (found[l] >= leaf.next + leaf.bits) continue;
    TakeAt(form, change, &form->entries[found[l]]);
    if (placed != nullptr) slots.push_back(found[l]);
  }
  if (placed != nullptr) *placed = {form, entry, std::move(slots), everywhere};
  return true;
}

void TableIndex::TreeCompiler::TakeAt(CompiledTrees* form, const TreeChange& change,
                                      CompiledTrees::LeafEntry* e) {
  const int gone = TakeAtSlot(change, e);
  if (gone > 0) ++form->gone;
  if (gone < 0) --form->gone;
}

int TableIndex::TreeCompiler::TakeAtSlot(const TreeChange& change, CompiledTrees::LeafEntry* e) {
  switch (change.kind) {
    case TreeChange::kNameHit:
      if (e->hit != change.entry.hit) __atomic_store_n(&e->hit, change.entry.hit, __ATOMIC_RELEASE);
      return 0;
    case TreeChange::kRemove:
      if ((e->matcher & CompiledTrees::kGone) != 0) return 0;
      __atomic_store_n(&e->matcher, e->matcher | CompiledTrees::kGone, __ATOMIC_RELEASE);
      return 1;
    case TreeChange::kAdd:
      // (Its hit before it is live again; one just filled has both.)
      if (e->hit != change.entry.hit) __atomic_store_n(&e->hit, change.entry.hit, __ATOMIC_RELEASE);
      if ((e->matcher & CompiledTrees::kGone) == 0) return 0;
      __atomic_store_n(&e->matcher, e->matcher & ~CompiledTrees::kGone, __ATOMIC_RELEASE);
      return -1;
  }
  return 0;
}

void TableIndex::TreeCompiler::BeginChange(TableIndex* index, uint64_t version) {
  TreeUpkeep& upkeep = *index->upkeep_;
  upkeep.maintained = nullptr;
  const CompiledTrees* form = index->compiled_.load(std::memory_order_relaxed);
  if (form == nullptr) return;
  // (A form that kept the walk is not worth keeping up; one published while a change was under way missed
  // it.)
  if (form->version.load(std::memory_order_relaxed) == version &&
      form->method.load(std::memory_order_relaxed) != CompiledTrees::kWalk && !ChangingTooFast(&upkeep)) {
    // Only the writer retires a form that is there (readers publish only where none is): it is the writer's
    // to change.
    upkeep.maintained = const_cast<CompiledTrees*>(form);
    return;
  }
  upkeep.placed.form = nullptr;
  RetireTrees(index);
}

bool TableIndex::TreeCompiler::ChangingTooFast(TreeUpkeep* upkeep) {
  if (++upkeep->window_changes < TreeUpkeep::kRateWindow) return false;
  const auto now = std::chrono::steady_clock::now();
  const bool fast =
      now - upkeep->window_start <
      std::chrono::duration<double>(double{TreeUpkeep::kRateWindow} / TreeUpkeep::kMaxKeptUpRate);
  upkeep->window_start = now;
  upkeep->window_changes = 0;
  const bool too_fast = fast && upkeep->last_window_fast;
  upkeep->last_window_fast = fast;
  if (too_fast) ++upkeep->busy_retirements;
  return too_fast;
}

void TableIndex::TreeCompiler::TakeChange(TableIndex* index, TreeChange::Kind kind, const Entry& e) {
  TreeUpkeep& upkeep = *index->upkeep_;
  const bool logged = upkeep.job != nullptr && !upkeep.dropped;
  if (upkeep.maintained == nullptr && !logged) return;
  const TreeChange change{kind, CompiledTrees::LeafEntryOf(*index, e)};
  if (logged) {
    if (upkeep.changes.size() < TreeUpkeep::kMaxFoldChanges) {
      upkeep.changes.push_back(change);
    } else {
      upkeep.dropped = true;  // (the fold is dropped once built)
      std::vector<TreeChange>().swap(upkeep.changes);
    }
  }
  if (upkeep.maintained == nullptr || TakeInto(upkeep.maintained, change, &upkeep.placed)) return;
  // Too wide, or no room: the form goes (judged as nothing: it did not fail at lookups), and a fold is
  // wanted.
  ++upkeep.overflows;
  upkeep.maintained = nullptr;
  upkeep.placed.form = nullptr;
  const CompiledTrees* old = index->compiled_.exchange(nullptr, std::memory_order_acq_rel);
  Retire(index->reclaimer_, [old] { delete old; });
  upkeep.fold_wanted.store(true, std::memory_order_relaxed);
}

void TableIndex::TreeCompiler::EndChange(TableIndex* index, uint64_t version) {
  TreeUpkeep& upkeep = *index->upkeep_;
  if (upkeep.maintained != nullptr) {
    upkeep.maintained->version.store(version, std::memory_order_release);
    upkeep.maintained = nullptr;
  }
  if (upkeep.job != nullptr) {
    if (upkeep.built.load(std::memory_order_acquire)) FinishFold(index, version);
    return;
  }
  const CompiledTrees* form = index->compiled_.load(std::memory_order_relaxed);
  const bool wanted =
      form == nullptr ? upkeep.fold_wanted.load(std::memory_order_relaxed)
                      : form->version.load(std::memory_order_relaxed) == version && FoldDue(*form, upkeep);
  if (wanted) StartFold(index, version);
}

void TableIndex::TreeCompiler::StartFold(TableIndex* index, uint64_t version) {
  TreeUpkeep& upkeep = *index->upkeep_;
  upkeep.fold_wanted.store(false, std::memory_order_relaxed);
  upkeep.formless_lookups.store(0, std::memory_order_relaxed);
  auto job = std::make_unique<CompileJob>();
  job->version = version;
  // (The writer's own tries, read between changes: the entries as they are at `version`.)
  if (!CompiledTrees::CollectEntries(*index, &job->filed)) {
    // Too large to compile: the next want comes four times later.
    const uint64_t needed = index->quiet_needed_.load(std::memory_order_relaxed);
    index->quiet_needed_.store(std::min(4 * needed, kMaxQuietLookups), std::memory_order_relaxed);
    return;
  }
  upkeep.changes.clear();
  upkeep.dropped = false;
  upkeep.built.store(false, std::memory_order_relaxed);
  upkeep.job = std::move(job);
  auto build = [&upkeep, job = upkeep.job.get()] {
    const auto start = std::chrono::steady_clock::now();
    job->built = CompiledTrees::Build(std::move(job->filed), job->version, /*with_automata=*/false);
    job->took = std::chrono::steady_clock::now() - start;
    upkeep.built.store(true, std::memory_order_release);
  };
  try {
    upkeep.thread = std::thread(build);
    return;
  } catch (const std::system_error&) {  // (no thread to be had: built here)
  }
  build();
  FinishFold(index, version);
}

void TableIndex::TreeCompiler::FinishFold(TableIndex* index, uint64_t version) {
  TreeUpkeep& upkeep = *index->upkeep_;
  if (upkeep.thread.joinable()) upkeep.thread.join();
  std::unique_ptr<CompiledTrees> fresh = std::move(upkeep.job->built);
  upkeep.last_fold_took = upkeep.job->took;
  upkeep.last_fold_end = std::chrono::steady_clock::now();
  upkeep.job.reset();
  bool taken = fresh != nullptr && !upkeep.dropped;
  for (size_t i = 0; taken && i < upkeep.changes.size(); ++i)
    taken = TakeInto(fresh.get(), upkeep.changes[i], nullptr);
  upkeep.changes.clear();
  if (!taken) {
    // Too large, too wide or too busy to fold: the next want comes four times later.
    const uint64_t needed = index->quiet_needed_.load(std::memory_order_relaxed);
    index->quiet_needed_.store(std::min(4 * needed, kMaxQuietLookups), std::memory_order_relaxed);
    return;
  }
  // A fold of a form whose trees or automata won their trial keeps trees without a trial of its own (a
  // fold's form has no automata).
  const CompiledTrees* old = index->compiled_.load(std::memory_order_relaxed);
  if (old != nullptr && CompiledTrees::ByForm(old->method.load(std::memory_order_relaxed)))
    fresh->method.store(CompiledTrees::kTrees, std::memory_order_relaxed);
  fresh->version.store(version, std::memory_order_relaxed);
  upkeep.placed.form = nullptr;  // (the old form's slots; its memory may hold the next form)
  old = index->compiled_.exchange(fresh.release(), std::memory_order_acq_rel);
  if (old != nullptr) Retire(index->reclaimer_, [old] { delete old; });
  upkeep.formless_lookups.store(0, std::memory_order_relaxed);
  ++upkeep.folds;
  upkeep.fold_time += upkeep.last_fold_took;
}

TableIndex::TreeUpkeepCounts TableIndex::tree_upkeep() const {
  return {upkeep_->folds, upkeep_->overflows, upkeep_->busy_retirements,
          std::chrono::duration<double>(upkeep_->fold_time).count()};
}

}  // namespace drsim::hw
