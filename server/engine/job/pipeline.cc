#include "server/engine/job/pipeline.h"

#include <torch/torch.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/analysis/load_shift.h"
#include "common/analysis/repeat_trials.h"
#include "common/analysis/verdict.h"
#include "common/status/status_macros.h"
#include "server/engine/runtime/cuda_runtime.h"

namespace libreyolo::engine {
namespace {

// What ends every profile, whatever its kind: who wrote it and with what, on which device, the
// verdict over the final numbers, and (last) timings that cannot all be true (load_shift.h).
absl::Status Finish(const DeviceChoice& device, Profile* p) {
  p->source_kind = "profile";  // what a reader of the written file will see
  p->tool_name = "libreyolo-profiler";
  p->tool_version = LIBREYOLO_VERSION;
  p->libtorch_version = LibTorchVersion();
  p->created_at = absl::FormatTime(absl::RFC3339_sec, absl::Now(), absl::UTCTimeZone());
  if (device.cuda) {
    ASSIGN_OR_RETURN(auto props, CudaDeviceProperties(device.index));
    p->device = props;
  } else {
    DeviceInfo d;
    d.type = "cpu";
    d.name = device.Label();
    p->device = d;
  }
  const Verdict v = ComputeVerdict(*p);
  p->bound = v.bound;
  p->bound_why = v.why;
  RecordLoadShift(p);
  return absl::OkStatus();
}

// With the trial layout, each trial's own profile (the Python tool's <kind>_<T>/profile.json):
// the applied profile `applied` (before Finish) with that trial's measurements alone, then
// finished (its own verdict). Empty otherwise.
absl::StatusOr<std::vector<Profile>> TrialProfiles(const DeviceChoice& device,
                                                   const JobOutputs& out, const Profile& applied) {
  std::vector<Profile> trials;
  if (!out.repeat || out.trials == nullptr || !out.files->trial_layout()) return trials;
  for (const TrialMeasurement& m : *out.trials) {
    Profile t = applied;
    t.repeat = RepeatInfo{};
    ApplyMeasuredTrials(t, out.trial_batch, {m});
    RETURN_IF_ERROR(Finish(device, &t));
    trials.push_back(std::move(t));
  }
  return trials;
}

absl::StatusOr<JobResult> RunStages(JobKind& kind, const StageContext& ctx) {
  RETURN_IF_ERROR(kind.Prepare(ctx));
  RETURN_IF_ERROR(kind.Warmup(ctx));
  RETURN_IF_ERROR(kind.Measure(ctx));
  const SwitchQuestion question = kind.AskSwitches(ctx);
  ASSIGN_OR_RETURN(auto decision, DecideSwitches(kind.requested(), question));
  RETURN_IF_ERROR(kind.Record(ctx, decision));
  ASSIGN_OR_RETURN(auto analysed, kind.Analyse(ctx));
  Profile p = std::move(analysed);
  RETURN_IF_ERROR(kind.Apply(ctx, decision, &p));
  const JobOutputs out = kind.Outputs();
  ASSIGN_OR_RETURN(auto trials, TrialProfiles(kind.device(), out, p));
  RETURN_IF_ERROR(Finish(kind.device(), &p));

  ctx.Report("writing", 0, 1);
  JobResult result;
  result.post_window = out.post_window;
  RETURN_IF_ERROR(
      WriteJobOutputs(p, *out.files, kind.output(), out.window, out.repeat, &result, trials));
  ctx.Report("writing", 1, 1);
  result.trace_path = out.trace_path;
  result.profile = std::move(p);
  return result;
}

}  // namespace

absl::StatusOr<SwitchDecision> DecideSwitches(const ProfilerSwitches& requested,
                                              const SwitchQuestion& q) {
  SwitchDecision d;
  if (!q.skip_reason.empty()) {
    d.budget = SkipProbe(requested, q.skip_reason);
    return d;
  }
  if (!requested.probe_overhead) {
    d.budget = SkipProbe(requested,
                         "--no-probe-overhead: not probed (the switches are as given or their "
                         "defaults; the overhead and their costs are not measured)");
    return d;
  }
  ASSIGN_OR_RETURN(auto probed,
                   ProbeProfilerCost(requested, requested.overhead_budget_pct, q.probe,
                                     RoundsPerProbe(q.job_windows, ProbeCount(requested))));
  d.budget = std::move(probed);
  return d;
}

void WriteDecisionFields(JsonWriter& w, const SwitchDecision&, const ProfilerSwitches& requested) {
  w.Field("probe_overhead", requested.probe_overhead);
}

absl::StatusOr<JobResult> RunJobPipeline(JobKind& kind, const ProgressFn& progress,
                                         const CancelToken* cancel) {
  const StageContext ctx(progress, cancel);
  try {
    auto result = RunStages(kind, ctx);
    if (result.ok() || kind.context().empty()) return result;
    return absl::Status(result.status().code(),
                        absl::StrCat(kind.context(), result.status().message()));
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat(kind.context(), "LibTorch failed: ", e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(kind.context(), kind.what(), " failed: ", e.what()));
  }
}

}  // namespace libreyolo::engine
