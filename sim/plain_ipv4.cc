#include "sim/plain_ipv4.h"

namespace drsim::sim {

std::optional<PlainIpv4KeyReader> PlainIpv4KeyReader::For(const hw::Definer& definer) {
  if (definer.key_words() > kMaxWords || !definer.ReadsOnly(FilledByOuterParse)) return std::nullopt;
  PlainIpv4KeyReader reader;
  for (size_t i = 0; i < definer.key_words(); ++i) {
    const hw::Definer::Word w = definer.word(i);
    Word& r = reader.words_[i];
    r.word = PlainWordAt(w.offset);
    r.mask = w.mask;
    if (w.fold_from != w.offset) {
      r.fold_from = PlainWordAt(w.fold_from);
      r.folded = true;
      // TCP ports folded with UDP ports (either way round): a plain frame has one of them, at one place.
      const PlainSource a = r.word.source, b = r.fold_from.source;
      if ((a == PlainSource::kTcpPorts && b == PlainSource::kUdpPorts) ||
          (a == PlainSource::kUdpPorts && b == PlainSource::kTcpPorts)) {
        r.word = {PlainSource::kL4Ports};
        r.folded = false;
      }
    }
  }
  reader.count_ = definer.key_words();
  return reader;
}

}  // namespace drsim::sim
