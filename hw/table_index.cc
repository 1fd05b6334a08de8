#include "hw/table_index.h"

#include <algorithm>
#include <map>
#include <new>
#include <type_traits>
#include <utility>

namespace drsim::hw {
namespace {

constexpr int kStrideBits = 4;
constexpr int kMaxDepth = 32 / kStrideBits;

// A memory-order (big-endian) word as a number, its first byte the most significant.
uint32_t HostOrder(uint32_t word) { return __builtin_bswap32(word); }

// How many of `mask`'s most significant bits (memory-order word) are set before the first clear one.
int LeadingOnes(uint32_t mask) {
  const uint32_t host = HostOrder(mask);
  return host == 0xffffffffu ? 32 : __builtin_clz(~host);
}

// The first `depth` nibbles of a word, as a mask.
uint32_t PrefixMask(int depth) { return depth == 0 ? 0 : ~uint32_t{0} << (32 - kStrideBits * depth); }

// The nibble of `host` a trie node at `depth` branches on.
unsigned Nibble(uint32_t host, int depth) { return host >> (32 - kStrideBits * (depth + 1)) & 0xf; }

// The lookup order as one number: ascending priority, then newest (highest sequence) first.
uint64_t RankOf(const CompiledMatcher& m) {
  constexpr uint64_t kSequenceMask = (uint64_t{1} << 48) - 1;
  return uint64_t{m.priority} << 48 | (kSequenceMask - (m.sequence & kSequenceMask));
}

}  // namespace

// A removed entry's slot (a hole: no matcher) takes the next entry filed at its node at once: a reader
// scanning it meanwhile may see the old entry's words with the new matcher or the other way round, which
// only adds a candidate or misses the entry being added (as a lookup just before the add would). A reader
// that found the rule being added (its match table publishes it after the entry) sees the whole entry.
struct TableIndex::Entry {
  std::array<std::atomic<uint32_t>, kWords> value;
  std::array<std::atomic<uint32_t>, kWords> mask;
  std::atomic<uint64_t> rank;
  std::atomic<const CompiledMatcher*> matcher;  // nullptr: removed (a hole)

  void Fill(const std::array<uint32_t, kWords>& v, const std::array<uint32_t, kWords>& m, uint64_t r) {
    for (int i = 0; i < kWords; ++i) {
      value[i].store(v[i] & m[i], std::memory_order_relaxed);
      mask[i].store(m[i], std::memory_order_relaxed);
    }
    rank.store(r, std::memory_order_relaxed);
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

// A node's entries, in one allocation with them (a scan starts on the line of the count): entries
// [0, count) are published (holes among them); those past it are written before count covers them.
struct TableIndex::Slots {
  // A new array with room for `capacity` entries.
  static Slots* Make(uint32_t capacity) {
    void* memory = ::operator new(sizeof(Slots) + capacity * sizeof(Entry));
    auto* slots = new (memory) Slots(capacity);
    for (uint32_t i = 0; i < capacity; ++i) new (&slots->entries()[i]) Entry();
    return slots;
  }
  static void Free(Slots* slots) {
    if (slots != nullptr) ::operator delete(slots);  // (Entry and Slots are trivially destructible)
  }
  Entry* entries() { return reinterpret_cast<Entry*>(this + 1); }
  const Entry* entries() const { return reinterpret_cast<const Entry*>(this + 1); }

  const uint32_t capacity;
  std::atomic<uint32_t> count{0};

 private:
  explicit Slots(uint32_t capacity) : capacity(capacity) {}
};
static_assert(std::is_trivially_destructible_v<TableIndex::Entry> && sizeof(TableIndex::Slots) % alignof(TableIndex::Entry) == 0);

// A node of a path-compressed trie with a 4-bit stride: it stands for the first `depth` nibbles of a word,
// `prefix` (the rest 0), and branches on the next nibble; a child may be several nibbles deeper. A node of
// the first trie (on word 0) leads by `sub` to a trie on word 1 of the entries whose word-0 prefix ends
// there; entries sit in the nodes of those second tries. What a walk reads first shares the first line.
struct alignas(64) TableIndex::Node {
  Node(uint32_t prefix, int depth) : prefix(prefix), depth(depth) {}

  const uint32_t prefix;
  const int depth;
  std::atomic<Slots*> slots{nullptr};
  std::atomic<Node*> sub{nullptr};
  std::array<std::atomic<Node*>, 1 << kStrideBits> child{};
  // The writer's: entries not removed, by slot the item whose entry it holds (nullptr: a hole), the holes.
  uint32_t live = 0;
  std::vector<Item*> back;
  std::vector<uint32_t> holes;
};

TableIndex::TableIndex(absl::Span<const CompiledMatcher* const> matchers, Reclaimer* reclaimer)
    : words_(ChooseWords(matchers)), reclaimer_(reclaimer), root_(MakeNode(0, 0)) {}

TableIndex::~TableIndex() {
  for (const std::unique_ptr<Node>& node : nodes_) Slots::Free(node->slots.load(std::memory_order_relaxed));
}

TableIndex::Node* TableIndex::MakeNode(uint32_t prefix, int depth) {
  nodes_.push_back(std::make_unique<Node>(prefix & PrefixMask(depth), depth));
  return nodes_.back().get();
}

std::array<TableIndex::Word, TableIndex::kWords> TableIndex::ChooseWords(
    absl::Span<const CompiledMatcher* const> matchers) {
  struct Score {
    uint64_t prefix_bits = 0;
    uint64_t mask_bits = 0;
  };
  std::map<std::pair<uint32_t, uint32_t>, Score> scores;  // by (offset, fold_from): ordered, deterministic
  for (const CompiledMatcher* m : matchers) {
    for (size_t i = 0; i < m->definer.key_words(); ++i) {
      const Definer::Word w = m->definer.word(i);
      Score& s = scores[{w.offset, w.fold_from}];
      s.prefix_bits += LeadingOnes(w.mask);
      s.mask_bits += __builtin_popcount(w.mask);
    }
  }
  std::array<Word, kWords> words{};
  // Picks the word with the highest `by` score not picked yet (the lowest offset of equals), if any scores.
  auto pick = [&](uint64_t Score::*by, Word* out) {
    auto best = scores.end();
    for (auto it = scores.begin(); it != scores.end(); ++it) {
      if (it->second.*by > 0 && (best == scores.end() || it->second.*by > best->second.*by)) best = it;
    }
    if (best == scores.end()) return;
    *out = {best->first.first, best->first.second, true};
    scores.erase(best);
  };
  for (int i = 0; i < kTrieWords; ++i) pick(&Score::prefix_bits, &words[i]);
  for (int i = kTrieWords; i < kWords; ++i) pick(&Score::mask_bits, &words[i]);
  return words;
}

void TableIndex::AddMatcher(const CompiledMatcher* matcher, MatcherState* state) {
  *state = MatcherState{};
  state->matcher = matcher;
  state->rank = RankOf(*matcher);
  for (int i = 0; i < kWords; ++i) {
    state->position[i] = -1;
    if (!words_[i].used) continue;
    for (size_t k = 0; k < matcher->definer.key_words(); ++k) {
      const Definer::Word w = matcher->definer.word(k);
      if (w.offset == words_[i].offset && w.fold_from == words_[i].fold_from) {
        state->position[i] = static_cast<int8_t>(k);
        state->mask[i] = w.mask;
      }
    }
  }
}

void TableIndex::RemoveMatcher(MatcherState* state) {
  if (state->broad) Remove(state->broad_item);
  for (size_t i = 0; i < state->items; ++i) Remove(state->item[i]);
  state->items = 0;
  state->broad = false;
}

void TableIndex::AddRule(MatcherState* state, const uint32_t* key) {
  if (state->broad) return;
  std::array<uint32_t, kWords> value{};
  for (int i = 0; i < kWords; ++i) value[i] = state->position[i] < 0 ? 0 : key[state->position[i]];
  for (size_t i = 0; i < state->items; ++i) {
    if (state->item[i].value == value) {
      ++state->item[i].rules;
      return;
    }
  }
  if (state->items == kMaxEntriesPerMatcher) {
    GoBroad(state);
    return;
  }
  Item* item = &state->item[state->items++];
  item->value = value;
  item->rules = 1;
  Append(NodeFor(value, state->mask), item, state->mask, *state);
}

void TableIndex::RemoveRule(MatcherState* state, const uint32_t* key) {
  if (state->broad) return;
  std::array<uint32_t, kWords> value{};
  for (int i = 0; i < kWords; ++i) value[i] = state->position[i] < 0 ? 0 : key[state->position[i]];
  for (size_t i = 0; i < state->items; ++i) {
    if (state->item[i].value != value) continue;
    if (--state->item[i].rules == 0) {
      Remove(state->item[i]);
      DropItem(state, i);
    }
    return;
  }
}

void TableIndex::GoBroad(MatcherState* state) {
  constexpr std::array<uint32_t, kWords> kNone{};
  state->broad_item = Item{};
  Append(NodeFor(kNone, kNone), &state->broad_item, kNone, *state);
  for (size_t i = 0; i < state->items; ++i) Remove(state->item[i]);
  state->items = 0;
  state->broad = true;
}

void TableIndex::DropItem(MatcherState* state, size_t i) {
  const size_t last = --state->items;
  if (i == last) return;
  state->item[i] = state->item[last];
  state->item[i].node->back[state->item[i].slot] = &state->item[i];
}

TableIndex::Node* TableIndex::NodeFor(const std::array<uint32_t, kWords>& value,
                                      const std::array<uint32_t, kWords>& mask) {
  Node* node = root_;
  for (int t = 0; t < kTrieWords; ++t) {
    if (t > 0) {
      if (node->sub.load(std::memory_order_relaxed) == nullptr) {
        node->sub.store(MakeNode(0, 0), std::memory_order_release);
      }
      node = node->sub.load(std::memory_order_relaxed);
    }
    const int length = words_[t].used ? LeadingOnes(mask[t]) : 0;
    node = Descend(node, HostOrder(value[t]), length / kStrideBits);
  }
  return node;
}

TableIndex::Node* TableIndex::Descend(Node* node, uint32_t host, int depth) {
  while (node->depth < depth) {
    std::atomic<Node*>& link = node->child[Nibble(host, node->depth)];
    Node* next = link.load(std::memory_order_relaxed);
    if (next == nullptr) {  // a leaf for the prefix
      Node* leaf = MakeNode(host, depth);
      link.store(leaf, std::memory_order_release);
      return leaf;
    }
    // The nibbles `host` (to `depth`) and `next` share.
    const uint32_t differ = (host ^ next->prefix) & PrefixMask(std::min(depth, next->depth));
    const int common = differ == 0 ? std::min(depth, next->depth) : __builtin_clz(differ) / kStrideBits;
    if (common == next->depth) {
      node = next;
      continue;
    }
    // `next` is deeper than what they share: a node at `common` goes between, with `next` below it (and the
    // leaf for the prefix, unless that is the new node itself), complete before it is linked.
    Node* between = MakeNode(host, common);
    between->child[Nibble(next->prefix, common)].store(next, std::memory_order_relaxed);
    Node* target = between;
    if (common < depth) {
      target = MakeNode(host, depth);
      between->child[Nibble(host, common)].store(target, std::memory_order_relaxed);
    }
    link.store(between, std::memory_order_release);
    return target;
  }
  return node;
}

void TableIndex::Append(Node* node, Item* item, const std::array<uint32_t, kWords>& mask,
                        const MatcherState& state) {
  Slots* slots = node->slots.load(std::memory_order_relaxed);
  uint32_t at;
  if (!node->holes.empty()) {
    at = node->holes.back();
    node->holes.pop_back();
    Entry& e = slots->entries()[at];
    e.Fill(item->value, mask, state.rank);
    e.matcher.store(state.matcher, std::memory_order_release);
  } else {
    if (slots == nullptr || slots->count.load(std::memory_order_relaxed) == slots->capacity) {
      Reslot(node, 1);
      slots = node->slots.load(std::memory_order_relaxed);
    }
    at = slots->count.load(std::memory_order_relaxed);
    Entry& e = slots->entries()[at];
    e.Fill(item->value, mask, state.rank);
    e.matcher.store(state.matcher, std::memory_order_relaxed);
    slots->count.store(at + 1, std::memory_order_release);
  }
  node->back[at] = item;
  item->node = node;
  item->slot = at;
  ++node->live;
  ++entries_;
}

void TableIndex::Remove(const Item& item) {
  Node* node = item.node;
  node->slots.load(std::memory_order_relaxed)->entries()[item.slot].matcher.store(nullptr,
                                                                                 std::memory_order_release);
  node->back[item.slot] = nullptr;
  node->holes.push_back(item.slot);
  --node->live;
  --entries_;
}

void TableIndex::Reslot(Node* node, size_t room) {
  const auto capacity = static_cast<uint32_t>(std::max<size_t>(4, (node->live + room) * 2));
  Slots* fresh = Slots::Make(capacity);
  std::vector<Item*> back(capacity, nullptr);
  Slots* old = node->slots.load(std::memory_order_relaxed);
  uint32_t count = 0;
  if (old != nullptr) {
    const uint32_t used = old->count.load(std::memory_order_relaxed);
    for (uint32_t i = 0; i < used; ++i) {
      if (node->back[i] == nullptr) continue;
      const Entry& from = old->entries()[i];
      Entry& to = fresh->entries()[count];
      to.Fill(from.Values(), from.Masks(), from.rank.load(std::memory_order_relaxed));
      to.matcher.store(from.matcher.load(std::memory_order_relaxed), std::memory_order_relaxed);
      back[count] = node->back[i];
      back[count]->slot = count;
      ++count;
    }
  }
  fresh->count.store(count, std::memory_order_relaxed);
  node->back = std::move(back);
  node->holes.clear();
  node->slots.store(fresh, std::memory_order_release);
  if (old != nullptr) Retire(reclaimer_, [old] { Slots::Free(old); });
}

size_t TableIndex::Candidates(const uint8_t* hv, Candidate* out) const {
  std::array<uint32_t, kWords> w{};
  for (int i = 0; i < kWords; ++i) {
    if (words_[i].used) w[i] = Definer::Word{words_[i].offset, words_[i].fold_from, 0xffffffffu}.Read(hv);
  }
  size_t n = 0;
  // Adds the entries of `node` the packet matches; false when they overflow `out`.
  auto collect = [&](const Node* node) {
    const Slots* slots = node->slots.load(std::memory_order_acquire);
    if (slots == nullptr) return true;
    const uint32_t count = slots->count.load(std::memory_order_acquire);
    const Entry* e = slots->entries();
    for (uint32_t i = 0; i < count; ++i, ++e) {
      uint32_t differ = 0;
      for (int k = 0; k < kWords; ++k) {
        differ |= (w[k] & e->mask[k].load(std::memory_order_relaxed)) ^ e->value[k].load(std::memory_order_relaxed);
      }
      if (differ != 0) continue;
      const CompiledMatcher* m = e->matcher.load(std::memory_order_acquire);
      if (m == nullptr) continue;
      if (n == kMaxCandidates) return false;
      out[n++] = {e->rank.load(std::memory_order_relaxed), m};
    }
    return true;
  };
  // The child of `node` on the path of `host`, or nullptr.
  auto down = [](const Node* node, uint32_t host) -> const Node* {
    if (node->depth == kMaxDepth) return nullptr;
    const Node* next = node->child[Nibble(host, node->depth)].load(std::memory_order_acquire);
    if (next == nullptr || ((host ^ next->prefix) & PrefixMask(next->depth)) != 0) return nullptr;
    return next;
  };
  static_assert(kTrieWords == 2);
  const uint32_t first = HostOrder(w[0]), second = HostOrder(w[1]);
  for (const Node* node = root_; node != nullptr; node = down(node, first)) {
    for (const Node* sub = node->sub.load(std::memory_order_acquire); sub != nullptr; sub = down(sub, second)) {
      if (!collect(sub)) return kMaxCandidates + 1;
    }
  }
  // Ascending rank, each matcher once (ranks are distinct per matcher); a handful, mostly.
  for (size_t i = 1; i < n; ++i) {
    const Candidate c = out[i];
    size_t j = i;
    for (; j > 0 && out[j - 1].rank > c.rank; --j) out[j] = out[j - 1];
    out[j] = c;
  }
  size_t kept = 0;
  for (size_t i = 0; i < n; ++i) {
    if (kept == 0 || out[kept - 1].rank != out[i].rank) out[kept++] = out[i];
  }
  return kept;
}

}  // namespace drsim::hw
