#include "common/analysis/metric_list.h"

#include <set>

namespace libreyolo {
namespace {

MetricValue Num(std::string name, std::string unit, std::optional<double> v) {
  MetricValue m;
  m.name = std::move(name);
  m.unit = std::move(unit);
  m.number = v;
  return m;
}

std::optional<double> AsDouble(const std::optional<int64_t>& v) {
  if (!v.has_value()) return std::nullopt;
  return static_cast<double>(*v);
}

}  // namespace

std::vector<MetricValue> FlatMetrics(const Profile& p) {
  std::vector<MetricValue> out;
  out.push_back(Num("img_per_s", "img/s", p.img_per_s));
  out.push_back(Num("step_ms", "ms", p.step_ms));
  out.push_back(Num("profiled_step_ms", "ms", ProfiledStepMs(p)));
  out.push_back(Num("dataload_ms", "ms", p.dataload_ms));
  out.push_back(Num("dataload_frac", "", p.dataload_frac));
  out.push_back(Num("gpu_util", "", p.gpu_util));
  out.push_back(Num("gpu_util_raw", "", p.gpu_util_raw));
  out.push_back(Num("gpu_busy_ms", "ms", p.gpu_busy_ms_per_step));
  out.push_back(Num("gpu_kernel_ms", "ms", p.gpu_kernel_ms_per_step));
  out.push_back(Num("gpu_active_ms", "ms", p.gpu_active_ms_per_step));
  out.push_back(Num("comm_ms", "ms", p.comm_ms_per_step));
  out.push_back(Num("comm_exposed_ms", "ms", p.comm_exposed_ms_per_step));
  out.push_back(Num("comm_overlap_pct", "%", p.comm_overlap_pct));
  out.push_back(Num("mean_kernel_us", "us", p.mean_kernel_us));
  out.push_back(Num("kernels_per_step", "", p.kernels_per_step));
  out.push_back(Num("unique_kernels", "", AsDouble(p.unique_kernels)));
  out.push_back(Num("ops_per_step", "", p.ops_per_step));
  out.push_back(Num("memcpy_ms", "ms", p.memcpy_ms_per_step));
  out.push_back(Num("tensorcore_pct", "%", p.tensorcore_pct));
  out.push_back(Num("peak_vram_mb", "MB", p.peak_vram_mb));
  out.push_back(Num("peak_reserved_mb", "MB", p.peak_reserved_mb));
  out.push_back(Num("peak_cpu_alloc_mb", "MB", p.peak_cpu_alloc_mb));
  out.push_back(Num("host_overhead_ms", "ms", p.host_overhead_ms_per_step));
  out.push_back(Num("host_overhead_residual_ms", "ms", p.host_overhead_residual_ms_per_step));
  out.push_back(Num("launch_api_ms", "ms", p.launch_api_ms_per_step));
  out.push_back(Num("host_api_ms", "ms", p.host_api_ms_per_step));
  out.push_back(Num("gpu_wait_host_ms", "ms", p.gpu_wait_host_ms_per_step));
  out.push_back(Num("launches_per_step", "", p.launches_per_step));
  out.push_back(Num("cuda_mallocs_per_step", "", p.cuda_mallocs_per_step));
  MetricValue pressure;
  pressure.name = "memory_pressure";
  pressure.flag = p.memory_pressure;
  out.push_back(pressure);
  MetricValue bound;
  bound.name = "bound";
  if (!p.bound.empty()) bound.text = p.bound;
  out.push_back(bound);
  out.push_back(Num("flops_per_step", "FLOP", p.flops_per_step));
  out.push_back(Num("achieved_tflops", "TFLOP/s", p.achieved_tflops));
  out.push_back(Num("self_cpu_total_ms", "ms", p.self_cpu_total_ms_per_step));
  out.push_back(Num("real_steps", "", AsDouble(p.real_steps)));
  // Known only for what we analysed ourselves (a Python profile does not count them).
  out.push_back(Num("unattributed_kernels", "",
                    p.gpu_attribution.has_value() ? std::optional<double>(static_cast<double>(
                                                        p.parse_stats.unattributed_kernels))
                                                  : std::nullopt));
  out.push_back(Num("window_wall_ms", "ms", p.window_wall_ms));
  for (const PhaseRow& r : p.phases) {
    out.push_back(Num(r.phase + "_gpu_ms", "ms", r.gpu_ms_per_step));
    out.push_back(Num(r.phase + "_wall_ms", "ms", r.wall_ms_per_step));
    out.push_back(Num(r.phase + "_kernels", "", r.kernels_per_step));
    out.push_back(Num(r.phase + "_ops", "", r.ops_per_step));
    if (r.cpu_ms_per_step) out.push_back(Num(r.phase + "_cpu_ms", "ms", r.cpu_ms_per_step));
  }
  if (p.repeat.img_per_s_n.has_value()) {
    out.push_back(Num("img_per_s_std", "img/s", p.repeat.img_per_s_std));
    out.push_back(Num("img_per_s_n", "", AsDouble(p.repeat.img_per_s_n)));
  }
  // A repeat profile: every aggregated scalar's sample std over the trials.
  for (const auto& [name, stat] : p.repeat.metrics) {
    if (name == "img_per_s") continue;  // img_per_s_std above
    out.push_back(Num(name + "_std", "", stat.std));
  }
  if (p.latency.has_value()) {
    out.push_back(Num("latency_p50_ms", "ms", p.latency->p50_ms));
    out.push_back(Num("latency_p90_ms", "ms", p.latency->p90_ms));
    out.push_back(Num("latency_p99_ms", "ms", p.latency->p99_ms));
    out.push_back(Num("latency_mean_ms", "ms", p.latency->mean_ms));
    out.push_back(Num("throughput_img_s", "img/s", p.img_per_s));
  }
  if (p.stages_ms.has_value()) {
    out.push_back(Num("preprocess_ms", "ms", p.stages_ms->preprocess));
    out.push_back(Num("forward_ms", "ms", p.stages_ms->forward));
    out.push_back(Num("nms_ms", "ms", p.stages_ms->postprocess));
  }
  // Keys the file's own "metrics" object carried that we do not derive (kept, not dropped).
  std::set<std::string> known;
  for (const auto& m : out) known.insert(m.name);
  for (const auto& [name, json] : p.extra_metrics_json) {
    if (known.contains(name)) continue;
    MetricValue m;
    m.name = name;
    if (json != "null") m.raw_json = json;
    out.push_back(m);
  }
  return out;
}

}  // namespace libreyolo
