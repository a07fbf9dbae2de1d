#include "common/analysis/verdict.h"

#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/analysis/trust.h"
#include "common/json/json_read.h"
#include "rapidjson/document.h"

namespace libreyolo {
namespace {

// A job on a TorchScript export (config.format "torchscript").
bool IsExport(const Profile& p) {
  const rapidjson::Document d = JsonOrNull(p.config_json);
  if (!d.IsObject()) return false;
  const auto it = d.FindMember("format");
  return it != d.MemberEnd() && it->value.IsString() &&
         std::string_view(it->value.GetString()) == "torchscript";
}

constexpr double kComputeUtil = 0.8;
constexpr double kDataloadFrac = 0.2;
constexpr double kStageFrac = 0.35;
constexpr double kExposedCommFrac = 0.1;

// What the per-step figures are per: the step, or, for a profile whose trace marks no steps
// (an attach job's on-demand window: step_ms null, the window recorded), that one window.
struct Period {
  double ms;
  const char* word;
};
Period PeriodOf(const Profile& p) {
  if (!p.step_ms.has_value() && p.window_wall_ms.has_value()) return {*p.window_wall_ms, "window"};
  return {p.step_ms.value_or(0), "step"};
}

// Exposed communication (>= 10 % of the period) no less than the host overhead: the rank waits
// on its collectives more than on its own launches.
Verdict CommunicationVerdict(const Profile& p, const Period& period, double host) {
  const double comm = p.comm_ms_per_step.value_or(0);
  const double kernel = p.gpu_kernel_ms_per_step.value_or(0);
  return {kBoundCommunication,
          absl::StrFormat(
              "%.1f ms of the %.1f ms %s is communication with no compute beside it (exposed; "
              "%.1f ms of communication per %s, %.0f%% of the GPU's kernel time, %.0f%% of it "
              "hidden), at least the %.2f ms per %s of host overhead (%s): the rank waits on its "
              "collectives, that is on the slowest rank or the interconnect, before its own "
              "launches. Read every rank's traces together (`libreyolo profile summary DIR/`) "
              "for a straggler; overlap gradient all-reduce with backward (DDP buckets, "
              "bucket_cap_mb), accumulate gradients over more micro-batches, or use a faster "
              "interconnect.",
              p.comm_exposed_ms_per_step.value_or(0), period.ms, period.word, comm, period.word,
              kernel > 0 ? 100 * comm / kernel : 0, p.comm_overlap_pct.value_or(0), host,
              period.word, p.host_overhead_method.value_or("residual"))};
}

Verdict TrainingVerdict(const Profile& p) {
  const Period period = PeriodOf(p);
  const double step = period.ms;
  const char* per = period.word;
  const double util = p.gpu_util.value_or(0);
  const double util_raw = p.gpu_util_raw.value_or(util);
  const double mallocs = p.cuda_mallocs_per_step.value_or(0);
  const double frac = p.dataload_frac.value_or(0);
  const bool has_gpu = p.kernels_per_step.value_or(0) > 0;

  if (p.memory_pressure.value_or(false)) {
    return {kBoundMemoryPressure,
            absl::StrFormat("%.1f cudaMalloc/cudaFree calls per %s (threshold 5) and GPU "
                            "utilisation %.2f (raw %.2f): the caching allocator is thrashing, so "
                            "every other number here is unreliable. Lower --batch or --imgsz, "
                            "set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, or free "
                            "memory held by other processes, then profile again.",
                            mallocs, per, util, util_raw)};
  }
  if (frac >= kDataloadFrac) {
    return {kBoundDataloader,
            absl::StrFormat("data loading takes %.1f ms of the %.1f ms %s (%.0f%%, threshold "
                            "20%%). Raise --workers, use pinned memory and persistent workers, "
                            "cache decoded images, or move augmentation off the critical path.",
                            p.dataload_ms.value_or(0), step, per, 100 * frac)};
  }
  if (!has_gpu) {
    return {kBoundCompute,
            absl::StrFormat("no GPU kernels in the %.1f ms %s: the work runs on the CPU and the "
                            "%s is CPU-bound. See `ops` for where the CPU time goes; use a GPU "
                            "device, fewer threads contending, or a smaller --imgsz.",
                            step, per, per)};
  }
  // Communication no compute runs beside: the part of the step data-parallel training pays for.
  const double exposed = p.comm_exposed_ms_per_step.value_or(0);
  if (util >= kComputeUtil && step > 0 && exposed >= kExposedCommFrac * step) {
    return {kBoundCompute,
            absl::StrFormat("the GPU is busy %.1f ms per %.1f ms %s (utilisation %.2f up to the "
                            "end of the last kernel, threshold 0.80), and communication bounds it: "
                            "%.1f ms per %s of communication runs with no compute beside it "
                            "(exposed; %.0f%% of the %.1f ms of communication is hidden). Overlap "
                            "gradient all-reduce with backward (DDP buckets, bucket_cap_mb), "
                            "accumulate gradients over more micro-batches, or use a faster "
                            "interconnect.",
                            p.gpu_busy_ms_per_step.value_or(0), step, per, util, exposed, per,
                            p.comm_overlap_pct.value_or(0), p.comm_ms_per_step.value_or(0))};
  }
  if (util >= kComputeUtil) {
    return {kBoundCompute,
            absl::StrFormat("the GPU is busy %.1f ms per %.1f ms %s (utilisation %.2f up to the "
                            "end of the last kernel, threshold 0.80); Tensor Core share %.0f%%. "
                            "Use AMP (bf16/fp16), channels_last, fewer/larger kernels "
                            "(torch.compile), or a smaller model.",
                            p.gpu_busy_ms_per_step.value_or(0), step, per, util,
                            p.tensorcore_pct.value_or(0))};
  }
  // A distributed rank: communication nothing overlaps is weighed before the host's launches.
  const double host = p.host_overhead_ms_per_step.value_or(0);
  const bool comm_exposed = step > 0 && exposed >= kExposedCommFrac * step;
  if (comm_exposed && exposed >= host) return CommunicationVerdict(p, period, host);
  return {kBoundHost,
          absl::StrFormat("the GPU is busy only %.1f ms per %.1f ms %s (utilisation %.2f up to "
                          "the end of the last kernel, < 0.80) with %.0f kernel launches per %s; "
                          "host overhead %.2f ms per %s (%s)%s. Raise --batch, use CUDA graphs or "
                          "torch.compile to cut launches, and avoid host synchronisations "
                          "(.item(), .cpu()).",
                          p.gpu_busy_ms_per_step.value_or(0), step, per, util,
                          p.launches_per_step.value_or(0), per, host, per,
                          p.host_overhead_method.value_or("residual"),
                          comm_exposed ? absl::StrFormat("; besides, %.1f ms per %s of "
                                                         "communication runs with no compute "
                                                         "beside it", exposed, per)
                                       : std::string())};
}

Verdict InferenceVerdict(const Profile& p) {
  const double step = p.step_ms.value_or(0);
  const Stages& s = *p.stages_ms;
  const double pre = s.preprocess.value_or(0);
  const double fwd = s.forward.value_or(0);
  const double post = s.postprocess.value_or(0);
  if (step > 0 && post >= fwd && post / step >= kStageFrac) {
    return {kBoundNms,
            absl::StrFormat("postprocess (decode + NMS) takes %.2f ms of %.2f ms (%.0f%%), more "
                            "than the forward pass (%.2f ms). Raise --conf, lower --max-det, or "
                            "run NMS on the device.",
                            post, step, 100 * post / step, fwd)};
  }
  if (step > 0 && pre >= fwd && pre / step >= kStageFrac) {
    return {kBoundPreprocess,
            absl::StrFormat("preprocess (decode + letterbox + copy) takes %.2f ms of %.2f ms "
                            "(%.0f%%), more than the forward pass (%.2f ms). Decode in parallel, "
                            "resize on the device, or feed pre-sized images.",
                            pre, step, 100 * pre / step, fwd)};
  }
  const bool on_cpu = p.kernels_per_step.value_or(0) <= 0;
  const double util = p.gpu_util.value_or(0);
  if (on_cpu || util >= kComputeUtil) {
    // The levers that apply to this job: --half is CUDA's autocast; an export runs at the size
    // it was traced at (a smaller one is another export).
    const bool exported = IsExport(p);
    return {kBoundCompute,
            absl::StrFormat("the forward pass dominates (%.2f of %.2f ms)%s. Use %s%s, or a "
                            "larger --batch for throughput.",
                            fwd, step, on_cpu ? " and runs on the CPU" : "",
                            on_cpu ? "more --threads where cores are free, " : "--half, ",
                            exported ? "an export at a smaller imgsz or model size"
                                     : "a smaller --imgsz or model size")};
  }
  return {kBoundHost,
          absl::StrFormat("GPU utilisation %.2f < 0.80 with %.0f launches per iteration: the "
                          "device waits for the host. Raise --batch, use CUDA graphs or "
                          "TensorRT, and avoid host synchronisations.",
                          util, p.launches_per_step.value_or(0))};
}

const TrustCheck* FailedCheck(const Profile& p, std::string_view name) {
  for (const TrustCheck& c : p.trust_checks) {
    if (c.name == name && c.outcome == kTrustFailed) return &c;
  }
  return nullptr;
}

// The verdict as far as the trace's trust checks allow (trust.h). Data loading and the
// inference stages are host-timed and stand; the rest rests on the GPU's recorded activity.
Verdict QualifyByTrust(const Profile& p, Verdict v) {
  if (v.bound == kBoundDataloader || v.bound == kBoundNms || v.bound == kBoundPreprocess) {
    return v;
  }
  if (const TrustCheck* gpu = FailedCheck(p, kCheckGpuActivity)) {
    const std::string unknown = absl::StrCat(
        "The trace has ", gpu->evidence, ". Whether compute, communication or the host "
        "bounds the step cannot be said from it: profile again with CUPTI loading (libcupti on "
        "the library path, no other CUPTI client such as Nsight or DCGM profiling attached) and "
        "check that `libreyolo profile kernels` lists the GPU work.");
    const double mallocs = p.cuda_mallocs_per_step.value_or(0);
    if (v.bound == kBoundMemoryPressure && mallocs >= 5) {
      v.why = absl::StrFormat("%.1f cudaMalloc/cudaFree calls per step (threshold 5): the "
                              "caching allocator is thrashing. ", mallocs) + unknown;
      return v;
    }
    return {kBoundUnknown, unknown};
  }
  std::vector<std::string> doubts;
  for (const char* name : {kCheckTimestamps, kCheckKinetoBuffers, kCheckCudaGraphs}) {
    if (const TrustCheck* c = FailedCheck(p, name)) doubts.push_back(TrustReason(*c));
  }
  if (!doubts.empty()) {
    v.why = absl::StrCat("This rests on GPU figures the trace's checks question (",
                         absl::StrJoin(doubts, "; "), ": see `trust`), so it holds only as far "
                         "as they do. ", v.why);
  }
  return v;
}

}  // namespace

bool IsMemoryPressure(double mallocs_per_step, double gpu_util_raw) {
  return mallocs_per_step >= 5 || gpu_util_raw > 1.05;
}

Verdict ComputeVerdict(const Profile& p) {
  if (p.mode == "inference" && p.stages_ms.has_value() && !p.memory_pressure.value_or(false)) {
    return QualifyByTrust(p, InferenceVerdict(p));
  }
  return QualifyByTrust(p, TrainingVerdict(p));
}

}  // namespace libreyolo
