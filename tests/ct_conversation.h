// Random TCP conversations for the CT differential test and fuzzer, and the glue between the engine's
// context (sim::CtContext) and the reference model's (tests/ct_reference_model.h).
//
// What: MakeConversation programs a context as software would for a connection it tracked so far
// (ESTABLISHED after the handshake, SYN_RECV after the SYN-ACK, or picked up mid-stream with the
// responder's window unknown; random scales, windows, max_ack_window, retransmission limit, sometimes
// liberal, disabled or unprogrammed) and then the segments both ends send: in-order data, pure ACKs,
// exact retransmissions, reordered pairs, segments beyond or far behind the window, acks of data never
// sent or far too old, RSTs, FINs, zero windows, SYNs and flag combinations no stack sends, and packets
// that are not TCP.
//
// How: the randomness comes from `below`, a source of numbers below n: a seeded std::mt19937 in the test,
// the fuzzer's input bytes in the fuzzer. TcpFrame builds the frame of a step with the frame builder.
//
// Thread-safety: pure functions.
#ifndef DRSIM_TESTS_CT_CONVERSATION_H_
#define DRSIM_TESTS_CT_CONVERSATION_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "sim/conntrack.h"
#include "tests/ct_reference_model.h"

namespace drsim::testing {

struct CtStep {
  int dir = 0;      // 0: from the initiator, 1: from the responder
  bool tcp = true;  // false: a UDP datagram between the same ports
  sim::CtSegment segment;
};

struct CtConversation {
  sim::CtContext context;
  std::vector<CtStep> steps;
};

using Below = std::function<uint32_t(uint32_t n)>;  // a number in [0, n), n > 0

CtConversation MakeConversation(const Below& below, int steps);

// The same connection in the other model's terms.
RefConnection ToReference(const sim::CtContext& c);
// The flags the reference model does not track (selective_ack, challenge, heartbeat) come from `kept`.
sim::CtContext FromReference(const RefConnection& r, const sim::CtContext& kept);
RefSegment ToReference(const CtStep& step);

// The Ethernet/IPv4 frame of a step between client port `client` and server port `server`.
std::vector<uint8_t> TcpFrame(const CtStep& step, uint16_t client, uint16_t server);

}  // namespace drsim::testing

#endif  // DRSIM_TESTS_CT_CONVERSATION_H_
