// Issue 11: numbers that must not contradict each other (repeat trials, profiled vs unprofiled
// step, what-if launches, kernel categories by the kernel's own name, pct_of_cpu_ops, CPU jobs).
#include <gtest/gtest.h>

#include <gmock/gmock.h>

#include <cmath>
#include <numeric>

#include "absl/strings/str_format.h"

#include "common/analysis/compare.h"
#include "common/analysis/kernel_classify.h"
#include "common/analysis/latency_stats.h"
#include "common/analysis/metric_list.h"
#include "common/analysis/profile_json_write.h"
#include "common/analysis/repeat_trials.h"
#include "common/analysis/what_if.h"
#include "common/load/load_profile.h"
#include "common/profile/profile_json.h"
#include "common/readers/compare_view.h"
#include "common/readers/ops_view.h"
#include "common/readers/phases_view.h"
#include "common/readers/summary_view.h"
#include "tests/common/trace_builder.h"

namespace libreyolo::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::optional<double> Metric(const Profile& p, const std::string& name) {
  for (const MetricValue& m : FlatMetrics(p)) {
    if (m.name == name) return m.number;
  }
  return std::nullopt;
}

// ---- item 1: --repeat N ----------------------------------------------------------------

std::vector<TrialMeasurement> ThreeInferTrials() {
  // Trial means 20, 22, 24 ms (sd 2); the last trial alone would say 24 ms.
  std::vector<TrialMeasurement> t(3);
  t[0].latency_samples_ms = {19, 20, 21};
  t[1].latency_samples_ms = {21, 22, 23};
  t[2].latency_samples_ms = {23, 24, 25};
  for (size_t i = 0; i < 3; ++i) {
    const double k = static_cast<double>(i);
    t[i].step_ms = 20 + 2 * k;
    t[i].stages = Stages{1.0 + k, 15.0 + k, 2.0};
  }
  return t;
}

// Issue 36 §3: the Python LibreYOLO's statistics: img_per_s is the arithmetic mean of the trials'
// img/s (statistics.fmean) and every sd the population one (statistics.pstdev).
// Issue 38 §3 / 36 §5: a FLOP total that misses a convolution or matmul without a formula is
// printed as a lower bound naming what it lacks; a complete one as a bare figure. And the
// summary says who measured (our engine or the Python tool), since the two are different
// measurements of one model.
TEST(SummaryText, FlopsThatCannotBeCompleteAreALowerBoundAndTheMeasurerIsNamed) {
  Profile p;
  p.step_ms = 10;
  p.flops_per_step = 3.3e9;
  p.achieved_tflops = 0.33;
  p.tool_name = kOurToolName;
  p.tool_version = "0.1.0";
  const std::string complete = RenderSummaryText(BuildSummary(p, "x"));
  EXPECT_THAT(complete, Not(HasSubstr("at least")));
  EXPECT_THAT(complete, HasSubstr("measured by"));
  EXPECT_THAT(complete, HasSubstr("(C++); the Python LibreYOLO's eager PyTorch is another"));
  p.flops_uncounted_ops = {"aten::_thnn_fused_lstm_cell"};
  const std::string partial = RenderSummaryText(BuildSummary(p, "x"));
  EXPECT_THAT(partial, HasSubstr("at least 3.30 GFLOP/step"));
  EXPECT_THAT(partial, HasSubstr("not counted: aten::_thnn_fused_lstm_cell"));
  p.tool_name.clear();  // a Python LibreYOLO profile
  EXPECT_THAT(RenderSummaryText(BuildSummary(p, "x")),
              HasSubstr("the Python LibreYOLO (eager PyTorch)"));
}

TEST(RepeatTrials, EveryScalarIsTheMeanOverTrialsWithThePopulationSd) {
  Profile p;
  p.device = DeviceInfo{"cuda", "H200", 0, 132, 141000.0};  // a GPU job: host overhead applies
  p.gpu_busy_ms_per_step = 5;
  p.host_overhead_method = "residual";
  ApplyMeasuredTrials(p, /*batch=*/2, ThreeInferTrials());
  EXPECT_DOUBLE_EQ(*p.step_ms, 22);
  // The trials' img/s, averaged: never the last trial's alone.
  EXPECT_DOUBLE_EQ(*p.img_per_s, (2000.0 / 20 + 2000.0 / 22 + 2000.0 / 24) / 3);
  EXPECT_DOUBLE_EQ(p.latency->mean_ms, 22);
  EXPECT_DOUBLE_EQ(p.latency->p50_ms, 22);  // mean of 20, 22, 24
  EXPECT_DOUBLE_EQ(p.latency->min_ms, 21);  // mean of 19, 21, 23
  EXPECT_EQ(p.latency->n, 9);
  EXPECT_DOUBLE_EQ(*p.stages_ms->forward, 16);
  EXPECT_DOUBLE_EQ(*p.host_overhead_ms_per_step, 17);  // 22 - 5
  ASSERT_EQ(p.repeat.img_per_s_n, 3);
  EXPECT_DOUBLE_EQ(*p.repeat.img_per_s_std,
                   PopulationStd({2000.0 / 20, 2000.0 / 22, 2000.0 / 24}));
  EXPECT_NEAR(*p.repeat.img_per_s_std,
              SampleStd({2000.0 / 20, 2000.0 / 22, 2000.0 / 24}) * std::sqrt(2.0 / 3), 1e-9);
  for (const char* m : {"step_ms", "latency_p50_ms", "forward_ms", "host_overhead_ms"}) {
    ASSERT_TRUE(p.repeat.metrics.contains(m)) << m;
    EXPECT_EQ(p.repeat.metrics.at(m).n, 3) << m;
  }
  EXPECT_DOUBLE_EQ(p.repeat.metrics.at("step_ms").std, std::sqrt(8.0 / 3));  // 20, 22, 24
  EXPECT_DOUBLE_EQ(p.repeat.metrics.at("forward_ms").std, std::sqrt(2.0 / 3));
  EXPECT_DOUBLE_EQ(*Metric(p, "step_ms_std"), std::sqrt(8.0 / 3));
}

TEST(RepeatTrials, OneTrialHasNoRepeatStatistics) {
  Profile p;
  std::vector<TrialMeasurement> t = {ThreeInferTrials()[0]};
  ApplyMeasuredTrials(p, 1, t);
  EXPECT_DOUBLE_EQ(*p.step_ms, 20);
  EXPECT_FALSE(p.repeat.img_per_s_n.has_value());
  EXPECT_TRUE(p.repeat.metrics.empty());
}

TEST(RepeatTrials, TrainingTrialsAverageStepAndDataload) {
  Profile p;
  p.device = DeviceInfo{"cuda", "H200", 0, 132, 141000.0};
  p.gpu_busy_ms_per_step = 10;
  p.host_overhead_method = "residual";
  std::vector<TrialMeasurement> t(2);
  t[0].step_ms = 40;
  t[0].dataload_ms = 4;
  t[1].step_ms = 60;
  t[1].dataload_ms = 6;
  ApplyMeasuredTrials(p, 8, t);
  EXPECT_DOUBLE_EQ(*p.step_ms, 50);
  EXPECT_DOUBLE_EQ(*p.img_per_s, (8000.0 / 40 + 8000.0 / 60) / 2);
  EXPECT_DOUBLE_EQ(*p.dataload_ms, 5);
  EXPECT_DOUBLE_EQ(*p.dataload_frac, 0.1);
  EXPECT_DOUBLE_EQ(*p.host_overhead_ms_per_step, 35);  // 50 - 10 - 5
}

TEST(RepeatTrials, SummaryShowsSdAndNAndAgreesWithCompareAfterARoundTrip) {
  Profile p;
  p.mode = "inference";
  p.source_kind = "profile";
  p.tool_name = kOurToolName;  // written by our jobs
  p.batch = 2;
  p.config_json = R"({"batch": 2})";
  ApplyMeasuredTrials(p, 2, ThreeInferTrials());
  auto read = ReadProfileJson(WriteProfileJson(p), "repeat.json");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->repeat.metrics.size(), p.repeat.metrics.size());
  EXPECT_DOUBLE_EQ(read->repeat.metrics.at("step_ms").std, std::sqrt(8.0 / 3));
  EXPECT_TRUE(read->repeat.population_std);
  const std::string text = RenderSummaryText(BuildSummary(*read, "repeat.json"));
  EXPECT_THAT(text, HasSubstr("22.00 ± 1.63 ms (n=3 trials)"));
  EXPECT_THAT(text, HasSubstr(absl::StrFormat("%.2f ±", *p.img_per_s)));
  EXPECT_THAT(text, HasSubstr("means of 3 trials"));
  // compare, as the Python tool: ms_per_image = mean step / batch, img/s = the trials' mean.
  const CompareResult c = Compare(*read, *read, "a", "b");
  double ms_per_image = 0, img_per_s = 0;
  for (const CompareDelta& d : c.deltas) {
    if (d.metric == "ms_per_image") ms_per_image = d.before.value_or(0);
    if (d.metric == "img_per_s") img_per_s = d.before.value_or(0);
  }
  EXPECT_DOUBLE_EQ(ms_per_image, 11.0);
  EXPECT_DOUBLE_EQ(img_per_s, *p.img_per_s);
}

// ---- item 2: profiled window step vs unprofiled step -----------------------------------

// Ten steps of 60 us under the profiler, each with a forward of 56 us.
std::vector<std::string> TenProfiledSteps() {
  std::vector<std::string> ev;
  for (int i = 0; i < 10; ++i) {
    ev.push_back(Step(i + 1, i * 60, 60));
    ev.push_back(Ann("step/forward", i * 60 + 2, 56));
    ev.push_back(Op("aten::conv2d", i * 60 + 3, 50));
  }
  return ev;
}

TEST(StepNames, APhasesTableNeverShowsAStepSmallerThanItsForward) {
  Profile p = AnalyseEvents(TenProfiledSteps());
  p.source_kind = "profile";
  p.tool_name = kOurToolName;  // written by our jobs
  p.step_ms = 0.0374;  // measured without the profiler: faster than the profiled forward
  const std::string text = RenderPhasesText(BuildPhases(p, "profile.json"));
  EXPECT_THAT(text, HasSubstr("profiled step 0.06 ms"));
  EXPECT_THAT(text, HasSubstr("step measured without the profiler 0.04 ms"));
  EXPECT_THAT(text, Not(HasSubstr("\nstep 0.04")));
  EXPECT_THAT(text, HasSubstr("(rest of step)"));
  const PhasesView v = BuildPhases(p, "profile.json");
  ASSERT_TRUE(v.profiled_step_ms && v.rest_of_step_ms);
  EXPECT_NEAR(*v.profiled_step_ms, v.phases[0].wall_ms_per_step.value() + *v.rest_of_step_ms,
              1e-12);
}

TEST(StepNames, AProfileAndItsOwnTraceGiveTheSameProfiledStep) {
  const Profile trace = AnalyseEvents(TenProfiledSteps());
  Profile profile = trace;  // what infer/run write: the analysis, then the unprofiled headline
  profile.source_kind = "profile";
  profile.tool_name = kOurToolName;
  profile.step_ms = 0.0374;
  EXPECT_EQ(Metric(trace, "profiled_step_ms"), Metric(profile, "profiled_step_ms"));
  const std::string a = RenderSummaryText(BuildSummary(trace, "profile_trace.json"));
  const std::string b = RenderSummaryText(BuildSummary(profile, "profile.json"));
  EXPECT_THAT(a, HasSubstr("profiled step          0.06 ms  (window / steps"));
  EXPECT_THAT(b, HasSubstr("profiled step          0.06 ms  (window / steps"));
  EXPECT_THAT(b, HasSubstr("0.04 ms  (measured without the profiler)"));
  EXPECT_THAT(a, Not(HasSubstr("measured without the profiler")));
}

// ---- item 3: what-if --remove-category counts the category's launches --------------------

TEST(WhatIfLaunches, RemoveCategoryUsesTheCountedKernelsOfTheCategory) {
  auto loaded = LoadProfile(std::string(LIBREYOLO_FIXTURES_DIR) + "/traces/trace_filter.json.gz");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  double counted = 0;
  for (const KernelRow& k : loaded->kernels) {
    if (k.category == kCategoryGemm) counted += k.count_per_step;
  }
  ASSERT_GT(counted, 0);
  auto r = WhatIf(*loaded, WhatIfRequest{std::string("gemm"), std::nullopt});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_DOUBLE_EQ(r->removed_launches, counted);
  EXPECT_EQ(r->removed_launches_source, "counted");
  // The old time-share estimate was a different number.
  const double share = *loaded->launches_per_step * r->removed_gpu_ms /
                       *loaded->gpu_busy_ms_per_step;
  EXPECT_GT(std::fabs(share - counted), 1.0);
}

// ---- item 12: categories by the kernel's own name ----------------------------------------

TEST(KernelOwnName, TemplateAndParameterListsDoNotDecideTheCategory) {
  const char* fbgemm =
      "void split_embedding_backward_codegen_rowwise_adagrad_unweighted_kernel_cta_per_row_1<"
      "c10::Half, float, c10::Half, 2ul, 32>(at::GenericPackedTensorAccessor<c10::Half, 1ul, "
      "at::RestrictPtrTraits, long>, fbgemm_gpu::FixedDivisor, long)";
  EXPECT_EQ(KernelOwnName(fbgemm),
            "void split_embedding_backward_codegen_rowwise_adagrad_unweighted_kernel_cta_per_row_1");
  EXPECT_EQ(KernelCategory(fbgemm), kCategoryOther);
  EXPECT_EQ(KernelCategory("void at::native::vectorized_elementwise_kernel<4, "
                           "fbgemm_gpu::_float_to_hfp8_gpu(at::Tensor const&, long)::{lambda(float)"
                           "#1}, at::detail::Array<char*, 2> >(int, float)"),
            kCategoryElementwise);
  // "(anonymous namespace)" is part of the qualified name and stays.
  EXPECT_EQ(KernelOwnName("void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, "
                          "unsigned int, 4, 64, 64>(float*, int)"),
            "void at::native::(anonymous namespace)::CatArrayBatchedCopy");
  // Where the Python tool's whole-name rule and ours agree, the result is unchanged.
  EXPECT_EQ(KernelCategory("void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, "
                           "1>(cudnnTensorStruct, float const*)"),
            kCategoryNorm);
  EXPECT_EQ(KernelCategory("sm80_xmma_gemm_f16f16_f16f32_f32_nn_n_tilesize96x128x32"),
            kCategoryGemm);
  EXPECT_EQ(KernelCategory("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<"
                           "at::native::TensorListMetadata<2>, BinaryOpListAlphaFunctor<float> >("
                           "int)"),
            kCategoryElementwise);
  EXPECT_EQ(KernelCategory("void at::native::vectorized_elementwise_kernel<4, at::native::Fill"
                           "Functor<float>, at::detail::Array<char*, 1> >(int"),  // cut name
            kCategoryElementwise);
}

TEST(KernelOwnName, NoFbgemmKernelIsAGemmOnTheTraceFilterFixture) {
  auto loaded = LoadProfile(std::string(LIBREYOLO_FIXTURES_DIR) + "/traces/trace_filter.json.gz");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  for (const KernelRow& k : loaded->kernels) {
    if (k.category != kCategoryGemm) continue;
    EXPECT_THAT(k.raw_name, Not(HasSubstr("split_embedding"))) << k.raw_name;
    EXPECT_THAT(k.raw_name, Not(HasSubstr("bounds_check_indices"))) << k.raw_name;
  }
}

// ---- item 5: pct_of_cpu_ops means what the Python tool's means --------------------------

TEST(PctOfCpuOps, IsTheShareOfSummedCpuTotalsAsInThePythonTool) {
  // conv2d (10 us) contains convolution (6 us); add (4 us) beside them. Totals sum to 20.
  const Profile p = AnalyseEvents({Step(1, 0, 100), Op("aten::conv2d", 10, 10),
                                   Op("aten::convolution", 12, 6), Op("aten::add", 30, 4)});
  std::map<std::string, OpRow> rows;
  for (const OpRow& r : p.ops) rows[r.op] = r;
  EXPECT_NEAR(*rows["aten::conv2d"].pct_of_cpu_ops, 50.0, 1e-9);       // 10 / 20
  EXPECT_NEAR(*rows["aten::convolution"].pct_of_cpu_ops, 30.0, 1e-9);  // 6 / 20
  // The self-time share has its own name: conv2d's self time is 4 of 14.
  auto view = BuildOps(p, OpsOptions{}, "t.json");
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_NEAR(*PctOfSelfCpu(rows["aten::conv2d"], view->list_self_cpu_ms_per_step),
              100.0 * 4 / 14, 1e-9);
  EXPECT_THAT(RenderOpsJson(*view), HasSubstr("\"pct_of_self_cpu\""));
  // The Python profile's own value is shown as it is, under the same name.
  auto py = LoadProfile(std::string(LIBREYOLO_FIXTURES_DIR) +
                        "/profiles/libreyolo-python-infer.json");
  ASSERT_TRUE(py.ok()) << py.status();
  auto pyview = BuildOps(*py, OpsOptions{}, "py.json");
  ASSERT_TRUE(pyview.ok());
  EXPECT_THAT(RenderOpsText(*pyview), HasSubstr("20.74"));
}

TEST(PctOfCpuOps, StageSharesAreSharesOfLatency) {
  Profile p;
  p.mode = "inference";
  p.source_kind = "profile";
  p.tool_name = kOurToolName;  // written by our jobs
  p.step_ms = 100;
  p.stages_ms = Stages{10.0, 60.0, 10.0};
  const std::string text = RenderSummaryText(BuildSummary(p, "p.json"));
  EXPECT_THAT(text, HasSubstr("forward 60.00 ms (60%)"));  // of 100 ms, not of the 80 ms sum
}

// ---- item 7 / 8: a CPU job ---------------------------------------------------------------

Profile CpuTrainingTrace() {
  std::vector<std::string> ev;
  for (int i = 0; i < 2; ++i) {
    const int64_t t = i * 1000;
    ev.push_back(Step(i + 1, t, 1000));
    ev.push_back(Ann("step/forward", t + 10, 400));
    ev.push_back(Op("aten::conv2d", t + 20, 300));
    ev.push_back(Ann("step/backward", t + 420, 500));
    ev.push_back(Op("aten::silu_backward", t + 430, 200));
    ev.push_back(Mem(t + 25, 0, 4096, kMain, 1000000 + i * 500000, -1));
  }
  return AnalyseEvents(ev);
}

TEST(CpuJob, SummaryShowsGpuLinesAsNaAndTheCpuFacts) {
  Profile p = CpuTrainingTrace();
  for (bool recorded : {false, true}) {
    if (recorded) {
      p.source_kind = "profile";
      p.tool_name = kOurToolName;  // written by our jobs
      p.device = DeviceInfo{"cpu", "cpu", std::nullopt, std::nullopt, std::nullopt};
      p.config_json = R"({"threads": 4, "interop_threads": 2, "blas": "openblas"})";
    }
    const std::string text = RenderSummaryText(BuildSummary(p, "x"));
    EXPECT_THAT(text, HasSubstr("GPU utilisation        n/a (cpu job)"));
    EXPECT_THAT(text, HasSubstr("Tensor Core share      n/a (cpu job)"));
    EXPECT_THAT(text, HasSubstr("host overhead          n/a (cpu job)"));
    EXPECT_THAT(text, Not(HasSubstr("GPU utilisation        0.0")));
    EXPECT_THAT(text, Not(HasSubstr("Tensor Core share      0.0")));
    EXPECT_THAT(text, HasSubstr("CPU op time"));
    EXPECT_THAT(text, HasSubstr("CPU op time by category"));
    EXPECT_THAT(text, HasSubstr("peak host memory       1.5 MB"));
    if (recorded) {
      EXPECT_THAT(text, HasSubstr("4 intra-op, 2 inter-op; BLAS openblas"));
    }
  }
}

// ---- item 4 / issue 13: the profiler's overhead with its interval ------------------------

TEST(ProfilerOverhead, SummaryShowsTheIntervalAndPairsTheProfileRecords) {
  Profile p = CpuTrainingTrace();
  p.source_kind = "profile";
  p.tool_name = kOurToolName;  // written by our jobs
  p.profiler_json =
      R"({"record_shapes": true, "overhead_pct": 4.5, "overhead_ci_pct": [1.2, 11.0],)"
      R"( "overhead_ci_level": 0.979, "overhead_pairs": 24, "overhead_source": "probe"})";
  SummaryView v = BuildSummary(p, "x");
  EXPECT_EQ(v.profiler_overhead, "4.5 % [1.2, 11.0] (n=24)");
  EXPECT_THAT(RenderSummaryText(v), HasSubstr("profiler overhead      4.5 % [1.2, 11.0] (n=24)"));
  EXPECT_THAT(RenderSummaryJson(v),
              HasSubstr(R"x("profiler_overhead": "4.5 % [1.2, 11.0] (n=24)")x"));
  // Whose cost: the CPU collector the profile says recorded.
  p.profiler_json =
      R"({"overhead_pct": 2.5, "overhead_ci_pct": [0.5, 4.0], "overhead_pairs": 8,)"
      R"( "cpu_collector": "native"})";
  EXPECT_EQ(BuildSummary(p, "x").profiler_overhead, "2.5 % [0.5, 4.0] (n=8), native collector");
  // The decision reused from an identical earlier job says so.
  p.profiler_json = R"({"overhead_pct": -0.4, "overhead_ci_pct": [-2.0, 3.1],)"
                    R"( "overhead_pairs": 8, "switch_decision": "cached"})";
  EXPECT_EQ(BuildSummary(p, "x").profiler_overhead,
            "-0.4 % [-2.0, 3.1] (n=8); switches reused from an identical earlier job");
  // Nothing measured (--no-trace: overhead_pct null), or an older profile: no line.
  for (const char* json : {R"({"overhead_pct": null})", R"({"record_shapes": true})", ""}) {
    p.profiler_json = json;
    v = BuildSummary(p, "x");
    EXPECT_EQ(v.profiler_overhead, "") << json;
    EXPECT_THAT(RenderSummaryText(v), Not(HasSubstr("profiler overhead"))) << json;
  }
}

// Issue 36, section 4: the summary says what was recorded and why, and names each switch whose
// measured cost is over the budget with the flag that turns it off (text and --json alike).
TEST(ProfilerOverhead, SummaryNamesTheSwitchesAndEachOneOverTheBudget) {
  Profile p = CpuTrainingTrace();
  p.source_kind = "profile";
  p.tool_name = kOurToolName;
  p.profiler_json =
      R"({"record_shapes": true, "profile_memory": true, "with_flops": false,)"
      R"( "switch_source": {"record_shapes": "default", "profile_memory": "default",)"
      R"( "with_flops": "flag"}, "overhead_budget_pct": 3,)"
      R"( "switch_costs": {"record_shapes": {"cost_pct": 4.1, "ci_pct": [3.2, 5.0],)"
      R"( "ci_level": 0.95, "pairs": 8, "over_budget": true, "off_flag": "--no-record-shapes"},)"
      R"( "profile_memory": {"cost_pct": 3.5, "ci_pct": [-1.0, 8.0], "ci_level": 0.95,)"
      R"( "pairs": 8, "over_budget": false, "off_flag": "--no-profile-memory"}},)"
      R"( "overhead_pct": 9.0, "overhead_ci_pct": [7.0, 11.0], "overhead_pairs": 8})";
  const SummaryView v = BuildSummary(p, "x");
  const std::string line =
      "record_shapes cost 4.1 % (3.2..5.0) > budget 3 %: --no-record-shapes turns it off";
  EXPECT_EQ(v.switches_over_budget, std::vector<std::string>{line});
  EXPECT_EQ(v.profiler_switches,
            "record_shapes on (default), profile_memory on (default), with_flops off (flag)");
  const std::string text = RenderSummaryText(v);
  EXPECT_THAT(text, HasSubstr("  over budget            " + line + "\n")) << text;
  EXPECT_THAT(text, HasSubstr("  profiler switches      record_shapes on (default)")) << text;
  EXPECT_THAT(text, Not(HasSubstr("profile_memory cost"))) << "its interval reaches the budget";
  const std::string json = RenderSummaryJson(v);
  EXPECT_THAT(json, HasSubstr("\"switches_over_budget\": [\"" + line + "\"]")) << json;
  EXPECT_THAT(json, HasSubstr(R"("profiler_switches": "record_shapes on (default))")) << json;
  // An older profile (no switch_source, no switch_costs): neither line.
  p.profiler_json = R"({"record_shapes": true, "auto_disabled": []})";
  const SummaryView old = BuildSummary(p, "x");
  EXPECT_TRUE(old.switches_over_budget.empty());
  EXPECT_THAT(RenderSummaryText(old), Not(HasSubstr("profiler switches")));
}

TEST(CpuJob, PhasesShowCpuTimeAndAddUpToTheStep) {
  const Profile p = CpuTrainingTrace();
  const PhasesView v = BuildPhases(p, "x");
  const std::string text = RenderPhasesText(v);
  EXPECT_THAT(text, HasSubstr("CPU ms/step"));
  EXPECT_THAT(text, Not(HasSubstr("GPU ms/step")));
  double wall = 0;
  for (const PhaseRow& r : v.phases) wall += r.wall_ms_per_step.value_or(0);
  ASSERT_TRUE(v.rest_of_step_ms.has_value());
  EXPECT_NEAR(wall + *v.rest_of_step_ms, *v.profiled_step_ms, 1e-12);
  EXPECT_NEAR(*v.phases[0].cpu_ms_per_step, 0.3, 1e-12);  // forward: conv2d's self time
}

}  // namespace
}  // namespace libreyolo::testing
