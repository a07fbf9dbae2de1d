// docs/metrics.md "Verdicts": training rules through traces, inference rules through
// hand-built profiles.
#include <gtest/gtest.h>

#include <gmock/gmock.h>

#include "common/analysis/verdict.h"
#include "tests/common/trace_builder.h"

namespace libreyolo::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(Verdict, MemoryPressureComesFirst) {
  // 5 mallocs in the step and a 25% data-load span: memory pressure wins over dataloader.
  std::vector<std::string> ev = {Step(1, 0, 1000), Kernel("k", 0, 900),
                                 Ann("## dataload ##", 0, 250)};
  for (int i = 0; i < 5; ++i) ev.push_back(Runtime("cudaMalloc", 300 + 10 * i, 5));
  const Profile p = AnalyseEvents(ev);
  EXPECT_EQ(p.bound, kBoundMemoryPressure);
  EXPECT_THAT(p.bound_why, HasSubstr("5.0"));  // quotes the malloc count
}

TEST(Verdict, DataloaderFromADataloadSpan) {
  // "## dataload ##" 250 of 1000 us = 0.25 >= 0.2, even with a busy GPU (util 0.9).
  const Profile p = AnalyseEvents({Step(1, 0, 1000), Kernel("k", 0, 900),
                                   Ann("## dataload ##", 0, 250)});
  EXPECT_OPT_CLOSE(p.dataload_frac, 0.25);
  EXPECT_EQ(p.bound, kBoundDataloader);
  EXPECT_THAT(p.bound_why, HasSubstr("25%"));
}

TEST(Verdict, DataloaderFromAStepSpanAtTheThreshold) {
  // "step/dataload" 200 of 1000 us = exactly 0.2.
  const Profile p = AnalyseEvents({Step(1, 0, 1000), Kernel("k", 300, 100),
                                   Ann("step/dataload", 0, 200)});
  EXPECT_OPT_CLOSE(p.dataload_frac, 0.2);
  EXPECT_EQ(p.bound, kBoundDataloader);
}

TEST(Verdict, DataloadJustBelowTheThresholdIsNotDataloader) {
  const Profile p = AnalyseEvents({Step(1, 0, 1000), Kernel("k", 300, 100),
                                   Ann("step/dataload", 0, 199)});
  EXPECT_EQ(p.bound, kBoundHost);  // util 0.1 < 0.8
}

TEST(Verdict, ComputeAtUtilisation08) {
  const Profile p = AnalyseEvents({Step(1, 0, 1000), Kernel("k", 100, 800)});
  EXPECT_OPT_CLOSE(p.gpu_util, 0.8);
  EXPECT_EQ(p.bound, kBoundCompute);
}

TEST(Verdict, ComputeWithoutAnyKernel) {
  const Profile p = AnalyseEvents({Step(1, 0, 1000), Op("aten::conv2d", 10, 900)});
  EXPECT_EQ(p.bound, kBoundCompute);
  EXPECT_THAT(p.bound_why, HasSubstr("CPU"));
}

// The levers of a compute-bound inference name only what applies to the job: --half is CUDA's
// autocast (not for a CPU job), and an export runs at its traced size (--imgsz does not apply).
TEST(Verdict, InferenceLeversApplyToTheJob) {
  Profile p;
  p.mode = "inference";
  p.step_ms = 100;
  p.stages_ms = Stages{5.0, 90.0, 5.0};
  p.kernels_per_step = 0;  // on the CPU
  p.config_json = R"({"format": "torchscript"})";
  Verdict v = ComputeVerdict(p);
  EXPECT_EQ(v.bound, kBoundCompute);
  EXPECT_THAT(v.why, Not(HasSubstr("--half")));
  EXPECT_THAT(v.why, Not(HasSubstr("--imgsz")));
  EXPECT_THAT(v.why, HasSubstr("more --threads"));
  EXPECT_THAT(v.why, HasSubstr("an export at a smaller imgsz"));
  p.kernels_per_step = 50;  // a checkpoint on a busy GPU
  p.gpu_util = 0.9;
  p.config_json = R"({"format": "checkpoint"})";
  v = ComputeVerdict(p);
  EXPECT_EQ(v.bound, kBoundCompute);
  EXPECT_THAT(v.why, HasSubstr("Use --half, a smaller --imgsz or model size"));
}

TEST(Verdict, HostLaunchBelow08) {
  const Profile p = AnalyseEvents({Step(1, 0, 1000), Kernel("k", 100, 799)});
  EXPECT_OPT_CLOSE(p.gpu_util, 0.799);
  EXPECT_EQ(p.bound, kBoundHost);
  EXPECT_FALSE(p.bound_why.empty());
}

TEST(Verdict, IsMemoryPressure) {
  EXPECT_TRUE(IsMemoryPressure(5, 0));
  EXPECT_FALSE(IsMemoryPressure(4.99, 1.05));
  EXPECT_TRUE(IsMemoryPressure(0, 1.0500001));
  EXPECT_FALSE(IsMemoryPressure(0, 0));
}

Profile Inference(double step, OptDouble pre, OptDouble fwd, OptDouble post, double kernels,
                  double util) {
  Profile p;
  p.mode = "inference";
  p.step_ms = step;
  p.stages_ms = Stages{pre, fwd, post};
  p.kernels_per_step = kernels;
  p.gpu_util = util;
  p.gpu_util_raw = util;
  p.launches_per_step = kernels;
  p.memory_pressure = false;
  return p;
}

TEST(InferenceVerdict, NmsWhenPostprocessDominates) {
  // post 4 >= forward 3 and 4 / 10 = 0.4 >= 0.35.
  const Verdict v = ComputeVerdict(Inference(10, 1, 3, 4, 100, 0.9));
  EXPECT_EQ(v.bound, kBoundNms);
  EXPECT_THAT(v.why, HasSubstr("4.00"));
}

TEST(InferenceVerdict, NmsAtBothThresholds) {
  // post == forward == 3.5 and 3.5 / 10 = 0.35 exactly.
  EXPECT_EQ(ComputeVerdict(Inference(10, 1, 3.5, 3.5, 100, 0.9)).bound, kBoundNms);
}

TEST(InferenceVerdict, PostprocessLargerThanForwardButSmallShareIsNotNms) {
  // post 4 >= forward 3 but 4 / 20 = 0.2 < 0.35 -> on to the GPU rules: util 0.9 -> compute.
  EXPECT_EQ(ComputeVerdict(Inference(20, 1, 3, 4, 100, 0.9)).bound, kBoundCompute);
}

TEST(InferenceVerdict, Preprocess) {
  // pre 5 >= forward 4 and 5 / 10 = 0.5 >= 0.35; post 1 < forward.
  EXPECT_EQ(ComputeVerdict(Inference(10, 5, 4, 1, 100, 0.5)).bound, kBoundPreprocess);
}

TEST(InferenceVerdict, ComputeOnCpu) {
  const Verdict v = ComputeVerdict(Inference(10, 1, 8, 1, 0, 0));
  EXPECT_EQ(v.bound, kBoundCompute);
  EXPECT_THAT(v.why, HasSubstr("CPU"));
}

TEST(InferenceVerdict, ComputeAtUtil08) {
  EXPECT_EQ(ComputeVerdict(Inference(10, 1, 8, 1, 100, 0.8)).bound, kBoundCompute);
}

TEST(InferenceVerdict, HostLaunch) {
  EXPECT_EQ(ComputeVerdict(Inference(10, 1, 8, 1, 100, 0.5)).bound, kBoundHost);
}

TEST(InferenceVerdict, WithoutStagesTheTrainingRulesApply) {
  Profile p = Inference(10, 1, 3, 4, 100, 0.5);
  p.stages_ms.reset();
  p.dataload_frac = 0;
  EXPECT_EQ(ComputeVerdict(p).bound, kBoundHost);
}

}  // namespace
}  // namespace libreyolo::testing
