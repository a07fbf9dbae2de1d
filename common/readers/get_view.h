// `get`: one metric and nothing else, or the list of metrics.
#ifndef LIBREYOLO_COMMON_READERS_GET_VIEW_H_
#define LIBREYOLO_COMMON_READERS_GET_VIEW_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/analysis/metric_list.h"
#include "common/profile/profile.h"

namespace libreyolo {

struct GetView {
  bool single = false;               // a field was asked for
  std::vector<MetricValue> metrics;  // one when single
};

// NOT_FOUND for an unknown field, with the hint to list the metrics (exit 2).
absl::StatusOr<GetView> BuildGet(const Profile& p, const std::optional<std::string>& field,
                                 const std::string& source);
std::string RenderGetText(const GetView& v);
std::string RenderGetJson(const GetView& v);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_READERS_GET_VIEW_H_
