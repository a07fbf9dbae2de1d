// The flat metric list: what `get` lists and what profile.json's "metrics" object holds: every
// row of the metric table (common/profile/metric_table.h), then the per-phase, repeat, latency
// and stage metrics, then any key a file carried that we do not derive.
#ifndef LIBREYOLO_COMMON_ANALYSIS_METRIC_LIST_H_
#define LIBREYOLO_COMMON_ANALYSIS_METRIC_LIST_H_

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/json/json_writer.h"
#include "common/profile/metric_table.h"
#include "common/profile/profile.h"

namespace libreyolo {

struct MetricValue {
  std::string name;
  std::string unit;  // "ms", "img/s", "%", "" ...
  std::optional<double> number;
  std::optional<int64_t> count;  // integers: written as JSON integers
  std::optional<bool> flag;
  std::optional<std::string> text;
  std::optional<std::string> raw_json;  // a value carried through from the file as-is
  bool is_null() const { return !number && !count && !flag && !text && !raw_json; }
};

MetricValue MetricValueFromCell(const MetricDef& def, const MetricCell& c);

// The value as JSON: a string, bool, integer, number, the file's raw JSON, or null.
void WriteMetricValue(JsonWriter& w, const MetricValue& m);
// The same for a table cell (no raw JSON).
void WriteMetricCell(JsonWriter& w, const MetricCell& c);

// Every flat metric of the profile, in a stable order (the Python LibreYOLO's names first).
// Metrics the profile does not have are present with no value (shown as n/a).
std::vector<MetricValue> FlatMetrics(const Profile& p);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_ANALYSIS_METRIC_LIST_H_
