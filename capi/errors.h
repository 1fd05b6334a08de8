// How the C API reports a failure, rdma-core's way, plus the message that names the culprit: errno is set
// (creators return NULL; destroy/modify/sync return the positive errno), and drsim_last_error() returns
// the message of this thread's last failure. With DRSIM_DEBUG set in the environment each failure is also
// printed to stderr, as rdma-core's MLX5_DEBUG_MASK prints its dr_dbg lines.
#ifndef DRSIM_CAPI_ERRORS_H_
#define DRSIM_CAPI_ERRORS_H_

#include <string>

#include "absl/status/status.h"

namespace drsim::capi {

// Records `err` (a positive errno) and `message` for `function`; returns `err`.
int RecordFailure(const char* function, int err, const std::string& message);
// Records the errno of `status` (docs/errors.md) and its message; returns the errno.
int RecordFailure(const char* function, const absl::Status& status);
// Records a failure as RecordFailure does and returns NULL, for the C calls that create an object.
template <typename T>
T* NullWithError(const char* function, int err, const std::string& message) {
  RecordFailure(function, err, message);
  return nullptr;
}
template <typename T>
T* NullWithError(const char* function, const absl::Status& status) {
  RecordFailure(function, status);
  return nullptr;
}
// This thread's last failure message ("" before any).
const char* LastError();

}  // namespace drsim::capi

#endif  // DRSIM_CAPI_ERRORS_H_
