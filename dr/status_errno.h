// The one mapping between this project's absl::Status codes and rdma-core's errno values
// (docs/errors.md explains each). The C API returns these errnos; C++ callers see the codes.
#ifndef DRSIM_DR_STATUS_ERRNO_H_
#define DRSIM_DR_STATUS_ERRNO_H_

#include "absl/status/status.h"

namespace drsim::dr {

// 0 for OK; EINVAL, EOPNOTSUPP, EEXIST, EBUSY, ENOMEM, ENOENT, ... for the others (EIO for codes the
// library never returns).
int ErrnoFromStatus(const absl::Status& status);

}  // namespace drsim::dr

#endif  // DRSIM_DR_STATUS_ERRNO_H_
