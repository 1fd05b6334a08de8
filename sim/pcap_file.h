// pcap files in and out, through Debian's libpcap: frames the software NIC sends or receives can be
// opened in Wireshark or tcpdump, and captures can be replayed through it.
//
// Writing makes a classic pcap file (LINKTYPE_ETHERNET, microsecond timestamps, snapshot length
// kPcapSnapLen) with pcap_open_dead/pcap_dump_open/pcap_dump. Reading accepts any file libpcap opens
// (pcap or pcapng, micro- or nanosecond; timestamps are delivered in microseconds) whose link type is
// Ethernet.
//
// Errors are absl::Status values naming the file and, when one frame is at fault, its 0-based index; a
// libpcap failure carries libpcap's own message. Nothing here aborts on a bad file.
#ifndef DRSIM_SIM_PCAP_FILE_H_
#define DRSIM_SIM_PCAP_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace drsim::sim {

// The snapshot length written files declare, and the largest frame they may hold (libpcap's maximum).
inline constexpr uint32_t kPcapSnapLen = 262144;

struct PcapFrame {
  std::vector<uint8_t> data;  // the captured bytes
  uint32_t orig_len = 0;      // the frame's length on the wire (>= data.size() when truncated by a snaplen)
  int64_t timestamp_us = 0;   // microseconds since the Unix epoch
};

// Writes `frames` to `path` (created or truncated). Frame i gets timestamps_us[i], or 0 (the epoch) when
// `timestamps_us` is empty; its original length is its size. Errors, each naming the file:
//  - InvalidArgument when timestamps_us is neither empty nor frames.size() long, or (naming the frame)
//    when a timestamp is negative or a frame is longer than kPcapSnapLen; nothing is written then;
//  - the errno's code (NotFound, PermissionDenied, ResourceExhausted for ENOSPC, ...) and message when
//    the file cannot be created or written; Unavailable with libpcap's message when libpcap refuses it.
absl::Status WritePcapFile(const std::string& path, absl::Span<const std::vector<uint8_t>> frames,
                           absl::Span<const int64_t> timestamps_us = {});

// The same for frames with their own timestamps. orig_len is written as given when it is at least the
// frame's size, else as the size. Same errors.
absl::Status WritePcapFile(const std::string& path, absl::Span<const PcapFrame> frames);

// Every frame of the file at `path`, in order ("-" is a file of that name, not standard input). Errors,
// each naming the file:
//  - the errno's code and message when the file cannot be found or examined (NotFound, PermissionDenied);
//  - InvalidArgument with libpcap's message when libpcap cannot open it (not a capture file, unreadable);
//  - InvalidArgument naming the link type when it is not Ethernet (LINKTYPE_ETHERNET);
//  - DataLoss naming the frame index and with libpcap's message when a frame cannot be read (a truncated
//    or corrupt file).
absl::StatusOr<std::vector<PcapFrame>> ReadPcapFile(const std::string& path);

}  // namespace drsim::sim

#endif  // DRSIM_SIM_PCAP_FILE_H_
