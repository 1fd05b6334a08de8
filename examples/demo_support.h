// What the demos share: their set-up steps are all meant to succeed, so a failed step ends the program
// with the step's name and the library's message; addresses are written as text.
#ifndef DRSIM_EXAMPLES_DEMO_SUPPORT_H_
#define DRSIM_EXAMPLES_DEMO_SUPPORT_H_

#include <cstdlib>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "hw/net_addr.h"

namespace drsim::examples {

// The value of `v`; when `v` is an error, prints "<what>: <status>" to stderr and exits with 1.
template <typename T>
T Must(absl::StatusOr<T> v, const char* what) {
  if (!v.ok()) {
    absl::FPrintF(stderr, "%s: %s\n", what, v.status().ToString());
    std::exit(1);
  }
  return *std::move(v);
}

// Parses a literal the demo wrote itself ("10.0.0.1", "02:00:00:00:00:01"); exits on a typo.
inline hw::Ipv4Address Ip(const char* s) { return Must(hw::Ipv4Address::Parse(s), s); }
inline hw::MacAddress Mac(const char* s) { return Must(hw::MacAddress::Parse(s), s); }

}  // namespace drsim::examples

#endif  // DRSIM_EXAMPLES_DEMO_SUPPORT_H_
