#include "common/analysis/latency_stats.h"

#include <gtest/gtest.h>

#include <cmath>

namespace libreyolo {
namespace {

TEST(LatencyStats, PercentileIndexRule) {
  // n = 10: p50 -> round(4.5) = 4 (half to even, as Python's round), p90 -> round(8.1) = 8,
  // p99 -> round(8.91) = 9. Sorted values are 1..10, so element k is k + 1.
  std::vector<double> v = {10, 1, 9, 2, 8, 3, 7, 4, 6, 5};
  const LatencyStats s = ComputeLatencyStats(v);
  EXPECT_DOUBLE_EQ(s.p50_ms, 5);
  EXPECT_DOUBLE_EQ(s.p90_ms, 9);
  EXPECT_DOUBLE_EQ(s.p99_ms, 10);
  EXPECT_DOUBLE_EQ(s.mean_ms, 5.5);
  EXPECT_DOUBLE_EQ(s.min_ms, 1);
  EXPECT_DOUBLE_EQ(s.max_ms, 10);
}

TEST(LatencyStats, SingleAndEmpty) {
  EXPECT_DOUBLE_EQ(ComputeLatencyStats({3}).p99_ms, 3);
  EXPECT_DOUBLE_EQ(ComputeLatencyStats({}).mean_ms, 0);
}

TEST(LatencyStats, SampleStd) {
  EXPECT_DOUBLE_EQ(SampleStd({2, 4, 4, 4, 5, 5, 7, 9}), std::sqrt(32.0 / 7.0));
  EXPECT_DOUBLE_EQ(SampleStd({1}), 0);
}

}  // namespace
}  // namespace libreyolo
