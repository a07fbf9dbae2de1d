#include "common/readers/phases_view.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/json/json_writer.h"
#include "common/render/text_table.h"

namespace libreyolo {

PhasesView BuildPhases(const Profile& p, const std::string& source) {
  PhasesView v;
  v.source = source;
  v.trace = p.trace;
  v.step_ms = p.step_ms;
  v.step_timing = StepTimingOf(p);
  v.step_unprofiled = v.step_timing == StepTiming::kUnprofiled;
  v.profiled_step_ms = ProfiledStepMs(p);
  // A trace's step is its window's.
  if (!v.profiled_step_ms && v.step_timing == StepTiming::kProfiledWindow) {
    v.profiled_step_ms = p.step_ms;
  }
  v.cpu_job = IsCpuJob(p);
  if (v.profiled_step_ms.has_value()) {
    double wall = 0;
    for (const PhaseRow& r : p.phases) wall += r.wall_ms_per_step.value_or(0);
    const double rest = *v.profiled_step_ms - wall;
    // Rounding of per-step values in a file: a hair below zero is zero.
    if (rest >= -1e-6 * *v.profiled_step_ms) {
      v.rest_of_step_ms = std::max(rest, 0.0);
    } else {
      v.phases_overlap = true;
    }
  }
  v.gpu_kernel_ms_per_step = p.gpu_kernel_ms_per_step;
  v.phases = p.phases;
  if (p.gpu_kernel_ms_per_step.has_value()) {
    double attributed = 0;
    for (const PhaseRow& r : p.phases) attributed += r.gpu_ms_per_step;
    v.unattributed_gpu_ms_per_step = std::max(*p.gpu_kernel_ms_per_step - attributed, 0.0);
  }
  return v;
}

std::string RenderPhasesText(const PhasesView& v) {
  if (v.phases.empty()) {
    return absl::StrCat("no phases in ", v.source,
                        ": the trace has no step/<phase>, ## forward ## or Optimizer.step "
                        "ranges. Wrap the loop's parts in torch.profiler.record_function(...).\n");
  }
  std::string head;
  if (v.profiled_step_ms.has_value()) {
    head = absl::StrCat("profiled step ", FmtUnit(v.profiled_step_ms, "ms"),
                        " (window / steps: the phases below were measured in it)");
    if (v.step_unprofiled && v.step_ms.has_value()) {
      absl::StrAppend(&head, "; step measured without the profiler ", FmtUnit(v.step_ms, "ms"));
    }
  } else {
    head = absl::StrCat("step ", FmtUnit(v.step_ms, "ms"),
                        v.step_unprofiled ? " (measured without the profiler; the profile has no "
                                            "window to measure the phases' step)"
                                          : "");
  }
  if (v.cpu_job) {
    // A CPU job: no GPU columns; the CPU time the phase's operators took instead.
    TextTable t({{"phase", TextTable::Align::kLeft}, {"CPU ms/step"}, {"wall ms/step"},
                 {"ops/step"}});
    for (const PhaseRow& r : v.phases) {
      t.AddRow({r.phase, Fmt(r.cpu_ms_per_step, 3), Fmt(r.wall_ms_per_step, 3),
                Fmt(r.ops_per_step, 1)});
    }
    if (v.rest_of_step_ms) t.AddRow({"(rest of step)", "", Fmt(v.rest_of_step_ms, 3), ""});
    std::string out = absl::StrCat(head, "; cpu job: CPU time per phase (self time of its ops)\n",
                                   t.Render());
    if (v.phases_overlap) out += "note: the phases overlap in time; their wall times add up to "
                                 "more than the step.\n";
    return out;
  }
  TextTable t({{"phase", TextTable::Align::kLeft}, {"GPU ms/step"}, {"wall ms/step"},
               {"kernels/step"}, {"ops/step"}, {"unique kernels"}});
  for (const PhaseRow& r : v.phases) {
    t.AddRow({r.phase, Fmt(r.gpu_ms_per_step, 3), Fmt(r.wall_ms_per_step, 3),
              Fmt(r.kernels_per_step, 1), Fmt(r.ops_per_step, 1),
              absl::StrCat(r.unique_kernels)});
  }
  if (v.unattributed_gpu_ms_per_step.value_or(0) > 0) {
    t.AddRow({"(unattributed)", Fmt(v.unattributed_gpu_ms_per_step, 3), "", "", "", ""});
  }
  if (v.rest_of_step_ms) t.AddRow({"(rest of step)", "", Fmt(v.rest_of_step_ms, 3), "", "", ""});
  std::string out = absl::StrCat(head, ", GPU kernel time ",
                                 FmtUnit(v.gpu_kernel_ms_per_step, "ms", 3), " per step\n",
                                 t.Render());
  if (v.phases_overlap) out += "note: the phases overlap in time; their wall times add up to "
                               "more than the step.\n";
  return out;
}

std::string RenderPhasesJson(const PhasesView& v) {
  JsonWriter w;
  w.BeginObject().Field("source", v.source).Field("trace", v.trace).Field("step_ms", v.step_ms)
      .Field("step_ms_measured", StepMeasuredText(v.step_timing))
      .Field("profiled_step_ms", v.profiled_step_ms)
      .Field("rest_of_step_ms", v.rest_of_step_ms)
      .Field("cpu_job", v.cpu_job)
      .Field("gpu_kernel_ms_per_step", v.gpu_kernel_ms_per_step)
      .Field("unattributed_gpu_ms_per_step", v.unattributed_gpu_ms_per_step);
  w.Key("phases").BeginArray();
  for (const PhaseRow& r : v.phases) {
    // A CPU job's GPU columns are n/a (null), not 0.
    const auto gpu = [&](double x) { return v.cpu_job ? std::nullopt : std::optional<double>(x); };
    w.BeginObject().Field("phase", r.phase).Field("gpu_ms_per_step", gpu(r.gpu_ms_per_step))
        .Field("wall_ms_per_step", r.wall_ms_per_step)
        .Field("cpu_ms_per_step", r.cpu_ms_per_step)
        .Field("kernels_per_step", gpu(r.kernels_per_step)).Field("ops_per_step", r.ops_per_step)
        .Field("unique_kernels", v.cpu_job ? std::nullopt
                                           : std::optional<int64_t>(r.unique_kernels))
        .EndObject();
  }
  w.EndArray().EndObject();
  return w.Take();
}

std::string PhaseNamesForMessage(const Profile& p) {
  std::vector<std::string> names;
  for (const PhaseRow& r : p.phases) names.push_back(r.phase);
  return names.empty() ? std::string("none (the profile has no phase ranges)")
                       : absl::StrJoin(names, ", ");
}

bool ProfileHasPhase(const Profile& p, const std::string& phase) {
  for (const PhaseRow& r : p.phases) {
    if (r.phase == phase) return true;
  }
  return false;
}

}  // namespace libreyolo
