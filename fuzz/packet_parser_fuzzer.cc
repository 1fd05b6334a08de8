// libFuzzer target: the packet parser on arbitrary bytes. It must never read outside the frame (ASan
// checks, the input is an exact-size heap buffer), and whatever it reports must lie inside the frame. The
// outer-headers parse must fill its words as the full parse does, and the plain IPv4 key reader, on the byte
// shuffle and on the portable loop, must read from a plain frame the keys Definer::Extract takes from that
// parse (every outer word; the five-tuple with TCP and UDP ports folded) and refuse every other frame.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "hw/definer.h"
#include "hw/match_layout.h"
#include "sim/packet_parser.h"
#include "sim/plain_ipv4.h"

namespace {

// The definers the reader is checked with: one over every word the outer parse fills (17), the five-tuple
// with the UDP ports folded into the TCP ports as the matcher compiler folds them (4), and keys of 3 and 6
// words (a 16-byte block's last part of each length).
const std::vector<drsim::hw::Definer>& Definers() {
  using drsim::hw::Field;
  static const auto* definers = [] {
    auto* d = new std::vector<drsim::hw::Definer>();
    uint8_t all[drsim::hw::kMatchParamBytes] = {};
    for (size_t w = 0; w < drsim::hw::kMatchParamBytes; w += 4) {
      if (drsim::sim::FilledByOuterParse(w)) std::memset(all + w, 0xff, 4);
    }
    d->push_back(drsim::hw::Definer::FromMask(all));
    uint8_t five[drsim::hw::kMatchParamBytes] = {};
    for (Field f : {Field::kOuterIpVersion, Field::kOuterIpProtocol, Field::kOuterSrcIp31_0,
                    Field::kOuterDstIp31_0, Field::kOuterTcpSport, Field::kOuterTcpDport}) {
      drsim::hw::SetFieldAllOnes(five, f);
    }
    const drsim::hw::Definer::Fold fold{
        static_cast<uint32_t>(drsim::hw::Info(Field::kOuterTcpSport).word_offset()),
        static_cast<uint32_t>(drsim::hw::Info(Field::kOuterUdpSport).word_offset())};
    d->push_back(drsim::hw::Definer::FromMask(five, {&fold, 1}));
    // Keys that end three quarters and half into a 16-byte block: 3 words, and 6 with the source vport.
    uint8_t three[drsim::hw::kMatchParamBytes] = {};
    for (Field f : {Field::kOuterIpProtocol, Field::kOuterSrcIp31_0, Field::kOuterTcpSport}) {
      drsim::hw::SetFieldAllOnes(three, f);
    }
    d->push_back(drsim::hw::Definer::FromMask(three, {&fold, 1}));
    drsim::hw::SetFieldAllOnes(five, Field::kOuterIpTtlHoplimit);
    drsim::hw::SetFieldAllOnes(five, Field::kSourcePort);
    d->push_back(drsim::hw::Definer::FromMask(five, {&fold, 1}));
    return d;
  }();
  return *definers;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> frame(data, data + size);  // exactly `size` bytes on the heap
  drsim::hw::HeaderVector hv;
  // A source vport whose two bytes differ, so that a key read with them swapped shows.
  constexpr uint16_t kSource = 0x01fe;
  // The GENEVE option scan runs too, for OVN's tunnel key (the corpus's geneve_options frames carry it).
  drsim::sim::PacketLayers layers = drsim::sim::ParsePacket(frame.data(), frame.size(), kSource, &hv,
                                                            drsim::sim::GeneveOptionSelector::For(0x0102, 0x80));
  const bool ordered = (layers.l4 == 0 || layers.l3 < layers.l4) &&
                       (layers.payload == 0 || layers.l4 < layers.payload) && layers.payload <= size;
  const uint32_t ip_version = drsim::hw::GetField(hv.bytes, drsim::hw::Field::kOuterIpVersion);
  if (!ordered || (ip_version != 0 && ip_version != 4 && ip_version != 6) ||
      (ip_version != 0) != (layers.l3 != 0)) {
    std::abort();
  }
  drsim::hw::HeaderVector outer;
  std::memset(outer.bytes, 0xa5, sizeof outer.bytes);
  drsim::sim::ParseOuterHeaders(frame.data(), frame.size(), kSource, &outer);
  for (size_t w = 0; w < drsim::hw::kMatchParamBytes; w += 4) {
    if (drsim::sim::FilledByOuterParse(w) && std::memcmp(hv.bytes + w, outer.bytes + w, 4) != 0) std::abort();
  }
  const bool plain = drsim::sim::IsPlainIpv4Frame(frame.data(), frame.size());
  for (const bool byte_shuffle : {true, false}) {
    drsim::sim::PlainIpv4KeyReader reader(byte_shuffle);
    for (const drsim::hw::Definer& d : Definers()) {
      if (!reader.Prepare(d)) std::abort();
      uint32_t read[drsim::hw::kMatchParamBytes / 4], want[drsim::hw::kMatchParamBytes / 4];
      if (reader.Read(frame.data(), frame.size(), kSource, read) != plain) std::abort();
      if (!plain) continue;
      d.Extract(outer.bytes, want);
      if (std::memcmp(read, want, d.key_words() * sizeof(uint32_t)) != 0) std::abort();
    }
  }
  return 0;
}
