#include "common/report/report_sections.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/analysis/trust.h"
#include "common/profile/metric_id.h"
#include "common/profile/metric_table.h"
#include "common/readers/kernels_view.h"
#include "common/readers/ops_view.h"
#include "common/render/html_escape.h"
#include "common/render/text_table.h"
#include "common/report/html_page.h"
#include "common/report/svg_charts.h"

namespace libreyolo {
namespace {

constexpr int kTopKernels = 30;
constexpr int kTopOps = 200;
constexpr size_t kNameChars = 160;
constexpr size_t kMaxBars = 300;       // per-step bars drawn at most
constexpr size_t kMaxLayerRows = 300;  // per-layer rows shown at most


// The verdict's reason is its first sentence; the sentences after it name the levers.
std::vector<std::string> Sentences(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(". ", start);
    if (end == std::string::npos) {
      out.push_back(text.substr(start));
      break;
    }
    out.push_back(text.substr(start, end + 1 - start));
    start = end + 2;
  }
  return out;
}

}  // namespace

// A headline value in words, by the metric's unit and type.
std::string HeadlineText(const MetricDef& d, const MetricCell& c) {
  if (c.text) return *c.text;
  if (c.flag) return *c.flag ? "yes" : "no";
  const OptDouble v = c.AsDouble();
  const bool per_step = d.field.ends_with("_per_step");
  if (d.unit == "FLOP") return FmtFlops(v);
  if (d.unit.empty() && d.kind == MetricKind::kNumber) return FmtPct(v);  // a fraction
  if (d.unit.empty()) return per_step ? FmtUnit(v, "/step", 0) : Fmt(v, 0);
  return FmtUnit(v, std::string(d.unit) + (per_step ? "/step" : ""), d.precision);
}

namespace {

// A table metric's cell as the report's grids show it: its name, label and text.
Metric TableMetric(MetricId id, const Profile& p) {
  const MetricDef& d = MetricDefOf(id);
  const MetricCell c = MetricValueOf(d, p);
  return {std::string(d.name), std::string(d.label), c.AsDouble(), HeadlineText(d, c)};
}

}  // namespace

std::vector<Metric> HeadlineMetrics(const SummaryView& v) {
  const Profile& p = v.profile;
  const bool infer = p.mode == "inference";
  std::vector<Metric> m;
  for (const MetricDef& d : MetricTable()) {
    if (!d.headline) continue;
    const MetricCell c = MetricValueOf(d, p);
    std::string label(d.label);
    if (d.name == MetricName(MetricId::kStepMs) && infer) label = "latency (mean)";
    if (d.name == MetricName(MetricId::kHostOverheadMs) && p.host_overhead_method && !c.is_null()) {
      label += " (" + *p.host_overhead_method + ")";
    }
    const std::string_view key = d.object.empty() && !d.field.empty() ? d.field : d.name;
    m.push_back({std::string(key), std::move(label), c.AsDouble(), HeadlineText(d, c)});
  }
  if (p.latency.has_value()) {
    const Latency& l = *p.latency;
    m.push_back({"latency.p50_ms", "latency p50", l.p50_ms, FmtUnit(l.p50_ms, "ms")});
    m.push_back({"latency.p90_ms", "latency p90", l.p90_ms, FmtUnit(l.p90_ms, "ms")});
    m.push_back({"latency.p99_ms", "latency p99", l.p99_ms, FmtUnit(l.p99_ms, "ms")});
  }
  if (p.stages_ms.has_value()) {
    const Stages& s = *p.stages_ms;
    m.push_back({"stages_ms.preprocess", "preprocess", s.preprocess, FmtUnit(s.preprocess, "ms")});
    m.push_back({"stages_ms.forward", "forward", s.forward, FmtUnit(s.forward, "ms")});
    m.push_back(
        {"stages_ms.postprocess", "postprocess", s.postprocess, FmtUnit(s.postprocess, "ms")});
  }
  return m;
}

std::string MetricGrid(const std::vector<Metric>& metrics) {
  std::string s = "<div class=\"grid\">\n";
  for (const Metric& m : metrics) {
    absl::StrAppend(&s, "<div class=\"metric\" data-key=\"", HtmlEscape(m.key), "\" data-value=\"",
                    ExactValue(m.value), "\"><div class=\"k\">", HtmlEscape(m.label),
                    "</div><div class=\"v\">", HtmlEscape(m.text), "</div></div>\n");
  }
  s += "</div>\n";
  return s;
}

std::string VerdictBlock(const SummaryView& v) {
  const Profile& p = v.profile;
  std::string s = absl::StrCat("<div class=\"verdict\"><div class=\"bound\" data-key=\"bound\">",
                               HtmlEscape(p.bound.empty() ? "n/a" : p.bound), "</div>\n");
  const std::vector<std::string> parts = Sentences(p.bound_why);
  if (parts.empty()) {
    s += "<p class=\"why\">the profile gives no reason for its verdict</p>\n";
  } else {
    absl::StrAppend(&s, "<p class=\"why\">", HtmlEscape(parts[0]), "</p>\n");
  }
  if (parts.size() > 1) {
    s += "<ul class=\"levers\">";
    for (size_t i = 1; i < parts.size(); ++i) {
      absl::StrAppend(&s, "<li>", HtmlEscape(parts[i]), "</li>");
    }
    s += "</ul>\n";
  }
  if (v.unreliable) {
    s += "<p class=\"warn\">Taken under memory pressure (allocator thrashing): the timings are "
         "unreliable.</p>\n";
  }
  // One line: what the trace can vouch for (trust.h), a warning when it is not everything.
  const TrustAssessment t = AssessTrust(p);
  if (t.checked) {
    absl::StrAppend(&s, "<p class=\"", t.confidence == kConfidenceHigh ? "why" : "warn",
                    "\" data-key=\"trust\">trust: ", HtmlEscape(TrustSummary(t)), "</p>\n");
  }
  s += "</div>\n";
  return s;
}

namespace {

// What a per-step chart draws: a bar per step (or per group of steps) from the trace's
// timeline, or, without one, a single bar of the profile's mean stage / phase times.
struct StepBars {
  std::vector<std::string> series;
  std::vector<StackedBar> bars;
  bool from_steps = false;  // the timeline's steps (else the means, or nothing)
  bool gpu = false;
  size_t steps = 0, group = 1;
  std::string why;  // no per-step data: why
};

StepBars TimelineBars(const TraceTimeline& tl) {
  StepBars out;
  out.from_steps = true;
  out.series = tl.phases;
  out.gpu = !tl.streams.empty();
  // Up to kMaxBars bars: beyond that, each bar is the mean of consecutive steps, so the page
  // stays small for a window of thousands of steps.
  const size_t n = out.steps = tl.steps.size();
  const size_t group = out.group = (n + kMaxBars - 1) / kMaxBars;
  for (size_t first = 0; first < n; first += group) {
    const size_t last = std::min(first + group, n) - 1;
    const auto count = static_cast<double>(last - first + 1);
    std::vector<double> mean(tl.phases.size(), 0.0);
    double wall = 0, busy = 0;
    for (size_t i = first; i <= last; ++i) {
      const StepSplit& st = tl.steps[i];
      for (size_t k = 0; k < mean.size() && k < st.phase_ms.size(); ++k) {
        mean[k] += st.phase_ms[k] / count;
      }
      wall += st.wall_ms;
      busy += st.gpu_busy_ms;
    }
    const std::string label =
        first == last ? absl::StrCat("#", tl.steps[first].number)
                      : absl::StrCat("#", tl.steps[first].number, "-", tl.steps[last].number);
    out.bars.push_back(StackedBar{label, std::move(mean), out.gpu && wall > 0 ? busy / wall : -1.0,
                                  first == last
                                      ? absl::StrFormat("wall %.3f ms", wall)
                                      : absl::StrFormat("mean of %d steps, wall %.3f ms each",
                                                        last - first + 1, wall / count)});
  }
  return out;
}

StepBars BuildStepBars(const ReportInput& in) {
  const Profile& p = in.profile;
  const TraceTimeline* tl = in.timeline ? &*in.timeline : nullptr;
  if (tl != nullptr && !tl->steps.empty()) return TimelineBars(*tl);
  StepBars out;
  out.why =
      tl == nullptr ? in.timeline_note : "the trace has no ProfilerStep#N marks to split by step";
  // Without per-step data, one bar of the profile's means where it has them.
  std::vector<double> values;
  if (p.stages_ms.has_value()) {
    const Stages& st = *p.stages_ms;
    for (const auto& [name, v] :
         {std::pair{"preprocess", st.preprocess}, std::pair{"forward", st.forward},
          std::pair{"postprocess", st.postprocess}}) {
      if (!v) continue;
      out.series.emplace_back(name);
      values.push_back(*v);
    }
  } else {
    double sum = 0;
    for (const PhaseRow& r : p.phases) {
      if (!r.wall_ms_per_step) continue;
      out.series.push_back(r.phase);
      values.push_back(*r.wall_ms_per_step);
      sum += *r.wall_ms_per_step;
    }
    if (!out.series.empty() && p.step_ms) {
      out.series.emplace_back("other");
      values.push_back(std::max(*p.step_ms - sum, 0.0));
    }
  }
  if (!out.series.empty()) out.bars.push_back(StackedBar{"mean", std::move(values), -1.0, ""});
  return out;
}

}  // namespace

double PerStepChartMax(const ReportInput& in) { return StackedBarsMax(BuildStepBars(in).bars); }

std::string PerStepChart(const ReportInput& in, double y_max) {
  const StepBars b = BuildStepBars(in);
  if (b.from_steps) {
    return absl::StrCat(
        "<p class=\"foot\">Each step's wall time split by the phase span running at each "
        "instant (the innermost one; the rest is other)",
        b.gpu ? "; the line is the share of the step the GPU is busy" : "; no GPU activity",
        b.group > 1
            ? absl::StrCat("; ", b.steps, " steps, each bar the mean of ", b.group, " in a row")
            : "",
        ".</p>\n", StackedBarChart(b.series, b.bars, "ms", "GPU busy", y_max));
  }
  std::string s = NotAvailable(absl::StrCat("per-step bars: ", b.why));
  if (!b.bars.empty()) {
    absl::StrAppend(&s, "<p class=\"foot\">The profile's mean ",
                    in.profile.stages_ms ? "stage times (stages_ms)" : "phase wall times (phases)",
                    " instead:</p>\n", StackedBarChart(b.series, b.bars, "ms", "", y_max));
  }
  return s;
}

std::string PhasesTable(const PhasesView& v) {
  if (v.phases.empty()) return NotAvailable("this profile has no phase spans");
  if (v.cpu_job) {
    // No GPU columns on the CPU (n/a, not 0): the CPU time of the phase's ops instead.
    HtmlTable t({"phase", "CPU ms/step", "wall ms/step", "ops/step"});
    for (const PhaseRow& r : v.phases) {
      t.AddRow({HtmlTable::Text(r.phase),
                HtmlTable::Num(r.cpu_ms_per_step, Fmt(r.cpu_ms_per_step, 3)),
                HtmlTable::Num(r.wall_ms_per_step, Fmt(r.wall_ms_per_step, 3)),
                HtmlTable::Num(r.ops_per_step, Fmt(r.ops_per_step, 1))});
    }
    return t.Render();
  }
  HtmlTable t({"phase", "GPU ms/step", "wall ms/step", "kernels/step", "ops/step"});
  for (const PhaseRow& r : v.phases) {
    t.AddRow({HtmlTable::Text(r.phase),
              HtmlTable::Num(r.gpu_ms_per_step, Fmt(r.gpu_ms_per_step, 3)),
              HtmlTable::Num(r.wall_ms_per_step, Fmt(r.wall_ms_per_step, 3)),
              HtmlTable::Num(r.kernels_per_step, Fmt(r.kernels_per_step, 1)),
              HtmlTable::Num(r.ops_per_step, Fmt(r.ops_per_step, 1))});
  }
  return t.Render();
}

std::string CategoryChart(const Profile& p) {
  std::vector<HBar> bars;
  for (const CategoryRow& c : p.categories) {
    bars.push_back(HBar{c.name, c.ms_per_step,
                        absl::StrFormat("%.1f %% · %.3f ms/step", c.pct, c.ms_per_step)});
  }
  if (bars.empty()) return NotAvailable("no GPU kernels in this profile");
  return HBarChart(bars);
}

std::string KernelsBody(const SummaryView& sv, const Profile& full) {
  std::string s = absl::StrCat("<h3>kernel categories</h3>\n", CategoryChart(sv.profile));
  if (!sv.profile.categories.empty()) {
    HtmlTable t({"category", "% GPU", "ms/step"});
    for (const CategoryRow& c : sv.profile.categories) {
      t.AddRow({HtmlTable::Text(c.name), HtmlTable::Num(c.pct, Fmt(c.pct, 1)),
                HtmlTable::Num(c.ms_per_step, Fmt(c.ms_per_step, 3))});
    }
    s += t.Render();
  }
  KernelsOptions o;
  o.top = kTopKernels;
  auto kv = BuildKernels(full, o, sv.source);
  s += "<h3>top kernels</h3>\n";
  if (!kv.ok() || kv->rows.empty()) return s + NotAvailable("no GPU kernels in this profile");
  HtmlTable t({"% GPU", "ms/step", "calls/step", "TC", "category", "kernel"}, "kernels");
  for (const KernelRow& k : kv->rows) {
    t.AddRow({HtmlTable::Num(k.pct_of_gpu, Fmt(k.pct_of_gpu, 1)),
              HtmlTable::Num(k.ms_per_step, Fmt(k.ms_per_step, 3)),
              HtmlTable::Num(k.count_per_step, Fmt(k.count_per_step, 1)),
              HtmlTable::Text(k.tensorcore ? "yes" : ""), HtmlTable::Text(k.category),
              HtmlTable::Text(
                  k.kernel.size() > kNameChars ? k.kernel.substr(0, kNameChars) + "..." : k.kernel,
                  k.raw_name)});
  }
  s += t.Render();
  if (kv->matched > kv->rows.size()) {
    absl::StrAppend(&s, "<p class=\"foot\">", kv->matched - kv->rows.size(),
                    " more kernels: <code>libreyolo profile kernels TRACE --top 0</code></p>\n");
  }
  return s;
}

std::string OpsBody(const Profile& full, const std::string& source) {
  OpsOptions o;
  o.top = kTopOps;
  auto ov = BuildOps(full, o, source);
  if (!ov.ok() || ov->rows.empty()) return NotAvailable("no framework ops in this profile");
  std::vector<std::string> head = {"op", "calls/step", "CPU total ms/step", "self CPU ms/step",
                                   "% self CPU"};
  if (ov->show_device) head.insert(head.end(), {"device ms/step", "self device ms/step"});
  if (ov->show_memory) head.insert(head.end(), {"CPU mem/step", "self CPU mem/step"});
  if (ov->show_flops) head.emplace_back("FLOPs/step");
  HtmlTable t(head, "ops");
  for (const OpRow& r : ov->rows) {
    std::vector<HtmlTable::Cell> row = {
        HtmlTable::Text(r.op.size() > kNameChars ? r.op.substr(0, kNameChars) + "..." : r.op, r.op),
        HtmlTable::Num(r.count_per_step, Fmt(r.count_per_step, 1)),
        HtmlTable::Num(r.ms_per_step, Fmt(r.ms_per_step, 3)),
        HtmlTable::Num(r.self_cpu_ms_per_step, Fmt(r.self_cpu_ms_per_step, 3)),
        HtmlTable::Num(PctOfSelfCpu(r, ov->list_self_cpu_ms_per_step),
                       Fmt(PctOfSelfCpu(r, ov->list_self_cpu_ms_per_step), 1))};
    if (ov->show_device) {
      row.push_back(HtmlTable::Num(r.device_ms_per_step, Fmt(r.device_ms_per_step, 3)));
      row.push_back(HtmlTable::Num(r.self_device_ms_per_step, Fmt(r.self_device_ms_per_step, 3)));
    }
    if (ov->show_memory) {
      row.push_back(HtmlTable::Num(r.cpu_mem_bytes, FmtBytes(r.cpu_mem_bytes)));
      row.push_back(HtmlTable::Num(r.self_cpu_mem_bytes, FmtBytes(r.self_cpu_mem_bytes)));
    }
    if (ov->show_flops) row.push_back(HtmlTable::Num(r.flops, FmtFlops(r.flops)));
    t.AddRow(std::move(row));
  }
  std::string s = absl::StrCat(
      "<p class=\"foot\">Click a header to sort. Self CPU time total: ",
      HtmlEscape(FmtUnit(ov->self_cpu_total_ms_per_step, "ms/step", 3)),
      ov->show_device
          ? absl::StrCat(", self device time total: ",
                         HtmlEscape(FmtUnit(ov->self_device_total_ms_per_step, "ms/step", 3)))
          : "",
      ".</p>\n", t.Render());
  if (ov->total_rows > ov->rows.size()) {
    absl::StrAppend(&s, "<p class=\"foot\">", ov->total_rows - ov->rows.size(),
                    " more ops: <code>libreyolo profile ops TRACE --top 0</code></p>\n");
  }
  return s;
}

std::string MemoryBody(const ReportInput& in, const SummaryView& sv) {
  const Profile& p = sv.profile;
  std::string s = MetricGrid(
      {TableMetric(MetricId::kPeakVramMb, p), TableMetric(MetricId::kPeakReservedMb, p)});
  if (!in.timeline) return s + NotAvailable(absl::StrCat("memory over time: ", in.timeline_note));
  const TraceTimeline& tl = *in.timeline;
  absl::StrAppend(&s, "<h3>device memory</h3>\n",
                  MemoryChart(tl.device_memory, tl.device_peak, tl.window_ms, "device"),
                  "<h3>host memory</h3>\n",
                  MemoryChart(tl.host_memory, tl.host_peak, tl.window_ms, "host"));
  return s;
}

namespace {

// The settings the two runs do not share, as `compare` prints them (issue 22: the page omitted
// the "not like for like" warnings the text gave).
std::string MismatchWarnings(const CompareResult& r) {
  std::string s;
  for (const std::string& w : r.warnings) {
    absl::StrAppend(&s, "<p class=\"warning\" data-key=\"warning\">warning: ", HtmlEscape(w),
                    "</p>\n");
  }
  return s;
}

}  // namespace

std::string SignificanceBody(const CompareResult& r) {
  const Significance& sig = r.significance;
  const std::string call = !sig.available    ? "no call (a single run cannot support one)"
                           : sig.significant ? "significant"
                                             : "not significant";
  return absl::StrCat("<p class=\"sig\" data-key=\"significant\" data-value=\"",
                      !sig.available    ? ""
                      : sig.significant ? "true"
                                        : "false",
                      "\">", HtmlEscape(call), "</p><p>", HtmlEscape(sig.text), "</p>\n",
                      MismatchWarnings(r));
}

std::string DeltasTable(const CompareResult& r) {
  std::string s =
      "<table class=\"deltas\"><thead><tr><th class=\"t\">metric</th><th>before</th>"
      "<th>after</th><th>delta</th><th>change</th><th class=\"t\"></th></tr></thead><tbody>\n";
  for (const CompareDelta& d : r.deltas) {
    if (!d.before && !d.after) continue;
    const OptDouble delta = d.delta(), pct = d.pct();
    // As compare's text: a change without a direction (a folder's all-reduce bytes) is neither.
    std::string call;
    if (delta && *delta != 0 && d.directional)
      call = (d.higher_is_better ? *delta > 0 : *delta < 0) ? "better" : "worse";
    absl::StrAppend(&s, "<tr data-metric=\"", HtmlEscape(d.metric), "\" data-before=\"",
                    ExactValue(d.before), "\" data-after=\"", ExactValue(d.after),
                    "\"><td class=\"t\">", HtmlEscape(d.metric),
                    d.unit.empty() ? "" : absl::StrCat(" (", HtmlEscape(d.unit), ")"), "</td><td>",
                    Fmt(d.before, 3), "</td><td>", Fmt(d.after, 3), "</td><td>", Fmt(delta, 3),
                    "</td><td>", pct ? absl::StrFormat("%+.1f %%", *pct) : "n/a",
                    "</td><td class=\"t ", call, "\">", call, "</td></tr>\n");
  }
  absl::StrAppend(&s, "<tr data-metric=\"bound\"><td class=\"t\">bound</td><td>",
                  HtmlEscape(r.bound_before.empty() ? "n/a" : r.bound_before), "</td><td>",
                  HtmlEscape(r.bound_after.empty() ? "n/a" : r.bound_after),
                  "</td><td></td><td></td><td class=\"t\">",
                  r.bound_before == r.bound_after ? "" : "changed", "</td></tr>\n");
  s += "</tbody></table>\n";
  return s;
}

std::string Header(const std::string& what, const std::vector<const ReportInput*>& inputs) {
  std::string s = absl::StrCat("<header><h1>", HtmlEscape(what), "</h1>\n");
  for (const ReportInput* in : inputs) {
    const Profile& p = in->profile;
    std::string kind = p.source_kind == "trace" ? "Chrome trace, analysed now" : "profile";
    if (p.mode == "inference") kind += ", inference";
    std::string line = absl::StrCat(in->label, " (", kind, ")");
    if (!p.model.empty()) absl::StrAppend(&line, " · model ", p.model);
    if (p.device) {
      absl::StrAppend(&line, " · ", p.device->name.empty() ? p.device->type : p.device->name);
    }
    absl::StrAppend(&s, "<div class=\"meta\">", HtmlEscape(line), "</div>\n");
  }
  absl::StrAppend(
      &s, "<div class=\"meta\">libreyolo ", LIBREYOLO_VERSION,
      " · numbers as in <code>libreyolo profile summary --json</code></div></header>\n");
  return s;
}

std::string GpuBody(const ReportInput& in) {
  if (!in.timeline) return NotAvailable(in.timeline_note);
  return absl::StrCat(
      "<p class=\"foot\">Busy (green) and idle (grey) time of each GPU stream "
      "over the profiled window, and the kernel launch calls (blue).</p>\n",
      GpuStripChart(*in.timeline));
}

std::string LayersBody(const ReportInput& in) {
  if (!in.timeline) return NotAvailable(in.timeline_note);
  if (in.layers.empty()) {
    return NotAvailable(
        "no module scopes in this trace (libreyolo records them with --with-modules, the "
        "default; PyTorch as \"nn.Module: ...\" python_function spans with with_modules=True)");
  }
  HtmlTable t({"module", "calls/step", "CPU ms/step", "self CPU ms/step", "GPU ms/step",
               "self GPU ms/step", "kernels/step"},
              "layers");
  const size_t shown_rows = std::min(in.layers.size(), kMaxLayerRows);
  for (size_t i = 0; i < shown_rows; ++i) {
    const ModuleRow& r = in.layers[i];
    const std::string& leaf = r.name;
    std::string shown(2 * static_cast<size_t>(std::min(r.depth, 12)), ' ');
    shown += leaf.size() > kNameChars ? leaf.substr(0, kNameChars) + "..." : leaf;
    t.AddRow({HtmlTable::Text(shown, r.path),
              HtmlTable::Num(r.calls_per_step, Fmt(r.calls_per_step, 1)),
              HtmlTable::Num(r.cpu_ms_per_step, Fmt(r.cpu_ms_per_step, 3)),
              HtmlTable::Num(r.self_cpu_ms_per_step, Fmt(r.self_cpu_ms_per_step, 3)),
              HtmlTable::Num(r.gpu_ms_per_step, Fmt(r.gpu_ms_per_step, 3)),
              HtmlTable::Num(r.self_gpu_ms_per_step, Fmt(r.self_gpu_ms_per_step, 3)),
              HtmlTable::Num(r.kernels_per_step, Fmt(r.kernels_per_step, 1))});
  }
  return absl::StrCat(
      "<p class=\"foot\">Module scopes in the order they first run, nested by indentation (the "
      "full path is the tooltip), as <code>libreyolo profile modules</code> computes them. A "
      "kernel counts for the innermost module around its launch call and for every module "
      "enclosing that one.</p>\n",
      t.Render(),
      in.layers.size() > shown_rows
          ? absl::StrCat("<p class=\"foot\">", in.layers.size() - shown_rows,
                         " more module paths are not shown.</p>\n")
          : "");
}

}  // namespace libreyolo
