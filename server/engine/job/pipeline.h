// The job as a pipeline of named stages (issue 22, section 1). Every kind of job (`profile
// infer`, `profile run`; next a TorchScript training run, a distributed one) runs the same
// stages in the same order, inside one `try`:
//
//   prepare   the device, the data and the model on its device: everything a step needs
//   warmup    steps before anything is measured
//   measure   the unprofiled trials: the numbers users see
//   decide    the profiler switches (overhead_budget.h): the job's flags, else the fixed
//             defaults; then each switch's cost probed within the job's allowance, or nothing
//             probed when nothing is profiled or probing is off; the pipeline's own stage, the
//             kind only says how to probe
//   record    the profiled window under the decided switches (nothing with --no-trace)
//   analyse   the recorded window written and analysed: the profile's base
//   apply     the kind's own facts onto the profile (headline numbers, config, profiler object)
//   write     the pipeline's: tool, device and verdict fields, the load-shift check, then
//             profile.json and its siblings (job_files.h)
//
// A kind is a JobKind holding what its stages pass each other. The pipeline owns what every
// kind shares: the order, the decide and write stages, the error boundary (a LibTorch error
// anywhere is INTERNAL "LibTorch failed: ..."), and what ends every profile. Bounds are the job
// spec's (wire/job_spec/job_spec.h, the one validator): the engine checks none of its own.
#ifndef LIBREYOLO_SERVER_ENGINE_JOB_PIPELINE_H_
#define LIBREYOLO_SERVER_ENGINE_JOB_PIPELINE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/analysis/repeat_trials.h"
#include "common/status/status_macros.h"
#include "server/engine/engine.h"
#include "server/engine/job/job_files.h"
#include "server/engine/job/overhead_budget.h"
#include "server/engine/runtime/runtime_info.h"

namespace libreyolo::engine {

// Progress and cancellation, as every stage sees them.
class StageContext {
 public:
  StageContext(const ProgressFn& progress, const CancelToken* cancel)
      : progress_(progress), cancel_(cancel) {}
  void Report(const std::string& stage, int64_t done, int64_t total,
              const std::string& message = "") const {
    if (progress_) progress_(JobProgress{stage, done, total, message});
  }
  bool Cancelled() const { return cancel_ != nullptr && cancel_->cancelled.load(); }
  const ProgressFn& progress() const { return progress_; }
  const CancelToken* cancel() const { return cancel_; }

 private:
  const ProgressFn& progress_;
  const CancelToken* cancel_;
};

// What the decide stage needs from a kind.
struct SwitchQuestion {
  // Non-empty: nothing is profiled (--no-trace): no probe, the reason recorded.
  std::string skip_reason;
  // One probe round with these switches (kProbePairs profiled windows between unprofiled ones).
  ProbeFn probe;
  // The job's own steps or iterations (measured and recorded): the probes' allowance
  // (RoundsPerProbe).
  int64_t job_windows = 0;
};

// The decide stage's answer.
struct SwitchDecision {
  BudgetOutcome budget;  // the switches (flags, else defaults) and what the probes measured
};

// Where the write stage puts the profile.
struct JobOutputs {
  const JobFiles* files = nullptr;
  const AnalysedTrace* window = nullptr;  // the analysed window (none with --no-trace)
  bool repeat = false;                    // a repeat file beside profile.json (repeat > 1)
  // With the trial layout (JobFiles::trial_layout): the trials' measurements and the images a
  // step counts, from which the write stage makes each trial's own profile.
  const std::vector<TrialMeasurement>* trials = nullptr;
  int64_t trial_batch = 0;
  std::string trace_path;                 // JobResult::trace_path; empty with --no-trace
  PostWindowTimes post_window;
};

class JobKind {
 public:
  virtual ~JobKind() = default;
  // "inference", "training": the subject of a failure ("inference failed: ...").
  virtual const char* what() const = 0;
  // What every failure of the job begins with: "" for a job of its own, "rank 0 of 2: " for a
  // rank of a data-parallel run (a peer's death reaches every rank as a collective's error).
  virtual std::string context() const { return ""; }
  // The job's profiler switches as asked (the decide stage's starting point).
  virtual const ProfilerSwitches& requested() const = 0;
  // The job's device, known once Prepare has run.
  virtual DeviceChoice device() const = 0;
  // The job's output options (paths relative to the project, a report).
  virtual const JobOutputOptions& output() const = 0;

  virtual absl::Status Prepare(const StageContext& ctx) = 0;
  virtual absl::Status Warmup(const StageContext& ctx) = 0;
  virtual absl::Status Measure(const StageContext& ctx) = 0;
  virtual SwitchQuestion AskSwitches(const StageContext& ctx) = 0;
  virtual absl::Status Record(const StageContext& ctx, const SwitchDecision& decision) = 0;
  virtual absl::StatusOr<Profile> Analyse(const StageContext& ctx) = 0;
  virtual absl::Status Apply(const StageContext& ctx, const SwitchDecision& decision,
                             Profile* p) = 0;
  virtual JobOutputs Outputs() const = 0;
};

// What every kind built on a job spec with `model`, `profiler` and `output` (InferJobSpec,
// TrainJobSpec) answers alike; ParseJobDevice sets the device at the start of Prepare.
template <typename Spec>
class JobKindOf : public JobKind {
 public:
  explicit JobKindOf(const Spec& spec) : spec_(spec) {}
  const ProfilerSwitches& requested() const final { return spec_.profiler; }
  DeviceChoice device() const final { return device_; }
  const JobOutputOptions& output() const final { return spec_.output; }

 protected:
  // "cpu" or a CUDA index (runtime_info.h): FAILED_PRECONDITION for a CUDA device that is not
  // there.
  absl::Status ParseJobDevice() {
    ASSIGN_OR_RETURN(auto device, ParseDevice(spec_.model.device));
    device_ = device;
    return absl::OkStatus();
  }

  const Spec& spec_;
  DeviceChoice device_;
};

// The decide stage on its own: the switches are ResolveSwitches(requested) whatever happens;
// nothing is probed (SkipProbe) when `q.skip_reason` is set or `requested.probe_overhead` is
// off; otherwise ProbeProfilerCost measures them, RoundsPerProbe(q.job_windows, ProbeCount)
// rounds a probe.
absl::StatusOr<SwitchDecision> DecideSwitches(const ProfilerSwitches& requested,
                                              const SwitchQuestion& q);

// The profile's record of the decide stage: `probe_overhead` (as asked).
void WriteDecisionFields(JsonWriter& w, const SwitchDecision& decision,
                         const ProfilerSwitches& requested);

// Runs `kind`'s stages in order and returns what was written. The first stage error is the
// job's; a LibTorch error (c10::Error) anywhere is INTERNAL "LibTorch failed: ...", any other
// exception INTERNAL "<what> failed: ...".
absl::StatusOr<JobResult> RunJobPipeline(JobKind& kind, const ProgressFn& progress,
                                         const CancelToken* cancel);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_JOB_PIPELINE_H_
