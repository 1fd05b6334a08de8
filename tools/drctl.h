// drctl — the command-line tool for testpmd rule files and pcaps on the software NIC.
//
//   drctl validate RULES                 checks a rule file; every error as file:line:col
//   drctl run RULES --pcap IN [--from wire|vport:N] [--out DIR] [--verdicts FILE] [--json]
//                                        sends every frame of IN through the NIC the rules programmed
//   drctl trace RULES --pcap IN --frame N
//                                        the path of frame N: tables, matchers (with masks), rules,
//                                        actions, where it went and the bytes that changed
//   drctl dump RULES [--stable-ids]      rdma-core's CSV dump of the domains the rules made
//
// Common options: --vfs N (the NIC's VFs, default 4: testpmd ports 0..N; in transfer rules port 0 is the
// uplink),
// --queues N (receive queues per port, default 16).
//
// RULES is a file of testpmd commands (`flow create ...`, `set raw_encap ...`, meter commands; see
// docs/testpmd.md). A frame's destinations are `queue:<port>/<q>` (receive queue q of testpmd port
// <port>), `vport:<n>` (function n's own interface: it has no NIC_RX steering), `wire` (out of the
// uplink) and `drop` (a drop action, a domain's drop default, a full queue or a table loop). A frame
// replicated by a mirror, sampler or dest array has several. docs/drctl.md has the output formats.
//
// Exit status: 0 success; 1 the rules (or a frame) were rejected, with diagnostics on stderr; 2 bad
// usage or an unreadable/unwritable file.
#ifndef DRSIM_TOOLS_DRCTL_H_
#define DRSIM_TOOLS_DRCTL_H_

#include <ostream>
#include <string>
#include <vector>

namespace drsim::tools {

// Runs drctl with `args` (without the program name), writing to `out` and `err`; returns the exit status.
// `progress` enables a progress line on `err` (rules installed, frames sent) for loads and runs that take
// over a second, as when stderr is a terminal; without it nothing extra is printed. With `leave_to_exit`
// the rules loaded are not torn down before returning: the process is about to exit, which frees them at
// once (drctl's main; a million flows take most of a second to tear down one by one).
int Drctl(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, bool progress = false,
          bool leave_to_exit = false);

}  // namespace drsim::tools

#endif  // DRSIM_TOOLS_DRCTL_H_
