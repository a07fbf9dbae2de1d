// The measured (unprofiled) headline of a `run`/`infer` job from its trials (`--repeat N`).
//
// Every scalar is the mean over trials, with its sample standard deviation and n in
// Profile::repeat (docs/metrics.md "Repeat trials"); the kernel and operator lists stay those of
// the one profiled window. Throughput is total images over total time, so that img_per_s is
// always batch × 1000 / step_ms: the two numbers never disagree.
#ifndef LIBREYOLO_COMMON_ANALYSIS_REPEAT_TRIALS_H_
#define LIBREYOLO_COMMON_ANALYSIS_REPEAT_TRIALS_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "common/profile/profile.h"

namespace libreyolo {

// One trial's unprofiled measurements.
struct TrialMeasurement {
  double step_ms = 0;                     // mean step (training) / iteration (inference) time
  std::optional<double> dataload_ms;      // training: mean time waiting for the loader
  std::vector<double> latency_samples_ms; // inference: every timed iteration of the trial
  std::vector<double> cuda_event_ms;      // inference on CUDA: the GPU's time per iteration
  std::optional<Stages> stages;           // inference: the trial's mean stage times
};

// Sets p's measured fields (step_ms, img_per_s, dataload_ms/_frac, the residual host overhead,
// achieved_tflops, latency, stages_ms) from the trials. With two or more trials, p.repeat holds
// mean, sample std, n and the per-trial values of each, and the img_per_s_std/_n/_trials keys of
// the Python tool. Needs p.gpu_busy_ms_per_step / flops_per_step from the profiled window first.
void ApplyMeasuredTrials(Profile& p, int64_t batch, const std::vector<TrialMeasurement>& trials);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_ANALYSIS_REPEAT_TRIALS_H_
