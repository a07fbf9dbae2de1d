#include "common/analysis/repeat_trials.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "common/analysis/latency_stats.h"
#include "common/profile/inference_metrics.h"
#include "common/profile/metric_id.h"
#include "common/profile/metric_table.h"

namespace libreyolo {
namespace {

double Mean(const std::vector<double>& v) {
  return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

}  // namespace

double PopulationStd(const std::vector<double>& v) {
  if (v.size() < 2) return 0.0;
  const double m = Mean(v);
  double ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  return std::sqrt(ss / static_cast<double>(v.size()));
}

double SampleSdOf(double sd, int64_t n, bool population) {
  if (!population || n < 2) return sd;
  return sd * std::sqrt(static_cast<double>(n) / static_cast<double>(n - 1));
}

double ImgPerSSampleSd(const Profile& p) {
  return SampleSdOf(p.repeat.img_per_s_std.value_or(0), p.repeat.img_per_s_n.value_or(1),
                    p.repeat.population_std);
}

namespace {

// Records a metric over the trials under its `get` name and returns the mean (the repeat's
// stats get its spread): ApplyMeasuredTrials' `record`.
using RecordFn = std::function<double(const std::string& name,
                                      const std::function<double(const TrialMeasurement&)>& of)>;

// An inference job's latency percentiles and stage times, each the mean over the trials; the
// samples of every trial are kept one trial after another.
void ApplyTrialLatencyAndStages(Profile& p, const std::vector<TrialMeasurement>& trials,
                                const RecordFn& record) {
  // An inference scalar's key in the repeat's stats: its `get` name (inference_metrics.h).
  auto ikey = [](InferenceMetricId id) { return std::string(InferenceMetricName(id)); };
  if (!trials.front().latency_samples_ms.empty()) {
    std::vector<LatencyStats> per_trial;
    for (const TrialMeasurement& t : trials) {
      per_trial.push_back(ComputeLatencyStats(t.latency_samples_ms));
    }
    size_t i = 0;
    auto lat = [&](InferenceMetricId id, double LatencyStats::*field) {
      i = 0;
      return record(ikey(id), [&](const TrialMeasurement&) { return per_trial[i++].*field; });
    };
    Latency l;
    l.p50_ms = lat(InferenceMetricId::kLatencyP50Ms, &LatencyStats::p50_ms);
    l.p90_ms = lat(InferenceMetricId::kLatencyP90Ms, &LatencyStats::p90_ms);
    l.p99_ms = lat(InferenceMetricId::kLatencyP99Ms, &LatencyStats::p99_ms);
    l.mean_ms = lat(InferenceMetricId::kLatencyMeanMs, &LatencyStats::mean_ms);
    l.min_ms = lat(InferenceMetricId::kLatencyMinMs, &LatencyStats::min_ms);
    l.max_ms = lat(InferenceMetricId::kLatencyMaxMs, &LatencyStats::max_ms);
    for (const TrialMeasurement& t : trials) {
      l.samples_ms.insert(l.samples_ms.end(), t.latency_samples_ms.begin(),
                          t.latency_samples_ms.end());
    }
    l.n = static_cast<int64_t>(l.samples_ms.size());
    if (!trials.front().cuda_event_ms.empty()) {
      std::vector<LatencyStats> gpu;
      for (const TrialMeasurement& t : trials) gpu.push_back(ComputeLatencyStats(t.cuda_event_ms));
      size_t j = 0;
      l.cuda_event_p50_ms = record(ikey(InferenceMetricId::kCudaEventP50Ms),
                                   [&](const TrialMeasurement&) { return gpu[j++].p50_ms; });
      j = 0;
      l.cuda_event_mean_ms = record(ikey(InferenceMetricId::kCudaEventMeanMs),
                                    [&](const TrialMeasurement&) { return gpu[j++].mean_ms; });
    }
    p.latency = l;
  }
  if (trials.front().stages.has_value()) {
    auto stage = [&](InferenceMetricId id, OptDouble Stages::*field) -> OptDouble {
      if (!((*trials.front().stages).*field).has_value()) return std::nullopt;
      return record(ikey(id), [&](const TrialMeasurement& t) {
        return t.stages ? ((*t.stages).*field).value_or(0.0) : 0.0;
      });
    };
    p.stages_ms = Stages{stage(InferenceMetricId::kPreprocessMs, &Stages::preprocess),
                         stage(InferenceMetricId::kForwardMs, &Stages::forward),
                         stage(InferenceMetricId::kNmsMs, &Stages::postprocess)};
  }
}

}  // namespace

void ApplyMeasuredTrials(Profile& p, int64_t batch, const std::vector<TrialMeasurement>& trials) {
  if (trials.empty()) return;
  const bool repeat = trials.size() >= 2;
  const double b = static_cast<double>(batch);
  p.repeat = RepeatInfo{};
  // A table metric's key in the repeat's stats: its `get` name.
  auto key = [](MetricId id) { return std::string(MetricName(id)); };
  auto stat_of = [&](MetricId id) -> TrialStat& { return p.repeat.metrics[key(id)]; };
  // Records metric `name` (a `get` name) over the trials and returns its mean.
  auto record = [&](const std::string& name,
                    const std::function<double(const TrialMeasurement&)>& of) {
    std::vector<double> v;
    v.reserve(trials.size());
    for (const TrialMeasurement& t : trials) v.push_back(of(t));
    const double mean = Mean(v);
    if (repeat) {
      p.repeat.metrics[name] =
          TrialStat{mean, PopulationStd(v), static_cast<int64_t>(v.size()), std::move(v)};
    }
    return mean;
  };

  const double step =
      record(key(MetricId::kStepMs), [](const TrialMeasurement& t) { return t.step_ms; });
  p.step_ms = step;
  // The arithmetic mean of the trials' img/s and its population standard deviation, as the
  // Python LibreYOLO defines them (statistics.fmean, pstdev). One trial: batch × 1000 / step.
  std::vector<double> trial_img_per_s;
  for (const TrialMeasurement& t : trials) trial_img_per_s.push_back(b * 1000.0 / t.step_ms);
  p.img_per_s = Mean(trial_img_per_s);
  if (repeat) {
    p.repeat.population_std = true;
    p.repeat.img_per_s_n = static_cast<int64_t>(trials.size());
    p.repeat.img_per_s_std = PopulationStd(trial_img_per_s);
    p.repeat.img_per_s_trials = trial_img_per_s;
    stat_of(MetricId::kImgPerS) =
        TrialStat{*p.img_per_s, *p.repeat.img_per_s_std, *p.repeat.img_per_s_n, trial_img_per_s};
  }

  const double busy = p.gpu_busy_ms_per_step.value_or(0.0);
  const bool training = trials.front().dataload_ms.has_value();
  double dataload = 0;
  if (training) {
    dataload = record(key(MetricId::kDataloadMs),
                      [](const TrialMeasurement& t) { return *t.dataload_ms; });
    p.dataload_ms = dataload;
    p.dataload_frac = dataload / step;
    if (repeat) {
      record(key(MetricId::kDataloadFrac),
             [](const TrialMeasurement& t) { return *t.dataload_ms / t.step_ms; });
      stat_of(MetricId::kDataloadFrac).mean = *p.dataload_frac;  // ratio of the means
    }
  }
  // The residual uses the same (unprofiled) step as the headline; gpu_busy is the profiled
  // window's, the only place kernels were seen.
  p.host_overhead_residual_ms_per_step =
      record(key(MetricId::kHostOverheadResidualMs), [&](const TrialMeasurement& t) {
        return std::max(t.step_ms - busy - t.dataload_ms.value_or(0.0), 0.0);
      });
  if (p.host_overhead_method.value_or("residual") == "residual") {
    p.host_overhead_ms_per_step = p.host_overhead_residual_ms_per_step;
    if (repeat)
      stat_of(MetricId::kHostOverheadMs) = stat_of(MetricId::kHostOverheadResidualMs);
  }
  if (p.flops_per_step.has_value()) {
    const double flops = *p.flops_per_step;
    record(key(MetricId::kAchievedTflops),
           [&](const TrialMeasurement& t) { return flops / (t.step_ms / 1000.0) / 1e12; });
    p.achieved_tflops = flops / (step / 1000.0) / 1e12;
    if (repeat) stat_of(MetricId::kAchievedTflops).mean = *p.achieved_tflops;
  }

  ApplyTrialLatencyAndStages(p, trials, record);
  ApplyMetricRules(p);  // a CPU job's host overhead is n/a, not the whole step
}

}  // namespace libreyolo
