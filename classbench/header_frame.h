// ClassBench headers as frames for the software NIC: an IPv4 frame carrying the header's addresses and
// protocol, and its ports when the protocol has them (TCP, UDP). AsParsed gives the header as the NIC's
// parser sees that frame, which is what a first-match scan must classify to agree with the NIC, and
// FillHeaderVector what the parser writes of it where an ACL's rules (dr_acl.h) look: the input of a
// lookup in the ACL's table without a frame.
#ifndef DRSIM_CLASSBENCH_HEADER_FRAME_H_
#define DRSIM_CLASSBENCH_HEADER_FRAME_H_

#include <cstdint>
#include <vector>

#include "classbench/filter.h"

namespace drsim::classbench {

// `header` with ports 0 unless its protocol is TCP (6) or UDP (17).
Header AsParsed(Header header);

// An Ethernet/IPv4 frame with the fields of AsParsed(header).
std::vector<uint8_t> FrameOf(const Header& header);

// Writes into `hv` (448 bytes, the match layout) the outer fields the NIC's parser fills from
// FrameOf(header) that InstallAcl's rules match: ip_version, the addresses, the protocol, and the ports in
// the TCP or the UDP fields as the protocol says (the other pair 0). Every other byte of `hv` stays as it
// was: start from zeros, as the parser does.
void FillHeaderVector(const Header& header, uint8_t* hv);

}  // namespace drsim::classbench

#endif  // DRSIM_CLASSBENCH_HEADER_FRAME_H_
