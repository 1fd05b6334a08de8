// The tries of a TableIndex: their nodes, the slot arrays holding the nodes' entries, the memory the nodes
// come from, the shortcuts a walk starts from, the map from an entry's prefixes to its node, and a packet's
// walk through them. Internal to //hw:table_index (hw/table_index.cc walks and changes the tries,
// hw/compiled_trees.cc reads them to compile them); hw/table_index.h describes the design.
#ifndef DRSIM_HW_TABLE_INDEX_TRIES_H_
#define DRSIM_HW_TABLE_INDEX_TRIES_H_

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "hw/flow_table.h"
#include "hw/line_hash_map.h"
#include "hw/lookup_memory.h"
#include "hw/reclaimer.h"
#include "hw/table_index.h"

namespace drsim::hw {
namespace table_index_internal {

// Three bits a node: eight children, so that a node is two cache lines (a walk prefetches both) and a
// path down a trie crosses at most 11 nodes. Two bits, one line a node, would take walks through half as
// many nodes again (each its own wait); four, three lines a node, save fewer lines than they cost.
constexpr int kStrideBits = 3;
constexpr int kNodeLines = 2;
// The bits of word 0 the shortcuts cover.
constexpr int kShortcutBits = TableIndex::kShortcutStrides * kStrideBits;

// The first `depth` nibbles (strides) of a word, as a mask.
inline uint32_t PrefixMask(int depth) { return depth == 0 ? 0 : ~uint32_t{0} << (32 - kStrideBits * depth); }

// A walk's step, an address tagged in its low bit: a node to visit, or a node's slot array to scan.
enum : uintptr_t { kVisit = 0, kScan = 1, kStepKind = 1 };

}  // namespace table_index_internal

// A removed entry's slot (a hole: no matcher) takes the next entry filed at its node at once. Each filling
// changes the slot's generation twice, odd while it lasts (a sequence lock): a reader that reads the same
// even generation before and after the other fields read an entry whole, one filling's, or else skips the
// slot (its entry was being removed or added meanwhile: as a lookup just before or just after).
struct alignas(64) TableIndex::Entry {
  std::array<std::atomic<uint32_t>, kWords> value;
  std::array<std::atomic<uint32_t>, kWords> mask;
  std::atomic<uint64_t> rank;
  std::atomic<uintptr_t> matcher;  // TagMatcher(matcher, exact); 0: removed (a hole)
  // An exact entry's rule while its matcher holds one rule with the entry's key, if the driver named it
  // (NameHit): what a packet matching the entry hits, without a lookup in the matcher's table. Cleared
  // before that rule leaves the table (DropHit), so that a reader holding it is in a read section that keeps
  // the record.
  std::atomic<const RuleRecord*> hit;
  std::atomic<uint32_t> generation;

  // An entry for a slot never published in its array yet (Slots::NewEntry): no reader reads it before it is,
  // so it is written without reading anything first (its line is mostly not loaded yet: a read would wait
  // for it, behind the writes).
  Entry(const std::array<uint32_t, kWords>& v, const std::array<uint32_t, kWords>& m, uint64_t r,
        uintptr_t tag, const RuleRecord* named)
      : rank(r), matcher(tag), hit(named), generation(0) {
    for (int i = 0; i < kWords; ++i) {
      value[i].store(v[i] & m[i], std::memory_order_relaxed);
      mask[i].store(m[i], std::memory_order_relaxed);
    }
  }
  // Fills the entry of a slot published before (no hit named yet); `tag` is published last, with `order`.
  void Fill(const std::array<uint32_t, kWords>& v, const std::array<uint32_t, kWords>& m, uint64_t r,
            uintptr_t tag, std::memory_order order) {
    const uint32_t g = generation.load(std::memory_order_relaxed);
    generation.store(g + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    for (int i = 0; i < kWords; ++i) {
      value[i].store(v[i] & m[i], std::memory_order_relaxed);
      mask[i].store(m[i], std::memory_order_relaxed);
    }
    rank.store(r, std::memory_order_relaxed);
    hit.store(nullptr, std::memory_order_relaxed);
    generation.store(g + 2, std::memory_order_release);
    matcher.store(tag, order);
  }
  // Whether what was read of the entry since `seen`, its generation then (acquire), is one filling's (else it
  // was being removed, or added, meanwhile).
  bool UnchangedSince(uint32_t seen) const {
    std::atomic_thread_fence(std::memory_order_acquire);
    return (seen & 1) == 0 && generation.load(std::memory_order_relaxed) == seen;
  }
  std::array<uint32_t, kWords> Values() const {
    std::array<uint32_t, kWords> v;
    for (int i = 0; i < kWords; ++i) v[i] = value[i].load(std::memory_order_relaxed);
    return v;
  }
  std::array<uint32_t, kWords> Masks() const {
    std::array<uint32_t, kWords> m;
    for (int i = 0; i < kWords; ++i) m[i] = mask[i].load(std::memory_order_relaxed);
    return m;
  }
};

// A node's entries, in one allocation with them, a line each after the header line: entries [0, count) are
// published (holes among them); those past it are written before count covers them. The rest of the header is
// the writer's book of them: how many are not removed (live or dormant), the least rank among those (the
// node's `least`, which the writer need not load), and by slot the item whose entry it holds or, for a hole,
// the next hole (the holes form a list through the slots they are: a delete and the insert that fills its
// hole touch no memory of their own). The first kInlineItems slots' items are in the header line, the others'
// after the entries: a node of a few entries is two lines to its writer, as to its readers.
struct alignas(64) TableIndex::Slots {
  static constexpr uint32_t kNoHole = 0xffffffffu;
  static constexpr uint32_t kInlineItems = 4;
  static constexpr uint32_t kFirstCapacity = 4;  // a node's first array's; each new one is twice as large

  // A new array with room for `capacity` entries, and for their items. Its entries are made as they are
  // first used (NewEntry): a node's first array mostly holds one entry of four, and a line written is a line
  // loaded.
  static Slots* Make(uint32_t capacity) {
    static_assert(std::is_trivially_destructible_v<Entry> && sizeof(Slots) == alignof(Entry));
    return new (AllocateLookupMemory(Bytes(capacity))) Slots(capacity);
  }
  // Makes slot `slot`'s entry afresh (Entry's arguments), where no reader reads: `slot` is past `count`.
  template <typename... Args>
  Entry* NewEntry(uint32_t slot, const Args&... args) {
    return new (&entries()[slot]) Entry(args...);
  }
  static void Free(Slots* slots) {
    // (Entry and Slots are trivially destructible.)
    if (slots != nullptr) FreeLookupMemory(slots, Bytes(slots->capacity));
  }
  // Empties an array no reader can still be reading, for another node (its entries are written before they
  // are published again).
  void Clear() {
    count.store(0, std::memory_order_relaxed);
    live = 0;
    first_hole = kNoHole;
    least = ~uint64_t{0};
  }
  // The array holding `item`'s entry (it has one).
  static Slots* Holding(const Item& item) { return reinterpret_cast<Slots*>(item.entry - item.slot) - 1; }
  Entry* entries() { return reinterpret_cast<Entry*>(this + 1); }
  const Entry* entries() const { return reinterpret_cast<const Entry*>(this + 1); }

  // The item whose entry slot `slot` holds, or nullptr for a hole.
  Item* ItemAt(uint32_t slot) {
    const uintptr_t at = ItemWord(slot);
    return at & 1 ? nullptr : reinterpret_cast<Item*>(at);
  }
  void SetItem(uint32_t slot, Item* item) { ItemWord(slot) = reinterpret_cast<uintptr_t>(item); }
  // Slot `slot` becomes the first hole.
  void MakeHole(uint32_t slot) {
    ItemWord(slot) = uintptr_t{first_hole} << 1 | 1;
    first_hole = slot;
  }
  // Takes the first hole (there is one: first_hole != kNoHole) and returns its slot.
  uint32_t TakeHole() {
    const uint32_t slot = first_hole;
    first_hole = static_cast<uint32_t>(ItemWord(slot) >> 1);
    return slot;
  }

  const uint32_t capacity;
  std::atomic<uint32_t> count{0};
  uint32_t live = 0;
  uint32_t first_hole = kNoHole;
  uint64_t least = ~uint64_t{0};

 private:
  explicit Slots(uint32_t capacity) : capacity(capacity) {}
  // The allocation of an array of `capacity` entries: the header, the entries, the items of the slots past
  // the header's.
  static size_t Bytes(uint32_t capacity) {
    const size_t items = capacity > kInlineItems ? capacity - kInlineItems : 0;
    return sizeof(Slots) + capacity * sizeof(Entry) + items * sizeof(uintptr_t);
  }
  // A slot's item's address, or a hole's successor as (next << 1 | 1): items are aligned, so the low bit
  // tells.
  uintptr_t& ItemWord(uint32_t slot) {
    static_assert(alignof(Item) > 1);
    return slot < kInlineItems ? inline_items_[slot]
                               : reinterpret_cast<uintptr_t*>(entries() + capacity)[slot - kInlineItems];
  }
  std::array<uintptr_t, kInlineItems> inline_items_;
};

// A node of a path-compressed trie with a kStrideBits stride: it stands for the first `depth` strides
// ("nibbles") of a word, `prefix` (the rest 0), and branches on the next one; a child may be several deeper.
// A node of a word-i trie leads by `sub` to a trie on word i + 1 of the entries whose word-i prefix ends
// there (level 0), or that it held before it split (fat); a node of a later level holds its entries in
// `slots` until it splits. Either way they are the node's own entries, and `least` is at most the rank of
// every one of them (a lookup need not look at them once it has an exact candidate of a lower rank). A walk
// reads its kNodeLines cache lines (the first holds children 0 and 1, the second the others).
struct alignas(64) TableIndex::Node {
  Node(uint32_t prefix, int depth, int level, Node* up, const Node* owner)
      : prefix(prefix),
        depth(depth),
        level(level),
        up(up),
        owner_prefix(owner != nullptr ? owner->prefix : 0),
        owner_depth(owner != nullptr ? owner->depth : 0) {}

  const uint32_t prefix;
  const uint8_t depth;
  const uint8_t level;  // the trie word it branches on
  // Level 1 or more: its entries moved to the next level's trie under it (sub), as later ones go. The
  // writer's.
  bool fat = false;
  uint8_t children = 0;  // the writer's count of `child` links set
  std::atomic<Slots*> slots{nullptr};
  std::atomic<Node*> sub{nullptr};
  // Falls before an entry goes in; rises only to the least rank left in `slots` after one left them (a
  // node's whose entries went to its sub-trie stays, a bound still).
  std::atomic<uint64_t> least{~uint64_t{0}};
  // The writer's: the node whose link this one is, a child's or, for a trie's top, a sub-trie's (nullptr:
  // the word-0 trie's top), and the prefix and depth of the node whose sub-trie holds this one's trie (0:
  // word 0), so that a level-1 node going names its pair (PrefixPairMap) without loading that node. In the
  // first line with the rest, so that a node going reads one line unless it has a child.
  Node* up;
  const uint32_t owner_prefix;
  const uint8_t owner_depth;
  std::array<std::atomic<Node*>, 1 << table_index_internal::kStrideBits> child{};

  // Lowers `least` to `rank`, before an entry of that rank is published among the node's own.
  void LowerLeast(uint64_t rank) {
    if (rank < least.load(std::memory_order_relaxed)) least.store(rank, std::memory_order_relaxed);
  }
};

// Where a walk starts: a shortcut for each value of the word-0 trie's first kShortcutStrides nibbles, past
// the nodes every packet would otherwise walk down. A shortcut lists the nodes shallower than that which the
// value's path passes (their sub-tries are the walk's to take) and the node it reaches past them. The nodes
// passed change seldom (there are at most 73 of them): the table is replaced whole then. The node reached
// changes as nodes below come and go: in place, one store. A reader on a table replaced meanwhile reads the
// paths of a moment before, which lead to every entry that was in then (nodes are let go only once readers
// are past them, and a node let go keeps its links).
struct TableIndex::ShortcutTable {
  struct Shortcut {
    int passed = 0;
    std::array<const Node*, kShortcutStrides> passes{};  // in the path's order
    std::atomic<const Node*> reached{nullptr};           // (its nibbles past the table's are to compare)
  };
  ShortcutTable() = default;
  // A copy to change (readers may read `from` meanwhile, the writer alone changes it).
  explicit ShortcutTable(const ShortcutTable& from) {
    for (size_t c = 0; c < cell.size(); ++c) {
      cell[c].passed = from.cell[c].passed;
      cell[c].passes = from.cell[c].passes;
      cell[c].reached.store(from.cell[c].reached.load(std::memory_order_relaxed), std::memory_order_relaxed);
    }
  }
  std::array<Shortcut, size_t{1} << table_index_internal::kShortcutBits> cell;
};

// Nodes packed in chunks that double from kFirstChunkNodes to kMaxChunkNodes, so that an index's nodes
// fill their pages rather than share them with the heap's other blocks: walks take fewer TLB misses. A chunk
// stays below a huge page: fresh huge pages are zeroed (and compacted for) on first touch, which slows the
// installs of sets that build many indexes.
struct TableIndex::NodeArena {
  static constexpr size_t kFirstChunkNodes = 32;
  static constexpr size_t kMaxChunkNodes = kHugePageBytes / 2 / sizeof(Node);
  struct Chunk {
    Node* nodes;
    size_t capacity;
    size_t used;
  };

  NodeArena() = default;
  NodeArena(const NodeArena&) = delete;
  NodeArena& operator=(const NodeArena&) = delete;
  ~NodeArena() {
    static_assert(std::is_trivially_destructible_v<Node>);
    for (Slots* slots : spare) Slots::Free(slots);
    for (const Chunk& c : chunks) FreeLookupMemory(c.nodes, c.capacity * sizeof(Node));
  }
  // Memory for one more node: a node let go when readers are past it (`reclaimer` says; nullptr: none
  // reads concurrently), else a new one.
  void* Allocate(Reclaimer* reclaimer) {
    ++count;
    Collect(reclaimer);
    if (!free.empty()) {
      Node* node = free.back();
      free.pop_back();
      return node;
    }
    if (chunks.empty() || chunks.back().used == chunks.back().capacity) {
      const size_t capacity =
          chunks.empty() ? kFirstChunkNodes : std::min(2 * chunks.back().capacity, kMaxChunkNodes);
      chunks.reserve(chunks.size() + 1);  // before the chunk: nothing leaks if this throws
      chunks.push_back({static_cast<Node*>(AllocateLookupMemory(capacity * sizeof(Node))), capacity, 0});
    }
    Chunk& c = chunks.back();
    return &c.nodes[c.used++];
  }
  // Lets `node` (unlinked, with its slot array) go once readers are past `stamp` (Reclaimer::Stamp, taken
  // after it was unlinked).
  void Release(Node* node, uint64_t stamp) {
    --count;
    limbo.emplace_back(stamp, node);
  }
  // A first slot array for a node, emptied, if a node let go left one.
  Slots* SpareSlots(Reclaimer* reclaimer) {
    Collect(reclaimer);
    if (spare.empty()) return nullptr;
    Slots* slots = spare.back();
    spare.pop_back();
    return slots;
  }
  // Moves the nodes readers are past from limbo to `free`, their slot arrays to `spare` (first ones) or back
  // to the heap.
  void Collect(Reclaimer* reclaimer) {
    while (!limbo.empty() && (reclaimer == nullptr || reclaimer->Safe(limbo.front().first))) {
      Node* node = limbo.front().second;
      limbo.pop_front();
      if (Slots* slots = node->slots.load(std::memory_order_relaxed)) {
        node->slots.store(nullptr, std::memory_order_relaxed);
        if (slots->capacity == Slots::kFirstCapacity) {
          slots->Clear();
          spare.push_back(slots);
        } else {
          Slots::Free(slots);
        }
      }
      free.push_back(node);
    }
  }

  std::vector<Chunk> chunks;
  size_t count = 0;                              // nodes in use
  std::deque<std::pair<uint64_t, Node*>> limbo;  // let go, by stamp (readers may be on them)
  std::vector<Node*> free;                       // readers past, without slot arrays
  std::vector<Slots*> spare;                     // first slot arrays of nodes readers are past
};

// The prefixes of words 0 and 1 an entry is filed under, as their tries read them (TrieKey), with their
// depths (TrieDepth).
struct TableIndex::PrefixPair {
  uint32_t key0, key1;
  uint16_t depths;

  // The pair of those prefixes; that of an entry with `value` under `mask` in `index`, of a walk ahead, and
  // of the level-1 node `word1`.
  static PrefixPair Of(uint32_t key0, int depth0, uint32_t key1, int depth1) {
    return {key0 & table_index_internal::PrefixMask(depth0), key1 & table_index_internal::PrefixMask(depth1),
            static_cast<uint16_t>(depth0 << 8 | depth1)};
  }
  static PrefixPair Of(const TableIndex& index, const std::array<uint32_t, kWords>& value,
                       const std::array<uint32_t, kWords>& mask) {
    return Of(index.TrieKey(0, value[0]), index.TrieDepth(0, mask[0]), index.TrieKey(1, value[1]),
              index.TrieDepth(1, mask[1]));
  }
  static PrefixPair Of(const Filing& filing) {
    return Of(filing.key[0], filing.depth[0], filing.key[1], filing.depth[1]);
  }
  static PrefixPair Of(const Node& word1) {
    return {word1.owner_prefix, word1.prefix, static_cast<uint16_t>(word1.owner_depth << 8 | word1.depth)};
  }
  bool operator==(const PrefixPair& o) const {
    return key0 == o.key0 && key1 == o.key1 && depths == o.depths;
  }
  template <typename H>
  friend H AbslHashValue(H h, const PrefixPair& p) {
    return H::combine(std::move(h), p.key0, p.key1, p.depths);
  }
};

// The word-1 node of each pair of prefixes (of words 0 and 1, with their depths): an entry's node found
// with one probe rather than a walk down two tries (nodes never move, and a node inserted above one later
// does not change which node a pair's entries go to). The writer's alone, a LineHashMap: a writer that
// requests a pair's slot ahead finds it loaded (an update that moves a rule's key reads one, or erases it).
struct TableIndex::PrefixPairMap {
  // Where a pair's entries are filed.
  struct Location {
    Node* word0 = nullptr;  // the word-0 node whose sub-trie holds `word1`
    Node* word1 = nullptr;
    // At least word0's `least` (which never rises: a word-0 node has no slots), so that an entry of a rank
    // up to it spares the word-0 node's line.
    uint64_t word0_least = ~uint64_t{0};
    // Hints, as the last entry filed at the pair left them: word1's slot array, and the slot of it the next
    // entry would take. Requested with the node for the next (never read through: the node may have grown,
    // split or had entries removed since).
    const Slots* word1_slots = nullptr;
    const Entry* word1_next = nullptr;
    void Request() const {
      __builtin_prefetch(word1);
      __builtin_prefetch(word1_slots);
      __builtin_prefetch(word1_next);
    }
  };

  LineHashMap<PrefixPair, Location> locations;
};

// A query's candidates as a lookup finds them (a walk's, or the trees'): the exact one of least rank so far
// (`best`), whose rank bounds those taken after it, and the others (filters) in its `out`, in the order
// found. An ACL's entries are all exact: its packets' answers mostly never touch `out` until Finish.
struct TableIndex::CandidateList {
  Query* query = nullptr;
  uint64_t bound = ~uint64_t{0};
  size_t count = 0;  // (filters in `out`)
  bool overflow = false;
  Candidate best{0, nullptr, nullptr, false};  // (exact once one was taken)

  // Takes the entry of matcher word `tagged` (TagMatcher), `rank` and named hit `hit`, which the packet
  // matches and whose rank is up to the bound, as a candidate; false once `out` overflowed (the lookup is
  // over).
  bool TakeCandidate(uint64_t rank, uintptr_t tagged, const RuleRecord* hit) {
    const auto* matcher = reinterpret_cast<const CompiledMatcher*>(tagged & ~uintptr_t{1});
    if ((tagged & 1) != 0) {
      // Of the rank up to the bound: of the best's matcher (another entry of its, which may name the hit),
      // or of a lower rank, the new best.
      if (rank < bound || best.hit == nullptr) best = {rank, matcher, hit, true};
      bound = rank;
      return true;
    }
    if (count == kMaxCandidates && !MakeRoom()) {
      overflow = true;
      return false;
    }
    query->out[count++] = {rank, matcher, nullptr, false};
    return true;
  }
  // Keeps the filters up to the bound; false when `out` is still full. (Seldom called: kept out of line, so
  // that TakeCandidate's callers keep their registers.)
  __attribute__((noinline)) bool MakeRoom() {
    size_t kept = 0;
    for (size_t i = 0; i < count; ++i) {
      if (query->out[i].rank <= bound) query->out[kept++] = query->out[i];
    }
    count = kept;
    return count < kMaxCandidates;
  }
  // Sets the query's count as Candidates returns it: its candidates in ascending rank (a handful, mostly), up
  // to the bound, each matcher once (ranks are distinct per matcher), exact if any of its entries found was:
  // the filters up to the bound, sorted, then the best. More than kMaxCandidates: an overflow.
  void Finish() {
    if (count == 0 && !overflow) {  // (an ACL's: no filters)
      query->count = best.exact ? 1 : 0;
      if (best.exact) query->out[0] = best;
      return;
    }
    FinishWithFilters();
  }
  __attribute__((noinline)) void FinishWithFilters() {
    if (overflow) {
      query->count = kMaxCandidates + 1;
      return;
    }
    Candidate* out = query->out;
    for (size_t k = 1; k < count; ++k) {
      const Candidate c = out[k];
      size_t j = k;
      for (; j > 0 && out[j - 1].rank > c.rank; --j) out[j] = out[j - 1];
      out[j] = c;
    }
    size_t kept = 0;
    for (size_t k = 0; k < count && out[k].rank <= bound; ++k) {
      if (kept == 0 || out[kept - 1].rank != out[k].rank) out[kept++] = out[k];
    }
    if (best.exact) {
      // (A filter of the best's rank is an entry of its matcher: the best stands for both.)
      if (kept > 0 && out[kept - 1].rank == best.rank) {
        out[kept - 1] = best;
      } else if (kept == kMaxCandidates) {
        query->count = kMaxCandidates + 1;
        return;
      } else {
        out[kept++] = best;
      }
    }
    query->count = kept;
  }
};

// A query's walk through the tries: the steps it has still to take, each with a bound below the rank of
// every entry it leads to, its candidates so far, and the rank of the first exact one. It takes the step of
// the least bound first, and ends when that is past the exact candidate's rank: its candidates end where
// they may, having looked at as few entries as it can tell. The step of its next turn is set apart, its lines
// requested a turn ahead: the next node down the path it is on, or else the pending step of the least bound.
// Pending steps are not requested as they are added: most of the sub-tries a walk passes are never taken,
// and their requests would hold up the others.
struct TableIndex::Walk : CandidateList {
  // Far more than a walk has pending (an overflow ends the walk: the chain is walked instead).
  static constexpr size_t kMaxPending = 64;

  std::array<uint32_t, kWords> word;
  std::array<uint32_t, kWords> key;  // word i as its trie reads it
  uint32_t pending = 0;
  uint64_t least = 0;   // the bound of the step being taken, or of the one ahead once it is set
  uintptr_t ahead = 0;  // the step of the next turn, its lines requested (0: none, the walk is done)
  std::array<uintptr_t, kMaxPending> pending_step;
  std::array<uint64_t, kMaxPending> pending_least;

  void AddPending(uintptr_t next, uint64_t next_least) {
    if (next_least > bound) return;
    if (pending == kMaxPending) {
      overflow = true;
      return;
    }
    pending_least[pending] = next_least;
    pending_step[pending++] = next;
  }
  // Takes out the pending step of the least bound, unless there is none up to the exact candidate's rank.
  bool TakeLeastPending(uintptr_t* next) {
    if (pending == 0) return false;
    // No pending step's bound is below the last one taken's: the last added, when its bound is that, is one
    // of the least.
    uint32_t best = pending - 1;
    if (pending_least[best] != least) {
      // (Selected without branches: where the least bound is cannot be predicted.)
      uint64_t best_least = pending_least[best];
      for (uint32_t i = 0; i < pending - 1; ++i) {
        const bool less = pending_least[i] < best_least;
        best_least = less ? pending_least[i] : best_least;
        best = less ? i : best;
      }
    }
    if (pending_least[best] > bound) return false;
    *next = pending_step[best];
    least = pending_least[best];
    --pending;
    pending_step[best] = pending_step[pending];
    pending_least[best] = pending_least[pending];
    return true;
  }
  // With no step ahead: takes the pending step of the least bound, if any (TakeLeastPending), as the step
  // ahead.
  void TakeAhead() {
    uintptr_t next;
    if (TakeLeastPending(&next)) SetAhead(next);
  }
  // Requests `next`'s lines (a node's, or a slot array's header and first entry) and sets it ahead.
  void SetAhead(uintptr_t next) {
    static_assert(table_index_internal::kNodeLines == 2);
    const char* at = reinterpret_cast<const char*>(next & ~table_index_internal::kStepKind);
    __builtin_prefetch(at);
    __builtin_prefetch(at + 64);
    ahead = next;
  }
  // Takes entry `e` as a candidate when it is published whole, the packet matches it and its rank is in
  // the walk's range; false once `out` overflowed (the walk is over).
  bool ConsiderEntry(const Entry& e) {
    const uint32_t generation = e.generation.load(std::memory_order_acquire);
    const uintptr_t tagged = e.matcher.load(std::memory_order_relaxed);
    if (tagged == 0) return true;
    uint32_t differ = 0;
    for (int k = 0; k < kWords; ++k) {
      differ |=
          (word[k] & e.mask[k].load(std::memory_order_relaxed)) ^ e.value[k].load(std::memory_order_relaxed);
    }
    if (differ != 0) return true;
    const uint64_t rank = e.rank.load(std::memory_order_relaxed);
    if (rank < query->from_rank || rank > bound) return true;
    const RuleRecord* hit = e.hit.load(std::memory_order_acquire);
    // (An entry being removed, or added, now may be missed either way.)
    if (!e.UnchangedSince(generation)) return true;
    return TakeCandidate(rank, tagged, hit);
  }
};

}  // namespace drsim::hw

#endif  // DRSIM_HW_TABLE_INDEX_TRIES_H_
