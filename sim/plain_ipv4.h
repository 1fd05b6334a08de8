// Plain IPv4 frames — Ethernet II without VLAN tags, IPv4 without options and not a fragment, a TCP or UDP
// header inside the datagram: most traffic — have every outer header at a fixed place. This header says,
// once, how each word of the match layout that ParseOuterHeaders fills comes from such a frame.
// ParseOuterHeaders fills a header vector from it; PlainIpv4KeyReader reads a matcher's lookup key straight
// from the frame with it, without a header vector, for the first lookup of each frame of a burst (most frames
// need no other).
//
// Pure functions and immutable objects; thread-safe.
#ifndef DRSIM_SIM_PLAIN_IPV4_H_
#define DRSIM_SIM_PLAIN_IPV4_H_

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "absl/base/attributes.h"
#include "hw/byte_order.h"
#include "hw/definer.h"
#include "hw/match_layout.h"
#include "sim/packet_parser.h"

namespace drsim::sim {

inline constexpr size_t kPlainL3 = 14, kPlainL4 = kPlainL3 + 20;  // where IPv4 and TCP/UDP start
inline constexpr uint16_t kPlainEthertype = 0x0800;               // IPv4
inline constexpr uint8_t kPlainTcp = 6, kPlainUdp = 17;           // IP protocols

// Ethernet II without VLAN tags, then IPv4 without options and not a fragment, carrying a TCP or UDP header
// that lies inside the datagram (bounded as ParsePacket bounds it).
inline bool IsPlainIpv4Frame(const uint8_t* frame, size_t len) {
  if (frame == nullptr || len < kPlainL4 + 8 || hw::LoadBe16(frame + 12) != kPlainEthertype ||
      frame[kPlainL3] != 0x45 ||
      (hw::LoadBe16(frame + kPlainL3 + 6) & 0x3fff) != 0) {  // version 4 and IHL 5; neither MF nor an offset
    return false;
  }
  const size_t end = std::min(len, kPlainL3 + std::max<size_t>(hw::LoadBe16(frame + kPlainL3 + 2), 20));
  switch (frame[kPlainL3 + 9]) {
    case kPlainUdp:
      return end >= kPlainL4 + 8;
    case kPlainTcp: {  // with a header length that fits
      if (end < kPlainL4 + 20) return false;
      const size_t header = (frame[kPlainL4 + 12] >> 4) * 4u;
      return header >= 20 && kPlainL4 + header <= end;
    }
    default:
      return false;
  }
}

// How one layout word comes from a plain IPv4 frame.
enum class PlainSource : uint8_t {
  kZero,        // nothing of the frame (cleared)
  kBytes,       // the frame's four bytes at `at`, as they are
  kDmacLow,     // outer.dmac_15_0 (no VLAN fields: no tag)
  kIpWord,      // outer.ip_protocol, ip_dscp, ip_ecn, ip_version, tcp_flags
  kTtlWord,     // outer.ipv4_ihl, ttl_hoplimit
  kTcpPorts,    // outer.tcp_sport, tcp_dport: the L4 ports of a TCP frame, else 0
  kUdpPorts,    // outer.udp_sport, udp_dport: the same for UDP
  kL4Ports,     // the two above ORed (a definer folding one into the other): the L4 ports either way
  kSourcePort,  // misc.source_port (the rest of its word is 0)
};
struct PlainWord {
  PlainSource source = PlainSource::kZero;
  uint8_t at = 0;  // kBytes: the frame offset
};

// How the layout word at byte `word_offset` comes from a plain IPv4 frame, for a word FilledByOuterParse
// accepts (kZero for those of the outer section no plain frame sets).
constexpr PlainWord PlainWordAt(size_t word_offset) {
  using hw::Field;
  using hw::Info;
  switch (word_offset) {
    case Info(Field::kOuterDmac47_16).word_offset():
      return {PlainSource::kBytes, 0};
    case Info(Field::kOuterDmac15_0).word_offset():
      return {PlainSource::kDmacLow};
    case Info(Field::kOuterSmac47_16).word_offset():
      return {PlainSource::kBytes, 6};
    case Info(Field::kOuterEthertype).word_offset():  // smac_15_0, then the ethertype
      return {PlainSource::kBytes, 10};
    case Info(Field::kOuterIpProtocol).word_offset():
      return {PlainSource::kIpWord};
    case Info(Field::kOuterIpTtlHoplimit).word_offset():
      return {PlainSource::kTtlWord};
    case Info(Field::kOuterTcpSport).word_offset():
      return {PlainSource::kTcpPorts};
    case Info(Field::kOuterUdpSport).word_offset():
      return {PlainSource::kUdpPorts};
    case Info(Field::kOuterSrcIp31_0).word_offset():
      return {PlainSource::kBytes, kPlainL3 + 12};
    case Info(Field::kOuterDstIp31_0).word_offset():
      return {PlainSource::kBytes, kPlainL3 + 16};
    case kSourcePortWord:
      return {PlainSource::kSourcePort};
    default:
      return {};
  }
}

// The words of the outer headers section that a plain IPv4 frame sets (the others are cleared).
inline constexpr size_t kPlainOuterWords[] = {
    hw::Info(hw::Field::kOuterDmac47_16).word_offset(),
    hw::Info(hw::Field::kOuterDmac15_0).word_offset(),
    hw::Info(hw::Field::kOuterSmac47_16).word_offset(),
    hw::Info(hw::Field::kOuterEthertype).word_offset(),
    hw::Info(hw::Field::kOuterIpProtocol).word_offset(),
    hw::Info(hw::Field::kOuterIpTtlHoplimit).word_offset(),
    hw::Info(hw::Field::kOuterTcpSport).word_offset(),
    hw::Info(hw::Field::kOuterUdpSport).word_offset(),
    hw::Info(hw::Field::kOuterSrcIp31_0).word_offset(),
    hw::Info(hw::Field::kOuterDstIp31_0).word_offset(),
};

// The word `w` of the plain IPv4 `frame` (IsPlainIpv4Frame) from vport `source_port`, as it lies in a header
// vector: network order, loaded as a native word (as Definer::Word::Read loads it).
ABSL_ATTRIBUTE_ALWAYS_INLINE inline uint32_t PlainWordValue(PlainWord w, const uint8_t* frame,
                                                            uint16_t source_port) {
  using hw::Field;
  auto stored = [](uint32_t host) {  // `host` as a header vector holds it
    uint8_t bytes[4];
    hw::StoreBe32(bytes, host);
    uint32_t v;
    std::memcpy(&v, bytes, sizeof v);
    return v;
  };
  auto place = [](Field f, uint32_t v) { return v << hw::Info(f).shift(); };
  auto bytes_at = [frame](size_t at) {
    uint32_t v;
    std::memcpy(&v, frame + at, sizeof v);
    return v;
  };
  const uint8_t* ip = frame + kPlainL3;
  const uint8_t* l4 = frame + kPlainL4;
  switch (w.source) {
    case PlainSource::kZero:
      return 0;
    case PlainSource::kBytes:
      return bytes_at(w.at);
    case PlainSource::kDmacLow:
      return stored(place(Field::kOuterDmac15_0, hw::LoadBe16(frame + 4)));
    case PlainSource::kIpWord: {
      const bool tcp = ip[9] == kPlainTcp;
      return stored(place(Field::kOuterIpProtocol, ip[9]) | place(Field::kOuterIpDscp, ip[1] >> 2) |
                    place(Field::kOuterIpEcn, ip[1] & 3) | place(Field::kOuterIpVersion, 4) |
                    (tcp ? place(Field::kOuterTcpFlags, ((l4[12] & 1u) << 8) | l4[13]) : 0));
    }
    case PlainSource::kTtlWord:
      return stored(place(Field::kOuterIpv4Ihl, 5) | place(Field::kOuterIpTtlHoplimit, ip[8]));
    case PlainSource::kTcpPorts:
      return ip[9] == kPlainTcp ? bytes_at(kPlainL4) : 0;
    case PlainSource::kUdpPorts:
      return ip[9] == kPlainUdp ? bytes_at(kPlainL4) : 0;
    case PlainSource::kL4Ports:
      return bytes_at(kPlainL4);
    case PlainSource::kSourcePort:
      return stored(source_port);
  }
  return 0;
}

// A matcher's lookup key read straight from plain IPv4 frames: the key Definer::Extract makes from the
// header vector ParseOuterHeaders fills, without filling one.
class PlainIpv4KeyReader {
 public:
  // Prepares to read `definer`'s key. False when the key reads a word ParseOuterHeaders does not fill
  // (FilledByOuterParse) or is longer than the outer words; then Read must not be called. Costs a few
  // instructions a key word: made per burst.
  bool Prepare(const hw::Definer& definer);

  // When `frame` (len bytes, from vport `source_port`) is a plain IPv4 frame, writes its key (the definer's
  // key_words() words) to `key` and returns true; otherwise returns false and writes nothing.
  bool Read(const uint8_t* frame, size_t len, uint16_t source_port, uint32_t* key) const {
    if (!IsPlainIpv4Frame(frame, len)) return false;
    // Words of frame bytes as they are, kept where the protocol says (TCP or UDP ports): no branch.
    const uint8_t protocol = frame[kPlainL3 + 9];
    const uint32_t keep[3] = {~0u, protocol == kPlainTcp ? ~0u : 0u, protocol == kPlainUdp ? ~0u : 0u};
    for (size_t i = 0; i < bytes_count_; ++i) {
      const BytesWord& w = bytes_[i];
      uint32_t v;
      std::memcpy(&v, frame + w.at, sizeof v);
      key[w.index] = v & w.mask & keep[w.keep];
    }
    for (size_t i = 0; i < other_count_; ++i) {
      const OtherWord& w = other_[i];
      uint32_t v = PlainWordValue(w.word, frame, source_port);
      if (w.folded) v |= PlainWordValue(w.fold_from, frame, source_port);
      key[w.index] = v & w.mask;
    }
    return true;
  }

 private:
  static constexpr size_t kMaxWords = hw::kSectionBytes / 4 + 1;  // the outer section and the source port
  // A key word that is four bytes of the frame under its mask, for every frame or for TCP or UDP only.
  struct BytesWord {
    uint8_t index;  // in the key
    uint8_t at;     // frame offset
    uint8_t keep;   // 0: always; 1: TCP frames (else 0); 2: UDP frames
    uint32_t mask;  // as Definer::Word::mask
  };
  // Any other key word: computed from header fields, or two words folded.
  struct OtherWord {
    uint8_t index;
    PlainWord word;
    PlainWord fold_from;  // ORed in first when `folded`
    bool folded = false;
    uint32_t mask = 0;
  };
  // Adds key word `index`, made from `word` (and `fold_from` when `folded`) under `mask`.
  void Add(uint8_t index, PlainWord word, PlainWord fold_from, bool folded, uint32_t mask);

  std::array<BytesWord, kMaxWords> bytes_;
  std::array<OtherWord, kMaxWords> other_;
  size_t bytes_count_ = 0;
  size_t other_count_ = 0;
};

}  // namespace drsim::sim

#endif  // DRSIM_SIM_PLAIN_IPV4_H_
