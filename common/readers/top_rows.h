// `--top N` of `kernels` and `ops`, and the Kernels/Ops RPCs' `top`: the first N rows, 0 = all.
// The one bound, checked the same way locally and by the daemon (issue 22: `--top -3` showed
// every row locally while the daemon refused it).
#ifndef LIBREYOLO_COMMON_READERS_TOP_ROWS_H_
#define LIBREYOLO_COMMON_READERS_TOP_ROWS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace libreyolo {

inline constexpr int64_t kDefaultTop = 20;
inline constexpr int32_t kMaxTop = 100000;

// INVALID_ARGUMENT "top: -3 is outside 0..100000 (0 = all rows)" outside the bound.
inline absl::Status CheckTop(int64_t top) {
  if (top >= 0 && top <= kMaxTop) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("top: ", top, " is outside 0..", kMaxTop, " (0 = all rows)"));
}

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_READERS_TOP_ROWS_H_
