// An independent model of ASO connection tracking, the oracle of the CT differential test and fuzzer.
//
// What: one TCP connection as docs/semantics.md ("ASO connection tracking") specifies it, written from that
// text in Linux nf_conntrack's vocabulary (td_end, td_maxend, td_maxwin, td_maxack, a state table), not
// from sim/conntrack.cc: it shares no code with the engine, only the spec. Verdict bits are DPDK's
// RTE_FLOW_CONNTRACK_PKT_STATE_* values, spelled out here.
//
// How: RefConnection holds the whole context; Segment() feeds one segment of one direction and returns
// the verdict. The test converts sim::CtContext to and from RefConnection field by field.
//
// Thread-safety: a plain value type.
#ifndef DRSIM_TESTS_CT_REFERENCE_MODEL_H_
#define DRSIM_TESTS_CT_REFERENCE_MODEL_H_

#include <cstdint>

namespace drsim::testing {

inline constexpr uint32_t kRefValid = 1, kRefChanged = 2, kRefInvalid = 4, kRefDisabled = 8, kRefBad = 16;

// States in the rte_flow_conntrack_state order.
enum RefState : int { kRefSynRecv, kRefEstablished, kRefFinWait, kRefCloseWait, kRefLastAck, kRefTimeWait };

struct RefSide {
  uint32_t td_end = 0, td_maxend = 0, td_maxwin = 0, td_maxack = 0;
  int td_scale = 0;  // 15: no scaling
  bool fin_sent = false, maxack_set = false, unacked = false, be_liberal = false;
};

struct RefSegment {
  uint32_t seq = 0, ack = 0;
  uint16_t win = 0;
  uint8_t flags = 0;  // TCP flag byte
  uint32_t len = 0;   // payload bytes
  bool tcp = true;    // false: not a whole TCP segment
};

struct RefConnection {
  bool programmed = true, tracking = true, assured = false;
  int state = kRefEstablished;
  RefSide side[2];  // [0] the initiator (original direction), [1] the responder
  int ack_window_shift = 0;
  int retrans = 0, retrans_limit = 0;
  bool retrans_over = false;
  int last_dir = 1;  // 0 original, 1 reply
  int last_index = 0;
  uint16_t last_win = 0;
  uint32_t last_seq = 0, last_ack = 0, last_end = 0;

  // Feeds a segment sent by the initiator (dir 0) or the responder (dir 1); returns kRef* bits.
  uint32_t Segment(int dir, const RefSegment& s);
};

}  // namespace drsim::testing

#endif  // DRSIM_TESTS_CT_REFERENCE_MODEL_H_
