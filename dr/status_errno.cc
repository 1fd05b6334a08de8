#include "dr/status_errno.h"

#include <cerrno>
#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"

namespace drsim::dr {
namespace {

// The payload StatusFromErrno attaches: the errno in decimal.
constexpr absl::string_view kErrnoPayload = "drsim/errno";

}  // namespace

int ErrnoFromStatus(const absl::Status& status) {
  if (auto payload = status.GetPayload(kErrnoPayload)) {  // absl::optional<absl::Cord>
    int value = 0;
    if (absl::SimpleAtoi(std::string(*payload), &value) && value > 0) return value;
  }
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

absl::Status StatusFromErrno(int errno_value, absl::string_view what) {
  absl::Status status = absl::ErrnoToStatus(errno_value, what);
  status.SetPayload(kErrnoPayload, absl::Cord(std::to_string(errno_value)));
  return status;
}

}  // namespace drsim::dr
