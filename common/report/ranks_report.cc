#include "common/report/ranks_report.h"

#include <algorithm>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/analysis/compare.h"
#include "common/analysis/trust.h"
#include "common/render/html_escape.h"
#include "common/report/html_page.h"
#include "common/report/report_sections.h"
#include "common/report/svg_charts.h"

namespace libreyolo {
namespace {

std::string Ms(double v) { return absl::StrFormat("%.2f", v); }

std::string Figure(const std::optional<double>& v, const CrossRankMetric& m) {
  if (!v) return "n/a";
  if (m.integer) return absl::StrCat(static_cast<int64_t>(*v));
  if (std::string_view(m.unit) == "B") return absl::StrFormat("%.0f B", *v);
  return absl::StrCat(absl::StrFormat("%.3f", *v), *m.unit ? " " : "", m.unit);
}

// Each rank's step as three parts: data loading, communication no computation hides, and the
// rest (computation and what overlaps it).
std::vector<StackedBar> PerRankBars(const CrossRankResult& r) {
  std::vector<StackedBar> bars;
  for (const RankFigures& f : r.ranks) {
    const double rest = std::max(0.0, f.step_ms - f.dataload_ms - f.exposed_comm_ms);
    bars.push_back({absl::StrCat("rank ", f.info.rank),
                    {f.dataload_ms, f.exposed_comm_ms, rest},
                    -1,
                    absl::StrCat("step ", Ms(f.step_ms), " ms; compute ", Ms(f.compute_ms),
                                 " ms; in collectives ", Ms(f.comm_ms), " ms")});
  }
  return bars;
}

// `y_max` 0: the run's own scale; else the axis reaches it (two runs drawn on one scale).
std::string PerRankChart(const std::vector<StackedBar>& bars, double y_max = 0) {
  return StackedBarChart({"dataload", "exposed comm", "other"}, bars, "ms per step", "", y_max);
}

// "SOURCE: 4 ranks, nccl"
std::string RunLine(const RanksView& v) {
  const std::string count = v.result.partial() ? absl::StrCat(v.result.ranks.size(), " of ",
                                                              v.result.world_size, " ranks")
                                               : absl::StrCat(v.result.world_size, " ranks");
  return absl::StrCat(HtmlEscape(v.source), ": ", count, ", ", HtmlEscape(v.result.backend));
}

std::string VerdictBody(const CrossRankResult& r) {
  std::string verdict = absl::StrCat("<p class=\"verdict\">", HtmlEscape(r.verdict), "</p>");
  if (!r.levers.empty()) {
    verdict += "<ul>";
    for (const std::string& l : r.levers) absl::StrAppend(&verdict, "<li>", HtmlEscape(l), "</li>");
    verdict += "</ul>";
  }
  // The folder's trust checks (ranks missing, clocks): one line, a warning when not high.
  if (!r.trust_checks.empty()) {
    std::string line = r.confidence;
    if (!r.trust_reasons.empty()) line += ": " + absl::StrJoin(r.trust_reasons, "; ");
    absl::StrAppend(&verdict, "<p class=\"", r.confidence == kConfidenceHigh ? "why" : "warn",
                    "\" data-key=\"trust\">trust: ", HtmlEscape(line), "</p>");
  }
  return verdict;
}

std::string FiguresTable(const CrossRankResult& r) {
  HtmlTable t({"figure", "value"});
  for (const CrossRankMetric& m : CrossRankMetrics()) {
    const std::optional<double> v = m.Value(r);
    t.AddRow({HtmlTable::Text(m.name), HtmlTable::Num(v, Figure(v, m))});
  }
  return t.Render();
}

std::string RanksTable(const CrossRankResult& r) {
  HtmlTable t({"rank", "steps", "step ms", "compute ms", "dataload ms", "comm ms",
               "exposed comm ms", "all-reduce ms", "collectives", "all-reduce bytes", "trace"});
  auto num = [](double v) { return HtmlTable::Num(v, Ms(v)); };
  for (const RankFigures& f : r.ranks) {
    t.AddRow({HtmlTable::Num(static_cast<double>(f.info.rank), absl::StrCat(f.info.rank)),
              HtmlTable::Num(static_cast<double>(f.steps), absl::StrCat(f.steps)), num(f.step_ms),
              num(f.compute_ms), num(f.dataload_ms), num(f.comm_ms), num(f.exposed_comm_ms),
              num(f.allreduce_ms),
              HtmlTable::Num(static_cast<double>(f.collectives), absl::StrCat(f.collectives)),
              HtmlTable::Num(f.allreduce_bytes, f.allreduce_bytes
                                                    ? absl::StrFormat("%.0f", *f.allreduce_bytes)
                                                    : std::string("n/a")),
              HtmlTable::Text(f.path)});
  }
  return t.Render();
}

}  // namespace

std::string RenderRanksReportHtml(const RanksView& v) {
  const CrossRankResult& r = v.result;
  std::string s = PageStart(absl::StrCat("libreyolo cross-rank report: ", v.source));
  s += absl::StrCat("<header><h1>libreyolo cross-rank report</h1><p>", RunLine(v), "</p></header>");
  s += Section("verdict", "Verdict", VerdictBody(r));
  s += Section("ranks-chart", "Per rank", PerRankChart(PerRankBars(r)));
  s += Section("figures", "Cross-rank figures", FiguresTable(r));
  s += Section("ranks", "Ranks", RanksTable(r));
  s += PageEnd();
  return s;
}

namespace {

// "<h3>before: SOURCE</h3>": which run the block below it shows.
std::string SideHeading(const char* side, const RanksView& v) {
  return absl::StrCat("<h3>", side, ": ", HtmlEscape(v.source), "</h3>\n");
}

// The two runs' blocks, each under its heading and data-side: `body(view, side)` gives a block's
// content. `columns` sets them side by side (the verdicts), else one above the other.
template <typename Body>
std::string BothSides(const RanksView& before, const RanksView& after, bool columns, Body body) {
  std::string s = columns ? "<div class=\"cols\">" : "";
  for (const auto& [side, view] : {std::pair<const char*, const RanksView*>{"before", &before},
                                   std::pair<const char*, const RanksView*>{"after", &after}}) {
    absl::StrAppend(&s, "<div data-side=\"", side, "\">", SideHeading(side, *view),
                    body(*view, side), "</div>");
  }
  return absl::StrCat(s, columns ? "</div>\n" : "\n");
}

std::string Verdicts(const RanksView& before, const RanksView& after) {
  return BothSides(before, after, /*columns=*/true,
                   [](const RanksView& v, const char*) { return VerdictBody(v.result); });
}

// One above the other, full width, on the taller run's scale: the same height is the same
// milliseconds in both.
std::string Charts(const RanksView& before, const RanksView& after) {
  const std::vector<StackedBar> b = PerRankBars(before.result), a = PerRankBars(after.result);
  const double y_max = std::max(StackedBarsMax(b), StackedBarsMax(a));
  return BothSides(before, after, /*columns=*/false, [&](const RanksView&, const char* side) {
    return PerRankChart(side == std::string_view("before") ? b : a, y_max);
  });
}

std::string RankTables(const RanksView& before, const RanksView& after) {
  return BothSides(before, after, /*columns=*/false,
                   [](const RanksView& v, const char*) { return RanksTable(v.result); });
}

}  // namespace

std::string RenderRanksCompareReportHtml(const RanksView& before, const RanksView& after) {
  // The rows `compare BEFORE/ AFTER/` prints: the page shows them, it computes none of its own.
  const CompareResult c = CompareRanks(before, after);
  std::string s = PageStart(
      absl::StrCat("libreyolo cross-rank comparison: ", before.source, " vs ", after.source));
  s += absl::StrCat(
      "<header><h1>libreyolo cross-rank comparison</h1><div class=\"meta\">before: ",
      RunLine(before), "</div><div class=\"meta\">after: ", RunLine(after),
      "</div><div class=\"meta\">numbers as in <code>libreyolo profile compare BEFORE/ AFTER/ "
      "--json</code></div></header>\n");
  s += Section("significance", "Significance", SignificanceBody(c));
  s += Section("verdicts", "Verdicts", Verdicts(before, after));
  s += Section("ranks-chart", "Per rank (one scale)", Charts(before, after));
  s += Section("deltas", "Cross-rank figures (after - before)", DeltasTable(c));
  s += Section("ranks", "Ranks", RankTables(before, after));
  s += PageEnd();
  return s;
}

}  // namespace libreyolo
