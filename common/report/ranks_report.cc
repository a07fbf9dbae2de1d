#include "common/report/ranks_report.h"

#include <algorithm>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/render/html_escape.h"
#include "common/report/html_page.h"
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
std::string PerRankChart(const CrossRankResult& r) {
  std::vector<StackedBar> bars;
  for (const RankFigures& f : r.ranks) {
    const double rest = std::max(0.0, f.step_ms - f.dataload_ms - f.exposed_comm_ms);
    bars.push_back({absl::StrCat("rank ", f.info.rank),
                    {f.dataload_ms, f.exposed_comm_ms, rest},
                    -1,
                    absl::StrCat("step ", Ms(f.step_ms), " ms; compute ", Ms(f.compute_ms),
                                 " ms; in collectives ", Ms(f.comm_ms), " ms")});
  }
  return StackedBarChart({"dataload", "exposed comm", "other"}, bars, "ms per step", "");
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
  s += absl::StrCat("<header><h1>libreyolo cross-rank report</h1><p>", HtmlEscape(v.source), ": ",
                    r.world_size, " ranks, ", HtmlEscape(r.backend), "</p></header>");
  std::string verdict = absl::StrCat("<p class=\"verdict\">", HtmlEscape(r.verdict), "</p>");
  if (!r.levers.empty()) {
    verdict += "<ul>";
    for (const std::string& l : r.levers) absl::StrAppend(&verdict, "<li>", HtmlEscape(l), "</li>");
    verdict += "</ul>";
  }
  s += Section("verdict", "Verdict", verdict);
  s += Section("ranks-chart", "Per rank", PerRankChart(r));
  s += Section("figures", "Cross-rank figures", FiguresTable(r));
  s += Section("ranks", "Ranks", RanksTable(r));
  s += PageEnd();
  return s;
}

}  // namespace libreyolo
