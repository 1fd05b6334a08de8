// Plain IPv4 frames — Ethernet II without VLAN tags, IPv4 without options and not a fragment, and inside the
// datagram a TCP or UDP header, or another protocol's (whose header no outer word holds): most traffic — have
// every outer header at a fixed place. This header says,
// once, where each word of the match layout that ParseOuterHeaders fills comes from in such a frame
// (PlainWordAt), and how, two ways: as a word (PlainWordValue), which ParseOuterHeaders runs on its fixed set
// of words, constant-folded; and byte by byte (PlainBytesOf), which PlainIpv4KeyReader compiles, for any
// matcher's key, into a reader that takes the key straight from the frame without a header vector: the first
// lookup of each frame of a burst (most frames need no other). The tests hold the two ways equal on every
// word.
//
// A reader runs on the CPU's byte shuffle where it has one (x86 SSSE3: a few instructions a 16-byte block of
// the key, whatever its words), else on a portable byte loop that reads the same keys.
//
// Pure functions, and readers that are immutable between Prepare calls; thread-safe.
#ifndef DRSIM_SIM_PLAIN_IPV4_H_
#define DRSIM_SIM_PLAIN_IPV4_H_

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "absl/base/attributes.h"
#include "absl/types/span.h"
#include "hw/byte_order.h"
#include "hw/definer.h"
#include "hw/match_layout.h"
#include "sim/packet_parser.h"

namespace drsim::sim {

inline constexpr size_t kPlainL3 = 14, kPlainL4 = kPlainL3 + 20;  // where IPv4 and TCP/UDP start
inline constexpr uint16_t kPlainEthertype = 0x0800;               // IPv4
inline constexpr uint8_t kPlainTcp = 6, kPlainUdp = 17;           // IP protocols

// Where the datagram of an IPv4 frame whose header starts at kPlainL3 ends (bounded as ParsePacket bounds
// it).
inline size_t PlainDatagramEnd(const uint8_t* frame, size_t len) {
  return std::min(len, kPlainL3 + std::max<size_t>(hw::LoadBe16(frame + kPlainL3 + 2), 20));
}

// Ethernet II without VLAN tags, then IPv4 without options and not a fragment, carrying a TCP or UDP header
// that lies inside the datagram, or another protocol. (At least kPlainL4 + 8 bytes, whatever the protocol.)
inline bool IsPlainIpv4Frame(const uint8_t* frame, size_t len) {
  if (frame == nullptr || len < kPlainL4 + 8 || hw::LoadBe16(frame + 12) != kPlainEthertype ||
      frame[kPlainL3] != 0x45 ||
      (hw::LoadBe16(frame + kPlainL3 + 6) & 0x3fff) != 0) {  // version 4 and IHL 5; neither MF nor an offset
    return false;
  }
  switch (frame[kPlainL3 + 9]) {
    case kPlainUdp:
      return PlainDatagramEnd(frame, len) >= kPlainL4 + 8;
    case kPlainTcp: {  // with a header length that fits
      const size_t end = PlainDatagramEnd(frame, len);
      if (end < kPlainL4 + 20) return false;
      const size_t header = (frame[kPlainL4 + 12] >> 4) * 4u;
      return header >= 20 && kPlainL4 + header <= end;
    }
    default:  // no outer word reads its header: the L4 words are 0
      return true;
  }
}

// Which of a reader's masks a plain frame's bytes go through: its protocol's (TCP 0, UDP 1, any other 2).
inline int PlainProtocolRow(const uint8_t* frame) {
  const uint8_t protocol = frame[kPlainL3 + 9];
  return protocol == kPlainTcp ? 0 : protocol == kPlainUdp ? 1 : 2;
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
    case PlainSource::kSourcePort:
      return stored(source_port);
  }
  return 0;
}

// The frame bytes a plain IPv4 frame's layout words come from: the headers up to the TCP flags.
inline constexpr size_t kPlainHeaderBytes = kPlainL4 + 14;
// Where a PlainByte's source lies: bytes [0, kPlainHeaderBytes) of the frame, then the source vport (high
// byte, low byte), then nothing (a byte that reads as 0).
inline constexpr uint8_t kPlainSourcePortHigh = kPlainHeaderBytes,
                         kPlainSourcePortLow = kPlainHeaderBytes + 1, kPlainNothing = 63;

// How one byte of a layout word comes from a plain IPv4 frame: its source byte under the mask of the frame's
// protocol, then `constant` ORed in. A frame of another protocol keeps what both masks keep of a byte before
// its L4 header (or of the source port), and nothing of the bytes after.
struct PlainByte {
  uint8_t from = kPlainNothing;
  uint8_t tcp_mask = 0;  // what the byte keeps of its source in a TCP frame
  uint8_t udp_mask = 0;  // and in a UDP frame
  uint8_t constant = 0;
};
// A layout word's four bytes, in memory (network) order.
using PlainWordBytes = std::array<PlainByte, 4>;

// The bytes of `w`: what PlainWordValue computes of the word, byte by byte.
PlainWordBytes PlainBytesOf(PlainWord w);

// A matcher's lookup key read straight from plain IPv4 frames: the key Definer::Extract makes from the
// header vector ParseOuterHeaders fills, without filling one.
class PlainIpv4KeyReader {
 public:
  // `byte_shuffle`: run on the CPU's byte shuffle when it has one (x86 SSSE3); false: the portable byte loop.
  // Both read the same keys.
  explicit PlainIpv4KeyReader(bool byte_shuffle = true);

  // Prepares to read `definer`'s key (the key Definer::Extract makes from the header vector ParseOuterHeaders
  // fills). False when the key reads a word ParseOuterHeaders does not fill (FilledByOuterParse), or folds
  // two words a plain frame fills from different bytes; then ReadBurst must not be called. Made per burst:
  // a definer equal to the one last prepared costs a comparison of their words.
  bool Prepare(const hw::Definer& definer) { return Prepare(definer.words()); }
  // The same for a key of `key_words`, read as a definer reads its words (a table index's, say).
  bool Prepare(absl::Span<const hw::Definer::Word> key_words);

  // For each plain IPv4 frame j among `frames[0, n)` (IsPlainIpv4Frame; n <= 64) from vport `source_port`,
  // writes its key (key_words() words) at keys + j * key_words() and sets bit j of the result; leaves the
  // others' keys as they were.
  uint64_t ReadBurst(const absl::Span<const uint8_t>* frames, size_t n, uint16_t source_port,
                     uint32_t* keys) const;
  // ReadBurst of one frame: true when it is plain and its key was written.
  bool Read(const uint8_t* frame, size_t len, uint16_t source_port, uint32_t* key) const {
    const absl::Span<const uint8_t> one(frame, frame == nullptr ? 0 : len);
    return ReadBurst(&one, 1, source_port, key) != 0;
  }
  size_t key_words() const { return words_; }
  // Whether this reader runs on the CPU's byte shuffle (asked for, and the CPU has one).
  bool byte_shuffle() const { return byte_shuffle_; }

 private:
  static constexpr size_t kMaxWords = hw::kSectionBytes / 4 + 1;  // the outer section and the source port
  static constexpr size_t kMaxBlocks = (kMaxWords + 3) / 4;       // of 16 bytes, a byte shuffle's width
  static constexpr size_t kMaxBytes = kMaxBlocks * 16;
  // The input a key byte's `from` indexes: the frame's header bytes, the source port, zeros; four blocks.
  static constexpr size_t kInputBlocks = 4;
  static_assert(kPlainSourcePortLow < kPlainNothing && kPlainNothing < kInputBlocks * 16);

  // Compiles the key made of `words` (at most kMaxWords).
  void Compile(absl::Span<const PlainWordBytes> words);
  uint64_t ReadBurstPortable(const absl::Span<const uint8_t>* frames, size_t n, uint16_t source_port,
                             uint32_t* keys) const;
  uint64_t ReadBurstShuffled(const absl::Span<const uint8_t>* frames, size_t n, uint16_t source_port,
                             uint32_t* keys) const;

  bool byte_shuffle_;
  // The definer last prepared (its words, up to kMaxWords) and what Prepare said of it; at first the empty
  // definer, whose key (no words) the constructor compiles.
  std::array<hw::Definer::Word, kMaxWords> prepared_{};
  size_t prepared_words_ = 0;
  bool prepared_ok_ = true;

  // The compiled key: byte i is (input[from_[i]] & mask_[row][i]) | constant_[i], where row is the frame's
  // PlainProtocolRow (a frame of another protocol than TCP or UDP keeps no byte of what follows its IP
  // header). shuffle_[b][k] picks block b's bytes from input block k (0x80: none), for the byte shuffle.
  size_t words_ = 0;
  alignas(16) uint8_t shuffle_[kMaxBlocks][kInputBlocks][16];
  alignas(16) uint8_t mask_[3][kMaxBytes];
  alignas(16) uint8_t constant_[kMaxBytes];
  uint8_t from_[kMaxBytes];
};

}  // namespace drsim::sim

#endif  // DRSIM_SIM_PLAIN_IPV4_H_
