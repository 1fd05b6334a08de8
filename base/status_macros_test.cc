#include "base/status_macros.h"

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"

namespace {

absl::Status FailWhen(bool fail) { return fail ? absl::InvalidArgumentError("field x") : absl::OkStatus(); }

absl::StatusOr<std::unique_ptr<int>> MakeWhen(bool fail, int v) {
  if (fail) return absl::NotFoundError("no value");
  return std::make_unique<int>(v);
}

absl::Status TwoSteps(bool first_fails, bool second_fails, int* calls) {
  ++*calls;
  DRSIM_RETURN_IF_ERROR(FailWhen(first_fails));
  ++*calls;
  DRSIM_RETURN_IF_ERROR(FailWhen(second_fails));
  ++*calls;
  return absl::OkStatus();
}

absl::StatusOr<int> Sum(bool a_fails, bool b_fails) {
  DRSIM_ASSIGN_OR_RETURN(std::unique_ptr<int> a, MakeWhen(a_fails, 2));  // move-only values
  DRSIM_ASSIGN_OR_RETURN(std::unique_ptr<int> b, MakeWhen(b_fails, 3));  // two in one scope
  return *a + *b;
}

absl::Status AssignExisting(std::string* out) {
  int v = 0;
  DRSIM_ASSIGN_OR_RETURN(v, absl::StatusOr<int>(7));
  *out = std::to_string(v);
  return absl::OkStatus();
}

TEST(StatusMacros, ReturnIfErrorStopsAtTheFirstError) {
  int calls = 0;
  EXPECT_TRUE(TwoSteps(false, false, &calls).ok());
  EXPECT_EQ(calls, 3);
  calls = 0;
  absl::Status s = TwoSteps(false, true, &calls);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "field x");
  EXPECT_EQ(calls, 2);
  calls = 0;
  EXPECT_FALSE(TwoSteps(true, false, &calls).ok());
  EXPECT_EQ(calls, 1);
}

TEST(StatusMacros, AssignOrReturnMovesTheValueOrReturnsTheStatus) {
  EXPECT_EQ(*Sum(false, false), 5);
  EXPECT_EQ(Sum(true, false).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Sum(false, true).status().message(), "no value");
  std::string out;
  ASSERT_TRUE(AssignExisting(&out).ok());
  EXPECT_EQ(out, "7");
}

}  // namespace
