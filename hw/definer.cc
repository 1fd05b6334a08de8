#include "hw/definer.h"

#include <algorithm>
#include <array>

#include "hw/match_layout.h"

namespace drsim::hw {

Definer Definer::FromMask(const uint8_t* mask, absl::Span<const Fold> folds) {
  constexpr size_t kWords = kMatchParamBytes / 4;
  std::array<uint32_t, kWords> masks;
  std::array<uint32_t, kWords> fold_from;
  for (uint32_t w = 0; w < kWords; ++w) {
    std::memcpy(&masks[w], mask + 4 * w, sizeof(uint32_t));
    fold_from[w] = 4 * w;
  }
  for (const Fold& f : folds) {
    masks[f.into / 4] |= masks[f.from / 4];
    masks[f.from / 4] = 0;
    fold_from[f.into / 4] = f.from;
  }
  std::array<Word, kWords> words;
  size_t count = 0;
  for (uint32_t w = 0; w < kWords; ++w) {
    if (masks[w] != 0) words[count++] = {4 * w, fold_from[w], masks[w]};
  }
  Definer d;
  d.Assign(words.data(), count);
  return d;
}

Definer& Definer::operator=(const Definer& other) {
  if (this != &other) Assign(other.begin_, other.key_words());
  return *this;
}

void Definer::Assign(const Word* words, size_t count) {
  if (count <= kInlineWords) {
    std::copy(words, words + count, inline_.begin());
    heap_.clear();
    begin_ = inline_.data();
  } else {
    heap_.assign(words, words + count);
    begin_ = heap_.data();
  }
  end_ = begin_ + count;
}

size_t Definer::widest_word() const {
  size_t widest = 0;
  for (size_t i = 1; i < key_words(); ++i) {
    if (__builtin_popcount(begin_[i].mask) > __builtin_popcount(begin_[widest].mask)) widest = i;
  }
  return widest;
}

std::vector<size_t> Definer::word_offsets() const {
  std::vector<size_t> offsets;
  for (const Word* w = begin_; w != end_; ++w) offsets.push_back(w->offset);
  return offsets;
}

}  // namespace drsim::hw
