// drctl run and drctl trace: frames of a pcap through the NIC a rule file programmed.
#ifndef DRSIM_TOOLS_DRCTL_RUN_H_
#define DRSIM_TOOLS_DRCTL_RUN_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "sim/nic.h"
#include "sim/pcap_file.h"
#include "tools/drctl_session.h"

namespace drsim::tools {

// One place a frame (or a copy of it) ended up, with the bytes that arrived there (empty for a drop).
struct Arrival {
  std::string destination;  // queue:<port>/<q>, vport:<n>, wire or drop
  std::vector<uint8_t> frame;
  bool has_tag = false;
  uint32_t tag = 0;
};

// Sends `frame` in as `options` says (from the wire or a vport) and collects every arrival, taking the
// delivered bytes out of the queue, the function's interface or the wire. `verdict` receives the NIC's
// verdict (with the path when `trace`).
std::vector<Arrival> Inject(Session& session, const Options& options, const sim::PcapFrame& frame, bool trace,
                            sim::Verdict* verdict);

int RunFrames(const Options& options, std::ostream& out, std::ostream& err, bool progress);
int TraceFrame(const Options& options, std::ostream& out, std::ostream& err);

}  // namespace drsim::tools

#endif  // DRSIM_TOOLS_DRCTL_RUN_H_
