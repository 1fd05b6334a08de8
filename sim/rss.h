// RSS over parsed frames: the fields a TIR hashes, read from a frame's header vector, and the spreading
// of frames over worker threads the way a NIC spreads its receive queues over cores.
//
// Spreading keeps every flow on one worker (its Toeplitz hash picks it), so the frames of a flow are
// processed in order, and workers share nothing but the steering they read.
#ifndef DRSIM_SIM_RSS_H_
#define DRSIM_SIM_RSS_H_

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "hw/match_layout.h"
#include "sim/toeplitz.h"

namespace drsim::sim {

// The RSS fields of a parsed frame: the outer headers, or the inner ones (`inner`, IBV_RX_HASH_INNER).
// A frame without IP headers has ip_version 0.
RssHeaderFields RssFieldsOf(const hw::HeaderVector& hv, bool inner);

// The fields a NIC's default RSS hashes a frame on, as mlx5 spreads traffic with one TIR per traffic
// type: the outer addresses of its IP version, and the TCP or UDP ports when it has them (0 without IP).
uint64_t DefaultRssFields(const RssHeaderFields& f);

// For each of `workers` workers (at least 1), the indexes of the frames it takes, in their order: the
// Toeplitz hash of each frame's DefaultRssFields under `key` (40 bytes suffice), modulo `workers`.
// Frames without an IP header go to worker 0.
std::vector<std::vector<size_t>> SpreadByRss(absl::Span<const absl::Span<const uint8_t>> frames,
                                             size_t workers,
                                             absl::Span<const uint8_t> key = kMicrosoftRssKey);

}  // namespace drsim::sim

#endif  // DRSIM_SIM_RSS_H_
