#include "common/report/report_html.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/analysis/compare.h"
#include "common/load/load_profile.h"
#include "common/readers/phases_view.h"
#include "common/readers/summary_view.h"
#include "common/render/html_escape.h"
#include "common/render/text_table.h"
#include "common/report/html_page.h"
#include "common/report/profiler_record.h"
#include "common/report/ranks_report.h"
#include "common/report/report_sections.h"
#include "common/report/svg_charts.h"

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

std::string DeltasTable(const CompareResult& r) {
  std::string s =
      "<table class=\"deltas\"><thead><tr><th class=\"t\">metric</th><th>before</th>"
      "<th>after</th><th>delta</th><th>change</th><th class=\"t\"></th></tr></thead><tbody>\n";
  for (const CompareDelta& d : r.deltas) {
    if (!d.before && !d.after) continue;
    const OptDouble delta = d.delta(), pct = d.pct();
    std::string call;
    if (delta && *delta != 0)
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

std::string Side(const std::string& side, const ReportInput& in) {
  const SummaryView sv = BuildSummary(in.profile, in.label);
  return absl::StrCat("<div data-side=\"", side, "\"><h3>", HtmlEscape(side), ": ",
                      HtmlEscape(in.label), "</h3>\n", VerdictBlock(sv),
                      MetricGrid(HeadlineMetrics(sv)), "<h3>per step</h3>\n", PerStepChart(in),
                      "<h3>kernel categories</h3>\n", CategoryChart(sv.profile), "</div>\n");
}

}  // namespace

std::string RenderCompareReportHtml(const ReportInput& before, const ReportInput& after) {
  const CompareResult r = Compare(before.profile, after.profile, before.label, after.label);
  std::string s =
      PageStart(absl::StrCat("libreyolo profile comparison: ", before.label, " vs ", after.label));
  s += Header("libreyolo profile comparison", {&before, &after});
  const Significance& sig = r.significance;
  const std::string call = !sig.available    ? "no call (a single run cannot support one)"
                           : sig.significant ? "significant"
                                             : "not significant";
  s += Section("significance", "Significance",
               absl::StrCat("<p class=\"sig\" data-key=\"significant\" data-value=\"",
                            !sig.available    ? ""
                            : sig.significant ? "true"
                                              : "false",
                            "\">", HtmlEscape(call), "</p><p>", HtmlEscape(sig.text), "</p>\n",
                            MismatchWarnings(r)));
  s += Section("deltas", "Deltas (after - before)", DeltasTable(r));
  s += Section("side-by-side", "Side by side",
               absl::StrCat("<div class=\"cols\">", Side("before", before), Side("after", after),
                            "</div>\n"));
  s += PageEnd();
  return s;
}

absl::StatusOr<std::string> RenderReportFiles(const std::vector<std::string>& paths,
                                              const std::vector<std::string>& labels) {
  if (paths.empty() || paths.size() > 2) {
    return absl::InvalidArgumentError("a report takes one input, or two to compare");
  }
  // A folder of per-rank traces: the cross-rank page.
  for (const std::string& p : paths) {
    if (!IsDirectory(p)) continue;
    if (paths.size() == 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a report compares two profiles, not two runs' folders (", p,
          " is one): compare the folders with libreyolo profile compare BEFORE/ AFTER/, or draw "
          "each with libreyolo profile report DIR/"));
    }
    auto view = BuildRanksView(p);
    if (!view.ok()) return view.status();
    if (!labels.empty()) view->source = labels[0];
    return RenderRanksReportHtml(*view);
  }
  const ProfileLoader load = [](const std::string& p) { return LoadProfile(p); };
  std::vector<ReportInput> inputs;
  for (size_t i = 0; i < paths.size(); ++i) {
    auto in = LoadReportInput(paths[i], i < labels.size() ? labels[i] : paths[i], load);
    if (!in.ok()) return in.status();
    inputs.push_back(*std::move(in));
  }
  return inputs.size() == 2 ? RenderCompareReportHtml(inputs[0], inputs[1])
                            : RenderReportHtml(inputs[0]);
}

}  // namespace libreyolo
