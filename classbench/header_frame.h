// ClassBench headers as frames for the software NIC: an IPv4 frame carrying the header's addresses and
// protocol, and its ports when the protocol has them (TCP, UDP). AsParsed gives the header as the NIC's
// parser sees that frame, which is what a first-match scan must classify to agree with the NIC.
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

}  // namespace drsim::classbench

#endif  // DRSIM_CLASSBENCH_HEADER_FRAME_H_
