// Plain IPv4 frames — Ethernet II without VLAN tags, IPv4 without options and not a fragment, a TCP or UDP
// header inside the datagram: most traffic — have every outer header at a fixed place. This header says,
// once, byte by byte, how each word of the match layout that ParseOuterHeaders fills comes from such a frame
// (PlainBytesAt), and compiles runs of those words into a reader (PlainIpv4KeyReader) that takes them
// straight from the frame: a matcher's lookup key, for the first lookup of each frame of a burst (most frames
// need no other), and the whole outer section for ParseOuterHeaders.
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

#include "absl/types/span.h"
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

// The frame bytes a plain IPv4 frame's layout words come from: the headers up to the TCP flags.
inline constexpr size_t kPlainHeaderBytes = kPlainL4 + 14;
// Where a PlainByte's source lies: bytes [0, kPlainHeaderBytes) of the frame, then the source vport (high
// byte, low byte), then nothing (a byte that reads as 0).
inline constexpr uint8_t kPlainSourcePortHigh = kPlainHeaderBytes,
                         kPlainSourcePortLow = kPlainHeaderBytes + 1, kPlainNothing = 63;

// How one byte of a layout word comes from a plain IPv4 frame: its source byte under the mask of the frame's
// protocol, then `constant` ORed in.
struct PlainByte {
  uint8_t from = kPlainNothing;
  uint8_t tcp_mask = 0;  // what the byte keeps of its source in a TCP frame
  uint8_t udp_mask = 0;  // and in a UDP frame
  uint8_t constant = 0;
};
// A layout word's four bytes, in memory (network) order.
using PlainWordBytes = std::array<PlainByte, 4>;

// The layout word at byte `word_offset` as a plain IPv4 frame gives it, for a word FilledByOuterParse accepts
// (all bytes from nothing for those of the outer section that no plain frame sets).
PlainWordBytes PlainBytesAt(size_t word_offset);

// A run of layout words read straight from plain IPv4 frames: a matcher's lookup key (Prepare), or the outer
// headers section as ParseOuterHeaders fills it (OuterSection).
class PlainIpv4KeyReader {
 public:
  // `byte_shuffle`: run on the CPU's byte shuffle when it has one (x86 SSSE3); false: the portable byte loop.
  // Both read the same keys.
  explicit PlainIpv4KeyReader(bool byte_shuffle = true);

  // Prepares to read `definer`'s key (the key Definer::Extract makes from the header vector ParseOuterHeaders
  // fills). False when the key reads a word ParseOuterHeaders does not fill (FilledByOuterParse), or folds
  // two words a plain frame fills from different bytes; then ReadBurst must not be called. Made per burst:
  // a definer equal to the one last prepared costs a comparison of their words.
  bool Prepare(const hw::Definer& definer);

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

  // Reads the outer headers section (hw::kSectionBytes, at the start of a header vector) as ParseOuterHeaders
  // fills it, every word of it.
  static const PlainIpv4KeyReader& OuterSection();

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
  // The definer last prepared (its words, up to kMaxWords) and what Prepare said of it.
  std::array<hw::Definer::Word, kMaxWords> prepared_{};
  size_t prepared_words_ = 0;
  bool prepared_ok_ = false;
  bool prepared_valid_ = false;

  // The compiled key: byte i is (input[from_[i]] & mask_[udp][i]) | constant_[i], where udp is 0 for a TCP
  // frame and 1 for a UDP one. shuffle_[b][k] picks block b's bytes from input block k (0x80: none), for the
  // byte shuffle.
  size_t words_ = 0;
  alignas(16) uint8_t shuffle_[kMaxBlocks][kInputBlocks][16];
  alignas(16) uint8_t mask_[2][kMaxBytes];
  alignas(16) uint8_t constant_[kMaxBytes];
  uint8_t from_[kMaxBytes];
};

}  // namespace drsim::sim

#endif  // DRSIM_SIM_PLAIN_IPV4_H_
