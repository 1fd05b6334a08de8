// TableIndex: which matchers of a flow table may hold a rule a packet matches, so that a lookup in a table
// of thousands of small matchers (an ACL's, one or more per filter) probes a few of them instead of walking
// them all.
//
// What
//   The driver keeps one per flow table once the table has kIndexFromMatchers matchers. Given a packet's
//   header vector, the index names its candidates: in lookup order (ascending rank), every matcher that
//   holds a rule the packet matches, up to the first exact candidate. Probing the candidates in that order
//   and stopping at the first hit gives the table's first hit, as walking its whole chain does.
//
// How
//   The index reads four words of the header vector, chosen from the table's matchers when it is built: in
//   order, those whose masks have the most leading bits (addresses, then say the ports word, read from its
//   destination port when that is where its masks' prefixes are, and the protocol's). Every distinct rule
//   key of a matcher, cut to those four words, is one entry (value, mask, the matcher, its lookup rank).
//   Entries are filed by their prefixes in nested tries, one level per word, each path-compressed with a
//   3-bit stride (a path crosses at most 11 nodes of a trie, two cache lines each): a node of the word-0
//   trie leads to a word-1 trie of the entries whose word-0 prefix ends there, whose nodes hold the entries;
//   a node of a word-1 or later trie that comes to hold more than kFatNode entries splits them into a trie
//   of the next word under it. A packet collects, along its path through every trie it reaches, the entries
//   whose four words it matches: the candidates.
//
//   An entry is exact when the four words cover the matcher's whole key (an ACL's, mostly): a packet
//   matching it matches a rule, so the candidates end at the first exact one. Other entries only filter: a
//   candidate is looked up in its own match table. Each node bounds from below the ranks of its own entries
//   (its slots', or its sub-trie's), so a walk takes its steps in order of those bounds and ends once the
//   next one is past an exact candidate's rank. An exact entry also names the rule of its key when its
//   matcher holds only one (the driver tells it, NameHit), so that the lookup need not look the key up in
//   the matcher's table.
//
//   A walk starts from a shortcut over the word-0 trie's first kShortcutStrides nibbles, which every packet
//   would otherwise walk down. A burst's packets walk the tries together, a step of each in turn
//   (CandidatesOf), so that their loads overlap.
//
//   A matcher with more than kMaxEntriesPerMatcher distinct entries (a big five-tuple table) becomes broad:
//   one entry with empty masks, a candidate of every packet, and its rules no longer change the index. An
//   index never costs a rule more than a few loads, nor memory per rule.
//
//   A node that holds no entry any more (dormant ones count) and parts no paths goes: it is unlinked (a node
//   leading to one other is replaced by it), and so are the nodes above it this leaves so; its memory serves
//   a new node once readers are past it. The tries of a table whose rules keep moving to new keys stay as
//   if filed afresh. Dormant entries keep their nodes: the driver builds a new index when Stale() says that
//   most nodes hold no live entry, as it does when the table has grown its matchers fourfold (the words are
//   chosen again).
//
// Compiled trees
//   An index that stops changing compiles itself (Compile, below): decision trees over its words' bits, a
//   node cutting on up to twelve bits of a word at once, whose leaves list, in rank order, the entries a
//   packet reaching them may match. A lookup then takes a load, a shift and a mask a step rather than a
//   walk's bookkeeping. The compiled form times the trees against the walk on the lookups it serves first
//   and keeps the faster. Once it serves, the writer takes each change into it as the change is made (an
//   entry copied into the leaves it reaches, or marked gone where it lies), and folds what that leaves
//   behind into new trees, built on a thread of the index's own, while lookups go on through the old ones.
//   Under churn, lookups stay on the trees, unless changes come faster than keeping the trees up pays for
//   (a burst of updates retires them; a fold follows).
//
// Thread-safety
//   One writer (the driver, under its domain lock), lock-free readers inside read sections of the
//   reclaimer. A node that goes is unlinked whole (its own links stay as they were: a reader on it goes on
//   below), and its memory is used again only once no reader can be on it (Reclaimer::Stamp).
//
//   A new entry is published by its node's count (release) or, in the slot of a removed one (a hole), by
//   its matcher pointer. A removed entry's matcher pointer is cleared in place, as is a dormant one's, which
//   is published again by its matcher pointer alone (its words and rank are those it was filled with, its
//   hit cleared first). Each filling of a slot changes its generation (a sequence lock), so a reader takes
//   an entry's words, matcher and named hit from one filling or skips it. A full slot array is replaced by a
//   larger copy, published whole, the old one retired. A node's entries that split into a new trie are filed
//   there before it is linked, and the node's slot array is let go (retired whole) only after; a reader
//   reads a node's slots before its sub-trie. Trie nodes are complete before they are linked; a node's
//   `least` falls before an entry under it is published.
//
//   The driver adds a rule's entry before the rule goes into its match table and removes it after the rule
//   left it, so a packet that finds the rule also finds its matcher among the candidates. An entry that
//   disappears or appears while a packet is looked up stands only for rules being deleted or added
//   meanwhile (a matcher going broad keeps its other entries until readers are past: the broad entry may
//   sit where a packet had already looked).
//
//   A compiled form is built from what a reader, in its read section, reads as a walk would (the compiler
//   thread reads only that), and tagged with the index's version when that reader began. Each change makes
//   the version odd while it lasts and even after, so a form built while one was under way carries a
//   version the index has left, and is never used (it is not even published once the version moved).
//   Readers use a form only when its version is the index's at the start of their lookup (or the one
//   before, while a change is under way), and take its entries as they are, named hits too (naming or
//   dropping one is a change: a form never names a record past its DropHit, so a reader holding one is in a
//   read section that keeps it). The writer takes each change into the form that serves, in the change,
//   and then stamps the form with the version the change ends at; a leaf it changes is copied and replaced
//   whole, or an entry's matcher word or hit set with an atomic store. A form it cannot change, or one
//   published while a change was under way, is retired (the latter by the next change: its version was
//   left behind). Forms are retired through the reclaimer.
#ifndef DRSIM_HW_TABLE_INDEX_H_
#define DRSIM_HW_TABLE_INDEX_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "absl/types/span.h"
#include "hw/definer.h"
#include "hw/flow_table.h"
#include "hw/lookup_memory.h"
#include "hw/reclaimer.h"

namespace drsim::hw {

class TableIndex {
 public:
  static constexpr int kWords = 4;  // each keys a level of tries, and filters entries
  static constexpr uint32_t kFatNode = 16;
  static constexpr size_t kStaleNodesPerEntry = 16;
  static constexpr size_t kIndexFromMatchers = 16;
  static constexpr size_t kMaxEntriesPerMatcher = 8;
  static constexpr size_t kMaxCandidates = 64;
  // A walk starts below the word-0 trie's first kShortcutStrides nibbles (a shortcut for each value).
  static constexpr int kShortcutStrides = 3;
  // A lookup in an indexed table may walk the first chain_first() matchers on the chain before it asks the
  // index about the rest: sets whose packets mostly hit early (a few hot matchers before a long tail) are
  // cheaper walked than indexed (the NIC's burst walk judges whether they do). That is an eighth of the
  // matchers the index was built over, up to 128.
  static constexpr int kChainFirst = 128;
  static constexpr int kChainShare = 8;
  // The burst walk takes a packet no further than its kChainLookups-th lookup in vain there (past a
  // matcher's summary).
  static constexpr int kChainLookups = 2;

  // A header-vector word the index reads, as a definer reads it (its fold included); `used` false: none
  // (the table's matchers mask fewer words), which reads as 0 and no entry masks.
  struct Word {
    uint16_t offset = 0;  // (as Definer::Word has them)
    uint16_t fold_from = 0;
    bool used = false;
    uint8_t rotate = 0;  // a trie reads the word (as a number, its first byte highest) rotated left by this
  };

  // A matcher that may hold a rule the packet matches, with its place in the lookup order. `exact`: the
  // packet matches one of its rules' whole keys (the entry covers every word the matcher's key has), so it
  // hits unless that rule is being added or removed meanwhile; `hit`, when not nullptr, is that rule (valid
  // for the read section), found without a lookup in the matcher's table.
  struct Candidate {
    uint64_t rank;
    const CompiledMatcher* matcher;
    const RuleRecord* hit;
    bool exact;
  };

  // A trie node, and a slot of a node's entries (hw/table_index_tries.h); an Item names the ones holding its
  // entry.
  struct Node;
  struct Entry;
  // One distinct entry of a matcher: its values and the rules sharing them. The driver's memory. An item
  // never moves while its matcher state lives, so that a rule can keep the item it counts in. Its entry
  // stays filed when its last rule leaves, unpublished (readers take it for a hole): dormant, it is
  // published again as it was when a rule with its values comes back (an update of a rule's actions is a
  // delete and an insert of its key), and removed when a rule with other values comes instead (or with
  // its matcher).
  struct Item {
    std::array<uint32_t, kWords> value{};
    uint32_t rules = 0;  // 0: dormant, or free when in no node
    uint32_t slot = 0;
    Node* node = nullptr;  // where its entry is: the node, the slot and the entry itself
    Entry* entry = nullptr;
  };
  // What the index keeps for one matcher, in memory the driver owns (its matcher object) and passes back
  // on each call; the index reads and writes it only under the driver's lock. In a matcher of one item, a
  // rule's delete, and an insert that puts back values the item held, read only its first line (an insert of
  // new values reads its masks and rank too), first thing: it is in lookup memory (huge pages).
  struct alignas(64) MatcherState : InLookupMemory {
    const CompiledMatcher* matcher = nullptr;
    std::array<int8_t, kWords> position{};  // the key word holding index word i, or -1
    bool exact = false;  // the index words cover every word of the matcher's key (its entries are exact)
    bool broad = false;
    // item[0, items) holds the distinct entries, live or dormant, and free items (broad: until readers are
    // past them)
    uint8_t items = 0;
    std::array<Item, kMaxEntriesPerMatcher> item{};
    std::array<uint32_t, kWords> mask{};
    uint64_t rank = 0;
    Item broad_item;           // the entry with empty masks while broad
    uint64_t broad_since = 0;  // the reclaimer's stamp when it went broad
  };
  static_assert(offsetof(MatcherState, item) + sizeof(Item) <= 64, "the first item shares the first line");
  static_assert(kMaxEntriesPerMatcher <= 255, "MatcherState::items counts them in a byte");

  // An index over the words ChooseWords picks from `matchers` (a table's, at least one). `reclaimer`: where
  // replaced slot arrays wait for readers (nullptr: no concurrent readers).
  TableIndex(absl::Span<const CompiledMatcher* const> matchers, Reclaimer* reclaimer);
  ~TableIndex();
  TableIndex(const TableIndex&) = delete;
  TableIndex& operator=(const TableIndex&) = delete;

  // The words an index over `matchers` reads (a word is a layout offset and the word folded into it, as
  // definers read them): in turn, the one with the most leading mask bits summed over the matchers, read as
  // is or rotated by 16 bits, whichever gives more, of those not chosen yet (once none has any, the one with
  // the most mask bits: it only filters).
  static std::array<Word, kWords> ChooseWords(absl::Span<const CompiledMatcher* const> matchers);
  const std::array<Word, kWords>& words() const { return words_; }
  // A packet's words as the index reads them: word i as read from its header vector (0 when unused).
  using PacketWords = std::array<uint32_t, kWords>;
  // How the index reads each word from a header vector, as a definer reads a word: a full mask, or an empty
  // one for an unused word (it reads as 0). A caller holding the packet another way (a plain frame, say)
  // reads its words by these.
  const std::array<Definer::Word, kWords>& word_reads() const { return word_reads_; }
  PacketWords ReadWords(const uint8_t* hv) const {
    PacketWords words;
    for (int k = 0; k < kWords; ++k) words[k] = word_reads_[k].Read(hv);
    return words;
  }
  int chain_first() const { return chain_first_; }
  // Word `i` of an entry or a packet as its trie (and the compiled trees) read it: its bytes as a number,
  // the first highest, rotated as words()[i] says. TrieKeys: each of a packet's words so, into
  // keys[0, kWords), four at once.
  uint32_t TrieKey(int i, uint32_t word) const;
  void TrieKeys(const PacketWords& words, uint32_t* keys) const;

  // Control side, under the driver's lock. A matcher joins before its first rule is indexed and leaves
  // after its last rule was removed (or, broad, whenever it leaves: its broad entry goes with it).
  void AddMatcher(const CompiledMatcher* matcher, MatcherState* state);
  void RemoveMatcher(MatcherState* state);
  // A rule with definer key `key` (the matcher's key_words() words): AddRule before it is inserted into the
  // match table, RemoveRule after it was erased from it. AddRule returns the item the rule counts in
  // (nullptr: the matcher is broad), which stays where it is while `state` lives: the driver keeps it with
  // the rule and passes it to RemoveRule (and to DropHit), which reads no more of the matcher's state.
  // FindItem, for a caller that did not keep it (tests), finds the item of a key's index words (ValuesOf)
  // among those with rules.
  using Values = std::array<uint32_t, kWords>;
  static Values ValuesOf(const MatcherState& state, const uint32_t* key);
  static Item* FindItem(MatcherState* state, const Values& value);
  Item* AddRule(MatcherState* state, const uint32_t* key);
  void RemoveRule(Item* item);
  // An exact entry names the rule a packet matching it hits, so that a lookup need not look for it in the
  // matcher's table: NameHit after `hit`, the record of a rule counted in `item` (AddRule's), went into the
  // table, if it is the only rule of the matcher with that key (else nothing is named); DropHit before the
  // record `hit` of a rule counted in `item` (AddRule's) leaves the table (a reader that still holds it is
  // then in a read section that keeps the record). Either does nothing for a matcher whose entries are not
  // exact, or for a null item or one no longer in the index (a broad matcher's, once shed).
  void NameHit(MatcherState* state, const Item* item, const RuleRecord* hit);
  void DropHit(const Item* item, const RuleRecord* hit);
  // For a writer that knows its next rules a few turns ahead (a batch of updates), so that their loads
  // overlap the rules before: each starts loading lines and changes nothing. RequestItem: what RemoveRule
  // and DropHit read of `item` (AddRule's, or nullptr) past the item itself, which the removal of its entry
  // reads too once it is dormant: its node, slot array and entry.
  static void RequestItem(const Item* item);
  // A turn after RequestItem: what the removal of `item`'s entry reads next when it leaves the node empty
  // (the node above, and a word-1 node's pair slot).
  void RequestPrune(const Item* item) const;
  // A walk ahead to where AddRule(state, key) files `key`'s values when they are new to the matcher: the pair
  // table's slot, then the nodes down the tries (a new pair's from the word-0 trie's top, a fat node's into
  // the trie under it) to the node the entry goes to, and its slot array. StartFiling (once `state` is in)
  // requests the slot; each ContinueFiling, a turn later than the call before, reads only what that call
  // requested and requests the next node, until it returns false (done: the walk reached the node, or
  // where AddRule makes one, or the values are not new). The walk only loads lines: the writer may change
  // the tries meanwhile (a node the walk reads may be let go, or used again elsewhere), and AddRule walks
  // them itself. A Filing belongs to the index that started it: ContinueFiling on another index is done.
  struct Filing {
    uint64_t serial = 0;                 // the index's (0: done)
    std::array<uint32_t, kWords> key{};  // each word's trie key, and its depth under the matcher's mask
    std::array<uint8_t, kWords> depth{};
    uint8_t level = 0;
    const Node* node = nullptr;  // the node to read next (nullptr: the pair's slot)
  };
  void StartFiling(const MatcherState& state, const uint32_t* key, Filing* filing) const;
  bool ContinueFiling(Filing* filing) const;

  // Data side, in a read section. Writes to `out` (room for kMaxCandidates) the candidates for the header
  // vector `hv` of rank `from_rank` or more (hw::LookupRank: those a walk of the chain from a matcher of
  // that rank would try), in ascending rank, each matcher once, up to the first exact one (the walk ends
  // there unless its rule is coming or going: then ask again from the next rank), and returns how many;
  // kMaxCandidates + 1 when there were more (then `out` is unspecified: walk the chain instead). Every
  // matcher holding a rule the packet matches, of a rank up to the last candidate's (any rank when that is
  // not exact), is a candidate.
  size_t Candidates(const uint8_t* hv, uint64_t from_rank, Candidate* out) const {
    Query query{ReadWords(hv), from_rank, out, 0};
    CandidatesOf(&query, 1);
    return query.count;
  }
  // Candidates for many packets at once, their walks interleaved so that their loads overlap (a burst's):
  // sets each query's `count` as Candidates returns it, with its candidates in its `out`. A query carries
  // the packet's words (ReadWords), not its header vector.
  struct Query {
    PacketWords words;
    uint64_t from_rank;
    Candidate* out;
    size_t count;
  };
  void CandidatesOf(Query* queries, size_t n) const;
  // Whether the answer to `query` starts with a hit the index names: then that is the packet's first hit
  // from the query's rank on.
  static bool NamesFirstHit(const Query& query) {
    return query.count > 0 && query.count <= kMaxCandidates && query.out[0].hit != nullptr;
  }

  // Whether `reads(offset)` holds for the byte offset of every header-vector word the index reads.
  template <typename Pred>
  bool ReadsOnly(Pred reads) const {
    for (const Word& w : words_) {
      if (w.used && !(reads(size_t{w.offset}) && reads(size_t{w.fold_from}))) return false;
    }
    return true;
  }

  // Entries now in the index (distinct per matcher; dormant ones not counted), and trie nodes, for tests
  // and dumps.
  size_t entries() const { return entries_; }
  size_t nodes() const;
  // Whether most of the trie nodes lead to no live entry (dormant ones: rules deleted from matchers that
  // stay): time for a new index.
  bool Stale() const { return nodes() > kStaleNodesPerEntry * (entries_ + kIndexFromMatchers); }

  // The compiled form (hw/compiled_trees.h): a lookup that finds none for the index as it is compiles it
  // once enough lookups in a row found the index unchanged: kQuietLookups, four times as many after each
  // compiled form that was not worth it, up to kMaxQuietLookups. That lookup collects the entries (on its
  // thread, in its read section) and a thread of the index's own builds the trees; a lookup after that
  // publishes them. Compile, for tests, compiles the index now, has the compiled form serve every lookup
  // through the trees (or `by_automata`, with automata, through them) while the index stays as it is, and
  // returns whether it does (false: the index changed meanwhile, is too large to compile, or has no
  // automata); IsCompiled says whether a compiled form serves lookups, LooksUpByTrees whether it does so by
  // its trees or its automata (its trial is over and kept one of them), LooksUpByAutomata whether by its
  // automata, and TrialDecided whether its trial is over (whichever way it went).
  static constexpr uint64_t kQuietLookups = uint64_t{1} << 17;
  static constexpr uint64_t kMaxQuietLookups = uint64_t{1} << 25;
  bool Compile(bool by_automata = false) const;
  bool IsCompiled() const;
  bool LooksUpByTrees() const;
  bool LooksUpByAutomata() const;
  bool TrialDecided() const;
  // The trial's verdict: of runs of lookups timed in turn, run r by way r % `ways` (0: the trees, 1: the
  // walk, 2: the automata) taking `nanoseconds[r]` for `packets[r]` packets (0: not timed), the way whose
  // median run took least a packet (of an even count of runs, the mean of the middle two; hw/compiled_trees.h
  // says why the median), the earlier way on a tie; the walk when no run was timed.
  static int TrialWinner(absl::Span<const uint64_t> nanoseconds, absl::Span<const uint64_t> packets,
                         int ways);
  // How lookups go down the compiled trees: a packet at a time (kScalar), or 8 or 16 packets together in
  // AVX2 or AVX-512 lanes; each reaches the same leaves. The process takes the fastest its CPU has, once
  // (AVX2 before AVX-512: see hw/compiled_trees.cc). SetTreeDescent (tests and benches) takes another, and
  // returns false, changing nothing, when the CPU lacks it. Process-wide; relaxed atomics (a lookup under way
  // may go either way).
  enum class TreeDescent : int { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };
  static bool CpuHas(TreeDescent descent);
  // How the compiled form kept up with changes (tests and benches; the writer's counts, read while no change
  // is under way): folds published (and the time their trees took to build), forms retired because a
  // change did not fit in them, and forms retired because changes came too fast to keep them up.
  struct TreeUpkeepCounts {
    uint64_t folds = 0;
    uint64_t overflows = 0;
    uint64_t busy_retirements = 0;  // forms retired because changes came faster than they pay for
    double fold_seconds = 0;        // building the folds published
  };
  TreeUpkeepCounts tree_upkeep() const;
  static TreeDescent tree_descent();
  static bool SetTreeDescent(TreeDescent descent);

 private:
  // The tries' types (hw/table_index_tries.h): a node's slot array, the memory nodes come from, the prefix
  // pair of an entry and the map from it to the entry's node, the shortcuts a walk starts from, and a
  // packet's walk.
  struct Slots;
  struct NodeArena;
  struct PrefixPair;
  struct PrefixPairMap;
  struct ShortcutTable;
  struct CandidateList;
  struct Walk;
  // The compiled form, a compile under way, a change as the form takes it, the writer's upkeep of the form,
  // and the functions that compile, keep up and serve the trees (hw/compiled_trees.h).
  struct CompiledTrees;
  struct CompileJob;
  struct TreeChange;
  struct PlacedEntry;
  struct TreeUpkeep;
  class TreeCompiler;
  // A change to the index, from its start to its end (hw/table_index.cc).
  class ChangeGuard;

  // The compiled form that serves lookups at the index's version (IsCompiled, LooksUpByTrees), or nullptr.
  const CompiledTrees* ServingForm() const;
  // Files `item` (its value under `mask`, of the matcher with `rank`, its pair `key`) at the node its
  // prefixes lead to, made if missing; a word-1 node growing past kFatNode entries splits.
  void FileEntry(Item* item, const PrefixPair& key, const std::array<uint32_t, kWords>& mask, uint64_t rank,
                 uintptr_t matcher);
  // Moves the entries of the word-1 node `node` into a word-2 trie under it.
  void SplitToSubTrie(Node* node);
  // The node for the first `depth` nibbles of `key` in the level-`level` trie `link` leads to (a trie's top
  // node is where its paths first part, or its only node), made (and a node where its path leaves another's)
  // if missing.
  Node* FindOrMakeNode(Node* owner, std::atomic<Node*>* link, uint32_t key, int depth, int level);
  Node* MakeNode(uint32_t prefix, int depth, int level, Node* up, Node* owner);
  // Starts loading what a node going reads after its own lines: the node above, and a word-1 node's pair
  // slot.
  void RequestAbove(const Node& node) const;
  // Unlinks `node` if it holds no entry and leads to one child at most (to that child), and the nodes above
  // it this leaves so; their memory is used again once readers are past them.
  void Prune(Node* node);
  // The link `node` hangs from (its up's child, or sub, or the root).
  std::atomic<Node*>* LinkHolding(const Node& node);
  // How many whole nibbles of word `i` `mask` keeps, as its trie reads it.
  int TrieDepth(int i, uint32_t mask) const;
  // Puts `item`'s entry in `node`'s slot array: in its first hole, else at its end (the array grows when
  // full).
  void AddToSlots(Node* node, Item* item, const std::array<uint32_t, kWords>& mask, uint64_t rank,
                  uintptr_t matcher, const RuleRecord* hit);
  // An entry's matcher word: the matcher's address, its low bit set for an exact entry.
  static uintptr_t TagMatcher(const CompiledMatcher* matcher, bool exact) {
    return reinterpret_cast<uintptr_t>(matcher) | uintptr_t{exact};
  }
  // Visits the trie node or scans the slot array (tagged) `step` for query `q`'s walk (CandidatesOf).
  void TakeWalkStep(uintptr_t step, Walk* q) const;
  // Empties the slot holding `item`'s entry (a hole), dormant or not.
  void RemoveAt(const Item& item);
  // Starts loading the node, slot array and slot the next entry filed under `pair` would take, if the pair
  // has a node, and returns the node (nullptr: none).
  const Node* RequestFiled(const PrefixPair& pair) const;
  // Replaces `node`'s full slot array (no holes) by one twice as large.
  void GrowSlots(Node* node);
  // `state`'s matcher becomes broad: its broad entry goes in; its items' entries go once no reader can
  // still be looking a packet up that passed where the broad entry went before it was there
  // (DropItemsOfBroadMatchers).
  void MakeMatcherBroad(MatcherState* state);
  // Removes the entries of `state`'s items (no rule counts in them any more).
  void DropItems(MatcherState* state);
  // DropItems for the broad matchers in broad_with_items_ whose stamps readers are past.
  void DropItemsOfBroadMatchers();
  // Builds afresh the shortcuts whose values start with the first `depth` nibbles of `key`, after a node was
  // linked or unlinked above the shortcuts' depth: in a copy of the table that replaces it, or in place when
  // the node is at that depth (`depth` is kShortcutStrides: only the node the shortcut reaches changes).
  void RefreshShortcuts(uint32_t key, int depth);

  const std::array<Word, kWords> words_;
  const std::array<Definer::Word, kWords> word_reads_;  // (word_reads())
  // A word's lanes all ones when its trie reads it rotated (by 16: ChooseWords rotates by no other), for
  // TrieKeys.
  const std::array<uint32_t, kWords> rotated_lanes_;
  const uint64_t serial_;  // this index's, unique in the process (a Filing's)
  int chain_first_;
  Reclaimer* reclaimer_;
  std::unique_ptr<NodeArena> nodes_;  // every node of every trie (nodes never move)
  std::unique_ptr<PrefixPairMap> prefix_pairs_;
  std::atomic<Node*> root_{nullptr};  // the top of the trie on word 0
  // A shortcut for each value of the word-0 trie's first kShortcutStrides nibbles: the nodes shallower than
  // that a packet's path passes (their sub-tries are its to take) and the node it reaches past them. A walk
  // starts there rather than at the top, whose first nodes every packet passes.
  std::atomic<ShortcutTable*> shortcuts_{nullptr};
  size_t entries_ = 0;
  std::vector<MatcherState*> broad_with_items_;  // broad matchers with items left, by broad_since

  // Changes (AddRule, RemoveRule, RemoveMatcher, a NameHit or DropHit that names or drops a hit) each add
  // one to the version before they start and one once done: odd while one is under way (ChangeGuard). A
  // compiled form serves lookups while the version is the one it stands for (or that plus one); the writer
  // takes each change into it, or retires it.
  std::atomic<uint64_t> version_{0};
  mutable std::atomic<const CompiledTrees*> compiled_{nullptr};
  // The version the quiet lookups saw (odd: none; the version plus one: too large to compile, not tried
  // again), how many, and how many make a compile.
  mutable std::atomic<uint64_t> quiet_version_{1};
  mutable std::atomic<uint64_t> quiet_lookups_{0};
  mutable std::atomic<uint64_t> quiet_needed_{kQuietLookups};
  // Set while a compile is under way (from StartCompile to FinishCompile): its holder's.
  mutable std::atomic<bool> compiling_{false};
  // The compile on the compiler thread, if any, and whether its form is built.
  mutable std::unique_ptr<CompileJob> compile_job_;
  mutable std::thread compiler_thread_;
  mutable std::atomic<bool> compile_built_{false};
  // The writer's upkeep of the compiled form through changes, and its folds.
  std::unique_ptr<TreeUpkeep> upkeep_;
};

namespace table_index_internal {
// A memory-order (big-endian) word as a number, its first byte the most significant.
inline uint32_t HostOrder(uint32_t word) { return __builtin_bswap32(word); }
}  // namespace table_index_internal

// Inline: a lookup reads each packet's words through them, and a compile each entry's.
inline uint32_t TableIndex::TrieKey(int i, uint32_t word) const {
  const uint32_t host = table_index_internal::HostOrder(word);
  const int r = words_[i].rotate;
  return r == 0 ? host : host << r | host >> (32 - r);
}

inline void TableIndex::TrieKeys(const PacketWords& words, uint32_t* keys) const {
#if defined(__SSE2__)
  static_assert(kWords == 4, "a packet's words are one 16-byte vector");
  // A word rotated by 16 after its bytes are swapped is the word with the bytes of each half swapped
  // (`halves`); one not rotated is that with its halves swapped back.
  const __m128i word = _mm_loadu_si128(reinterpret_cast<const __m128i*>(words.data()));
  const __m128i halves = _mm_or_si128(_mm_slli_epi16(word, 8), _mm_srli_epi16(word, 8));
  const __m128i host = _mm_shufflehi_epi16(_mm_shufflelo_epi16(halves, 0xb1), 0xb1);
  const __m128i rotated = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rotated_lanes_.data()));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(keys),
                   _mm_or_si128(_mm_and_si128(rotated, halves), _mm_andnot_si128(rotated, host)));
#else
  for (int k = 0; k < kWords; ++k) keys[k] = TrieKey(k, words[k]);
#endif
}

}  // namespace drsim::hw

#endif  // DRSIM_HW_TABLE_INDEX_H_
