// The flat metric list: what `get` lists and what profile.json's "metrics" object holds.
#ifndef LIBREYOLO_COMMON_ANALYSIS_METRIC_LIST_H_
#define LIBREYOLO_COMMON_ANALYSIS_METRIC_LIST_H_

#include <optional>
#include <string>
#include <vector>

#include "common/profile/profile.h"

namespace libreyolo {

struct MetricValue {
  std::string name;
  std::string unit;  // "ms", "img/s", "%", "" ...
  std::optional<double> number;
  std::optional<bool> flag;
  std::optional<std::string> text;
  std::optional<std::string> raw_json;  // a value carried through from the file as-is
  bool is_null() const { return !number && !flag && !text && !raw_json; }
};

// Every flat metric of the profile, in a stable order (the Python LibreYOLO's names first).
// Metrics the profile does not have are present with no value (shown as n/a).
std::vector<MetricValue> FlatMetrics(const Profile& p);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_ANALYSIS_METRIC_LIST_H_
