// The infer job end to end on the CPU: a tiny window, the files it writes, and its errors.
#include <gtest/gtest.h>

#include <filesystem>

#include "common/load/load_profile.h"
#include "common/readers/get_view.h"
#include "common/readers/kernels_view.h"
#include "common/readers/ops_view.h"
#include "common/readers/phases_view.h"
#include "common/readers/summary_view.h"
#include "server/engine/engine.h"

namespace libreyolo::engine {
namespace {

namespace fs = std::filesystem;

class InferJob : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("libreyolo_infer_job_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    spec_.model.device = "cpu";
    spec_.model.threads = 2;
    spec_.model.weights = (dir_ / "LibreYOLO9t.pt").string();  // absent, but not the default name
    spec_.imgsz = 64;
    spec_.warmup = 1;
    spec_.runs = 4;
    spec_.profiled_runs = 2;
    spec_.project = (dir_ / "runs").string();
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  InferJobSpec spec_;
};

TEST_F(InferJob, MissingWeightsPathIsNotFound) {
  auto r = RunInferJob(spec_, nullptr, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsNotFound(r.status())) << r.status();
}

TEST_F(InferJob, WritesAProfileEveryReaderAccepts) {
  spec_.model.weights = "LibreYOLO9t.pt";  // the default name: seeded random init
  std::vector<std::string> stages;
  auto r = RunInferJob(
      spec_, [&](const JobProgress& p) { stages.push_back(p.stage); }, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(fs::exists(r->profile_path));
  EXPECT_TRUE(fs::exists(r->trace_path));
  EXPECT_EQ(stages.front(), "loading model");

  auto p = LoadProfile(r->profile_path);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->mode, "inference");
  ASSERT_TRUE(p->latency.has_value());
  EXPECT_EQ(p->latency->n, 4);
  EXPECT_GT(p->latency->p50_ms, 0);
  ASSERT_TRUE(p->stages_ms.has_value());
  EXPECT_GT(p->stages_ms->forward.value_or(0), 0);
  EXPECT_EQ(*p->real_steps, 2);
  EXPECT_EQ(p->bound, "compute");
  EXPECT_NE(p->config_json.find("random-init"), std::string::npos) << p->config_json;
  EXPECT_NE(p->profiler_json.find("overhead_pct"), std::string::npos);
  std::vector<std::string> phases;
  for (const PhaseRow& row : p->phases) phases.push_back(row.phase);
  EXPECT_EQ(phases, (std::vector<std::string>{"preprocess", "forward", "postprocess"}));
  bool conv = false;
  for (const OpRow& o : p->ops) conv |= o.op == "aten::conv2d" && o.flops.value_or(0) > 0;
  EXPECT_TRUE(conv);

  // The trace analysed later agrees with the profile written now.
  auto again = LoadProfile(r->trace_path);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->ops.size(), p->ops.size());
  EXPECT_DOUBLE_EQ(*again->ops_per_step, *p->ops_per_step);

  EXPECT_FALSE(RenderSummaryText(BuildSummary(*p, r->profile_path)).empty());
  EXPECT_TRUE(BuildGet(*p, std::string("latency_p50_ms"), "x").ok());
  EXPECT_TRUE(BuildKernels(*p, {}, "x").ok());
  OpsOptions grouped;
  grouped.group_by_input_shape = true;
  EXPECT_TRUE(BuildOps(*p, grouped, "x").ok());
  OpsOptions forward;
  forward.phase = "forward";
  EXPECT_TRUE(BuildOps(*p, forward, "x").ok());
}

TEST_F(InferJob, RepeatWritesTheRepeatFile) {
  spec_.model.weights = "LibreYOLO9t.pt";
  spec_.repeat = 2;
  spec_.runs = 2;
  spec_.trace = false;
  auto r = RunInferJob(spec_, nullptr, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->repeat_path.has_value());
  auto p = LoadProfile(*r->repeat_path);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->repeat.img_per_s_n, 2);
  EXPECT_EQ(p->repeat.img_per_s_trials.size(), 2u);
}

TEST_F(InferJob, BadOptionsAndDevices) {
  spec_.model.weights = "LibreYOLO9t.pt";
  spec_.half = true;
  EXPECT_TRUE(absl::IsInvalidArgument(RunInferJob(spec_, nullptr, nullptr).status()));
  spec_.half = false;
  spec_.imgsz = 100;
  EXPECT_TRUE(absl::IsInvalidArgument(RunInferJob(spec_, nullptr, nullptr).status()));
  spec_.imgsz = 64;
  spec_.model.device = "3";
  EXPECT_TRUE(absl::IsFailedPrecondition(RunInferJob(spec_, nullptr, nullptr).status()));
  spec_.model.device = "cpu";
  spec_.source = (dir_ / "no-such-dir").string();
  EXPECT_TRUE(absl::IsNotFound(RunInferJob(spec_, nullptr, nullptr).status()));
}

TEST_F(InferJob, CancelIsObserved) {
  spec_.model.weights = "LibreYOLO9t.pt";
  CancelToken cancel;
  cancel.cancelled = true;
  auto r = RunInferJob(spec_, nullptr, &cancel);
  EXPECT_TRUE(absl::IsCancelled(r.status())) << r.status();
}

}  // namespace
}  // namespace libreyolo::engine
