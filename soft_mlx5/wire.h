// The uplink's wire of the software mlx5 device: where frames the NIC sends out of its uplink go, and
// where frames from outside come from.
//
// What
//   - loopback (the default, also for an empty spec): what leaves by the wire comes back in, in order,
//     as a NIC's local loopback does for two applications on one port. At most 65536 frames wait
//     between polls; a frame sent to a full queue is dropped.
//   - pcap:IN,OUT: frames of the capture IN arrive at their recorded pace: frame i is due once
//     (its timestamp - the first frame's) has passed since the first Poll (CLOCK_MONOTONIC), and
//     last_arrivals() gives that due time, which the NIC's clock takes for the frame. IN may be
//     empty ("pcap:,OUT": nothing arrives) and cannot contain a comma. What leaves is appended to OUT
//     (a classic pcap, Ethernet, stamped with the wall-clock time of Transmit) and flushed at once, so a
//     reader sees every complete frame while the program runs and after it exits.
//   - netdev:IF: a real Linux interface (an AF_PACKET socket bound to IF, promiscuous), so tcpdump,
//     ping or scapy see and send the traffic. Only frames arriving on IF come in: what leaves IF
//     (PACKET_OUTGOING: the wire's own frames, the kernel's, another program's) does not.
//   A frame that cannot be delivered (full queue, failed write or send) is lost: the first loss says why
//   on stderr, and the wire prints how many it lost when it is destroyed.
//
// How
//   The device calls Transmit for every frame the NIC sent out of the uplink, and Poll whenever a
//   program enters the data path (post send or receive, poll a CQ). There is no thread of its own.
//
// Thread-safety
//   None: the device calls a wire under its context lock.
#ifndef DRSIM_SOFT_MLX5_WIRE_H_
#define DRSIM_SOFT_MLX5_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace drsim::soft_mlx5 {

class Wire {
 public:
  virtual ~Wire() = default;
  // Takes a frame that the NIC sent out of its uplink.
  virtual void Transmit(absl::Span<const uint8_t> frame) = 0;
  // The same, for a frame the caller gives up: a wire that keeps frames (loopback) takes it without a
  // copy.
  virtual void Transmit(std::vector<uint8_t>&& frame) { Transmit(absl::MakeConstSpan(frame)); }
  // The frames that arrived from outside since the last call, oldest first, at most `max`.
  virtual std::vector<std::vector<uint8_t>> Poll(size_t max) = 0;
  // When each frame of the last Poll arrived, on CLOCK_MONOTONIC (ns), one per frame; empty when they
  // arrived as Poll ran (loopback, netdev). A pcap wire gives each its due time: the capture's spacing.
  virtual absl::Span<const int64_t> last_arrivals() const { return {}; }
};

// The wire `spec` names: "loopback", "pcap:IN,OUT" or "netdev:IF". Errors start with "wire 'SPEC': ":
// InvalidArgument for a bad spec ("wire 'foo': loopback, pcap:IN,OUT or netdev:IF"); for IN, the status
// of sim::ReadPcapFile (naming the file, with libpcap's message); the errno-style status of the failing
// call, naming the file or the interface, otherwise (fopen of OUT, if_nametoindex, socket, bind).
absl::StatusOr<std::unique_ptr<Wire>> OpenWire(absl::string_view spec);

}  // namespace drsim::soft_mlx5

#endif  // DRSIM_SOFT_MLX5_WIRE_H_
