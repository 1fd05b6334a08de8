// AnswerAutomata: automata over a packet's 16 key bytes whose leaves list the rules the packet matches,
// in rank order, up to the first that ends the search. A lookup reads one byte a step and never scans a
// rule: where rte_acl's tries go, against the decision trees' leaf scans (hw/compiled_trees.h).
//
// What
//   Built from ternary rules over four 32-bit words (value and mask, in rank order, each saying whether a
//   match ends the search: an exact entry of a TableIndex). A packet's four words, read as the same
//   numbers, lead in each automaton to a leaf: the indices of the rules of that automaton it matches, in
//   rank order, cut after the first that ends the search. A set whose automaton would be too large is
//   split by how wild its first two words are (kGroupsOnSplit automata); one still too large is refused
//   (Build returns nullptr).
//
// How
//   A state is the list of rules a packet may still match after the bytes read so far, cut after the
//   first one that ends the search and tests no byte left. States are built a byte a level (subset
//   construction), and equal lists at a level are one state, so the automaton stays small where the rules
//   share prefixes. A byte's values part into the ranges where the state's list of next states is the same.
//   A state of one range reads nothing: its parent points past it. A state of at most kSmallRanges ranges
//   is a small node: its range bounds are one 16-byte vector, compared with the byte in one step; a larger
//   one is a full node of 256 children. The nodes are lookup memory (huge pages).
//
// Thread-safety
//   Immutable once built: any number of readers.
#ifndef DRSIM_HW_ANSWER_AUTOMATA_H_
#define DRSIM_HW_ANSWER_AUTOMATA_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/types/span.h"
#include "hw/lookup_memory.h"

namespace drsim::hw {

class AnswerAutomata {
 public:
  static constexpr int kWords = 4;
  static constexpr int kKeyBytes = 4 * kWords;
  static constexpr int kSmallRanges = 16;
  static constexpr size_t kGroupsOnSplit = 4;
  // A rule: its words' values and masks (numbers: a word's first byte is its top byte), and whether a
  // packet that matches it needs no rule of a later rank.
  struct Rule {
    std::array<uint32_t, kWords> value{};
    std::array<uint32_t, kWords> mask{};
    bool ends_search = false;
  };
  // How large an automaton may grow while it is built (states, and node memory in 4-byte cells), and
  // how much work its build may take (a state's rules times its ranges, summed).
  struct Limits {
    size_t max_states = size_t{1} << 20;
    size_t max_cells = size_t{1} << 22;
    uint64_t max_work = uint64_t{1} << 28;
  };

  // The automata of `rules` (in rank order), or nullptr when even split they would pass `limits`.
  static std::unique_ptr<AnswerAutomata> Build(absl::Span<const Rule> rules, const Limits& limits);

  // The packet's key: its four words as 16 bytes, each word's top byte first.
  using Key = std::array<uint8_t, kKeyBytes + 4>;  // (4 bytes of padding, 0: a chain node reads 4 at a time)
  static Key KeyOf(const uint32_t* words) {
    Key key{};
    for (int w = 0; w < kWords; ++w) {
      for (int b = 0; b < 4; ++b) key[4 * w + b] = static_cast<uint8_t>(words[w] >> (24 - 8 * b));
    }
    return key;
  }

  size_t automata() const { return roots_.size(); }
  // The least rule index of automaton `a` (its rules' first): a packet whose search ended before it has
  // nothing to find there.
  uint32_t least_rule(size_t a) const { return least_rule_[a]; }
  // The leaf of automaton `a` each packet j with bit j of `going` set reaches, into leaf[j] (the packets'
  // keys `keys[j]`; their steps interleaved, so that their loads overlap).
  void Descend(size_t a, const Key* keys, uint32_t going, uint32_t* leaf) const;
  // The rule indices (rank order) a leaf lists.
  absl::Span<const uint32_t> Leaf(uint32_t leaf) const {
    return absl::MakeConstSpan(leaf_rules_.data() + leaf_start_[leaf],
                               leaf_start_[leaf + 1] - leaf_start_[leaf]);
  }
  // Bytes held: nodes and leaves.
  size_t bytes() const {
    return cells_.size() * sizeof(uint32_t) + (leaf_start_.size() + leaf_rules_.size()) * sizeof(uint32_t);
  }
  size_t cells() const { return cells_.size(); }

 private:
  class Builder;
  // A reference to a node or leaf: a leaf's index << 1 | 1, or a node's first cell << 1.
  static constexpr uint32_t kLeafRef = 1;
  // A node's first cell: the key byte it reads (bits 0-7), kFullNode, a small node's range count
  // (bits 16-23), and the mask it reads the byte under (bits 24-31). A small node's next four cells are its
  // range bounds, each xored with 0x80 (for a signed compare), the last range's and unused ones 0x7f; then a
  // child ref a range. A full node's next 256 cells are a child ref a byte value.
  static constexpr uint32_t kFullNode = 1u << 8;
  static constexpr uint32_t kChainNode = 1u << 9;
  static uint32_t Step(const uint32_t* cells, uint32_t ref, const Key& key);

  std::vector<uint32_t, LookupAllocator<uint32_t>> cells_;
  std::vector<uint32_t> roots_;
  std::vector<uint32_t> least_rule_;
  std::vector<uint32_t> leaf_start_{0};
  std::vector<uint32_t> leaf_rules_;
};

}  // namespace drsim::hw

#endif  // DRSIM_HW_ANSWER_AUTOMATA_H_
