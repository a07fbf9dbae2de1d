// Fair queues and per-user caps (issue 23, items 5 and 3): while several users wait, each gets
// an equal share of device time (the least served user goes next; priority orders only a
// user's own jobs), and no user takes every watcher slot. Time is a fake clock the runner
// advances by each job's cost, so the order is exact and nothing sleeps.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/daemon/jobs/job_manager.h"
#include "tests/daemon/job_manager_test_util.h"
#include "tests/support/test_files.h"

namespace libreyolo::daemon {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

// Each job "runs" for its label "ms" on the fake clock and finishes; the start order is kept.
class ClockRunner : public JobRunner {
 public:
  explicit ClockRunner(ManualClock* clock) : clock_(clock) {}
  RunOutcome Run(const v1::Job& job, const std::function<void(const JobProgress&)>&,
                 const engine::CancelToken&) override {
    const auto& labels = job.request().labels();
    {
      std::lock_guard<std::mutex> lock(mu_);
      started_.push_back(labels.at("name"));
    }
    cv_.notify_all();
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return hold_ != labels.at("name"); });
    }
    clock_->Advance(std::chrono::milliseconds(labels.count("ms") ? std::stoll(labels.at("ms")) : 100));
    // "step_ms": the wall clock is stepped by that much while it runs (NTP, `date -s`).
    if (labels.count("step_ms")) {
      clock_->SetUnixMs(clock_->NowUnixMs() + std::stoll(labels.at("step_ms")));
    }
    return RunOutcome{};
  }
  // The job `name` waits (holding the device, on a stopped clock) until Release.
  void Hold(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    hold_ = name;
  }
  void Release() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      hold_.clear();
    }
    cv_.notify_all();
  }
  std::vector<std::string> WaitStarted(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(20), [&] { return started_.size() >= n; });
    return started_;
  }

 private:
  ManualClock* clock_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> started_;
  std::string hold_;
};

using test::User;

// An inference job that ClockRunner runs for `ms` of the clock.
v1::SubmitJobRequest Job(const std::string& name, int64_t ms = 100, int priority = 0) {
  v1::SubmitJobRequest r = test::InferRequest(name, priority);
  (*r.mutable_labels())["ms"] = std::to_string(ms);
  return r;
}

class FairnessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = test::OpenStore(dir_.path());
    ASSERT_NE(store_, nullptr);
    Limits limits;
    limits.max_jobs_per_user = 20;
    limits.max_watchers = 8;
    limits.max_watchers_per_user = 2;
    jobs_ = std::make_unique<JobManager>(store_.get(), &runner_, std::vector<std::string>{"cpu"},
                                         limits, Retention(), clock_);
  }
  void TearDown() override { jobs_.reset(); }
  // Submits (not started yet, so the whole backlog is there when the device starts).
  void Submit(const std::string& user, const v1::SubmitJobRequest& r) {
    auto j = jobs_->Submit(User(user), r, "cpu");
    ASSERT_TRUE(j.ok()) << j.status();
  }

  ManualClock clock_{1'000'000};
  ClockRunner runner_{&clock_};
  test::TempDir dir_{"jmf"};
  std::unique_ptr<JobStore> store_;
  std::unique_ptr<JobManager> jobs_;
};

// The soak's shape: one user with 8 jobs (at a high priority, which orders only its own jobs),
// two with 2 each. First come, first served (or priority across users) runs all 8 first.
TEST_F(FairnessTest, UsersTakeEqualTurnsWhateverOneOfThemSubmits) {
  for (int i = 1; i <= 8; ++i) Submit("alice", Job("a" + std::to_string(i), 100, 9));
  for (int i = 1; i <= 2; ++i) Submit("bob", Job("b" + std::to_string(i)));
  for (int i = 1; i <= 2; ++i) Submit("carol", Job("c" + std::to_string(i)));
  jobs_->Start();
  EXPECT_THAT(runner_.WaitStarted(12),
              ElementsAreArray({"a1", "b1", "c1", "a2", "b2", "c2", "a3", "a4", "a5", "a6", "a7",
                                "a8"}));
}

// Equal device time, not equal job counts: alice's jobs take 3x bob's, so bob runs three for
// each of hers while both wait.
TEST_F(FairnessTest, ShareIsDeviceTimeNotJobCount) {
  for (int i = 1; i <= 4; ++i) Submit("alice", Job("a" + std::to_string(i), 300));
  for (int i = 1; i <= 6; ++i) Submit("bob", Job("b" + std::to_string(i), 100));
  jobs_->Start();
  EXPECT_THAT(runner_.WaitStarted(10),
              ElementsAreArray({"a1", "b1", "b2", "b3", "a2", "b4", "b5", "b6", "a3", "a4"}));
}

// Within a user, priority first, then submission order.
TEST_F(FairnessTest, PriorityOrdersAUsersOwnJobs) {
  Submit("alice", Job("low"));
  Submit("alice", Job("high", 100, 5));
  Submit("alice", Job("low2"));
  jobs_->Start();
  EXPECT_THAT(runner_.WaitStarted(3), ElementsAreArray({"high", "low", "low2"}));
}

// A user who was away is not owed the time: joining a busy device, they start level with the
// least served user waiting, not at zero (which would give them the device until they caught
// up).
TEST_F(FairnessTest, TimeAwayIsNotBankedAsCredit) {
  runner_.Hold("a3");
  for (int i = 1; i <= 6; ++i) Submit("alice", Job("a" + std::to_string(i), 100));
  jobs_->Start();
  ASSERT_EQ(runner_.WaitStarted(3).size(), 3u);  // a3 holds the device; alice has used 200
  for (int i = 1; i <= 3; ++i) Submit("carol", Job("c" + std::to_string(i), 100));
  runner_.Release();
  EXPECT_THAT(runner_.WaitStarted(9),
              ElementsAreArray({"a1", "a2", "a3", "c1", "a4", "c2", "a5", "c3", "a6"}));
}

// A restart does not forget who was served (bench/daemon_soak.py: 1.30x after restarts): alice
// ran 300 ms of her backlog before the daemon stopped, bob nothing; after the restart bob's
// queued job goes first although alice's was submitted earlier.
TEST_F(FairnessTest, ARestartedDaemonRemembersWhoWasServed) {
  jobs_.reset();
  auto stored = [&](const std::string& id, const std::string& user, v1::JobState state,
                    int64_t created, int64_t started, int64_t finished) {
    v1::Job j;
    j.set_id(id);
    j.set_owner(user);
    j.set_state(state);
    j.set_device("cpu");
    j.set_create_time_unix_ms(created);
    j.set_start_time_unix_ms(started);
    j.set_finish_time_unix_ms(finished);
    *j.mutable_request() = Job(id);
    ASSERT_TRUE(store_->PutJob(j).ok());
  };
  stored("20261202-00000000000000a1", "alice", v1::JOB_STATE_SUCCEEDED, 999'000, 999'600,
         999'900);
  stored("20261202-00000000000000a2", "alice", v1::JOB_STATE_QUEUED, 999'100, 0, 0);
  stored("20261202-00000000000000b1", "bob", v1::JOB_STATE_QUEUED, 999'500, 0, 0);
  // Finished before the busy period began (before the oldest queued job): not counted.
  stored("20261202-00000000000000b0", "bob", v1::JOB_STATE_SUCCEEDED, 990'000, 990'000,
         998'000);
  Limits limits;
  jobs_ = std::make_unique<JobManager>(store_.get(), &runner_, std::vector<std::string>{"cpu"},
                                       limits, Retention(), clock_);
  std::vector<std::string> warnings;
  ASSERT_TRUE(jobs_->Recover(&warnings).ok());
  jobs_->Start();
  EXPECT_THAT(runner_.WaitStarted(2),
              ElementsAreArray({"20261202-00000000000000b1", "20261202-00000000000000a2"}));
}

// Issue 40 A.6, the soak's case: alice's job ran 300 ms across a +1 day step of the wall clock,
// bob's 500 ms; then the daemon restarted with both users' next jobs queued. The restarted
// daemon must bill alice the 300 ms it ran (stored in the record on the monotonic clock), not
// the day its wall-clock span says: her next job goes first, and the durations it reports are
// 0.3 s and 0.5 s. Before the fix alice was billed 86,400.3 s and got no start while bob
// waited (the soak: 0 starts for the users whose jobs crossed the step), and the histogram had
// an observation of a day.
TEST_F(FairnessTest, AClockStepBeforeARestartDoesNotTakeItsOwnersTurn) {
  const int64_t submitted = clock_.NowUnixMs();
  v1::SubmitJobRequest a1 = Job("a1", 300);
  (*a1.mutable_labels())["step_ms"] = "86400000";
  Submit("alice", a1);
  Submit("bob", Job("b1", 500));
  jobs_->Start();
  ASSERT_EQ(runner_.WaitStarted(2).size(), 2u);
  ASSERT_TRUE(
      test::Eventually([&] { return jobs_->Metrics().job_durations_s["infer"].size() == 2; }));
  jobs_.reset();  // the restart
  // Queued when it stopped, submitted before a1 ran.
  auto queued = [&](const std::string& id, const std::string& user, const std::string& name) {
    v1::Job j;
    j.set_id(id);
    j.set_owner(user);
    j.set_state(v1::JOB_STATE_QUEUED);
    j.set_device("cpu");
    j.set_create_time_unix_ms(submitted);
    *j.mutable_request() = Job(name);
    ASSERT_TRUE(store_->PutJob(j).ok());
  };
  queued("20261206-00000000000000b2", "bob", "b2");
  queued("20261206-00000000000000b3", "bob", "b3");
  queued("20261206-00000000000000a2", "alice", "a2");
  jobs_ = std::make_unique<JobManager>(store_.get(), &runner_, std::vector<std::string>{"cpu"},
                                       Limits(), Retention(), clock_);
  std::vector<std::string> warnings;
  ASSERT_TRUE(jobs_->Recover(&warnings).ok());
  std::vector<double> durations = jobs_->Metrics().job_durations_s["infer"];
  std::sort(durations.begin(), durations.end());
  EXPECT_THAT(durations, ElementsAreArray({0.3, 0.5}));
  jobs_->Start();
  const std::vector<std::string> started = runner_.WaitStarted(3);
  ASSERT_GE(started.size(), 3u);
  EXPECT_EQ(started[2], "a2") << "alice was billed the day her job's wall-clock span crossed";
}

// One user cannot hold every watcher slot: the per-user cap refuses the third stream of
// alice while bob still gets one.
TEST_F(FairnessTest, WatchersAreCappedPerUser) {
  auto job = jobs_->Submit(User("alice"), Job("w"), "cpu");  // never started: streams stay open
  ASSERT_TRUE(job.ok());
  auto bob_job = jobs_->Submit(User("bob"), Job("w2"), "cpu");
  ASSERT_TRUE(bob_job.ok());
  std::atomic<bool> stop{false};
  std::vector<std::thread> streams;
  std::atomic<int> open{0};
  for (int i = 0; i < 2; ++i) {
    streams.emplace_back([&] {
      (void)jobs_->Watch(
          User("alice"), job->id(), 1,
          [&](const v1::JobEvent&) {
            ++open;
            return true;
          },
          [&] { return stop.load(); });
    });
  }
  EXPECT_TRUE(test::Eventually([&] { return jobs_->Metrics().watchers >= 2; }));
  ASSERT_EQ(jobs_->Metrics().watchers, 2);
  const absl::Status third = jobs_->Watch(
      User("alice"), job->id(), 1, [](const v1::JobEvent&) { return true; }, [] { return true; });
  EXPECT_EQ(third.code(), absl::StatusCode::kResourceExhausted) << third;
  EXPECT_THAT(std::string(third.message()), HasSubstr("max_watchers_per_user"));
  // Bob's own stream is not refused (it ends at once: stop() is true).
  const absl::Status bob = jobs_->Watch(
      User("bob"), bob_job->id(), 1, [](const v1::JobEvent&) { return true; }, [] { return true; });
  EXPECT_EQ(bob.code(), absl::StatusCode::kCancelled) << bob;
  stop = true;
  for (std::thread& t : streams) t.join();
  EXPECT_EQ(jobs_->Metrics().watchers, 0);
}

}  // namespace
}  // namespace libreyolo::daemon
