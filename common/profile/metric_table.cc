#include "common/profile/metric_table.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>

#include "common/profile/id_table.h"
#include "common/profile/metric_id.h"

namespace libreyolo {
namespace {

using K = MetricKind;
using A = MetricApplies;
using B = MetricBetter;

template <OptDouble Profile::*M>
MetricCell Num(const Profile& p) {
  return MetricCell::Number(p.*M);
}
template <OptDouble Profile::*M>
void SetNum(Profile& p, const MetricCell& c) {
  p.*M = c.AsDouble();
}
template <std::optional<int64_t> Profile::*M>
MetricCell Int(const Profile& p) {
  return MetricCell::Count(p.*M);
}
template <std::optional<int64_t> Profile::*M>
void SetInt(Profile& p, const MetricCell& c) {
  const std::optional<double> d = c.AsDouble();
  p.*M = d ? std::optional<int64_t>(CountFromDouble(*d)) : std::nullopt;
}
template <std::optional<bool> Profile::*M>
MetricCell Flag(const Profile& p) {
  return MetricCell::Flag(p.*M);
}
template <std::optional<bool> Profile::*M>
void SetFlag(Profile& p, const MetricCell& c) {
  p.*M = c.flag;
}
template <std::optional<std::string> Profile::*M>
MetricCell Text(const Profile& p) {
  return MetricCell::Text(p.*M);
}
template <std::optional<std::string> Profile::*M>
void SetText(Profile& p, const MetricCell& c) {
  p.*M = c.text;
}

MetricCell Bound(const Profile& p) {
  return p.bound.empty() ? MetricCell{} : MetricCell::Text(p.bound);
}
void SetBound(Profile& p, const MetricCell& c) { p.bound = c.text.value_or(""); }
MetricCell ProfiledStep(const Profile& p) { return MetricCell::Number(ProfiledStepMs(p)); }
// The profiled step less its GPU-busy time (both per step, under the profiler), at least 0.
MetricCell GpuIdle(const Profile& p) {
  const OptDouble step = ProfiledStepMs(p);
  if (!step || !p.gpu_busy_ms_per_step) return {};
  return MetricCell::Number(std::max(*step - *p.gpu_busy_ms_per_step, 0.0));
}
// Known only for what we analysed ourselves (a Python profile does not count them).
MetricCell Unattributed(const Profile& p) {
  if (!p.gpu_attribution.has_value()) return {};
  return MetricCell::Count(p.parse_stats.unattributed_kernels);
}

// One row per metric, with its id (common/profile/metric_id.h).
using Row = IdRow<MetricId, MetricDef>;

// clang-format off
constexpr std::array kRows = {
  Row{MetricId::kImgPerS,
    {"img_per_s", "", "img_per_s", "img/s", K::kNumber, A::kAlways, B::kHigher, true,
    "throughput", 2, "images per second: batch / step_ms (inference: batch / mean latency)",
    Num<&Profile::img_per_s>, SetNum<&Profile::img_per_s>}},
  Row{MetricId::kStepMs,
    {"step_ms", "", "step_ms", "ms", K::kNumber, A::kAlways, B::kLower, true,
    "step time", 2, "mean wall time of a step (inference: of an iteration), measured without "
    "the profiler in our jobs; a trace's: its window / steps",
    Num<&Profile::step_ms>, SetNum<&Profile::step_ms>}},
  Row{MetricId::kProfiledStepMs,
    {"profiled_step_ms", "", "", "ms", K::kNumber, A::kAlways, B::kNone, false,
    "profiled step", 2, "window.wall_ms / window.real_steps: the step under the profiler",
    ProfiledStep, nullptr}},
  Row{MetricId::kDataloadMs,
    {"dataload_ms", "", "dataload_ms", "ms", K::kNumber, A::kAlways, B::kLower, true,
    "data loading", 2, "wall time per step in the data loader's ranges",
    Num<&Profile::dataload_ms>, SetNum<&Profile::dataload_ms>}},
  Row{MetricId::kDataloadFrac,
    {"dataload_frac", "", "dataload_frac", "", K::kNumber, A::kAlways, B::kLower, true,
    "data loading share", 3, "dataload_ms / step_ms (a fraction)",
    Num<&Profile::dataload_frac>, SetNum<&Profile::dataload_frac>}},
  Row{MetricId::kGpuUtil,
    {"gpu_util", "", "gpu_util", "", K::kNumber, A::kGpu, B::kHigher, true,
    "GPU utilisation", 3, "gpu_busy_ms / step_ms, at most 1 (a fraction)",
    Num<&Profile::gpu_util>, SetNum<&Profile::gpu_util>}},
  Row{MetricId::kGpuUtilRaw,
    {"gpu_util_raw", "", "gpu_util_raw", "", K::kNumber, A::kGpu, B::kNone, false,
    "GPU utilisation (raw)", 3, "gpu_busy_ms / profiled step, not capped",
    Num<&Profile::gpu_util_raw>, SetNum<&Profile::gpu_util_raw>}},
  Row{MetricId::kGpuBusyMs,
    {"gpu_busy_ms", "", "gpu_busy_ms_per_step", "ms", K::kNumber, A::kGpu, B::kLower,
    true, "GPU busy", 2, "union of the kernels' intervals per step",
    Num<&Profile::gpu_busy_ms_per_step>, SetNum<&Profile::gpu_busy_ms_per_step>}},
  Row{MetricId::kGpuIdleMs,
    {"gpu_idle_ms", "", "", "ms", K::kNumber, A::kGpu, B::kLower, false,
    "GPU idle", 2, "profiled_step_ms - gpu_busy_ms, at least 0: the time per step no kernel runs",
    GpuIdle, nullptr}},
  Row{MetricId::kGpuKernelMs,
    {"gpu_kernel_ms", "", "gpu_kernel_ms_per_step", "ms", K::kNumber, A::kGpu, B::kNone,
    true, "kernel time (sum)", 2, "sum of the kernels' durations per step",
    Num<&Profile::gpu_kernel_ms_per_step>, SetNum<&Profile::gpu_kernel_ms_per_step>}},
  Row{MetricId::kGpuActiveMs,
    {"gpu_active_ms", "", "gpu_active_ms_per_step", "ms", K::kNumber, A::kGpu,
    B::kNone, false, "GPU active", 2, "union of kernels, memcpy and memset per step",
    Num<&Profile::gpu_active_ms_per_step>, SetNum<&Profile::gpu_active_ms_per_step>}},
  Row{MetricId::kCommMs,
    {"comm_ms", "", "comm_ms_per_step", "ms", K::kNumber, A::kGpu, B::kNone, false,
    "communication", 2, "union of the communication kernels per step",
    Num<&Profile::comm_ms_per_step>, SetNum<&Profile::comm_ms_per_step>}},
  Row{MetricId::kCommExposedMs,
    {"comm_exposed_ms", "", "comm_exposed_ms_per_step", "ms", K::kNumber, A::kGpu,
    B::kLower, false, "exposed communication", 2,
    "communication no other kernel overlaps, per step",
    Num<&Profile::comm_exposed_ms_per_step>, SetNum<&Profile::comm_exposed_ms_per_step>}},
  Row{MetricId::kCommOverlapPct,
    {"comm_overlap_pct", "", "comm_overlap_pct", "%", K::kNumber, A::kGpu, B::kNone,
    false, "communication hidden", 1, "100 * (comm_ms - comm_exposed_ms) / comm_ms",
    Num<&Profile::comm_overlap_pct>, SetNum<&Profile::comm_overlap_pct>}},
  Row{MetricId::kMeanKernelUs,
    {"mean_kernel_us", "", "mean_kernel_us", "us", K::kNumber, A::kGpu, B::kNone, true,
    "mean kernel", 1, "sum of kernel durations / number of kernels",
    Num<&Profile::mean_kernel_us>, SetNum<&Profile::mean_kernel_us>}},
  Row{MetricId::kKernelsPerStep,
    {"kernels_per_step", "", "kernels_per_step", "", K::kNumber, A::kGpu, B::kNone, true,
    "kernels", 2, "kernels in the window / real_steps (a mean: one kernel in two steps is 0.5)",
    Num<&Profile::kernels_per_step>, SetNum<&Profile::kernels_per_step>}},
  Row{MetricId::kUniqueKernels,
    {"unique_kernels", "", "unique_kernels", "", K::kCount, A::kGpu, B::kNone, true,
    "unique kernels", 0, "distinct kernel names in the window",
    Int<&Profile::unique_kernels>, SetInt<&Profile::unique_kernels>}},
  Row{MetricId::kOpsPerStep,
    {"ops_per_step", "", "ops_per_step", "", K::kNumber, A::kAlways, B::kNone, false,
    "operators", 2, "CPU operator events in the window / real_steps (a mean)",
    Num<&Profile::ops_per_step>, SetNum<&Profile::ops_per_step>}},
  Row{MetricId::kMemcpyMs,
    {"memcpy_ms", "", "memcpy_ms_per_step", "ms", K::kNumber, A::kGpu, B::kNone, true,
    "memcpy + memset", 3, "sum of memcpy and memset durations per step",
    Num<&Profile::memcpy_ms_per_step>, SetNum<&Profile::memcpy_ms_per_step>}},
  Row{MetricId::kTensorcorePct,
    {"tensorcore_pct", "", "tensorcore_pct", "%", K::kNumber, A::kGpu, B::kHigher, true,
    "Tensor Core share", 1, "share of kernel time in Tensor Core kernels",
    Num<&Profile::tensorcore_pct>, SetNum<&Profile::tensorcore_pct>}},
  Row{MetricId::kPeakVramMb,
    {"peak_vram_mb", "", "peak_vram_mb", "MB", K::kNumber, A::kGpu, B::kLower, true,
    "peak VRAM (allocated)", 1, "peak of the CUDA allocator's allocated bytes in the window",
    Num<&Profile::peak_vram_mb>, SetNum<&Profile::peak_vram_mb>}},
  Row{MetricId::kPeakReservedMb,
    {"peak_reserved_mb", "memory", "peak_reserved_mb", "MB", K::kNumber, A::kGpu,
    B::kNone, true, "peak VRAM (reserved)", 1, "peak of the CUDA allocator's reserved bytes",
    Num<&Profile::peak_reserved_mb>, SetNum<&Profile::peak_reserved_mb>}},
  Row{MetricId::kPeakCpuAllocMb,
    {"peak_cpu_alloc_mb", "memory", "peak_cpu_alloc_mb", "MB", K::kNumber, A::kAlways,
    B::kNone, false, "peak host memory", 1,
    "peak of the CPU [memory] events' Total Allocated in the window",
    Num<&Profile::peak_cpu_alloc_mb>, SetNum<&Profile::peak_cpu_alloc_mb>}},
  Row{MetricId::kHostOverheadMs,
    {"host_overhead_ms", "", "host_overhead_ms_per_step", "ms", K::kNumber, A::kGpu,
    B::kLower, true, "host overhead", 2,
    "GPU idle waiting for the host per step (measured), else the residual",
    Num<&Profile::host_overhead_ms_per_step>, SetNum<&Profile::host_overhead_ms_per_step>}},
  Row{MetricId::kHostOverheadMethod,
    {"host_overhead_method", "", "host_overhead_method", "", K::kText, A::kGpu,
    B::kNone, false, "host overhead method", 0, "measured or residual",
    Text<&Profile::host_overhead_method>, SetText<&Profile::host_overhead_method>}},
  Row{MetricId::kHostOverheadResidualMs,
    {"host_overhead_residual_ms", "", "host_overhead_residual_ms_per_step", "ms",
    K::kNumber, A::kGpu, B::kNone, false, "host overhead (residual)", 2,
    "step - GPU busy - data loading, per step, at least 0",
    Num<&Profile::host_overhead_residual_ms_per_step>,
    SetNum<&Profile::host_overhead_residual_ms_per_step>}},
  Row{MetricId::kLaunchApiMs,
    {"launch_api_ms", "", "launch_api_ms_per_step", "ms", K::kNumber, A::kGpu, B::kNone,
    false, "launch calls", 2, "time in kernel launch API calls per step",
    Num<&Profile::launch_api_ms_per_step>, SetNum<&Profile::launch_api_ms_per_step>}},
  Row{MetricId::kHostApiMs,
    {"host_api_ms", "", "host_api_ms_per_step", "ms", K::kNumber, A::kGpu, B::kNone,
    false, "CUDA API", 2, "time in CUDA runtime calls other than synchronisation, per step",
    Num<&Profile::host_api_ms_per_step>, SetNum<&Profile::host_api_ms_per_step>}},
  Row{MetricId::kGpuWaitHostMs,
    {"gpu_wait_host_ms", "", "gpu_wait_host_ms_per_step", "ms", K::kNumber, A::kGpu,
    B::kNone, false, "GPU waiting for the host", 2,
    "GPU idle gaps that end at a kernel launched after the gap began, per step",
    Num<&Profile::gpu_wait_host_ms_per_step>, SetNum<&Profile::gpu_wait_host_ms_per_step>}},
  Row{MetricId::kLaunchesPerStep,
    {"launches_per_step", "", "launches_per_step", "", K::kNumber, A::kGpu, B::kLower,
    true, "kernel launches", 2, "launch calls in the window / real_steps, a mean (no runtime "
    "events: kernels_per_step)",
    Num<&Profile::launches_per_step>, SetNum<&Profile::launches_per_step>}},
  Row{MetricId::kLaunchesSource,
    {"launches_source", "", "launches_source", "", K::kText, A::kGpu, B::kNone, false,
    "launches counted from", 0, "runtime or kernels",
    Text<&Profile::launches_source>, SetText<&Profile::launches_source>}},
  Row{MetricId::kCudaMallocsPerStep,
    {"cuda_mallocs_per_step", "", "cuda_mallocs_per_step", "", K::kNumber, A::kGpu,
    B::kNone, true, "cudaMalloc/Free", 2, "cudaMalloc and cudaFree calls / real_steps (a mean)",
    Num<&Profile::cuda_mallocs_per_step>, SetNum<&Profile::cuda_mallocs_per_step>}},
  Row{MetricId::kMemoryPressure,
    {"memory_pressure", "", "memory_pressure", "", K::kFlag, A::kGpu, B::kNone, false,
    "memory pressure", 0, "the CUDA allocator thrashed (cudaMalloc/Free every step)",
    Flag<&Profile::memory_pressure>, SetFlag<&Profile::memory_pressure>}},
  Row{MetricId::kGpuAttribution,
    {"gpu_attribution", "", "gpu_attribution", "", K::kText, A::kGpu, B::kNone, false,
    "GPU work windowed by", 0, "launch or start",
    Text<&Profile::gpu_attribution>, SetText<&Profile::gpu_attribution>}},
  Row{MetricId::kBound,
    {"bound", "", "bound", "", K::kText, A::kAlways, B::kNone, false, "verdict", 0,
    "what limits the step: the verdict", Bound, SetBound}},
  Row{MetricId::kFlopsPerStep,
    {"flops_per_step", "", "flops_per_step", "FLOP", K::kNumber, A::kAlways, B::kNone,
    true, "FLOPs", 0,
    "FLOPs of the recorded operators per step (a lower bound when flops_uncounted_ops names any)",
    Num<&Profile::flops_per_step>, SetNum<&Profile::flops_per_step>}},
  Row{MetricId::kAchievedTflops,
    {"achieved_tflops", "", "achieved_tflops", "TFLOP/s", K::kNumber, A::kAlways,
    B::kHigher, true, "achieved", 3, "flops_per_step / step time",
    Num<&Profile::achieved_tflops>, SetNum<&Profile::achieved_tflops>}},
  Row{MetricId::kSelfCpuTotalMs,
    {"self_cpu_total_ms", "", "self_cpu_total_ms_per_step", "ms", K::kNumber,
    A::kAlways, B::kNone, false, "CPU op time", 2,
    "self CPU time of every operator per step",
    Num<&Profile::self_cpu_total_ms_per_step>, SetNum<&Profile::self_cpu_total_ms_per_step>}},
  Row{MetricId::kSelfDeviceTotalMs,
    {"self_device_total_ms", "", "self_device_total_ms_per_step", "ms", K::kNumber,
    A::kGpu, B::kNone, false, "device op time", 2,
    "self device time of every operator per step",
    Num<&Profile::self_device_total_ms_per_step>,
    SetNum<&Profile::self_device_total_ms_per_step>}},
  Row{MetricId::kRealSteps,
    {"real_steps", "window", "real_steps", "", K::kCount, A::kAlways, B::kNone, true,
    "steps in window", 0, "distinct ProfilerStep#N in the window",
    Int<&Profile::real_steps>, SetInt<&Profile::real_steps>}},
  Row{MetricId::kUnattributedKernels,
    {"unattributed_kernels", "", "", "", K::kCount, A::kGpu, B::kNone, false,
    "unattributed GPU activities", 0, "GPU activities with no launch call, left out",
    Unattributed, nullptr}},
  Row{MetricId::kWindowWallMs,
    {"window_wall_ms", "window", "wall_ms", "ms", K::kNumber, A::kAlways, B::kNone, true,
    "window", 2, "from the first step's start to the last step's end",
    Num<&Profile::window_wall_ms>, SetNum<&Profile::window_wall_ms>}},
};
// clang-format on

// The rows as MetricTable() hands them out, each at its id's index. A row out of MetricId's
// order, or an id without a row, fails to compile.
static_assert(kRows.size() == kMetricCount, "a MetricId without a row, or a row without one");
static_assert(RowsInIdOrder(kRows), "the rows must be in MetricId's order");
constexpr std::array kTable = DefsOf(kRows);

}  // namespace

std::optional<double> MetricCell::AsDouble() const {
  if (number) return number;
  if (count) return static_cast<double>(*count);
  return std::nullopt;
}

std::span<const MetricDef> MetricTable() { return kTable; }

const MetricDef& MetricDefOf(MetricId id) { return kTable[static_cast<size_t>(id)]; }

std::string_view MetricName(MetricId id) { return MetricDefOf(id).name; }

const MetricDef* FindMetric(std::string_view name) {
  for (const MetricDef& d : kTable) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

MetricCell MetricValueOf(const MetricDef& def, const Profile& p) {
  if (def.applies == MetricApplies::kGpu && IsCpuJob(p)) return {};
  return def.get(p);
}

void ApplyMetricRules(Profile& p) {
  if (!IsCpuJob(p)) return;
  for (const MetricDef& d : kTable) {
    if (d.applies == MetricApplies::kGpu && d.set != nullptr) d.set(p, MetricCell{});
  }
  // Their spread over a repeat's trials goes with them.
  for (auto it = p.repeat.metrics.begin(); it != p.repeat.metrics.end();) {
    const MetricDef* d = FindMetric(it->first);
    it = d != nullptr && d->applies == MetricApplies::kGpu ? p.repeat.metrics.erase(it)
                                                           : std::next(it);
  }
}

int64_t CountFromDouble(double v) {
  if (std::isnan(v)) return 0;
  return static_cast<int64_t>(std::floor(std::clamp(v, -9e18, 9e18)));
}

int64_t PerStepCount(int64_t total, int64_t steps, bool row_min_one) {
  const int64_t n = total / (steps > 0 ? steps : 1);
  return row_min_one && total > 0 && n < 1 ? 1 : n;
}

std::string MetricTableMarkdown() {
  std::string out =
      "| `get` name | profile.json key | unit | type | n/a when | compare | definition |\n"
      "|---|---|---|---|---|---|---|\n";
  for (const MetricDef& d : kTable) {
    const std::string object = d.object.empty() ? "" : std::string(d.object) + ".";
    const std::string key =
        d.field.empty() ? std::string("(derived)") : "`" + object + std::string(d.field) + "`";
    const char* kind = d.kind == K::kNumber  ? "number"
                       : d.kind == K::kCount ? "integer"
                       : d.kind == K::kFlag  ? "bool"
                                             : "string";
    const char* na = d.applies == A::kGpu ? "CPU job" : "not recorded";
    const char* better = d.better == B::kHigher  ? "higher is better"
                         : d.better == B::kLower ? "lower is better"
                                                 : "";
    out += "| `" + std::string(d.name) + "` | " + key + " | " + std::string(d.unit) + " | " +
           kind + " | " + na + " | " + better + " | " + std::string(d.definition) + " |\n";
  }
  return out;
}

}  // namespace libreyolo
