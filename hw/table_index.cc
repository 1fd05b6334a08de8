// A TableIndex's tries (hw/table_index_tries.h): choosing its words, filing and removing entries as rules
// come and go, and walking the tries for a burst's candidates.
#include "hw/table_index.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cassert>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "hw/compiled_trees.h"
#include "hw/definer.h"
#include "hw/flow_table.h"
#include "hw/reclaimer.h"
#include "hw/table_index_tries.h"

namespace drsim::hw {

using table_index_internal::HostOrder;
using table_index_internal::kNodeLines;
using table_index_internal::kScan;
using table_index_internal::kShortcutBits;
using table_index_internal::kStepKind;
using table_index_internal::kStrideBits;
using table_index_internal::kVisit;
using table_index_internal::PrefixMask;

namespace {

// The deepest node branches on nothing: its depth covers 30 bits, and the entries it holds differ at most in
// the last two, which their masks compare.
constexpr int kMaxDepth = 32 / kStrideBits;

// The serial of the last index made (TableIndex::Filing).
std::atomic<uint64_t> last_index_serial{0};

// How many of `mask`'s most significant bits (memory-order word) are set before the first clear one.
int LeadingOnes(uint32_t mask) {
  const uint32_t host = HostOrder(mask);
  return host == 0xffffffffu ? 32 : __builtin_clz(~host);
}

// The nibble of `host` a trie node at `depth` branches on.
unsigned Nibble(uint32_t host, int depth) {
  return host >> (32 - kStrideBits * (depth + 1)) & ((1u << kStrideBits) - 1);
}

// The slot of `state`'s item whose entry is filed with `value` (its rules live, or it dormant), or
// state.items: AddRule takes that item, and a walk ahead (StartFiling) has nothing to walk to.
size_t FindFiledItem(const TableIndex::MatcherState& state, const TableIndex::Values& value) {
  size_t i = 0;
  while (i < state.items && (state.item[i].node == nullptr || state.item[i].value != value)) ++i;
  return i;
}

}  // namespace

// A change to the index (one writer): odd version while it lasts (a sequence lock for compilers), taken into
// the compiled form that serves, or the form retired (hw/tree_updates.cc).
class TableIndex::ChangeGuard {
 public:
  explicit ChangeGuard(TableIndex* index)
      : index_(index), version_(index->version_.load(std::memory_order_relaxed)) {
    index_->version_.store(version_ + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    TreeCompiler::BeginChange(index_, version_);
  }
  ~ChangeGuard() {
    TreeCompiler::EndChange(index_, version_ + 2);
    index_->version_.store(version_ + 2, std::memory_order_release);
  }
  ChangeGuard(const ChangeGuard&) = delete;
  ChangeGuard& operator=(const ChangeGuard&) = delete;

 private:
  TableIndex* index_;
  uint64_t version_;
};

TableIndex::TableIndex(absl::Span<const CompiledMatcher* const> matchers, Reclaimer* reclaimer)
    : words_(ChooseWords(matchers)),
      word_reads_([this] {
        std::array<Definer::Word, kWords> reads;
        for (int k = 0; k < kWords; ++k) {
          const Word& w = words_[k];
          reads[k] = w.used ? Definer::Word{w.offset, w.fold_from, 0xffffffffu} : Definer::Word{0, 0, 0};
        }
        return reads;
      }()),
      rotated_lanes_([this] {
        std::array<uint32_t, kWords> lanes;
        for (int k = 0; k < kWords; ++k) lanes[k] = words_[k].rotate == 16 ? ~uint32_t{0} : 0;
        return lanes;
      }()),
      serial_(last_index_serial.fetch_add(1, std::memory_order_relaxed) + 1),
      chain_first_(static_cast<int>(std::min<size_t>(kChainFirst, matchers.size() / kChainShare))),
      reclaimer_(reclaimer),
      nodes_(std::make_unique<NodeArena>()),
      prefix_pairs_(std::make_unique<PrefixPairMap>()),
      upkeep_(std::make_unique<TreeUpkeep>()) {}

size_t TableIndex::nodes() const { return nodes_->count; }

TableIndex::~TableIndex() {
  if (compiler_thread_.joinable()) compiler_thread_.join();
  if (upkeep_->thread.joinable()) upkeep_->thread.join();
  delete shortcuts_.load(std::memory_order_relaxed);
  delete compiled_.load(std::memory_order_relaxed);
  for (const NodeArena::Chunk& c : nodes_->chunks) {
    for (size_t i = 0; i < c.used; ++i) Slots::Free(c.nodes[i].slots.load(std::memory_order_relaxed));
  }
}

TableIndex::Node* TableIndex::MakeNode(uint32_t prefix, int depth, int level, Node* up, Node* owner) {
  static_assert(sizeof(Node) == kNodeLines * 64, "a walk prefetches a node's kNodeLines lines");
  static_assert(std::is_trivially_destructible_v<Node>, "a node's memory is used again as it is");
  return new (nodes_->Allocate(reclaimer_)) Node(prefix & PrefixMask(depth), depth, level, up, owner);
}

int TableIndex::TrieDepth(int i, uint32_t mask) const {
  if (!words_[i].used) return 0;
  const uint32_t key = TrieKey(i, mask);
  return (key == 0xffffffffu ? 32 : __builtin_clz(~key)) / kStrideBits;
}

std::array<TableIndex::Word, TableIndex::kWords> TableIndex::ChooseWords(
    absl::Span<const CompiledMatcher* const> matchers) {
  struct Score {
    uint64_t prefix_bits[2] = {};  // leading mask bits, read as is and rotated by 16
    uint64_t mask_bits = 0;
  };
  std::map<std::pair<uint16_t, uint16_t>, Score> scores;  // by (offset, fold_from): ordered, deterministic
  for (const CompiledMatcher* m : matchers) {
    for (size_t i = 0; i < m->definer.key_words(); ++i) {
      const Definer::Word w = m->definer.word(i);
      Score& s = scores[{w.offset, w.fold_from}];
      const uint32_t host = HostOrder(w.mask);
      s.prefix_bits[0] += LeadingOnes(w.mask);
      s.prefix_bits[1] += LeadingOnes(HostOrder(host << 16 | host >> 16));
      s.mask_bits += __builtin_popcount(w.mask);
    }
  }
  std::array<Word, kWords> words{};
  // Picks the word scoring highest by `score` (> 0) not picked yet (the lowest offset of equals), if any.
  auto pick = [&](auto score, Word* out) {
    auto best = scores.end();
    for (auto it = scores.begin(); it != scores.end(); ++it) {
      if (score(it->second) > 0 && (best == scores.end() || score(it->second) > score(best->second)))
        best = it;
    }
    if (best == scores.end()) return;
    const Score& s = best->second;
    *out = {best->first.first, best->first.second, true,
            static_cast<uint8_t>(s.prefix_bits[1] > s.prefix_bits[0] ? 16 : 0)};
    scores.erase(best);
  };
  auto prefix = [](const Score& s) { return std::max(s.prefix_bits[0], s.prefix_bits[1]); };
  for (int i = 0; i < kWords; ++i) {
    pick(prefix, &words[i]);
    if (!words[i].used) pick([](const Score& s) { return s.mask_bits; }, &words[i]);  // (only filters)
  }
  return words;
}

void TableIndex::AddMatcher(const CompiledMatcher* matcher, MatcherState* state) {
  *state = MatcherState{};
  state->matcher = matcher;
  state->rank = LookupRank(*matcher);
  size_t covered = 0;  // key words among the index words
  for (int i = 0; i < kWords; ++i) {
    state->position[i] = -1;
    if (!words_[i].used) continue;
    for (size_t k = 0; k < matcher->definer.key_words(); ++k) {
      const Definer::Word w = matcher->definer.word(k);
      if (w.offset == words_[i].offset && w.fold_from == words_[i].fold_from) {
        state->position[i] = static_cast<int8_t>(k);
        state->mask[i] = w.mask;
        ++covered;
      }
    }
  }
  state->exact = covered == matcher->definer.key_words();
}

void TableIndex::RemoveMatcher(MatcherState* state) {
  const ChangeGuard change(this);
  broad_with_items_.erase(std::remove(broad_with_items_.begin(), broad_with_items_.end(), state),
                          broad_with_items_.end());
  if (state->broad) RemoveAt(state->broad_item);
  DropItems(state);
  state->broad = false;
}

TableIndex::Values TableIndex::ValuesOf(const MatcherState& state, const uint32_t* key) {
  Values value{};
  for (int i = 0; i < kWords; ++i) value[i] = state.position[i] < 0 ? 0 : key[state.position[i]];
  return value;
}

TableIndex::Item* TableIndex::FindItem(MatcherState* state, const Values& value) {
  for (size_t i = 0; i < state->items; ++i) {
    if (state->item[i].rules != 0 && state->item[i].value == value) return &state->item[i];
  }
  return nullptr;
}

TableIndex::Item* TableIndex::AddRule(MatcherState* state, const uint32_t* key) {
  const ChangeGuard change(this);
  if (!broad_with_items_.empty()) DropItemsOfBroadMatchers();
  if (state->broad) return nullptr;
  const Values value = ValuesOf(*state, key);
  if (const size_t filed = FindFiledItem(*state, value); filed < state->items) {
    Item& at = state->item[filed];
    if (at.rules++ == 0) {
      // Published again as it was filed (its matcher word is the last a reader checks), no hit named.
      at.entry->hit.store(nullptr, std::memory_order_relaxed);
      at.entry->matcher.store(TagMatcher(state->matcher, state->exact), std::memory_order_release);
      ++entries_;
      TreeCompiler::TakeChange(this, TreeChange::kAdd, *at.entry);
    }
    return &at;
  }
  // New values: the rules of the dormant entries are not coming back (an update would have put them back
  // first), and their slots go to others. The new values' pair and the dormant entries' nodes and arrays
  // load meanwhile (a rule whose key moved: each is the start of a chain of misses); once the pair is in,
  // so do the lines its entry will go to, while the dormant entries go.
  const PrefixPair pair = PrefixPair::Of(*this, value, state->mask);
  prefix_pairs_->locations.Request(pair);
  for (size_t i = 0; i < state->items; ++i) {
    if (state->item[i].rules == 0) RequestItem(&state->item[i]);
  }
  RequestFiled(pair);
  Item* item = nullptr;
  for (size_t i = 0; i < state->items; ++i) {
    Item& at = state->item[i];
    if (at.rules != 0) continue;
    if (at.node != nullptr) {
      RemoveAt(at);
      at.node = nullptr;
    }
    if (item == nullptr) item = &at;
  }
  if (item == nullptr) {
    if (state->items == kMaxEntriesPerMatcher) {
      MakeMatcherBroad(state);
      return nullptr;
    }
    item = &state->item[state->items++];
  }
  item->value = value;
  item->rules = 1;
  FileEntry(item, pair, state->mask, state->rank, TagMatcher(state->matcher, state->exact));
  TreeCompiler::TakeChange(this, TreeChange::kAdd, *item->entry);
  return item;
}

void TableIndex::RemoveRule(Item* item) {
  const ChangeGuard change(this);
  if (!broad_with_items_.empty()) DropItemsOfBroadMatchers();
  // (A broad matcher's items are shed once readers are past them: then none is in the index.)
  if (item == nullptr || item->node == nullptr || --item->rules > 0) return;
  // Dormant: readers skip it as they skip a hole.
  TreeCompiler::TakeChange(this, TreeChange::kRemove, *item->entry);
  item->entry->matcher.store(0, std::memory_order_release);
  --entries_;
}

void TableIndex::NameHit(MatcherState* state, const Item* item, const RuleRecord* hit) {
  if (!state->exact || state->broad || item == nullptr || item->rules != 1) return;
  // A compiled form names it too: a change.
  const ChangeGuard change(this);
  item->entry->hit.store(hit, std::memory_order_release);
  TreeCompiler::TakeChange(this, TreeChange::kNameHit, *item->entry);
}

void TableIndex::DropHit(const Item* item, const RuleRecord* hit) {
  // (A broad matcher's entries stay a while, named hits with them: DropItemsOfBroadMatchers. An entry that is
  // not exact names none.)
  if (item == nullptr || item->node == nullptr) return;
  std::atomic<const RuleRecord*>& named = item->entry->hit;
  if (named.load(std::memory_order_relaxed) != hit) return;
  // A compiled form holds the hits its entries named: a change, so that none serves it past here.
  const ChangeGuard change(this);
  named.store(nullptr, std::memory_order_release);
  TreeCompiler::TakeChange(this, TreeChange::kNameHit, *item->entry);
}

void TableIndex::RequestItem(const Item* item) {
  if (item == nullptr || item->node == nullptr) return;
  __builtin_prefetch(item->node);
  __builtin_prefetch(Slots::Holding(*item));
  __builtin_prefetch(item->entry);
}

const TableIndex::Node* TableIndex::RequestFiled(const PrefixPair& pair) const {
  const PrefixPairMap::Location* filed = prefix_pairs_->locations.Find(pair);
  if (filed == nullptr) return nullptr;
  filed->Request();
  return filed->word1;
}

void TableIndex::StartFiling(const MatcherState& state, const uint32_t* key, Filing* filing) const {
  filing->serial = 0;
  // Nothing to walk for a broad matcher, or for values one of its items holds (AddRule takes that item).
  if (state.broad) return;
  const Values value = ValuesOf(state, key);
  if (FindFiledItem(state, value) < state.items) return;
  for (int i = 0; i < kWords; ++i) {
    filing->key[i] = TrieKey(i, value[i]);
    filing->depth[i] = static_cast<uint8_t>(TrieDepth(i, state.mask[i]));
  }
  prefix_pairs_->locations.Request(PrefixPair::Of(*filing));
  filing->level = 0;
  filing->node = nullptr;
  filing->serial = serial_;
}

bool TableIndex::ContinueFiling(Filing* filing) const {
  if (filing->serial != serial_) return false;
  filing->serial = 0;  // (done, unless a next node is requested below)
  int level = filing->level;
  const Node* next;
  if (filing->node == nullptr) {
    // The pair's slot is in: its node, or a new pair's way down from the word-0 trie's shortcuts.
    next = RequestFiled(PrefixPair::Of(*filing));
    level = 1;
    if (next == nullptr) {
      level = 0;
      next = root_.load(std::memory_order_relaxed);
      const ShortcutTable* shortcuts = shortcuts_.load(std::memory_order_relaxed);
      if (shortcuts != nullptr && filing->depth[0] >= kShortcutStrides)
        next =
            shortcuts->cell[filing->key[0] >> (32 - kShortcutBits)].reached.load(std::memory_order_relaxed);
    }
  } else {
    // The node requested last is in (it may have been let go and used again meanwhile: then the walk ends).
    const Node& at = *filing->node;
    const uint32_t key = filing->key[level];
    const int depth = filing->depth[level];
    if (at.level != level || at.depth > depth ||
        ((key ^ at.prefix) & PrefixMask(std::min<int>(depth, at.depth))) != 0)
      return false;  // (AddRule makes a node here)
    if (at.depth < depth) {
      next = at.child[Nibble(key, at.depth)].load(std::memory_order_relaxed);
    } else if ((level == 0 || at.fat) && level + 1 < kWords) {
      next = at.sub.load(std::memory_order_relaxed);
      ++level;
    } else {
      __builtin_prefetch(at.slots.load(std::memory_order_relaxed));  // the node the entry goes to
      return false;
    }
  }
  if (next == nullptr) return false;
  for (int l = 0; l < kNodeLines; ++l) __builtin_prefetch(reinterpret_cast<const char*>(next) + 64 * l);
  filing->node = next;
  filing->level = static_cast<uint8_t>(level);
  filing->serial = serial_;
  return true;
}

void TableIndex::MakeMatcherBroad(MatcherState* state) {
  constexpr std::array<uint32_t, kWords> kNone{};
  state->broad_item = Item{};
  FileEntry(&state->broad_item, PrefixPair::Of(*this, state->broad_item.value, kNone), kNone, state->rank,
            TagMatcher(state->matcher, false));
  TreeCompiler::TakeChange(this, TreeChange::kAdd, *state->broad_item.entry);
  state->broad = true;
  // Its other entries go once no reader can have passed where the broad entry went before it was there.
  if (reclaimer_ == nullptr) {
    DropItems(state);
    return;
  }
  state->broad_since = reclaimer_->Stamp();
  broad_with_items_.push_back(state);
}

void TableIndex::DropItems(MatcherState* state) {
  for (size_t i = 0; i < state->items; ++i) {
    Item& item = state->item[i];
    if (item.node != nullptr) RemoveAt(item);
    item.rules = 0;
    item.node = nullptr;
  }
  state->items = 0;
}

void TableIndex::DropItemsOfBroadMatchers() {
  size_t done = 0;
  while (done < broad_with_items_.size() && reclaimer_->Safe(broad_with_items_[done]->broad_since))
    DropItems(broad_with_items_[done++]);
  broad_with_items_.erase(broad_with_items_.begin(), broad_with_items_.begin() + done);
}

void TableIndex::FileEntry(Item* item, const PrefixPair& key, const std::array<uint32_t, kWords>& mask,
                           uint64_t rank, uintptr_t matcher) {
  PrefixPairMap::Location& pair = prefix_pairs_->locations.At(key);
  if (pair.word1 == nullptr) {
    pair.word0 = FindOrMakeNode(nullptr, &root_, key.key0, key.depths >> 8, 0);
    pair.word1 = FindOrMakeNode(pair.word0, &pair.word0->sub, key.key1, key.depths & 0xff, 1);
  }
  // Each node the entry is under as one of its own (a sub-trie's) bounds its rank before it is published.
  if (rank < pair.word0_least) {
    pair.word0->LowerLeast(rank);
    pair.word0_least = rank;
  }
  Node* node = pair.word1;
  while (node->fat) {
    node->LowerLeast(rank);
    const int next = node->level + 1;
    node =
        FindOrMakeNode(node, &node->sub, TrieKey(next, item->value[next]), TrieDepth(next, mask[next]), next);
  }
  AddToSlots(node, item, mask, rank, matcher, nullptr);
  if (node->level + 1 < kWords && words_[node->level + 1].used && Slots::Holding(*item)->live > kFatNode)
    SplitToSubTrie(node);
  const Slots* slots = pair.word1->slots.load(std::memory_order_relaxed);
  pair.word1_slots = slots;
  pair.word1_next = nullptr;
  if (slots != nullptr) {
    const uint32_t next = slots->first_hole != Slots::kNoHole ? slots->first_hole
                                                              : slots->count.load(std::memory_order_relaxed);
    if (next < slots->capacity) pair.word1_next = &slots->entries()[next];
  }
}

void TableIndex::SplitToSubTrie(Node* node) {
  // The entries are filed again under the new trie before it is linked (a reader sees them there or here,
  // or both: candidates are deduplicated), and only then is the node's slot array let go (its `least` bounds
  // them still).
  const int next = node->level + 1;
  std::atomic<Node*> sub{nullptr};
  Slots* slots = node->slots.load(std::memory_order_relaxed);
  const uint32_t count = slots->count.load(std::memory_order_relaxed);
  for (uint32_t i = 0; i < count; ++i) {
    Item* item = slots->ItemAt(i);
    if (item == nullptr) continue;
    const Entry& e = slots->entries()[i];
    const std::array<uint32_t, kWords> mask = e.Masks();
    AddToSlots(
        FindOrMakeNode(node, &sub, TrieKey(next, item->value[next]), TrieDepth(next, mask[next]), next), item,
        mask, e.rank.load(std::memory_order_relaxed), e.matcher.load(std::memory_order_relaxed),
        e.hit.load(std::memory_order_relaxed));
  }
  node->sub.store(sub.load(std::memory_order_relaxed), std::memory_order_release);
  node->fat = true;
  entries_ -= slots->live;
  node->slots.store(nullptr, std::memory_order_release);
  Retire(reclaimer_, [slots] { Slots::Free(slots); });
}

TableIndex::Node* TableIndex::FindOrMakeNode(Node* owner, std::atomic<Node*>* link, uint32_t key, int depth,
                                             int level) {
  Node* above = owner;   // the node whose link `link` is
  int above_depth = -1;  // its depth, or -1 at a trie's top
  // A node linked above the shortcuts' depth in the word-0 trie changes them.
  auto linked = [&](int linked_depth) {
    if (level == 0 && above_depth < kShortcutStrides)
      RefreshShortcuts(key, std::min(linked_depth, kShortcutStrides));
  };
  for (;;) {
    Node* next = link->load(std::memory_order_relaxed);
    if (next == nullptr) {  // a leaf for the prefix
      Node* leaf = MakeNode(key, depth, level, above, owner);
      if (above != owner) ++above->children;
      link->store(leaf, std::memory_order_release);
      linked(depth);
      return leaf;
    }
    // The nibbles `key` (to `depth`) and `next` share.
    const uint32_t differ = (key ^ next->prefix) & PrefixMask(std::min<int>(depth, next->depth));
    const int common = differ == 0 ? std::min<int>(depth, next->depth) : __builtin_clz(differ) / kStrideBits;
    if (common == next->depth) {
      if (common == depth) return next;
      link = &next->child[Nibble(key, common)];
      above = next;
      above_depth = common;
      continue;
    }
    // `next` is deeper than what they share: a node at `common` goes between, with `next` below it (and the
    // leaf for the prefix, unless that is the new node itself), complete before it is linked.
    Node* between = MakeNode(key, common, level, above, owner);
    between->child[Nibble(next->prefix, common)].store(next, std::memory_order_relaxed);
    between->children = 1;
    next->up = between;
    Node* target = between;
    if (common < depth) {
      target = MakeNode(key, depth, level, between, owner);
      between->child[Nibble(key, common)].store(target, std::memory_order_relaxed);
      between->children = 2;
    }
    link->store(between, std::memory_order_release);
    linked(common);
    return target;
  }
}

std::atomic<TableIndex::Node*>* TableIndex::LinkHolding(const Node& node) {
  if (node.up == nullptr) return &root_;
  if (node.up->level != node.level) return &node.up->sub;
  return &node.up->child[Nibble(node.prefix, node.up->depth)];
}

void TableIndex::RequestAbove(const Node& node) const {
  __builtin_prefetch(node.up);
  if (node.level == 1) prefix_pairs_->locations.Request(PrefixPair::Of(node));
}

void TableIndex::RequestPrune(const Item* item) const {
  if (item != nullptr && item->node != nullptr) RequestAbove(*item->node);
}

void TableIndex::Prune(Node* node) {
  // What a node going reads after its own lines.
  RequestAbove(*node);
  while (node != nullptr) {
    const Slots* slots = node->slots.load(std::memory_order_relaxed);
    if ((slots != nullptr && slots->live > 0) || node->sub.load(std::memory_order_relaxed) != nullptr ||
        node->children > 1)
      return;
    Node* only = nullptr;
    for (size_t c = 0; node->children == 1 && only == nullptr && c < node->child.size(); ++c)
      only = node->child[c].load(std::memory_order_relaxed);
    // Its link leads to its only child instead, or nowhere. A reader on it still (it is let go only once
    // readers are past) finds no entry there, and its child below.
    Node* up = node->up;
    if (only != nullptr) only->up = up;
    LinkHolding(*node)->store(only, std::memory_order_release);
    if (only == nullptr && up != nullptr && up->level == node->level) --up->children;
    if (node->level == 0 && (up == nullptr || up->depth < kShortcutStrides))
      RefreshShortcuts(node->prefix, std::min<int>(node->depth, kShortcutStrides));
    if (node->level == 1) prefix_pairs_->locations.Erase(PrefixPair::Of(*node));
    nodes_->Release(node, reclaimer_ == nullptr ? 0 : reclaimer_->Stamp());
    // `up` lost a child, or its sub-trie, unless the child took the node's place.
    if (only != nullptr) return;
    node = up;
  }
}

void TableIndex::RefreshShortcuts(uint32_t key, int depth) {
  ShortcutTable* old = shortcuts_.load(std::memory_order_relaxed);
  // Below the shortcuts' depth, a shortcut's passed nodes stay: the node it reaches changes in place.
  ShortcutTable* fresh = old != nullptr && depth == kShortcutStrides ? old
                         : old == nullptr                            ? new ShortcutTable
                                                                     : new ShortcutTable(*old);
  const uint32_t first = (key & PrefixMask(depth)) >> (32 - kShortcutBits);
  const uint32_t cells = 1u << (kShortcutBits - kStrideBits * depth);
  for (uint32_t c = first; c < first + cells; ++c) {
    ShortcutTable::Shortcut* shortcut = &fresh->cell[c];
    const uint32_t value = c << (32 - kShortcutBits);
    int passed = 0;
    std::array<const Node*, kShortcutStrides> passes{};
    const Node* reached = nullptr;
    const Node* node = root_.load(std::memory_order_relaxed);
    for (; node != nullptr &&
           ((value ^ node->prefix) & PrefixMask(std::min<int>(node->depth, kShortcutStrides))) == 0;
         node = node->child[Nibble(value, node->depth)].load(std::memory_order_relaxed)) {
      if (node->depth >= kShortcutStrides) {
        reached = node;
        break;
      }
      passes[passed++] = node;
    }
    if (fresh == old) {
      assert(shortcut->passed == passed && shortcut->passes == passes);
    } else {
      shortcut->passed = passed;
      shortcut->passes = passes;
    }
    shortcut->reached.store(reached, std::memory_order_release);
  }
  if (fresh == old) return;
  shortcuts_.store(fresh, std::memory_order_release);
  if (old != nullptr) Retire(reclaimer_, [old] { delete old; });
}

void TableIndex::AddToSlots(Node* node, Item* item, const std::array<uint32_t, kWords>& mask, uint64_t rank,
                            uintptr_t matcher, const RuleRecord* hit) {
  node->LowerLeast(rank);
  Slots* slots = node->slots.load(std::memory_order_relaxed);
  uint32_t at;
  if (slots != nullptr && slots->first_hole != Slots::kNoHole) {
    at = slots->TakeHole();
    slots->entries()[at].Fill(item->value, mask, rank, matcher, std::memory_order_release);
    if (hit != nullptr) slots->entries()[at].hit.store(hit, std::memory_order_release);
  } else {
    if (slots == nullptr || slots->count.load(std::memory_order_relaxed) == slots->capacity) {
      GrowSlots(node);
      slots = node->slots.load(std::memory_order_relaxed);
    }
    at = slots->count.load(std::memory_order_relaxed);
    slots->NewEntry(at, item->value, mask, rank, matcher, hit);
    slots->count.store(at + 1, std::memory_order_release);
  }
  slots->SetItem(at, item);
  slots->least = std::min(slots->least, rank);
  ++slots->live;
  item->node = node;
  item->slot = at;
  item->entry = &slots->entries()[at];
  ++entries_;
}

void TableIndex::RemoveAt(const Item& item) {
  Slots* slots = Slots::Holding(item);
  Entry& removed = *item.entry;
  if (removed.matcher.load(std::memory_order_relaxed) != 0) {  // (not dormant)
    TreeCompiler::TakeChange(this, TreeChange::kRemove, removed);
    --entries_;
  }
  removed.matcher.store(0, std::memory_order_release);
  slots->MakeHole(item.slot);
  if (--slots->live == 0) {
    Prune(item.node);
    return;
  }
  // The least rank left, if the entry held it (after it left: a reader that read the higher bound missed
  // only the entry being removed).
  if (removed.rank.load(std::memory_order_relaxed) != slots->least) return;
  uint64_t least = ~uint64_t{0};
  const Entry* e = slots->entries();
  for (uint32_t i = 0; i < slots->count.load(std::memory_order_relaxed); ++i) {
    if (slots->ItemAt(i) != nullptr) least = std::min(least, e[i].rank.load(std::memory_order_relaxed));
  }
  slots->least = least;
  item.node->least.store(least, std::memory_order_relaxed);
}

void TableIndex::GrowSlots(Node* node) {
  // (A node fills its holes first: every slot of a full array is live, and keeps its place.)
  Slots* old = node->slots.load(std::memory_order_relaxed);
  const uint32_t used = old == nullptr ? 0 : old->count.load(std::memory_order_relaxed);
  const auto capacity = static_cast<uint32_t>(std::max<size_t>(Slots::kFirstCapacity, size_t{used} * 2));
  Slots* fresh = old == nullptr ? nodes_->SpareSlots(reclaimer_) : nullptr;
  if (fresh == nullptr) fresh = Slots::Make(capacity);
  // (The old entries' lines load together: a node of many entries grows seldom, they are cold.)
  for (uint32_t i = 0; i < used; ++i) __builtin_prefetch(&old->entries()[i]);
  for (uint32_t i = 0; i < used; ++i) {
    const Entry& from = old->entries()[i];
    Entry* to = fresh->NewEntry(i, from.Values(), from.Masks(), from.rank.load(std::memory_order_relaxed),
                                from.matcher.load(std::memory_order_relaxed),
                                from.hit.load(std::memory_order_relaxed));
    Item* item = old->ItemAt(i);
    fresh->SetItem(i, item);
    item->entry = to;
  }
  fresh->count.store(used, std::memory_order_relaxed);
  if (old != nullptr) {
    fresh->live = old->live;
    fresh->least = old->least;
  }
  node->slots.store(fresh, std::memory_order_release);
  if (old != nullptr) Retire(reclaimer_, [old] { Slots::Free(old); });
}

void TableIndex::TakeWalkStep(uintptr_t step, Walk* q) const {
  if ((step & kStepKind) == kVisit) {
    const Node* node = reinterpret_cast<const Node*>(step);
    const uint32_t key = q->key[node->level];
    if (((key ^ node->prefix) & PrefixMask(node->depth)) != 0) return;  // the packet's path leaves here
    // The node's own entries: in its slots, or its sub-trie. A node that splits publishes its sub-trie
    // before it lets its slots go (and the array it lets go still holds them): slots first.
    const uint64_t own = std::max(q->least, node->least.load(std::memory_order_relaxed));
    if (const Slots* slots = node->slots.load(std::memory_order_acquire)) {
      q->AddPending(reinterpret_cast<uintptr_t>(slots) | kScan, own);
    } else if (const Node* sub = node->sub.load(std::memory_order_acquire)) {
      q->AddPending(reinterpret_cast<uintptr_t>(sub), own);
    }
    // The path goes on: its next node is the step ahead, its bound being the least, and never waits among
    // the pending ones.
    if (node->depth < kMaxDepth) {
      if (const Node* child = node->child[Nibble(key, node->depth)].load(std::memory_order_acquire))
        q->SetAhead(reinterpret_cast<uintptr_t>(child));
    }
    return;
  }
  const Slots* slots = reinterpret_cast<const Slots*>(step & ~kStepKind);
  const uint32_t count = slots->count.load(std::memory_order_acquire);
  const Entry* e = slots->entries();
  for (uint32_t i = 0; i < count && q->ConsiderEntry(e[i]); ++i) {
  }
}

void TableIndex::CandidatesOf(Query* queries, size_t n) const {
  constexpr size_t kMaxWalks = 32;
  const ShortcutTable* shortcuts = shortcuts_.load(std::memory_order_acquire);
  const uint64_t version = version_.load(std::memory_order_acquire);
  const CompiledTrees* compiled = compiled_.load(std::memory_order_acquire);
  // (Its version is the index's, or the one before while a change is under way.)
  if (compiled != nullptr && compiled->version.load(std::memory_order_acquire) != (version & ~uint64_t{1}))
    compiled = nullptr;
  // The candidates from the trees, the automata or the walk, or in a compiled form's trial from each in
  // turn, timed.
  int method = CompiledTrees::kWalk;
  bool timed = false;
  uint64_t trial_run = 0;
  std::chrono::steady_clock::time_point start;
  if (compiled != nullptr) {
    method = compiled->method.load(std::memory_order_relaxed);
    // (A form that kept the walk is not worth its compiling however long it serves: not counted.)
    if (method != CompiledTrees::kWalk) compiled->served.fetch_add(n, std::memory_order_relaxed);
    if (method == CompiledTrees::kUndecided) {
      const uint64_t call = compiled->calls.fetch_add(1, std::memory_order_relaxed);
      const uint64_t run_calls = compiled->TrialRun();
      if (call < compiled->TrialCalls()) {
        method = compiled->TrialMethodOf(call);
        trial_run = call / run_calls;
        timed = call % run_calls >= run_calls / 2;
        if (timed) start = std::chrono::steady_clock::now();
      } else {
        method = call == compiled->TrialCalls() ? compiled->EndTrial() : CompiledTrees::kWalk;
      }
    }
  }
  for (size_t at = 0; at < n; at += kMaxWalks) {
    const size_t walks = std::min(kMaxWalks, n - at);
    if (CompiledTrees::ByForm(method)) {
      if (method == CompiledTrees::kAutomata && compiled->automata_serve.load(std::memory_order_acquire)) {
        TreeCompiler::CandidatesFromAutomata(*this, *compiled, queries + at, walks);
      } else {
        TreeCompiler::CandidatesFromTrees(*this, *compiled, queries + at, walks);
      }
      continue;
    }
    Walk walk[kMaxWalks];
    uint8_t live[kMaxWalks];
    for (size_t i = 0; i < walks; ++i) {
      Walk& q = walk[i];
      q.query = &queries[at + i];
      q.word = q.query->words;
      live[i] = static_cast<uint8_t>(i);
      TrieKeys(q.word, q.key.data());
      // From the packet's shortcut: the sub-tries of the nodes it passes, and the node it reaches.
      if (shortcuts != nullptr) {
        const ShortcutTable::Shortcut* shortcut = &shortcuts->cell[q.key[0] >> (32 - kShortcutBits)];
        for (int p = 0; p < shortcut->passed; ++p) {
          const Node* node = shortcut->passes[p];
          if (const Node* sub = node->sub.load(std::memory_order_acquire))
            q.AddPending(reinterpret_cast<uintptr_t>(sub), node->least.load(std::memory_order_relaxed));
        }
        if (const Node* reached = shortcut->reached.load(std::memory_order_acquire))
          q.AddPending(reinterpret_cast<uintptr_t>(reached), 0);
      }
      q.TakeAhead();
    }
    // One step of each walk in turn: what a step requests has the others' steps' time to arrive.
    size_t active = walks;
    while (active > 0) {
      for (size_t i = 0; i < active;) {
        Walk& q = walk[live[i]];
        const uintptr_t next = q.ahead;
        if (q.overflow || next == 0) {
          live[i] = live[--active];
          continue;
        }
        q.ahead = 0;
        TakeWalkStep(next, &q);
        if (q.ahead == 0) q.TakeAhead();
        ++i;
      }
    }
    for (size_t i = 0; i < walks; ++i) walk[i].Finish();
  }
  if (timed) {
    compiled->run_nanoseconds[trial_run].fetch_add(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
            .count(),
        std::memory_order_relaxed);
    compiled->run_packets[trial_run].fetch_add(n, std::memory_order_relaxed);
  }
  if (compiled == nullptr) TreeCompiler::CountQuietLookups(*this, version, n);
}

}  // namespace drsim::hw
