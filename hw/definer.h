// A definer turns a header vector (or a rule value) into a compact lookup key: the 32-bit words of the
// 448-byte match layout that the matcher's mask touches, each ANDed with its mask word, packed in layout
// order. It is compiled once per matcher from the effective mask, so rule insertion and packet lookup both
// run the same short loop of masked loads; two inputs match under the mask iff their keys are equal.
//
// Immutable after construction; thread-safe for concurrent Extract() calls.
#ifndef DRSIM_HW_DEFINER_H_
#define DRSIM_HW_DEFINER_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace drsim::hw {

class Definer {
 public:
  // A definer over the nonzero 32-bit words of `mask` (448 bytes, PRM layout). An all-zero mask gives a
  // zero-length key: every input matches.
  static Definer FromMask(const uint8_t* mask);

  size_t key_words() const { return words_.size(); }

  // Writes key_words() words to `key`. `input` is 448 bytes in PRM layout.
  void Extract(const uint8_t* input, uint32_t* key) const {
    for (const Word& w : words_) {
      uint32_t v;
      std::memcpy(&v, input + w.offset, sizeof v);
      *key++ = v & w.mask;
    }
  }

  // Byte offsets (into the 448-byte layout) of the words the key is made of, in key order.
  std::vector<size_t> word_offsets() const;

 private:
  struct Word {
    uint32_t offset;  // byte offset of the word in the layout
    uint32_t mask;    // in memory (network) byte order, like the loaded word
  };
  std::vector<Word> words_;
};

}  // namespace drsim::hw

#endif  // DRSIM_HW_DEFINER_H_
