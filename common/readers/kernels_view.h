// `kernels`: individual GPU kernels with filters (category, regex, Tensor Core, phase).
#ifndef LIBREYOLO_COMMON_READERS_KERNELS_VIEW_H_
#define LIBREYOLO_COMMON_READERS_KERNELS_VIEW_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/profile/profile.h"
#include "common/readers/top_rows.h"

namespace libreyolo {

struct KernelsOptions {
  int top = kDefaultTop;  // <= 0: all
  std::optional<std::string> category;  // substring of the category name
  std::optional<std::string> grep;      // ECMAScript regex over raw and friendly names
  bool tensorcore_only = false;
  std::string sort = "time";  // time | count | name
  std::optional<std::string> phase;
};

struct KernelsView {
  std::string source;
  std::optional<std::string> trace;  // the profile's trace path, as recorded (the Python tool's key)
  KernelsOptions options;
  std::vector<KernelRow> rows;  // after filters, sorted, cut to top
  size_t matched = 0;           // rows before the top-N cut
  double matched_ms_per_step = 0;
  bool no_gpu_kernels = false;  // the profile has no kernel at all (not just none matching)
  bool cpu_job = false;
};

// NOT_FOUND for an unknown phase (listing the profile's phases); INVALID_ARGUMENT for a bad
// --sort key or --grep regex. Both are exit 2.
absl::StatusOr<KernelsView> BuildKernels(const Profile& p, const KernelsOptions& o,
                                         const std::string& source);
std::string RenderKernelsText(const KernelsView& v);
std::string RenderKernelsJson(const KernelsView& v);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_READERS_KERNELS_VIEW_H_
