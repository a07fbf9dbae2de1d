#include "common/readers/summary_view.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/analysis/kernel_classify.h"
#include "common/json/json_writer.h"
#include "common/render/text_table.h"

namespace libreyolo {

SummaryView BuildSummary(const Profile& p, const std::string& source) {
  SummaryView v;
  v.source = source;
  v.profile = p;
  if (v.profile.kernels.size() > v.top_kernels) v.profile.kernels.resize(v.top_kernels);
  v.profile.ops.clear();
  v.profile.ops_by_input_shape.clear();
  v.profile.ops_by_phase.clear();
  v.profile.kernels_by_phase.clear();
  v.unreliable = p.memory_pressure.value_or(false);
  return v;
}

namespace {

void Line(std::string& out, const std::string& label, const std::string& value) {
  absl::StrAppendFormat(&out, "  %-22s %s\n", label, value);
}

}  // namespace

std::string RenderSummaryText(const SummaryView& v) {
  const Profile& p = v.profile;
  std::string out;
  absl::StrAppend(&out, "verdict: ", p.bound.empty() ? "n/a" : p.bound, "\n");
  if (!p.bound_why.empty()) absl::StrAppend(&out, "  ", p.bound_why, "\n");
  if (v.unreliable) {
    absl::StrAppend(&out,
                    "  WARNING: taken under memory pressure (allocator thrashing): the timings "
                    "below are unreliable.\n");
  }
  out += "\n";
  std::string what = p.source_kind == "trace" ? "Chrome trace, analysed now" : "profile";
  if (p.mode == "inference") what += ", inference";
  Line(out, "source", absl::StrCat(v.source, " (", what, ")"));
  if (!p.model.empty()) Line(out, "model", p.model);
  if (p.device.has_value()) {
    Line(out, "device", absl::StrCat(p.device->name.empty() ? p.device->type : p.device->name,
                                     p.device->memory_mb ? absl::StrFormat(
                                                               " (%.0f MB)", *p.device->memory_mb)
                                                         : ""));
  }
  if (p.real_steps.has_value()) {
    Line(out, "window", absl::StrFormat("%d steps, %s", *p.real_steps,
                                        FmtUnit(p.window_wall_ms, "ms")));
  }
  out += "\n";
  Line(out, p.mode == "inference" ? "latency (mean)" : "step time", FmtUnit(p.step_ms, "ms"));
  Line(out, "throughput",
       p.img_per_s ? FmtUnit(p.img_per_s, "img/s") : "n/a (batch size not recorded in a trace)");
  if (p.latency.has_value()) {
    const Latency& l = *p.latency;
    Line(out, "latency p50/p90/p99",
         absl::StrFormat("%.2f / %.2f / %.2f ms (min %.2f, max %.2f, n=%d)", l.p50_ms, l.p90_ms,
                         l.p99_ms, l.min_ms, l.max_ms, l.n));
  }
  if (p.stages_ms.has_value()) {
    const Stages& s = *p.stages_ms;
    const double total = s.preprocess.value_or(0) + s.forward.value_or(0) +
                         s.postprocess.value_or(0);
    auto share = [&](OptDouble x) {
      return x && total > 0 ? absl::StrFormat("%s (%.0f%%)", FmtUnit(x, "ms"), 100 * *x / total)
                            : FmtUnit(x, "ms");
    };
    Line(out, "stages", absl::StrCat("preprocess ", share(s.preprocess), ", forward ",
                                     share(s.forward), ", postprocess ", share(s.postprocess)));
  }
  Line(out, "GPU utilisation",
       absl::StrCat(FmtPct(p.gpu_util), "  (busy ", FmtUnit(p.gpu_busy_ms_per_step, "ms/step"),
                    ", kernel sum ", FmtUnit(p.gpu_kernel_ms_per_step, "ms/step"), ")"));
  Line(out, "GPU active",
       absl::StrCat(FmtUnit(p.gpu_active_ms_per_step, "ms/step"), "  (kernels, memcpy, memset)"));
  if (p.comm_ms_per_step.value_or(0) > 0) {
    Line(out, "communication",
         absl::StrCat(FmtUnit(p.comm_ms_per_step, "ms/step"), ", exposed ",
                      FmtUnit(p.comm_exposed_ms_per_step, "ms/step"), " (",
                      p.comm_overlap_pct ? absl::StrFormat("%.1f %%", *p.comm_overlap_pct)
                                         : std::string("n/a"),
                      " hidden behind compute)"));
  }
  Line(out, "Tensor Core share", p.tensorcore_pct ? absl::StrFormat("%.1f %%", *p.tensorcore_pct)
                                                  : "n/a");
  Line(out, "peak VRAM",
       p.peak_vram_mb ? absl::StrCat(FmtUnit(p.peak_vram_mb, "MB", 1),
                                     p.peak_reserved_mb
                                         ? absl::StrCat(" (reserved ",
                                                        FmtUnit(p.peak_reserved_mb, "MB", 1), ")")
                                         : "")
                      : "n/a");
  std::string host = FmtUnit(p.host_overhead_ms_per_step, "ms/step");
  if (p.host_overhead_method == "measured") {
    absl::StrAppend(&host, " measured (GPU idle waiting for launches); CUDA API ",
                    FmtUnit(p.host_api_ms_per_step, "ms/step"), ", launch calls ",
                    FmtUnit(p.launch_api_ms_per_step, "ms/step"));
  } else if (p.host_overhead_method == "residual") {
    absl::StrAppend(&host, " (residual: step - GPU busy - data loading)");
  }
  Line(out, "host overhead", host);
  Line(out, "kernel launches",
       absl::StrCat(Fmt(p.launches_per_step, 1), " /step",
                    p.launches_source == "kernels" ? " (no runtime events: kernel count)" : ""));
  Line(out, "kernels",
       absl::StrCat(Fmt(p.kernels_per_step, 1), " /step, ",
                    p.unique_kernels ? absl::StrCat(*p.unique_kernels) : "n/a", " unique, mean ",
                    FmtUnit(p.mean_kernel_us, "us", 1)));
  Line(out, "memcpy + memset", FmtUnit(p.memcpy_ms_per_step, "ms/step", 3));
  Line(out, "data loading",
       absl::StrCat(FmtUnit(p.dataload_ms, "ms"), " (", FmtPct(p.dataload_frac), " of step)"));
  Line(out, "cudaMalloc/Free", absl::StrCat(Fmt(p.cuda_mallocs_per_step, 1), " /step"));
  if (p.flops_per_step.has_value()) {
    Line(out, "FLOPs", absl::StrCat(FmtFlops(p.flops_per_step), "/step, achieved ",
                                    FmtUnit(p.achieved_tflops, "TFLOP/s", 3)));
  }

  if (!p.categories.empty()) {
    out += "\nkernel composition\n";
    TextTable t({{"category", TextTable::Align::kLeft}, {"% GPU"}, {"ms/step"}});
    for (const CategoryRow& c : p.categories) {
      t.AddRow({c.name, Fmt(c.pct, 1), Fmt(c.ms_per_step, 3)});
    }
    out += t.Render();
  }
  if (!p.kernels.empty()) {
    out += "\ntop kernels per step\n";
    TextTable t({{"% GPU"}, {"ms/step"}, {"calls/step"}, {"TC", TextTable::Align::kLeft},
                 {"category", TextTable::Align::kLeft}, {"kernel", TextTable::Align::kLeft, 70}});
    for (const KernelRow& k : p.kernels) {
      t.AddRow({Fmt(k.pct_of_gpu, 1), Fmt(k.ms_per_step, 3), Fmt(k.count_per_step, 1),
                k.tensorcore ? "yes" : "", k.category,
                k.kernel == k.raw_name ? k.raw_name : absl::StrCat(k.kernel, ": ", k.raw_name)});
    }
    out += t.Render();
  } else if (p.kernels_per_step.value_or(0) == 0) {
    out += "\nno GPU kernels in this profile: see `libreyolo profile ops` for the CPU side.\n";
  }
  if (p.parse_stats.skipped_events > 0) {
    absl::StrAppendFormat(&out, "\nnote: %d malformed events were skipped.\n",
                          p.parse_stats.skipped_events);
  }
  if (p.parse_stats.unattributed_kernels > 0) {
    absl::StrAppendFormat(&out,
                          "\nnote: %d GPU activities have no launch call in the trace (launched "
                          "before the profiler started) and are left out.\n",
                          p.parse_stats.unattributed_kernels);
  }
  return out;
}

std::string RenderSummaryJson(const SummaryView& v) {
  const Profile& p = v.profile;
  JsonWriter w;
  w.BeginObject()
      .Field("source", v.source)
      .Field("source_kind", p.source_kind)
      .Field("model", p.model)
      .Field("mode", p.mode)
      .Field("bound", p.bound)
      .Field("bound_why", p.bound_why)
      .Field("unreliable", v.unreliable)
      .Field("step_ms", p.step_ms)
      .Field("img_per_s", p.img_per_s)
      .Field("gpu_util", p.gpu_util)
      .Field("gpu_util_raw", p.gpu_util_raw)
      .Field("gpu_busy_ms_per_step", p.gpu_busy_ms_per_step)
      .Field("gpu_kernel_ms_per_step", p.gpu_kernel_ms_per_step)
      .Field("gpu_active_ms_per_step", p.gpu_active_ms_per_step)
      .Field("gpu_attribution", p.gpu_attribution)
      .Field("comm_ms_per_step", p.comm_ms_per_step)
      .Field("comm_exposed_ms_per_step", p.comm_exposed_ms_per_step)
      .Field("comm_overlap_pct", p.comm_overlap_pct)
      .Field("tensorcore_pct", p.tensorcore_pct)
      .Field("peak_vram_mb", p.peak_vram_mb)
      .Field("peak_reserved_mb", p.peak_reserved_mb)
      .Field("host_overhead_ms_per_step", p.host_overhead_ms_per_step)
      .Field("host_overhead_method", p.host_overhead_method)
      .Field("host_overhead_residual_ms_per_step", p.host_overhead_residual_ms_per_step)
      .Field("host_api_ms_per_step", p.host_api_ms_per_step)
      .Field("launch_api_ms_per_step", p.launch_api_ms_per_step)
      .Field("gpu_wait_host_ms_per_step", p.gpu_wait_host_ms_per_step)
      .Field("launches_per_step", p.launches_per_step)
      .Field("launches_source", p.launches_source)
      .Field("kernels_per_step", p.kernels_per_step)
      .Field("unique_kernels", p.unique_kernels)
      .Field("mean_kernel_us", p.mean_kernel_us)
      .Field("memcpy_ms_per_step", p.memcpy_ms_per_step)
      .Field("dataload_ms", p.dataload_ms)
      .Field("dataload_frac", p.dataload_frac)
      .Field("cuda_mallocs_per_step", p.cuda_mallocs_per_step)
      .Field("memory_pressure", p.memory_pressure)
      .Field("flops_per_step", p.flops_per_step)
      .Field("achieved_tflops", p.achieved_tflops)
      .Field("real_steps", p.real_steps)
      .Field("window_wall_ms", p.window_wall_ms);
  if (p.latency.has_value()) {
    w.Key("latency").BeginObject().Field("p50_ms", p.latency->p50_ms)
        .Field("p90_ms", p.latency->p90_ms).Field("p99_ms", p.latency->p99_ms)
        .Field("mean_ms", p.latency->mean_ms).Field("min_ms", p.latency->min_ms)
        .Field("max_ms", p.latency->max_ms).Field("n", p.latency->n).EndObject();
  }
  if (p.stages_ms.has_value()) {
    w.Key("stages_ms").BeginObject().Field("preprocess", p.stages_ms->preprocess)
        .Field("forward", p.stages_ms->forward).Field("postprocess", p.stages_ms->postprocess)
        .EndObject();
  }
  w.Key("categories").BeginArray();
  for (const CategoryRow& c : p.categories) {
    w.BeginObject().Field("name", c.name).Field("pct", c.pct)
        .Field("ms_per_step", c.ms_per_step).EndObject();
  }
  w.EndArray();
  w.Key("top_kernels").BeginArray();
  for (const KernelRow& k : p.kernels) {
    w.BeginObject().Field("kernel", k.kernel).Field("raw_name", CutName(k.raw_name))
        .Field("category", k.category).Field("tensorcore", k.tensorcore)
        .Field("ms_per_step", k.ms_per_step).Field("pct_of_gpu", k.pct_of_gpu)
        .Field("count_per_step", k.count_per_step).EndObject();
  }
  w.EndArray();
  w.Key("parse_stats").BeginObject().Field("events", p.parse_stats.events)
      .Field("skipped_events", p.parse_stats.skipped_events)
      .Field("duplicate_steps", p.parse_stats.duplicate_steps)
      .Field("unattributed_kernels", p.parse_stats.unattributed_kernels).EndObject();
  w.EndObject();
  return w.Take();
}

}  // namespace libreyolo
