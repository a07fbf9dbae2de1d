// The measured (unprofiled) headline of a `run`/`infer` job from its trials (`--repeat N`).
//
// Every scalar is the arithmetic mean over trials, with its population standard deviation and n
// in Profile::repeat (docs/metrics.md "Repeat trials"): the Python LibreYOLO's definitions
// (statistics.fmean, pstdev), so its files and ours mean the same. The kernel and operator lists
// stay those of the one profiled window. img_per_s is the mean of the trials' img/s.
#ifndef LIBREYOLO_COMMON_ANALYSIS_REPEAT_TRIALS_H_
#define LIBREYOLO_COMMON_ANALYSIS_REPEAT_TRIALS_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "common/profile/profile.h"

namespace libreyolo {

// One trial's unprofiled measurements.
struct TrialMeasurement {
  double step_ms = 0;                      // mean step (training) / iteration (inference) time
  std::optional<double> dataload_ms;       // training: mean time waiting for the loader
  std::vector<double> latency_samples_ms;  // inference: every timed iteration of the trial
  std::vector<double> cuda_event_ms;       // inference on CUDA: the GPU's time per iteration
  std::optional<Stages> stages;            // inference: the trial's mean stage times
};

// Sets p's measured fields (step_ms, img_per_s, dataload_ms/_frac, the residual host overhead,
// achieved_tflops, latency, stages_ms) from the trials. With two or more trials, p.repeat holds
// mean, population std, n and the per-trial values of each, and the img_per_s_std/_n/_trials keys
// of the Python tool. Needs p.gpu_busy_ms_per_step / flops_per_step from the profiled window first.
void ApplyMeasuredTrials(Profile& p, int64_t batch, const std::vector<TrialMeasurement>& trials);

// The population standard deviation (divide by n); 0 for fewer than two values.
double PopulationStd(const std::vector<double>& values);

// The sample standard deviation (divide by n - 1) of n trials from a stored sd: a population sd
// is scaled by sqrt(n / (n - 1)); a sample sd is returned as is. What a standard error needs.
double SampleSdOf(double sd, int64_t n, bool population);

// The img/s trials' sample sd, from the file's img_per_s_std by its definition (RepeatInfo).
double ImgPerSSampleSd(const Profile& p);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_ANALYSIS_REPEAT_TRIALS_H_
