#include "sim/conntrack_prm.h"

#include "absl/strings/str_format.h"
#include "hw/byte_order.h"

namespace drsim::sim {
namespace {

// Words of conn_track_aso.
constexpr size_t kReplyWindow = 0, kOriginalWindow = 4, kLastEnd = 8, kLastAck = 9, kLastSeq = 10,
                 kLastWin = 11, kDirectionBits = 14, kFlags = 15;

uint32_t Bits(uint32_t word, int low, int width) { return (word >> low) & ((1u << width) - 1); }

void StoreWindow(uint8_t* words, size_t first, const CtDirection& d) {
  hw::StoreBe32(words + 4 * first, d.max_ack);
  hw::StoreBe32(words + 4 * (first + 1), d.max_win);
  hw::StoreBe32(words + 4 * (first + 2), d.reply_end);
  hw::StoreBe32(words + 4 * (first + 3), d.sent_end);
}

void LoadWindow(const uint8_t* words, size_t first, CtDirection& d) {
  d.max_ack = hw::LoadBe32(words + 4 * first);
  d.max_win = hw::LoadBe32(words + 4 * (first + 1));
  d.reply_end = hw::LoadBe32(words + 4 * (first + 2));
  d.sent_end = hw::LoadBe32(words + 4 * (first + 3));
}

// One direction's byte of word 14: scale (7:4), close_initiated, liberal, data_unacked, max_ack.
uint32_t DirectionByte(const CtDirection& d) {
  return (d.scale & 0xfu) << 4 | d.close_initiated << 3 | d.liberal << 2 | d.data_unacked << 1 |
         static_cast<uint32_t>(d.last_ack_seen);
}

void LoadDirectionByte(uint32_t b, CtDirection& d) {
  d.scale = static_cast<uint8_t>(Bits(b, 4, 4));
  d.close_initiated = Bits(b, 3, 1);
  d.liberal = Bits(b, 2, 1);
  d.data_unacked = Bits(b, 1, 1);
  d.last_ack_seen = Bits(b, 0, 1);
}

}  // namespace

std::array<uint8_t, kCtPrmBytes> SerializeCtContext(const CtContext& c) {
  std::array<uint8_t, kCtPrmBytes> out{};
  uint8_t* w = out.data();
  StoreWindow(w, kReplyWindow, c.reply);
  StoreWindow(w, kOriginalWindow, c.original);
  hw::StoreBe32(w + 4 * kLastEnd, c.last_end);
  hw::StoreBe32(w + 4 * kLastAck, c.last_ack);
  hw::StoreBe32(w + 4 * kLastSeq, c.last_seq);
  hw::StoreBe32(w + 4 * kLastWin, static_cast<uint32_t>(c.last_window) << 16 |
                                      static_cast<uint32_t>(c.last_direction_original) << 5 |
                                      (c.last_index & 0x1fu));
  hw::StoreBe32(w + 4 * kDirectionBits, DirectionByte(c.reply) << 24 | DirectionByte(c.original) << 8);
  hw::StoreBe32(
      w + 4 * kFlags,
      static_cast<uint32_t>(c.valid) << 31 | (static_cast<uint32_t>(c.state) & 7u) << 28 |
          static_cast<uint32_t>(!c.enable) << 27 | static_cast<uint32_t>(c.live_connection) << 14 |
          static_cast<uint32_t>(c.selective_ack) << 13 | static_cast<uint32_t>(c.challenge_ack_passed) << 12 |
          static_cast<uint32_t>(c.heartbeat) << 11 | (c.max_ack_window & 7u) << 8 |
          (c.retransmission_counter & 7u) << 4 | static_cast<uint32_t>(c.retransmission_limit_exceeded) << 3 |
          (c.retransmission_limit & 7u));
  return out;
}

absl::StatusOr<CtContext> ParseCtContext(absl::Span<const uint8_t> prm) {
  if (prm.size() < kCtPrmBytes) {
    return absl::InvalidArgumentError(
        absl::StrFormat("conn_track_aso: %d bytes; the context is %d", prm.size(), kCtPrmBytes));
  }
  const uint8_t* w = prm.data();
  CtContext c;
  LoadWindow(w, kReplyWindow, c.reply);
  LoadWindow(w, kOriginalWindow, c.original);
  c.last_end = hw::LoadBe32(w + 4 * kLastEnd);
  c.last_ack = hw::LoadBe32(w + 4 * kLastAck);
  c.last_seq = hw::LoadBe32(w + 4 * kLastSeq);
  const uint32_t last = hw::LoadBe32(w + 4 * kLastWin);
  c.last_window = static_cast<uint16_t>(last >> 16);
  c.last_direction_original = Bits(last, 5, 1);
  c.last_index = static_cast<uint8_t>(Bits(last, 0, 5));
  const uint32_t directions = hw::LoadBe32(w + 4 * kDirectionBits);
  LoadDirectionByte(Bits(directions, 24, 8), c.reply);
  LoadDirectionByte(Bits(directions, 8, 8), c.original);
  const uint32_t flags = hw::LoadBe32(w + 4 * kFlags);
  const uint32_t state = Bits(flags, 28, 3);
  if (state >= kCtStateCount) {
    return absl::InvalidArgumentError(
        absl::StrFormat("conn_track_aso.state %d: one of SYN_RECV (0) ... TIME_WAIT (5)", state));
  }
  c.valid = Bits(flags, 31, 1);
  c.state = static_cast<CtState>(state);
  c.enable = !Bits(flags, 27, 1);
  c.live_connection = Bits(flags, 14, 1);
  c.selective_ack = Bits(flags, 13, 1);
  c.challenge_ack_passed = Bits(flags, 12, 1);
  c.heartbeat = Bits(flags, 11, 1);
  c.max_ack_window = static_cast<uint8_t>(Bits(flags, 8, 3));
  c.retransmission_counter = static_cast<uint8_t>(Bits(flags, 4, 3));
  c.retransmission_limit_exceeded = Bits(flags, 3, 1);
  c.retransmission_limit = static_cast<uint8_t>(Bits(flags, 0, 3));
  return c;
}

}  // namespace drsim::sim
