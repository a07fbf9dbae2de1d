// Ids for the rows of the metric table (common/profile/metric_table.cc), in its order: code
// that means one metric names it as MetricId::kImgPerS, never as the string "img_per_s", so a
// misspelt metric fails to compile. metric_table.cc checks at compile time that its rows and
// these ids match one to one and in order: a new metric is a row there and an id here.
#ifndef LIBREYOLO_COMMON_PROFILE_METRIC_ID_H_
#define LIBREYOLO_COMMON_PROFILE_METRIC_ID_H_

#include <cstddef>
#include <string_view>

namespace libreyolo {

struct MetricDef;  // common/profile/metric_table.h

enum class MetricId {
  kImgPerS,
  kStepMs,
  kProfiledStepMs,
  kDataloadMs,
  kDataloadFrac,
  kGpuUtil,
  kGpuUtilRaw,
  kGpuBusyMs,
  kGpuIdleMs,
  kGpuKernelMs,
  kGpuActiveMs,
  kCommMs,
  kCommExposedMs,
  kCommOverlapPct,
  kMeanKernelUs,
  kKernelsPerStep,
  kUniqueKernels,
  kOpsPerStep,
  kMemcpyMs,
  kTensorcorePct,
  kPeakVramMb,
  kPeakReservedMb,
  kPeakCpuAllocMb,
  kHostOverheadMs,
  kHostOverheadMethod,
  kHostOverheadResidualMs,
  kLaunchApiMs,
  kHostApiMs,
  kGpuWaitHostMs,
  kLaunchesPerStep,
  kLaunchesSource,
  kCudaMallocsPerStep,
  kMemoryPressure,
  kGpuAttribution,
  kBound,
  kFlopsPerStep,
  kAchievedTflops,
  kSelfCpuTotalMs,
  kSelfDeviceTotalMs,
  kRealSteps,
  kUnattributedKernels,
  kWindowWallMs,
};

inline constexpr size_t kMetricCount = static_cast<size_t>(MetricId::kWindowWallMs) + 1;

// The table's row for `id`.
const MetricDef& MetricDefOf(MetricId id);

// Its `get` name: the profile.json "metrics" key and a repeat's stats key ("img_per_s").
std::string_view MetricName(MetricId id);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_PROFILE_METRIC_ID_H_
