#include "dr/status_errno.h"

#include <cerrno>

namespace drsim::dr {

int ErrnoFromStatus(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return 0;
    case absl::StatusCode::kInvalidArgument:
      return EINVAL;
    case absl::StatusCode::kUnimplemented:
      return EOPNOTSUPP;  // == ENOTSUP on Linux
    case absl::StatusCode::kAlreadyExists:
      return EEXIST;
    case absl::StatusCode::kFailedPrecondition:
      return EBUSY;
    case absl::StatusCode::kResourceExhausted:
      return ENOMEM;
    case absl::StatusCode::kNotFound:
      return ENOENT;
    case absl::StatusCode::kOutOfRange:
      return ERANGE;
    case absl::StatusCode::kPermissionDenied:
      return EPERM;
    default:
      return EIO;
  }
}

}  // namespace drsim::dr
