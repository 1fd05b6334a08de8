// Early returns for absl::Status and absl::StatusOr, shared by every package.
//
// What
//   DRSIM_RETURN_IF_ERROR(expr) evaluates an absl::Status expression and returns it from the enclosing
//   function when it is not OK.
//   DRSIM_ASSIGN_OR_RETURN(lhs, expr) evaluates an absl::StatusOr expression; when it holds a value the value
//   is moved into lhs (a declaration or an existing variable), otherwise its status is returned.
//
// How
//   Each macro expands to statements that use a uniquely named temporary, so several may share a scope.
//   DRSIM_ASSIGN_OR_RETURN expands to more than one statement: brace the body of an `if` that uses it.
//   The enclosing function returns absl::Status or any absl::StatusOr<T>; both convert from a Status.
#ifndef DRSIM_BASE_STATUS_MACROS_H_
#define DRSIM_BASE_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define DRSIM_RETURN_IF_ERROR(expr)                                          \
  do {                                                                       \
    ::absl::Status drsim_status_macro_status_ = (expr);                      \
    if (!drsim_status_macro_status_.ok()) return drsim_status_macro_status_; \
  } while (0)

#define DRSIM_STATUS_MACRO_CONCAT_INNER_(a, b) a##b
#define DRSIM_STATUS_MACRO_CONCAT_(a, b) DRSIM_STATUS_MACRO_CONCAT_INNER_(a, b)

#define DRSIM_ASSIGN_OR_RETURN(lhs, expr) \
  DRSIM_ASSIGN_OR_RETURN_IMPL_(DRSIM_STATUS_MACRO_CONCAT_(drsim_status_or_, __LINE__), lhs, expr)

#define DRSIM_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                 \
  if (!statusor.ok()) return statusor.status();           \
  lhs = *std::move(statusor)

#endif  // DRSIM_BASE_STATUS_MACROS_H_
