// The report's charts as inline SVG, drawn from the trace timeline and the readers' rows.
// Every chart returns either an <svg> element or a "n/a" paragraph saying what is missing:
// never an empty or misleading axis. Every string drawn passes through HtmlEscape.
#ifndef LIBREYOLO_COMMON_REPORT_SVG_CHARTS_H_
#define LIBREYOLO_COMMON_REPORT_SVG_CHARTS_H_

#include <string>
#include <vector>

#include "common/report/trace_timeline.h"

namespace libreyolo {

// A "n/a" block with its reason (escaped).
std::string NotAvailable(const std::string& why);

// The colour of a phase ("forward", "other", ...); unknown phases get a stable palette colour.
std::string PhaseColor(const std::string& phase);

struct StackedBar {
  std::string label;           // "#12" or "mean"
  std::vector<double> values;  // by the chart's series
  double line = -1;            // 0..1 on the right axis (GPU busy share); < 0: none
  std::string tooltip;         // extra tooltip text
};

// The tallest bar: the sum of its values, negatives as 0 (what a chart's left axis must reach).
double StackedBarsMax(const std::vector<StackedBar>& bars);

// Stacked bars (series coloured by PhaseColor) with an optional 0-100 % line on a right axis.
// The left axis reaches at least `y_max` (0: the tallest bar): charts given the same y_max, the
// larger of their StackedBarsMax, share one scale and can be compared by eye.
std::string StackedBarChart(const std::vector<std::string>& series,
                            const std::vector<StackedBar>& bars, const std::string& unit,
                            const std::string& line_label, double y_max = 0);

// The GPU strip: one lane per stream (busy rectangles on idle background) and a row of launch
// call counts, over [0, window_ms].
std::string GpuStripChart(const TraceTimeline& tl);

// Allocated (and reserved, where recorded) memory over the window with the peak marked.
std::string MemoryChart(const std::vector<MemoryPoint>& points, const MemoryPoint& peak,
                        double window_ms, const std::string& what);

struct HBar {
  std::string label;
  double value = 0;
  std::string text;  // shown after the bar
};

// Horizontal bars scaled to the largest value.
std::string HBarChart(const std::vector<HBar>& bars);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_REPORT_SVG_CHARTS_H_
