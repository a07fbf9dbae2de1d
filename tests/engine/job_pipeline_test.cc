// The job pipeline (server/engine/job/pipeline.h) with a scripted kind: the stages run in their
// order, the first error ends the job with nothing written, one boundary turns a LibTorch error
// or another exception anywhere into INTERNAL, the decide stage keeps the switches whatever the
// probes read and skips probing when asked to, and every profile ends with the same facts.
#include "server/engine/job/pipeline.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace libreyolo::engine {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class ScriptedKind final : public JobKind {
 public:
  explicit ScriptedKind(const fs::path& project) {
    output_.paths_relative_to_project = true;
    files_ = JobFilesFor(project.string(), "scripted", output_);
  }
  const char* what() const override { return "scripted"; }
  const ProfilerSwitches& requested() const override { return requested_; }
  DeviceChoice device() const override { return DeviceChoice{}; }
  const JobOutputOptions& output() const override { return output_; }

  absl::Status Prepare(const StageContext&) override { return Stage("prepare"); }
  absl::Status Warmup(const StageContext&) override { return Stage("warmup"); }
  absl::Status Measure(const StageContext&) override {
    if (auto s = Stage("measure"); !s.ok()) return s;
    return CreateJobDir(files_);
  }
  SwitchQuestion AskSwitches(const StageContext&) override {
    stages.push_back("ask");
    SwitchQuestion q;
    q.probe = [this](const ResolvedSwitches&) -> absl::StatusOr<ProbeTimings> {
      ++probes;
      ProbeTimings t;
      for (int64_t i = 0; i < kProbePairs; ++i) {
        t.unprofiled_ms.push_back(100.0);
        t.profiled_ms.push_back(100.0 + probe_pct);
      }
      t.unprofiled_ms.push_back(100.0);
      return t;
    };
    q.job_windows = 100;
    return q;
  }
  absl::Status Record(const StageContext&, const SwitchDecision& d) override {
    decision = d;
    return Stage("record");
  }
  absl::StatusOr<Profile> Analyse(const StageContext&) override {
    if (auto s = Stage("analyse"); !s.ok()) return s;
    return Profile{};
  }
  absl::Status Apply(const StageContext&, const SwitchDecision&, Profile* p) override {
    if (auto s = Stage("apply"); !s.ok()) return s;
    p->mode = "inference";
    p->model = "scripted";
    p->batch = 1;
    p->step_ms = 10;
    return absl::OkStatus();
  }
  JobOutputs Outputs() const override {
    JobOutputs out;
    out.files = &files_;
    return out;
  }

  std::vector<std::string> stages;
  std::string fail_at;  // this stage returns an error
  std::string throw_at;  // this stage throws (a c10::Error, or std::runtime_error with "std")
  bool throw_std = false;
  int probes = 0;
  double probe_pct = 1.0;  // what every probe reads the profiler at
  SwitchDecision decision;
  ProfilerSwitches requested_;
  JobFiles files_;

 private:
  absl::Status Stage(const std::string& name) {
    stages.push_back(name);
    if (name == throw_at) {
      if (throw_std) throw std::runtime_error("a broken " + name);
      TORCH_CHECK(false, "a tensor broke in ", name);
    }
    if (name == fail_at) return absl::CancelledError("cancelled in " + name);
    return absl::OkStatus();
  }
  JobOutputOptions output_;
};

class JobPipeline : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("libreyolo_pipeline_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(JobPipeline, RunsTheStagesInOrderAndEndsEveryProfileAlike) {
  ScriptedKind kind(dir_);
  std::vector<std::string> progress;
  auto r = RunJobPipeline(
      kind, [&](const JobProgress& p) { progress.push_back(p.stage); }, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(kind.stages,
              ElementsAre("prepare", "warmup", "measure", "ask", "record", "analyse", "apply"));
  // One probe without each switch on, one of the switches in force, each of the rounds the
  // job's 100 windows afford.
  const int64_t probes = ProbeCount(ProfilerSwitches{});
  EXPECT_EQ(kind.probes, probes * RoundsPerProbe(100, probes));
  EXPECT_TRUE(kind.decision.budget.overhead.has_value());
  EXPECT_EQ(r->profile.tool_name, "libreyolo-profiler");
  EXPECT_EQ(r->profile.source_kind, "profile");
  ASSERT_TRUE(r->profile.created_at.has_value());
  ASSERT_TRUE(r->profile.device.has_value());
  EXPECT_EQ(r->profile.device->type, "cpu");
  EXPECT_FALSE(r->profile.bound.empty());
  EXPECT_TRUE(fs::exists(r->profile_path)) << r->profile_path;
  EXPECT_EQ(progress.back(), "writing");
}

TEST_F(JobPipeline, TheFirstErrorEndsTheJobWithNothingWritten) {
  for (const char* stage : {"prepare", "warmup", "measure", "record", "analyse", "apply"}) {
    ScriptedKind kind(dir_ / stage);
    kind.fail_at = stage;
    auto r = RunJobPipeline(kind, nullptr, nullptr);
    EXPECT_TRUE(absl::IsCancelled(r.status())) << stage << ": " << r.status();
    EXPECT_EQ(kind.stages.back(), stage);
    EXPECT_FALSE(fs::exists(kind.files_.profile)) << stage;
  }
}

// One boundary around every stage (issue 22, section 1: LoadModel and to(CUDA) used to run
// before the job's `try` opened).
TEST_F(JobPipeline, ALibTorchErrorOrAnExceptionInAnyStageIsInternalWithItsReason) {
  for (const char* stage : {"prepare", "warmup", "measure", "record", "analyse", "apply"}) {
    for (bool std_exception : {false, true}) {
      ScriptedKind kind(dir_ / stage);
      kind.throw_at = stage;
      kind.throw_std = std_exception;
      auto r = RunJobPipeline(kind, nullptr, nullptr);
      ASSERT_TRUE(absl::IsInternal(r.status())) << stage << ": " << r.status();
      if (std_exception) {
        EXPECT_THAT(std::string(r.status().message()),
                    HasSubstr(std::string("scripted failed: a broken ") + stage));
      } else {
        EXPECT_THAT(std::string(r.status().message()),
                    HasSubstr(std::string("LibTorch failed: a tensor broke in ") + stage));
      }
    }
  }
}

// Issue 36, section 4: a probe that reads the profiler far over the budget (a loaded box) used
// to turn record_shapes off, and an identical later job reused that choice. Now every job
// records its switches (flags, else the fixed defaults) and probes only to measure them.
TEST_F(JobPipeline, IdenticalJobsRecordIdenticalSwitchesWhateverTheProbesRead) {
  ScriptedKind loaded(dir_ / "a");
  loaded.probe_pct = 80.0;
  ASSERT_TRUE(RunJobPipeline(loaded, nullptr, nullptr).ok());
  ScriptedKind quiet(dir_ / "b");
  ASSERT_TRUE(RunJobPipeline(quiet, nullptr, nullptr).ok());
  EXPECT_EQ(quiet.probes, loaded.probes);  // each measured, nothing reused
  for (const ScriptedKind* k : {&loaded, &quiet}) {
    const ResolvedSwitches& s = k->decision.budget.switches;
    EXPECT_EQ(s.record_shapes, kDefaultRecordShapes);
    EXPECT_EQ(s.profile_memory, kDefaultProfileMemory);
    EXPECT_EQ(s.with_flops, kDefaultWithFlops);
  }
  ASSERT_TRUE(loaded.decision.budget.overhead.has_value());
  EXPECT_NEAR(loaded.decision.budget.overhead->median_pct, 80.0, 1e-9);
  // --no-probe-overhead: nothing probed; the same switches, no overhead.
  ScriptedKind off(dir_ / "c");
  off.requested_.probe_overhead = false;
  ASSERT_TRUE(RunJobPipeline(off, nullptr, nullptr).ok());
  EXPECT_EQ(off.probes, 0);
  EXPECT_FALSE(off.decision.budget.overhead.has_value());
  EXPECT_EQ(off.decision.budget.switches.record_shapes, kDefaultRecordShapes);
  EXPECT_THAT(off.decision.budget.probe_note, HasSubstr("--no-probe-overhead"));
}

}  // namespace
}  // namespace libreyolo::engine
