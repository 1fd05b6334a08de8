// Test oracle: Wireshark's dissectors (Debian's tshark) as an independent judge of the frames the
// project builds. TsharkCheck runs
//
//   tshark -r FILE -o ip.check_checksum:TRUE -o tcp.check_checksum:TRUE -o udp.check_checksum:TRUE
//          -o tcp.analyze_sequence_numbers:FALSE -T fields -e frame.number -e frame.protocols
//          -e _ws.malformed -e _ws.expert.message -e _ws.expert.severity -e _ws.expert.group
//          -e ip.checksum.status -e tcp.checksum.status -e udp.checksum.status
//          -e icmp.checksum.status -e icmpv6.checksum.status
//
// (with control characters as field separator and aggregator, and WIRESHARK_CONFIG_DIR pointed at an
// empty place so a developer's own Wireshark preferences cannot change the verdict) and returns, per
// frame, the protocol stack, the expert items and the checksum verdicts. TCP sequence analysis is off:
// test captures are independent frames, not conversations, and would otherwise draw "retransmission"
// notes. ICMP and ICMPv6 checksums are always checked by Wireshark.
//
// tshark must be installed (scripts/setup installs Debian's package). When it is not, TsharkCheck fails
// with FailedPrecondition saying to run scripts/setup: tests that use it fail rather than skip.
//
// Not thread-safe with respect to other processes' use of the file; spawns one tshark per call.
#ifndef DRSIM_TESTS_TSHARK_CHECK_H_
#define DRSIM_TESTS_TSHARK_CHECK_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace drsim::testing {

struct TsharkExpert {
  std::string message;   // e.g. "Bad checksum [should be 0x1c46]"
  std::string severity;  // "Comment", "Chat", "Note", "Warning" or "Error"
  std::string group;     // "Checksum", "Malformed", "Protocol", "Undecoded", "Sequence", ...
};

struct TsharkFrame {
  int number = 0;          // 1-based, as tshark numbers frames
  std::string protocols;   // frame.protocols, e.g. "eth:ethertype:vlan:ethertype:ip:udp:data"
  bool malformed = false;  // a dissector threw (the "[Malformed Packet: ...]" item)
  std::vector<TsharkExpert> experts;
  // Checksum verdicts of the layers that carry one: "ip", "tcp", "udp", "icmp", "icmpv6" ->
  // "Good", "Bad", "Unverified", "Not present" or "Illegal".
  std::map<std::string, std::string> checksums;

  // The reports that make a frame invalid: malformed, any Bad or Illegal checksum, any expert item in the
  // Checksum or Malformed group or of Error severity. Empty for a valid frame.
  std::vector<std::string> Problems() const;
  // Expert items of Warning severity or above, as "group/severity: message".
  std::vector<std::string> Warnings() const;
};

// Dissects every frame of the capture at `pcap_path`. FailedPrecondition when tshark is not installed
// (the message says to run scripts/setup); Internal, with tshark's standard error, when tshark fails or
// its output cannot be understood; the errno's code when it cannot be started.
absl::StatusOr<std::vector<TsharkFrame>> TsharkCheck(const std::string& pcap_path);

}  // namespace drsim::testing

#endif  // DRSIM_TESTS_TSHARK_CHECK_H_
