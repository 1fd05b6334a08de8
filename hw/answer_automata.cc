#include "hw/answer_automata.h"

#include <algorithm>
#include <array>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"

namespace drsim::hw {

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
        const int shift = 24 - 8 * (b % 4);
        const uint8_t mask = static_cast<uint8_t>(rules[r].mask[b / 4] >> shift);
        const uint8_t value = static_cast<uint8_t>(rules[r].value[b / 4] >> shift) & mask;
        // A mask of leading ones tests a range of byte values.
        const uint8_t wild = static_cast<uint8_t>(~mask);
        const bool range = (wild & (wild + 1)) == 0;
        tests_[r * kKeyBytes + b] = {value, static_cast<uint8_t>(value | static_cast<uint8_t>(~mask)), value,
                                     mask, range};
        if (mask != 0) until = b + 1;
      }
      tested_until_[r] = until;
    }
  }

  // The automaton of `members`: its root's reference into *root; false past the limits.
  bool Build(const std::vector<uint32_t>& members, uint32_t* root) {
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
        if (state_count > limits_.max_states || work > limits_.max_work) return false;
      }
    }
    // The leaves, then the nodes from the last byte's up: a node's children have their references first.
    std::array<std::vector<uint32_t>, kKeyBytes + 1> refs;
    for (const std::vector<uint32_t>& list : states[kKeyBytes]) {
      refs[kKeyBytes].push_back(static_cast<uint32_t>(out_->leaf_start_.size() - 1) << 1 | kLeafRef);
      out_->leaf_rules_.insert(out_->leaf_rules_.end(), list.begin(), list.end());
      out_->leaf_start_.push_back(static_cast<uint32_t>(out_->leaf_rules_.size()));
    }
    for (int d = kKeyBytes - 1; d >= 0; --d) {
      refs[d].resize(states[d].size());
      for (size_t s = 0; s < states[d].size(); ++s) {
        refs[d][s] = EmitChain(d, s, masks, ranges, refs);
        if (refs[d][s] == kNoChain) refs[d][s] = Emit(d, masks[d][s], ranges[d][s], refs[d + 1]);
        if (out_->cells_.size() > limits_.max_cells) return false;
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
  // A state whose byte has one value (under its mask) that leads on, every other value one other child:
  // that value, and the two children.
  struct OneValue {
    bool is = false;
    uint8_t value = 0;
    uint32_t on = 0, off = 0;
  };
  static OneValue OneValueOf(const std::vector<Range>& r) {
    OneValue one;
    if (r.size() == 3 && r[0].child == r[2].child && r[1].last == r[0].last + 1) {
      one = {true, r[1].last, r[1].child, r[0].child};
    } else if (r.size() == 2 && r[0].last == 0) {
      one = {true, 0, r[0].child, r[1].child};
    } else if (r.size() == 2 && r[0].last == 254) {
      one = {true, 255, r[1].child, r[0].child};
    }
    return one;
  }
  static constexpr uint32_t kNoChain = ~uint32_t{0};
  // A chain node for a state and the states after it that test one value each (or nothing), up to four
  // bytes: kNoChain when fewer than two bytes would be tested.
  template <typename Masks, typename Ranges, typename Refs>
  uint32_t EmitChain(int d, size_t s, const Masks& masks, const Ranges& ranges, const Refs& refs) {
    std::array<uint8_t, 4> expect{}, mask{};
    std::array<uint32_t, 4> fail{};
    int tested = 0, k = 0;
    size_t state = s;
    for (; k < 4 && d + k < kKeyBytes; ++k) {
      const std::vector<Range>& r = ranges[d + k][state];
      if (r.size() == 1) {
        state = r[0].child;
        continue;
      }
      const OneValue one = OneValueOf(r);
      if (!one.is) break;
      expect[k] = one.value;
      mask[k] = masks[d + k][state];
      fail[k] = refs[d + k + 1][one.off];
      state = one.on;
      ++tested;
    }
    if (tested < 2) return kNoChain;
    std::vector<uint32_t, LookupAllocator<uint32_t>>& cells = out_->cells_;
    const uint32_t at = static_cast<uint32_t>(cells.size());
    uint32_t packed_expect, packed_mask;
    std::memcpy(&packed_expect, expect.data(), 4);
    std::memcpy(&packed_mask, mask.data(), 4);
    cells.push_back(static_cast<uint32_t>(d) | kChainNode);
    cells.push_back(packed_expect & packed_mask);
    cells.push_back(packed_mask);
    cells.push_back(refs[d + k][state]);
    cells.insert(cells.end(), fail.begin(), fail.end());
    return at << 1;
  }
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
  // The reference to the node of a state reading byte `d` under `mask` (its child's own, when it has one
  // range).
  uint32_t Emit(int d, uint8_t mask, const std::vector<Range>& ranges,
                const std::vector<uint32_t>& child_refs) {
    if (ranges.size() == 1) return child_refs[ranges[0].child];
    std::vector<uint32_t, LookupAllocator<uint32_t>>& cells = out_->cells_;
    const uint32_t at = static_cast<uint32_t>(cells.size());
    const uint32_t header = static_cast<uint32_t>(d) | uint32_t{mask} << 24;
    if (ranges.size() <= static_cast<size_t>(kSmallRanges)) {
      cells.push_back(header | static_cast<uint32_t>(ranges.size()) << 16);
      std::array<uint8_t, 16> bounds;
      bounds.fill(0x7f);
      for (size_t k = 0; k + 1 < ranges.size(); ++k) bounds[k] = ranges[k].last ^ 0x80;
      std::array<uint32_t, 4> packed;
      std::memcpy(packed.data(), bounds.data(), sizeof(bounds));
      cells.insert(cells.end(), packed.begin(), packed.end());
      for (const Range& r : ranges) cells.push_back(child_refs[r.child]);
    } else {
      // (Indexed by the byte under the mask, as a small node compares it.)
      cells.push_back(header | kFullNode);
      std::array<uint32_t, 256> child;
      int value = 0;
      for (const Range& r : ranges) {
        for (; value <= r.last; ++value) child[value] = child_refs[r.child];
      }
      cells.insert(cells.end(), child.begin(), child.end());
    }
    return at << 1;
  }

  absl::Span<const Rule> rules_;
  Limits limits_;
  AnswerAutomata* out_;
  std::vector<ByteTest> tests_;
  std::vector<int> tested_until_;  // a rule's last tested byte, plus one
};

std::unique_ptr<AnswerAutomata> AnswerAutomata::Build(absl::Span<const Rule> rules, const Limits& limits) {
  if (rules.size() >= (uint32_t{1} << 31)) return nullptr;
  auto built = std::make_unique<AnswerAutomata>();
  Builder builder(rules, limits, built.get());
  std::vector<uint32_t> all(rules.size());
  for (uint32_t r = 0; r < all.size(); ++r) all[r] = r;
  uint32_t root;
  if (builder.Build(all, &root)) {
    built->roots_.push_back(root);
    built->least_rule_.push_back(0);
    return built;
  }
  // Rules that leave an address word wild, beside rules that pin it, make states of every pairing: split
  // by whether each of the first two words has fewer than 16 bits tested.
  built = std::make_unique<AnswerAutomata>();
  Builder split(rules, limits, built.get());
  std::array<std::vector<uint32_t>, kGroupsOnSplit> group;
  for (uint32_t r = 0; r < rules.size(); ++r) {
    const unsigned wild = unsigned{__builtin_popcount(rules[r].mask[0]) < 16} |
                          unsigned{__builtin_popcount(rules[r].mask[1]) < 16} << 1;
    group[wild].push_back(r);
  }
  std::sort(group.begin(), group.end(),
            [](const auto& a, const auto& b) { return !a.empty() && (b.empty() || a[0] < b[0]); });
  for (const std::vector<uint32_t>& members : group) {
    if (members.empty()) continue;
    if (!split.Build(members, &root)) return nullptr;
    built->roots_.push_back(root);
    built->least_rule_.push_back(members[0]);
  }
  return built;
}

inline uint32_t AnswerAutomata::Step(const uint32_t* cells, uint32_t ref, const Key& key) {
  const uint32_t* node = cells + (ref >> 1);
  const uint32_t header = node[0];
  if ((header & kChainNode) != 0) {
    uint32_t got;
    std::memcpy(&got, key.data() + (header & 0xff), sizeof(got));
    const uint32_t differ = (got & node[2]) ^ node[1];
    return differ == 0 ? node[3] : node[4 + (__builtin_ctz(differ) >> 3)];
  }
  const uint8_t byte = key[header & 0xff] & static_cast<uint8_t>(header >> 24);
  if ((header & kFullNode) != 0) return node[1 + byte];
#if defined(__SSE2__)
  const __m128i bounds = _mm_loadu_si128(reinterpret_cast<const __m128i*>(node + 1));
  const __m128i packet = _mm_set1_epi8(static_cast<char>(byte ^ 0x80));
  // (The bounds ascend, so the bounds below the byte are the mask's low bits; the last is never below.)
  const int below = __builtin_ctz(~static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpgt_epi8(packet, bounds))));
#else
  uint8_t bounds[16];
  std::memcpy(bounds, node + 1, sizeof(bounds));
  int below = 0;
  for (int k = 0; k < 16; ++k) below += static_cast<int8_t>(byte ^ 0x80) > static_cast<int8_t>(bounds[k]);
#endif
  return node[5 + below];
}

void AnswerAutomata::Descend(size_t a, const Key* keys, uint32_t going, uint32_t* leaf) const {
  const uint32_t root = roots_[a];
  const uint32_t* cells = cells_.data();
  std::array<uint32_t, 32> ref;
  uint32_t active = 0;
  for (uint32_t rest = going; rest != 0; rest &= rest - 1) {
    const int j = __builtin_ctz(rest);
    ref[j] = root;
    if ((root & kLeafRef) != 0) {
      leaf[j] = root >> 1;
    } else {
      active |= uint32_t{1} << j;
    }
  }
  // A step of each packet in turn: each load has the others' steps' time to arrive.
  while (active != 0) {
    for (uint32_t rest = active; rest != 0; rest &= rest - 1) {
      const int j = __builtin_ctz(rest);
      const uint32_t next = Step(cells, ref[j], keys[j]);
      ref[j] = next;
      if ((next & kLeafRef) != 0) {
        leaf[j] = next >> 1;
        active &= ~(uint32_t{1} << j);
      } else {
        __builtin_prefetch(cells + (next >> 1));
      }
    }
  }
}

}  // namespace drsim::hw
