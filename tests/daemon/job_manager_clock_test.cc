// The job manager on a ManualClock (issue 22 §5): every time it records or measures comes from
// the clock it is given, so these tests drive time instead of sleeping for it: the times a job
// record carries, uptime, the throttling of progress events and retention by age.
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/daemon/jobs/job_manager.h"

namespace libreyolo::daemon {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

// Runs a job's script on the job thread (progress, clock steps), then waits for Finish (or the
// cancel) before it returns.
class StepRunner : public JobRunner {
 public:
  using Script = std::function<void(const std::function<void(const RunProgress&)>&)>;
  void SetScript(Script script) { script_ = std::move(script); }
  RunOutcome Run(const v1::Job&, const std::function<void(const RunProgress&)>& progress,
                 const engine::CancelToken& cancel) override {
    if (script_) script_(progress);
    std::unique_lock<std::mutex> lock(mu_);
    running_ = true;
    cv_.notify_all();
    while (!finish_ && !cancel.cancelled.load()) cv_.wait_for(lock, milliseconds(5));
    running_ = false;
    finish_ = false;
    if (cancel.cancelled.load()) {
      saw_cancel_ = true;
      return RunOutcome{absl::CancelledError("cancelled"), 130, {}, 0, 0, "", ""};
    }
    return RunOutcome{};
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
  std::mutex mu_;
  std::condition_variable cv_;
  bool running_ = false, finish_ = false, saw_cancel_ = false;
};

Identity Alice() {
  Identity id;
  id.user = "alice";
  return id;
}

v1::SubmitJobRequest Infer() {
  v1::SubmitJobRequest r;
  r.mutable_infer()->set_imgsz(64);
  return r;
}

bool Terminal(v1::JobState s) {
  return s == v1::JOB_STATE_SUCCEEDED || s == v1::JOB_STATE_FAILED ||
         s == v1::JOB_STATE_CANCELLED;
}

class JobManagerClockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("jmc-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    auto store = JobStore::Open((dir_ / "state").string(), (dir_ / "store").string());
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }
  void Open(Retention retention = Retention()) {
    jobs_ = std::make_unique<JobManager>(store_.get(), &runner_, std::vector<std::string>{"cpu"},
                                         Limits(), retention, clock_);
    jobs_->Start();
  }
  void TearDown() override {
    jobs_.reset();
    fs::remove_all(dir_);
  }
  // Polls (real time, bounded) until `done`: the job threads run on their own.
  static bool Eventually(const std::function<bool()>& done) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!done()) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(milliseconds(1));
    }
    return true;
  }
  // Submits a job, lets it run its script and finish; returns its final record.
  v1::Job RunToEnd() {
    auto job = jobs_->Submit(Alice(), Infer(), "cpu");
    EXPECT_TRUE(job.ok()) << job.status();
    EXPECT_TRUE(runner_.WaitRunning());
    runner_.Finish();
    v1::Job out;
    EXPECT_TRUE(Eventually([&] {
      auto j = jobs_->Get(Alice(), job->id());
      if (!j.ok() || !Terminal(j->state())) return false;
      out = *j;
      return true;
    }));
    return out;
  }
  std::vector<v1::JobEvent> Events(const std::string& id) {
    std::vector<v1::JobEvent> out;
    EXPECT_TRUE(jobs_
                    ->Watch(
                        Alice(), id, 1,
                        [&](const v1::JobEvent& e) {
                          out.push_back(e);
                          return true;
                        },
                        [] { return false; })
                    .ok());
    return out;
  }

  ManualClock clock_{1'767'225'600'000};
  StepRunner runner_;
  fs::path dir_;
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

// Within one stage, a progress event is recorded at most every 250 ms of the clock; a new
// stage, the stage's last step and a message are always recorded.
TEST_F(JobManagerClockTest, ProgressWithinAStageIsThrottledByTheClock) {
  Open();
  runner_.SetScript([&](const std::function<void(const RunProgress&)>& progress) {
    progress(RunProgress{"warmup", 1, 10, ""});   // a new stage: recorded
    progress(RunProgress{"warmup", 2, 10, ""});   // 0 ms later: dropped
    clock_.Advance(milliseconds(249));
    progress(RunProgress{"warmup", 3, 10, ""});   // 249 ms: dropped
    clock_.Advance(milliseconds(1));
    progress(RunProgress{"warmup", 4, 10, ""});   // 250 ms: recorded
    progress(RunProgress{"warmup", 5, 10, "a note"});  // a message: recorded
    progress(RunProgress{"warmup", 10, 10, ""});  // the last step: recorded
    progress(RunProgress{"measuring", 1, 3, ""});  // a new stage: recorded
    progress(RunProgress{"measuring", 2, 3, ""});  // dropped
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

}  // namespace
}  // namespace libreyolo::daemon
