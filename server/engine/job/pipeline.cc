#include "server/engine/job/pipeline.h"

#include <torch/torch.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/analysis/load_shift.h"
#include "common/analysis/repeat_trials.h"
#include "common/analysis/verdict.h"
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
    auto props = CudaDeviceProperties(device.index);
    if (!props.ok()) return props.status();
    p->device = *props;
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
    if (auto s = Finish(device, &t); !s.ok()) return s;
    trials.push_back(std::move(t));
  }
  return trials;
}

absl::StatusOr<JobResult> RunStages(JobKind& kind, const StageContext& ctx) {
  if (auto s = kind.Prepare(ctx); !s.ok()) return s;
  if (auto s = kind.Warmup(ctx); !s.ok()) return s;
  if (auto s = kind.Measure(ctx); !s.ok()) return s;
  const SwitchQuestion question = kind.AskSwitches(ctx);
  auto decision = DecideSwitches(kind.requested(), question);
  if (!decision.ok()) return decision.status();
  if (auto s = kind.Record(ctx, *decision); !s.ok()) return s;
  auto analysed = kind.Analyse(ctx);
  if (!analysed.ok()) return analysed.status();
  Profile p = *std::move(analysed);
  if (auto s = kind.Apply(ctx, *decision, &p); !s.ok()) return s;
  const JobOutputs out = kind.Outputs();
  auto trials = TrialProfiles(kind.device(), out, p);
  if (!trials.ok()) return trials.status();
  if (auto s = Finish(kind.device(), &p); !s.ok()) return s;

  ctx.Report("writing", 0, 1);
  JobResult result;
  result.post_window = out.post_window;
  if (auto w = WriteJobOutputs(p, *out.files, kind.output(), out.window, out.repeat, &result,
                               *trials);
      !w.ok()) {
    return w;
  }
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
  auto probed = ProbeProfilerCost(requested, requested.overhead_budget_pct, q.probe,
                                  RoundsPerProbe(q.job_windows, ProbeCount(requested)));
  if (!probed.ok()) return probed.status();
  d.budget = *std::move(probed);
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
