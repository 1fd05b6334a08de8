#include "dr/status_errno.h"

#include <cerrno>

#include "absl/strings/match.h"
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

TEST(StatusErrnoTest, StatusFromErrnoKeepsTheErrno) {
  for (int e : {ENOSPC, EBADF, EPIPE, EIO, EINVAL, ENOMEM}) {
    absl::Status s = StatusFromErrno(e, "writing the dump");
    EXPECT_EQ(s.code(), absl::ErrnoToStatusCode(e)) << e;
    EXPECT_EQ(ErrnoFromStatus(s), e) << s;
    EXPECT_TRUE(absl::StartsWith(s.message(), "writing the dump: ")) << s;
  }
  // absl's code for ENOSPC is kResourceExhausted, which alone would map to ENOMEM.
  EXPECT_EQ(StatusFromErrno(ENOSPC, "x").code(), absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace drsim::dr
