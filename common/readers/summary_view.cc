#include "common/readers/summary_view.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_format.h"
#include "common/analysis/kernel_classify.h"
#include "common/analysis/load_shift.h"
#include "common/analysis/metric_list.h"
#include "common/analysis/trust.h"
#include "common/json/json_read.h"
#include "common/json/json_writer.h"
#include "common/profile/inference_metrics.h"
#include "common/profile/metric_id.h"
#include "common/profile/metric_table.h"
#include "common/readers/ranks_view.h"
#include "common/render/text_table.h"
#include "rapidjson/document.h"

namespace libreyolo {
namespace {

// config.weights: the checkpoint's path, or "random-init"; "" where the config records none.
std::string WeightsOf(const std::string& config_json) {
  const rapidjson::Document d = JsonOrNull(config_json);
  if (!d.IsObject()) return "";
  auto weights = d.FindMember("weights");
  if (weights == d.MemberEnd() || !weights->value.IsString()) return "";
  return weights->value.GetString();
}

// config.weights_searched: where a random init's weights were looked for (none recorded: "").
std::string WeightsSearchedOf(const std::string& config_json) {
  const rapidjson::Document d = JsonOrNull(config_json);
  if (!d.IsObject()) return "";
  auto places = d.FindMember("weights_searched");
  if (places == d.MemberEnd() || !places->value.IsArray()) return "";
  std::vector<std::string> out;
  for (const auto& place : places->value.GetArray()) {
    if (place.IsString()) out.emplace_back(place.GetString());
  }
  return absl::StrJoin(out, ", ");
}

// config.traced_process.pid: the process an attach job traced ("" where none is recorded).
std::string TracedPidOf(const std::string& config_json) {
  const rapidjson::Document d = JsonOrNull(config_json);
  if (!d.IsObject()) return "";
  auto proc = d.FindMember("traced_process");
  if (proc == d.MemberEnd() || !proc->value.IsObject()) return "";
  auto pid = proc->value.FindMember("pid");
  if (pid == proc->value.MemberEnd() || !pid->value.IsInt64()) return "";
  return absl::StrCat(pid->value.GetInt64());
}

// Who measured: our engine (LibTorch in C++), the Python LibreYOLO (eager PyTorch), or a traced
// process's own Kineto (an attach job). Our engine and the Python LibreYOLO
// are different measurements of the same model, not one number twice; "" for a raw trace.
std::string MeasuredBy(const Profile& p) {
  if (p.source_kind == "trace") return "";
  if (p.tool_name == kOurToolName) {
    return absl::StrCat("libreyolo-profiler ", p.tool_version, "'s engine: the model in LibTorch ",
                        p.libtorch_version.empty() ? "" : p.libtorch_version + " ",
                        "(C++); the Python LibreYOLO's eager PyTorch is another measurement of "
                        "it (bench/README.md measures both on one machine)");
  }
  if (p.tool_name.empty()) {
    return "the Python LibreYOLO (eager PyTorch); libreyolo's LibTorch engine is another "
           "measurement of the same model";
  }
  if (p.tool_name == kPythonLibreyoloToolName) {
    return absl::StrCat("the Python LibreYOLO's own measurement (its `libreyolo profile`",
                        p.tool_version.empty() ? "" : ", " + p.tool_version,
                        ", eager PyTorch, run for this job); libreyolo's LibTorch engine is "
                        "another measurement of the same model");
  }
  if (p.tool_name == kKinetoOnDemandToolName) {
    const std::string pid = TracedPidOf(p.config_json);
    return absl::StrCat("the traced process's own Kineto (PyTorch's profiler, on demand",
                        pid.empty() ? "" : ", pid " + pid,
                        "): its own PyTorch as it ran, over the recorded window; not "
                        "libreyolo's engine");
  }
  return p.tool_name;
}

}  // namespace

SummaryView BuildSummary(const Profile& p, const std::string& source) {
  SummaryView v;
  v.source = source;
  v.profile = p;
  v.cpu_job = IsCpuJob(p);
  v.cpu_threads = CpuThreadsOf(p.config_json);
  v.batch = BatchOf(p.config_json);
  if (v.batch.empty() && p.batch) v.batch = absl::StrCat(*p.batch);
  v.profiler_overhead = ProfilerOverheadOf(p.profiler_json);
  v.profiler_switches = ProfilerSwitchesOf(p.profiler_json);
  v.switches_over_budget = SwitchesOverBudgetOf(p.profiler_json);
  v.load_shift = RecordedLoadShiftNote(p);
  if (WeightsOf(p.config_json) == "random-init") {
    v.weights_note = RandomInitTimingNote(p.mode.value_or(""));
    if (const std::string searched = WeightsSearchedOf(p.config_json); !searched.empty()) {
      v.weights_note = absl::StrCat("no weights file at ", searched, "; ", v.weights_note);
    }
  }
  // Self CPU time of the operators by category (the kernel categories' rule on the op's name).
  std::map<std::string, double> by_cat;
  double total = 0;
  for (const OpRow& o : p.ops) {
    if (!o.self_cpu_ms_per_step.has_value()) continue;
    by_cat[KernelCategory(o.op)] += *o.self_cpu_ms_per_step;
    total += *o.self_cpu_ms_per_step;
  }
  for (const auto& [name, ms] : by_cat) {
    v.cpu_op_categories.push_back(CategoryRow{name, total > 0 ? 100 * ms / total : 0, ms});
  }
  std::sort(v.cpu_op_categories.begin(), v.cpu_op_categories.end(),
            [](const CategoryRow& a, const CategoryRow& b) {
              return std::tie(b.ms_per_step, a.name) < std::tie(a.ms_per_step, b.name);
            });
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

// " ± sd (n=N trials)" for a metric a repeat profile aggregated; "" otherwise.
std::string Sd(const Profile& p, const std::string& metric, int precision = 2) {
  auto it = p.repeat.metrics.find(metric);
  if (it == p.repeat.metrics.end() || it->second.n < 2) return "";
  return absl::StrFormat(" ± %.*f (n=%d trials)", precision, it->second.std, it->second.n);
}

// "x ± sd unit (n=N trials)" or "x unit".
std::string ValueSd(const Profile& p, MetricId id, OptDouble v, const std::string& unit,
                    int precision = 2) {
  const std::string metric(MetricName(id));
  const std::string sd = Sd(p, metric, precision);
  if (sd.empty() || !v.has_value()) return FmtUnit(v, unit, precision);
  auto it = p.repeat.metrics.find(metric);
  return absl::StrFormat("%.*f ± %.*f %s (n=%d trials)", precision, *v, precision,
                         it->second.std, unit, it->second.n);
}

constexpr char kCpuNa[] = "n/a (cpu job)";

std::string Steps(int64_t n) { return absl::StrCat(n, n == 1 ? " step" : " steps"); }

// config.head_reinitialised (a checkpoint trained on other classes) in words; "" without one.
std::string HeadReinitOf(const std::string& config_json) {
  const rapidjson::Document d = JsonOrNull(config_json);
  if (!d.IsObject() || !d.HasMember("head_reinitialised")) return "";
  const auto& h = d["head_reinitialised"];
  if (!h.IsObject()) return "";
  auto num = [&](const char* k) { return h.HasMember(k) && h[k].IsInt64() ? h[k].GetInt64() : 0; };
  auto len = [&](const char* k) { return h.HasMember(k) && h[k].IsArray() ? h[k].Size() : 0; };
  return absl::StrCat("re-initialised from ", num("from_classes"), " to ", num("to_classes"),
                      " classes (", len("reinitialised"), " tensors new, ", num("kept"),
                      " kept from the checkpoint)");
}

}  // namespace

std::string RandomInitTimingNote(const std::string& mode) {
  if (mode == "inference") {
    return "preprocess and forward time as trained weights do (the same "
           "shapes and kernels); postprocess does not, since NMS works on the detections and "
           "random weights give other detections (count and overlap) than trained ones";
  }
  return "forward, backward and optimizer steps time as trained weights "
         "do (the same shapes and kernels); the loss's target assignment follows the "
         "predictions, so its share may differ with trained weights, and the losses themselves "
         "say nothing about the model";
}

std::string BatchOf(const std::string& config_json) {
  const rapidjson::Document d = JsonOrNull(config_json);
  if (!d.IsObject()) return "";
  auto batch = d.FindMember("batch");
  if (batch == d.MemberEnd() || !batch->value.IsInt64()) return "";
  std::string out = absl::StrCat(batch->value.GetInt64());
  auto rule = d.FindMember("batch_rule");
  if (rule != d.MemberEnd() && rule->value.IsString()) {
    absl::StrAppend(&out, " (chosen by --batch -1: ", rule->value.GetString(), ")");
  }
  return out;
}

std::optional<std::string> BatchRuleOf(const std::string& config_json) {
  const rapidjson::Document d = JsonOrNull(config_json);
  if (!d.IsObject()) return std::nullopt;
  auto rule = d.FindMember("batch_rule");
  if (rule == d.MemberEnd() || !rule->value.IsString()) return std::nullopt;
  return std::string(rule->value.GetString(), rule->value.GetStringLength());
}

std::string CpuThreadsOf(const std::string& config_json) {
  const rapidjson::Document d = JsonOrNull(config_json);
  if (!d.IsObject()) return "";
  auto text = [&](const char* key) -> std::string {
    auto it = d.FindMember(key);
    if (it == d.MemberEnd()) return "";
    if (it->value.IsString()) return it->value.GetString();
    if (it->value.IsInt64()) return absl::StrCat(it->value.GetInt64());
    return "";
  };
  if (text("threads").empty() && text("blas").empty()) return "";
  std::string out = absl::StrCat(text("threads").empty() ? "n/a" : text("threads"), " intra-op");
  if (!text("interop_threads").empty()) absl::StrAppend(&out, ", ", text("interop_threads"), " inter-op");
  if (!text("blas").empty()) absl::StrAppend(&out, "; BLAS ", text("blas"));
  if (!text("blas_threads").empty()) absl::StrAppend(&out, ", ", text("blas_threads"), " threads");
  return out;
}

std::string ProfilerOverheadOf(const std::string& profiler_json) {
  const rapidjson::Document d = JsonOrNull(profiler_json);
  if (!d.IsObject()) return "";
  auto pct = d.FindMember("overhead_pct");
  if (pct == d.MemberEnd() || !pct->value.IsNumber()) return "";
  std::string out = absl::StrFormat("%.1f %%", pct->value.GetDouble());
  auto ci = d.FindMember("overhead_ci_pct");
  if (ci != d.MemberEnd() && ci->value.IsArray() && ci->value.Size() == 2 &&
      ci->value[0].IsNumber() && ci->value[1].IsNumber()) {
    absl::StrAppend(&out, absl::StrFormat(" [%.1f, %.1f]", ci->value[0].GetDouble(),
                                          ci->value[1].GetDouble()));
  }
  auto pairs = d.FindMember("overhead_pairs");
  if (pairs != d.MemberEnd() && pairs->value.IsInt64()) {
    absl::StrAppend(&out, " (n=", pairs->value.GetInt64(), ")");
  }
  // Whose cost it is: the CPU collector that recorded (profiles before it was a choice: none).
  auto collector = d.FindMember("cpu_collector");
  if (collector != d.MemberEnd() && collector->value.IsString() &&
      collector->value.GetStringLength() > 0 && collector->value.GetStringLength() <= 16) {
    absl::StrAppend(&out, ", ", collector->value.GetString(), " collector");
  }
  auto decision = d.FindMember("switch_decision");
  if (decision != d.MemberEnd() && decision->value.IsString() &&
      std::string(decision->value.GetString()) == "cached") {
    absl::StrAppend(&out, "; switches reused from an identical earlier job");
  }
  return out;
}

std::string ProfilerSwitchesOf(const std::string& profiler_json) {
  const rapidjson::Document d = JsonOrNull(profiler_json);
  if (!d.IsObject()) return "";
  auto source = d.FindMember("switch_source");
  if (source == d.MemberEnd() || !source->value.IsObject()) return "";
  std::vector<std::string> parts;
  for (const char* name : {"record_shapes", "profile_memory", "with_flops"}) {
    auto on = d.FindMember(name);
    auto why = source->value.FindMember(name);
    if (on == d.MemberEnd() || !on->value.IsBool() || why == source->value.MemberEnd() ||
        !why->value.IsString()) {
      continue;
    }
    parts.push_back(absl::StrCat(name, on->value.GetBool() ? " on (" : " off (",
                                 why->value.GetString(), ")"));
  }
  return absl::StrJoin(parts, ", ");
}

std::vector<std::string> SwitchesOverBudgetOf(const std::string& profiler_json) {
  std::vector<std::string> out;
  const rapidjson::Document d = JsonOrNull(profiler_json);
  if (!d.IsObject()) return out;
  auto costs = d.FindMember("switch_costs");
  auto budget = d.FindMember("overhead_budget_pct");
  if (costs == d.MemberEnd() || !costs->value.IsObject() || budget == d.MemberEnd() ||
      !budget->value.IsNumber()) {
    return out;
  }
  for (const auto& c : costs->value.GetObject()) {
    const rapidjson::Value& v = c.value;
    if (!v.IsObject()) continue;
    auto over = v.FindMember("over_budget");
    auto pct = v.FindMember("cost_pct");
    auto ci = v.FindMember("ci_pct");
    auto flag = v.FindMember("off_flag");
    if (over == v.MemberEnd() || !over->value.IsBool() || !over->value.GetBool() ||
        pct == v.MemberEnd() || !pct->value.IsNumber() || flag == v.MemberEnd() ||
        !flag->value.IsString()) {
      continue;
    }
    std::string interval;
    if (ci != v.MemberEnd() && ci->value.IsArray() && ci->value.Size() == 2 &&
        ci->value[0].IsNumber() && ci->value[1].IsNumber()) {
      interval = absl::StrFormat(" (%.1f..%.1f)", ci->value[0].GetDouble(),
                                 ci->value[1].GetDouble());
    }
    out.push_back(absl::StrFormat("%s cost %.1f %%%s > budget %g %%: %s turns it off",
                                  c.name.GetString(), pct->value.GetDouble(), interval,
                                  budget->value.GetDouble(), flag->value.GetString()));
  }
  return out;
}

namespace {

// "trust: high (4 checks passed, 1 not applicable)", with each failed check's evidence below.
void AppendTrustLines(std::string& out, const Profile& p) {
  const TrustAssessment t = AssessTrust(p);
  absl::StrAppend(&out, "trust: ", TrustSummary(t), "\n");
  for (const TrustCheck& c : t.checks) {
    if (c.outcome == kTrustFailed) absl::StrAppend(&out, "  ", c.name, ": ", c.evidence, "\n");
  }
}

void WriteTrustJson(JsonWriter& w, const Profile& p) {
  const TrustAssessment t = AssessTrust(p);
  w.Key("trust");
  if (!t.checked) {
    w.Null();
    return;
  }
  w.BeginObject().Field("confidence", t.confidence).Field("line", TrustSummary(t));
  w.Key("reasons").BeginArray();
  for (const std::string& r : t.reasons) w.String(r);
  w.EndArray().Key("checks").BeginArray();
  for (const TrustCheck& c : t.checks) {
    w.BeginObject().Field("name", c.name).Field("outcome", c.outcome)
        .Field("evidence", c.evidence).EndObject();
  }
  w.EndArray().EndObject();
}

// RenderSummaryText's stages, in the order the text shows them: the verdict (with the trust
// line), where the profile came from, the step time, an inference profile's latency and
// stages, the CPU job's or the GPU job's figures, data loading and FLOPs, the tables, the
// notes on what the trace lacked.

// What a "per step" figure is per: a step, or the window (an attach job's on-demand trace marks
// no steps: its "per step" figures are of the window).
struct PerUnit {
  bool windowed = false;
  std::string per;     // "step" or "window"
  std::string ms_per;  // "ms/step" or "ms/window"
};

PerUnit PerUnitOf(const Profile& p) {
  PerUnit u;
  u.windowed =
      !p.real_steps.has_value() && !p.step_ms.has_value() && p.window_wall_ms.has_value();
  u.per = u.windowed ? "window" : "step";
  u.ms_per = absl::StrCat("ms/", u.per);
  return u;
}

// The verdict, its reason, the warnings and the trust line.
void AppendVerdictLines(std::string& out, const SummaryView& v) {
  const Profile& p = v.profile;
  absl::StrAppend(&out, "verdict: ", p.bound.empty() ? "n/a" : p.bound, "\n");
  if (!p.bound_why.empty()) absl::StrAppend(&out, "  ", p.bound_why, "\n");
  if (v.unreliable) {
    absl::StrAppend(&out,
                    "  WARNING: taken under memory pressure (allocator thrashing): the timings "
                    "below are unreliable.\n");
  }
  if (!v.load_shift.empty()) absl::StrAppend(&out, "  WARNING: ", v.load_shift, ".\n");
  AppendTrustLines(out, p);
  out += "\n";
}

// Where the profile came from: source, who measured, model, device, batch, window, profiler.
void AppendSourceLines(std::string& out, const SummaryView& v) {
  const Profile& p = v.profile;
  std::string what = p.source_kind == "trace" ? "Chrome trace, analysed now" : "profile";
  if (p.mode == "inference") what += ", inference";
  Line(out, "source", absl::StrCat(v.source, " (", what, ")"));
  if (const std::string by = MeasuredBy(p); !by.empty()) Line(out, "measured by", by);
  if (!p.model.empty()) Line(out, "model", p.model);
  if (const std::string head = HeadReinitOf(p.config_json); !head.empty()) {
    Line(out, "class head", head);
  }
  if (!v.weights_note.empty()) Line(out, "weights", "seeded random init: " + v.weights_note);
  if (p.device.has_value()) {
    Line(out, "device", absl::StrCat(p.device->name.empty() ? p.device->type : p.device->name,
                                     p.device->memory_mb ? absl::StrFormat(
                                                               " (%.0f MB)", *p.device->memory_mb)
                                                         : ""));
  }
  if (!v.batch.empty()) Line(out, "batch", v.batch);
  if (p.real_steps.has_value()) {
    Line(out, "window", absl::StrCat(Steps(*p.real_steps), ", ", FmtUnit(p.window_wall_ms, "ms")));
  } else if (p.window_wall_ms.has_value()) {
    // An attach job's on-demand trace: a recorded duration with no step marks in it.
    Line(out, "window", absl::StrCat(FmtUnit(p.window_wall_ms, "ms"),
                                     " recorded, no steps marked: the figures below are per "
                                     "window, of this one window"));
  }
  if (!v.profiler_overhead.empty()) Line(out, "profiler overhead", v.profiler_overhead);
  if (!v.profiler_switches.empty()) Line(out, "profiler switches", v.profiler_switches);
  for (const std::string& over : v.switches_over_budget) Line(out, "over budget", over);
  out += "\n";
}

// The step time (or the profiled step) and the throughput.
void AppendStepTimeLines(std::string& out, const Profile& p, bool windowed) {
  const OptDouble profiled_step = ProfiledStepMs(p);
  if (p.source_kind == "trace") {
    // A trace holds only the profiled window: its step_ms is that window's.
    Line(out, "profiled step",
         absl::StrCat(FmtUnit(profiled_step ? profiled_step : p.step_ms, "ms"),
                      "  (window / steps under the profiler; a trace has no unprofiled step)"));
  } else {
    // Say what the file says of how the step was timed, or nothing (StepTimingOf).
    Line(out, p.mode == "inference" ? "latency (mean)" : "step time",
         absl::StrCat(ValueSd(p, MetricId::kStepMs, p.step_ms, "ms"),
                      StepTimingOf(p) == StepTiming::kUnprofiled
                          ? "  (measured without the profiler)"
                          : (windowed ? "  (no steps marked in the window)" : "")));
    if (profiled_step) {
      Line(out, "profiled step",
           absl::StrCat(FmtUnit(profiled_step, "ms"), "  (window / steps: ",
                        Steps(p.real_steps.value_or(0)), " under the profiler)"));
    }
  }
  Line(out, "throughput",
       p.img_per_s ? ValueSd(p, MetricId::kImgPerS, p.img_per_s, "img/s")
                   : "n/a (batch size not recorded in a trace)");
}

// An inference scalar's key in a repeat's stats (inference_metrics.h).
std::string InferenceKey(InferenceMetricId id) { return std::string(InferenceMetricName(id)); }

// An inference profile's latency percentiles and its stages' shares.
void AppendInferenceLines(std::string& out, const Profile& p) {
  if (p.latency.has_value()) {
    const Latency& l = *p.latency;
    std::string line = absl::StrFormat("%.2f / %.2f / %.2f ms (min %.2f, max %.2f, n=%d)",
                                       l.p50_ms, l.p90_ms, l.p99_ms, l.min_ms, l.max_ms, l.n);
    using Id = InferenceMetricId;
    if (auto it = p.repeat.metrics.find(InferenceKey(Id::kLatencyP50Ms));
        it != p.repeat.metrics.end()) {
      auto sd = [&](Id id) {
        auto f = p.repeat.metrics.find(InferenceKey(id));
        return f == p.repeat.metrics.end() ? 0.0 : f->second.std;
      };
      line = absl::StrFormat(
          "%.2f / %.2f / %.2f ms ± %.2f / %.2f / %.2f (means of %d trials, %d samples in all)",
          l.p50_ms, l.p90_ms, l.p99_ms, sd(Id::kLatencyP50Ms), sd(Id::kLatencyP90Ms),
          sd(Id::kLatencyP99Ms), it->second.n, l.n);
    }
    Line(out, "latency p50/p90/p99", line);
  }
  if (p.stages_ms.has_value()) {
    const Stages& s = *p.stages_ms;
    // Shares of the mean latency, as the Python tool's (the stages are timed synchronised in
    // their own iterations, so they need not add up to 100 %).
    const double total = p.step_ms.value_or(0);
    auto share = [&](OptDouble x, InferenceMetricId id) {
      const std::string metric = InferenceKey(id);
      return x && total > 0 ? absl::StrFormat("%s%s (%.0f%%)", FmtUnit(x, "ms"),
                                              Sd(p, metric).empty()
                                                  ? std::string()
                                                  : absl::StrFormat(" ± %.2f",
                                                                    p.repeat.metrics.at(metric).std),
                                              100 * *x / total)
                            : FmtUnit(x, "ms");
    };
    Line(out, "stages (% of latency)",
         absl::StrCat("preprocess ", share(s.preprocess, InferenceMetricId::kPreprocessMs),
                      ", forward ", share(s.forward, InferenceMetricId::kForwardMs),
                      ", postprocess ", share(s.postprocess, InferenceMetricId::kNmsMs)));
  }
}

// A CPU job's figures, and n/a for the GPU ones.
void AppendCpuJobLines(std::string& out, const SummaryView& v, const std::string& ms_per) {
  const Profile& p = v.profile;
  Line(out, "CPU threads", v.cpu_threads.empty() ? "n/a (not recorded)" : v.cpu_threads);
  Line(out, "CPU op time", absl::StrCat(FmtUnit(p.self_cpu_total_ms_per_step, ms_per),
                                        "  (self time of every operator)"));
  Line(out, "peak host memory",
       p.peak_cpu_alloc_mb
           ? absl::StrCat(FmtUnit(p.peak_cpu_alloc_mb, "MB", 1),
                          "  (CPU allocator's Total Allocated in the window)")
           : "n/a (no CPU memory events: record with profile_memory)");
  for (const char* gpu : {"GPU utilisation", "Tensor Core share", "peak VRAM", "host overhead",
                          "kernel launches"}) {
    Line(out, gpu, kCpuNa);
  }
}

// A GPU job's figures: utilisation, communication, Tensor Cores, VRAM, host overhead, kernels.
void AppendGpuLines(std::string& out, const Profile& p, const PerUnit& u) {
  const std::string& per = u.per;
  const std::string& ms_per = u.ms_per;
  Line(out, "GPU utilisation",
       absl::StrCat(FmtPct(p.gpu_util), "  (busy ", FmtUnit(p.gpu_busy_ms_per_step, ms_per),
                    ", kernel sum ", FmtUnit(p.gpu_kernel_ms_per_step, ms_per), ")"));
  Line(out, "GPU active",
       absl::StrCat(FmtUnit(p.gpu_active_ms_per_step, ms_per), "  (kernels, memcpy, memset)"));
  if (p.comm_ms_per_step.value_or(0) > 0) {
    Line(out, "communication",
         absl::StrCat(FmtUnit(p.comm_ms_per_step, ms_per), ", exposed ",
                      FmtUnit(p.comm_exposed_ms_per_step, ms_per), " (",
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
  std::string host = ValueSd(p, MetricId::kHostOverheadMs, p.host_overhead_ms_per_step, ms_per);
  if (p.host_overhead_method == "measured") {
    absl::StrAppend(&host, " measured (GPU idle waiting for launches); CUDA API ",
                    FmtUnit(p.host_api_ms_per_step, ms_per), ", launch calls ",
                    FmtUnit(p.launch_api_ms_per_step, ms_per));
  } else if (p.host_overhead_method == "residual") {
    absl::StrAppend(&host, " (residual: ", per, " - GPU busy - data loading)");
  }
  Line(out, "host overhead", host);
  Line(out, "kernel launches",
       absl::StrCat(Fmt(p.launches_per_step, 1), " /", per,
                    p.launches_source == "kernels" ? " (no runtime events: kernel count)" : ""));
  Line(out, "kernels",
       absl::StrCat(Fmt(p.kernels_per_step, 1), " /", per, ", ",
                    p.unique_kernels ? absl::StrCat(*p.unique_kernels) : "n/a", " unique, mean ",
                    FmtUnit(p.mean_kernel_us, "us", 1)));
  Line(out, "memcpy + memset", FmtUnit(p.memcpy_ms_per_step, ms_per, 3));
}

// Data loading, cudaMalloc/Free (a GPU job) and the FLOPs.
void AppendDataLoadingAndFlopsLines(std::string& out, const SummaryView& v,
                                    const std::string& per) {
  const Profile& p = v.profile;
  Line(out, "data loading",
       absl::StrCat(FmtUnit(p.dataload_ms, "ms"), " (", FmtPct(p.dataload_frac), " of ", per, ")"));
  if (!v.cpu_job) {
    Line(out, "cudaMalloc/Free", absl::StrCat(Fmt(p.cuda_mallocs_per_step, 1), " /", per));
  }
  if (p.flops_per_step.has_value()) {
    // A total that misses convolutions or matmuls with no formula is a lower bound, and says
    // which ops it lacks (profile-json.md, flops_uncounted_ops).
    const std::string at_least = FlopsAreLowerBound(p) ? "at least " : "";
    Line(out, "FLOPs", absl::StrCat(at_least, FmtFlops(p.flops_per_step), "/", per, ", achieved ",
                                    at_least, FmtUnit(p.achieved_tflops, "TFLOP/s", 3),
                                    FlopsAreLowerBound(p)
                                        ? absl::StrCat(" (not counted: ",
                                                       absl::StrJoin(p.flops_uncounted_ops, ", "),
                                                       ")")
                                        : ""));
  }
}

// The tables: a CPU job's op categories, the kernel composition, the top kernels (or why
// there are none).
void AppendTables(std::string& out, const SummaryView& v, const PerUnit& u) {
  const Profile& p = v.profile;
  const std::string& per = u.per;
  const std::string& ms_per = u.ms_per;
  if (v.cpu_job && !v.cpu_op_categories.empty()) {
    out += "\nCPU op time by category (self time)\n";
    TextTable t({{"category", TextTable::Align::kLeft}, {"% CPU ops"}, {ms_per}});
    for (const CategoryRow& c : v.cpu_op_categories) {
      t.AddRow({c.name, Fmt(c.pct, 1), Fmt(c.ms_per_step, 3)});
    }
    out += t.Render();
  }
  if (!p.categories.empty()) {
    out += "\nkernel composition\n";
    TextTable t({{"category", TextTable::Align::kLeft}, {"% GPU"}, {ms_per}});
    for (const CategoryRow& c : p.categories) {
      t.AddRow({c.name, Fmt(c.pct, 1), Fmt(c.ms_per_step, 3)});
    }
    out += t.Render();
  }
  if (!p.kernels.empty()) {
    absl::StrAppend(&out, "\ntop kernels per ", per, "\n");
    TextTable t({{"% GPU"},
                 {ms_per},
                 {absl::StrCat("calls/", per)},
                 {"TC", TextTable::Align::kLeft},
                 {"category", TextTable::Align::kLeft},
                 {"kernel", TextTable::Align::kLeft, 70}});
    for (const KernelRow& k : p.kernels) {
      t.AddRow({Fmt(k.pct_of_gpu, 1), Fmt(k.ms_per_step, 3), Fmt(k.count_per_step, 1),
                k.tensorcore ? "yes" : "", k.category,
                k.kernel == k.raw_name ? k.raw_name : absl::StrCat(k.kernel, ": ", k.raw_name)});
    }
    out += t.Render();
  } else if (TrustCheckFailed(p, kCheckGpuActivity)) {
    out += "\nno kernels recorded behind the GPU launch calls (CUPTI did not attach): the GPU-side "
           "figures above are unknown, not zero.\n";
  } else if (p.kernels_per_step.value_or(0) == 0) {
    out += v.cpu_job ? "\ncpu job: no GPU kernels; see `libreyolo profile ops` for the operators.\n"
                     : "\nno GPU kernels in this profile: see `libreyolo profile ops` for the CPU side.\n";
  }
}

// What the trace lacked (malformed events, kernels with no launch) and a job's ranks.
void AppendNotes(std::string& out, const Profile& p) {
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
  if (!p.ranks_json.empty()) {
    // A data-parallel job's profile: its ranks side by side, as `summary DIR/` shows the folder.
    absl::StatusOr<RanksView> ranks = RanksViewFromJson(p.ranks_json);
    out += ranks.ok() ? absl::StrCat("\nthe job's ranks: ", RenderRanksText(*ranks))
                      : absl::StrCat("\nnote: ", ranks.status().message(), "\n");
  }
}
}  // namespace

std::string RenderSummaryText(const SummaryView& v) {
  const PerUnit u = PerUnitOf(v.profile);
  std::string out;
  AppendVerdictLines(out, v);
  AppendSourceLines(out, v);
  AppendStepTimeLines(out, v.profile, u.windowed);
  AppendInferenceLines(out, v.profile);
  if (v.cpu_job) {
    AppendCpuJobLines(out, v, u.ms_per);
  } else {
    AppendGpuLines(out, v.profile, u);
  }
  AppendDataLoadingAndFlopsLines(out, v, u.per);
  AppendTables(out, v, u);
  AppendNotes(out, v.profile);
  return out;
}

namespace {

// The Python tool's `summary --json` keys that the metric loop above does not write, with its
// values: the profile's trace and config as recorded, its window object and the phases' GPU time
// (null for a CPU job: no phase has GPU time there, as every GPU metric of it is null).
void WritePythonSummaryKeys(JsonWriter& w, const Profile& p) {
  w.Field("trace", p.trace).Key("config").Raw(p.config_json.empty() ? "{}" : p.config_json);
  w.Key("window").BeginObject();
  for (const MetricDef& d : MetricTable()) {
    if (d.object == "window" && !d.field.empty()) {
      WriteMetricValue(w.Key(d.field), MetricValueFromCell(d, MetricValueOf(d, p)));
    }
  }
  w.EndObject();
  if (IsCpuJob(p)) {
    w.Key("phases_gpu").Null();
    return;
  }
  w.Key("phases_gpu").BeginArray();
  for (const PhaseRow& r : p.phases) {
    w.BeginObject().Field("phase", r.phase).Field("gpu_ms_per_step", r.gpu_ms_per_step).EndObject();
  }
  w.EndArray();
}

}  // namespace

std::string RenderSummaryJson(const SummaryView& v) {
  const Profile& p = v.profile;
  JsonWriter w;
  w.BeginObject()
      .Field("source", v.source)
      .Field("measured_by", MeasuredBy(p).empty() ? std::optional<std::string>()
                                                  : std::optional<std::string>(MeasuredBy(p)))
      .Field("source_kind", p.source_kind)
      .Field("model", p.model)
      .Field("weights_note", v.weights_note.empty() ? std::optional<std::string>()
                                                    : std::optional<std::string>(v.weights_note))
      .Field("mode", p.mode)
      .Field("bound", p.bound)
      .Field("bound_why", p.bound_why)
      .Field("unreliable", v.unreliable)
      .Field("load_shift", v.load_shift.empty() ? std::optional<std::string>()
                                                : std::optional<std::string>(v.load_shift));
  WriteTrustJson(w, p);
  w.Field("step_ms_measured", StepMeasuredText(p))
      .Field("cpu_job", v.cpu_job)
      .Field("batch", p.batch)
      .Field("batch_rule", BatchRuleOf(p.config_json))
      .Field("profiler_overhead",
             v.profiler_overhead.empty() ? std::optional<std::string>() : v.profiler_overhead)
      .Field("profiler_switches",
             v.profiler_switches.empty() ? std::optional<std::string>() : v.profiler_switches);
  w.Key("switches_over_budget").BeginArray();
  for (const std::string& over : v.switches_over_budget) w.String(over);
  w.EndArray();
  // Every scalar metric, by its profile.json key (metric_table.h), null where it does not apply.
  for (const MetricDef& d : MetricTable()) {
    if (d.name == MetricName(MetricId::kBound)) continue;  // above, with its reason
    const std::string_view key = d.object.empty() && !d.field.empty() ? d.field : d.name;
    WriteMetricValue(w.Key(key), MetricValueFromCell(d, MetricValueOf(d, p)));
  }
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
  if (!p.repeat.metrics.empty()) {
    w.Key("repeat").BeginObject();
    for (const auto& [name, st] : p.repeat.metrics) {
      w.Key(name).BeginObject().Field("mean", st.mean).Field("std", st.std).Field("n", st.n)
          .EndObject();
    }
    w.EndObject();
  }
  w.Key("cpu_op_categories").BeginArray();
  for (const CategoryRow& c : v.cpu_op_categories) {
    w.BeginObject().Field("name", c.name).Field("pct", c.pct)
        .Field("ms_per_step", c.ms_per_step).EndObject();
  }
  w.EndArray();
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
  if (!p.ranks_json.empty()) w.Key("ranks").Raw(p.ranks_json);  // profile.json's, as written
  WritePythonSummaryKeys(w, p);
  w.EndObject();
  return w.Take();
}

}  // namespace libreyolo
