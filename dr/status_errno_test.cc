#include "dr/status_errno.h"

#include <cerrno>

#include "gtest/gtest.h"

namespace drsim::dr {
namespace {

TEST(StatusErrnoTest, MapsTheDocumentedCodes) {
  EXPECT_EQ(ErrnoFromStatus(absl::OkStatus()), 0);
  EXPECT_EQ(ErrnoFromStatus(absl::InvalidArgumentError("x")), EINVAL);
  EXPECT_EQ(ErrnoFromStatus(absl::UnimplementedError("x")), EOPNOTSUPP);
  EXPECT_EQ(ErrnoFromStatus(absl::UnimplementedError("x")), ENOTSUP);
  EXPECT_EQ(ErrnoFromStatus(absl::AlreadyExistsError("x")), EEXIST);
  EXPECT_EQ(ErrnoFromStatus(absl::FailedPreconditionError("x")), EBUSY);
  EXPECT_EQ(ErrnoFromStatus(absl::ResourceExhaustedError("x")), ENOMEM);
  EXPECT_EQ(ErrnoFromStatus(absl::NotFoundError("x")), ENOENT);
  EXPECT_EQ(ErrnoFromStatus(absl::InternalError("x")), EIO);
}

}  // namespace
}  // namespace drsim::dr
