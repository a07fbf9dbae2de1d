// docs/metrics.md "Steps and the window" (GPU work belongs to the step that launched it),
// "GPU time" (gpu_active_ms_per_step, gpu_util_raw) and "Communication": hand-made traces for
// each case the start-time window got wrong, every expectation computed by hand.
#include <gtest/gtest.h>

#include <numeric>

#include "common/analysis/compare.h"
#include "common/analysis/metric_list.h"
#include "common/analysis/what_if.h"
#include "common/load/load_profile.h"
#include "common/readers/kernels_view.h"
#include "common/readers/phases_view.h"
#include "tests/common/trace_builder.h"

namespace libreyolo::testing {
namespace {

// The GPU runs more than a step behind the CPU: each step launches one 900 us kernel, and the
// GPU only gets to step 1's kernel after step 2 has ended on the CPU.
//   steps:   #1 [0, 1000)  #2 [1000, 2000)          w0 = 0, w1 = 2000
//   launches: corr 1 at 100 (step 1), corr 2 at 1100 (step 2)
//   kernels:  k1 [2100, 3000)  k2 [3000, 3900)        both start after w1
TEST(LaunchAttribution, GpuLaggingTheCpuByMoreThanAStepKeepsEveryStepsKernels) {
  const Profile p = AnalyseEvents({
      Step(1, 0, 1000),
      Step(2, 1000, 1000),
      Launch(100, 20, 1),
      Launch(1100, 20, 2),
      Kernel("k1", 2100, 900, 1),
      Kernel("k2", 3000, 900, 2),
  });
  EXPECT_EQ(p.gpu_attribution, "launch");
  EXPECT_EQ(p.parse_stats.unattributed_kernels, 0);
  EXPECT_OPT_CLOSE(p.step_ms, 1.0);                 // 2000 us / 2 steps: CPU side unchanged
  EXPECT_OPT_CLOSE(p.kernels_per_step, 1.0);        // start times would give 0
  EXPECT_OPT_CLOSE(p.gpu_kernel_ms_per_step, 0.9);  // 1800 us / 2
  EXPECT_OPT_CLOSE(p.gpu_busy_ms_per_step, 0.9);    // union [2100, 3900) / 2
  EXPECT_OPT_CLOSE(p.gpu_active_ms_per_step, 0.9);
  // w_gpu_end = 3900: util = 1800 / (3900 - 0).
  EXPECT_OPT_CLOSE(p.gpu_util_raw, 1800.0 / 3900.0);
  EXPECT_OPT_CLOSE(p.gpu_util, 1800.0 / 3900.0);
  EXPECT_OPT_CLOSE(p.launches_per_step, 1.0);
  EXPECT_EQ(p.host_overhead_method, "measured");
}

// Kernels queued before the first step run inside the window: the one whose launch is in the
// trace (before w0) belongs to no analysed step; the one without any launch event is counted
// as unattributed. Neither is counted, though both start in [w0, w1).
//   launch corr 1 at 10 (before w0 = 100) -> k_early [150, 350)
//   no launch for corr 2                   -> k_orphan [350, 450)
//   launch corr 3 at 200 (in the window)   -> k_step [450, 650)
//   memcpy corr 4, launched at 300         -> [650, 700)
TEST(LaunchAttribution, KernelsQueuedBeforeTheFirstStepAreLeftOut) {
  const Profile p = AnalyseEvents({
      Launch(10, 20, 1),
      Step(1, 100, 900),  // [100, 1000)
      Launch(200, 20, 3),
      Runtime("cudaMemcpyAsync", 300, 10, 4),
      Kernel("k_early", 150, 200, 1),
      Kernel("k_orphan", 350, 100, 2),
      Kernel("k_step", 450, 200, 3),
      X("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 650, 50, Th{"0", "7"},
        R"("correlation": 4)"),
  });
  EXPECT_EQ(p.gpu_attribution, "launch");
  EXPECT_EQ(p.parse_stats.unattributed_kernels, 1);  // k_orphan
  EXPECT_OPT_CLOSE(p.kernels_per_step, 1.0);
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.kernels[0].raw_name, "k_step");
  EXPECT_OPT_CLOSE(p.gpu_kernel_ms_per_step, 0.2);
  EXPECT_OPT_CLOSE(p.gpu_busy_ms_per_step, 0.2);
  EXPECT_OPT_CLOSE(p.memcpy_ms_per_step, 0.05);
  // Active: k_step [450, 650) and the memcpy [650, 700) touch: 250 us.
  EXPECT_OPT_CLOSE(p.gpu_active_ms_per_step, 0.25);
  // w_gpu_end = max(w1 = 1000, 650) = 1000: 200 / 900.
  EXPECT_OPT_CLOSE(p.gpu_util_raw, 200.0 / 900.0);
  EXPECT_OPT_CLOSE(p.launches_per_step, 1.0);  // the launch at 10 is not in the window
}

// A kernel launched in the last step that runs past w1 counts whole; one launched before the
// window that runs into it counts not at all (start times did the opposite of neither: they
// counted the first whole and dropped nothing that started in the window).
//   step [0, 1000); launch corr 1 at 900 -> k_straddle [950, 1450)
//   launch corr 2 at -200 (before w0)     -> k_before [-100, 100)
TEST(LaunchAttribution, KernelStraddlingTheWindowEndCountsWhole) {
  const Profile p = AnalyseEvents({
      Launch(-200, 10, 2),
      Step(1, 0, 1000),
      Launch(900, 10, 1),
      Kernel("k_before", -100, 200, 2),
      Kernel("k_straddle", 950, 500, 1),
  });
  EXPECT_EQ(p.parse_stats.unattributed_kernels, 0);
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.kernels[0].raw_name, "k_straddle");
  EXPECT_OPT_CLOSE(p.gpu_kernel_ms_per_step, 0.5);
  EXPECT_OPT_CLOSE(p.gpu_busy_ms_per_step, 0.5);
  // w_gpu_end = 1450: 500 / 1450.
  EXPECT_OPT_CLOSE(p.gpu_util_raw, 500.0 / 1450.0);
  EXPECT_OPT_CLOSE(p.window_wall_ms, 1.0);  // the CPU window is unchanged
}

// Without any runtime event (nor flow) nothing can be linked: kernels fall back to their own
// start time, nothing is "unattributed", and launches are counted from kernels.
TEST(LaunchAttribution, TraceWithoutRuntimeEventsFallsBackToStartTimes) {
  const Profile p = AnalyseEvents({
      Step(1, 0, 1000), Kernel("k_before", -50, 100, 1),  // starts before w0: out
      Kernel("k_in", 200, 300, 2),                        // in
      Kernel("k_tail", 900, 400, 3),    // starts in the window, ends at 1300: in, whole
      Kernel("k_after", 1000, 100, 4),  // ts == w1: out
  });
  EXPECT_EQ(p.gpu_attribution, "start");
  EXPECT_EQ(p.parse_stats.unattributed_kernels, 0);
  EXPECT_OPT_CLOSE(p.kernels_per_step, 2.0);
  EXPECT_OPT_CLOSE(p.gpu_kernel_ms_per_step, 0.7);
  EXPECT_OPT_CLOSE(p.gpu_busy_ms_per_step, 0.7);
  EXPECT_OPT_CLOSE(p.gpu_util_raw, 700.0 / 1300.0);  // w_gpu_end = 1300
  EXPECT_EQ(p.launches_source, "kernels");
  EXPECT_EQ(p.host_overhead_method, "residual");
}

// A flow (ac2g) links a kernel whose launch carries no args.correlation.
TEST(LaunchAttribution, FlowLinksAKernelLaunchedInTheWindow) {
  const Profile p = AnalyseEvents({
      Step(1, 0, 1000),
      Runtime("cudaLaunchKernel", 500, 40),  // no correlation arg
      Flow(9, 510),
      Kernel("k_flow", 1200, 100, 9),  // after w1, linked through the flow
      Launch(600, 10, 5),
      Kernel("k_corr", 700, 100, 5),
  });
  EXPECT_EQ(p.gpu_attribution, "launch");
  EXPECT_OPT_CLOSE(p.kernels_per_step, 2.0);
  EXPECT_OPT_CLOSE(p.gpu_util_raw, 200.0 / 1300.0);
}

// Communication on one stream, compute on another:
//   step [0, 2000); every kernel launched in the step.
//   compute: gemm [100, 600), relu [1000, 1200)           stream 7
//   comm:    ncclAllReduce [400, 1100), ncclAllGather [1500, 1700)   stream 13
//   comm union = 700 + 200 = 900; covered by compute: [400, 600) + [1000, 1100) = 300
//   exposed = 600; overlap = 100 * (1 - 600 / 900).
TEST(Communication, ExposedIsTheCommunicationNoComputeOverlaps) {
  const Profile p = AnalyseEvents({
      Step(1, 0, 2000),
      Launch(10, 5, 1),
      Launch(20, 5, 2),
      Launch(30, 5, 3),
      Launch(40, 5, 4),
      Kernel("volta_sgemm_128x64_nn", 100, 500, 1, 7),
      Kernel("ncclKernel_AllReduce_RING_LL_Sum_float", 400, 700, 2, 13),
      Kernel("vectorized_elementwise_kernel<relu>", 1000, 200, 3, 7),
      Kernel("ncclDevKernel_AllGather_RING_LL", 1500, 200, 4, 13),
  });
  EXPECT_OPT_CLOSE(p.comm_ms_per_step, 0.9);
  EXPECT_OPT_CLOSE(p.comm_exposed_ms_per_step, 0.6);
  EXPECT_OPT_CLOSE(p.comm_overlap_pct, 100.0 * (1.0 - 600.0 / 900.0));
  // Busy = union of all four: [100, 1200) + [1500, 1700) = 1300 us.
  EXPECT_OPT_CLOSE(p.gpu_busy_ms_per_step, 1.3);
  EXPECT_OPT_CLOSE(p.gpu_kernel_ms_per_step, 1.6);
  // The category share stays a share of kernel time: 900 / 1600.
  double comm_pct = 0;
  for (const auto& c : p.categories) {
    if (c.name == "communication") comm_pct = c.pct;
  }
  EXPECT_CLOSE(comm_pct, 100.0 * 900.0 / 1600.0);
}

TEST(Communication, NoCommunicationLeavesTheOverlapUnknown) {
  const Profile p = AnalyseEvents({Step(1, 0, 1000), Launch(10, 5, 1), Kernel("gemm", 100, 50, 1)});
  EXPECT_OPT_CLOSE(p.comm_ms_per_step, 0.0);
  EXPECT_OPT_CLOSE(p.comm_exposed_ms_per_step, 0.0);
  EXPECT_FALSE(p.comm_overlap_pct.has_value());
}

// compare shows the exposed communication when either side has communication.
TEST(Communication, CompareShowsExposedCommunication) {
  const Profile comm = AnalyseEvents({
      Step(1, 0, 1000), Launch(10, 5, 1), Launch(20, 5, 2),
      Kernel("volta_sgemm_128x64_nn", 30, 300, 1, 7),
      Kernel("ncclKernel_AllReduce_RING_LL_Sum_float", 200, 400, 2, 13),  // exposed [330, 600)
  });
  const Profile none =
      AnalyseEvents({Step(1, 0, 1000), Launch(10, 5, 1), Kernel("gemm", 30, 300, 1)});
  auto row = [](const CompareResult& r) -> std::optional<CompareDelta> {
    for (const CompareDelta& d : r.deltas) {
      if (d.metric == "comm_exposed_ms_per_step") return d;
    }
    return std::nullopt;
  };
  const std::optional<CompareDelta> d = row(Compare(none, comm, "a", "b"));
  ASSERT_TRUE(d.has_value());
  EXPECT_OPT_CLOSE(d->before, 0.0);
  EXPECT_OPT_CLOSE(d->after, 0.27);
  EXPECT_FALSE(row(Compare(none, none, "a", "b")).has_value());
}

// The compute verdict names communication when exposed communication is >= 10 % of the step.
TEST(Communication, ComputeVerdictNamesExposedCommunication) {
  const Profile p = AnalyseEvents({
      Step(1, 0, 1000), Launch(10, 5, 1), Launch(20, 5, 2),
      Kernel("volta_sgemm_128x64_nn", 30, 600, 1, 7),
      Kernel("ncclKernel_AllReduce_RING_LL_Sum_float", 500, 400, 2, 13),  // exposed [630, 900)
  });
  EXPECT_OPT_CLOSE(p.gpu_util, 870.0 / 1000.0);
  EXPECT_OPT_CLOSE(p.comm_exposed_ms_per_step, 0.27);
  EXPECT_EQ(p.bound, "compute");
  EXPECT_NE(p.bound_why.find("communication bounds it: 0.3 ms per step"), std::string::npos)
      << p.bound_why;
}

// Headline, phases and kernel rows describe the same set of kernels: kernels launched inside
// a phase span count in that phase even when they run after the window ends.
TEST(LaunchAttribution, PhasesAddUpToTheHeadline) {
  const Profile p = AnalyseEvents({
      Step(1, 0, 1000), Ann("## forward ##", 10, 400), Launch(20, 5, 1), Launch(30, 5, 2),
      Ann("## backward ##", 500, 480), Launch(600, 5, 3), Launch(970, 5, 4),
      Kernel("fwd_a", 100, 300, 1), Kernel("fwd_b", 400, 300, 2), Kernel("bwd_a", 700, 300, 3),
      Kernel("bwd_late", 1000, 300, 4),  // starts at w1: in by its launch
      Kernel("orphan", 200, 50, 99),     // no launch: unattributed
  });
  EXPECT_EQ(p.parse_stats.unattributed_kernels, 1);
  double phase_ms = 0, phase_kernels = 0;
  for (const PhaseRow& r : p.phases) {
    phase_ms += r.gpu_ms_per_step;
    phase_kernels += r.kernels_per_step;
  }
  EXPECT_OPT_CLOSE(p.gpu_kernel_ms_per_step, 1.2);
  EXPECT_CLOSE(phase_ms, *p.gpu_kernel_ms_per_step);
  EXPECT_CLOSE(phase_kernels, *p.kernels_per_step);
  double rows_ms = 0;
  for (const KernelRow& k : p.kernels) rows_ms += k.ms_per_step;
  EXPECT_CLOSE(rows_ms, *p.gpu_kernel_ms_per_step);
}

// Every reader sees the same kernels: the summary's kernel time, the kernels table, the phases
// (with the phases view's unattributed rest), the categories what-if removes, the ops' device
// time and `get` all add up to the same total when the GPU runs a step behind the CPU.
//   steps #1 [0, 1000), #2 [1000, 2000); each step: aten::mm launches a gemm (600 us) inside
//   "## forward ##", aten::relu launches a relu (100 us) outside any phase. The GPU starts a
//   step's work 1200 us after the step starts, so step 2's kernels run after w1 = 2000.
TEST(LaunchAttribution, EveryReaderDescribesTheSameKernels) {
  std::vector<std::string> ev;
  int corr = 0;
  for (int s = 0; s < 2; ++s) {
    const int64_t t0 = 1000 * s, g = t0 + 1200;
    ev.push_back(Step(s + 1, t0, 1000));
    ev.push_back(Ann("## forward ##", t0 + 10, 400));
    ev.push_back(Op("aten::mm", t0 + 20, 100));
    ev.push_back(Launch(t0 + 30, 20, ++corr));
    ev.push_back(Kernel("ampere_sgemm_128x64_nn", g, 600, corr));
    ev.push_back(Op("aten::relu", t0 + 500, 100));
    ev.push_back(Launch(t0 + 520, 20, ++corr));
    ev.push_back(Kernel("vectorized_elementwise_kernel<relu>", g + 600, 100, corr));
  }
  ev.push_back(Kernel("orphan_kernel", 500, 50, 77));  // no launch call: in no reader
  const Profile p = AnalyseEvents(ev);
  const double total = 0.7;  // (600 + 100) us x 2 steps / 2 steps
  EXPECT_EQ(p.parse_stats.unattributed_kernels, 1);
  EXPECT_OPT_CLOSE(p.gpu_kernel_ms_per_step, total);
  EXPECT_OPT_CLOSE(p.kernels_per_step, 2.0);

  KernelsOptions all;
  all.top = 0;
  auto k = BuildKernels(p, all, "t.json");
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_CLOSE(k->matched_ms_per_step, total);

  const PhasesView ph = BuildPhases(p, "t.json");
  ASSERT_EQ(ph.phases.size(), 1u);
  EXPECT_CLOSE(ph.phases[0].gpu_ms_per_step, 0.6);         // the gemms, launched in forward
  EXPECT_OPT_CLOSE(ph.unattributed_gpu_ms_per_step, 0.1);  // the relus: no phase span
  EXPECT_CLOSE(ph.phases[0].gpu_ms_per_step + *ph.unattributed_gpu_ms_per_step, total);

  double cat_ms = 0;
  for (const CategoryRow& c : p.categories) {
    auto w = WhatIf(p, WhatIfRequest{c.name, std::nullopt});
    ASSERT_TRUE(w.ok()) << w.status();
    cat_ms += w->removed_gpu_ms;
  }
  EXPECT_CLOSE(cat_ms, total);

  EXPECT_OPT_CLOSE(p.self_device_total_ms_per_step, total);  // ops' device time
  for (const OpRow& r : p.ops) {
    if (r.op == "aten::mm") EXPECT_OPT_CLOSE(r.self_device_ms_per_step, 0.6);
    if (r.op == "aten::relu") EXPECT_OPT_CLOSE(r.self_device_ms_per_step, 0.1);
  }

  for (const MetricValue& m : FlatMetrics(p)) {
    if (m.name == "gpu_kernel_ms") EXPECT_OPT_CLOSE(m.number, total);
    if (m.name == "unattributed_kernels") {
      EXPECT_EQ(m.count, std::optional<int64_t>(1));
    }
  }
  // Utilisation: union 1400 us over [0, 2000 + 1200 + 700 = 2900).
  EXPECT_OPT_CLOSE(p.gpu_util_raw, 1400.0 / 2900.0);
}

// On the real training trace every kernel's phase comes through its launch: the phases' GPU
// time plus the kernels launched outside any phase span equals the headline, and the kernels
// table sums to it exactly.
TEST(LaunchAttribution, RealTracePhasesAndKernelsDescribeTheHeadlineKernels) {
  auto loaded = LoadProfile(std::string(LIBREYOLO_FIXTURES_DIR) + "/traces/trace_filter.json.gz");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const Profile& p = *loaded;
  EXPECT_EQ(p.gpu_attribution, "launch");
  double rows_ms = 0, rows_n = 0;
  for (const KernelRow& k : p.kernels) {
    rows_ms += k.ms_per_step;
    rows_n += k.count_per_step;
  }
  EXPECT_NEAR(rows_ms, *p.gpu_kernel_ms_per_step, 1e-9 * rows_ms);
  EXPECT_NEAR(rows_n, *p.kernels_per_step, 1e-9);
  double phase_ms = 0;
  for (const PhaseRow& r : p.phases) phase_ms += r.gpu_ms_per_step;
  EXPECT_LE(phase_ms, *p.gpu_kernel_ms_per_step * (1 + 1e-12));
  // Per-phase kernel tables sum to their phase's GPU time.
  for (const PhaseRow& r : p.phases) {
    double sum = 0;
    for (const KernelRow& k : p.kernels_by_phase.at(r.phase)) sum += k.ms_per_step;
    EXPECT_NEAR(sum, r.gpu_ms_per_step, 1e-9 * std::max(1.0, sum)) << r.phase;
  }
}

}  // namespace
}  // namespace libreyolo::testing
