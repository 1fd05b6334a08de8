#include "hw/answer_automata.h"

#include <algorithm>
#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"

namespace drsim::hw {
namespace {

// Byte `b` of a rule's four words (`words[0]`'s top byte is byte 0), as the key holds it.
uint8_t ByteOf(const std::array<uint32_t, AnswerAutomata::kWords>& words, int b) {
  return static_cast<uint8_t>(words[b / 4] >> (24 - 8 * (b % 4)));
}

// Whether a byte's mask is leading ones (with no bits tested, too): it tests a range of byte values.
bool IsPrefix(uint8_t mask) {
  const uint8_t wild = static_cast<uint8_t>(~mask);
  return (wild & (wild + 1)) == 0;
}

// The key mask of `rules`: at each byte position that every rule testing it tests under one mask that is
// no prefix, that mask (0xff elsewhere). Into `masked`, the rules as they test keys under it: such a byte's
// test is of its value under the mask, all ones.
std::array<uint8_t, AnswerAutomata::kKeyBytes> KeyMaskOf(absl::Span<const AnswerAutomata::Rule> rules,
                                                         std::vector<AnswerAutomata::Rule>* masked) {
  std::array<uint8_t, AnswerAutomata::kKeyBytes> key_mask;
  key_mask.fill(0xff);
  masked->assign(rules.begin(), rules.end());
  for (int b = 0; b < AnswerAutomata::kKeyBytes; ++b) {
    const int w = b / 4, shift = 24 - 8 * (b % 4);
    uint8_t one = 0;
    bool same = true;
    for (const AnswerAutomata::Rule& r : rules) {
      const uint8_t mask = ByteOf(r.mask, b);
      if (mask == 0) continue;
      same &= one == 0 || mask == one;
      one = mask;
    }
    if (!same || IsPrefix(one)) continue;
    key_mask[b] = one;
    for (AnswerAutomata::Rule& r : *masked) {
      if (ByteOf(r.mask, b) == 0) continue;
      r.mask[w] |= uint32_t{0xff} << shift;
      r.value[w] &= ~(uint32_t{0xff} << shift) | uint32_t{one} << shift;
    }
  }
  return key_mask;
}

}  // namespace

// Builds one automaton of some of the rules (`members`, in rank order) into `out`.
class AnswerAutomata::Builder {
 public:
  Builder(absl::Span<const Rule> rules, const Limits& limits, AnswerAutomata* out)
      : rules_(rules),
        limits_(limits),
        out_(out),
        tests_(rules.size() * kKeyBytes),
        tested_until_(rules.size()) {
    for (size_t r = 0; r < rules.size(); ++r) {
      int until = 0;
      for (int b = 0; b < kKeyBytes; ++b) {
        const uint8_t mask = ByteOf(rules[r].mask, b);
        const uint8_t value = ByteOf(rules[r].value, b) & mask;
        tests_[r * kKeyBytes + b] = {value, static_cast<uint8_t>(value | static_cast<uint8_t>(~mask)), value,
                                     mask, IsPrefix(mask)};
        if (mask != 0) until = b + 1;
      }
      tested_until_[r] = until;
    }
  }

  // The work of every Build so far (a state's rules times its ranges, summed).
  uint64_t spent() const { return spent_; }
  // The automaton of `members`: its root's reference into *root; false past the limits.
  bool Build(const std::vector<uint32_t>& members, uint64_t* root) {
    std::array<std::vector<std::vector<uint32_t>>, kKeyBytes + 1> states;
    std::array<std::vector<std::vector<Range>>, kKeyBytes> ranges;
    std::array<std::vector<uint8_t>, kKeyBytes> masks;
    std::vector<uint32_t> first = members;
    Cut(&first, 0);
    states[0].push_back(std::move(first));
    size_t state_count = 1;
    uint64_t work = 0;
    for (int d = 0; d < kKeyBytes; ++d) {
      absl::flat_hash_map<absl::Span<const uint32_t>, uint32_t> ids;
      std::vector<std::vector<uint32_t>>& next = states[d + 1];
      ranges[d].resize(states[d].size());
      masks[d].resize(states[d].size());
      for (size_t s = 0; s < states[d].size(); ++s) {
        const std::vector<uint32_t>& list = states[d][s];
        // The byte's mask: all ones when every rule tests a range of values; the one mask every rule that
        // tests the byte has, when that is no prefix (the node compares the byte under it); else all ones,
        // each value apart.
        uint8_t mask = 0;
        bool ranges_only = true, one_mask = true;
        for (uint32_t r : list) {
          const ByteTest& t = Test(r, d);
          if (t.mask == 0) continue;
          ranges_only &= t.range;
          one_mask &= mask == 0 || t.mask == mask;
          mask = t.mask;
        }
        const bool every_value = !ranges_only && !one_mask;
        mask = ranges_only || every_value ? 0xff : mask;
        masks[d][s] = mask;
        std::array<bool, 257> starts{};
        starts[0] = true;
        for (uint32_t r : list) {
          const ByteTest& t = Test(r, d);
          if (every_value) break;
          starts[t.lo & mask] = true;
          starts[(t.hi & mask) + 1] = true;
        }
        std::vector<Range>& out = ranges[d][s];
        std::vector<uint32_t> child;
        for (int a = 0; a < 256;) {
          int b = a + 1;
          while (b < 256 && !every_value && !starts[b]) ++b;
          child.clear();
          for (uint32_t r : list) {
            const ByteTest& t = Test(r, d);
            // (Under a mask that is no prefix, a rule testing the byte takes one masked value: lo = hi.)
            const bool takes = every_value ? (a & t.mask) == t.value
                                           : t.mask == 0 || ((t.lo & mask) <= a && b - 1 <= (t.hi & mask));
            if (takes) child.push_back(r);
          }
          work += list.size() + 1;
          Cut(&child, d + 1);
          uint32_t id;
          auto found = ids.find(absl::MakeConstSpan(child));
          if (found != ids.end()) {
            id = found->second;
          } else {
            id = static_cast<uint32_t>(next.size());
            next.push_back(child);
            ids.emplace(absl::MakeConstSpan(next.back()), id);
            ++state_count;
          }
          if (!out.empty() && out.back().child == id) {
            out.back().last = static_cast<uint8_t>(b - 1);
          } else {
            out.push_back({static_cast<uint8_t>(b - 1), id});
          }
          a = b;
        }
        if (state_count > limits_.max_states || work > limits_.max_work) {
          spent_ += work;
          return false;
        }
      }
    }
    spent_ += work;
    // The leaves, then the nodes from the last byte's up: a node's children have their transitions first.
    std::array<std::vector<uint64_t>, kKeyBytes + 1> refs;
    const size_t cells_before = out_->cells_.size();  // (the automata built before this one's)
    std::vector<uint32_t, LookupAllocator<uint32_t>>& leaf_rules = out_->leaf_rules_;
    for (const std::vector<uint32_t>& list : states[kKeyBytes]) {
      if (leaf_rules.size() + list.size() >= (size_t{1} << 31)) return false;
      const uint64_t at = list.size() == 1 ? list[0] : leaf_rules.size();
      refs[kKeyBytes].push_back(uint64_t{list.size()} << 32 | at << 1 | kLeaf);
      if (list.size() != 1) leaf_rules.insert(leaf_rules.end(), list.begin(), list.end());
    }
    for (int d = kKeyBytes - 1; d >= 0; --d) {
      refs[d].resize(states[d].size());
      for (size_t s = 0; s < states[d].size(); ++s) {
        refs[d][s] = Emit(d, masks[d][s], ranges[d][s], refs[d + 1]);
        if (out_->cells_.size() - cells_before > limits_.max_cells ||
            out_->cells_.size() > size_t{1} << (32 - kCellShift)) {
          return false;
        }
      }
    }
    *root = refs[0][0];
    return true;
  }

 private:
  struct ByteTest {
    uint8_t lo, hi;       // a range's values
    uint8_t value, mask;  // else the byte's value under its mask
    bool range;
  };
  struct Range {
    uint8_t last;  // the range's last byte value
    uint32_t child;
  };
  static constexpr size_t kBoundRanges = 5;  // a node of bounds: four bounds, five ranges
  const ByteTest& Test(uint32_t rule, int byte) const { return tests_[rule * kKeyBytes + byte]; }
  // Cuts a state's list after its first rule that ends the search and tests no byte from `depth` on.
  void Cut(std::vector<uint32_t>* list, int depth) const {
    for (size_t k = 0; k < list->size(); ++k) {
      const uint32_t r = (*list)[k];
      if (rules_[r].ends_search && tested_until_[r] <= depth) {
        list->resize(k + 1);
        return;
      }
    }
  }
  // A node of bounds reading byte `d`: one cell a range (`child[k]`, the transition of ranges[k]).
  uint64_t EmitBounds(int d, const Range* ranges, size_t n, const uint64_t* child) {
    if (n == 1) return child[0];
    std::vector<uint64_t, LookupAllocator<uint64_t>>& cells = out_->cells_;
    const uint64_t at = cells.size();
    std::array<uint8_t, 4> bounds;
    bounds.fill(0x7f);
    for (size_t k = 0; k + 1 < n; ++k) bounds[k] = ranges[k].last ^ 0x80;
    uint32_t packed;
    std::memcpy(&packed, bounds.data(), sizeof(packed));
    cells.insert(cells.end(), child, child + n);
    return uint64_t{packed} << 32 | at << kCellShift | uint64_t(d) << 2;
  }
  // The transition to the node of a state reading byte `d` under `mask` (its child's own, when it has one
  // range): a node of bounds, two levels of them, or a full node.
  uint64_t Emit(int d, uint8_t mask, const std::vector<Range>& ranges,
                const std::vector<uint64_t>& child_refs) {
    const size_t n = ranges.size();
    if (n == 1) return child_refs[ranges[0].child];
    if (mask == 0xff && n <= kBoundRanges * kBoundRanges) {
      std::array<uint64_t, kBoundRanges * kBoundRanges> child;
      for (size_t k = 0; k < n; ++k) child[k] = child_refs[ranges[k].child];
      if (n <= kBoundRanges) return EmitBounds(d, ranges.data(), n, child.data());
      // (The first level's ranges each join some of the state's, and lead to a node of those.)
      const size_t groups = (n + kBoundRanges - 1) / kBoundRanges;
      std::array<Range, kBoundRanges> top;
      std::array<uint64_t, kBoundRanges> top_child;
      for (size_t g = 0; g < groups; ++g) {
        const size_t first = g * n / groups, end = (g + 1) * n / groups;
        top[g].last = ranges[end - 1].last;
        top_child[g] = EmitBounds(d, ranges.data() + first, end - first, child.data() + first);
      }
      return EmitBounds(d, top.data(), groups, top_child.data());
    }
    // (Indexed by the key byte; the state's ranges are of the byte under its mask.)
    std::vector<uint64_t, LookupAllocator<uint64_t>>& cells = out_->cells_;
    const uint64_t at = cells.size();
    cells.resize(at + 256);
    for (int value = 0; value < 256; ++value) {
      size_t k = 0;
      while (ranges[k].last < (value & mask)) ++k;
      cells[at + value] = child_refs[ranges[k].child];
    }
    return at << kCellShift | uint64_t(d) << 2 | kFullNode;
  }

  absl::Span<const Rule> rules_;
  Limits limits_;
  AnswerAutomata* out_;
  std::vector<ByteTest> tests_;
  std::vector<int> tested_until_;  // a rule's last tested byte, plus one
  uint64_t spent_ = 0;
};

std::unique_ptr<AnswerAutomata> AnswerAutomata::Build(absl::Span<const Rule> rules, const Limits& limits) {
  if (rules.size() >= (uint32_t{1} << 31)) return nullptr;
  std::vector<Rule> masked;
  const std::array<uint8_t, kKeyBytes> key_mask = KeyMaskOf(rules, &masked);
  auto built = std::make_unique<AnswerAutomata>();
  std::memcpy(built->key_mask_.data(), key_mask.data(), sizeof(key_mask));
  Builder builder(masked, limits, built.get());
  std::vector<uint32_t> all(rules.size());
  for (uint32_t r = 0; r < all.size(); ++r) all[r] = r;
  uint64_t root;
  if (builder.Build(all, &root)) {
    built->roots_.push_back(root);
    built->least_rule_.push_back(0);
    return built;
  }
  if (limits.max_automata < 2) return nullptr;
  built = std::make_unique<AnswerAutomata>();
  std::memcpy(built->key_mask_.data(), key_mask.data(), sizeof(key_mask));
  if (!built->BuildSplit(masked, limits)) return nullptr;
  return built;
}

// The split of the header's "How": runs of the rules sorted wildest first, word by word, each the longest
// that builds within the split's limits (to within an eighth).
bool AnswerAutomata::BuildSplit(absl::Span<const Rule> rules, const Limits& limits) {
  std::vector<uint32_t> order(rules.size());
  for (uint32_t r = 0; r < order.size(); ++r) order[r] = r;
  auto wild = [&](uint32_t r) {
    std::array<int, kWords> bits;
    for (int w = 0; w < kWords; ++w) bits[w] = __builtin_popcount(rules[r].mask[w]);
    return bits;
  };
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return wild(a) < wild(b); });
  Limits each = limits;
  each.max_cells = std::min(limits.max_cells, limits.split_cells);
  Builder builder(rules, each, this);
  std::vector<std::pair<uint32_t, uint64_t>> roots;  // (least rule, root)
  // Builds the run of `n` rules from `at` (in rank order); keeps it only when `keep`.
  auto run = [&](size_t at, size_t n, bool keep, uint64_t* root) {
    std::vector<uint32_t> members(order.begin() + at, order.begin() + at + n);
    std::sort(members.begin(), members.end());
    const size_t cells = cells_.size(), leaf_rules = leaf_rules_.size();
    const bool fits = builder.Build(members, root);
    if (!fits || !keep) {
      cells_.resize(cells);
      leaf_rules_.resize(leaf_rules);
    }
    return fits;
  };
  size_t guess = kFirstSplitRun;
  for (size_t at = 0; at < order.size();) {
    if (roots.size() == limits.max_automata) return false;
    const size_t rest = order.size() - at;
    // Up from the guess while runs fit, then halve the gap between the longest that fits and the shortest
    // that does not.
    size_t fits = 0, fails = rest + 1, n = std::min(guess, rest);
    uint64_t root;
    while (fails - fits > std::max<size_t>(1, fits / 8)) {
      if (run(at, n, false, &root)) {
        fits = n;
      } else {
        fails = n;
      }
      if (builder.spent() > limits.split_work) return false;
      n = fails > rest ? std::min(rest, 2 * fits) : (fits + fails) / 2;
    }
    if (fits == 0 || !run(at, fits, true, &root)) return false;
    roots.push_back({*std::min_element(order.begin() + at, order.begin() + at + fits), root});
    at += fits;
    guess = fits;
  }
  // (Least rule first: a packet whose search ended before an automaton's least rule skips it.)
  std::sort(roots.begin(), roots.end());
  for (const auto& [least, root] : roots) {
    least_rule_.push_back(least);
    roots_.push_back(root);
  }
  return true;
}

bool AnswerAutomata::CpuHas(Descent descent) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (descent == Descent::kAvx512) {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vbmi");
  }
#endif
  return descent == Descent::kScalar;
}

inline uint64_t AnswerAutomata::Step(const uint64_t* cells, uint64_t transition, const Key& key) {
  const uint32_t low = static_cast<uint32_t>(transition);
  const uint8_t byte = key.bytes[low >> 2 & 15];
  // The bounds below the byte, compared as the vector descent does: signed, each side xored with 0x80. Both
  // the count and the byte are made, and one chosen without a branch: which a node is cannot be predicted.
#if defined(__SSE2__)
  const __m128i packet = _mm_set1_epi8(static_cast<char>(byte ^ 0x80));
  const __m128i bounds = _mm_cvtsi32_si128(static_cast<int>(transition >> 32));
  const uint32_t above = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpgt_epi8(packet, bounds))) & 15;
  // (How many bits of `above` are set: its nibble of a table of the sixteen counts.)
  const uint32_t below = static_cast<uint32_t>(uint64_t{0x4332322132212110} >> (4 * above) & 15);
#else
  const int8_t packet = static_cast<int8_t>(byte ^ 0x80);
  uint32_t below = 0;
  for (int k = 0; k < 4; ++k) below += packet > static_cast<int8_t>(transition >> (32 + 8 * k));
#endif
  const uint32_t cell = (low & kFullNode) != 0 ? byte : below;
  return cells[(low >> kCellShift) + cell];
}

void AnswerAutomata::DescendScalar(uint64_t root, const Key* keys, uint32_t going, uint64_t* leaf) const {
  const uint64_t* cells = cells_.data();
  for (uint32_t rest = going; rest != 0; rest &= rest - 1) leaf[__builtin_ctz(rest)] = root;
  // A step of each packet in turn: each load has the others' steps' time to arrive.
  for (uint32_t active = going; active != 0;) {
    for (uint32_t rest = active; rest != 0; rest &= rest - 1) {
      const int j = __builtin_ctz(rest);
      const uint64_t next = Step(cells, leaf[j], keys[j]);
      leaf[j] = next;
      if ((next & kLeaf) != 0) {
        active &= ~(uint32_t{1} << j);
      } else {
        __builtin_prefetch(cells + (static_cast<uint32_t>(next) >> kCellShift));
      }
    }
  }
}

#if defined(__x86_64__)
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) void AnswerAutomata::DescendAvx512(
    uint64_t root, const Key* keys, uint32_t going, uint64_t* leaf) const {
  constexpr int kLanes = 8;
  constexpr int kGroups = kBurst / kLanes;
  const long long* cells = reinterpret_cast<const long long*>(cells_.data());
  // A lane's key bytes are bytes [16 * lane, 16 * lane + 16) of its group's two registers.
  const __m512i lane_key = _mm512_set_epi64(0x70, 0x60, 0x50, 0x40, 0x30, 0x20, 0x10, 0);
  // Byte 0 of each lane into all eight of its bytes.
  const __m512i spread = _mm512_set_epi64(0x0808080808080808, 0, 0x0808080808080808, 0, 0x0808080808080808, 0,
                                          0x0808080808080808, 0);
  const __m512i sign = _mm512_set1_epi8(static_cast<char>(0x80));
  const __m512i bound_ones = _mm512_set1_epi64(0x0101010100000000);
  const __m512i position = _mm512_set1_epi64(15);
  const __m512i byte_mask = _mm512_set1_epi64(0xff);
  const __m512i low_half = _mm512_set1_epi64(0xffffffff);
  const __m512i full_node = _mm512_set1_epi64(kFullNode);
  const __m512i leaf_bit = _mm512_set1_epi64(kLeaf);
  __m512i at[kGroups], key_low[kGroups], key_high[kGroups];
  __mmask8 steps[kGroups];
  for (int g = 0; g < kGroups; ++g) {
    steps[g] = static_cast<__mmask8>(going >> (kLanes * g));
    at[g] = _mm512_set1_epi64(static_cast<long long>(root));
    key_low[g] = _mm512_loadu_si512(keys + kLanes * g);
    key_high[g] = _mm512_loadu_si512(keys + kLanes * g + kLanes / 2);
  }
  for (;;) {
    unsigned any = 0;
    for (int g = 0; g < kGroups; ++g) any |= steps[g];
    if (any == 0) break;
    for (int g = 0; g < kGroups; ++g) {
      const __m512i read = _mm512_and_si512(_mm512_srli_epi64(at[g], 2), position);
      const __m512i picked =
          _mm512_permutex2var_epi8(key_low[g], _mm512_add_epi64(lane_key, read), key_high[g]);
      const __m512i byte = _mm512_and_si512(picked, byte_mask);
      // The bounds below the byte: a signed compare of each bound byte with the byte, counted by a sum.
      const __m512i packet = _mm512_xor_si512(_mm512_shuffle_epi8(picked, spread), sign);
      const __m512i above = _mm512_movm_epi8(_mm512_cmpgt_epi8_mask(packet, at[g]));
      const __m512i below = _mm512_sad_epu8(_mm512_and_si512(above, bound_ones), _mm512_setzero_si512());
      const __mmask8 full = _mm512_test_epi64_mask(at[g], full_node);
      const __m512i cell = _mm512_add_epi64(_mm512_srli_epi64(_mm512_and_si512(at[g], low_half), kCellShift),
                                            _mm512_mask_blend_epi64(full, below, byte));
      at[g] = _mm512_mask_i64gather_epi64(at[g], steps[g], cell, cells, 8);
      steps[g] = _mm512_mask_testn_epi64_mask(steps[g], at[g], leaf_bit);
    }
  }
  for (int g = 0; g < kGroups; ++g) _mm512_storeu_si512(leaf + kLanes * g, at[g]);
}
#else
void AnswerAutomata::DescendAvx512(uint64_t root, const Key* keys, uint32_t going, uint64_t* leaf) const {
  DescendScalar(root, keys, going, leaf);
}
#endif

void AnswerAutomata::Descend(size_t a, const Key* keys, uint32_t going, uint64_t* leaf,
                             Descent descent) const {
  const uint64_t root = roots_[a];
  if ((root & kLeaf) != 0) {
    for (uint32_t rest = going; rest != 0; rest &= rest - 1) leaf[__builtin_ctz(rest)] = root;
  } else if (descent == Descent::kAvx512) {
    DescendAvx512(root, keys, going, leaf);
  } else {
    DescendScalar(root, keys, going, leaf);
  }
}

}  // namespace drsim::hw
