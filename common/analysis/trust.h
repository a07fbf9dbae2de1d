// What a profile can vouch for (issue 40, part B; docs/metrics.md "Trust").
//
// Every analyser prints confident figures from whatever trace it is given. These checks look at
// the trace for the known ways its figures go wrong, each with its evidence in the trace's own
// numbers, and the outcome sets the verdict's confidence:
//   gpu_activity_recorded  GPU launch calls but no kernels: CUPTI did not attach, every GPU-side
//                          figure is unknown (confidence none);
//   timestamps_consistent  a GPU activity that starts before its launch call (same correlation
//                          id) by more than the clock's resolution, or that ends after a
//                          cudaDeviceSynchronize that followed its launch had returned:
//                          timestamps corrupted (pytorch#192021; reduced);
//   kineto_buffers_complete Kineto's own log in the trace says it dropped records or its
//                          activity buffers overflowed (reduced);
//   cuda_graph_kernels     graph launches whose kernels are recorded as one (reduced);
//   load_steady            the profile's own timings disagree (load_shift.h; reduced).
#ifndef LIBREYOLO_COMMON_ANALYSIS_TRUST_H_
#define LIBREYOLO_COMMON_ANALYSIS_TRUST_H_

#include <string>
#include <string_view>
#include <vector>

#include "common/profile/profile.h"
#include "common/trace/trace_data.h"

namespace libreyolo {

inline constexpr char kTrustPassed[] = "passed";
inline constexpr char kTrustFailed[] = "failed";
inline constexpr char kTrustNotApplicable[] = "not applicable";

inline constexpr char kCheckGpuActivity[] = "gpu_activity_recorded";
inline constexpr char kCheckTimestamps[] = "timestamps_consistent";
inline constexpr char kCheckKinetoBuffers[] = "kineto_buffers_complete";
inline constexpr char kCheckCudaGraphs[] = "cuda_graph_kernels";
inline constexpr char kCheckLoadSteady[] = "load_steady";

inline constexpr char kConfidenceHigh[] = "high";
inline constexpr char kConfidenceReduced[] = "reduced";
inline constexpr char kConfidenceNone[] = "none";

// A runtime call that launches GPU work: cudaLaunchKernel & co., graph launches, HIP's
// (a trailing "_v<digits>" is ignored).
bool IsGpuLaunchCall(std::string_view name);
bool IsGraphLaunchCall(std::string_view name);
// The name without a trailing "_v<digits>" (cudaLaunchKernelExC_v11060).
std::string_view StripVersionSuffix(std::string_view name);

// The four checks on the trace itself (all but load_steady), on the whole trace as read, in the
// order above.
std::vector<TrustCheck> RunTraceChecks(const TraceData& trace);

struct TrustAssessment {
  bool checked = false;  // false: the profile carries no trace checks and none apply
  std::string confidence;            // kConfidence*
  std::vector<std::string> reasons;  // one per failed check, why the confidence is not high
  std::vector<TrustCheck> checks;    // p.trust_checks and load_steady
};

// p.trust_checks plus the load check from p's own numbers, and the confidence they give.
TrustAssessment AssessTrust(const Profile& p);

// Why a failed check lowers the confidence, in a few words ("kernel timestamps corrupted").
std::string TrustReason(const TrustCheck& c);

// The check named `name` in p.trust_checks failed.
bool TrustCheckFailed(const Profile& p, std::string_view name);

// One line for people: "high (4 checks passed, 1 not applicable)", "none: ...".
std::string TrustSummary(const TrustAssessment& t);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_ANALYSIS_TRUST_H_
