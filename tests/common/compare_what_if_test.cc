// docs/metrics.md "compare" and "what-if", on hand-built profiles.
#include <gtest/gtest.h>

#include <gmock/gmock.h>

#include <cmath>

#include "common/analysis/compare.h"
#include "common/analysis/what_if.h"
#include "common/readers/compare_view.h"
#include "common/readers/what_if_view.h"
#include "tests/common/trace_builder.h"

namespace libreyolo::testing {
namespace {

using ::testing::HasSubstr;

Profile Repeated(double img_per_s, double sd, int64_t n, double step_ms, int64_t batch) {
  Profile p;
  p.device = DeviceInfo{"cuda", "H200", 0, 132, 141000.0};  // GPU metrics apply
  p.img_per_s = img_per_s;
  p.repeat.img_per_s_std = sd;
  p.repeat.img_per_s_n = n;
  p.repeat.population_std = false;  // the rule's worked examples give sample sds
  p.step_ms = step_ms;
  p.batch = batch;
  p.bound = "compute";
  return p;
}

const CompareDelta* FindDelta(const CompareResult& r, const std::string& metric) {
  for (const CompareDelta& d : r.deltas) {
    if (d.metric == metric) return &d;
  }
  return nullptr;
}

TEST(Compare, SignificantWhenDifferenceExceedsTwoStandardErrors) {
  // SE = sqrt(2^2/5 + 3^2/4) = sqrt(0.8 + 2.25) = sqrt(3.05); |d| = 5 > 2 SE = 3.4928...
  const CompareResult r =
      Compare(Repeated(100, 2, 5, 40, 8), Repeated(105, 3, 4, 36, 8), "a.json", "b.json");
  const Significance& s = r.significance;
  EXPECT_TRUE(s.available);
  EXPECT_TRUE(s.significant);
  EXPECT_CLOSE(s.abs_diff, 5.0);
  EXPECT_CLOSE(s.two_se, 2 * std::sqrt(3.05));
  EXPECT_EQ(s.n_before, 5);
  EXPECT_EQ(s.n_after, 4);
  EXPECT_THAT(s.text, HasSubstr("|d|=5.00"));
  EXPECT_THAT(s.text, HasSubstr("2*SE=3.49"));
  EXPECT_THAT(RenderCompareText(r), HasSubstr("2*SE=3.49"));
}

TEST(Compare, NotSignificantWithinTwoStandardErrors) {
  // |d| = 3 <= 3.4928...
  const CompareResult r =
      Compare(Repeated(100, 2, 5, 40, 8), Repeated(103, 3, 4, 36, 8), "a", "b");
  EXPECT_TRUE(r.significance.available);
  EXPECT_FALSE(r.significance.significant);
  EXPECT_CLOSE(r.significance.abs_diff, 3.0);
  EXPECT_THAT(r.significance.text, HasSubstr("not significant"));
}

TEST(Compare, SingleRunCannotSupportACall) {
  const CompareResult r =
      Compare(Repeated(100, 2, 1, 40, 8), Repeated(150, 3, 4, 36, 8), "a", "b");
  EXPECT_FALSE(r.significance.available);
  EXPECT_FALSE(r.significance.significant);
  EXPECT_THAT(r.significance.text, HasSubstr("single run"));
  // Profiles without repeat fields count as n = 1.
  Profile a, b;
  a.img_per_s = 10;
  b.img_per_s = 20;
  const CompareResult r2 = Compare(a, b, "a", "b");
  EXPECT_FALSE(r2.significance.available);
  EXPECT_THAT(RenderCompareText(r2), HasSubstr("single run"));
}

TEST(Compare, DeltasAndMsPerImage) {
  Profile a = Repeated(200, 0, 1, 40, 8);
  Profile b = Repeated(222.2, 0, 1, 36, 8);
  a.gpu_util = 0.5;
  b.gpu_util = 0.6;
  a.bound = "host / launch";
  a.latency = Latency{10, 11, 12, 10.5, 9, 13, 20, {}, {}, {}};
  b.latency = Latency{8, 9, 10, 8.5, 7, 11, 20, {}, {}, {}};
  const CompareResult r = Compare(a, b, "a", "b");
  const CompareDelta* mpi = FindDelta(r, "ms_per_image");
  ASSERT_NE(mpi, nullptr);
  EXPECT_OPT_CLOSE(mpi->before, 5.0);  // 40 / 8
  EXPECT_OPT_CLOSE(mpi->after, 4.5);   // 36 / 8
  EXPECT_OPT_CLOSE(mpi->delta(), -0.5);
  EXPECT_OPT_CLOSE(mpi->pct(), -10.0);
  const CompareDelta* ips = FindDelta(r, "img_per_s");
  ASSERT_NE(ips, nullptr);
  EXPECT_OPT_CLOSE(ips->delta(), 22.2);
  EXPECT_OPT_CLOSE(ips->pct(), 11.1);
  EXPECT_TRUE(ips->higher_is_better);
  EXPECT_OPT_CLOSE(FindDelta(r, "step_ms")->delta(), -4.0);
  EXPECT_OPT_CLOSE(FindDelta(r, "gpu_util")->delta(), 0.1);
  // Missing on both sides: nothing to compare, no row.
  EXPECT_EQ(FindDelta(r, "peak_vram_mb"), nullptr);
  // Latency rows when both sides have latency.
  EXPECT_OPT_CLOSE(FindDelta(r, "latency_p50_ms")->delta(), -2.0);
  EXPECT_OPT_CLOSE(FindDelta(r, "latency_p99_ms")->delta(), -2.0);
  EXPECT_EQ(r.bound_before, "host / launch");
  EXPECT_EQ(r.bound_after, "compute");
  // Without a batch there is no ms_per_image.
  b.batch.reset();
  EXPECT_FALSE(FindDelta(Compare(a, b, "a", "b"), "ms_per_image")->after.has_value());
}

// GPU utilisation 0.4 < 0.8: the launch mechanism.
Profile HostBound() {
  Profile p;
  p.step_ms = 10;
  p.img_per_s = 50;
  p.gpu_busy_ms_per_step = 4;
  p.gpu_util = 0.4;
  p.dataload_ms = 1;
  p.launches_per_step = 200;
  p.launch_api_ms_per_step = 2.0;  // 0.01 ms per launch
  p.host_overhead_ms_per_step = 5;
  p.bound = "host / launch";
  p.categories = {{"gemm / conv", 75, 3.0}, {"layout / copy", 25, 1.0}};
  return p;
}

// Issue 36 §5: on a CPU job what-if is n/a (null projections, the reason), not a projection of zeros
// ("GPU utilisation 0.00 < 0.80: bound by the host", exit 0, before).
TEST(WhatIfTest, IsNotApplicableToACpuJob) {
  Profile p;
  p.step_ms = 40;
  p.device = DeviceInfo{};
  p.device->type = "cpu";
  auto r = WhatIf(p, WhatIfRequest{std::nullopt, 100});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->applicable);
  EXPECT_THAT(r->caveat, ::testing::HasSubstr("CPU job"));
  EXPECT_THAT(RenderWhatIfJson(*r), ::testing::HasSubstr("\"speedup\": null"));
  // A category still has to name one: a CPU job has none (exit 2, naming what it has).
  auto c = WhatIf(p, WhatIfRequest{std::string("layout"), std::nullopt});
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(c.status().message()), ::testing::HasSubstr("none (no GPU kernels)"));
}


// GPU utilisation 0.9 >= 0.8: the gpu mechanism.
Profile GpuBound() {
  Profile p;
  p.step_ms = 10;
  p.gpu_busy_ms_per_step = 9;
  p.gpu_util = 0.9;
  p.launches_per_step = 100;
  p.launch_api_ms_per_step = 1.0;
  p.host_overhead_ms_per_step = 0.5;
  p.bound = "compute";
  p.categories = {{"gemm / conv", 75, 6.0}, {"layout / copy", 25, 2.0}};
  return p;
}

TEST(WhatIf, RemoveLaunchesWithTheLaunchMechanism) {
  auto r = WhatIf(HostBound(), WhatIfRequest{std::nullopt, 100});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->mechanism, "launch");
  EXPECT_CLOSE(r->per_launch_ms, 0.01);  // 2.0 ms / 200 launches
  EXPECT_EQ(r->per_launch_source, "launch_api");
  // max(10 - 100 * 0.01, 4 + 1) = 9.
  EXPECT_CLOSE(r->step_projected_ms, 9.0);
  EXPECT_CLOSE(r->speedup, 10.0 / 9.0);
  EXPECT_OPT_CLOSE(r->img_per_s_projected, 50.0 * 10.0 / 9.0);
  EXPECT_THAT(r->caveat, HasSubstr("estimate"));
  EXPECT_THAT(RenderWhatIfText(*r), HasSubstr("caveat"));
}

TEST(WhatIf, RemoveLaunchesIsClampedToTheLaunchesPerStep) {
  auto r = WhatIf(HostBound(), WhatIfRequest{std::nullopt, 1000});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_CLOSE(r->removed_launches, 200.0);
  // max(10 - 200 * 0.01, 5) = 8.
  EXPECT_CLOSE(r->step_projected_ms, 8.0);
  EXPECT_THAT(r->caveat, HasSubstr("exceeds"));
}

TEST(WhatIf, LaunchMechanismNeverGoesBelowGpuBusyPlusDataload) {
  Profile p = HostBound();
  p.launch_api_ms_per_step = 8.0;  // 0.04 ms per launch
  auto r = WhatIf(p, WhatIfRequest{std::nullopt, 200});
  ASSERT_TRUE(r.ok());
  // max(10 - 200 * 0.04, 4 + 1) = max(2, 5) = 5.
  EXPECT_CLOSE(r->step_projected_ms, 5.0);
}

TEST(WhatIf, PerLaunchFromHostOverheadWithoutLaunchApiTime) {
  Profile p = HostBound();
  p.launch_api_ms_per_step.reset();
  auto r = WhatIf(p, WhatIfRequest{std::nullopt, 100});
  ASSERT_TRUE(r.ok());
  EXPECT_CLOSE(r->per_launch_ms, 0.025);  // 5 ms / 200
  EXPECT_EQ(r->per_launch_source, "host_overhead");
  EXPECT_CLOSE(r->step_projected_ms, 7.5);  // max(10 - 2.5, 5)
}

TEST(WhatIf, RemoveCategoryWithTheLaunchMechanism) {
  auto r = WhatIf(HostBound(), WhatIfRequest{std::string("layout"), std::nullopt});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->removed_category, "layout / copy");
  EXPECT_CLOSE(r->removed_gpu_ms, 1.0);
  // 200 launches * 1.0 / 4.0 busy = 50 launches; max(10 - 50 * 0.01, 5) = 9.5.
  EXPECT_CLOSE(r->removed_launches, 50.0);
  EXPECT_CLOSE(r->step_projected_ms, 9.5);
}

TEST(WhatIf, RemoveCategoryWithTheGpuMechanism) {
  auto r = WhatIf(GpuBound(), WhatIfRequest{std::string("gemm"), std::nullopt});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->mechanism, "gpu");
  // max(10 - 6, host overhead 0.5) = 4.
  EXPECT_CLOSE(r->step_projected_ms, 4.0);
  EXPECT_CLOSE(r->speedup, 2.5);
  EXPECT_FALSE(r->img_per_s_projected.has_value());  // no throughput in the profile
  EXPECT_THAT(r->caveat, HasSubstr("estimate"));
}

TEST(WhatIf, GpuMechanismFloorIsTheHostOverhead) {
  Profile p = GpuBound();
  p.host_overhead_ms_per_step = 5;
  auto r = WhatIf(p, WhatIfRequest{std::string("gemm"), std::nullopt});
  ASSERT_TRUE(r.ok());
  EXPECT_CLOSE(r->step_projected_ms, 5.0);  // max(10 - 6, 5)
}

TEST(WhatIf, RemovingLaunchesUnderTheGpuMechanismGainsNothing) {
  auto r = WhatIf(GpuBound(), WhatIfRequest{std::nullopt, 50});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->mechanism, "gpu");
  EXPECT_CLOSE(r->step_projected_ms, 10.0);
  EXPECT_CLOSE(r->speedup, 1.0);
}

TEST(WhatIf, OptionErrors) {
  auto both = WhatIf(HostBound(), WhatIfRequest{std::string("gemm"), 10});
  EXPECT_EQ(both.status().code(), absl::StatusCode::kInvalidArgument);
  auto neither = WhatIf(HostBound(), WhatIfRequest{});
  EXPECT_EQ(neither.status().code(), absl::StatusCode::kInvalidArgument);
  auto negative = WhatIf(HostBound(), WhatIfRequest{std::nullopt, -1});
  EXPECT_EQ(negative.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(WhatIf, UnknownCategoryListsTheProfilesCategories) {
  auto r = WhatIf(HostBound(), WhatIfRequest{std::string("nccl"), std::nullopt});
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("gemm / conv"));
  EXPECT_THAT(r.status().message(), HasSubstr("layout / copy"));
}

}  // namespace
}  // namespace libreyolo::testing
