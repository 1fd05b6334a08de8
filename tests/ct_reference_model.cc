#include "tests/ct_reference_model.h"

namespace drsim::testing {
namespace {

enum Index { kSyn, kSynAck, kFin, kAck, kRst, kNone, kIndexCount };
constexpr int kIndexBits[kIndexCount] = {1, 2, 4, 8, 16, 0};  // rte_flow_conntrack_tcp_last_index

// sIV: invalid; sKP: keep (decided later, for ACK and FIN).
constexpr int sIV = -1, sKP = -2;
constexpr int SR = kRefSynRecv, ES = kRefEstablished, FW = kRefFinWait, CW = kRefCloseWait, LA = kRefLastAck,
              TW = kRefTimeWait;

// [index][state]: the state before the window check.
constexpr int kTable[kIndexCount][6] = {
    /* syn    */ {sIV, sIV, sIV, sIV, sIV, sIV},
    /* synack */ {SR, sIV, sIV, sIV, sIV, sIV},
    /* fin    */ {FW, FW, LA, LA, LA, TW},
    /* ack    */ {sKP, sKP, sKP, sKP, sKP, sKP},
    /* rst    */ {TW, TW, TW, TW, TW, TW},
    /* none   */ {sIV, sIV, sIV, sIV, sIV, sIV},
};

bool before(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) < 0; }
bool after(uint32_t a, uint32_t b) { return static_cast<int32_t>(b - a) < 0; }

bool ValidFlags(uint8_t f) {
  const uint8_t core = f & 0x37;  // FIN SYN RST ACK URG; PSH, ECE, CWR do not matter
  static constexpr uint8_t kValid[] = {0x02, 0x22, 0x12, 0x04, 0x14, 0x11, 0x31, 0x10, 0x30};
  for (uint8_t v : kValid) {
    if (core == v) return true;
  }
  return false;
}

Index IndexOf(uint8_t f) {
  if (f & 0x04) return kRst;
  if (f & 0x02) return (f & 0x10) ? kSynAck : kSyn;
  if (f & 0x01) return kFin;
  if (f & 0x10) return kAck;
  return kNone;
}

uint32_t Scaled(uint32_t w, int scale) { return scale == 15 ? w : w << scale; }

}  // namespace

uint32_t RefConnection::Segment(int dir, const RefSegment& s) {
  if (!programmed || !tracking) return kRefDisabled;
  if (!s.tcp || !ValidFlags(s.flags)) return kRefInvalid | kRefBad;
  const Index index = IndexOf(s.flags);
  RefSide& snd = side[dir];
  RefSide& rcv = side[1 - dir];

  int new_state = kTable[index][state];
  if (new_state == sIV) return kRefInvalid;
  if (index == kFin && snd.fin_sent) new_state = state;  // a FIN again from the same side

  // tcp_in_window.
  const bool syn = s.flags & 0x02;
  const bool has_ack = s.flags & 0x10;
  const uint32_t seq = s.seq;
  const uint32_t end = s.seq + s.len + (syn ? 1 : 0) + (s.flags & 0x01 ? 1 : 0);
  uint32_t ack = s.ack;
  uint32_t win = s.win;
  if (snd.td_maxwin == 0) {
    snd.td_end = end;
    if (syn) {
      snd.td_maxwin = win ? win : 1;
      snd.td_maxend = end;
    } else {
      const uint32_t w = Scaled(win, snd.td_scale);
      snd.td_maxwin = w ? w : 1;
      snd.td_maxend = end + snd.td_maxwin;
      if (rcv.td_maxwin == 0) {
        rcv.td_end = ack;
        rcv.td_maxend = ack;
      }
    }
  } else if (index == kSynAck && dir == 1 && state == SR && after(end, snd.td_end)) {
    snd.td_end = end;
    snd.td_maxend = end;
    snd.td_maxwin = win ? win : 1;
    snd.unacked = false;
    snd.maxack_set = false;
  }
  if (!has_ack) {
    ack = rcv.td_end;
  } else if ((s.flags & 0x04) && ack == 0) {
    ack = rcv.td_end;
  }
  uint64_t ack_window = snd.td_maxwin > 66000 ? snd.td_maxwin : 66000;
  ack_window <<= ack_window_shift;
  if (ack_window > 0x7fffffffu) ack_window = 0x7fffffffu;

  const bool seq_ok = before(seq, snd.td_maxend + 1);
  const bool end_ok = rcv.td_maxwin == 0 || after(end, snd.td_end - rcv.td_maxwin - 1);
  const bool ack_upper_ok = before(ack, rcv.td_end + 1);
  const bool ack_lower_ok = after(ack, rcv.td_end - static_cast<uint32_t>(ack_window) - 1);
  if (!(seq_ok && end_ok && ack_upper_ok && ack_lower_ok)) {
    if (!snd.be_liberal) return kRefInvalid;
  } else {
    if (!syn) win = Scaled(win, snd.td_scale);
    if (snd.td_maxwin < win) snd.td_maxwin = win;
    if (after(end, snd.td_end)) {
      snd.td_end = end;
      snd.unacked = true;
    }
    if (has_ack) {
      if (!snd.maxack_set) {
        snd.td_maxack = ack;
        snd.maxack_set = true;
      } else if (after(ack, snd.td_maxack)) {
        snd.td_maxack = ack;
      }
    }
    if (rcv.td_maxwin != 0 && after(end, snd.td_maxend)) rcv.td_maxwin += end - snd.td_maxend;
    if (after(ack + win, rcv.td_maxend - 1)) {
      rcv.td_maxend = ack + win;
      if (win == 0) rcv.td_maxend++;
    }
    if (ack == rcv.td_end) rcv.unacked = false;
    if (index == kAck) {
      if (last_dir == dir && last_seq == seq && last_ack == ack && last_end == end && last_win == s.win) {
        if (retrans < 7) retrans++;
        if (retrans > retrans_limit) retrans_over = true;
      } else {
        last_seq = seq;
        last_ack = ack;
        last_end = end;
        last_win = s.win;
        retrans = 0;
      }
    }
  }

  if (index == kAck) {
    new_state = state;
    const bool everything_acked = s.ack == rcv.td_end;
    if (state == SR && dir == 0) new_state = ES;
    if (state == FW && rcv.fin_sent && !snd.fin_sent && everything_acked) new_state = CW;
    if (state == LA && everything_acked) new_state = TW;
    if (new_state == ES) assured = true;
  }
  if (index == kFin) snd.fin_sent = true;
  last_dir = dir;
  last_index = kIndexBits[index];
  const bool moved = new_state != state;
  state = new_state;
  return moved ? (kRefValid | kRefChanged) : kRefValid;
}

}  // namespace drsim::testing
