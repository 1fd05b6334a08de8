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
  Definer d;
  for (uint32_t w = 0; w < kWords; ++w) {
    if (masks[w] != 0) d.words_.push_back({4 * w, fold_from[w], masks[w]});
  }
  return d;
}

std::vector<size_t> Definer::word_offsets() const {
  std::vector<size_t> offsets;
  for (const Word& w : words_) offsets.push_back(w.offset);
  return offsets;
}

}  // namespace drsim::hw
