#include "common/analysis/trust.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/analysis/load_shift.h"

namespace libreyolo {
namespace {

TrustCheck Check(const char* name, const char* outcome, std::string evidence) {
  return TrustCheck{name, outcome, std::move(evidence)};
}

// The step count the evidence divides by: distinct ProfilerStep numbers, at least 1.
int64_t StepCount(const TraceData& t) {
  std::vector<int64_t> numbers;
  for (const StepMark& s : t.steps) numbers.push_back(s.number);
  std::sort(numbers.begin(), numbers.end());
  const auto n = std::unique(numbers.begin(), numbers.end()) - numbers.begin();
  return std::max<int64_t>(n, 1);
}

std::string PerStep(int64_t n, int64_t steps) {
  return steps > 1 ? absl::StrFormat("%d (%.1f per step over %d steps)", n,
                                     static_cast<double>(n) / static_cast<double>(steps), steps)
                   : absl::StrCat(n);
}

TrustCheck GpuActivityCheck(const TraceData& t) {
  int64_t launches = 0, kernels = 0, copies = 0;
  for (const TraceEvent& e : t.events) {
    if (e.cls == EventClass::kKernel) ++kernels;
    if (e.cls == EventClass::kMemcpy || e.cls == EventClass::kMemset) ++copies;
    if (e.cls == EventClass::kRuntime && IsGpuLaunchCall(t.strings.Get(e.name))) ++launches;
  }
  const int64_t steps = StepCount(t);
  if (launches == 0) {
    return Check(kCheckGpuActivity, kTrustNotApplicable,
                 kernels > 0 ? absl::StrCat(kernels, " kernels and no launch calls in the trace")
                             : "no GPU launch calls in the trace");
  }
  if (kernels == 0) {
    return Check(kCheckGpuActivity, kTrustFailed,
                 absl::StrCat(PerStep(launches, steps), " GPU launch calls (cudaLaunchKernel & "
                              "co.) and 0 kernels", copies > 0 ? "" : ", 0 memcpy/memset",
                              ": CUPTI did not attach (or GPU activity was not recorded), so "
                              "the GPU-side figures are unknown"));
  }
  return Check(kCheckGpuActivity, kTrustPassed,
               absl::StrCat(PerStep(launches, steps), " launch calls, ", PerStep(kernels, steps),
                            " kernels"));
}

// The clock's resolution as the trace writes it: 1 us when every GPU activity and runtime call
// starts on a whole microsecond (Kineto's integer timestamps), else 1 ns.
int64_t ResolutionNs(const TraceData& t) {
  for (const TraceEvent& e : t.events) {
    if ((IsGpuActivity(e.cls) || e.cls == EventClass::kRuntime) && e.ts_ns % 1000 != 0) return 1;
  }
  return 1000;
}

bool IsDeviceSync(std::string_view name) {
  const std::string_view n = StripVersionSuffix(name);
  return n == "cudaDeviceSynchronize" || n == "cuCtxSynchronize" || n == "hipDeviceSynchronize";
}

std::string Us(int64_t ns) { return absl::StrFormat("%.3f us", static_cast<double>(ns) / 1e3); }

TrustCheck TimestampCheck(const TraceData& t) {
  const std::vector<TraceEvent>& ev = t.events;
  absl::flat_hash_map<int64_t, uint32_t> launch_of;  // correlation -> runtime call
  // Device-wide synchronisations per CPU thread, by start.
  absl::flat_hash_map<uint32_t, std::vector<std::pair<int64_t, int64_t>>> syncs;
  for (uint32_t i = 0; i < ev.size(); ++i) {
    const TraceEvent& e = ev[i];
    if (e.cls != EventClass::kRuntime) continue;
    if (e.correlation != kNoId) launch_of.try_emplace(e.correlation, i);
    if (IsDeviceSync(t.strings.Get(e.name))) {
      syncs[e.thread].emplace_back(e.ts_ns, e.ts_ns + e.dur_ns);
    }
  }
  for (auto& [thread, list] : syncs) std::sort(list.begin(), list.end());
  const int64_t res = ResolutionNs(t);
  int64_t matched = 0, early = 0, late = 0, worst_early = 0, worst_late = 0;
  std::string first_early, first_late;
  for (const TraceEvent& k : ev) {
    if (!IsGpuActivity(k.cls) || k.correlation == kNoId) continue;
    const auto it = launch_of.find(k.correlation);
    if (it == launch_of.end()) continue;
    ++matched;
    const TraceEvent& l = ev[it->second];
    if (k.ts_ns < l.ts_ns - res) {
      if (early++ == 0) {
        first_early = absl::StrCat(t.strings.Get(k.name).substr(0, 60), " (correlation ",
                                   k.correlation, ")");
      }
      worst_early = std::max(worst_early, l.ts_ns - k.ts_ns);
    }
    // The first device-wide synchronisation on the launching thread after the launch returned:
    // the activity has ended when it returns.
    const auto s = syncs.find(l.thread);
    if (s == syncs.end()) continue;
    const int64_t launch_end = l.ts_ns + l.dur_ns;
    const auto next = std::lower_bound(s->second.begin(), s->second.end(),
                                       std::make_pair(launch_end, INT64_MIN));
    if (next == s->second.end()) continue;
    const int64_t end = k.ts_ns + k.dur_ns;
    if (end > next->second + res) {
      if (late++ == 0) first_late = std::string(t.strings.Get(k.name).substr(0, 60));
      worst_late = std::max(worst_late, end - next->second);
    }
  }
  const KinetoMarkers& km = t.kineto;
  if (matched == 0 && km.timestamp_warnings == 0) {
    return Check(kCheckTimestamps, kTrustNotApplicable,
                 "no GPU activity linked to a launch call by correlation id");
  }
  std::vector<std::string> found;
  if (early > 0) {
    found.push_back(absl::StrCat(early, " of ", matched, " GPU activities start before their "
                                 "launch call by more than the clock's resolution (",
                                 Us(res), "), by up to ", Us(worst_early), "; the first: ",
                                 first_early));
  }
  if (late > 0) {
    found.push_back(absl::StrCat(late, " of ", matched, " end after a device synchronisation "
                                 "that followed their launch had returned, by up to ",
                                 Us(worst_late),
                                 "; the first: ", first_late));
  }
  if (km.timestamp_warnings > 0) {
    found.push_back(absl::StrCat("Kineto's own log warns ", km.timestamp_warnings,
                                 " times that a GPU op starts before its runtime call"));
  }
  if (found.empty()) {
    return Check(kCheckTimestamps, kTrustPassed,
                 absl::StrCat(matched, " GPU activities linked to their launch calls, none "
                              "before its launch", syncs.empty() ? "" : " or after the next "
                              "device synchronisation"));
  }
  return Check(kCheckTimestamps, kTrustFailed,
               absl::StrCat(absl::StrJoin(found, "; "), ": the timestamps are corrupted (as "
                            "after the profiler's first session in a process, pytorch#192021), "
                            "so the kernel times and GPU utilisation are not to be relied on"));
}

TrustCheck KinetoBuffersCheck(const TraceData& t) {
  const KinetoMarkers& k = t.kineto;
  if (!k.log_present) {
    return Check(kCheckKinetoBuffers, kTrustNotApplicable,
                 "the trace carries no Kineto log (top-level INFO/WARNING/ERROR) to check");
  }
  if (k.buffer_overflows == 0 && k.dropped_lines == 0) {
    return Check(kCheckKinetoBuffers, kTrustPassed,
                 "Kineto's log in the trace has no buffer-overflow or dropped-record message");
  }
  std::vector<std::string> found;
  if (k.buffer_overflows > 0) {
    found.push_back(absl::StrCat("its activity buffers overflowed (", k.buffer_overflows,
                                 "x \"Exceeded max GPU buffer count\": tracing stopped early)"));
  }
  if (k.dropped_lines > 0) {
    found.push_back(absl::StrCat("CUPTI dropped ", k.dropped_records, " activity records"));
  }
  return Check(kCheckKinetoBuffers, kTrustFailed,
               absl::StrCat("Kineto's log in the trace says ", absl::StrJoin(found, " and "),
                            ": GPU activity is missing, so kernel counts and GPU time are "
                            "lower bounds", k.lines.empty() ? "" : " (\"" + k.lines[0] + "\")"));
}

TrustCheck CudaGraphCheck(const TraceData& t) {
  absl::flat_hash_map<int64_t, int64_t> kernels_of;  // graph launch correlation -> kernels
  int64_t graph_launches = 0;
  for (const TraceEvent& e : t.events) {
    if (e.cls == EventClass::kRuntime && IsGraphLaunchCall(t.strings.Get(e.name))) {
      ++graph_launches;
      if (e.correlation != kNoId) kernels_of.try_emplace(e.correlation, 0);
    }
  }
  if (graph_launches == 0) {
    return Check(kCheckCudaGraphs, kTrustNotApplicable, "no CUDA graph launches in the trace");
  }
  int64_t kernels = 0;
  for (const TraceEvent& e : t.events) {
    if (e.cls != EventClass::kKernel || e.correlation == kNoId) continue;
    if (auto it = kernels_of.find(e.correlation); it != kernels_of.end()) {
      ++it->second;
      ++kernels;
    }
  }
  int64_t most = 0;
  for (const auto& [corr, n] : kernels_of) most = std::max(most, n);
  if (most > 1) {
    return Check(kCheckCudaGraphs, kTrustPassed,
                 absl::StrCat(graph_launches, " graph launches ran ", kernels,
                              " kernels, recorded one by one (launches_per_step counts each "
                              "graph launch once)"));
  }
  return Check(kCheckCudaGraphs, kTrustFailed,
               absl::StrCat(graph_launches, " graph launches with at most one kernel record "
                            "each (", kernels, " in all): the graphs' kernels are recorded as "
                            "one, so kernels_per_step, mean_kernel_us and the kernel table count "
                            "a graph as one kernel"));
}

std::optional<TrustCheck> LoadCheck(const Profile& p) {
  if (StepTimingOf(p) != StepTiming::kUnprofiled || p.step_ms.value_or(0) <= 0) {
    return std::nullopt;  // no unprofiled headline to set against the window: not applicable
  }
  if (const std::optional<LoadShift> s = DetectLoadShift(p)) {
    return Check(kCheckLoadSteady, kTrustFailed, s->note);
  }
  if (const std::string note = RecordedLoadShiftNote(p); !note.empty()) {
    return Check(kCheckLoadSteady, kTrustFailed, note);
  }
  const OptDouble window = ProfiledStepMs(p);
  if (!window) {
    return Check(kCheckLoadSteady, kTrustNotApplicable,
                 "no profiled window to set against the headline step");
  }
  return Check(kCheckLoadSteady, kTrustPassed,
               absl::StrFormat("the headline step (%.2f ms, unprofiled) and the profiled "
                               "window's (%.2f ms) agree within %.1fx and the profiler's overhead",
                               *p.step_ms, *window, kLoadShiftFactor));
}

}  // namespace

std::string TrustReason(const TrustCheck& c) {
  if (c.name == kCheckGpuActivity) {
    return "GPU launch calls but no kernels (CUPTI did not attach): the GPU-side figures are "
           "unknown";
  }
  if (c.name == kCheckTimestamps) return "kernel timestamps corrupted";
  if (c.name == kCheckKinetoBuffers) return "Kineto dropped GPU records";
  if (c.name == kCheckCudaGraphs) return "CUDA graph kernels recorded as one";
  if (c.name == kCheckLoadSteady) return "the machine's load changed during the job";
  return absl::StrCat(c.name, " failed");
}

std::string_view StripVersionSuffix(std::string_view name) {
  const size_t pos = name.rfind("_v");
  if (pos == std::string_view::npos || pos + 2 >= name.size()) return name;
  for (size_t i = pos + 2; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return name;
  }
  return name.substr(0, pos);
}

bool IsGpuLaunchCall(std::string_view name) {
  static constexpr std::array<std::string_view, 11> kPrefixes = {
      "cudaLaunchKernel",    "cudaLaunchCooperativeKernel", "cudaGraphLaunch",
      "cuLaunchKernel",      "cuLaunchCooperativeKernel",   "cuGraphLaunch",
      "hipLaunchKernel",     "hipExtLaunchKernel",          "hipModuleLaunchKernel",
      "hipExtModuleLaunchKernel", "hipGraphLaunch"};
  const std::string_view n = StripVersionSuffix(name);
  for (const auto p : kPrefixes) {
    if (n.starts_with(p)) return true;
  }
  return false;
}

bool IsGraphLaunchCall(std::string_view name) {
  const std::string_view n = StripVersionSuffix(name);
  return n.starts_with("cudaGraphLaunch") || n.starts_with("cuGraphLaunch") ||
         n.starts_with("hipGraphLaunch");
}

std::vector<TrustCheck> RunTraceChecks(const TraceData& trace) {
  return {GpuActivityCheck(trace), TimestampCheck(trace), KinetoBuffersCheck(trace),
          CudaGraphCheck(trace)};
}

TrustAssessment AssessTrust(const Profile& p) {
  TrustAssessment t;
  for (const TrustCheck& c : p.trust_checks) {
    if (c.name != kCheckLoadSteady) t.checks.push_back(c);
  }
  if (std::optional<TrustCheck> load = LoadCheck(p)) t.checks.push_back(*std::move(load));
  t.checked = !t.checks.empty();
  bool none = false;
  for (const TrustCheck& c : t.checks) {
    if (c.outcome != kTrustFailed) continue;
    t.reasons.push_back(TrustReason(c));
    none = none || c.name == kCheckGpuActivity;
  }
  t.confidence = none ? kConfidenceNone : t.reasons.empty() ? kConfidenceHigh : kConfidenceReduced;
  return t;
}

bool TrustCheckFailed(const Profile& p, std::string_view name) {
  return std::any_of(p.trust_checks.begin(), p.trust_checks.end(), [&](const TrustCheck& c) {
    return c.name == name && c.outcome == kTrustFailed;
  });
}

std::string TrustSummary(const TrustAssessment& t) {
  if (!t.checked) return "not checked (the profile carries no trace checks)";
  int passed = 0, na = 0;
  for (const TrustCheck& c : t.checks) {
    passed += c.outcome == kTrustPassed;
    na += c.outcome == kTrustNotApplicable;
  }
  if (t.reasons.empty()) {
    return absl::StrCat(t.confidence, " (", passed, passed == 1 ? " check" : " checks",
                        " passed, ", na, " not applicable)");
  }
  return absl::StrCat(t.confidence, ": ", absl::StrJoin(t.reasons, "; "));
}

}  // namespace libreyolo
