#include "common/report/report_html.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/analysis/compare.h"
#include "common/load/load_profile.h"
#include "common/readers/phases_view.h"
#include "common/readers/summary_view.h"
#include "common/render/html_escape.h"
#include "common/report/html_page.h"
#include "common/report/profiler_record.h"
#include "common/report/ranks_report.h"
#include "common/report/report_sections.h"
#include "common/report/svg_charts.h"
#include "common/status/status_macros.h"

namespace libreyolo {

std::string RenderReportHtml(const ReportInput& in) {
  const SummaryView sv = BuildSummary(in.profile, in.label);
  const PhasesView pv = BuildPhases(in.profile, in.label);
  std::string s = PageStart(absl::StrCat("libreyolo profile report: ", in.label));
  s += Header("libreyolo profile report", {&in});
  s += Section("verdict", "Verdict", VerdictBlock(sv));
  s += Section("summary", "Summary", MetricGrid(HeadlineMetrics(sv)));
  s += Section("steps", in.profile.mode == "inference" ? "Per iteration" : "Per step",
               PerStepChart(in) + PhasesTable(pv));
  s += Section("gpu-timeline", "GPU timeline", GpuBody(in));
  s += Section("kernels", "Kernels", KernelsBody(sv, in.profile));
  s += Section("ops", "Operators", OpsBody(in.profile, in.label));
  s += Section("layers", "Layers", LayersBody(in));
  s += Section("memory", "Memory", MemoryBody(in, sv));
  s += Section("profiler", "The profiler's own record", ProfilerRecord(in));
  s += PageEnd();
  return s;
}

namespace {

// One side of the comparison; `step_y_max`: the per-step chart's scale, shared by both sides.
std::string Side(const std::string& side, const ReportInput& in, double step_y_max) {
  const SummaryView sv = BuildSummary(in.profile, in.label);
  return absl::StrCat("<div data-side=\"", side, "\"><h3>", HtmlEscape(side), ": ",
                      HtmlEscape(in.label), "</h3>\n", VerdictBlock(sv),
                      MetricGrid(HeadlineMetrics(sv)), "<h3>per step</h3>\n",
                      PerStepChart(in, step_y_max), "<h3>kernel categories</h3>\n",
                      CategoryChart(sv.profile), "</div>\n");
}

}  // namespace

std::string RenderCompareReportHtml(const ReportInput& before, const ReportInput& after) {
  const CompareResult r = Compare(before.profile, after.profile, before.label, after.label);
  // The two per-step charts on one y scale, so a longer step looks longer.
  const double step_y_max = std::max(PerStepChartMax(before), PerStepChartMax(after));
  std::string s =
      PageStart(absl::StrCat("libreyolo profile comparison: ", before.label, " vs ", after.label));
  s += Header("libreyolo profile comparison", {&before, &after});
  s += Section("significance", "Significance", SignificanceBody(r));
  s += Section("deltas", "Deltas (after - before)", DeltasTable(r));
  s += Section("side-by-side", "Side by side",
               absl::StrCat("<div class=\"cols\">", Side("before", before, step_y_max),
                            Side("after", after, step_y_max), "</div>\n"));
  s += PageEnd();
  return s;
}

absl::StatusOr<std::string> RenderReportFiles(const std::vector<std::string>& paths,
                                              const std::vector<std::string>& labels) {
  if (paths.empty() || paths.size() > 2) {
    return absl::InvalidArgumentError("a report takes one input, or two to compare");
  }
  // Folders of per-rank traces: one run's cross-rank page, or two runs' comparison.
  const auto label = [&](size_t i) { return i < labels.size() ? labels[i] : paths[i]; };
  size_t folders = 0;
  for (const std::string& p : paths) {
    if (IsDirectory(p)) ++folders;
  }
  if (folders > 0 && folders < paths.size()) {
    const size_t dir = IsDirectory(paths[0]) ? 0 : 1;
    return absl::InvalidArgumentError(absl::StrCat(
        "a report compares two runs' folders of per-rank traces or two profiles, and ", label(dir),
        " is a folder while ", label(1 - dir),
        " is not: give two folders (libreyolo profile report BEFORE/ AFTER/), two profiles, or "
        "one rank's trace file from ",
        label(dir), " to compare that rank with ", label(1 - dir)));
  }
  if (folders > 0) {
    std::vector<RanksView> views;
    for (size_t i = 0; i < paths.size(); ++i) {
      ASSIGN_OR_RETURN(auto view, BuildRanksView(paths[i]));
      view.source = label(i);
      views.push_back(std::move(view));
    }
    return views.size() == 2 ? RenderRanksCompareReportHtml(views[0], views[1])
                             : RenderRanksReportHtml(views[0]);
  }
  const ProfileLoader load = [](const std::string& p) { return LoadProfile(p); };
  std::vector<ReportInput> inputs;
  for (size_t i = 0; i < paths.size(); ++i) {
    ASSIGN_OR_RETURN(auto in, LoadReportInput(paths[i], label(i), load));
    inputs.push_back(std::move(in));
  }
  return inputs.size() == 2 ? RenderCompareReportHtml(inputs[0], inputs[1])
                            : RenderReportHtml(inputs[0]);
}

}  // namespace libreyolo
