#include "capi/errors.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "dr/status_errno.h"

namespace drsim::capi {
namespace {

thread_local std::string last_error;

bool DebugEnabled() {
  static const bool enabled = std::getenv("DRSIM_DEBUG") != nullptr;
  return enabled;
}

}  // namespace

int RecordFailure(const char* function, int err, const std::string& message) {
  last_error = absl::StrCat(function, ": ", message);
  if (DebugEnabled()) std::fprintf(stderr, "drsim: %s\n", last_error.c_str());
  errno = err;
  return err;
}

int RecordFailure(const char* function, const absl::Status& status) {
  return RecordFailure(function, dr::ErrnoFromStatus(status), std::string(status.message()));
}

const char* LastError() { return last_error.c_str(); }

}  // namespace drsim::capi
