// The pieces of a report page, shared by the single-profile page and the comparison page
// (common/report/report_html.h). Each returns HTML with every string escaped.
#ifndef LIBREYOLO_COMMON_REPORT_REPORT_SECTIONS_H_
#define LIBREYOLO_COMMON_REPORT_REPORT_SECTIONS_H_

#include <string>
#include <vector>

#include "common/analysis/compare.h"
#include "common/profile/profile.h"
#include "common/readers/phases_view.h"
#include "common/readers/summary_view.h"
#include "common/report/report_input.h"

namespace libreyolo {

struct Metric {
  std::string key;  // the key in `summary --json` (dotted for nested objects)
  std::string label;
  OptDouble value;
  std::string text;
};

// The headline numbers of `summary`, keyed as in its --json.
std::vector<Metric> HeadlineMetrics(const SummaryView& v);
// Tiles with data-key / data-value (the exact double; empty for n/a).
std::string MetricGrid(const std::vector<Metric>& metrics);
// The bound, its reason (first sentence of bound_why), the levers (the rest), the warning.
std::string VerdictBlock(const SummaryView& v);
// Per-step stacked bars from the timeline (at most 300), else n/a and the profile's means. The
// y axis reaches at least `y_max` (0: the chart's own tallest bar): a comparison page gives both
// sides the larger PerStepChartMax, so its two charts share one scale.
std::string PerStepChart(const ReportInput& in, double y_max = 0);
// The tallest bar PerStepChart draws for `in` (0: none).
double PerStepChartMax(const ReportInput& in);
std::string PhasesTable(const PhasesView& v);
std::string CategoryChart(const Profile& p);
// Categories and the top kernels (the `kernels` view).
std::string KernelsBody(const SummaryView& sv, const Profile& full);
// The sortable op table (the `ops` view).
std::string OpsBody(const Profile& full, const std::string& source);
std::string MemoryBody(const ReportInput& in, const SummaryView& sv);
std::string GpuBody(const ReportInput& in);
// The per-layer table from the module scopes, or why there is none.
std::string LayersBody(const ReportInput& in);
// A comparison's call (significant / not significant / no call, and why) and the settings the
// two runs do not share, as `compare` prints them.
std::string SignificanceBody(const CompareResult& r);
// One row per delta of `compare` (data-metric, data-before and data-after: the exact values of
// `compare --json`), better / worse where the change has a direction, then the bound row.
std::string DeltasTable(const CompareResult& r);
// <header>: the title and one line per input.
std::string Header(const std::string& what, const std::vector<const ReportInput*>& inputs);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_REPORT_REPORT_SECTIONS_H_
