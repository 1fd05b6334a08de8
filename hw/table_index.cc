#include "hw/table_index.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <new>
#include <numeric>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>

#include "hw/line_hash_map.h"
#include "hw/lookup_memory.h"

namespace drsim::hw {
namespace {

// Three bits a node: eight children, so that a node is two cache lines (a walk prefetches both) and a
// path down a trie crosses at most 11 nodes. Two bits, one line a node, took walks half as many nodes again
// (each its own wait); four, three lines a node, saved fewer lines than they cost.
constexpr int kStrideBits = 3;
// The deepest node branches on nothing: its depth covers 30 bits, and the entries it holds differ at most in
// the last two, which their masks compare.
constexpr int kMaxDepth = 32 / kStrideBits;
constexpr int kNodeLines = 2;

// The serial of the last index made (TableIndex::Filing).
std::atomic<uint64_t> last_index_serial{0};

// A memory-order (big-endian) word as a number, its first byte the most significant.
uint32_t HostOrder(uint32_t word) { return __builtin_bswap32(word); }

// How many of `mask`'s most significant bits (memory-order word) are set before the first clear one.
int LeadingOnes(uint32_t mask) {
  const uint32_t host = HostOrder(mask);
  return host == 0xffffffffu ? 32 : __builtin_clz(~host);
}

// The first `depth` nibbles (strides) of a word, as a mask.
uint32_t PrefixMask(int depth) { return depth == 0 ? 0 : ~uint32_t{0} << (32 - kStrideBits * depth); }

// The nibble of `host` a trie node at `depth` branches on.
unsigned Nibble(uint32_t host, int depth) {
  return host >> (32 - kStrideBits * (depth + 1)) & ((1u << kStrideBits) - 1);
}

// The slot of `state`'s item whose entry is filed with `value` (its rules live, or it dormant), or
// state.items: AddRule takes that item, and a walk ahead (StartFiling) has nothing to walk to.
size_t FiledItem(const TableIndex::MatcherState& state, const TableIndex::Values& value) {
  size_t i = 0;
  while (i < state.items && (state.item[i].node == nullptr || state.item[i].value != value)) ++i;
  return i;
}

}  // namespace

// A removed entry's slot (a hole: no matcher) takes the next entry filed at its node at once. Each filling
// changes the slot's generation twice, odd while it lasts (a sequence lock): a reader that reads the same
// even generation before and after the other fields read an entry whole, one filling's, or else skips the
// slot (its entry was being removed or added meanwhile: as a lookup just before or just after).
struct alignas(64) TableIndex::Entry {
  std::array<std::atomic<uint32_t>, kWords> value;
  std::array<std::atomic<uint32_t>, kWords> mask;
  std::atomic<uint64_t> rank;
  std::atomic<uintptr_t> matcher;  // Tagged(matcher, exact); 0: removed (a hole)
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
  bool OneFilling(uint32_t seen) const {
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
  static Slots* Of(const Item& item) { return reinterpret_cast<Slots*>(item.entry - item.slot) - 1; }
  Entry* entries() { return reinterpret_cast<Entry*>(this + 1); }
  const Entry* entries() const { return reinterpret_cast<const Entry*>(this + 1); }

  // The item whose entry slot `slot` holds, or nullptr for a hole.
  Item* ItemAt(uint32_t slot) {
    const uintptr_t at = ItemWord(slot);
    return at & 1 ? nullptr : reinterpret_cast<Item*>(at);
  }
  void Hold(uint32_t slot, Item* item) { ItemWord(slot) = reinterpret_cast<uintptr_t>(item); }
  // Slot `slot` becomes the first hole.
  void Vacate(uint32_t slot) {
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
  // word 0), so that a level-1 node going names its pair (PairNodes) without loading that node. In the
  // first line with the rest, so that a node going reads one line unless it has a child.
  Node* up;
  const uint32_t owner_prefix;
  const uint8_t owner_depth;
  std::array<std::atomic<Node*>, 1 << kStrideBits> child{};

  // Lowers `least` to `rank`, before an entry of that rank is published among the node's own.
  void Admit(uint64_t rank) {
    if (rank < least.load(std::memory_order_relaxed)) least.store(rank, std::memory_order_relaxed);
  }
};

constexpr int kTopBits = TableIndex::kTopStrides * kStrideBits;

// The top's cells. The nodes a cell's path passes (shallower than the top) change seldom (there are at most
// 73 of them): the top is replaced whole then. The node it reaches changes as nodes below come and go: in
// place, one store. A reader on a top replaced meanwhile reads the paths of a moment before, which lead to
// every entry that was in then (nodes are let go only once readers are past them, and a node let go keeps its
// links).
struct TableIndex::Top {
  struct Cell {
    int passed = 0;
    std::array<const Node*, kTopStrides> passes{};  // in the path's order
    std::atomic<const Node*> reached{nullptr};      // (its nibbles past the top are still to compare)
  };
  Top() = default;
  // A copy to change (readers may read `from` meanwhile, the writer alone changes it).
  explicit Top(const Top& from) {
    for (size_t c = 0; c < cell.size(); ++c) {
      cell[c].passed = from.cell[c].passed;
      cell[c].passes = from.cell[c].passes;
      cell[c].reached.store(from.cell[c].reached.load(std::memory_order_relaxed), std::memory_order_relaxed);
    }
  }
  std::array<Cell, size_t{1} << kTopBits> cell;
};

// Nodes packed in chunks that double from kFirstChunkNodes to kMaxChunkNodes, so that an index's nodes
// fill their pages rather than share them with the heap's other blocks: walks take fewer TLB misses (acl1
// lookups +4%, index builds faster too). A chunk stays below a huge page: fresh huge pages, zeroed (and
// compacted for) on first touch, halved the installs of sets that build many indexes.
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

struct TableIndex::Pair {
  uint32_t key0, key1;
  uint16_t depths;
  bool operator==(const Pair& o) const { return key0 == o.key0 && key1 == o.key1 && depths == o.depths; }
  template <typename H>
  friend H AbslHashValue(H h, const Pair& p) {
    return H::combine(std::move(h), p.key0, p.key1, p.depths);
  }
};

// The word-1 node of each pair of prefixes (of words 0 and 1, with their depths): an entry's node found
// with one probe rather than a walk down two tries (nodes never move, and a node inserted above one later
// does not change which node a pair's entries go to). The writer's alone, a LineHashMap: a writer that
// requests a pair's slot ahead finds it loaded (an update that moves a rule's key reads one, or erases it).
struct TableIndex::PairNodes {
  // The pair of words 0 and 1 as their tries read them (TrieKey) to those depths (TrieDepth); that of an
  // entry with `value` under `mask` in `index`, of a walk ahead, and of the level-1 node `word1`.
  static Pair Of(uint32_t key0, int depth0, uint32_t key1, int depth1) {
    return {key0 & PrefixMask(depth0), key1 & PrefixMask(depth1),
            static_cast<uint16_t>(depth0 << 8 | depth1)};
  }
  static Pair Of(const TableIndex& index, const std::array<uint32_t, kWords>& value,
                 const std::array<uint32_t, kWords>& mask) {
    return Of(index.TrieKey(0, value[0]), index.TrieDepth(0, mask[0]), index.TrieKey(1, value[1]),
              index.TrieDepth(1, mask[1]));
  }
  static Pair Of(const Filing& filing) {
    return Of(filing.key[0], filing.depth[0], filing.key[1], filing.depth[1]);
  }
  static Pair Of(const Node& word1) {
    return {word1.owner_prefix, word1.prefix, static_cast<uint16_t>(word1.owner_depth << 8 | word1.depth)};
  }
  struct Nodes {
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

  LineHashMap<Pair, Nodes> nodes;
};

// A change to the index (one writer): odd version while it lasts (a sequence lock for compilers), and the
// compiled form, if any, retired.
class TableIndex::Change {
 public:
  explicit Change(TableIndex* index)
      : index_(index), version_(index->version_.load(std::memory_order_relaxed)) {
    index_->version_.store(version_ + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    if (index_->compiled_.load(std::memory_order_relaxed) != nullptr) index_->RetireCompiled();
  }
  ~Change() { index_->version_.store(version_ + 2, std::memory_order_release); }
  Change(const Change&) = delete;
  Change& operator=(const Change&) = delete;

 private:
  TableIndex* index_;
  uint64_t version_;
};

// The compiled form: decision trees over the entries published at one version of the index, read as their
// tries read them (TrieKey: a prefix is a word's leading bits). The entries are grouped by the words they
// test (kTestedBits or more of them), a tree a group, so that an entry seldom meets a bit it does not test:
// it follows both branches of one. A leaf holds the entries that reach it in rank order, as they were
// published (their named hits too: a DropHit is a change), at most kLeafEntries of them unless no bit parts
// them. A node cuts on neighbouring bits of one word, up to kMaxCut of them (a stride: its children are the
// values of those bits): the bit that parts its entries best, widened a bit at a time while that makes its
// largest child smaller and its children together hold at most kCutCopies times its entries (as HiCuts
// does). A lookup goes down the trees in order of their least ranks and skips those whose least is past its
// exact candidate's rank.
//
// Why: a walk through the tries takes about 16 steps a packet on ClassBench's acl1, each a hundred
// instructions or so (its pending steps, bounds and interleaving); with every line in the caches it still
// ran at only 6.5 M packets/s (the thirtieth pass, bench/README.md). A tree's step is a load, a shift and a
// mask. On sets whose packets meet many groups (ClassBench's fw1) the trees may be slower than the walk, so
// each compiled form first times both ways on the lookups it serves (kTrialCalls of them) and keeps the
// faster. It is built once the index stops changing (kQuietLookups), and any change retires it from use:
// under churn, lookups walk.
struct TableIndex::Compiled {
  static constexpr size_t kLeafEntries = 4;
  static constexpr size_t kMaxEntries = size_t{1} << 19;  // more published entries than this: not compiled
  static constexpr size_t kLeafCopies = 24;  // leaves may name kLeafCopies times the entries, no more
  static constexpr int kMaxCut = 12;
  static constexpr uint8_t kLeaf = 0xff;
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
    uintptr_t matcher;  // Tagged
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
  // The trial: the time lookups took, and the packets they looked up, the trees' way (0) and the walk's (1),
  // in turn, kTrialRun calls each; then the way kept. Only the second half of each run is timed, once its
  // way's lines are back in the caches (on the 99,350-filter acl1 set, trees timed cold, or a call each way
  // in turn, lost by 5-10% to a walk that is 20% slower for good).
  static constexpr uint64_t kTrialCalls = 2048;
  static constexpr uint64_t kTrialRun = 256;
  enum Way : int { kTrees = 0, kWalk = 1, kUndecided = 2 };
  mutable std::atomic<uint64_t> calls{0};
  mutable std::array<std::atomic<uint64_t>, 2> nanoseconds{};
  mutable std::array<std::atomic<uint64_t>, 2> packets{};
  mutable std::atomic<int> way{kUndecided};
  // The packets looked up while it was the index's, unless it had kept the walk.
  mutable std::atomic<uint64_t> served{0};

  // The entries published in `index` (as a walk reads them), into `filed`; false when there are more than
  // kMaxEntries. (Reads made while a change is under way may see part of it: the form is then tagged with
  // the version it began at, which the index has left.)
  static bool Collect(const TableIndex& index, std::vector<LeafEntry>* filed);
  // The compiled form of `filed` (Collect's, taken at `version`), or nullptr when its leaves would hold too
  // many entries. Reads nothing else: it runs on the compiler thread.
  static std::unique_ptr<Compiled> Build(std::vector<LeafEntry> filed, uint64_t version);
  // Ends the trial: keeps the way that took less time a packet, and returns it.
  int Decide() const {
    auto per_packet = [this](int w) {
      const uint64_t looked_up = packets[w].load(std::memory_order_relaxed);
      return looked_up == 0 ? 0.0
                            : double(nanoseconds[w].load(std::memory_order_relaxed)) / double(looked_up);
    };
    const int kept = per_packet(kTrees) < per_packet(kWalk) ? kTrees : kWalk;
    way.store(kept, std::memory_order_relaxed);
    return kept;
  }

 private:
  class Builder;
};

// Grows a compiled form's trees, node by node from their roots.
class TableIndex::Compiled::Builder {
 public:
  // `filed`: the entries, in rank order.
  Builder(const std::vector<LeafEntry>& filed, Compiled* compiled)
      : filed_(filed), compiled_(compiled), budget_(kLeafCopies * filed.size() + 1024) {}

  // Adds the tree of the entries filed[members...] (in rank order) and returns its root's index in the
  // compiled nodes; false when the leaves went past their budget.
  bool AddTree(std::vector<uint32_t>* members, uint32_t* root) {
    *root = static_cast<uint32_t>(compiled_->nodes.size());
    compiled_->nodes.emplace_back();
    return Grow(*root, members, 0, Region{});
  }

 private:
  // The bits a path to a node tested, and their values.
  struct Region {
    std::array<uint32_t, kWords> value{};
    std::array<uint32_t, kWords> mask{};
  };
  // What a cut on bits [shift, shift + width) of word `word` makes of some entries: the entries its largest
  // child holds, and all its children together.
  struct Cut {
    int word;
    int shift;
    int width;
    size_t largest = 0;
    size_t total = 0;
  };

  // Calls `f` with each child of `cut` that filed_[k] goes to: those whose bits it matches (the values of
  // the bits it does not test, with those it tests).
  template <typename F>
  void ForEachChild(uint32_t k, const Cut& cut, F f) const {
    const uint32_t all = (1u << cut.width) - 1;
    const uint32_t bits = filed_[k].value[cut.word] >> cut.shift & all;
    const uint32_t free = all & ~(filed_[k].mask[cut.word] >> cut.shift);
    for (uint32_t sub = free;; sub = (sub - 1) & free) {
      f(bits | sub);
      if (sub == 0) break;
    }
  }
  // Counts the children of `cut` over the entries (*subsets)[from, end), unless together they come to more
  // than `most` (then `total` is more than that, and `largest` is not counted).
  void Measure(const std::vector<uint32_t>& subsets, size_t from, size_t most, Cut* cut) {
    const uint32_t all = (1u << cut->width) - 1;
    std::fill_n(held_.begin(), all + 1, 0);
    cut->total = 0;
    for (size_t i = from; i < subsets.size() && cut->total <= most; ++i) {
      ForEachChild(subsets[i], *cut, [&](uint32_t child) {
        ++held_[child];
        ++cut->total;
      });
    }
    cut->largest = *std::max_element(held_.begin(), held_.begin() + all + 1);
  }

  // Makes compiled_->nodes[at] the node for the entries (*subsets)[from, end) (indexes into filed_, in rank
  // order) in `region`; false when the leaves went past their budget.
  bool Grow(uint32_t at, std::vector<uint32_t>* subsets, size_t from, const Region& region) {
    const size_t size = subsets->size() - from;
    // The bit that parts the entries best: the one whose larger side is the smallest (an entry that does
    // not test it goes both ways). Of bits that part them as well, the leading one: prefixes are tested in
    // their order.
    int best = -1;
    if (size > kLeafEntries) {
      std::array<uint32_t, 32 * kWords> ones{}, zeros{};
      for (size_t i = from; i < subsets->size(); ++i) {
        const LeafEntry& f = filed_[(*subsets)[i]];
        for (int w = 0; w < kWords; ++w) {
          for (uint32_t m = f.mask[w] & ~region.mask[w]; m != 0; m &= m - 1) {
            const int b = __builtin_ctz(m);
            ++((f.value[w] >> b & 1) != 0 ? ones : zeros)[w * 32 + b];
          }
        }
      }
      size_t best_side = size;
      for (int w = 0; w < kWords; ++w) {
        for (int t = w * 32 + 31; t >= w * 32; --t) {
          const size_t side = size - std::min(ones[t], zeros[t]);
          if (side < best_side) {
            best_side = side;
            best = t;
          }
        }
      }
    }
    if (best < 0) {  // a leaf
      if (size > budget_ || size > 0xffff) return false;
      budget_ -= size;
      compiled_->nodes[at] = {static_cast<uint32_t>(compiled_->entries.size()), kLeaf, 0,
                              static_cast<uint16_t>(size)};
      for (size_t i = from; i < subsets->size(); ++i) compiled_->entries.push_back(filed_[(*subsets)[i]]);
      return true;
    }
    // The cut: the best bit, and the bits next to it that the path has not tested, one at a time, while
    // each makes the largest child smaller and the children together hold at most kCutCopies times the
    // entries.
    Cut cut{best / 32, best % 32, 1};
    Measure(*subsets, from, SIZE_MAX, &cut);
    while (cut.width < kMaxCut && (size_t{2} << cut.width) <= kCutCopies * size) {
      // (A cut a bit wider, whose children, one node each, and their entries come to kCutCopies times the
      // entries at most.)
      const size_t most = kCutCopies * size - (size_t{2} << cut.width);
      Cut wider{};
      for (const int shift : {cut.shift, cut.shift - 1}) {
        const int added = shift == cut.shift ? shift + cut.width : shift;
        if (added < 0 || added > 31 || (region.mask[cut.word] >> added & 1) != 0) continue;
        Cut tried{cut.word, shift, cut.width + 1};
        Measure(*subsets, from, most, &tried);
        if (tried.total <= most && (wider.width == 0 || tried.largest < wider.largest)) wider = tried;
      }
      if (wider.width == 0 || wider.largest >= cut.largest) break;
      cut = wider;
    }
    const auto first = static_cast<uint32_t>(compiled_->nodes.size());
    compiled_->nodes[at] = {first, static_cast<uint8_t>(cut.word), static_cast<uint8_t>(cut.shift),
                            static_cast<uint16_t>((1u << cut.width) - 1)};
    compiled_->nodes.resize(first + (size_t{1} << cut.width));
    // Each entry listed under every child it goes to, the children's lists end to end: child c's from
    // listed_from[c] to listed_from[c + 1].
    const uint32_t all = (1u << cut.width) - 1;
    std::vector<uint32_t> listed_from(all + 2, 0);
    for (size_t i = from; i < subsets->size(); ++i) {
      ForEachChild((*subsets)[i], cut, [&](uint32_t child) { ++listed_from[child + 1]; });
    }
    std::partial_sum(listed_from.begin(), listed_from.end(), listed_from.begin());
    std::vector<uint32_t> listed(listed_from.back());
    std::vector<uint32_t> next(listed_from.begin(), listed_from.end() - 1);
    for (size_t i = from; i < subsets->size(); ++i) {
      const uint32_t k = (*subsets)[i];
      ForEachChild(k, cut, [&](uint32_t child) { listed[next[child]++] = k; });
    }
    // Each child's entries go after this node's in `subsets` (a stack: a child's subtree is grown on top of
    // it, and taken off after).
    for (uint32_t child = 0; child <= all; ++child) {
      const size_t child_from = subsets->size();
      subsets->insert(subsets->end(), listed.begin() + listed_from[child],
                      listed.begin() + listed_from[child + 1]);
      Region narrower = region;
      narrower.mask[cut.word] |= all << cut.shift;
      narrower.value[cut.word] |= child << cut.shift;
      const bool grown = Grow(first + child, subsets, child_from, narrower);
      subsets->resize(child_from);
      if (!grown) return false;
    }
    return true;
  }

  static constexpr size_t kCutCopies = 2;
  const std::vector<LeafEntry>& filed_;
  Compiled* compiled_;
  size_t budget_;
  std::vector<uint32_t> held_ = std::vector<uint32_t>(size_t{1} << kMaxCut);  // Measure's counts
};

bool TableIndex::Compiled::Collect(const TableIndex& index, std::vector<LeafEntry>* filed) {
  std::vector<const Node*> stack;
  if (const Node* root = index.root_.load(std::memory_order_acquire)) stack.push_back(root);
  while (!stack.empty()) {
    const Node* node = stack.back();
    stack.pop_back();
    if (const Slots* slots = node->slots.load(std::memory_order_acquire)) {
      const uint32_t count = slots->count.load(std::memory_order_acquire);
      for (uint32_t i = 0; i < count; ++i) {
        const Entry& e = slots->entries()[i];
        const uint32_t generation = e.generation.load(std::memory_order_acquire);
        const uintptr_t tagged = e.matcher.load(std::memory_order_relaxed);
        LeafEntry f{e.Values(), e.Masks(), e.rank.load(std::memory_order_relaxed), tagged,
                    e.hit.load(std::memory_order_acquire)};
        if (tagged == 0 || !e.OneFilling(generation)) continue;
        for (int w = 0; w < kWords; ++w) {
          f.value[w] = index.TrieKey(w, f.value[w]);
          f.mask[w] = index.TrieKey(w, f.mask[w]);
        }
        filed->push_back(f);
        if (filed->size() > kMaxEntries) return false;
      }
    }
    if (const Node* sub = node->sub.load(std::memory_order_acquire)) stack.push_back(sub);
    for (const std::atomic<Node*>& child : node->child) {
      if (const Node* c = child.load(std::memory_order_acquire)) stack.push_back(c);
    }
  }
  return true;
}

std::unique_ptr<TableIndex::Compiled> TableIndex::Compiled::Build(std::vector<LeafEntry> filed,
                                                                  uint64_t version) {
  std::stable_sort(filed.begin(), filed.end(),
                   [](const LeafEntry& a, const LeafEntry& b) { return a.rank < b.rank; });
  // Entries that do not test a word a tree parts on go both ways there: grouped by the words they test,
  // each group a tree of its own, entries are seldom copied.
  std::array<std::vector<uint32_t>, 1 << kWords> group;
  for (uint32_t i = 0; i < filed.size(); ++i) {
    unsigned tested = 0;
    for (int w = 0; w < kWords; ++w) {
      if (__builtin_popcount(filed[i].mask[w]) >= kTestedBits) tested |= 1u << w;
    }
    group[tested].push_back(i);
  }
  auto compiled = std::make_unique<Compiled>();
  compiled->version = version;
  Builder builder(filed, compiled.get());
  for (std::vector<uint32_t>& members : group) {
    if (members.empty()) continue;
    uint32_t root;
    if (!builder.AddTree(&members, &root)) return nullptr;
    compiled->trees.push_back({root, filed[members[0]].rank});
  }
  std::sort(compiled->trees.begin(), compiled->trees.end(),
            [](const Tree& a, const Tree& b) { return a.least < b.least; });
  return compiled;
}

TableIndex::TableIndex(absl::Span<const CompiledMatcher* const> matchers, Reclaimer* reclaimer)
    : words_(ChooseWords(matchers)),
      serial_(last_index_serial.fetch_add(1, std::memory_order_relaxed) + 1),
      chain_first_(static_cast<int>(std::min<size_t>(kChainFirst, matchers.size() / kChainShare))),
      reclaimer_(reclaimer),
      nodes_(std::make_unique<NodeArena>()),
      pairs_(std::make_unique<PairNodes>()) {}

size_t TableIndex::nodes() const { return nodes_->count; }

TableIndex::~TableIndex() {
  if (compiler_.joinable()) compiler_.join();
  delete top_.load(std::memory_order_relaxed);
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

uint32_t TableIndex::TrieKey(int i, uint32_t word) const {
  const uint32_t host = HostOrder(word);
  const int r = words_[i].rotate;
  return r == 0 ? host : host << r | host >> (32 - r);
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
  const Change change(this);
  shedding_.erase(std::remove(shedding_.begin(), shedding_.end(), state), shedding_.end());
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
  const Change change(this);
  if (!shedding_.empty()) Shed();
  if (state->broad) return nullptr;
  const Values value = ValuesOf(*state, key);
  if (const size_t filed = FiledItem(*state, value); filed < state->items) {
    Item& at = state->item[filed];
    if (at.rules++ == 0) {
      // Published again as it was filed (its matcher word is the last a reader checks), no hit named.
      at.entry->hit.store(nullptr, std::memory_order_relaxed);
      at.entry->matcher.store(Tagged(state->matcher, state->exact), std::memory_order_release);
      ++entries_;
    }
    return &at;
  }
  // New values: the rules of the dormant entries are not coming back (an update would have put them back
  // first), and their slots go to others. The new values' pair and the dormant entries' nodes and arrays
  // load meanwhile (a rule whose key moved: each is the start of a chain of misses); once the pair is in,
  // so do the lines its entry will go to, while the dormant entries go.
  const Pair pair = PairNodes::Of(*this, value, state->mask);
  pairs_->nodes.Request(pair);
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
      GoBroad(state);
      return nullptr;
    }
    item = &state->item[state->items++];
  }
  item->value = value;
  item->rules = 1;
  Place(item, pair, state->mask, state->rank, Tagged(state->matcher, state->exact));
  return item;
}

void TableIndex::RemoveRule(Item* item) {
  const Change change(this);
  if (!shedding_.empty()) Shed();
  // (A broad matcher's items are shed once readers are past them: then none is in the index.)
  if (item == nullptr || item->node == nullptr || --item->rules > 0) return;
  // Dormant: readers skip it as they skip a hole.
  item->entry->matcher.store(0, std::memory_order_release);
  --entries_;
}

void TableIndex::NameHit(MatcherState* state, const Item* item, const RuleRecord* hit) {
  if (!state->exact || state->broad || item == nullptr) return;
  if (item->rules == 1) item->entry->hit.store(hit, std::memory_order_release);
}

void TableIndex::DropHit(const Item* item, const RuleRecord* hit) {
  // (A broad matcher's entries stay a while, named hits with them: Shed. An entry that is not exact names
  // none.)
  if (item == nullptr || item->node == nullptr) return;
  std::atomic<const RuleRecord*>& named = item->entry->hit;
  if (named.load(std::memory_order_relaxed) != hit) return;
  // A compiled form holds the hits its entries named: a change, so that none serves it past here.
  Change change(this);
  named.store(nullptr, std::memory_order_release);
}

void TableIndex::RequestItem(const Item* item) {
  if (item == nullptr || item->node == nullptr) return;
  __builtin_prefetch(item->node);
  __builtin_prefetch(Slots::Of(*item));
  __builtin_prefetch(item->entry);
}

const TableIndex::Node* TableIndex::RequestFiled(const Pair& pair) const {
  const PairNodes::Nodes* filed = pairs_->nodes.Find(pair);
  if (filed == nullptr) return nullptr;
  filed->Request();
  return filed->word1;
}

void TableIndex::StartFiling(const MatcherState& state, const uint32_t* key, Filing* filing) const {
  filing->serial = 0;
  // Nothing to walk for a broad matcher, or for values one of its items holds (AddRule takes that item).
  if (state.broad) return;
  const Values value = ValuesOf(state, key);
  if (FiledItem(state, value) < state.items) return;
  for (int i = 0; i < kWords; ++i) {
    filing->key[i] = TrieKey(i, value[i]);
    filing->depth[i] = static_cast<uint8_t>(TrieDepth(i, state.mask[i]));
  }
  pairs_->nodes.Request(PairNodes::Of(*filing));
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
    // The pair's slot is in: its node, or a new pair's way down from the word-0 trie's top.
    next = RequestFiled(PairNodes::Of(*filing));
    level = 1;
    if (next == nullptr) {
      level = 0;
      next = root_.load(std::memory_order_relaxed);
      const Top* top = top_.load(std::memory_order_relaxed);
      if (top != nullptr && filing->depth[0] >= kTopStrides)
        next = top->cell[filing->key[0] >> (32 - kTopBits)].reached.load(std::memory_order_relaxed);
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

void TableIndex::GoBroad(MatcherState* state) {
  constexpr std::array<uint32_t, kWords> kNone{};
  state->broad_item = Item{};
  Place(&state->broad_item, PairNodes::Of(*this, state->broad_item.value, kNone), kNone, state->rank,
        Tagged(state->matcher, false));
  state->broad = true;
  // Its other entries go once no reader can have passed where the broad entry went before it was there.
  if (reclaimer_ == nullptr) {
    DropItems(state);
    return;
  }
  state->broad_since = reclaimer_->Stamp();
  shedding_.push_back(state);
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

void TableIndex::Shed() {
  size_t done = 0;
  while (done < shedding_.size() && reclaimer_->Safe(shedding_[done]->broad_since))
    DropItems(shedding_[done++]);
  shedding_.erase(shedding_.begin(), shedding_.begin() + done);
}

void TableIndex::Place(Item* item, const Pair& key, const std::array<uint32_t, kWords>& mask, uint64_t rank,
                       uintptr_t matcher) {
  PairNodes::Nodes& pair = pairs_->nodes.At(key);
  if (pair.word1 == nullptr) {
    pair.word0 = Descend(nullptr, &root_, key.key0, key.depths >> 8, 0);
    pair.word1 = Descend(pair.word0, &pair.word0->sub, key.key1, key.depths & 0xff, 1);
  }
  // Each node the entry is under as one of its own (a sub-trie's) bounds its rank before it is published.
  if (rank < pair.word0_least) {
    pair.word0->Admit(rank);
    pair.word0_least = rank;
  }
  Node* node = pair.word1;
  while (node->fat) {
    node->Admit(rank);
    const int next = node->level + 1;
    node = Descend(node, &node->sub, TrieKey(next, item->value[next]), TrieDepth(next, mask[next]), next);
  }
  Append(node, item, mask, rank, matcher, nullptr);
  if (node->level + 1 < kWords && words_[node->level + 1].used && Slots::Of(*item)->live > kFatNode)
    Split(node);
  const Slots* slots = pair.word1->slots.load(std::memory_order_relaxed);
  pair.word1_slots = slots;
  pair.word1_next = nullptr;
  if (slots != nullptr) {
    const uint32_t next = slots->first_hole != Slots::kNoHole ? slots->first_hole
                                                              : slots->count.load(std::memory_order_relaxed);
    if (next < slots->capacity) pair.word1_next = &slots->entries()[next];
  }
}

void TableIndex::Split(Node* node) {
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
    Append(Descend(node, &sub, TrieKey(next, item->value[next]), TrieDepth(next, mask[next]), next), item,
           mask, e.rank.load(std::memory_order_relaxed), e.matcher.load(std::memory_order_relaxed),
           e.hit.load(std::memory_order_relaxed));
  }
  node->sub.store(sub.load(std::memory_order_relaxed), std::memory_order_release);
  node->fat = true;
  entries_ -= slots->live;
  node->slots.store(nullptr, std::memory_order_release);
  Retire(reclaimer_, [slots] { Slots::Free(slots); });
}

TableIndex::Node* TableIndex::Descend(Node* owner, std::atomic<Node*>* link, uint32_t key, int depth,
                                      int level) {
  Node* above = owner;   // the node whose link `link` is
  int above_depth = -1;  // its depth, or -1 at a trie's top
  // A node linked in the word-0 trie's top changes its cells.
  auto linked = [&](int linked_depth) {
    if (level == 0 && above_depth < kTopStrides) RefreshTop(key, std::min(linked_depth, kTopStrides));
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

std::atomic<TableIndex::Node*>* TableIndex::LinkTo(const Node& node) {
  if (node.up == nullptr) return &root_;
  if (node.up->level != node.level) return &node.up->sub;
  return &node.up->child[Nibble(node.prefix, node.up->depth)];
}

void TableIndex::RequestAbove(const Node& node) const {
  __builtin_prefetch(node.up);
  if (node.level == 1) pairs_->nodes.Request(PairNodes::Of(node));
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
    LinkTo(*node)->store(only, std::memory_order_release);
    if (only == nullptr && up != nullptr && up->level == node->level) --up->children;
    if (node->level == 0 && (up == nullptr || up->depth < kTopStrides))
      RefreshTop(node->prefix, std::min<int>(node->depth, kTopStrides));
    if (node->level == 1) pairs_->nodes.Erase(PairNodes::Of(*node));
    nodes_->Release(node, reclaimer_ == nullptr ? 0 : reclaimer_->Stamp());
    // `up` lost a child, or its sub-trie, unless the child took the node's place.
    if (only != nullptr) return;
    node = up;
  }
}

void TableIndex::RefreshTop(uint32_t key, int depth) {
  Top* old = top_.load(std::memory_order_relaxed);
  // Below the top's depth, a cell's passes stay: the node it reaches changes in place.
  Top* fresh = old != nullptr && depth == kTopStrides ? old : old == nullptr ? new Top : new Top(*old);
  const uint32_t first = (key & PrefixMask(depth)) >> (32 - kTopBits);
  const uint32_t cells = 1u << (kTopBits - kStrideBits * depth);
  for (uint32_t c = first; c < first + cells; ++c) {
    Top::Cell* top = &fresh->cell[c];
    const uint32_t value = c << (32 - kTopBits);
    int passed = 0;
    std::array<const Node*, kTopStrides> passes{};
    const Node* reached = nullptr;
    const Node* node = root_.load(std::memory_order_relaxed);
    for (; node != nullptr &&
           ((value ^ node->prefix) & PrefixMask(std::min<int>(node->depth, kTopStrides))) == 0;
         node = node->child[Nibble(value, node->depth)].load(std::memory_order_relaxed)) {
      if (node->depth >= kTopStrides) {
        reached = node;
        break;
      }
      passes[passed++] = node;
    }
    if (fresh == old) {
      assert(top->passed == passed && top->passes == passes);
    } else {
      top->passed = passed;
      top->passes = passes;
    }
    top->reached.store(reached, std::memory_order_release);
  }
  if (fresh == old) return;
  top_.store(fresh, std::memory_order_release);
  if (old != nullptr) Retire(reclaimer_, [old] { delete old; });
}

void TableIndex::Append(Node* node, Item* item, const std::array<uint32_t, kWords>& mask, uint64_t rank,
                        uintptr_t matcher, const RuleRecord* hit) {
  node->Admit(rank);
  Slots* slots = node->slots.load(std::memory_order_relaxed);
  uint32_t at;
  if (slots != nullptr && slots->first_hole != Slots::kNoHole) {
    at = slots->TakeHole();
    slots->entries()[at].Fill(item->value, mask, rank, matcher, std::memory_order_release);
    if (hit != nullptr) slots->entries()[at].hit.store(hit, std::memory_order_release);
  } else {
    if (slots == nullptr || slots->count.load(std::memory_order_relaxed) == slots->capacity) {
      Grow(node);
      slots = node->slots.load(std::memory_order_relaxed);
    }
    at = slots->count.load(std::memory_order_relaxed);
    slots->NewEntry(at, item->value, mask, rank, matcher, hit);
    slots->count.store(at + 1, std::memory_order_release);
  }
  slots->Hold(at, item);
  slots->least = std::min(slots->least, rank);
  ++slots->live;
  item->node = node;
  item->slot = at;
  item->entry = &slots->entries()[at];
  ++entries_;
}

void TableIndex::RemoveAt(const Item& item) {
  Slots* slots = Slots::Of(item);
  Entry& removed = *item.entry;
  if (removed.matcher.load(std::memory_order_relaxed) != 0) --entries_;  // (not dormant)
  removed.matcher.store(0, std::memory_order_release);
  slots->Vacate(item.slot);
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

void TableIndex::Grow(Node* node) {
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
    fresh->Hold(i, item);
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

// A walk's step, an address tagged in its low bit: a node to visit, or a node's slot array to scan.
enum : uintptr_t { kVisit = 0, kScan = 1, kStepKind = 1 };

// A query's walk through the tries: the steps it has still to take, each with a bound below the rank of
// every entry it leads to, its candidates so far, and the rank of the first exact one. It takes the step of
// the least bound first, and ends when that is past the exact candidate's rank: its candidates end where
// they may, having looked at as few entries as it can tell. The step of its next turn is set apart, its lines
// requested a turn ahead: the next node down the path it is on, or else the pending step of the least bound.
// (Pending steps used to be requested as they were added: most of the sub-tries a walk passes are never
// taken, and their requests held up the others; lookups +5-15% on the five ClassBench sets.)
struct TableIndex::Walk {
  // A walk's steps pending stay far fewer (at most 27 on the five ClassBench 10K sets' traces).
  static constexpr size_t kMaxPending = 64;

  Query* query;
  std::array<uint32_t, kWords> word;
  std::array<uint32_t, kWords> key;  // word i as its trie reads it
  uint64_t bound = ~uint64_t{0};
  size_t count = 0;
  bool overflow = false;
  uint32_t pending = 0;
  uint64_t least = 0;   // the bound of the step being taken, or of the one ahead once it is set
  uintptr_t ahead = 0;  // the step of the next turn, its lines requested (0: none, the walk is done)
  std::array<uintptr_t, kMaxPending> step;
  std::array<uint64_t, kMaxPending> step_least;

  void Add(uintptr_t next, uint64_t next_least) {
    if (next_least > bound) return;
    if (pending == kMaxPending) {
      overflow = true;
      return;
    }
    step_least[pending] = next_least;
    step[pending++] = next;
  }
  // Takes out the pending step of the least bound, unless there is none up to the exact candidate's rank.
  bool Next(uintptr_t* next) {
    if (pending == 0) return false;
    // No pending step's bound is below the last one taken's: the last added, when its bound is that, is one
    // of the least.
    uint32_t best = pending - 1;
    if (step_least[best] != least) {
      // (Selected without branches: where the least bound is cannot be predicted; acl1 +4%.)
      uint64_t best_least = step_least[best];
      for (uint32_t i = 0; i < pending - 1; ++i) {
        const bool less = step_least[i] < best_least;
        best_least = less ? step_least[i] : best_least;
        best = less ? i : best;
      }
    }
    if (step_least[best] > bound) return false;
    *next = step[best];
    least = step_least[best];
    --pending;
    step[best] = step[pending];
    step_least[best] = step_least[pending];
    return true;
  }
  // With no step ahead: takes the pending step of the least bound, if any (Next), as the step ahead.
  void TakeAhead() {
    uintptr_t next;
    if (Next(&next)) SetAhead(next);
  }
  // Requests `next`'s lines (a node's, or a slot array's header and first entry) and sets it ahead.
  void SetAhead(uintptr_t next) {
    static_assert(kNodeLines == 2);
    const char* at = reinterpret_cast<const char*>(next & ~kStepKind);
    __builtin_prefetch(at);
    __builtin_prefetch(at + 64);
    ahead = next;
  }
  // Takes entry `e` as a candidate when it is published whole, the packet matches it and its rank is in
  // the walk's range; false once `out` overflowed (the walk is over).
  bool Consider(const Entry& e) {
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
    if (!e.OneFilling(generation)) return true;
    return Take(rank, tagged, hit);
  }
  // Takes the entry of matcher word `tagged` (Tagged), `rank` and named hit `hit`, which the packet matches,
  // as a candidate; false once `out` overflowed (the walk is over).
  bool Take(uint64_t rank, uintptr_t tagged, const RuleRecord* hit) {
    const bool exact = (tagged & 1) != 0;
    if (exact) {
      bound = rank;
      if (hit != nullptr) __builtin_prefetch(hit);
    }
    if (count == kMaxCandidates && !MakeRoom()) {
      overflow = true;
      return false;
    }
    query->out[count++] = {rank, reinterpret_cast<const CompiledMatcher*>(tagged & ~uintptr_t{1}),
                           exact ? hit : nullptr, exact};
    return true;
  }
  // Keeps the candidates up to the bound; false when `out` is still full.
  bool MakeRoom() {
    size_t kept = 0;
    for (size_t i = 0; i < count; ++i) {
      if (query->out[i].rank <= bound) query->out[kept++] = query->out[i];
    }
    count = kept;
    return count < kMaxCandidates;
  }
};

void TableIndex::Step(uintptr_t step, Walk* q) const {
  if ((step & kStepKind) == kVisit) {
    const Node* node = reinterpret_cast<const Node*>(step);
    const uint32_t key = q->key[node->level];
    if (((key ^ node->prefix) & PrefixMask(node->depth)) != 0) return;  // the packet's path leaves here
    // The node's own entries: in its slots, or its sub-trie. A node that splits publishes its sub-trie
    // before it lets its slots go (and the array it lets go still holds them): slots first.
    const uint64_t own = std::max(q->least, node->least.load(std::memory_order_relaxed));
    if (const Slots* slots = node->slots.load(std::memory_order_acquire)) {
      q->Add(reinterpret_cast<uintptr_t>(slots) | kScan, own);
    } else if (const Node* sub = node->sub.load(std::memory_order_acquire)) {
      q->Add(reinterpret_cast<uintptr_t>(sub), own);
    }
    // The path goes on: its next node is the step ahead, its bound being the least, and never waits among
    // the pending ones (acl1 +4-9%).
    if (node->depth < kMaxDepth) {
      if (const Node* child = node->child[Nibble(key, node->depth)].load(std::memory_order_acquire))
        q->SetAhead(reinterpret_cast<uintptr_t>(child));
    }
    return;
  }
  const Slots* slots = reinterpret_cast<const Slots*>(step & ~kStepKind);
  const uint32_t count = slots->count.load(std::memory_order_acquire);
  const Entry* e = slots->entries();
  for (uint32_t i = 0; i < count && q->Consider(e[i]); ++i) {
  }
}

// A compile on the compiler thread: the entries collected, then the form built of them.
struct TableIndex::Job {
  std::vector<Compiled::LeafEntry> filed;
  uint64_t version;
  std::unique_ptr<Compiled> built;
};

void TableIndex::Publish(std::unique_ptr<Compiled> fresh, uint64_t version) const {
  std::atomic_thread_fence(std::memory_order_acquire);
  const bool unchanged = version_.load(std::memory_order_relaxed) == version;
  if (fresh != nullptr && unchanged) {
    const Compiled* old = compiled_.exchange(fresh.release(), std::memory_order_acq_rel);
    if (old != nullptr) Retire(reclaimer_, [old] { delete old; });
  } else if (unchanged) {
    quiet_version_.store(version | 1, std::memory_order_relaxed);  // too large: not tried again at it
  }
}

void TableIndex::StartCompile(uint64_t version, bool on_thread) const {
  if ((version & 1) != 0 || compiling_.exchange(true, std::memory_order_acquire)) return;
  auto job = std::make_unique<Job>();
  job->version = version;
  if (!Compiled::Collect(*this, &job->filed)) {
    Publish(nullptr, version);
    compiling_.store(false, std::memory_order_release);
    return;
  }
  job_ = std::move(job);
  auto build = [this, job = job_.get()] {
    job->built = Compiled::Build(std::move(job->filed), job->version);
    job_done_.store(true, std::memory_order_release);
  };
  if (on_thread) {
    try {
      compiler_ = std::thread(build);
      return;
    } catch (const std::system_error&) {  // (no thread to be had: built here)
    }
  }
  build();
  FinishCompile();
}

void TableIndex::FinishCompile() const {
  bool done = true;
  if (!job_done_.compare_exchange_strong(done, false, std::memory_order_acquire)) return;
  if (compiler_.joinable()) compiler_.join();
  std::unique_ptr<Job> job = std::move(job_);
  Publish(std::move(job->built), job->version);
  compiling_.store(false, std::memory_order_release);
}

void TableIndex::RetireCompiled() {
  const Compiled* old = compiled_.exchange(nullptr, std::memory_order_acq_rel);
  if (old == nullptr) return;
  // Unless its trees served lookups for longer than the index was quiet before it, compiling was not worth
  // it (the index changes too often, or its trees are slower than its walk): the next waits four times as
  // long. (A compiled form published after this change began is stale at once; the next change retires it.)
  const uint64_t needed = quiet_needed_.load(std::memory_order_relaxed);
  const bool worth = old->way.load(std::memory_order_relaxed) == Compiled::kTrees &&
                     old->served.load(std::memory_order_relaxed) >= needed;
  quiet_needed_.store(worth ? kQuietLookups : std::min(4 * needed, kMaxQuietLookups),
                      std::memory_order_relaxed);
  Retire(reclaimer_, [old] { delete old; });
}

bool TableIndex::Compile() const {
  StartCompile(version_.load(std::memory_order_acquire), /*on_thread=*/false);
  if (!IsCompiled()) return false;
  compiled_.load(std::memory_order_relaxed)->way.store(Compiled::kTrees, std::memory_order_relaxed);
  return true;
}

bool TableIndex::IsCompiled() const {
  const uint64_t version = version_.load(std::memory_order_acquire);
  const Compiled* compiled = compiled_.load(std::memory_order_acquire);
  return compiled != nullptr && compiled->version == version;
}

void TableIndex::NoteQuiet(uint64_t version, size_t n) const {
  if (compiling_.load(std::memory_order_relaxed)) {
    if (job_done_.load(std::memory_order_relaxed)) FinishCompile();
    return;
  }
  const uint64_t seen = quiet_version_.load(std::memory_order_relaxed);
  if ((version & 1) != 0 || seen == (version | 1)) return;
  if (seen != version) {
    quiet_version_.store(version, std::memory_order_relaxed);
    quiet_lookups_.store(n, std::memory_order_relaxed);
    return;
  }
  if (quiet_lookups_.fetch_add(n, std::memory_order_relaxed) + n >=
      quiet_needed_.load(std::memory_order_relaxed)) {
    quiet_lookups_.store(0, std::memory_order_relaxed);
    StartCompile(version, /*on_thread=*/true);
  }
}

void TableIndex::CandidatesCompiled(const Compiled& compiled, Walk* walks, size_t n) const {
  constexpr uint32_t kNoTree = ~uint32_t{0};
  // Tree by tree in order of their least ranks (a packet whose exact candidate ranks below a tree's least
  // skips it); down each, a level of each packet in turn.
  std::array<uint32_t, 32> at;
  std::array<std::array<uint32_t, kWords>, 32> key;  // the packets' words as trie keys, together
  for (size_t j = 0; j < n; ++j) key[j] = walks[j].key;
  for (const Compiled::Tree& tree : compiled.trees) {
    // (The packets still going down, packed: a packet at a leaf leaves the list.)
    std::array<uint8_t, 32> going;
    size_t left = 0;
    for (size_t j = 0; j < n; ++j) {
      const bool skips = walks[j].bound < tree.least;
      at[j] = skips ? kNoTree : tree.root;
      going[left] = static_cast<uint8_t>(j);
      left += !skips;
    }
    while (left > 0) {
      for (size_t g = 0; g < left;) {
        const size_t j = going[g];
        const Compiled::TreeNode node = compiled.nodes[at[j]];
        if (node.word == Compiled::kLeaf) {
          going[g] = going[--left];
          continue;
        }
        at[j] = node.next + (key[j][node.word] >> node.shift & node.bits);
        __builtin_prefetch(&compiled.nodes[at[j]]);
        ++g;
      }
    }
    for (size_t j = 0; j < n; ++j) {
      if (at[j] != kNoTree) __builtin_prefetch(&compiled.entries[compiled.nodes[at[j]].next]);
    }
    // The leaves' entries up to the bound that the packet matches.
    for (size_t j = 0; j < n; ++j) {
      if (at[j] == kNoTree) continue;
      Walk& q = walks[j];
      const Compiled::TreeNode leaf = compiled.nodes[at[j]];
      for (uint32_t i = leaf.next; i < leaf.next + leaf.bits; ++i) {
        const Compiled::LeafEntry& e = compiled.entries[i];
        if (e.rank > q.bound) break;
        uint32_t differ = 0;
        for (int k = 0; k < kWords; ++k) differ |= (key[j][k] & e.mask[k]) ^ e.value[k];
        if (differ == 0 && e.rank >= q.query->from_rank && !q.Take(e.rank, e.matcher, e.hit)) break;
      }
    }
  }
}

void TableIndex::CandidatesOf(Query* queries, size_t n) const {
  constexpr size_t kMaxWalks = 32;
  const Top* tops = top_.load(std::memory_order_acquire);
  const uint64_t version = version_.load(std::memory_order_acquire);
  const Compiled* compiled = compiled_.load(std::memory_order_acquire);
  if (compiled != nullptr && compiled->version != version) compiled = nullptr;
  // The trees' way, the walk's, or in a compiled form's trial either, timed.
  int way = Compiled::kWalk;
  bool timed = false;
  std::chrono::steady_clock::time_point start;
  if (compiled != nullptr) {
    way = compiled->way.load(std::memory_order_relaxed);
    // (A form that kept the walk is not worth its compiling however long it serves: not counted.)
    if (way != Compiled::kWalk) compiled->served.fetch_add(n, std::memory_order_relaxed);
    if (way == Compiled::kUndecided) {
      const uint64_t call = compiled->calls.fetch_add(1, std::memory_order_relaxed);
      if (call < Compiled::kTrialCalls) {
        way = static_cast<int>(call / Compiled::kTrialRun & 1);
        timed = call % Compiled::kTrialRun >= Compiled::kTrialRun / 2;
        if (timed) start = std::chrono::steady_clock::now();
      } else {
        way = call == Compiled::kTrialCalls ? compiled->Decide() : Compiled::kWalk;
      }
    }
  }
  for (size_t at = 0; at < n; at += kMaxWalks) {
    const size_t walks = std::min(kMaxWalks, n - at);
    Walk walk[kMaxWalks];
    uint8_t live[kMaxWalks];
    for (size_t i = 0; i < walks; ++i) {
      Walk& q = walk[i];
      q.query = &queries[at + i];
      for (int k = 0; k < kWords; ++k) {
        q.word[k] = words_[k].used
                        ? Definer::Word{words_[k].offset, words_[k].fold_from, 0xffffffffu}.Read(q.query->hv)
                        : 0;
      }
      live[i] = static_cast<uint8_t>(i);
      for (int k = 0; k < kWords; ++k) q.key[k] = TrieKey(k, q.word[k]);
      if (way == Compiled::kTrees) continue;  // (its candidates come from the trees, below)
      // From the top's cell: the sub-tries of the nodes it passes, and the node it reaches.
      if (tops != nullptr) {
        const Top::Cell* top = &tops->cell[q.key[0] >> (32 - kTopBits)];
        for (int p = 0; p < top->passed; ++p) {
          const Node* node = top->passes[p];
          if (const Node* sub = node->sub.load(std::memory_order_acquire))
            q.Add(reinterpret_cast<uintptr_t>(sub), node->least.load(std::memory_order_relaxed));
        }
        if (const Node* reached = top->reached.load(std::memory_order_acquire))
          q.Add(reinterpret_cast<uintptr_t>(reached), 0);
      }
      q.TakeAhead();
    }
    if (way == Compiled::kTrees) CandidatesCompiled(*compiled, walk, walks);
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
        Step(next, &q);
        if (q.ahead == 0) q.TakeAhead();
        ++i;
      }
    }
    for (size_t i = 0; i < walks; ++i) {
      Walk& q = walk[i];
      Candidate* out = q.query->out;
      if (q.overflow) {
        q.query->count = kMaxCandidates + 1;
        continue;
      }
      // Ascending rank (a handful, mostly), up to the bound, each matcher once (ranks are distinct per
      // matcher), exact if any of its entries found was.
      for (size_t k = 1; k < q.count; ++k) {
        const Candidate c = out[k];
        size_t j = k;
        for (; j > 0 && out[j - 1].rank > c.rank; --j) out[j] = out[j - 1];
        out[j] = c;
      }
      size_t kept = 0;
      for (size_t k = 0; k < q.count && out[k].rank <= q.bound; ++k) {
        if (kept > 0 && out[kept - 1].rank == out[k].rank) {
          out[kept - 1].exact |= out[k].exact;
          if (out[kept - 1].hit == nullptr) out[kept - 1].hit = out[k].hit;
        } else {
          out[kept++] = out[k];
        }
      }
      q.query->count = kept;
    }
  }
  if (timed) {
    compiled->nanoseconds[way].fetch_add(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
            .count(),
        std::memory_order_relaxed);
    compiled->packets[way].fetch_add(n, std::memory_order_relaxed);
  }
  if (compiled == nullptr) NoteQuiet(version, n);
}

}  // namespace drsim::hw
