#include "sim/conntrack.h"

#include <algorithm>

#include "absl/base/attributes.h"
#include "absl/strings/str_format.h"
#include "hw/byte_order.h"

namespace drsim::sim {
namespace {

constexpr uint8_t kFin = 0x01, kSyn = 0x02, kRst = 0x04, kPsh = 0x08, kAck = 0x10, kUrg = 0x20, kEce = 0x40,
                  kCwr = 0x80;
constexpr uint32_t kMinAckWindow = 66000;  // Linux's MAXACKWINCONST
constexpr uint8_t kMaxRetransmissionCounter = 7;

// Sequence-space order (RFC 1982 style, as Linux's before()/after()).
bool SeqBefore(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) < 0; }
bool SeqAfter(uint32_t a, uint32_t b) { return SeqBefore(b, a); }

// Linux tcp_valid_flags: the flag combinations a segment may carry, PSH, ECE and CWR aside.
bool ValidFlagCombination(uint8_t flags) {
  switch (flags & ~(kPsh | kEce | kCwr)) {
    case kSyn:
    case kSyn | kUrg:
    case kSyn | kAck:
    case kRst:
    case kRst | kAck:
    case kFin | kAck:
    case kFin | kAck | kUrg:
    case kAck:
    case kAck | kUrg:
      return true;
    default:
      return false;
  }
}

// Linux get_conntrack_index: RST before SYN before FIN before ACK.
uint8_t SegmentIndex(uint8_t flags) {
  if (flags & kRst) return kCtIndexRst;
  if (flags & kSyn) return (flags & kAck) ? kCtIndexSynAck : kCtIndexSyn;
  if (flags & kFin) return kCtIndexFin;
  if (flags & kAck) return kCtIndexAck;
  return kCtIndexNone;
}

// The state a segment of kind `index` moves the connection to before its window check, or nullopt when
// the segment is invalid in `state` (SYN, a SYN-ACK outside SYN_RECV, a segment without flags).
std::optional<CtState> StateBeforeWindow(CtState state, uint8_t index, const CtDirection& sender) {
  switch (index) {
    case kCtIndexRst:
      return CtState::kTimeWait;
    case kCtIndexSynAck:
      if (state == CtState::kSynRecv) return state;
      return std::nullopt;
    case kCtIndexFin:
      if (sender.close_initiated) return state;  // a retransmitted FIN
      if (state == CtState::kSynRecv || state == CtState::kEstablished) return CtState::kFinWait;
      if (state == CtState::kFinWait || state == CtState::kCloseWait) return CtState::kLastAck;
      return state;
    case kCtIndexAck:
      return state;  // its moves depend on what it acknowledges: AckMove
    default:
      return std::nullopt;
  }
}

// The move of an accepted ACK segment: SYN_RECV to ESTABLISHED on the initiator's ACK; FIN_WAIT to
// CLOSE_WAIT when the side that did not close acknowledges everything the closer sent (its FIN too);
// LAST_ACK to TIME_WAIT when an ACK acknowledges everything its receiver sent.
CtState AckMove(CtState state, bool original, uint32_t ack, const CtDirection& sender,
                const CtDirection& receiver) {
  const bool acks_all = ack == receiver.sent_end;
  switch (state) {
    case CtState::kSynRecv:
      return original ? CtState::kEstablished : state;
    case CtState::kFinWait:
      return !sender.close_initiated && receiver.close_initiated && acks_all ? CtState::kCloseWait : state;
    case CtState::kLastAck:
      return acks_all ? CtState::kTimeWait : state;
    default:
      return state;
  }
}

uint32_t ScaledWindow(uint16_t raw, const CtDirection& sender, bool syn) {
  if (syn || sender.scale >= 15) return raw;
  return static_cast<uint32_t>(raw) << sender.scale;
}

// How far below the receiver's sent_end an ack may lie: Linux's MAXACKWINDOW, shifted by max_ack_window,
// capped at half the sequence space.
uint32_t AckWindow(const CtDirection& sender, uint8_t max_ack_window) {
  const uint64_t w = static_cast<uint64_t>(std::max(sender.max_win, kMinAckWindow)) << max_ack_window;
  return static_cast<uint32_t>(std::min<uint64_t>(w, 0x7fffffff));
}

// Linux tcp_in_window on a programmed context: initialises a sender never seen, checks the segment
// against both windows, and on success updates both directions and the retransmission record. Returns
// whether the segment is in the window (or the sender is liberal).
ABSL_ATTRIBUTE_ALWAYS_INLINE inline bool InWindow(CtContext& c, bool original, const CtSegment& s,
                                                  uint8_t index) {
  CtDirection& sender = original ? c.original : c.reply;
  CtDirection& receiver = original ? c.reply : c.original;
  const bool syn = s.flags & kSyn, ack_flag = s.flags & kAck;
  const uint32_t seq = s.seq;
  const uint32_t end = seq + s.payload_len + (syn ? 1 : 0) + ((s.flags & kFin) ? 1 : 0);
  uint32_t ack = s.ack;
  uint32_t win = s.window;

  if (sender.max_win == 0) {
    sender.sent_end = end;
    if (syn) {
      sender.max_win = win == 0 ? 1 : win;
      sender.reply_end = end;
    } else {
      const uint32_t swin = ScaledWindow(s.window, sender, false);
      sender.max_win = swin == 0 ? 1 : swin;
      sender.reply_end = end + sender.max_win;
      if (receiver.max_win == 0) receiver.sent_end = receiver.reply_end = ack;
    }
  } else if (index == kCtIndexSynAck && !original && c.state == CtState::kSynRecv &&
             SeqAfter(end, sender.sent_end)) {
    // A SYN-ACK with a new initial sequence number: the responder restarted.
    sender.sent_end = sender.reply_end = end;
    sender.max_win = win == 0 ? 1 : win;
    sender.data_unacked = false;
    sender.last_ack_seen = false;
  }
  if (!ack_flag || ((s.flags & kRst) && ack == 0)) ack = receiver.sent_end;

  const bool in_receive_window =
      receiver.max_win == 0 || SeqAfter(end, sender.sent_end - receiver.max_win - 1);
  const bool ok = !SeqAfter(seq, sender.reply_end) && in_receive_window &&
                  !SeqAfter(ack, receiver.sent_end) &&
                  SeqAfter(ack, receiver.sent_end - AckWindow(sender, c.max_ack_window) - 1);
  if (!ok) return sender.liberal;

  win = ScaledWindow(s.window, sender, syn);
  sender.max_win = std::max(sender.max_win, win);
  if (SeqAfter(end, sender.sent_end)) {
    sender.sent_end = end;
    sender.data_unacked = true;
  }
  if (ack_flag) {
    if (!sender.last_ack_seen || SeqAfter(ack, sender.max_ack)) sender.max_ack = ack;
    sender.last_ack_seen = true;
  }
  if (receiver.max_win != 0 && SeqAfter(end, sender.reply_end)) receiver.max_win += end - sender.reply_end;
  if (SeqAfter(ack + win, receiver.reply_end - 1)) receiver.reply_end = ack + win + (win == 0 ? 1 : 0);
  if (ack == receiver.sent_end) receiver.data_unacked = false;

  if (index == kCtIndexAck) {
    const bool same = c.last_direction_original == original && c.last_seq == seq && c.last_ack == ack &&
                      c.last_end == end && c.last_window == s.window;
    if (same) {
      if (c.retransmission_counter < kMaxRetransmissionCounter) ++c.retransmission_counter;
      if (c.retransmission_counter > c.retransmission_limit) c.retransmission_limit_exceeded = true;
    } else {
      c.last_seq = seq;
      c.last_ack = ack;
      c.last_end = end;
      c.last_window = s.window;
      c.retransmission_counter = 0;
    }
  }
  return true;
}

}  // namespace

const char* CtStateName(CtState state) {
  static constexpr const char* kNames[] = {"SYN_RECV",   "ESTABLISHED", "FIN_WAIT",
                                           "CLOSE_WAIT", "LAST_ACK",    "TIME_WAIT"};
  const auto i = static_cast<uint8_t>(state);
  return i < kCtStateCount ? kNames[i] : "unknown";
}

bool operator==(const CtDirection& a, const CtDirection& b) {
  return a.scale == b.scale && a.close_initiated == b.close_initiated && a.last_ack_seen == b.last_ack_seen &&
         a.data_unacked == b.data_unacked && a.liberal == b.liberal && a.sent_end == b.sent_end &&
         a.reply_end == b.reply_end && a.max_win == b.max_win && a.max_ack == b.max_ack;
}

bool operator==(const CtContext& a, const CtContext& b) {
  return a.valid == b.valid && a.enable == b.enable && a.live_connection == b.live_connection &&
         a.selective_ack == b.selective_ack && a.challenge_ack_passed == b.challenge_ack_passed &&
         a.heartbeat == b.heartbeat && a.state == b.state && a.max_ack_window == b.max_ack_window &&
         a.retransmission_limit == b.retransmission_limit &&
         a.retransmission_counter == b.retransmission_counter &&
         a.retransmission_limit_exceeded == b.retransmission_limit_exceeded && a.original == b.original &&
         a.reply == b.reply && a.last_direction_original == b.last_direction_original &&
         a.last_index == b.last_index && a.last_window == b.last_window && a.last_seq == b.last_seq &&
         a.last_ack == b.last_ack && a.last_end == b.last_end;
}

namespace {
std::string DescribeDirection(const CtDirection& d) {
  return absl::StrFormat(
      "{scale %d close_initiated %d last_ack_seen %d data_unacked %d liberal %d sent_end 0x%x reply_end "
      "0x%x max_win 0x%x max_ack 0x%x}",
      d.scale, d.close_initiated, d.last_ack_seen, d.data_unacked, d.liberal, d.sent_end, d.reply_end,
      d.max_win, d.max_ack);
}
}  // namespace

std::string DescribeCtContext(const CtContext& c) {
  return absl::StrFormat(
      "state %s valid %d enable %d live %d sack %d challenge %d heartbeat %d max_ack_window %d "
      "retransmission limit %d counter %d exceeded %d original %s reply %s last_dir %s last_index 0x%x "
      "last_window %d last_seq 0x%x last_ack 0x%x last_end 0x%x",
      CtStateName(c.state), c.valid, c.enable, c.live_connection, c.selective_ack, c.challenge_ack_passed,
      c.heartbeat, c.max_ack_window, c.retransmission_limit, c.retransmission_counter,
      c.retransmission_limit_exceeded, DescribeDirection(c.original), DescribeDirection(c.reply),
      c.last_direction_original ? "original" : "reply", c.last_index, c.last_window, c.last_seq, c.last_ack,
      c.last_end);
}

absl::Status CheckCtContext(const CtContext& c) {
  auto too_big = [](const char* field, uint32_t value, uint32_t max) {
    return absl::InvalidArgumentError(absl::StrFormat("CT context %s %d: at most %d", field, value, max));
  };
  if (static_cast<uint8_t>(c.state) >= kCtStateCount) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "CT context state %d: one of SYN_RECV (0) ... TIME_WAIT (5)", static_cast<int>(c.state)));
  }
  if (c.original.scale > 15) return too_big("original_dir.scale", c.original.scale, 15);
  if (c.reply.scale > 15) return too_big("reply_dir.scale", c.reply.scale, 15);
  if (c.max_ack_window > 7) return too_big("max_ack_window", c.max_ack_window, 7);
  if (c.retransmission_limit > 7) return too_big("retransmission_limit", c.retransmission_limit, 7);
  if (c.retransmission_counter > 7) return too_big("retransmission_counter", c.retransmission_counter, 7);
  if (c.last_index > 31) return too_big("last_index", c.last_index, 31);
  return absl::OkStatus();
}

namespace {

// ReadCtSegment's body and TrackCtSegment's, inlined into both the public functions and TrackCtFrame.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline std::optional<CtSegment> ReadSegment(absl::Span<const uint8_t> frame,
                                                                         size_t l3, size_t l4,
                                                                         uint8_t ip_protocol) {
  if (ip_protocol != 6 || l3 == 0 || l4 <= l3 || l4 + 20 > frame.size()) return std::nullopt;
  const uint8_t* ip = frame.data() + l3;
  size_t ip_end = 0;
  if ((ip[0] >> 4) == 4) {
    ip_end = l3 + hw::LoadBe16(ip + 2);
  } else if ((ip[0] >> 4) == 6 && l3 + 40 <= frame.size()) {
    ip_end = l3 + 40 + hw::LoadBe16(ip + 4);
  } else {
    return std::nullopt;
  }
  const uint8_t* tcp = frame.data() + l4;
  const size_t header = static_cast<size_t>(tcp[12] >> 4) * 4;
  if (header < 20 || ip_end > frame.size() || l4 + header > ip_end) return std::nullopt;
  CtSegment s;
  s.seq = hw::LoadBe32(tcp + 4);
  s.ack = hw::LoadBe32(tcp + 8);
  s.flags = tcp[13];
  s.window = hw::LoadBe16(tcp + 14);
  s.payload_len = static_cast<uint32_t>(ip_end - l4 - header);
  return s;
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline uint32_t TrackSegment(CtContext& c, bool original,
                                                          const CtSegment* segment) {
  if (!c.valid || !c.enable) return kCtPktDisabled;
  if (segment == nullptr || !ValidFlagCombination(segment->flags)) return kCtPktInvalid | kCtPktBad;
  const uint8_t index = SegmentIndex(segment->flags);
  CtDirection& sender = original ? c.original : c.reply;
  std::optional<CtState> next = StateBeforeWindow(c.state, index, sender);
  if (!next.has_value()) return kCtPktInvalid;
  if (!InWindow(c, original, *segment, index)) return kCtPktInvalid;
  if (index == kCtIndexAck) {
    const CtDirection& receiver = original ? c.reply : c.original;
    const uint32_t ack = segment->ack;
    next = AckMove(c.state, original, ack, sender, receiver);
    if (*next == CtState::kEstablished) c.live_connection = true;
  }
  if (index == kCtIndexFin) sender.close_initiated = true;
  c.last_direction_original = original;
  c.last_index = index;
  const bool changed = *next != c.state;
  c.state = *next;
  return kCtPktValid | (changed ? kCtPktChanged : 0);
}

}  // namespace

std::optional<CtSegment> ReadCtSegment(absl::Span<const uint8_t> frame, size_t l3, size_t l4,
                                       uint8_t ip_protocol) {
  return ReadSegment(frame, l3, l4, ip_protocol);
}

uint32_t TrackCtSegment(CtContext& c, bool original, const CtSegment* segment) {
  return TrackSegment(c, original, segment);
}

uint32_t TrackCtFrame(CtContext& c, bool original, absl::Span<const uint8_t> frame, size_t l3, size_t l4,
                      uint8_t ip_protocol) {
  const std::optional<CtSegment> segment = ReadSegment(frame, l3, l4, ip_protocol);
  return TrackSegment(c, original, segment ? &*segment : nullptr);
}

absl::StatusOr<CtRegisterMatch> CtResultMatch(uint32_t spec_flags, uint32_t mask_flags) {
  if ((spec_flags | mask_flags) & ~kCtPktAll) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "conntrack flags 0x%x: only VALID 0x1, CHANGED 0x2, INVALID 0x4, DISABLED 0x8 and BAD 0x10 exist",
        (spec_flags | mask_flags) & ~kCtPktAll));
  }
  const uint32_t flags = spec_flags & mask_flags;
  if ((flags & kCtPktValid) && (flags & (kCtPktInvalid | kCtPktDisabled | kCtPktBad))) {
    return absl::InvalidArgumentError(
        absl::StrFormat("conntrack flags 0x%x: VALID conflicts with INVALID, DISABLED and BAD", flags));
  }
  CtRegisterMatch m;
  m.value = CtRegisterByte(flags & ~kCtPktBad) | ((flags & kCtPktBad) ? 1u : 0u);
  if (mask_flags & (kCtPktValid | kCtPktInvalid | kCtPktDisabled)) m.mask |= 0xc0;
  if (mask_flags & kCtPktChanged) m.mask |= 1u << 1;
  if (mask_flags & kCtPktBad) m.mask |= 1u << 0;
  return m;
}

}  // namespace drsim::sim
