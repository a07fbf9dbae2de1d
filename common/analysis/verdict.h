// The bottleneck verdict (`bound`) and its reason (`bound_why`), docs/metrics.md "Verdicts".
#ifndef LIBREYOLO_COMMON_ANALYSIS_VERDICT_H_
#define LIBREYOLO_COMMON_ANALYSIS_VERDICT_H_

#include <string>

#include "common/profile/profile.h"

namespace libreyolo {

inline constexpr char kBoundMemoryPressure[] = "memory-pressure";
inline constexpr char kBoundDataloader[] = "dataloader";
inline constexpr char kBoundCompute[] = "compute";
inline constexpr char kBoundHost[] = "host / launch";
// A distributed rank whose exposed communication is at least 10 % of the step and no less than
// its host overhead (docs/metrics.md "Verdicts").
inline constexpr char kBoundCommunication[] = "communication";
inline constexpr char kBoundNms[] = "nms / postprocess";
inline constexpr char kBoundPreprocess[] = "preprocess";
// The trace cannot say: GPU launch calls and no kernels (CUPTI did not attach), trust.h.
inline constexpr char kBoundUnknown[] = "unknown";

struct Verdict {
  std::string bound;
  std::string why;  // quotes the deciding numbers and names the levers to try
};

// Uses the profile's metrics (step_ms, gpu_util, dataload_frac, memory_pressure, stages_ms, ...)
// and its trust checks (trust.h): a verdict that rests on GPU figures a failed check questions
// says so; with no kernels recorded behind GPU launches it is kBoundUnknown.
Verdict ComputeVerdict(const Profile& p);

// Memory pressure: cudaMalloc/cudaFree per step >= 5 or gpu_util_raw > 1.05.
bool IsMemoryPressure(double mallocs_per_step, double gpu_util_raw);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_ANALYSIS_VERDICT_H_
