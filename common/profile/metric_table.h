// The one table of the profile's scalar metrics: each metric's name, where profile.json keeps
// it, its unit and type, when it does not apply, how compare judges it, its label and its
// definition. profile.json (write and read), `get`, `summary --json`, `compare`, the report's
// headline grid and docs/metrics.md's metric table are all driven by it, so a metric is written
// once: a new metric is one row here (metric_table.cc) and one id (metric_id.h); code that
// means one metric names it by its id, never by its string.
#ifndef LIBREYOLO_COMMON_PROFILE_METRIC_TABLE_H_
#define LIBREYOLO_COMMON_PROFILE_METRIC_TABLE_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "common/profile/profile.h"

namespace libreyolo {

enum class MetricKind {
  kNumber,  // a double
  kCount,   // an integer: JSON integers, never 227.0 (the Python tool formats them with :d)
  kFlag,    // true / false
  kText,    // a string
};

// When a metric has no value even though its inputs were recorded.
enum class MetricApplies {
  kAlways,
  kGpu,  // GPU-side: null for a CPU job (IsCpuJob), in every view and in profile.json
};

// How `compare` reads a change (kNone: not compared).
enum class MetricBetter { kNone, kHigher, kLower };

// A value of any kind; at most one member is set. None set: n/a (JSON null).
struct MetricCell {
  std::optional<double> number;
  std::optional<int64_t> count;
  std::optional<bool> flag;
  std::optional<std::string> text;
  static MetricCell Number(std::optional<double> v) {
    MetricCell c;
    c.number = v;
    return c;
  }
  static MetricCell Count(std::optional<int64_t> v) {
    MetricCell c;
    c.count = v;
    return c;
  }
  static MetricCell Flag(std::optional<bool> v) {
    MetricCell c;
    c.flag = v;
    return c;
  }
  static MetricCell Text(std::optional<std::string> v) {
    MetricCell c;
    c.text = std::move(v);
    return c;
  }
  bool is_null() const { return !number && !count && !flag && !text; }
  // number or count as a double (compare, the report's exact value).
  std::optional<double> AsDouble() const;
};

struct MetricDef {
  std::string_view name;    // `get` name and profile.json "metrics" key (the Python tool's)
  std::string_view object;  // profile.json object holding the field: "" (top level), "window"...
  std::string_view field;   // the key in that object; "" = derived, not stored on its own
  std::string_view unit;    // "ms", "img/s", "%", "" (a fraction or a count) ...
  MetricKind kind;
  MetricApplies applies;
  MetricBetter better;
  bool headline;            // in the report's summary grid
  std::string_view label;   // for people: the report, docs
  int precision;            // digits after the point in text views
  std::string_view definition;  // one line; docs/metrics.md's table
  // The value, from the profile (n/a rule not applied: see MetricValueOf).
  MetricCell (*get)(const Profile&);
  // Stores a value read from profile.json (null for derived metrics).
  void (*set)(Profile&, const MetricCell&);
};

// Every scalar metric, in `get`'s order (the Python LibreYOLO's names first).
std::span<const MetricDef> MetricTable();

// The row named `name` (its `get` name), or nullptr.
const MetricDef* FindMetric(std::string_view name);

// The metric's value in `p`, with its n/a rule applied: a GPU metric of a CPU job is null.
MetricCell MetricValueOf(const MetricDef& def, const Profile& p);

// Applies every row's n/a rule to the profile itself (a CPU job's GPU metrics become null), so
// that views that read the struct directly agree with those that read the table. Called by the
// analyser and by the profile.json reader.
void ApplyMetricRules(Profile& p);

// Per-step counts: the Python LibreYOLO's rule, total // steps (a row that occurred at least
// once shows at least 1: `row_min_one`). Steps <= 0 count as 1.
int64_t PerStepCount(int64_t total, int64_t steps, bool row_min_one = false);

// A count the model keeps as a double (a per-step count, or one read from a file that wrote
// 227.0) as the integer every view prints: rounded down, NaN as 0, and saturated at
// +/-9e18, so that a damaged file's 6.7e83 prints as a huge count instead of being undefined
// behaviour (the fuzzer's find). The one conversion: profile.json's writer and reader, the
// metric table and get all use it.
int64_t CountFromDouble(double v);

// docs/metrics.md's generated table (between its metric-table markers).
std::string MetricTableMarkdown();

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_PROFILE_METRIC_TABLE_H_
