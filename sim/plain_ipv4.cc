#include "sim/plain_ipv4.h"

namespace drsim::sim {

bool PlainIpv4KeyReader::Prepare(const hw::Definer& definer) {
  bytes_count_ = other_count_ = 0;
  if (definer.key_words() > kMaxWords || !definer.ReadsOnly(FilledByOuterParse)) return false;
  for (size_t i = 0; i < definer.key_words(); ++i) {
    const hw::Definer::Word w = definer.word(i);
    const bool folded = w.fold_from != w.offset;
    Add(static_cast<uint8_t>(i), PlainWordAt(w.offset), folded ? PlainWordAt(w.fold_from) : PlainWord{},
        folded, w.mask);
  }
  return true;
}

void PlainIpv4KeyReader::Add(uint8_t index, PlainWord word, PlainWord fold_from, bool folded, uint32_t mask) {
  // TCP ports folded with UDP ports (either way round): a plain frame has one of them, at one place.
  const PlainSource a = word.source, b = fold_from.source;
  if (folded && ((a == PlainSource::kTcpPorts && b == PlainSource::kUdpPorts) ||
                 (a == PlainSource::kUdpPorts && b == PlainSource::kTcpPorts))) {
    word = {PlainSource::kL4Ports};
    folded = false;
  }
  if (!folded) {
    switch (word.source) {
      case PlainSource::kBytes:
        bytes_[bytes_count_++] = {index, word.at, 0, mask};
        return;
      case PlainSource::kL4Ports:
        bytes_[bytes_count_++] = {index, static_cast<uint8_t>(kPlainL4), 0, mask};
        return;
      case PlainSource::kTcpPorts:
        bytes_[bytes_count_++] = {index, static_cast<uint8_t>(kPlainL4), 1, mask};
        return;
      case PlainSource::kUdpPorts:
        bytes_[bytes_count_++] = {index, static_cast<uint8_t>(kPlainL4), 2, mask};
        return;
      default:
        break;
    }
  }
  other_[other_count_++] = {index, word, fold_from, folded, mask};
}

}  // namespace drsim::sim
