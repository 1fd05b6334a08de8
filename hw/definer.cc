#include "hw/definer.h"

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
  static_assert(kMatchParamBytes <= 0x10000, "Word's offsets are 16 bits");
  Definer d;
  for (uint32_t w = 0; w < kWords; ++w) {
    if (masks[w] == 0) continue;
    const Word word{static_cast<uint16_t>(4 * w), static_cast<uint16_t>(fold_from[w]), masks[w]};
    if (d.count_ < kInlineWords) {
      d.inline_[d.count_] = word;
    } else {
      if (d.heap_.empty()) d.heap_.assign(d.inline_.begin(), d.inline_.end());
      d.heap_.push_back(word);
    }
    ++d.count_;
  }
  return d;
}

size_t Definer::widest_word() const {
  const Word* w = data();
  size_t widest = 0;
  for (size_t i = 1; i < key_words(); ++i) {
    if (__builtin_popcount(w[i].mask) > __builtin_popcount(w[widest].mask)) widest = i;
  }
  return widest;
}

std::vector<size_t> Definer::word_offsets() const {
  std::vector<size_t> offsets;
  for (const Word& w : words()) offsets.push_back(w.offset);
  return offsets;
}

}  // namespace drsim::hw
