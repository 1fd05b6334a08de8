// ASO connection tracking (CT): the TCP tracking a ConnectX NIC does for a connection that software has
// offloaded (PRM conn_track_offload objects, one context each; DPDK's rte_flow_action_conntrack).
//
// What:
//  - CtContext is what software programs and queries back: the connection's state, per direction the
//    window bookkeeping of Linux nf_conntrack (sent_end = td_end, reply_end = td_maxend, max_win =
//    td_maxwin, max_ack = td_maxack, scale, flags), the last segment seen and retransmission counting.
//    Field names follow rte_flow_action_conntrack, so a DPDK front end copies them one to one.
//  - TrackCtSegment runs one TCP segment of one direction through a context: the state move, the window
//    check of tcp_in_window, the updates. It returns the packet state as RTE_FLOW_CONNTRACK_PKT_STATE_*
//    bits; CtRegisterByte is what the aso action writes to the low byte of its reg_c (mlx5's syndrome:
//    bits 7:6 valid 0 / invalid 1 / disabled 2, bit 1 state changed, bit 0 bad packet), and
//    CtResultMatch turns an rte_flow_item_conntrack spec and mask into the value and mask that match it.
//  - docs/semantics.md ("ASO connection tracking") states the model and each deviation from Linux.
//
// How (for a front end such as testpmd):
//  1. sim::Nic::CreateAsoObject(hw::AsoKind::kConnTrack, log_range) makes 2^log_range contexts;
//  2. sim::Nic::ConfigureAsoConnTrack(object, offset, context) programs one from the fields of
//     rte_flow_action_conntrack, one to one (original_dir/reply_dir to original/reply, liberal_mode to
//     both directions' liberal; peer_port and is_original_dir are the front end's, not the context's);
//  3. dr::Action::Aso(domain, object, offset, MLX5DV_DR_ACTION_FLAGS_ASO_CT_DIRECTION_INITIATOR or
//     _RESPONDER, return_reg_c) makes the action of one direction; a rule of a later table matches
//     metadata_reg_c_<return_reg_c> with CtResultMatch's value and mask;
//  4. sim::Nic::QueryAsoConnTrack(object, offset) reads the context back.
//
// Thread-safety: plain functions on values; callers serialise access to one context (sim::AsoBank does).
#ifndef DRSIM_SIM_CONNTRACK_H_
#define DRSIM_SIM_CONNTRACK_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace drsim::sim {

// rte_flow_conntrack_state, the PRM's 3-bit state.
enum class CtState : uint8_t { kSynRecv = 0, kEstablished, kFinWait, kCloseWait, kLastAck, kTimeWait };
inline constexpr uint8_t kCtStateCount = 6;
const char* CtStateName(CtState state);

// rte_flow_conntrack_tcp_last_index: which kind of segment passed last.
inline constexpr uint8_t kCtIndexNone = 0, kCtIndexSyn = 1, kCtIndexSynAck = 2, kCtIndexFin = 4,
                         kCtIndexAck = 8, kCtIndexRst = 16;

// The packet state: RTE_FLOW_CONNTRACK_PKT_STATE_* bits.
inline constexpr uint32_t kCtPktValid = 1u << 0, kCtPktChanged = 1u << 1, kCtPktInvalid = 1u << 2,
                          kCtPktDisabled = 1u << 3, kCtPktBad = 1u << 4;
inline constexpr uint32_t kCtPktAll = 0x1f;

// One direction's window bookkeeping (rte_flow_tcp_dir_param, plus the PRM's per-direction liberal bit).
struct CtDirection {
  uint8_t scale = 0;             // window scale shift, 0..14; 15 = the connection does not scale
  bool close_initiated = false;  // this direction sent a FIN
  bool last_ack_seen = false;    // max_ack holds an ack (PRM tcp_max_ack)
  bool data_unacked = false;     // this direction sent data not yet acknowledged
  bool liberal = false;          // out-of-window segments of this direction pass (not tracked)
  uint32_t sent_end = 0;         // highest seq + len sent (td_end)
  uint32_t reply_end = 0;        // highest seq the receiver's window allows (td_maxend)
  uint32_t max_win = 0;          // largest (scaled) window advertised (td_maxwin); 0 = not yet seen
  uint32_t max_ack = 0;          // highest ack sent (td_maxack)
};

struct CtContext {
  bool valid = true;                  // PRM valid: an invalid (unprogrammed) context tracks nothing
  bool enable = true;                 // !freeze_track: disabled contexts report DISABLED, change nothing
  bool live_connection = false;       // PRM connection_assured: an ACK passed in ESTABLISHED
  bool selective_ack = false;         // PRM sack_permitted (kept; SACK blocks are not read)
  bool challenge_ack_passed = false;  // PRM challenged_acked (kept, not used)
  bool heartbeat = false;             // PRM heartbeat (kept, not used)
  CtState state = CtState::kEstablished;
  uint8_t max_ack_window = 0;          // 3 bits: the ack lower bound reaches max(max_win, 66000) << this back
  uint8_t retransmission_limit = 0;    // 3 bits
  uint8_t retransmission_counter = 0;  // 3 bits, saturating
  bool retransmission_limit_exceeded = false;  // sticky until reprogrammed
  CtDirection original, reply;
  bool last_direction_original = false;  // PRM last_dir (1: the original direction)
  uint8_t last_index = kCtIndexNone;     // 5 bits
  uint16_t last_window = 0;              // raw window field of the last ACK segment
  uint32_t last_seq = 0, last_ack = 0, last_end = 0;
};

bool operator==(const CtDirection& a, const CtDirection& b);
bool operator==(const CtContext& a, const CtContext& b);
inline bool operator!=(const CtContext& a, const CtContext& b) { return !(a == b); }
// "state ESTABLISHED, original {scale 7 sent_end 0x...}, ..." for messages and test diffs.
std::string DescribeCtContext(const CtContext& c);

// InvalidArgument naming the first field outside what the PRM can hold (state 0..5, scale 0..15,
// max_ack_window, retransmission limit and counter 0..7, last_index 0..31).
absl::Status CheckCtContext(const CtContext& c);

// The TCP facts of one segment. flags: the header's low byte (FIN 0x01, SYN 0x02, RST 0x04, PSH 0x08,
// ACK 0x10, URG 0x20, ECE 0x40, CWR 0x80).
struct CtSegment {
  uint32_t seq = 0;
  uint32_t ack = 0;
  uint16_t window = 0;
  uint8_t flags = 0;
  uint32_t payload_len = 0;  // TCP payload bytes, from the IP lengths (not the frame's padding)
};

// The segment of an Ethernet frame whose outer L3 starts at `l3` and L4 at `l4` with IP protocol
// `ip_protocol` (the parser's findings), or nullopt when it is not a whole TCP segment: not TCP, a
// truncated header, a data offset under 5, IP lengths that do not fit the frame.
std::optional<CtSegment> ReadCtSegment(absl::Span<const uint8_t> frame, size_t l3, size_t l4,
                                       uint8_t ip_protocol);

// Tracks one segment sent by the original (initiator) or reply direction; `segment` null for a packet that
// is not a whole TCP segment. Returns kCtPkt* bits; only VALID packets (and liberal ones) update `c`.
uint32_t TrackCtSegment(CtContext& c, bool original, const CtSegment* segment);

// ReadCtSegment and TrackCtSegment in one call: tracks the segment of `frame` (or its absence) through `c`.
// The data path's: the segment stays in registers, never stored narrow and read back wide.
uint32_t TrackCtFrame(CtContext& c, bool original, absl::Span<const uint8_t> frame, size_t l3, size_t l4,
                      uint8_t ip_protocol);

// The low byte the aso action writes for packet state `pkt_state` (inline: the data path's, per packet).
inline uint8_t CtRegisterByte(uint32_t pkt_state) {
  uint8_t b = 0;
  if (pkt_state & kCtPktInvalid) b |= 1u << 6;
  if (pkt_state & kCtPktDisabled) b = 2u << 6;
  if (pkt_state & kCtPktChanged) b |= 1u << 1;
  if (pkt_state & kCtPktBad) b |= 1u << 0;
  return b;
}

// The reg_c value and mask that match rte_flow_item_conntrack {spec_flags} under mask_flags, as the mlx5
// PMD builds them. InvalidArgument for unknown bits or VALID together with INVALID, DISABLED or BAD.
struct CtRegisterMatch {
  uint32_t value = 0;
  uint32_t mask = 0;
};
absl::StatusOr<CtRegisterMatch> CtResultMatch(uint32_t spec_flags, uint32_t mask_flags);

}  // namespace drsim::sim

#endif  // DRSIM_SIM_CONNTRACK_H_
