// libFuzzer target: ASO connection tracking on arbitrary CT contexts and segment sequences. The input's
// first byte picks the source: an arbitrary 64-byte PRM conn_track_aso (any windows, flags, counters) and
// raw segments near or far from its windows, or a conversation from tests/ct_conversation.h driven by the
// input bytes. Every segment goes through the engine (sim/conntrack.h) and the independent reference model
// (tests/ct_reference_model.h); their verdicts and contexts must agree after each one. A context must
// survive the PRM layout unchanged, and the frame builder's frame of a segment must read back as it.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "hw/match_layout.h"
#include "sim/conntrack.h"
#include "sim/conntrack_prm.h"
#include "sim/packet_parser.h"
#include "tests/ct_conversation.h"
#include "tests/ct_reference_model.h"

namespace {

using drsim::fuzz::FuzzInput;
using drsim::sim::CtContext;

void Fail(const char* what, const CtContext& engine, const CtContext& model) {
  std::fprintf(stderr, "%s\n engine %s\n model  %s\n", what, drsim::sim::DescribeCtContext(engine).c_str(),
               drsim::sim::DescribeCtContext(model).c_str());
  std::abort();
}

// A segment near the context's windows (or anywhere), from the input.
drsim::testing::CtStep RawStep(FuzzInput& in, const CtContext& c) {
  drsim::testing::CtStep s;
  s.dir = in.Below(2);
  s.tcp = in.Below(16) != 0;
  const drsim::sim::CtDirection& me = s.dir == 0 ? c.original : c.reply;
  const drsim::sim::CtDirection& peer = s.dir == 0 ? c.reply : c.original;
  const uint8_t how = in.Byte();
  s.segment.seq = (how & 1) ? in.U32() : me.sent_end + static_cast<int16_t>(in.U16());
  s.segment.ack = (how & 2) ? in.U32() : peer.sent_end + static_cast<int16_t>(in.U16());
  s.segment.flags = in.Byte();
  s.segment.window = in.U16();
  s.segment.payload_len = in.U16() % 1461;
  return s;
}

// The frame of a step must read back as the step (the payload length from the IP lengths).
void CheckFrame(const drsim::testing::CtStep& step) {
  const std::vector<uint8_t> frame = drsim::testing::TcpFrame(step, 1234, 80);
  drsim::hw::HeaderVector hv;
  const drsim::sim::PacketLayers layers = drsim::sim::ParsePacket(frame.data(), frame.size(), 0xffff, &hv);
  const auto protocol =
      static_cast<uint8_t>(drsim::hw::GetField(hv.bytes, drsim::hw::Field::kOuterIpProtocol));
  const std::optional<drsim::sim::CtSegment> got =
      drsim::sim::ReadCtSegment(frame, layers.l3, layers.l4, protocol);
  if (got.has_value() != step.tcp) std::abort();
  if (got &&
      (got->seq != step.segment.seq || got->ack != step.segment.ack || got->flags != step.segment.flags ||
       got->window != step.segment.window || got->payload_len != step.segment.payload_len)) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzInput in(data, size);
  CtContext start;
  std::vector<drsim::testing::CtStep> steps;
  if (in.Below(2) == 0) {
    const std::vector<uint8_t> prm = in.Bytes(drsim::sim::kCtPrmBytes);
    absl::StatusOr<CtContext> c = drsim::sim::ParseCtContext(prm);
    if (!c.ok()) return 0;  // state 6 or 7: refused, as the check says
    start = *c;
    const int n = in.Below(64);
    for (int i = 0; i < n; ++i) steps.push_back(RawStep(in, start));
  } else {
    const drsim::testing::Below below = [&in](uint32_t n) { return in.U32() % n; };
    drsim::testing::CtConversation conv = drsim::testing::MakeConversation(below, in.Below(64));
    start = conv.context;
    steps = std::move(conv.steps);
  }
  absl::StatusOr<CtContext> round = drsim::sim::ParseCtContext(drsim::sim::SerializeCtContext(start));
  if (!round.ok() || *round != start) Fail("PRM round trip", start, round.ok() ? *round : start);

  CtContext engine = start;
  drsim::testing::RefConnection ref = drsim::testing::ToReference(start);
  for (const drsim::testing::CtStep& step : steps) {
    if (step.segment.payload_len < 64) CheckFrame(step);
    const uint32_t got =
        drsim::sim::TrackCtSegment(engine, step.dir == 0, step.tcp ? &step.segment : nullptr);
    const uint32_t want = ref.Segment(step.dir, drsim::testing::ToReference(step));
    const CtContext model = drsim::testing::FromReference(ref, start);
    if (got != want) Fail("verdicts differ", engine, model);
    if (engine != model) Fail("contexts differ", engine, model);
  }
  return 0;
}
