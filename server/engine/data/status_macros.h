// Early-return helpers for absl::Status, in the style of perfetto's status_macros.h. Guarded so
// that another engine part defining the same names does not clash with these.
#ifndef LIBREYOLO_SERVER_ENGINE_DATA_STATUS_MACROS_H_
#define LIBREYOLO_SERVER_ENGINE_DATA_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define LIBREYOLO_DATA_CONCAT_INNER(a, b) a##b
#define LIBREYOLO_DATA_CONCAT(a, b) LIBREYOLO_DATA_CONCAT_INNER(a, b)

#ifndef RETURN_IF_ERROR
#define RETURN_IF_ERROR(expr)                              \
  do {                                                     \
    const ::absl::Status libreyolo_status_ = (expr);       \
    if (!libreyolo_status_.ok()) return libreyolo_status_; \
  } while (false)
#endif

#ifndef ASSIGN_OR_RETURN
#define ASSIGN_OR_RETURN(lhs, expr) \
  LIBREYOLO_DATA_ASSIGN_OR_RETURN_IMPL(LIBREYOLO_DATA_CONCAT(statusor_, __LINE__), lhs, expr)
#define LIBREYOLO_DATA_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                         \
  if (!tmp.ok()) return tmp.status();                        \
  lhs = std::move(*tmp)
#endif

#endif  // LIBREYOLO_SERVER_ENGINE_DATA_STATUS_MACROS_H_
