// The job manager on a ManualClock (issue 22 §5): every time it records or measures comes from
// the clock it is given, so these tests drive time instead of sleeping for it: the times a job
// record carries, uptime, the throttling of progress events and retention by age.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/daemon/jobs/job_manager.h"
#include "tests/daemon/job_manager_test_util.h"
#include "tests/support/test_files.h"

namespace libreyolo::daemon {
namespace {

using std::chrono::milliseconds;
using test::Alice;
using test::Eventually;
using test::InferRequest;

// Runs a job's script on the job thread (progress, clock steps), then waits for Finish (or the
// cancel) before it returns.
class StepRunner : public JobRunner {
 public:
  using Script = std::function<void(const std::function<void(const JobProgress&)>&)>;
  void SetScript(Script script) { script_ = std::move(script); }
  // Each job then publishes a profile.json into `store`, as the engine's runner does.
  void PublishInto(JobStore* store) { store_ = store; }
  RunOutcome Run(const v1::Job& job, const std::function<void(const JobProgress&)>& progress,
                 const engine::CancelToken& cancel) override {
    if (script_) script_(progress);
    RunOutcome done;
    if (store_ != nullptr) {
      auto scratch = store_->ScratchDir(job.id());
      EXPECT_TRUE(scratch.ok()) << scratch.status();
      const std::string file = *scratch + "/profile.json";
      test::WriteFile(file, R"({"schema": "libreyolo.profile.analysis/v1"})");
      auto published = store_->PublishArtifact(job.id(), file, "profile.json", 1 << 20);
      EXPECT_TRUE(published.ok()) << published.status();
      if (published.ok()) done.artifacts.push_back(*published);
    }
    std::unique_lock<std::mutex> lock(mu_);
    running_ = true;
    cv_.notify_all();
    while (!finish_ && !cancel.cancelled.load()) cv_.wait_for(lock, milliseconds(5));
    running_ = false;
    finish_ = false;
    if (cancel.cancelled.load()) {
      saw_cancel_ = true;
      return test::CancelledOutcome(130);
    }
    return done;
  }
  // Waits until the current job ran its script and waits for Finish.
  bool WaitRunning() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(20), [&] { return running_; });
  }
  void Finish() {
    std::lock_guard<std::mutex> lock(mu_);
    finish_ = true;
  }
  bool saw_cancel() {
    std::lock_guard<std::mutex> lock(mu_);
    return saw_cancel_;
  }

 private:
  Script script_;
  JobStore* store_ = nullptr;
  std::mutex mu_;
  std::condition_variable cv_;
  bool running_ = false, finish_ = false, saw_cancel_ = false;
};

class JobManagerClockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = test::OpenStore(dir_.path());
    ASSERT_NE(store_, nullptr);
  }
  void Open(Retention retention = Retention()) {
    jobs_ = std::make_unique<JobManager>(store_.get(), &runner_, std::vector<std::string>{"cpu"},
                                         Limits(), retention, clock_);
    jobs_->Start();
  }
  void TearDown() override { jobs_.reset(); }
  // Submits a job, lets it run its script and finish; returns its final record.
  v1::Job RunToEnd() {
    auto job = jobs_->Submit(Alice(), InferRequest(), "cpu");
    EXPECT_TRUE(job.ok()) << job.status();
    EXPECT_TRUE(runner_.WaitRunning());
    runner_.Finish();
    return test::WaitTerminal(*jobs_, Alice(), job->id());
  }
  std::vector<v1::JobEvent> Events(const std::string& id) {
    return test::Events(*jobs_, Alice(), id);
  }

  ManualClock clock_{1'767'225'600'000};
  StepRunner runner_;
  test::TempDir dir_{"jmc"};
  std::unique_ptr<JobStore> store_;
  std::unique_ptr<JobManager> jobs_;
};

TEST_F(JobManagerClockTest, TheRecordsTimesAndUptimeAreTheClocks) {
  Open();
  runner_.SetScript([&](const auto&) { clock_.Advance(milliseconds(1500)); });
  clock_.Advance(milliseconds(90'000));
  const int64_t submitted = clock_.NowUnixMs();
  const v1::Job job = RunToEnd();
  EXPECT_EQ(job.create_time_unix_ms(), submitted);
  EXPECT_EQ(job.start_time_unix_ms(), submitted);
  EXPECT_EQ(job.finish_time_unix_ms(), submitted + 1500);
  EXPECT_DOUBLE_EQ(jobs_->Metrics().uptime_s, 91.5);
  for (const v1::JobEvent& e : Events(job.id())) {
    EXPECT_GE(e.time_unix_ms(), submitted);
    EXPECT_LE(e.time_unix_ms(), submitted + 1500);
  }
}

// Issue 40 A.6: a step of the wall clock while a job runs (NTP, an admin's `date -s`) bills
// neither device time nor the duration metric. A +1 day step used to leave its owner with 0 of
// the next 233 starts; a -1 day step gave durations of -86,389 s.
TEST_F(JobManagerClockTest, AWallClockStepDuringAJobBillsOnlyTheTimeItRan) {
  Open();
  for (const int64_t step_ms : {int64_t{86'400'000}, int64_t{-86'400'000}}) {
    runner_.SetScript([&, step_ms](const auto&) {
      clock_.Advance(milliseconds(1500));
      clock_.SetUnixMs(clock_.NowUnixMs() + step_ms);
    });
    RunToEnd();
  }
  const std::vector<double> durations = jobs_->Metrics().job_durations_s.at("infer");
  ASSERT_EQ(durations.size(), 2u);
  EXPECT_DOUBLE_EQ(durations[0], 1.5);
  EXPECT_DOUBLE_EQ(durations[1], 1.5);
}

// Issue 40 A.6 across a restart: a job that was running when the daemon stopped counts the time
// it ran on the monotonic clock when the restart is in the same boot, whatever the wall clock
// did meanwhile (here +1 day). In another boot only its wall-clock span is left: bounded by
// its time limit, and said in the start-up warnings; a negative span (a -1 day step) counts 0.
// The recovered record keeps what was counted. Before the fix the first counted a day, the
// second two, and the third was skipped by the device time but observed as 0.
TEST_F(JobManagerClockTest, ARestartCountsTheTimeARecoveredJobRanNotItsWallClockSpan) {
  clock_.Advance(milliseconds(10'000));
  const int64_t now = clock_.NowUnixMs();
  const int64_t steady_ms =
      std::chrono::duration_cast<milliseconds>(clock_.SteadyNow().time_since_epoch()).count();
  auto put = [&](const std::string& id, v1::JobState state, int64_t started, int64_t finished,
                 std::optional<RunClock> run) {
    v1::Job j;
    j.set_id(id);
    j.set_owner("alice");
    j.set_state(state);
    j.set_device("cpu");
    j.set_create_time_unix_ms(started);
    j.set_start_time_unix_ms(started);
    j.set_finish_time_unix_ms(finished);
    j.set_max_wall_seconds(3600);
    *j.mutable_request() = InferRequest();
    ASSERT_TRUE(store_->PutJob(j, run).ok());
  };
  // Started 2 s ago by the monotonic clock; the wall clock has since been stepped +1 day.
  put("same-boot", v1::JOB_STATE_RUNNING, now - 86'402'000, 0,
      RunClock{clock_.BootId(), steady_ms - 2000, -1});
  put("other-boot", v1::JOB_STATE_RUNNING, now - 2 * 86'400'000, 0,
      RunClock{"a-boot-before", 5, -1});
  put("stepped-back", v1::JOB_STATE_SUCCEEDED, now, now - 86'389'000, std::nullopt);
  jobs_ = std::make_unique<JobManager>(store_.get(), &runner_, std::vector<std::string>{"cpu"},
                                       Limits(), Retention(), clock_);
  std::vector<std::string> warnings;
  ASSERT_TRUE(jobs_->Recover(&warnings).ok());
  std::vector<double> durations = jobs_->Metrics().job_durations_s["infer"];
  std::sort(durations.begin(), durations.end());
  EXPECT_THAT(durations, ::testing::ElementsAre(0.0, 2.0, 3600.0));
  EXPECT_THAT(warnings, ::testing::Contains(::testing::AllOf(
                            ::testing::HasSubstr("other-boot"), ::testing::HasSubstr("wall-clock"),
                            ::testing::HasSubstr("3600 s"))));
  std::vector<std::string> ignored;
  auto stored = store_->LoadAll(&ignored);
  ASSERT_TRUE(stored.ok()) << stored.status();
  for (const StoredJob& j : *stored) {
    if (j.job.id() != "same-boot") continue;
    EXPECT_EQ(j.job.state(), v1::JOB_STATE_FAILED);
    ASSERT_TRUE(j.run.has_value());
    EXPECT_EQ(j.run->ran_ms, 2000);
  }
}

// Within one stage, a progress event is recorded at most every 250 ms of the clock; a new
// stage, the stage's last step and a message are always recorded.
TEST_F(JobManagerClockTest, ProgressWithinAStageIsThrottledByTheClock) {
  Open();
  runner_.SetScript([&](const std::function<void(const JobProgress&)>& progress) {
    progress(JobProgress{"warmup", 1, 10, ""});   // a new stage: recorded
    progress(JobProgress{"warmup", 2, 10, ""});   // 0 ms later: dropped
    clock_.Advance(milliseconds(249));
    progress(JobProgress{"warmup", 3, 10, ""});   // 249 ms: dropped
    clock_.Advance(milliseconds(1));
    progress(JobProgress{"warmup", 4, 10, ""});   // 250 ms: recorded
    progress(JobProgress{"warmup", 5, 10, "a note"});  // a message: recorded
    progress(JobProgress{"warmup", 10, 10, ""});  // the last step: recorded
    progress(JobProgress{"measuring", 1, 3, ""});  // a new stage: recorded
    progress(JobProgress{"measuring", 2, 3, ""});  // dropped
  });
  const v1::Job job = RunToEnd();
  std::vector<std::string> seen;
  for (const v1::JobEvent& e : Events(job.id())) {
    if (e.stage() == "warmup" || e.stage() == "measuring") {
      seen.push_back(e.stage() + " " + std::to_string(e.done()));
    }
  }
  EXPECT_THAT(seen, ::testing::ElementsAre("warmup 1", "warmup 4", "warmup 5", "warmup 10",
                                           "measuring 1"));
}

// max_age_hours counts from a job's finish on the clock: a job 25 h old goes, one 23 h old
// stays until the clock passes its 24 h.
TEST_F(JobManagerClockTest, RetentionDeletesJobsByTheirAgeOnTheClock) {
  Retention retention;
  retention.max_age_hours = 24;
  retention.max_jobs = 0;
  Open(retention);
  const v1::Job old_job = RunToEnd();
  clock_.Advance(std::chrono::hours(2));
  const v1::Job young_job = RunToEnd();
  clock_.Advance(std::chrono::hours(23));  // old: 25 h, young: 23 h
  EXPECT_TRUE(Eventually([&] { return !jobs_->Get(Alice(), old_job.id()).ok(); }));
  EXPECT_EQ(jobs_->Get(Alice(), old_job.id()).status().code(), absl::StatusCode::kNotFound);
  // The sweep that deleted the old job saw the young one at the same time, and the clock has
  // not moved since, so no later sweep has run.
  EXPECT_TRUE(jobs_->Get(Alice(), young_job.id()).ok());
  EXPECT_EQ(jobs_->Metrics().jobs_expired_total, 1);
  clock_.Advance(std::chrono::hours(2));
  EXPECT_TRUE(Eventually([&] { return !jobs_->Get(Alice(), young_job.id()).ok(); }));
  EXPECT_EQ(jobs_->Metrics().jobs_expired_total, 2);
}

// A request_id lives as long as its job: once retention removed the job, a submit that reuses
// the key makes a new job (it used to look up the deleted job and end the daemon).
TEST_F(JobManagerClockTest, ARequestIdOutlivedByItsJobMakesANewJob) {
  Retention retention;
  retention.max_age_hours = 1;
  retention.max_jobs = 0;
  Open(retention);
  v1::SubmitJobRequest request = InferRequest();
  request.set_request_id("nightly-42");
  auto first = jobs_->Submit(Alice(), request, "cpu");
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(runner_.WaitRunning());
  runner_.Finish();
  ASSERT_EQ(test::WaitTerminal(*jobs_, Alice(), first->id()).state(), v1::JOB_STATE_SUCCEEDED);
  auto again = jobs_->Submit(Alice(), request, "cpu");  // a retry: the same job
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->id(), first->id());
  clock_.Advance(std::chrono::hours(2));
  EXPECT_TRUE(Eventually([&] { return !jobs_->Get(Alice(), first->id()).ok(); }));
  auto fresh = jobs_->Submit(Alice(), request, "cpu");
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_NE(fresh->id(), first->id());
  EXPECT_EQ(fresh->state(), v1::JOB_STATE_QUEUED);
  EXPECT_TRUE(runner_.WaitRunning());
  runner_.Finish();
  EXPECT_EQ(test::WaitTerminal(*jobs_, Alice(), fresh->id()).state(), v1::JOB_STATE_SUCCEEDED);
}

// What the artifact check remembers of intact files goes with the job: retention leaves none
// of a deleted job's entries (they stayed, one per artifact ever downloaded, for the daemon's
// life).
TEST_F(JobManagerClockTest, RetentionForgetsTheArtifactChecksOfTheJobsItDeletes) {
  Retention retention;
  retention.max_age_hours = 1;
  retention.max_jobs = 0;
  Open(retention);
  runner_.PublishInto(store_.get());
  const v1::Job done = RunToEnd();
  ASSERT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED);
  ASSERT_EQ(done.artifacts_size(), 1);
  auto path = jobs_->VerifiedArtifactPath(done, "profile.json");
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(jobs_->VerifiedArtifactsRemembered(), 1u);
  clock_.Advance(std::chrono::hours(2));
  EXPECT_TRUE(Eventually([&] { return !jobs_->Get(Alice(), done.id()).ok(); }));
  EXPECT_EQ(jobs_->VerifiedArtifactsRemembered(), 0u);
}

// Drain waits for a running job until its deadline on the clock, then cancels it: 29.999 s of a
// 30 s drain leave the job running (Drain has looked at the clock since and waits on), the
// last millisecond cancels it.
TEST_F(JobManagerClockTest, DrainCancelsARunningJobAtItsDeadlineOnTheClock) {
  Open();
  auto job = jobs_->Submit(Alice(), InferRequest(), "cpu");
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(runner_.WaitRunning());
  const Clock::SteadyTime deadline = clock_.SteadyNow() + std::chrono::seconds(30);
  std::atomic<bool> drained{false};
  std::jthread drain([&] {
    jobs_->Drain(std::chrono::seconds(30));
    drained = true;
  });
  EXPECT_TRUE(Eventually([&] { return clock_.WaitsUntil(deadline) > 0; }));
  clock_.Advance(milliseconds(29'999));
  const int64_t seen = clock_.WaitsUntil(deadline);
  EXPECT_TRUE(Eventually([&] { return clock_.WaitsUntil(deadline) >= seen + 2; }));
  EXPECT_FALSE(drained.load());
  EXPECT_FALSE(runner_.saw_cancel());
  EXPECT_EQ(jobs_->Get(Alice(), job->id())->state(), v1::JOB_STATE_RUNNING);
  clock_.Advance(milliseconds(1));
  EXPECT_TRUE(Eventually([&] { return drained.load(); }));
  drain.join();
  EXPECT_TRUE(runner_.saw_cancel());
  EXPECT_EQ(jobs_->Get(Alice(), job->id())->state(), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(jobs_->Submit(Alice(), InferRequest(), "cpu").status().code(),
            absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace libreyolo::daemon
