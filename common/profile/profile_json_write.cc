#include "common/analysis/kernel_classify.h"
#include "common/analysis/metric_list.h"
#include "common/json/json_writer.h"
#include "common/profile/profile_json.h"

namespace libreyolo {
namespace {

void WriteKernelRow(JsonWriter& w, const KernelRow& k) {
  w.BeginObject()
      .Field("kernel", k.kernel)
      .Field("raw_name", CutName(k.raw_name))
      .Field("category", k.category)
      .Field("tensorcore", k.tensorcore)
      .Field("ms_per_step", k.ms_per_step)
      .Field("pct_of_gpu", k.pct_of_gpu)
      .Field("count_per_step", k.count_per_step)
      .EndObject();
}

void WriteKernelRows(JsonWriter& w, const std::vector<KernelRow>& rows, size_t limit) {
  w.BeginArray();
  for (size_t i = 0; i < rows.size() && i < limit; ++i) WriteKernelRow(w, rows[i]);
  w.EndArray();
}

void WriteOpRows(JsonWriter& w, const std::vector<OpRow>& rows) {
  // pct_of_self_cpu: the row's self CPU time over the list's (sums to 100); pct_of_cpu_ops
  // keeps the Python tool's meaning (share of summed CPU totals), docs/metrics.md.
  double list_self = 0;
  bool have_self = !rows.empty();
  for (const OpRow& o : rows) {
    have_self = have_self && o.self_cpu_ms_per_step.has_value();
    list_self += o.self_cpu_ms_per_step.value_or(0);
  }
  w.BeginArray();
  for (const OpRow& o : rows) {
    w.BeginObject().Field("op", o.op);
    if (!o.input_shapes.empty()) w.Field("input_shapes", o.input_shapes);
    w.Field("count_per_step", o.count_per_step)
        .Field("ms_per_step", o.ms_per_step)
        .Field("self_cpu_ms_per_step", o.self_cpu_ms_per_step)
        .Field("pct_of_cpu_ops", o.pct_of_cpu_ops)
        .Field("pct_of_self_cpu", have_self && list_self > 0
                                      ? OptDouble(100.0 * *o.self_cpu_ms_per_step / list_self)
                                      : std::nullopt)
        .Field("self_cpu_mem_bytes", o.self_cpu_mem_bytes)
        .Field("cpu_mem_bytes", o.cpu_mem_bytes)
        .Field("self_device_mem_bytes", o.self_device_mem_bytes)
        .Field("device_mem_bytes", o.device_mem_bytes)
        .Field("flops", o.flops)
        .Field("device_ms_per_step", o.device_ms_per_step)
        .Field("self_device_ms_per_step", o.self_device_ms_per_step)
        .EndObject();
  }
  w.EndArray();
}

void WritePhases(JsonWriter& w, const std::vector<PhaseRow>& phases) {
  w.BeginArray();
  for (const PhaseRow& r : phases) {
    w.BeginObject()
        .Field("phase", r.phase)
        .Field("gpu_ms_per_step", r.gpu_ms_per_step)
        .Field("wall_ms_per_step", r.wall_ms_per_step);
    if (r.cpu_ms_per_step) w.Field("cpu_ms_per_step", r.cpu_ms_per_step);
    w.Field("kernels_per_step", r.kernels_per_step)
        .Field("ops_per_step", r.ops_per_step)
        .Field("unique_kernels", r.unique_kernels)
        .EndObject();
  }
  w.EndArray();
}

}  // namespace

std::string WriteProfileJson(const Profile& p) {
  JsonWriter w;
  w.BeginObject()
      .Field("schema", std::string_view(kProfileSchema))
      .Field("trace", p.trace)
      .Field("model", p.model)
      .Key("config")
      .Raw(p.config_json);
  if (p.mode.has_value()) w.Field("mode", *p.mode);
  w.Field("bound", p.bound)
      .Field("bound_why", p.bound_why)
      .Field("step_ms", p.step_ms)
      .Field("img_per_s", p.img_per_s)
      .Field("dataload_ms", p.dataload_ms)
      .Field("dataload_frac", p.dataload_frac)
      .Field("gpu_util", p.gpu_util)
      .Field("gpu_util_raw", p.gpu_util_raw)
      .Field("memory_pressure", p.memory_pressure)
      .Field("cuda_mallocs_per_step", p.cuda_mallocs_per_step)
      .Field("host_overhead_ms_per_step", p.host_overhead_ms_per_step)
      .Field("host_overhead_method", p.host_overhead_method)
      .Field("host_overhead_residual_ms_per_step", p.host_overhead_residual_ms_per_step)
      .Field("launch_api_ms_per_step", p.launch_api_ms_per_step)
      .Field("host_api_ms_per_step", p.host_api_ms_per_step)
      .Field("gpu_wait_host_ms_per_step", p.gpu_wait_host_ms_per_step)
      .Field("launches_per_step", p.launches_per_step)
      .Field("launches_source", p.launches_source)
      .Field("gpu_busy_ms_per_step", p.gpu_busy_ms_per_step)
      .Field("gpu_kernel_ms_per_step", p.gpu_kernel_ms_per_step)
      .Field("gpu_active_ms_per_step", p.gpu_active_ms_per_step)
      .Field("gpu_attribution", p.gpu_attribution)
      .Field("comm_ms_per_step", p.comm_ms_per_step)
      .Field("comm_exposed_ms_per_step", p.comm_exposed_ms_per_step)
      .Field("comm_overlap_pct", p.comm_overlap_pct)
      .Field("mean_kernel_us", p.mean_kernel_us)
      .Field("kernels_per_step", p.kernels_per_step)
      .Field("unique_kernels", p.unique_kernels)
      .Field("memcpy_ms_per_step", p.memcpy_ms_per_step)
      .Field("tensorcore_pct", p.tensorcore_pct)
      .Field("peak_vram_mb", p.peak_vram_mb)
      .Field("ops_per_step", p.ops_per_step)
      .Field("flops_per_step", p.flops_per_step)
      .Field("achieved_tflops", p.achieved_tflops)
      .Field("self_cpu_total_ms_per_step", p.self_cpu_total_ms_per_step)
      .Field("self_device_total_ms_per_step", p.self_device_total_ms_per_step);
  w.Key("memory").BeginObject().Field("peak_allocated_mb", p.peak_vram_mb)
      .Field("peak_reserved_mb", p.peak_reserved_mb)
      .Field("peak_cpu_alloc_mb", p.peak_cpu_alloc_mb).EndObject();
  w.Key("window").BeginObject().Field("wall_ms", p.window_wall_ms)
      .Field("real_steps", p.real_steps).EndObject();

  w.Key("metrics").BeginObject();
  for (const MetricValue& m : FlatMetrics(p)) {
    w.Key(m.name);
    if (m.text.has_value()) {
      w.String(*m.text);
    } else if (m.flag.has_value()) {
      w.Bool(*m.flag);
    } else if (m.number.has_value()) {
      w.Double(*m.number);
    } else {
      w.Null();
    }
  }
  w.EndObject();

  w.Key("categories").BeginArray();
  for (const CategoryRow& c : p.categories) {
    w.BeginObject().Field("name", c.name).Field("pct", c.pct)
        .Field("ms_per_step", c.ms_per_step).EndObject();
  }
  w.EndArray();
  w.Key("phases");
  WritePhases(w, p.phases);
  w.Key("kernels_by_phase").BeginObject();
  for (const auto& [phase, rows] : p.kernels_by_phase) {
    w.Key(phase);
    WriteKernelRows(w, rows, 40);
  }
  w.EndObject();
  w.Key("ops_by_phase").BeginObject();
  for (const auto& [phase, rows] : p.ops_by_phase) {
    w.Key(phase);
    WriteOpRows(w, rows);
  }
  w.EndObject();
  w.Key("top_kernels");
  WriteKernelRows(w, p.kernels, 8);
  w.Key("kernels");
  WriteKernelRows(w, p.kernels, p.kernels.size());
  w.Key("ops");
  WriteOpRows(w, p.ops);
  w.Field("has_input_shapes", p.has_input_shapes);
  if (!p.ops_by_input_shape.empty()) {
    w.Key("ops_by_input_shape");
    WriteOpRows(w, p.ops_by_input_shape);
  }

  if (p.latency.has_value()) {
    const Latency& l = *p.latency;
    w.Key("latency").BeginObject().Field("p50_ms", l.p50_ms).Field("p90_ms", l.p90_ms)
        .Field("p99_ms", l.p99_ms).Field("mean_ms", l.mean_ms).Field("min_ms", l.min_ms)
        .Field("max_ms", l.max_ms).Field("n", l.n);
    if (l.cuda_event_p50_ms) w.Field("cuda_event_p50_ms", l.cuda_event_p50_ms);
    if (l.cuda_event_mean_ms) w.Field("cuda_event_mean_ms", l.cuda_event_mean_ms);
    if (!l.samples_ms.empty()) {
      w.Key("samples_ms").BeginArray();
      for (double v : l.samples_ms) w.Double(v);
      w.EndArray();
    }
    w.EndObject();
  }
  if (p.stages_ms.has_value()) {
    w.Key("stages_ms").BeginObject().Field("preprocess", p.stages_ms->preprocess)
        .Field("forward", p.stages_ms->forward).Field("postprocess", p.stages_ms->postprocess)
        .EndObject();
  }
  if (p.repeat.img_per_s_n.has_value()) {
    w.Field("img_per_s_std", p.repeat.img_per_s_std).Field("img_per_s_n", p.repeat.img_per_s_n);
    w.Key("img_per_s_trials").BeginArray();
    for (double v : p.repeat.img_per_s_trials) w.Double(v);
    w.EndArray();
  }
  if (!p.repeat.metrics.empty()) {
    // Every scalar the trials measured: mean (= the field's value), sample std, n, trials.
    w.Key("aggregation").BeginObject()
        .Field("n", p.repeat.metrics.begin()->second.n)
        .Field("note", "scalar metrics: mean over trials (img_per_s: total images / total time); "
                       "kernel and operator lists: the profiled window")
        .Key("metrics").BeginObject();
    for (const auto& [name, stat] : p.repeat.metrics) {
      w.Key(name).BeginObject().Field("mean", stat.mean).Field("std", stat.std)
          .Field("n", stat.n).Key("trials").BeginArray();
      for (double v : stat.trials) w.Double(v);
      w.EndArray().EndObject();
    }
    w.EndObject().EndObject();
  }
  if (p.device.has_value()) {
    w.Key("device").BeginObject().Field("type", p.device->type).Field("name", p.device->name)
        .Field("index", p.device->index).Field("sm_count", p.device->sm_count)
        .Field("memory_mb", p.device->memory_mb).EndObject();
  }
  w.Key("tool").BeginObject()
      .Field("name", p.tool_name.empty() ? std::string("libreyolo-profiler") : p.tool_name)
      .Field("version", p.tool_version.empty() ? std::string(LIBREYOLO_VERSION) : p.tool_version);
  if (!p.libtorch_version.empty()) w.Field("libtorch", p.libtorch_version);
  w.EndObject();
  if (!p.profiler_json.empty()) w.Key("profiler").Raw(p.profiler_json);
  if (p.created_at.has_value()) w.Field("created_at", *p.created_at);
  const ParseStats& s = p.parse_stats;
  w.Key("parse_stats").BeginObject().Field("events", s.events)
      .Field("complete_events", s.complete_events).Field("skipped_events", s.skipped_events)
      .Field("non_numeric_ids", s.non_numeric_ids).Field("duplicate_steps", s.duplicate_steps)
      .Field("unattributed_kernels", s.unattributed_kernels).EndObject();
  w.EndObject();
  return w.Take();
}

}  // namespace libreyolo
