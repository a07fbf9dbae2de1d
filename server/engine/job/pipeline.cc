#include "server/engine/job/pipeline.h"

#include <torch/torch.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/analysis/load_shift.h"
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

absl::StatusOr<JobResult> RunStages(JobKind& kind, const StageContext& ctx,
                                    BudgetDecisionCache& decisions) {
  if (auto s = kind.Prepare(ctx); !s.ok()) return s;
  if (auto s = kind.Warmup(ctx); !s.ok()) return s;
  if (auto s = kind.Measure(ctx); !s.ok()) return s;
  const SwitchQuestion question = kind.AskSwitches(ctx);
  auto decision = DecideSwitches(ctx, kind.requested(), question, decisions);
  if (!decision.ok()) return decision.status();
  if (auto s = kind.Record(ctx, *decision); !s.ok()) return s;
  auto analysed = kind.Analyse(ctx);
  if (!analysed.ok()) return analysed.status();
  Profile p = *std::move(analysed);
  if (auto s = kind.Apply(ctx, *decision, &p); !s.ok()) return s;
  if (auto s = Finish(kind.device(), &p); !s.ok()) return s;

  ctx.Report("writing", 0, 1);
  const JobOutputs out = kind.Outputs();
  JobResult result;
  result.post_window = out.post_window;
  if (auto w = WriteJobOutputs(p, *out.files, kind.output(), out.window, out.repeat, &result);
      !w.ok()) {
    return w;
  }
  ctx.Report("writing", 1, 1);
  result.trace_path = out.trace_path;
  result.profile = std::move(p);
  return result;
}

}  // namespace

absl::StatusOr<SwitchDecision> DecideSwitches(const StageContext& ctx,
                                              const ProfilerSwitches& requested,
                                              const SwitchQuestion& q,
                                              BudgetDecisionCache& decisions) {
  SwitchDecision d;
  if (!q.skip_reason.empty()) {
    d.budget = SkipOverheadBudget(requested, q.skip_reason);
    return d;
  }
  if (!requested.probe_overhead) {
    d.budget = SkipOverheadBudget(
        requested, "--no-probe-overhead: not probed (auto switches stay on, the overhead is not "
                   "measured)");
    return d;
  }
  std::string store_note;
  auto applied = ApplyOverheadBudgetCached(decisions, q.key.Build(), requested,
                                           requested.overhead_budget_pct, q.probe, &d.cached,
                                           ProbeRoundLimit(q.job_windows), &store_note);
  if (!applied.ok()) return applied.status();
  d.budget = *std::move(applied);
  d.decided = true;
  if (!store_note.empty()) ctx.Report("probing", 1, 1, store_note);
  return d;
}

void WriteDecisionFields(JsonWriter& w, const SwitchDecision& decision,
                         const ProfilerSwitches& requested) {
  w.Field("probe_overhead", requested.probe_overhead);
  if (decision.decided) WriteSwitchDecision(w, decision.cached);
}

absl::StatusOr<JobResult> RunJobPipeline(JobKind& kind, const ProgressFn& progress,
                                         const CancelToken* cancel,
                                         BudgetDecisionCache& decisions) {
  const StageContext ctx(progress, cancel);
  try {
    auto result = RunStages(kind, ctx, decisions);
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
