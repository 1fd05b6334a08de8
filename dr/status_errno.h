// The one mapping between this project's absl::Status codes and rdma-core's errno values
// (docs/errors.md explains each). The C API returns these errnos; C++ callers see the codes.
#ifndef DRSIM_DR_STATUS_ERRNO_H_
#define DRSIM_DR_STATUS_ERRNO_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace drsim::dr {

// 0 for OK; EINVAL, EOPNOTSUPP, EEXIST, EBUSY, ENOMEM, ENOENT, ... for the others (EIO for codes the
// library never returns). A status from StatusFromErrno gives back its errno.
int ErrnoFromStatus(const absl::Status& status);

// The status of a failed system call or stdio write that set `errno_value` (nonzero): absl's code for
// that errno (absl::ErrnoToStatusCode), a message "<what>: <strerror>", and the errno itself, carried
// as a payload, so that ErrnoFromStatus returns it unchanged (ENOSPC stays ENOSPC, not ENOMEM).
absl::Status StatusFromErrno(int errno_value, absl::string_view what);

}  // namespace drsim::dr

#endif  // DRSIM_DR_STATUS_ERRNO_H_
