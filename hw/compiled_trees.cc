// The compiled form of a TableIndex (hw/compiled_trees.h): collecting an index's entries, building
// decision trees of them, compiling on a thread of the index's own, and looking packets up in the trees.
#include "hw/compiled_trees.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <numeric>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "hw/reclaimer.h"
#include "hw/table_index.h"
#include "hw/table_index_tries.h"

namespace drsim::hw {
namespace {

// The packets a descent takes down a tree at most (a lookup's burst of walks), and their keys as trie keys,
// two ways: by packet, packet j's word w at by_packet[j * kWords + w] (the scalar descent's and each leaf
// scan's), and by word, at by_word[w * kDescentPackets + j] (the vector descents': a lane's word is picked
// from its group's four vectors of words, with no gather on the way down).
constexpr size_t kDescentPackets = 32;
struct DescentKeys {
  std::array<uint32_t, kDescentPackets * TableIndex::kWords> by_packet;
  alignas(64) std::array<uint32_t, TableIndex::kWords * kDescentPackets> by_word{};
  // Fills by_word from by_packet's first n packets.
  void ByWord(size_t n) {
    for (size_t j = 0; j < n; ++j) {
      for (int w = 0; w < TableIndex::kWords; ++w)
        by_word[w * kDescentPackets + j] = by_packet[j * TableIndex::kWords + w];
    }
  }
};

// The descents of packets [0, n) of the `going` ones (bit j: packet j) down the tree rooted at nodes[root]:
// at[j] becomes the leaf packet j reaches; the others' at[] are left as they were. Each takes the packets a
// level at a time, so that their loads overlap. (Templates of the compiled form's type: it is private to the
// index.)
template <typename Trees, typename Node = typename Trees::TreeNode>
void DescendScalar(const Node* nodes, uint32_t root, const DescentKeys& keys, size_t n, uint32_t going,
                   uint32_t* at) {
  // (The packets still going down, packed: a packet at a leaf leaves the list.)
  std::array<uint8_t, kDescentPackets> down;
  size_t left = 0;
  for (size_t j = 0; j < n; ++j) {
    at[j] = (going >> j & 1) != 0 ? root : at[j];
    down[left] = static_cast<uint8_t>(j);
    left += going >> j & 1;
  }
  while (left > 0) {
    for (size_t g = 0; g < left;) {
      const size_t j = down[g];
      Node node;  // (a leaf's may be replaced meanwhile: its word stays kLeaf)
      __atomic_load(&nodes[at[j]], &node, __ATOMIC_RELAXED);
      if (node.word == Trees::kLeaf) {
        down[g] = down[--left];
        continue;
      }
      at[j] = node.next + (keys.by_packet[j * TableIndex::kWords + node.word] >> node.shift & node.bits);
      __builtin_prefetch(&nodes[at[j]]);
      ++g;
    }
  }
}

#if defined(__x86_64__)
// A node as two 32-bit halves: `next`, and word | shift << 8 | bits << 16 (TreeNode's layout, little-endian).
// The vector descents load each lane's node whole (a 64-bit gather), take the halves apart, and blend the
// lane's key word out of its group's four (DescentKeys::by_word): a gather there would put a second one on
// each level's path. A lane at a leaf (or not going) is masked off, and a group of lanes is done when all
// are.
template <typename Trees, typename Node = typename Trees::TreeNode>
__attribute__((target("avx2"))) void DescendAvx2(const Node* nodes, uint32_t root, const DescentKeys& keys,
                                                 size_t n, uint32_t going, uint32_t* at) {
  constexpr size_t kLanes = 8;
  const auto* node_words = reinterpret_cast<const long long*>(nodes);
  const auto* key_words = reinterpret_cast<const __m256i*>(keys.by_word.data());
  const __m256i lane_bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  const __m256i halves_apart = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
  const __m256i byte = _mm256_set1_epi32(0xff);
  const __m256i leaf = _mm256_set1_epi32(Trees::kLeaf);
  const __m256i last_word = _mm256_set1_epi32(TableIndex::kWords - 1);
  constexpr size_t kGroups = kDescentPackets / kLanes;  // (a word's vectors in by_word)
  const size_t groups = (n + kLanes - 1) / kLanes;
  __m256i node[kDescentPackets / kLanes], down[kDescentPackets / kLanes], goes[kDescentPackets / kLanes];
  for (size_t g = 0; g < groups; ++g) {
    node[g] = _mm256_set1_epi32(static_cast<int>(root));
    const __m256i bits =
        _mm256_and_si256(_mm256_set1_epi32(static_cast<int>(going >> (g * kLanes))), lane_bit);
    goes[g] = down[g] = _mm256_cmpeq_epi32(bits, lane_bit);
  }
  for (bool any = true; any;) {
    any = false;
    for (size_t g = 0; g < groups; ++g) {
      if (_mm256_testz_si256(down[g], down[g])) continue;
      any = true;
      const __m256i low =
          _mm256_mask_i32gather_epi64(_mm256_setzero_si256(), node_words, _mm256_castsi256_si128(node[g]),
                                      _mm256_cvtepi32_epi64(_mm256_castsi256_si128(down[g])), 8);
      const __m256i high = _mm256_mask_i32gather_epi64(
          _mm256_setzero_si256(), node_words, _mm256_extracti128_si256(node[g], 1),
          _mm256_cvtepi32_epi64(_mm256_extracti128_si256(down[g], 1)), 8);
      const __m256i low_apart = _mm256_permutevar8x32_epi32(low, halves_apart);
      const __m256i high_apart = _mm256_permutevar8x32_epi32(high, halves_apart);
      const __m256i next = _mm256_permute2x128_si256(low_apart, high_apart, 0x20);
      const __m256i meta = _mm256_permute2x128_si256(low_apart, high_apart, 0x31);
      const __m256i word = _mm256_and_si256(meta, byte);
      const __m256i inner = _mm256_andnot_si256(_mm256_cmpeq_epi32(word, leaf), down[g]);
      const __m256i which = _mm256_and_si256(word, last_word);
      __m256i key = _mm256_load_si256(key_words + g);
      for (int w = 1; w < TableIndex::kWords; ++w) {
        key = _mm256_blendv_epi8(key, _mm256_load_si256(key_words + w * kGroups + g),
                                 _mm256_cmpeq_epi32(which, _mm256_set1_epi32(w)));
      }
      const __m256i shift = _mm256_and_si256(_mm256_srli_epi32(meta, 8), byte);
      const __m256i child = _mm256_add_epi32(
          next, _mm256_and_si256(_mm256_srlv_epi32(key, shift), _mm256_srli_epi32(meta, 16)));
      node[g] = _mm256_blendv_epi8(node[g], child, inner);
      down[g] = inner;
    }
  }
  for (size_t g = 0; g < groups; ++g)
    _mm256_maskstore_epi32(reinterpret_cast<int*>(at + g * kLanes), goes[g], node[g]);
}

template <typename Trees, typename Node = typename Trees::TreeNode>
__attribute__((target("avx512f"))) void DescendAvx512(const Node* nodes, uint32_t root,
                                                      const DescentKeys& keys, size_t n, uint32_t going,
                                                      uint32_t* at) {
  constexpr size_t kLanes = 16;
  const auto* node_words = reinterpret_cast<const long long*>(nodes);
  const auto* key_words = keys.by_word.data();
  const __m512i nexts = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i metas = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  const __m512i byte = _mm512_set1_epi32(0xff);
  const __m512i leaf = _mm512_set1_epi32(Trees::kLeaf);
  const __m512i last_word = _mm512_set1_epi32(TableIndex::kWords - 1);
  const size_t groups = (n + kLanes - 1) / kLanes;
  __m512i node[kDescentPackets / kLanes];
  __mmask16 down[kDescentPackets / kLanes], goes[kDescentPackets / kLanes];
  for (size_t g = 0; g < groups; ++g) {
    node[g] = _mm512_set1_epi32(static_cast<int>(root));
    goes[g] = down[g] = static_cast<__mmask16>(going >> (g * kLanes));
  }
  for (bool any = true; any;) {
    any = false;
    for (size_t g = 0; g < groups; ++g) {
      if (down[g] == 0) continue;
      any = true;
      const __m512i low = _mm512_mask_i32gather_epi64(_mm512_setzero_si512(), static_cast<__mmask8>(down[g]),
                                                      _mm512_castsi512_si256(node[g]), node_words, 8);
      const __m512i high =
          _mm512_mask_i32gather_epi64(_mm512_setzero_si512(), static_cast<__mmask8>(down[g] >> 8),
                                      _mm512_extracti64x4_epi64(node[g], 1), node_words, 8);
      const __m512i next = _mm512_permutex2var_epi32(low, nexts, high);
      const __m512i meta = _mm512_permutex2var_epi32(low, metas, high);
      const __m512i word = _mm512_and_si512(meta, byte);
      const __mmask16 inner = _mm512_mask_cmpneq_epi32_mask(down[g], word, leaf);
      const __m512i which = _mm512_and_si512(word, last_word);
      __m512i key = _mm512_load_si512(key_words + g * kLanes);
      for (int w = 1; w < TableIndex::kWords; ++w) {
        key = _mm512_mask_load_epi32(key, _mm512_cmpeq_epi32_mask(which, _mm512_set1_epi32(w)),
                                     key_words + w * kDescentPackets + g * kLanes);
      }
      const __m512i shift = _mm512_and_si512(_mm512_srli_epi32(meta, 8), byte);
      const __m512i child = _mm512_add_epi32(
          next, _mm512_and_si512(_mm512_srlv_epi32(key, shift), _mm512_srli_epi32(meta, 16)));
      node[g] = _mm512_mask_mov_epi32(node[g], inner, child);
      down[g] = inner;
    }
  }
  for (size_t g = 0; g < groups; ++g) _mm512_mask_storeu_epi32(at + g * kLanes, goes[g], node[g]);
}
#endif

// Which of packets [0, n) go down a tree whose least rank is `least`: bit j set when bound[j] >= least.
// (A tree a burst; with AVX2, four packets a step.)
#if defined(__x86_64__)
__attribute__((target("avx2"))) uint32_t PacketsGoingAvx2(const std::array<uint64_t, kDescentPackets>& bound,
                                                          size_t n, uint64_t least) {
  // Unsigned compares, as signed ones of the values with their top bits flipped.
  const __m256i flip = _mm256_set1_epi64x(std::numeric_limits<int64_t>::min());
  const __m256i flipped_least = _mm256_xor_si256(_mm256_set1_epi64x(static_cast<int64_t>(least)), flip);
  uint32_t below = 0;  // bit j: bound[j] < least
  for (size_t j = 0; j < n; j += 4) {
    const __m256i b = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(&bound[j])), flip);
    below |=
        static_cast<uint32_t>(_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpgt_epi64(flipped_least, b))))
        << j;
  }
  return ~below & static_cast<uint32_t>((uint64_t{1} << n) - 1);
}
#endif

uint32_t PacketsGoing(const std::array<uint64_t, kDescentPackets>& bound, size_t n, uint64_t least,
                      TableIndex::TreeDescent descent) {
#if defined(__x86_64__)
  if (descent != TableIndex::TreeDescent::kScalar) return PacketsGoingAvx2(bound, n, least);
#endif
  uint32_t going = 0;
  for (size_t j = 0; j < n; ++j) going |= uint32_t{bound[j] >= least} << j;
  return going;
}

// Whether the automata's descent may use AVX-512 (hw/answer_automata.h): when the CPU has it and the trees'
// descent is not forced to be scalar.
bool AutomataHaveAvx512() {
  static const bool has = AnswerAutomata::CpuHas(AnswerAutomata::Descent::kAvx512);
  return has;
}

}  // namespace

// Grows a compiled form's trees, node by node from their roots.
class TableIndex::CompiledTrees::Builder {
 public:
  // `filed`: the entries, in rank order.
  Builder(const std::vector<LeafEntry>& filed, CompiledTrees* compiled)
      : filed_(filed), compiled_(compiled), budget_(kLeafCopies * filed.size() + 1024) {}

  // Adds the tree of the entries filed[members...] (in rank order) and returns its root's index in the
  // compiled nodes; false when the leaves went past their budget.
  bool AddTree(std::vector<uint32_t>* members, uint32_t* root) {
    *root = static_cast<uint32_t>(compiled_->nodes.size());
    compiled_->nodes.emplace_back();
    return BuildNode(*root, members, 0, PathBits{});
  }

 private:
  // The bits a path to a node tested, and their values.
  struct PathBits {
    std::array<uint32_t, kWords> value{};
    std::array<uint32_t, kWords> mask{};
  };
  // What a cut on bits [shift, shift + width) of word `word` makes of some entries: the entries its largest
  // child holds, and all its children together.
  struct BitRangeCut {
    int word;
    int shift;
    int width;
    size_t largest = 0;
    size_t total = 0;
  };

  // Calls `f` with each child of `cut` that filed_[k] goes to: those whose bits it matches (the values of
  // the bits it does not test, with those it tests).
  template <typename F>
  void ForEachChild(uint32_t k, const BitRangeCut& cut, F f) const {
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
  void Measure(const std::vector<uint32_t>& subsets, size_t from, size_t most, BitRangeCut* cut) {
    const uint32_t all = (1u << cut->width) - 1;
    std::fill_n(child_counts_.begin(), all + 1, 0);
    cut->total = 0;
    for (size_t i = from; i < subsets.size() && cut->total <= most; ++i) {
      ForEachChild(subsets[i], *cut, [&](uint32_t child) {
        ++child_counts_[child];
        ++cut->total;
      });
    }
    cut->largest = *std::max_element(child_counts_.begin(), child_counts_.begin() + all + 1);
  }

  // Makes compiled_->nodes[at] the node for the entries (*subsets)[from, end) (indexes into filed_, in rank
  // order) below `tested`; false when the leaves went past their budget.
  bool BuildNode(uint32_t at, std::vector<uint32_t>* subsets, size_t from, const PathBits& tested) {
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
          for (uint32_t m = f.mask[w] & ~tested.mask[w]; m != 0; m &= m - 1) {
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
      if (size > budget_ || size + kBuiltLeafRoom > 0xffff) return false;
      budget_ -= size;
      const uint8_t bucket =
          size == 0 ? kEmptyLeafBucket : compiled_->RankBucketOf(filed_[(*subsets)[from]].rank);
      compiled_->nodes[at] = {static_cast<uint32_t>(compiled_->entries.size()), kLeaf, bucket,
                              static_cast<uint16_t>(size)};
      for (size_t i = from; i < subsets->size(); ++i) compiled_->entries.push_back(filed_[(*subsets)[i]]);
      compiled_->entries.resize(compiled_->entries.size() +
                                kBuiltLeafRoom);  // (the writer's, for entries to come)
      return true;
    }
    // The cut: the best bit, and the bits next to it that the path has not tested, one at a time, while
    // each makes the largest child smaller and the children together hold at most kCutCopies times the
    // entries.
    BitRangeCut cut{best / 32, best % 32, 1};
    Measure(*subsets, from, SIZE_MAX, &cut);
    while (cut.width < kMaxCut && (size_t{2} << cut.width) <= kCutCopies * size) {
      // (A cut a bit wider, whose children, one node each, and their entries come to kCutCopies times the
      // entries at most.)
      const size_t most = kCutCopies * size - (size_t{2} << cut.width);
      BitRangeCut wider{};
      for (const int shift : {cut.shift, cut.shift - 1}) {
        const int added = shift == cut.shift ? shift + cut.width : shift;
        if (added < 0 || added > 31 || (tested.mask[cut.word] >> added & 1) != 0) continue;
        BitRangeCut tried{cut.word, shift, cut.width + 1};
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
      PathBits narrower = tested;
      narrower.mask[cut.word] |= all << cut.shift;
      narrower.value[cut.word] |= child << cut.shift;
      const bool grown = BuildNode(first + child, subsets, child_from, narrower);
      subsets->resize(child_from);
      if (!grown) return false;
    }
    return true;
  }

  static constexpr size_t kCutCopies = 2;
  const std::vector<LeafEntry>& filed_;
  CompiledTrees* compiled_;
  size_t budget_;
  std::vector<uint32_t> child_counts_ = std::vector<uint32_t>(size_t{1} << kMaxCut);  // Measure's counts
};

bool TableIndex::CompiledTrees::CollectEntries(const TableIndex& index, std::vector<LeafEntry>* filed) {
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
        const LeafEntry f = LeafEntryOf(index, e);
        if (f.matcher == 0 || !e.UnchangedSince(generation)) continue;
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

TableIndex::CompiledTrees::LeafEntry TableIndex::CompiledTrees::LeafEntryOf(const TableIndex& index,
                                                                            const Entry& e) {
  LeafEntry f{e.Values(), e.Masks(), e.rank.load(std::memory_order_relaxed),
              e.matcher.load(std::memory_order_relaxed), e.hit.load(std::memory_order_acquire)};
  for (int w = 0; w < kWords; ++w) {
    f.value[w] = index.TrieKey(w, f.value[w]);
    f.mask[w] = index.TrieKey(w, f.mask[w]);
  }
  return f;
}

std::unique_ptr<TableIndex::CompiledTrees> TableIndex::CompiledTrees::Build(std::vector<LeafEntry> filed,
                                                                            uint64_t version,
                                                                            bool with_automata) {
  std::stable_sort(filed.begin(), filed.end(),
                   [](const LeafEntry& a, const LeafEntry& b) { return a.rank < b.rank; });
  // Entries that do not test a word a tree parts on go both ways there: grouped by the words they test,
  // each group a tree of its own, entries are seldom copied.
  std::array<std::vector<uint32_t>, kGroups> group;
  for (uint32_t i = 0; i < filed.size(); ++i) group[GroupOf(filed[i].mask)].push_back(i);
  auto compiled = std::make_unique<CompiledTrees>();
  compiled->version.store(version, std::memory_order_relaxed);
  for (size_t b = 1; b < kEmptyLeafBucket && !filed.empty(); ++b)
    compiled->bucket_least[b] = filed[b * filed.size() / kEmptyLeafBucket].rank;
  compiled->bucket_least[kEmptyLeafBucket] = ~uint64_t{0};
  Builder builder(filed, compiled.get());
  std::vector<std::pair<Tree, unsigned>> grown;  // each tree, and its group
  for (unsigned g = 0; g < kGroups; ++g) {
    if (group[g].empty()) continue;
    uint32_t root;
    if (!builder.AddTree(&group[g], &root)) return nullptr;
    grown.push_back({{root, filed[group[g][0]].rank}, g});
  }
  std::sort(grown.begin(), grown.end(),
            [](const auto& a, const auto& b) { return a.first.least < b.first.least; });
  compiled->tree_of_group.fill(-1);
  for (size_t t = 0; t < grown.size(); ++t) {
    compiled->trees[t] = grown[t].first;
    compiled->tree_of_group[grown[t].second] = static_cast<int8_t>(t);
  }
  compiled->tree_count.store(static_cast<uint32_t>(grown.size()), std::memory_order_relaxed);
  if (with_automata) TreeCompiler::BuildAutomata(compiled.get(), filed);
  // Room for the writer's changes (hw/tree_updates.cc).
  compiled->leaf_room.resize(compiled->nodes.size());
  for (size_t at = 0; at < compiled->nodes.size(); ++at)
    compiled->leaf_room[at] = compiled->nodes[at].word == kLeaf ? kBuiltLeafRoom : 0;
  compiled->built_entries = compiled->entries.size();
  compiled->entries.reserve(compiled->entries.size() + std::max(2 * compiled->entries.size(), kEntryRoom));
  compiled->nodes.reserve(compiled->nodes.size() + kNodeRoom);
  return compiled;
}

void TableIndex::TreeCompiler::BuildAutomata(CompiledTrees* form,
                                             const std::vector<CompiledTrees::LeafEntry>& sorted) {
  std::vector<AnswerAutomata::Rule> rules(sorted.size());
  for (size_t i = 0; i < sorted.size(); ++i)
    rules[i] = {sorted[i].value, sorted[i].mask, (sorted[i].matcher & 1) != 0};
  std::unique_ptr<AnswerAutomata> automata = AnswerAutomata::Build(rules, CompiledTrees::kAutomataLimits);
  if (automata == nullptr) return;
  form->answers.assign(sorted.begin(), sorted.end());
  for (uint32_t i = 0; i < sorted.size(); ++i)
    form->answer_of.emplace(CompiledTrees::AnswerKey::Of(sorted[i]), i);
  for (size_t a = 0; a < automata->automata(); ++a)
    form->automaton_least.push_back(sorted[automata->least_rule(a)].rank);
  form->automata = std::move(automata);
  form->automata_serve.store(true, std::memory_order_relaxed);  // (published with the form)
}

void TableIndex::TreeCompiler::PublishTrees(const TableIndex& index, std::unique_ptr<CompiledTrees> fresh,
                                            uint64_t version) {
  std::atomic_thread_fence(std::memory_order_acquire);
  const bool unchanged = index.version_.load(std::memory_order_relaxed) == version;
  if (fresh != nullptr && unchanged) {
    // Only where no form is: the one there may be the writer's to change (it alone retires it).
    const CompiledTrees* none = nullptr;
    if (index.compiled_.compare_exchange_strong(none, fresh.get(), std::memory_order_acq_rel)) {
      fresh.release();
      index.upkeep_->formless_lookups.store(0, std::memory_order_relaxed);
    }
  } else if (unchanged) {
    index.quiet_version_.store(version | 1, std::memory_order_relaxed);  // too large: not tried again at it
  }
}

void TableIndex::TreeCompiler::StartCompile(const TableIndex& index, uint64_t version, bool on_thread,
                                            bool with_automata) {
  if ((version & 1) != 0 || index.compiling_.exchange(true, std::memory_order_acquire)) return;
  auto job = std::make_unique<CompileJob>();
  job->version = version;
  if (!CompiledTrees::CollectEntries(index, &job->filed)) {
    PublishTrees(index, nullptr, version);
    index.compiling_.store(false, std::memory_order_release);
    return;
  }
  index.compile_job_ = std::move(job);
  auto build = [&index, job = index.compile_job_.get(), with_automata] {
    job->built = CompiledTrees::Build(std::move(job->filed), job->version, with_automata);
    index.compile_built_.store(true, std::memory_order_release);
  };
  if (on_thread) {
    try {
      index.compiler_thread_ = std::thread(build);
      return;
    } catch (const std::system_error&) {  // (no thread to be had: built here)
    }
  }
  build();
  FinishCompile(index);
}

void TableIndex::TreeCompiler::FinishCompile(const TableIndex& index) {
  bool done = true;
  if (!index.compile_built_.compare_exchange_strong(done, false, std::memory_order_acquire)) return;
  if (index.compiler_thread_.joinable()) index.compiler_thread_.join();
  std::unique_ptr<CompileJob> job = std::move(index.compile_job_);
  PublishTrees(index, std::move(job->built), job->version);
  index.compiling_.store(false, std::memory_order_release);
}

void TableIndex::TreeCompiler::RetireTrees(TableIndex* index) {
  const CompiledTrees* old = index->compiled_.exchange(nullptr, std::memory_order_acq_rel);
  if (old == nullptr) return;
  // Unless its trees (or automata) served lookups for longer than the index was quiet before it, compiling
  // was not worth it (the index changes too often, or its trees are slower than its walk): the next waits
  // four times as long. (A compiled form published after this change began is stale at once; the next change
  // retires it.)
  const uint64_t needed = index->quiet_needed_.load(std::memory_order_relaxed);
  const bool worth = CompiledTrees::ByForm(old->method.load(std::memory_order_relaxed)) &&
                     old->served.load(std::memory_order_relaxed) >= needed;
  index->quiet_needed_.store(worth ? kQuietLookups : std::min(4 * needed, kMaxQuietLookups),
                             std::memory_order_relaxed);
  Retire(index->reclaimer_, [old] { delete old; });
}

bool TableIndex::Compile(bool by_automata) const {
  TreeCompiler::StartCompile(*this, version_.load(std::memory_order_acquire), /*on_thread=*/false,
                             /*with_automata=*/by_automata);
  if (!IsCompiled()) return false;
  const CompiledTrees* compiled = compiled_.load(std::memory_order_relaxed);
  if (by_automata && compiled->automata == nullptr) return false;
  compiled->method.store(by_automata ? CompiledTrees::kAutomata : CompiledTrees::kTrees,
                         std::memory_order_relaxed);
  return true;
}

bool TableIndex::IsCompiled() const { return ServingForm() != nullptr; }

const TableIndex::CompiledTrees* TableIndex::ServingForm() const {
  const uint64_t version = version_.load(std::memory_order_acquire);
  const CompiledTrees* compiled = compiled_.load(std::memory_order_acquire);
  return compiled != nullptr && compiled->version.load(std::memory_order_acquire) == version ? compiled
                                                                                             : nullptr;
}

void TableIndex::TreeCompiler::CountQuietLookups(const TableIndex& index, uint64_t version, size_t n) {
  // (Changes or not: enough lookups without a form want one folded by the writer, as it changes the index.)
  TreeUpkeep& upkeep = *index.upkeep_;
  if (upkeep.formless_lookups.fetch_add(n, std::memory_order_relaxed) + n >=
      index.quiet_needed_.load(std::memory_order_relaxed))
    upkeep.fold_wanted.store(true, std::memory_order_relaxed);
  if (index.compiling_.load(std::memory_order_relaxed)) {
    if (index.compile_built_.load(std::memory_order_relaxed)) FinishCompile(index);
    return;
  }
  const uint64_t seen = index.quiet_version_.load(std::memory_order_relaxed);
  if ((version & 1) != 0 || seen == (version | 1)) return;
  if (seen != version) {
    index.quiet_version_.store(version, std::memory_order_relaxed);
    index.quiet_lookups_.store(n, std::memory_order_relaxed);
    return;
  }
  if (index.quiet_lookups_.fetch_add(n, std::memory_order_relaxed) + n >=
      index.quiet_needed_.load(std::memory_order_relaxed)) {
    index.quiet_lookups_.store(0, std::memory_order_relaxed);
    // (Only where the automata can descend by AVX-512: a packet at a time they lost every trial to the
    // trees' AVX2 descent, and their build and longer trial would be spent for nothing.)
    StartCompile(index, version, /*on_thread=*/true, /*with_automata=*/AutomataHaveAvx512());
  }
}

inline bool TableIndex::TreeCompiler::TakeIfUnchanged(const CompiledTrees::LeafEntry& e, uintptr_t matcher,
                                                      uint64_t rank, CandidateList* list) {
  const RuleRecord* hit = __atomic_load_n(&e.hit, __ATOMIC_ACQUIRE);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (__atomic_load_n(&e.matcher, __ATOMIC_RELAXED) != matcher) return true;  // (filled again meanwhile)
  return list->TakeCandidate(rank, matcher & CompiledTrees::kTagged, hit);
}

inline void TableIndex::TreeCompiler::ScanLeaf(const CompiledTrees::LeafEntry* e, uint32_t count,
                                               const uint32_t* key, CandidateList* list) {
  // Entries are not in rank order once the writer added to the leaf: each is taken up to the bound, and
  // the candidates are ordered after. The writer fills a gone entry's slot with another in place, so the
  // plain reads that find a match may tear while it does: each entry's matcher word is read before its words
  // and rank, and again after them (TakeIfUnchanged), and a match counts only when the two agree (a sequence
  // lock). (The plain reads are what the sequence lock allows, not races a sanitizer should report: this
  // function is not instrumented.)
#if defined(__SSE2__)
  static_assert(kWords == 4 && offsetof(CompiledTrees::LeafEntry, mask) == 16 &&
                    alignof(CompiledTrees::LeafEntry) >= 16,
                "a leaf entry's values and masks are one aligned 16-byte vector each");
  const __m128i packet = _mm_loadu_si128(reinterpret_cast<const __m128i*>(key));
#endif
  const uint64_t from_rank = list->query->from_rank;
  for (const CompiledTrees::LeafEntry* const end = e + count; e != end; ++e) {
    const uintptr_t matcher = __atomic_load_n(&e->matcher, __ATOMIC_ACQUIRE);
#if defined(__SSE2__)
    const __m128i value = _mm_load_si128(reinterpret_cast<const __m128i*>(e->value.data()));
    const __m128i mask = _mm_load_si128(reinterpret_cast<const __m128i*>(e->mask.data()));
    const __m128i differs = _mm_xor_si128(_mm_and_si128(packet, mask), value);
    const bool matches = _mm_movemask_epi8(_mm_cmpeq_epi32(differs, _mm_setzero_si128())) == 0xffff;
#else
    uint32_t plain_differ = 0;
    for (int k = 0; k < kWords; ++k) plain_differ |= (key[k] & e->mask[k]) ^ e->value[k];
    const bool matches = plain_differ == 0;
#endif
    const uint64_t rank = e->rank;
    if (!matches || rank > list->bound || rank < from_rank || (matcher & CompiledTrees::kGone) != 0) continue;
    if (!TakeIfUnchanged(*e, matcher, rank, list)) return;
  }
}

void TableIndex::TreeCompiler::CandidatesFromTrees(const TableIndex& index, const CompiledTrees& compiled,
                                                   Query* queries, size_t n) {
  static_assert(sizeof(CompiledTrees::TreeNode) == 8 && offsetof(CompiledTrees::TreeNode, word) == 4 &&
                    offsetof(CompiledTrees::TreeNode, shift) == 5 &&
                    offsetof(CompiledTrees::TreeNode, bits) == 6,
                "the vector descents read a node as next, then word | shift << 8 | bits << 16");
  // Tree by tree in order of their least ranks (a packet whose exact candidate ranks below a tree's least
  // skips it): down each, the packets together, then each packet's leaf.
  const TreeDescent descent = tree_descent();
  std::array<uint32_t, kDescentPackets> at;
  DescentKeys key;  // the packets' words as trie keys, together
  // The packets' bounds, together: which go down a tree is asked once a tree.
  std::array<uint64_t, kDescentPackets> bound;
  std::array<CandidateList, kDescentPackets> list;
  for (size_t j = 0; j < n; ++j) {
    list[j].query = &queries[j];
    index.TrieKeys(queries[j].words, &key.by_packet[j * kWords]);
    bound[j] = ~uint64_t{0};
  }
  std::fill(bound.begin() + n, bound.end(), 0);
  if (descent != TreeDescent::kScalar) key.ByWord(n);
  const uint32_t trees = compiled.tree_count.load(std::memory_order_acquire);
  std::array<CompiledTrees::TreeNode, kDescentPackets> leaf;
  for (uint32_t t = 0; t < trees; ++t) {
    const CompiledTrees::Tree& tree = compiled.trees[t];
    const uint64_t least = __atomic_load_n(&tree.least, __ATOMIC_RELAXED);
    const uint32_t going = PacketsGoing(bound, n, least, descent);
    if (going == 0) continue;
    switch (descent) {
#if defined(__x86_64__)
      case TreeDescent::kAvx512:
        DescendAvx512<CompiledTrees>(compiled.nodes.data(), tree.root, key, n, going, at.data());
        break;
      case TreeDescent::kAvx2:
        DescendAvx2<CompiledTrees>(compiled.nodes.data(), tree.root, key, n, going, at.data());
        break;
#endif
      default:
        DescendScalar<CompiledTrees>(compiled.nodes.data(), tree.root, key, n, going, at.data());
    }
    // The leaves that may hold a candidate: with entries from a rank bucket the packet's bound reaches (an
    // empty leaf's is past the bound of a packet that has a candidate).
    uint32_t scanned = 0;
    for (uint32_t rest = going; rest != 0; rest &= rest - 1) {
      const int j = __builtin_ctz(rest);
      leaf[j] = compiled.LoadNode(at[j]);
      if (compiled.bucket_least[leaf[j].shift] > bound[j]) continue;
      scanned |= uint32_t{1} << j;
      __builtin_prefetch(&compiled.entries[leaf[j].next]);
    }
    // Their entries up to the bound that the packet matches.
    for (uint32_t rest = scanned; rest != 0; rest &= rest - 1) {
      const int j = __builtin_ctz(rest);
      ScanLeaf(compiled.entries.data() + leaf[j].next, leaf[j].bits, &key.by_packet[j * kWords], &list[j]);
      bound[j] = list[j].bound;
    }
  }
  for (size_t j = 0; j < n; ++j) list[j].Finish();
}

void TableIndex::TreeCompiler::CandidatesFromAutomata(const TableIndex& index, const CompiledTrees& compiled,
                                                      Query* queries, size_t n) {
  const AnswerAutomata& automata = *compiled.automata;
  const AnswerAutomata::Descent descent = tree_descent() != TreeDescent::kScalar && AutomataHaveAvx512()
                                              ? AnswerAutomata::Descent::kAvx512
                                              : AnswerAutomata::Descent::kScalar;
  std::array<uint32_t, kDescentPackets * kWords> words;  // the packets' words as trie keys
  std::array<AnswerAutomata::Key, kDescentPackets> key;
  std::array<uint64_t, kDescentPackets> bound;
  std::array<CandidateList, kDescentPackets> list;
  for (size_t j = 0; j < n; ++j) {
    list[j].query = &queries[j];
    index.TrieKeys(queries[j].words, &words[j * kWords]);
    key[j] = automata.KeyOf(&words[j * kWords]);
    bound[j] = ~uint64_t{0};
  }
  uint32_t unsure = 0;  // packets whose leaves may lack candidates
  std::array<uint64_t, kDescentPackets> leaf;
  for (size_t a = 0; a < automata.automata(); ++a) {
    // (A packet whose exact candidate ranks below the automaton's least has nothing to find there.)
    const uint32_t going = PacketsGoing(bound, n, compiled.automaton_least[a], tree_descent()) & ~unsure;
    if (going == 0) continue;
    automata.Descend(a, key.data(), going, leaf.data(), descent);
    // (Each packet's first answer requested before any is read.)
    for (uint32_t rest = going; rest != 0; rest &= rest - 1) {
      const uint64_t reached = leaf[__builtin_ctz(rest)];
      if (AnswerAutomata::LeafSize(reached) != 0)
        __builtin_prefetch(&compiled.answers[automata.LeafRule(reached, 0)]);
    }
    for (uint32_t rest = going; rest != 0; rest &= rest - 1) {
      const int j = __builtin_ctz(rest);
      const uint32_t size = AnswerAutomata::LeafSize(leaf[j]);
      for (uint32_t k = 0; k < size; ++k) {
        const CompiledTrees::LeafEntry& e = compiled.answers[automata.LeafRule(leaf[j], k)];
        const uintptr_t matcher = __atomic_load_n(&e.matcher, __ATOMIC_ACQUIRE);
        const uint64_t rank = e.rank;  // (never changed once built)
        if (rank > list[j].bound) break;
        if ((matcher & CompiledTrees::kGone) != 0 || rank < queries[j].from_rank) {
          // (Only a leaf's last entry is exact: the automata cut what followed it.)
          if ((matcher & 1) != 0) unsure |= uint32_t{1} << j;
          continue;
        }
        if (!TakeIfUnchanged(e, matcher, rank, &list[j])) break;
      }
      bound[j] = list[j].bound;
    }
  }
  const uint32_t deltas = compiled.delta_count.load(std::memory_order_acquire);
  for (size_t j = 0; j < n; ++j) {
    if ((unsure >> j & 1) != 0) {
      CandidatesFromTrees(index, compiled, &queries[j], 1);
      continue;
    }
    if (deltas != 0) ScanLeaf(compiled.delta.data(), deltas, &words[j * kWords], &list[j]);
    list[j].Finish();
  }
}

}  // namespace drsim::hw
