#include "common/analysis/compare.h"

#include <cmath>

#include "absl/strings/str_format.h"

namespace libreyolo {
namespace {

OptDouble MsPerImage(const Profile& p) {
  if (!p.step_ms.has_value() || !p.batch.has_value() || *p.batch <= 0) return std::nullopt;
  return *p.step_ms / static_cast<double>(*p.batch);
}

}  // namespace

OptDouble CompareDelta::delta() const {
  if (!before || !after) return std::nullopt;
  return *after - *before;
}

OptDouble CompareDelta::pct() const {
  if (!before || !after || *before == 0) return std::nullopt;
  return 100.0 * (*after - *before) / std::fabs(*before);
}

Significance SignificanceOf(double mean_a, double sd_a, int64_t n_a, double mean_b, double sd_b,
                            int64_t n_b) {
  Significance s;
  s.n_before = n_a;
  s.n_after = n_b;
  if (n_a < 2 || n_b < 2) {
    s.text = absl::StrFormat(
        "single run (n=%d before, n=%d after): a single run cannot support a significance call; "
        "use 'run --repeat N' or 'infer --repeat N' (N >= 2) on both sides",
        n_a, n_b);
    return s;
  }
  s.available = true;
  const double se = std::sqrt(sd_a * sd_a / static_cast<double>(n_a) +
                              sd_b * sd_b / static_cast<double>(n_b));
  s.abs_diff = std::fabs(mean_b - mean_a);
  s.two_se = 2 * se;
  s.significant = s.abs_diff > s.two_se;
  s.text = absl::StrFormat(
      "img_per_s mean %.2f (n=%d, sd %.2f) vs %.2f (n=%d, sd %.2f): |d|=%.2f %s 2*SE=%.2f -> %s",
      mean_a, n_a, sd_a, mean_b, n_b, sd_b, s.abs_diff, s.significant ? ">" : "<=", s.two_se,
      s.significant ? "significant" : "not significant");
  return s;
}

CompareResult Compare(const Profile& a, const Profile& b, const std::string& before_label,
                      const std::string& after_label) {
  CompareResult r;
  r.before_label = before_label;
  r.after_label = after_label;
  r.deltas = {
      {"img_per_s", "img/s", true, a.img_per_s, b.img_per_s},
      {"ms_per_image", "ms", false, MsPerImage(a), MsPerImage(b)},
      {"step_ms", "ms", false, a.step_ms, b.step_ms},
      {"gpu_util", "", true, a.gpu_util, b.gpu_util},
      {"host_overhead_ms_per_step", "ms", false, a.host_overhead_ms_per_step,
       b.host_overhead_ms_per_step},
      {"launches_per_step", "", false, a.launches_per_step, b.launches_per_step},
      {"gpu_busy_ms_per_step", "ms", false, a.gpu_busy_ms_per_step, b.gpu_busy_ms_per_step},
      {"tensorcore_pct", "%", true, a.tensorcore_pct, b.tensorcore_pct},
      {"peak_vram_mb", "MB", false, a.peak_vram_mb, b.peak_vram_mb},
  };
  // Data-parallel runs: the communication no compute hides is what costs step time.
  if (a.comm_ms_per_step.value_or(0) > 0 || b.comm_ms_per_step.value_or(0) > 0) {
    r.deltas.push_back({"comm_exposed_ms_per_step", "ms", false, a.comm_exposed_ms_per_step,
                        b.comm_exposed_ms_per_step});
  }
  if (a.latency && b.latency) {
    r.deltas.push_back({"latency_p50_ms", "ms", false, a.latency->p50_ms, b.latency->p50_ms});
    r.deltas.push_back({"latency_p99_ms", "ms", false, a.latency->p99_ms, b.latency->p99_ms});
  }
  r.bound_before = a.bound;
  r.bound_after = b.bound;
  r.significance = SignificanceOf(a.img_per_s.value_or(0), a.repeat.img_per_s_std.value_or(0),
                                  a.repeat.img_per_s_n.value_or(1), b.img_per_s.value_or(0),
                                  b.repeat.img_per_s_std.value_or(0),
                                  b.repeat.img_per_s_n.value_or(1));
  return r;
}

}  // namespace libreyolo
