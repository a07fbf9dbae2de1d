// The in-memory profile: what profile.json holds and what every reader consumes.
//
// One struct for both origins: a profile.json written by us or by the Python LibreYOLO, and a
// raw Chrome trace analysed on the fly. Every scalar a file may lack is std::optional, so that a
// reader shows "n/a" instead of guessing (profile-format.md: "missing optional keys are shown as
// n/a, never guessed").
#ifndef LIBREYOLO_COMMON_PROFILE_PROFILE_H_
#define LIBREYOLO_COMMON_PROFILE_PROFILE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace libreyolo {

inline constexpr char kProfileSchema[] = "libreyolo.profile.analysis/v1";
inline constexpr char kProfileSchemaPrefix[] = "libreyolo.profile.analysis";

using OptDouble = std::optional<double>;

struct KernelRow {
  std::string kernel;    // friendly name
  std::string raw_name;  // the trace's name, cut to 90 characters in files
  std::string category;
  bool tensorcore = false;
  double ms_per_step = 0;
  double pct_of_gpu = 0;
  double count_per_step = 0;
};

struct OpRow {
  std::string op;
  std::string input_shapes;  // empty unless grouped by input shape
  double count_per_step = 0;
  double ms_per_step = 0;  // CPU total
  OptDouble self_cpu_ms_per_step;
  OptDouble pct_of_cpu_ops;
  OptDouble self_cpu_mem_bytes;
  OptDouble cpu_mem_bytes;
  OptDouble self_device_mem_bytes;
  OptDouble device_mem_bytes;
  OptDouble flops;
  OptDouble device_ms_per_step;
  OptDouble self_device_ms_per_step;
};

struct CategoryRow {
  std::string name;
  double pct = 0;
  double ms_per_step = 0;
};

struct PhaseRow {
  std::string phase;
  double gpu_ms_per_step = 0;
  OptDouble wall_ms_per_step;
  // Self CPU time of the operators inside the phase per step (nested ops counted once): what a
  // CPU job's phase costs. Absent in Python profiles and where the phase has no ops.
  OptDouble cpu_ms_per_step;
  double kernels_per_step = 0;
  double ops_per_step = 0;
  int64_t unique_kernels = 0;
};

struct Latency {
  double p50_ms = 0, p90_ms = 0, p99_ms = 0, mean_ms = 0, min_ms = 0, max_ms = 0;
  int64_t n = 0;
  std::vector<double> samples_ms;  // ours only; empty for Python profiles
  // CUDA jobs: the GPU's time per iteration from two CUDA events on the job's stream (first
  // queued op to last), beside the host's wall time above. Absent elsewhere.
  OptDouble cuda_event_p50_ms, cuda_event_mean_ms;
};

struct Stages {
  OptDouble preprocess, forward, postprocess;
};

// Counts of trace content the analyser could not use (perfetto-style stats: never fatal).
struct ParseStats {
  int64_t events = 0;            // every element of traceEvents
  int64_t complete_events = 0;   // ph == "X" with a numeric ts
  int64_t skipped_events = 0;    // malformed: missing/non-numeric ts, non-object, ...
  int64_t non_numeric_ids = 0;   // correlation/flow ids that were not integers
  int64_t duplicate_steps = 0;   // extra copies of a ProfilerStep#N
  // GPU activities (kernels, memcpy, memset) with no launch call in the trace: left out of the
  // window (docs/metrics.md "GPU work belongs to the step that launched it").
  int64_t unattributed_kernels = 0;
};

// One check of what the trace can vouch for (common/analysis/trust.h, docs/metrics.md "Trust"):
// its name, "passed" / "failed" / "not applicable", and the evidence in the trace's own numbers.
struct TrustCheck {
  std::string name;
  std::string outcome;
  std::string evidence;
};

struct DeviceInfo {
  std::string type;  // "cuda", "rocm", "cpu"
  std::string name;
  std::optional<int64_t> index, sm_count;
  OptDouble memory_mb;
};

// One scalar metric over the trials of a `--repeat N` job: its mean (the value the profile's own
// field holds), standard deviation (RepeatInfo::population_std says which), trial count and
// per-trial values.
struct TrialStat {
  double mean = 0, std = 0;
  int64_t n = 0;
  std::vector<double> trials;
};

struct RepeatInfo {
  OptDouble img_per_s_std;
  std::optional<int64_t> img_per_s_n;
  std::vector<double> img_per_s_trials;
  // Every aggregated scalar, by its `get` name (step_ms, latency_p50_ms, forward_ms, ...):
  // profile.json's aggregation.metrics. Empty for a single run and for Python profiles.
  std::map<std::string, TrialStat> metrics;
  // Each trial's profile.json, the final (representative) trial's last: aggregation.profiles and
  // aggregation.representative_profile, as the Python tool's profile_repeat.json names them.
  std::vector<std::string> profiles;
  // How the std fields were computed. Population (divide by n: the Python LibreYOLO's
  // statistics.pstdev, and ours since issue 36) unless the file says "sample" or is one of ours
  // written before (aggregation.metrics without aggregation.std).
  bool population_std = true;
};

struct Profile {
  std::string schema = kProfileSchema;
  std::optional<std::string> trace;  // path of the Chrome trace this came from
  std::string model;
  std::string config_json = "{}";  // the config object, verbatim JSON
  std::optional<std::string> mode;  // "inference" or absent (training / raw trace)
  std::string source_kind;          // "profile" or "trace": how this was loaded

  std::string bound;
  std::string bound_why;

  // Step-level metrics (profile-format.md / docs/metrics.md).
  OptDouble step_ms, img_per_s, dataload_ms, dataload_frac;
  OptDouble gpu_util, gpu_util_raw;
  std::optional<bool> memory_pressure;
  OptDouble cuda_mallocs_per_step;
  OptDouble gpu_busy_ms_per_step, gpu_kernel_ms_per_step, mean_kernel_us, kernels_per_step;
  OptDouble gpu_active_ms_per_step;  // kernels, memcpy and memset: union per step
  // Communication kernels: their union, the part no other kernel overlaps, and the share hidden.
  OptDouble comm_ms_per_step, comm_exposed_ms_per_step, comm_overlap_pct;
  std::optional<std::string> gpu_attribution;  // "launch" | "start": how GPU work was windowed
  std::optional<int64_t> unique_kernels;
  OptDouble memcpy_ms_per_step, tensorcore_pct, peak_vram_mb, peak_reserved_mb;
  // Host memory: the peak of the trace's CPU [memory] events' "Total Allocated" in the window.
  OptDouble peak_cpu_alloc_mb;
  OptDouble host_overhead_ms_per_step, host_overhead_residual_ms_per_step;
  std::optional<std::string> host_overhead_method;  // "measured" | "residual"
  OptDouble launch_api_ms_per_step, host_api_ms_per_step, gpu_wait_host_ms_per_step;
  OptDouble launches_per_step;
  std::optional<std::string> launches_source;  // "runtime" | "kernels"
  OptDouble ops_per_step;
  OptDouble flops_per_step, achieved_tflops;
  // The convolutions and matrix products of the window that carry no FLOP count, by op name
  // (common/trace/flop_formulas.h: an op with no formula, or whose inputs were not recorded, and
  // no count on the ops around or inside it). Non-empty: flops_per_step is a lower bound.
  std::vector<std::string> flops_uncounted_ops;
  OptDouble self_cpu_total_ms_per_step, self_device_total_ms_per_step;
  std::optional<int64_t> batch;  // from config, where known

  OptDouble window_wall_ms;
  std::optional<int64_t> real_steps;

  std::vector<CategoryRow> categories;
  std::vector<PhaseRow> phases;
  std::map<std::string, std::vector<KernelRow>> kernels_by_phase;
  std::map<std::string, std::vector<OpRow>> ops_by_phase;
  std::vector<KernelRow> kernels;            // all, by time
  std::vector<OpRow> ops;                    // all, grouped by name
  std::vector<OpRow> ops_by_input_shape;     // grouped by (name, input shapes); may be empty
  bool has_input_shapes = false;             // ops were recorded with shapes

  std::optional<Latency> latency;
  std::optional<Stages> stages_ms;
  RepeatInfo repeat;

  std::optional<DeviceInfo> device;
  std::string tool_name, tool_version;
  std::string libtorch_version;  // the engine's LibTorch, for recorded profiles
  // The profiler's settings and measured cost ({activities, record_shapes, profile_memory,
  // with_flops, with_stack, profiled_iterations, overhead_pct}), verbatim JSON; empty for traces.
  std::string profiler_json;
  // A data-parallel job's cross-rank analysis (RenderRanksJson's object: the per-rank table and
  // the run's figures), verbatim JSON; empty for any other profile.
  std::string ranks_json;
  std::optional<std::string> created_at;
  ParseStats parse_stats;
  // The checks run on the trace the profile was analysed from (profile.json's trust.checks, less
  // the load check, which is derived from the profile's own numbers when read): empty when the
  // profile was written without them (the Python LibreYOLO's, ours before issue 40).
  std::vector<TrustCheck> trust_checks;

  // Flat metrics a file carried that we do not derive ourselves (shown by `get`).
  std::map<std::string, std::string> extra_metrics_json;
};

// The step as the profiler saw it: the recorded window's length / its steps (docs/metrics.md
// `profiled_step_ms`). A profile and its own trace give the same value. Absent without a window.
inline OptDouble ProfiledStepMs(const Profile& p) {
  if (!p.window_wall_ms.has_value() || p.real_steps.value_or(0) <= 0) return std::nullopt;
  return *p.window_wall_ms / static_cast<double>(*p.real_steps);
}

// Whether flops_per_step is only a lower bound: some FLOP-bearing op was not counted.
inline bool FlopsAreLowerBound(const Profile& p) {
  return p.flops_per_step.has_value() && !p.flops_uncounted_ops.empty();
}

inline constexpr char kOurToolName[] = "libreyolo-profiler";
// The tools of the profiles a daemon job makes outside our engine (docs/profile-json.md, "Who
// made the profile"): the traced process's own Kineto, asked on demand by an attach job, and
// the Python LibreYOLO's own `libreyolo profile`, run by a delegated job.
inline constexpr char kKinetoOnDemandToolName[] = "kineto-on-demand";
inline constexpr char kPythonLibreyoloToolName[] = "python-libreyolo";

// How the headline step_ms was timed: our jobs time it without the profiler; a trace, and the
// profile of an attach job's Kineto trace, have only the profiled window; the Python LibreYOLO
// times it under torch.profiler and does not say so in the file (unknown: say nothing, issue
// 22).
enum class StepTiming { kUnprofiled, kProfiledWindow, kUnknown };
inline StepTiming StepTimingOf(const Profile& p) {
  if (p.source_kind == "trace" || p.tool_name == kKinetoOnDemandToolName) {
    return StepTiming::kProfiledWindow;
  }
  if (p.tool_name == kOurToolName) return StepTiming::kUnprofiled;
  return StepTiming::kUnknown;
}
// summary/phases --json's step_ms_measured: "unprofiled", "profiled window", or null.
inline std::optional<std::string> StepMeasuredText(StepTiming t) {
  if (t == StepTiming::kUnprofiled) return "unprofiled";
  if (t == StepTiming::kProfiledWindow) return "profiled window";
  return std::nullopt;
}
inline std::optional<std::string> StepMeasuredText(const Profile& p) {
  return StepMeasuredText(StepTimingOf(p));
}

// A job on the CPU: the device says so, or (a raw trace, no device recorded) the trace holds no
// GPU activity and no CUDA runtime calls at all. GPU metrics of such a job are n/a, not 0.
inline bool IsCpuJob(const Profile& p) {
  if (p.device.has_value() && !p.device->type.empty()) return p.device->type == "cpu";
  // unique_kernels, not kernels_per_step: a kernel in one step of three floors to 0 per step.
  return p.unique_kernels.value_or(0) == 0 && p.kernels_per_step.value_or(0) == 0 &&
         p.gpu_busy_ms_per_step.value_or(0) == 0 && p.categories.empty() &&
         p.memcpy_ms_per_step.value_or(0) == 0 &&
         p.launches_source.value_or("kernels") == "kernels" && !p.peak_vram_mb.has_value();
}

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_PROFILE_PROFILE_H_
