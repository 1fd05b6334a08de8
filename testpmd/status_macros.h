// Early-return helpers for absl::Status / absl::StatusOr inside testpmd/ (the project has no shared ones).
//
//   TESTPMD_RETURN_IF_ERROR(DoThing());              // returns the status when it is not OK
//   TESTPMD_ASSIGN_OR_RETURN(const Token* t, Next()); // declares/assigns the value or returns the status
//
// Each expands to several statements: brace the body of an `if` that uses one.
#ifndef DRSIM_TESTPMD_STATUS_MACROS_H_
#define DRSIM_TESTPMD_STATUS_MACROS_H_

#include <utility>

#define TESTPMD_RETURN_IF_ERROR(expr)                  \
  do {                                                 \
    ::absl::Status testpmd_status_ = (expr);           \
    if (!testpmd_status_.ok()) return testpmd_status_; \
  } while (0)

#define TESTPMD_CONCAT_INNER_(a, b) a##b
#define TESTPMD_CONCAT_(a, b) TESTPMD_CONCAT_INNER_(a, b)
#define TESTPMD_ASSIGN_OR_RETURN(lhs, expr) \
  TESTPMD_ASSIGN_OR_RETURN_IMPL_(TESTPMD_CONCAT_(testpmd_status_or_, __LINE__), lhs, expr)
#define TESTPMD_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                   \
  if (!tmp.ok()) return tmp.status();                  \
  lhs = *std::move(tmp)

#endif  // DRSIM_TESTPMD_STATUS_MACROS_H_
