#include "common/report/svg_charts.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/render/html_escape.h"

namespace libreyolo {
namespace {

constexpr double kWidth = 960;

// The smallest "nice" number (1, 1.2, 1.5, 2, 2.5, ... 8 x 10^k) >= v, for axis tops.
double NiceCeil(double v) {
  if (!(v > 0) || !std::isfinite(v)) return 1;
  const double p = std::pow(10.0, std::floor(std::log10(v)));
  for (const double m : {1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0}) {
    if (m * p >= v * (1 - 1e-12)) return m * p;
  }
  return 10 * p;
}

std::string Num(double v) {
  if (v == 0) return "0";
  const double a = std::fabs(v);
  if (a >= 100) return absl::StrFormat("%.0f", v);
  if (a >= 10) return absl::StrFormat("%.1f", v);
  if (a >= 0.1) return absl::StrFormat("%.2f", v);
  return absl::StrFormat("%.3g", v);
}

std::string Px(double v) { return absl::StrFormat("%.1f", v); }

std::string Open(double height, const std::string& label) {
  return absl::StrCat("<svg class=\"chart\" viewBox=\"0 0 ", Px(kWidth), " ", Px(height),
                      "\" role=\"img\" aria-label=\"", HtmlEscape(label),
                      "\" xmlns=\"http://www.w3.org/2000/svg\">\n");
}

// Horizontal grid lines and left-axis labels for 0..top over [y0 (bottom), y1 (top)].
// Five grid lines with their values left of x0 (the top one marked data-axis="top"), and the
// unit as the axis' title over the plot's left edge, where a long one ("ms per step") has room:
// beside the top value it ran off the chart's left side.
void YAxis(std::string& s, double x0, double x1, double y_bottom, double y_top, double top,
           const std::string& unit) {
  for (int i = 0; i <= 4; ++i) {
    const double v = top * i / 4;
    const double y = y_bottom - (y_bottom - y_top) * i / 4;
    absl::StrAppend(&s, "<line class=\"grid\" x1=\"", Px(x0), "\" x2=\"", Px(x1), "\" y1=\"", Px(y),
                    "\" y2=\"", Px(y), "\"/>", "<text class=\"ax\" x=\"", Px(x0 - 4), "\" y=\"",
                    Px(y + 4), "\" text-anchor=\"end\"", i == 4 ? " data-axis=\"top\"" : "", ">",
                    Num(v), "</text>\n");
  }
  if (!unit.empty()) {
    absl::StrAppend(&s, "<text class=\"ax\" x=\"", Px(x0 + 4), "\" y=\"", Px(y_top - 3),
                    "\" data-axis=\"unit\">", HtmlEscape(unit), "</text>\n");
  }
}

// Time ticks along the bottom, 0..window_ms mapped to [x0, x1].
void TimeAxis(std::string& s, double x0, double x1, double y, double window_ms) {
  const double step = NiceCeil(window_ms / 6);
  for (int i = 0; i * step <= window_ms * (1 + 1e-9); ++i) {
    const double t = i * step;
    const double x = x0 + (x1 - x0) * t / window_ms;
    // The last label ends at the axis' end instead of running off the chart.
    const char* anchor = x > x1 - 30 ? "end" : "middle";
    absl::StrAppend(&s, "<line class=\"tick\" x1=\"", Px(x), "\" x2=\"", Px(x), "\" y1=\"", Px(y),
                    "\" y2=\"", Px(y + 4), "\"/><text class=\"ax\" x=\"", Px(x), "\" y=\"",
                    Px(y + 16), "\" text-anchor=\"", anchor, "\">", Num(t), " ms</text>\n");
  }
}

}  // namespace

std::string NotAvailable(const std::string& why) {
  return absl::StrCat("<p class=\"na\"><b>n/a</b> ", HtmlEscape(why), "</p>\n");
}

std::string PhaseColor(const std::string& phase) {
  static constexpr std::array<std::pair<const char*, const char*>, 8> kKnown = {
      {{"dataload", "#a6761d"},
       {"to_device", "#e7298a"},
       {"preprocess", "#66a61e"},
       {"forward", "#1b9e77"},
       {"backward", "#d95f02"},
       {"postprocess", "#e6ab02"},
       {"optimizer", "#7570b3"},
       {"other", "#b8b8b8"}}};
  for (const auto& [name, color] : kKnown) {
    if (phase == name) return color;
  }
  static constexpr std::array<const char*, 6> kPalette = {"#17becf", "#1f78b4", "#b2df8a",
                                                          "#fb9a99", "#cab2d6", "#ff7f00"};
  size_t h = 0;
  for (const char c : phase) h = h * 31 + static_cast<unsigned char>(c);
  return kPalette[h % kPalette.size()];
}

double StackedBarsMax(const std::vector<StackedBar>& bars) {
  double max_total = 0;
  for (const StackedBar& b : bars) {
    double total = 0;
    for (const double v : b.values) total += std::max(v, 0.0);
    max_total = std::max(max_total, total);
  }
  return max_total;
}

std::string StackedBarChart(const std::vector<std::string>& series,
                            const std::vector<StackedBar>& bars, const std::string& unit,
                            const std::string& line_label, double y_max) {
  if (bars.empty()) return NotAvailable("no steps to draw");
  const double max_total = StackedBarsMax(bars);
  bool has_line = false;
  for (const StackedBar& b : bars) has_line = has_line || b.line >= 0;
  if (!(max_total > 0)) return NotAvailable("every step has zero duration");
  const double top = NiceCeil(std::max(max_total, y_max));
  const double x0 = 64, x1 = kWidth - 56, y_top = 14, y_bottom = 234, height = 290;
  std::string s = Open(height, "per-step stacked bar chart");
  YAxis(s, x0, x1, y_bottom, y_top, top, unit);
  if (has_line) {
    for (int i = 0; i <= 4; ++i) {
      const double y = y_bottom - (y_bottom - y_top) * i / 4;
      absl::StrAppend(&s, "<text class=\"ax\" x=\"", Px(x1 + 4), "\" y=\"", Px(y + 4), "\">",
                      25 * i, " %</text>");
    }
  }
  const double slot = (x1 - x0) / static_cast<double>(bars.size());
  const double bw = std::clamp(slot * 0.78, 0.5, 56.0);
  const size_t label_every = std::max<size_t>(1, bars.size() / 24);
  std::string line;
  for (size_t i = 0; i < bars.size(); ++i) {
    const StackedBar& b = bars[i];
    const double x = x0 + slot * static_cast<double>(i) + (slot - bw) / 2;
    std::string tip = absl::StrCat(b.label, ":");
    double total = 0;
    for (size_t k = 0; k < series.size() && k < b.values.size(); ++k) {
      total += std::max(b.values[k], 0.0);
      absl::StrAppend(&tip, "\n", series[k], " ", Num(b.values[k]), " ", unit);
    }
    absl::StrAppend(&tip, "\ntotal ", Num(total), " ", unit);
    if (b.line >= 0) absl::StrAppend(&tip, "\n", line_label, " ", Num(100 * b.line), " %");
    if (!b.tooltip.empty()) absl::StrAppend(&tip, "\n", b.tooltip);
    absl::StrAppend(&s, "<g><title>", HtmlEscape(tip), "</title>");
    double y = y_bottom;
    for (size_t k = 0; k < series.size() && k < b.values.size(); ++k) {
      const double h = (y_bottom - y_top) * std::max(b.values[k], 0.0) / top;
      if (h <= 0) continue;
      y -= h;
      absl::StrAppend(&s, "<rect x=\"", Px(x), "\" y=\"", Px(y), "\" width=\"", Px(bw),
                      "\" height=\"", Px(h), "\" fill=\"", PhaseColor(series[k]), "\"/>");
    }
    absl::StrAppend(&s, "</g>\n");
    if (i % label_every == 0) {
      absl::StrAppend(&s, "<text class=\"ax\" x=\"", Px(x + bw / 2), "\" y=\"", Px(y_bottom + 14),
                      "\" text-anchor=\"middle\">", HtmlEscape(b.label), "</text>");
    }
    if (b.line >= 0) {
      const double ly = y_bottom - (y_bottom - y_top) * std::clamp(b.line, 0.0, 1.0);
      absl::StrAppend(&line, line.empty() ? "" : " ", Px(x + bw / 2), ",", Px(ly));
    }
  }
  if (!line.empty()) {
    absl::StrAppend(&s, "<polyline class=\"busy\" points=\"", line, "\"/>\n");
  }
  // Legend.
  double lx = x0;
  const double ly = height - 14;
  for (const std::string& name : series) {
    absl::StrAppend(&s, "<rect x=\"", Px(lx), "\" y=\"", Px(ly - 9),
                    "\" width=\"10\" "
                    "height=\"10\" fill=\"",
                    PhaseColor(name), "\"/><text class=\"lg\" x=\"", Px(lx + 14), "\" y=\"", Px(ly),
                    "\">", HtmlEscape(name), "</text>");
    lx += 24 + 7.0 * static_cast<double>(std::min<size_t>(name.size(), 24));
  }
  if (has_line) {
    absl::StrAppend(&s, "<line class=\"busy\" x1=\"", Px(lx), "\" x2=\"", Px(lx + 16), "\" y1=\"",
                    Px(ly - 4), "\" y2=\"", Px(ly - 4), "\"/><text class=\"lg\" x=\"", Px(lx + 20),
                    "\" y=\"", Px(ly), "\">", HtmlEscape(line_label), " (right axis)</text>");
  }
  s += "</svg>\n";
  return s;
}

std::string GpuStripChart(const TraceTimeline& tl) {
  if (tl.streams.empty()) return NotAvailable("no GPU activity in this profile's window");
  if (!(tl.window_ms > 0)) return NotAvailable("the window has zero duration");
  const double x0 = 160, x1 = kWidth - 12, lane_h = 16, gap = 6;
  const double launch_h = 22;
  const double lanes_h = static_cast<double>(tl.streams.size()) * (lane_h + gap);
  const double height = 8 + lanes_h + launch_h + gap + 28;
  std::string s = Open(height, "GPU timeline strip");
  auto x_of = [&](double ms) { return x0 + (x1 - x0) * std::clamp(ms / tl.window_ms, 0.0, 1.0); };
  double y = 8;
  for (const StreamLane& lane : tl.streams) {
    const std::string tip = absl::StrFormat("%s: busy %s ms of %s ms (%.1f %%), %d kernels/copies",
                                            lane.name, Num(lane.busy_ms), Num(tl.window_ms),
                                            100 * lane.busy_ms / tl.window_ms, lane.activities);
    absl::StrAppend(&s, "<g><title>", HtmlEscape(tip), "</title><text class=\"lg\" x=\"",
                    Px(x0 - 6), "\" y=\"", Px(y + 12), "\" text-anchor=\"end\">",
                    HtmlEscapeCut(lane.name, 24), "</text><rect class=\"idle\" x=\"", Px(x0),
                    "\" y=\"", Px(y), "\" width=\"", Px(x1 - x0), "\" height=\"", Px(lane_h),
                    "\"/>");
    for (const auto& [a, b] : lane.busy) {
      const double xa = x_of(a);
      absl::StrAppend(&s, "<rect class=\"on\" x=\"", Px(xa), "\" y=\"", Px(y), "\" width=\"",
                      Px(std::max(x_of(b) - xa, 0.6)), "\" height=\"", Px(lane_h), "\"/>");
    }
    absl::StrAppend(&s, "</g>\n");
    y += lane_h + gap;
  }
  // Launch calls per time bucket.
  int64_t peak = 0;
  for (const int64_t n : tl.launches) peak = std::max(peak, n);
  absl::StrAppend(&s, "<g><title>",
                  HtmlEscape(absl::StrCat(tl.launch_calls, " kernel launch calls in the window",
                                          peak > 0 ? absl::StrCat(", at most ", peak, " per column")
                                                   : " (no launch calls linked to kernels)")),
                  "</title><text class=\"lg\" x=\"", Px(x0 - 6), "\" y=\"", Px(y + 15),
                  "\" text-anchor=\"end\">launches</text><rect class=\"idle\" x=\"", Px(x0),
                  "\" y=\"", Px(y), "\" width=\"", Px(x1 - x0), "\" height=\"", Px(launch_h),
                  "\"/>");
  if (peak > 0) {
    const double col = (x1 - x0) / static_cast<double>(tl.launches.size());
    for (size_t i = 0; i < tl.launches.size(); ++i) {
      if (tl.launches[i] == 0) continue;
      const double h = launch_h * static_cast<double>(tl.launches[i]) / static_cast<double>(peak);
      absl::StrAppend(&s, "<rect class=\"launch\" x=\"", Px(x0 + col * static_cast<double>(i)),
                      "\" y=\"", Px(y + launch_h - h), "\" width=\"", Px(std::max(col, 0.6)),
                      "\" height=\"", Px(h), "\"/>");
    }
  }
  absl::StrAppend(&s, "</g>\n");
  y += launch_h + gap;
  TimeAxis(s, x0, x1, y, tl.window_ms);
  s += "</svg>\n";
  if (tl.streams_not_drawn > 0) {
    absl::StrAppend(&s, "<p class=\"foot\">", tl.streams_not_drawn,
                    " less busy streams are not drawn.</p>\n");
  }
  return s;
}

std::string MemoryChart(const std::vector<MemoryPoint>& points, const MemoryPoint& peak,
                        double window_ms, const std::string& what) {
  if (points.empty() || peak.allocated_mb < 0) {
    return NotAvailable(absl::StrCat("no ", what,
                                     " memory samples in this profile (recorded with "
                                     "profile_memory on)"));
  }
  if (!(window_ms > 0)) return NotAvailable("the window has zero duration");
  double max_mb = peak.allocated_mb;
  bool reserved = false;
  for (const MemoryPoint& p : points) {
    if (p.reserved_mb >= 0) {
      reserved = true;
      max_mb = std::max(max_mb, p.reserved_mb);
    }
  }
  const double top = NiceCeil(max_mb);
  const double x0 = 64, x1 = kWidth - 16, y_top = 14, y_bottom = 164, height = 200;
  std::string s = Open(height, absl::StrCat(what, " memory over the window"));
  YAxis(s, x0, x1, y_bottom, y_top, top, "MB");
  auto x_of = [&](double ms) { return x0 + (x1 - x0) * std::clamp(ms / window_ms, 0.0, 1.0); };
  auto y_of = [&](double mb) { return y_bottom - (y_bottom - y_top) * std::max(mb, 0.0) / top; };
  std::string alloc, res;
  for (const MemoryPoint& p : points) {
    absl::StrAppend(&alloc, alloc.empty() ? "" : " ", Px(x_of(p.t_ms)), ",",
                    Px(y_of(p.allocated_mb)));
    if (p.reserved_mb >= 0) {
      absl::StrAppend(&res, res.empty() ? "" : " ", Px(x_of(p.t_ms)), ",", Px(y_of(p.reserved_mb)));
    }
  }
  if (reserved) absl::StrAppend(&s, "<polyline class=\"reserved\" points=\"", res, "\"/>\n");
  absl::StrAppend(&s, "<polyline class=\"alloc\" points=\"", alloc, "\"/>\n");
  const double px = x_of(peak.t_ms), py = y_of(peak.allocated_mb);
  absl::StrAppend(&s, "<g class=\"peak\"><title>",
                  HtmlEscape(absl::StrFormat("peak allocated %s MB at %s ms",
                                             Num(peak.allocated_mb), Num(peak.t_ms))),
                  "</title><circle cx=\"", Px(px), "\" cy=\"", Px(py),
                  "\" r=\"4\"/><text "
                  "class=\"lg\" x=\"",
                  Px(std::min(px + 8, x1 - 150)), "\" y=\"", Px(std::max(py - 6, y_top + 10)),
                  "\">peak ", Num(peak.allocated_mb), " MB</text></g>\n");
  TimeAxis(s, x0, x1, y_bottom, window_ms);
  absl::StrAppend(&s, "<text class=\"lg\" x=\"", Px(x0), "\" y=\"", Px(height - 2),
                  "\">— allocated", reserved ? "   - - reserved" : "", "</text>");
  s += "</svg>\n";
  return s;
}

std::string HBarChart(const std::vector<HBar>& bars) {
  if (bars.empty()) return NotAvailable("nothing to draw");
  double max_v = 0;
  for (const HBar& b : bars) max_v = std::max(max_v, b.value);
  if (!(max_v > 0)) return NotAvailable("all values are zero");
  const double x0 = 170, x1 = kWidth - 170, row = 20;
  const double height = 6 + row * static_cast<double>(bars.size());
  std::string s = Open(height, "bar chart");
  double y = 4;
  for (const HBar& b : bars) {
    const double w = (x1 - x0) * std::max(b.value, 0.0) / max_v;
    absl::StrAppend(&s, "<g><title>", HtmlEscape(absl::StrCat(b.label, ": ", b.text)),
                    "</title><text class=\"lg\" x=\"", Px(x0 - 6), "\" y=\"", Px(y + 13),
                    "\" text-anchor=\"end\">", HtmlEscapeCut(b.label, 26),
                    "</text><rect "
                    "class=\"hbar\" x=\"",
                    Px(x0), "\" y=\"", Px(y + 2), "\" width=\"", Px(std::max(w, 0.5)),
                    "\" height=\"", Px(row - 6),
                    "\"/><text class=\"lg\" "
                    "x=\"",
                    Px(x0 + w + 6), "\" y=\"", Px(y + 13), "\">", HtmlEscape(b.text),
                    "</text></g>\n");
    y += row;
  }
  s += "</svg>\n";
  return s;
}

}  // namespace libreyolo
