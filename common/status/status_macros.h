// Early-return helpers for absl::Status and absl::StatusOr, the one copy for the project.
//
//   RETURN_IF_ERROR(expr);           // returns the status of `expr` when it is not OK
//   ASSIGN_OR_RETURN(lhs, expr);     // `lhs = std::move(*expr)`, or returns its status
//
// `expr` is evaluated once. ASSIGN_OR_RETURN declares a temporary named after the line, so use
// it once a line; `lhs` may be a declaration (`ASSIGN_OR_RETURN(auto x, F())`). Not guarded by
// #ifndef on purpose: a second definition elsewhere is a compile error, not a silent swap.
#ifndef LIBREYOLO_COMMON_STATUS_STATUS_MACROS_H_
#define LIBREYOLO_COMMON_STATUS_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define LIBREYOLO_STATUS_CONCAT_INNER(a, b) a##b
#define LIBREYOLO_STATUS_CONCAT(a, b) LIBREYOLO_STATUS_CONCAT_INNER(a, b)

#define RETURN_IF_ERROR(expr)                                            \
  do {                                                                   \
    const ::absl::Status libreyolo_status_macro_status_ = (expr);        \
    if (!libreyolo_status_macro_status_.ok()) {                          \
      return libreyolo_status_macro_status_;                             \
    }                                                                    \
  } while (false)

#define ASSIGN_OR_RETURN(lhs, expr) \
  LIBREYOLO_ASSIGN_OR_RETURN_IMPL(LIBREYOLO_STATUS_CONCAT(libreyolo_statusor_, __LINE__), lhs, expr)

#define LIBREYOLO_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                    \
  if (!tmp.ok()) return std::move(tmp).status();        \
  lhs = std::move(*tmp)

#endif  // LIBREYOLO_COMMON_STATUS_STATUS_MACROS_H_
