#include "hw/definer.h"

#include "hw/match_layout.h"

namespace drsim::hw {

Definer Definer::FromMask(const uint8_t* mask) {
  Definer d;
  for (uint32_t offset = 0; offset < kMatchParamBytes; offset += 4) {
    uint32_t m;
    std::memcpy(&m, mask + offset, sizeof m);
    if (m != 0) d.words_.push_back({offset, m});
  }
  return d;
}

std::vector<size_t> Definer::word_offsets() const {
  std::vector<size_t> offsets;
  for (const Word& w : words_) offsets.push_back(w.offset);
  return offsets;
}

}  // namespace drsim::hw
