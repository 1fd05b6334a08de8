// The uplink's wire of the software mlx5 device: where frames the NIC sends out of its uplink go, and
// where frames from outside come from.
//
// What
//   - loopback (the default): what leaves by the wire comes back in, as a NIC's local loopback does for
//     two applications on one port;
//   - pcap:IN,OUT: frames of the capture IN arrive at their recorded pace, counted from the first Poll;
//     what leaves is written to OUT;
//   - netdev:IF: a real Linux interface (AF_PACKET), so tcpdump, ping or scapy see and send the traffic.
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
  // The frames that arrived from outside since the last call, oldest first, at most `max`.
  virtual std::vector<std::vector<uint8_t>> Poll(size_t max) = 0;
};

// The wire `spec` names: "loopback", "pcap:IN,OUT" or "netdev:IF". InvalidArgument naming the culprit for
// a bad spec; the errno-style status of the failing call (open, socket, bind) otherwise.
absl::StatusOr<std::unique_ptr<Wire>> OpenWire(absl::string_view spec);

}  // namespace drsim::soft_mlx5

#endif  // DRSIM_SOFT_MLX5_WIRE_H_
