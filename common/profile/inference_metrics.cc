#include "common/profile/inference_metrics.h"

#include <array>

#include "common/profile/id_table.h"

namespace libreyolo {
namespace {

using Id = InferenceMetricId;
using G = InferenceGroup;

template <double Latency::*M>
std::optional<double> Lat(const Profile& p) {
  return (*p.latency).*M;
}
template <OptDouble Latency::*M>
std::optional<double> LatOpt(const Profile& p) {
  return (*p.latency).*M;
}
template <OptDouble Stages::*M>
std::optional<double> Stage(const Profile& p) {
  return (*p.stages_ms).*M;
}
std::optional<double> ImgPerS(const Profile& p) { return p.img_per_s; }

// One row per metric, with its id.
using Row = IdRow<InferenceMetricId, InferenceMetricDef>;

// clang-format off
constexpr std::array kRows = {
  Row{Id::kLatencyP50Ms,     {"latency_p50_ms",     "ms",    G::kLatency, true,  Lat<&Latency::p50_ms>}},
  Row{Id::kLatencyP90Ms,     {"latency_p90_ms",     "ms",    G::kLatency, true,  Lat<&Latency::p90_ms>}},
  Row{Id::kLatencyP99Ms,     {"latency_p99_ms",     "ms",    G::kLatency, true,  Lat<&Latency::p99_ms>}},
  Row{Id::kLatencyMeanMs,    {"latency_mean_ms",    "ms",    G::kLatency, true,  Lat<&Latency::mean_ms>}},
  Row{Id::kThroughputImgS,   {"throughput_img_s",   "img/s", G::kLatency, true,  ImgPerS}},
  Row{Id::kPreprocessMs,     {"preprocess_ms",      "ms",    G::kStages,  true,  Stage<&Stages::preprocess>}},
  Row{Id::kForwardMs,        {"forward_ms",         "ms",    G::kStages,  true,  Stage<&Stages::forward>}},
  Row{Id::kNmsMs,            {"nms_ms",             "ms",    G::kStages,  true,  Stage<&Stages::postprocess>}},
  Row{Id::kLatencyMinMs,     {"latency_min_ms",     "ms",    G::kLatency, false, Lat<&Latency::min_ms>}},
  Row{Id::kLatencyMaxMs,     {"latency_max_ms",     "ms",    G::kLatency, false, Lat<&Latency::max_ms>}},
  Row{Id::kCudaEventP50Ms,   {"cuda_event_p50_ms",  "ms",    G::kLatency, false, LatOpt<&Latency::cuda_event_p50_ms>}},
  Row{Id::kCudaEventMeanMs,  {"cuda_event_mean_ms", "ms",    G::kLatency, false, LatOpt<&Latency::cuda_event_mean_ms>}},
};
// clang-format on

// The rows at their ids' indices. A row out of InferenceMetricId's order, or an id without a
// row, fails to compile.
static_assert(kRows.size() == kInferenceMetricCount,
              "an InferenceMetricId without a row, or a row without one");
static_assert(RowsInIdOrder(kRows), "the rows must be in InferenceMetricId's order");
constexpr std::array kTable = DefsOf(kRows);

}  // namespace

std::span<const InferenceMetricDef> InferenceMetricTable() { return kTable; }

const InferenceMetricDef& InferenceMetricDefOf(InferenceMetricId id) {
  return kTable[static_cast<size_t>(id)];
}

std::string_view InferenceMetricName(InferenceMetricId id) { return InferenceMetricDefOf(id).name; }

bool InferencePresent(const InferenceMetricDef& def, const Profile& p) {
  return def.group == InferenceGroup::kLatency ? p.latency.has_value() : p.stages_ms.has_value();
}

}  // namespace libreyolo
