// AnswerAutomata: automata over a packet's 16 key bytes whose leaves list the rules the packet matches,
// in rank order, up to the first that ends the search. A lookup reads one byte a step and never scans a
// rule: where rte_acl's tries go, against the decision trees' leaf scans (hw/compiled_trees.h).
//
// What
//   Built from ternary rules over four 32-bit words (value and mask, in rank order, each saying whether a
//   match ends the search: an exact entry of a TableIndex). A packet's four words, read as the same
//   numbers, lead in each automaton to a leaf: the indices of the rules of that automaton it matches, in
//   rank order, cut after the first that ends the search. A set whose automaton would be too large is
//   split into several smaller ones, as rte_acl splits its rules into tries; one that needs more automata
//   than its limits allow is refused (Build returns nullptr).
//
// How
//   A state is the list of rules a packet may still match after the bytes read so far, cut after the
//   first one that ends the search and tests no byte left. States are built a byte a level (subset
//   construction), and equal lists at a level are one state, so the automaton stays small where the rules
//   share prefixes. A byte's values part into the ranges where the state's list of next states is the same.
//   A state of one range reads nothing: its parent points past it.
//
//   A split sorts the rules by how wild their words are, the wildest first (rules that leave an address
//   word wild, beside rules that pin it, would make states of every pairing), and cuts them into runs,
//   each the longest that builds within the split's limits.
//
//   A step follows a transition: 64 bits that say which key byte the next node reads, where its cells
//   are, and, for a node of up to four bounds (five ranges), the bounds themselves, so that a step is
//   one load: the cell of the range the byte falls in. A state of up to 25 ranges is two such nodes
//   reading the same byte; a larger one is a full node of 256 cells, one a byte value. A byte position
//   that every rule testing it tests under one mask that is no prefix (a flags field) is masked in the
//   key itself (KeyOf), so that those tests are ranges too.
//
//   Descend takes up to 32 packets at once. The AVX-512 descent steps four groups of eight packets in
//   turn, so that each group's load has the others' steps' time to arrive; a lane's key byte is picked
//   out of its group's keys in a register. The scalar descent reads the same cells a packet at a time,
//   and reaches the same leaves.
//
// Thread-safety
//   Immutable once built: any number of readers.
#ifndef DRSIM_HW_ANSWER_AUTOMATA_H_
#define DRSIM_HW_ANSWER_AUTOMATA_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/types/span.h"
#include "hw/lookup_memory.h"

namespace drsim::hw {

class AnswerAutomata {
 public:
  static constexpr int kWords = 4;
  static constexpr int kKeyBytes = 4 * kWords;
  static constexpr size_t kMaxSplit = 4;
  static constexpr size_t kBurst = 32;
  // A rule: its words' values and masks (numbers: a word's first byte is its top byte), and whether a
  // packet that matches it needs no rule of a later rank.
  struct Rule {
    std::array<uint32_t, kWords> value{};
    std::array<uint32_t, kWords> mask{};
    bool ends_search = false;
  };
  // How large an automaton may grow while it is built (states, and node memory in 8-byte cells), how
  // much work its build may take (a state's rules times its ranges, summed), and how many automata a set
  // may be split into (1: never split). Split, each automaton holds at most `split_cells` (and
  // `max_cells`), and the split's builds together take at most `split_work`.
  struct Limits {
    size_t max_states = size_t{1} << 20;
    size_t max_cells = size_t{1} << 22;
    uint64_t max_work = uint64_t{1} << 28;
    size_t max_automata = kMaxSplit;
    size_t split_cells = size_t{1} << 18;
    uint64_t split_work = uint64_t{1} << 26;
  };
  // How Descend steps: a packet at a time, or eight packets in AVX-512 lanes (with its byte and
  // permute instructions). CpuHas says whether this CPU can take `descent`.
  enum class Descent : int { kScalar = 0, kAvx512 = 1 };
  static bool CpuHas(Descent descent);

  // The automata of `rules` (in rank order), or nullptr when even split (into at most
  // `limits.max_automata`) they would pass `limits`.
  static std::unique_ptr<AnswerAutomata> Build(absl::Span<const Rule> rules, const Limits& limits);

  // A packet's key: its four words as 16 bytes, each word's top byte first, under the automata's key mask.
  struct alignas(16) Key {
    std::array<uint8_t, kKeyBytes> bytes;
  };
  Key KeyOf(const uint32_t* words) const {
    std::array<uint32_t, kWords> big_endian;
    for (int w = 0; w < kWords; ++w) big_endian[w] = __builtin_bswap32(words[w]);
    std::array<uint64_t, 2> halves;
    std::memcpy(halves.data(), big_endian.data(), sizeof(halves));
    halves[0] &= key_mask_[0];
    halves[1] &= key_mask_[1];
    Key key;
    std::memcpy(key.bytes.data(), halves.data(), sizeof(halves));
    return key;
  }

  size_t automata() const { return roots_.size(); }
  // The least rule index of automaton `a` (its rules' first): a packet whose search ended before it has
  // nothing to find there.
  uint32_t least_rule(size_t a) const { return least_rule_[a]; }
  // The leaf of automaton `a` that each packet j with bit j of `going` set reaches (its key `keys[j]`,
  // j < kBurst), into leaf[j]; leaf[j] of a packet not going is left unspecified. `keys` and `leaf` hold
  // kBurst each: the vector descent reads and writes whole groups of eight.
  void Descend(size_t a, const Key* keys, uint32_t going, uint64_t* leaf, Descent descent) const;
  // How many rules a leaf lists, and its k-th (rank order).
  static uint32_t LeafSize(uint64_t leaf) { return static_cast<uint32_t>(leaf >> 32); }
  uint32_t LeafRule(uint64_t leaf, uint32_t k) const {
    const uint32_t at = static_cast<uint32_t>(leaf) >> 1;
    return LeafSize(leaf) == 1 ? at : leaf_rules_[at + k];
  }
  // Bytes held: nodes and leaves.
  size_t bytes() const { return cells_.size() * sizeof(uint64_t) + leaf_rules_.size() * sizeof(uint32_t); }
  size_t cells() const { return cells_.size(); }

 private:
  class Builder;
  // The first run a split tries to build: a run that fits is doubled, and the next automaton starts from
  // the length of the last.
  static constexpr size_t kFirstSplitRun = 1024;
  // Splits `rules` (under the key mask) into automata within `limits`: false when they need more.
  bool BuildSplit(absl::Span<const Rule> rules, const Limits& limits);
  // A transition. To a leaf: bit 0 set, its rule count in bits 32-63, and in bits 1-31 its one rule, or
  // where its rules start in leaf_rules_ (so that a leaf of one rule, the most common, takes no load). To a
  // node: the key byte it reads in bits 2-5, kFullNode, its first cell in bits 6-31; a node of bounds has
  // them in bits 32-63, a byte each in ascending order (each the last value of a range, xored with 0x80 for a
  // signed compare; unused ones 0x7f, above every byte).
  static constexpr uint64_t kLeaf = 1;
  static constexpr uint64_t kFullNode = 2;
  static constexpr int kCellShift = 6;
  static uint64_t Step(const uint64_t* cells, uint64_t transition, const Key& key);
  void DescendScalar(uint64_t root, const Key* keys, uint32_t going, uint64_t* leaf) const;
  void DescendAvx512(uint64_t root, const Key* keys, uint32_t going, uint64_t* leaf) const;

  std::vector<uint64_t, LookupAllocator<uint64_t>> cells_;
  std::vector<uint64_t> roots_;
  std::vector<uint32_t> least_rule_;
  std::vector<uint32_t, LookupAllocator<uint32_t>> leaf_rules_;
  std::array<uint64_t, 2> key_mask_{};  // (the key's bytes in memory order)
};

}  // namespace drsim::hw

#endif  // DRSIM_HW_ANSWER_AUTOMATA_H_
