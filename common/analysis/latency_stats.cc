#include "common/analysis/latency_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace libreyolo {

LatencyStats ComputeLatencyStats(std::vector<double> s) {
  LatencyStats out;
  if (s.empty()) return out;
  std::sort(s.begin(), s.end());
  const size_t n = s.size();
  auto pct = [&](double q) {
    // nearbyint rounds half to even, as Python's round() in the reference does.
    const auto k = static_cast<size_t>(std::nearbyint(q / 100.0 * static_cast<double>(n - 1)));
    return s[std::min(n - 1, k)];
  };
  out.p50_ms = pct(50);
  out.p90_ms = pct(90);
  out.p99_ms = pct(99);
  out.mean_ms = std::accumulate(s.begin(), s.end(), 0.0) / static_cast<double>(n);
  out.min_ms = s.front();
  out.max_ms = s.back();
  return out;
}

double SampleStd(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / static_cast<double>(v.size() - 1));
}

}  // namespace libreyolo
