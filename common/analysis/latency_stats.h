// Latency percentiles as docs/metrics.md defines them (the Python LibreYOLO's rule).
#ifndef LIBREYOLO_COMMON_ANALYSIS_LATENCY_STATS_H_
#define LIBREYOLO_COMMON_ANALYSIS_LATENCY_STATS_H_

#include <vector>

namespace libreyolo {

struct LatencyStats {
  double p50_ms = 0, p90_ms = 0, p99_ms = 0, mean_ms = 0, min_ms = 0, max_ms = 0;
};

// Sorted samples; the q-th percentile is element min(n-1, round(q/100 * (n-1))). Empty: zeros.
LatencyStats ComputeLatencyStats(std::vector<double> samples_ms);

// Sample standard deviation (n - 1 in the denominator); 0 for fewer than two values.
double SampleStd(const std::vector<double>& values);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_ANALYSIS_LATENCY_STATS_H_
