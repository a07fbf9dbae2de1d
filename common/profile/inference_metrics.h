// The inference profile's scalars that live outside the metric table (metric_table.h): the
// latency percentiles, the throughput and the stage times that `get` lists after the table's
// rows, and the latency fields a repeat profile aggregates over its trials. One row each: its
// `get` name (and the key of its stats in a repeat profile's aggregation.metrics), its unit and
// how to read it from a Profile. Code that means one of them names it by its id
// (InferenceMetricId::kLatencyP50Ms), never by its string, so a typo fails to compile;
// inference_metrics.cc checks at compile time that the rows and the ids match one to one and in
// order. They are not MetricDef rows: profile.json keeps them in its "latency" and "stages_ms"
// objects (their own field names, profile_json_read.cc), `get` lists them only when the profile
// has those objects, and compare judges them on its own terms (compare.cc).
#ifndef LIBREYOLO_COMMON_PROFILE_INFERENCE_METRICS_H_
#define LIBREYOLO_COMMON_PROFILE_INFERENCE_METRICS_H_

#include <cstddef>
#include <optional>
#include <span>
#include <string_view>

#include "common/profile/profile.h"

namespace libreyolo {

// In `get`'s order (the listed rows), then those that are only a repeat's stats keys.
enum class InferenceMetricId {
  kLatencyP50Ms,
  kLatencyP90Ms,
  kLatencyP99Ms,
  kLatencyMeanMs,
  kThroughputImgS,
  kPreprocessMs,
  kForwardMs,
  kNmsMs,
  kLatencyMinMs,
  kLatencyMaxMs,
  kCudaEventP50Ms,
  kCudaEventMeanMs,
};

inline constexpr size_t kInferenceMetricCount =
    static_cast<size_t>(InferenceMetricId::kCudaEventMeanMs) + 1;

// Which profile object a row belongs to: it exists only when the profile has that object.
enum class InferenceGroup {
  kLatency,  // Profile::latency
  kStages,   // Profile::stages_ms
};

struct InferenceMetricDef {
  std::string_view name;  // `get` name and a repeat's aggregation.metrics key
  std::string_view unit;  // "ms", "img/s"
  InferenceGroup group;
  bool listed;  // `get` lists it (false: only a repeat's stats key, listed as <name>_std)
  // The value; called only when the row's group is present in the profile (InferencePresent).
  std::optional<double> (*get)(const Profile&);
};

// Every row, in InferenceMetricId's order.
std::span<const InferenceMetricDef> InferenceMetricTable();

// The row for `id`, and its name.
const InferenceMetricDef& InferenceMetricDefOf(InferenceMetricId id);
std::string_view InferenceMetricName(InferenceMetricId id);

// Whether the profile has the row's object (its latency or its stage times).
bool InferencePresent(const InferenceMetricDef& def, const Profile& p);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_PROFILE_INFERENCE_METRICS_H_
