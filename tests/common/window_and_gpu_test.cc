// docs/metrics.md "Steps and the window", "GPU time", "Launches, API time and host overhead",
// "Memory" (memory_pressure): small hand-made traces, every expectation computed by hand.
#include <gtest/gtest.h>

#include "common/analysis/verdict.h"
#include "tests/common/trace_builder.h"

namespace libreyolo::testing {
namespace {

TEST(Window, CpuStepCopyWinsOverEarlierGpuCopy) {
  const Profile p = AnalyseEvents({
      // Step 1: the GPU copy comes first in file order but the CPU copy is kept.
      Step(1, 50, 5000, "gpu_user_annotation"),
      Step(1, 100, 1000, "user_annotation"),  // [100, 1100)
      Step(2, 1100, 900, "cpu_op"),           // [1100, 2000)
      Step(2, 1150, 2000, "gpu_user_annotation"),
      Kernel("before_window", 50, 10),   // ts 50 < w0 = 100: ignored
      Kernel("inside", 200, 300),        // counted
      Kernel("at_w1", 2000, 100),        // ts == w1: outside [w0, w1)
      Kernel("late", 2500, 100),         // after w1: ignored
  });
  // w0 = 100, w1 = 2000 -> wall 1900 us = 1.9 ms; 2 distinct steps.
  ASSERT_TRUE(p.real_steps.has_value());
  EXPECT_EQ(*p.real_steps, 2);
  EXPECT_OPT_CLOSE(p.window_wall_ms, 1.9);
  EXPECT_OPT_CLOSE(p.step_ms, 0.95);  // 1.9 / 2
  EXPECT_EQ(p.parse_stats.duplicate_steps, 2);
  // Only "inside": 300 us / 2 steps = 0.15 ms; 1 kernel / 2 steps = 0.5 (a mean, issue 40;
  // the Python tool's total // steps said 0), one unique kernel.
  EXPECT_OPT_CLOSE(p.gpu_kernel_ms_per_step, 0.15);
  EXPECT_OPT_CLOSE(p.kernels_per_step, 0.5);
  EXPECT_EQ(p.unique_kernels, std::optional<int64_t>(1));
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.kernels[0].raw_name, "inside");
}

TEST(Window, WithoutCpuCopyTheFirstCopyInFileOrderIsKept) {
  const Profile p = AnalyseEvents({
      Step(1, 0, 1000, "gpu_user_annotation"),  // first: kept -> [0, 1000)
      Step(1, 500, 2000, "Trace"),              // would give [500, 2500)
      Kernel("k", 100, 100),                    // in either window
      Kernel("late", 1200, 100),                // only in the second copy's window
  });
  EXPECT_EQ(*p.real_steps, 1);
  EXPECT_OPT_CLOSE(p.window_wall_ms, 1.0);
  EXPECT_OPT_CLOSE(p.step_ms, 1.0);
  EXPECT_OPT_CLOSE(p.gpu_kernel_ms_per_step, 0.1);  // "k" only: 100 us
  EXPECT_EQ(p.parse_stats.duplicate_steps, 1);
}

TEST(Window, EarliestStartToLatestEndOverSteps) {
  // Steps listed out of order and with a gap: w0 = min start, w1 = max end.
  const Profile p = AnalyseEvents({
      Step(3, 3000, 1000),  // [3000, 4000)
      Step(1, 1000, 500),   // [1000, 1500)
      Step(2, 2000, 500),   // [2000, 2500)
      Kernel("gap", 1700, 100),  // between steps but inside [1000, 4000): counted
  });
  EXPECT_EQ(*p.real_steps, 3);
  EXPECT_OPT_CLOSE(p.window_wall_ms, 3.0);        // 4000 - 1000 us
  EXPECT_OPT_CLOSE(p.step_ms, 1.0);               // 3.0 / 3
  EXPECT_OPT_CLOSE(p.gpu_kernel_ms_per_step, 0.1 / 3);  // 100 us / 3 steps
}

TEST(Window, NoStepsMeansTheWholeTraceIsOneStep) {
  const Profile p = AnalyseEvents({
      Op("aten::add", 1000, 500),
      Kernel("k", 1200, 1000),  // ends at 2200: the latest end
      Runtime("cudaLaunchKernel", 900, 50),  // the earliest ts
  });
  // w0 = 900, w1 = 2200 -> 1.3 ms, real_steps 1.
  EXPECT_EQ(*p.real_steps, 1);
  EXPECT_OPT_CLOSE(p.window_wall_ms, 1.3);
  EXPECT_OPT_CLOSE(p.step_ms, 1.3);
  EXPECT_OPT_CLOSE(p.gpu_busy_ms_per_step, 1.0);
  EXPECT_OPT_CLOSE(p.gpu_util, 1.0 / 1.3);
}

TEST(GpuTime, UnionCountsConcurrentKernelsOnceSumTwice) {
  const Profile p = AnalyseEvents({
      Step(1, 0, 1000),
      Kernel("k_a", 100, 400, -1, 7),  // [100, 500) stream 7
      Kernel("k_b", 300, 400, -1, 8),  // [300, 700) stream 8, overlaps k_a by 200
      Kernel("k_a", 800, 100, -1, 7),  // [800, 900)
      X("gpu_memcpy", "Memcpy HtoD", 710, 20, Th{"0", "9"}),
      X("gpu_memset", "Memset", 750, 30, Th{"0", "9"}),
  });
  // sum = 400 + 400 + 100 = 900 us; union = [100, 700) + [800, 900) = 700 us.
  EXPECT_OPT_CLOSE(p.gpu_kernel_ms_per_step, 0.9);
  EXPECT_OPT_CLOSE(p.gpu_busy_ms_per_step, 0.7);
  EXPECT_OPT_CLOSE(p.gpu_util_raw, 0.7);  // 0.7 / 1.0
  EXPECT_OPT_CLOSE(p.gpu_util, 0.7);
  EXPECT_OPT_CLOSE(p.kernels_per_step, 3.0);
  EXPECT_EQ(*p.unique_kernels, 2);
  EXPECT_OPT_CLOSE(p.mean_kernel_us, 300.0);  // 900 us / 3
  EXPECT_OPT_CLOSE(p.memcpy_ms_per_step, 0.05);  // (20 + 30) us, not in GPU busy
}

TEST(GpuTime, KernelRunningPastTheWindowStretchesTheUtilisationSpan) {
  const Profile p = AnalyseEvents({
      Step(1, 0, 100),
      Kernel("long", 0, 150),  // starts in the window, runs past its end
  });
  // busy 150 us over the span from w0 = 0 to the kernel's end 150: raw 1.0, not 1.5 (the
  // start-time window divided by the 100 us step).
  EXPECT_OPT_CLOSE(p.gpu_busy_ms_per_step, 0.15);
  EXPECT_OPT_CLOSE(p.gpu_util_raw, 1.0);
  EXPECT_OPT_CLOSE(p.gpu_util, 1.0);
  EXPECT_EQ(p.memory_pressure, std::optional<bool>(false));
  EXPECT_EQ(p.bound, "compute");
}

TEST(GpuTime, RawAbove105IsMemoryPressure) {
  // A trace cannot give raw > 1 any more (kernels run inside their span), but a profile from
  // the Python reference can: the rule is raw > 1.05.
  EXPECT_FALSE(IsMemoryPressure(0, 1.05));
  EXPECT_TRUE(IsMemoryPressure(0, 1.0500001));
  EXPECT_TRUE(IsMemoryPressure(5, 0.5));
  EXPECT_FALSE(IsMemoryPressure(4.9, 0.5));
}

// No GPU activity and no CUDA runtime call: a CPU job, whose GPU metrics do not apply (null,
// never 0: issue 22), while its CPU metrics stay.
TEST(GpuTime, NoGpuActivityIsACpuJobWhoseGpuMetricsAreNull) {
  const Profile p = AnalyseEvents({Step(1, 0, 1000), Op("aten::add", 10, 100)});
  EXPECT_TRUE(IsCpuJob(p));
  EXPECT_FALSE(p.gpu_util.has_value());
  EXPECT_FALSE(p.gpu_busy_ms_per_step.has_value());
  EXPECT_FALSE(p.mean_kernel_us.has_value());
  EXPECT_FALSE(p.tensorcore_pct.has_value());
  EXPECT_FALSE(p.unique_kernels.has_value());
  EXPECT_FALSE(p.host_overhead_ms_per_step.has_value());
  EXPECT_FALSE(p.launches_per_step.has_value());
  EXPECT_FALSE(p.memory_pressure.has_value());
  EXPECT_OPT_CLOSE(p.step_ms, 1.0);
  EXPECT_OPT_CLOSE(p.ops_per_step, 1.0);
}

TEST(Launches, CountedFromRuntimeLaunchCallsOfEveryApi) {
  std::vector<std::string> ev = {Step(1, 0, 1000), Step(2, 1000, 1000)};
  // Step 1 only; durations 10 + 20 + 30 + 40 = 100 us of launch calls.
  ev.push_back(Runtime("cudaLaunchKernel", 10, 10));
  ev.push_back(Runtime("cudaLaunchKernelExC_v11060", 30, 20));
  ev.push_back(Runtime("cuLaunchKernel", 60, 30));
  ev.push_back(Runtime("hipLaunchKernel", 100, 40));
  ev.push_back(Runtime("cudaStreamSynchronize", 200, 500));  // not a launch, not API time
  ev.push_back(Runtime("cudaMemcpyAsync", 800, 60));         // API time, not a launch
  ev.push_back(Runtime("cudaMallocHost", 900, 5));           // neither launch nor cudaMalloc
  ev.push_back(Kernel("k", 150, 10));
  const Profile p = AnalyseEvents(ev);
  EXPECT_OPT_CLOSE(p.launches_per_step, 2.0);  // 4 launches / 2 steps
  EXPECT_EQ(p.launches_source, std::optional<std::string>("runtime"));
  EXPECT_OPT_CLOSE(p.launch_api_ms_per_step, 0.05);  // 100 us / 2
  EXPECT_OPT_CLOSE(p.host_api_ms_per_step, 0.0825);  // (100 + 60 + 5) us / 2
  EXPECT_OPT_CLOSE(p.cuda_mallocs_per_step, 0.0);
}

TEST(Launches, FallBackToKernelCountWithoutRuntimeEvents) {
  const Profile p = AnalyseEvents(
      {Step(1, 0, 1000), Kernel("a", 10, 10), Kernel("b", 30, 10), Kernel("a", 50, 10)});
  EXPECT_OPT_CLOSE(p.launches_per_step, 3.0);
  EXPECT_EQ(p.launches_source, std::optional<std::string>("kernels"));
}

TEST(Launches, RuntimeEventsWithoutLaunchCallsGiveZeroLaunches) {
  const Profile p = AnalyseEvents({Step(1, 0, 1000), Kernel("a", 10, 10),
                                   Runtime("cudaDeviceSynchronize", 20, 100)});
  EXPECT_OPT_CLOSE(p.launches_per_step, 0.0);
  EXPECT_EQ(p.launches_source, std::optional<std::string>("runtime"));
}

TEST(Mallocs, FivePerStepIsMemoryPressure) {
  const Profile p = AnalyseEvents({
      Step(1, 0, 1000),
      Runtime("cudaMalloc", 10, 5), Runtime("cudaFree", 20, 5), Runtime("cuMemAlloc_v2", 30, 5),
      Runtime("hipMalloc", 40, 5), Runtime("hipFree", 50, 5),
      Runtime("cudaMallocAsync", 60, 5),  // not in the list
      Kernel("k", 100, 100),
  });
  EXPECT_OPT_CLOSE(p.cuda_mallocs_per_step, 5.0);
  EXPECT_EQ(p.memory_pressure, std::optional<bool>(true));
  EXPECT_EQ(p.bound, "memory-pressure");
}

TEST(Mallocs, BelowFivePerStepIsNotMemoryPressure) {
  std::vector<std::string> ev = {Step(1, 0, 1000), Step(2, 1000, 1000), Kernel("k", 100, 100)};
  for (int i = 0; i < 9; ++i) ev.push_back(Runtime("cuMemFree", 200 + 100 * i, 5));
  const Profile p = AnalyseEvents(ev);
  EXPECT_OPT_CLOSE(p.cuda_mallocs_per_step, 4.5);  // 9 / 2: a mean
  EXPECT_EQ(p.memory_pressure, std::optional<bool>(false));
}

TEST(HostOverhead, MeasuredFromGpuIdleWaitingForLaunches) {
  const Profile p = AnalyseEvents({
      Step(1, 0, 1000),
      Launch(10, 20, 1), Kernel("k1", 40, 100, 1),      // busy [40, 140)
      Launch(100, 200, 2), Kernel("k2", 320, 100, 2),   // gap 140..320, launch ends 300
      Launch(310, 50, 3), Kernel("k3", 500, 100, 3),    // gap 420..500, launch ended 360
      Launch(400, 300, 4), Kernel("k4", 650, 50, 4),    // gap 600..650, launch ends 700
  });
  // k2: min(320, 300) - 140 = 160; k3: 360 <= 420 -> 0; k4: min(650, 700) - 600 = 50.
  // wait = 210 us; busy = 350 us; residual = 1.0 - 0.35 - 0 = 0.65 ms.
  EXPECT_OPT_CLOSE(p.gpu_wait_host_ms_per_step, 0.21);
  EXPECT_EQ(p.host_overhead_method, std::optional<std::string>("measured"));
  EXPECT_OPT_CLOSE(p.host_overhead_ms_per_step, 0.21);
  EXPECT_OPT_CLOSE(p.host_overhead_residual_ms_per_step, 0.65);
  EXPECT_OPT_CLOSE(p.gpu_busy_ms_per_step, 0.35);
}

TEST(HostOverhead, ResidualWithoutAnyLinkedKernel) {
  const Profile p = AnalyseEvents({
      Step(1, 0, 1000),
      Launch(10, 20), Kernel("k1", 40, 100),  // no correlation anywhere
      Kernel("k2", 320, 250),
      Ann("## dataload ##", 800, 100, Thread(2)),
  });
  // busy 350 us, dataload 0.1 ms: residual = max(1.0 - 0.35 - 0.1, 0) = 0.55.
  EXPECT_EQ(p.host_overhead_method, std::optional<std::string>("residual"));
  EXPECT_OPT_CLOSE(p.host_overhead_ms_per_step, 0.55);
  EXPECT_OPT_CLOSE(p.host_overhead_residual_ms_per_step, 0.55);
  EXPECT_OPT_CLOSE(p.gpu_wait_host_ms_per_step, 0.0);
  EXPECT_OPT_CLOSE(p.dataload_ms, 0.1);
}

TEST(HostOverhead, ResidualIsFlooredAtZero) {
  const Profile p = AnalyseEvents({Step(1, 0, 100), Kernel("k", 0, 90),
                                   Ann("## dataload ##", 0, 50)});
  // 0.1 - 0.09 - 0.05 < 0 -> 0.
  EXPECT_OPT_CLOSE(p.host_overhead_residual_ms_per_step, 0.0);
}

}  // namespace
}  // namespace libreyolo::testing

namespace libreyolo::testing {
namespace {

// Issue 40: the per-step figures of the whole window are means, not counts. One kernel (and its
// launch) in two steps is 0.5 per step, beside its non-zero GPU busy time, and the verdict sees
// a GPU job (with the Python tool's total // steps it was 0, "no GPU kernels").
TEST(PerStepMeans, OneKernelInTwoStepsIsHalfAKernelPerStep) {
  const Profile p = AnalyseEvents({Step(1, 0, 1000), Step(2, 1000, 1000), Launch(10, 5, 1),
                                   Kernel("k1", 20, 100, 1), Op("aten::add", 30, 10),
                                   Runtime("cudaMalloc", 40, 5)});
  ASSERT_EQ(p.real_steps, 2);
  EXPECT_DOUBLE_EQ(*p.kernels_per_step, 0.5);
  EXPECT_DOUBLE_EQ(*p.launches_per_step, 0.5);
  EXPECT_DOUBLE_EQ(*p.ops_per_step, 0.5);
  EXPECT_DOUBLE_EQ(*p.cuda_mallocs_per_step, 0.5);
  EXPECT_GT(*p.gpu_busy_ms_per_step, 0);
  EXPECT_NE(p.bound_why.find("GPU is busy"), std::string::npos) << p.bound_why;
  // The rows keep the Python tool's integer rule (its readers format them with :d).
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.kernels[0].count_per_step, 1);
}

}  // namespace
}  // namespace libreyolo::testing
