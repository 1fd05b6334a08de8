// Test oracle: the header-vector fields a frame described by a FrameSpec must produce, stated directly
// from the mlx5 layout semantics and the frame description, independently of sim/packet_parser.
#ifndef DRSIM_TESTS_PACKET_MODEL_H_
#define DRSIM_TESTS_PACKET_MODEL_H_

#include "hw/match_params.h"
#include "sim/frame_builder.h"

namespace drsim::testing {

// The fields of BuildFrame(spec) as received from the wire (source_port 0xffff).
hw::MatchParams ExpectedFields(const sim::FrameSpec& spec);

}  // namespace drsim::testing

#endif  // DRSIM_TESTS_PACKET_MODEL_H_
