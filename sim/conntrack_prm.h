// The PRM layout of a CT context: conn_track_aso, the 64 bytes an ASO WQE writes and a QUERY of a
// conn_track_offload general object (type 0x31) reads back, at byte 80 of the command after the
// general-object header.
//
// What: SerializeCtContext writes a sim::CtContext as those 64 bytes; ParseCtContext reads them back
// (every field the layout holds: the two tcp_window_params, last_end/ack/seq/win/dir/index, per direction
// scale, close_initiated, liberal, data_unacked, max_ack, and valid, state, freeze_track,
// connection_assured, sack_permitted, challenged_acked, heartbeat, max_ack_window, retransmission counter,
// limit-exceeded flag and limit). Reserved bits are written as zero and ignored when read.
//
// How: big-endian 32-bit words; word 0-3 the reply direction's max_ack, max_win, reply_end, sent_end,
// words 4-7 the original direction's, words 8-10 last_end, last_ack, last_seq, word 11 last_win (31:16),
// last_dir (5), last_index (4:0), words 12-13 reserved, word 14 the per-direction bits (reply in 31:24,
// original in 15:8), word 15 valid, state, freeze_track, the connection flags and the counters.
//
// Thread-safety: pure functions.
#ifndef DRSIM_SIM_CONNTRACK_PRM_H_
#define DRSIM_SIM_CONNTRACK_PRM_H_

#include <array>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sim/conntrack.h"

namespace drsim::sim {

inline constexpr size_t kCtPrmBytes = 64;

std::array<uint8_t, kCtPrmBytes> SerializeCtContext(const CtContext& c);
// InvalidArgument when `prm` is shorter than 64 bytes or holds state 6 or 7.
absl::StatusOr<CtContext> ParseCtContext(absl::Span<const uint8_t> prm);

}  // namespace drsim::sim

#endif  // DRSIM_SIM_CONNTRACK_PRM_H_
