// `what-if`: the gain to expect from removing a kernel category or some launches, before
// writing the change (docs/metrics.md "what-if").
#ifndef LIBREYOLO_COMMON_ANALYSIS_WHAT_IF_H_
#define LIBREYOLO_COMMON_ANALYSIS_WHAT_IF_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "common/profile/profile.h"

namespace libreyolo {

// `--remove-launches N` and the WhatIf RPC's `remove_launches`: launches per step, the one
// bound for the command line and the daemon alike (NaN and infinities included).
inline constexpr double kMaxRemoveLaunches = 1e9;
absl::Status CheckRemoveLaunches(double launches);

struct WhatIfRequest {
  std::optional<std::string> remove_category;  // substring of a category name
  std::optional<double> remove_launches;       // launches per step
};

struct WhatIfResult {
  // False on a CPU job: nothing is projected (the projection, mechanism and removals are n/a,
  // null in JSON) and `caveat` says why.
  bool applicable = true;
  std::string trace;
  std::string bound;
  std::string mechanism;  // "launch" (GPU utilisation < 0.8) or "gpu"
  std::string removed_category;  // the categories matched, comma separated
  double removed_gpu_ms = 0;     // per step
  double removed_launches = 0;   // per step
  // "counted" (the category's kernels per step), "requested" (--remove-launches), or an
  // estimate where the profile lists no kernels.
  std::string removed_launches_source;
  double per_launch_ms = 0;
  std::string per_launch_source;  // "launch_api" (measured) or "host_overhead" (residual)
  double step_now_ms = 0, step_projected_ms = 0;
  OptDouble img_per_s_now, img_per_s_projected;
  double speedup = 1;
  std::string caveat;
};

// INVALID_ARGUMENT (exit 2) when neither or both options are given, a count is negative, or
// the category matches none of the profile's (the message lists them).
absl::StatusOr<WhatIfResult> WhatIf(const Profile& p, const WhatIfRequest& req);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_ANALYSIS_WHAT_IF_H_
