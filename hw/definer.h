// A definer turns a header vector (or a rule value) into a compact lookup key: the 32-bit words of the
// 448-byte match layout that the matcher's mask touches, each ANDed with its mask word, packed in layout
// order. It is compiled once per matcher from the effective mask, so rule insertion and packet lookup both
// run the same short loop of masked loads; two inputs match under the mask iff their keys are equal.
//
// A fold ORs a second word into a first one before masking. The compiler uses it where the hardware
// compares two layout fields in one steering field: TCP and UDP ports share the L4 port field of the
// 5-tuple lookups, so the word holding udp_sport/udp_dport folds into the word holding tcp_sport/tcp_dport
// (a packet carries at most one of them).
//
// Immutable after construction; thread-safe for concurrent Extract() calls.
#ifndef DRSIM_HW_DEFINER_H_
#define DRSIM_HW_DEFINER_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/types/span.h"

namespace drsim::hw {

class Definer {
 public:
  struct Fold {
    uint32_t into;  // byte offset of the word that receives
    uint32_t from;  // byte offset of the word ORed into it
  };

  // A definer over the nonzero 32-bit words of `mask` (448 bytes, PRM layout), with `folds` applied: the
  // mask of each `from` word joins its `into` word. An all-zero mask gives a zero-length key.
  static Definer FromMask(const uint8_t* mask, absl::Span<const Fold> folds = {});

  size_t key_words() const { return count_; }

  // One key word: where Extract reads it and what it keeps of it.
  struct Word {
    uint16_t offset;     // byte offset of the word in the layout
    uint16_t fold_from;  // word ORed in first (== offset when nothing folds into this word)
    uint32_t mask;       // in memory (network) byte order, like the loaded word

    // This word of the key Extract makes from `input`.
    uint32_t Read(const uint8_t* input) const {
      uint32_t v, f;
      std::memcpy(&v, input + offset, sizeof v);
      std::memcpy(&f, input + fold_from, sizeof f);
      return (v | f) & mask;
    }
    // Whether `reads(offset)` holds for both layout words Read loads.
    template <typename Pred>
    bool ReadsOnly(Pred reads) const {
      return reads(size_t{offset}) && reads(size_t{fold_from});
    }
  };

  // Writes key_words() words to `key`. `input` is 448 bytes in PRM layout.
  void Extract(const uint8_t* input, uint32_t* key) const {
    const Word* w = data();
    for (uint32_t i = 0; i < count_; ++i) key[i] = w[i].Read(input);
  }

  // The key words, in key order.
  absl::Span<const Word> words() const { return {data(), key_words()}; }
  // Key word `i` (i < key_words()); past the key, a word that reads as 0 from any input.
  Word word(size_t i) const { return i < key_words() ? data()[i] : Word{0, 0, 0}; }
  // The index of the key word with the most mask bits (the first of equals; 0 for an empty key): the word
  // that tells keys apart best when only one is looked at (a matcher's summary, hw/flow_table.h).
  size_t widest_word() const;

  // Byte offsets (into the 448-byte layout) of the words the key is made of, in key order.
  std::vector<size_t> word_offsets() const;

  // Whether `reads(offset)` holds for the byte offset of every word Extract reads, folded words included.
  template <typename Pred>
  bool ReadsOnly(Pred reads) const {
    for (const Word& w : words()) {
      if (!w.ReadsOnly(reads)) return false;
    }
    return true;
  }

 private:
  static constexpr size_t kInlineWords = 6;
  const Word* data() const { return count_ <= kInlineWords ? inline_.data() : heap_.data(); }

  // The words in key order, in inline_ when they fit, else in heap_. A 5-tuple's fit: a cold matcher's key
  // extraction (every rule insert, every matcher an ACL packet tries) then reads the count and the words,
  // 52 bytes, and nothing else.
  uint32_t count_ = 0;
  std::array<Word, kInlineWords> inline_{};
  std::vector<Word> heap_;
};
static_assert(sizeof(Definer::Word) == 8);

}  // namespace drsim::hw

#endif  // DRSIM_HW_DEFINER_H_
