// Data-parallel jobs as gangs (issue 21, section 1; job_manager_gang.cc): ranks placed on the
// daemon's slots at submission, all of a gang's slots or none (never a rank waiting on a slot
// another job holds), no deadlock between gangs that share slots, single jobs going on around
// a forming gang on the slots it does not need, a cancelled forming gang letting its held slots
// go, and one queue position per gang. A scripted runner holds each job until the test
// releases it and checks that no slot ever runs two jobs at once.
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
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

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class SlotRunner : public JobRunner {
 public:
  RunOutcome Run(const v1::Job& job, const std::function<void(const JobProgress&)>&,
                 const engine::CancelToken& cancel) override {
    const std::string name = job.request().labels().at("name");
    std::unique_lock<std::mutex> lock(mu_);
    for (const std::string& d : JobDevices(job)) {
      if (!busy_.insert(d).second) overlaps_.push_back(name + " on " + d);
    }
    started_.push_back(name);
    cv_.notify_all();
    cv_.wait(lock, [&] { return released_.count(name) > 0 || cancel.cancelled.load(); });
    for (const std::string& d : JobDevices(job)) busy_.erase(d);
    return RunOutcome{};
  }
  void Release(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    released_.insert(name);
    cv_.notify_all();
  }
  // Waits until `n` jobs have started; the start order.
  std::vector<std::string> WaitStarted(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(20), [&] { return started_.size() >= n; });
    return started_;
  }
  // The start order now, after giving the job threads `settle` to start what they would.
  std::vector<std::string> StartedAfter(std::chrono::milliseconds settle) {
    std::this_thread::sleep_for(settle);
    std::lock_guard<std::mutex> lock(mu_);
    return started_;
  }
  std::vector<std::string> overlaps() {
    std::lock_guard<std::mutex> lock(mu_);
    return overlaps_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::string> busy_, released_;
  std::vector<std::string> started_, overlaps_;
};

using test::User;

v1::SubmitJobRequest Single(const std::string& name) {
  v1::SubmitJobRequest r;
  r.mutable_run()->set_data("synthetic");
  (*r.mutable_labels())["name"] = name;
  return r;
}

v1::SubmitJobRequest Gang(const std::string& name, std::vector<std::string> devices,
                          int nproc = 0) {
  v1::SubmitJobRequest r = Single(name);
  v1::DataParallelOptions* d = r.mutable_run()->mutable_data_parallel();
  d->set_nproc(nproc);
  for (const std::string& s : devices) d->add_devices(s);
  return r;
}

class JobManagerGangTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = test::OpenStore(dir_.path());
    ASSERT_NE(store_, nullptr);
    Limits limits;
    limits.max_jobs_per_user = 100;
    jobs_ = std::make_unique<JobManager>(
        store_.get(), &runner_, std::vector<std::string>{"cpu", "cpu:1", "cpu:2"}, limits,
        Retention());
  }
  void TearDown() override {
    for (const std::string& n : submitted_) runner_.Release(n);
    jobs_.reset();
  }
  std::string Submit(const v1::SubmitJobRequest& r, const std::string& device = "cpu") {
    auto job = jobs_->Submit(User("alice"), r, device);
    EXPECT_TRUE(job.ok()) << job.status();
    submitted_.push_back(r.labels().at("name"));
    return job.ok() ? job->id() : "";
  }
  v1::Job Get(const std::string& id) { return *jobs_->Get(User("alice"), id); }
  v1::Job WaitTerminal(const std::string& id) {
    return test::WaitTerminal(*jobs_, User("alice"), id);
  }

  test::TempDir dir_{"jmg"};
  SlotRunner runner_;
  std::unique_ptr<JobStore> store_;
  std::unique_ptr<JobManager> jobs_;
  std::vector<std::string> submitted_;
};

TEST_F(JobManagerGangTest, RanksArePlacedOnTheDaemonsSlotsOrRefusedWithWhatItHas) {
  auto job = jobs_->Submit(User("alice"), Gang("two", {}, 2), "cpu");
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_THAT(job->devices(), ElementsAre("cpu", "cpu:1"));
  EXPECT_EQ(job->device(), "cpu");
  job = jobs_->Submit(User("alice"), Gang("named", {"cpu:2", "1"}), "cpu:2");
  ASSERT_FALSE(job.ok());  // "1" is cuda:1: not the CPU's kind
  EXPECT_THAT(std::string(job.status().message()), HasSubstr("same kind of device"));
  job = jobs_->Submit(User("alice"), Gang("named", {"cpu:2", "cpu"}), "cpu:2");
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_THAT(job->devices(), ElementsAre("cpu:2", "cpu"));
  EXPECT_EQ(job->device(), "cpu:2");

  auto too_many = jobs_->Submit(User("alice"), Gang("four", {}, 4), "cpu");
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(too_many.status().message()),
              HasSubstr("4 ranks, but this daemon has 3 CPU slots (cpu, cpu:1, cpu:2)"));
  auto twice = jobs_->Submit(User("alice"), Gang("twice", {"cpu", "cpu:0"}), "cpu");
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(twice.status().message()), HasSubstr("cpu is named twice"));
  auto unserved = jobs_->Submit(User("alice"), Gang("far", {"cpu", "cpu:7"}), "cpu");
  ASSERT_FALSE(unserved.ok());
  EXPECT_THAT(std::string(unserved.status().message()),
              HasSubstr("cpu:7 is not served by this daemon"));
  auto gpu = jobs_->Submit(User("alice"), Gang("gpu", {}, 2), "cuda:0");
  ASSERT_FALSE(gpu.ok());  // the device check comes first: this daemon serves no CUDA device
  EXPECT_EQ(gpu.status().code(), absl::StatusCode::kInvalidArgument);
  // Nothing refused was stored.
  auto list = jobs_->List(User("alice"), v1::ListJobsRequest());
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->jobs_size(), 2);
}

// A gang starts only when every slot it needs is free; the slot that is free first is held
// for it (a later single job there waits behind it), the slot it does not need keeps working.
TEST_F(JobManagerGangTest, AGangStartsWhenAllItsSlotsAreFreeAndHoldsTheFirstMeanwhile) {
  jobs_->Start();
  const std::string a = Submit(Single("a"), "cpu:1");
  ASSERT_THAT(runner_.WaitStarted(1), ElementsAre("a"));
  const std::string g = Submit(Gang("g", {"cpu", "cpu:1"}));
  const std::string b = Submit(Single("b"), "cpu");
  const std::string c = Submit(Single("c"), "cpu:2");
  // c runs on the slot the gang does not need; the gang and b wait for cpu:1.
  EXPECT_THAT(runner_.WaitStarted(2), ElementsAre("a", "c"));
  EXPECT_THAT(runner_.StartedAfter(std::chrono::milliseconds(200)), ElementsAre("a", "c"));
  EXPECT_EQ(Get(g).state(), v1::JOB_STATE_QUEUED);
  EXPECT_EQ(Get(b).state(), v1::JOB_STATE_QUEUED);
  EXPECT_EQ(Get(g).queue_position(), 1);  // first on cpu:1 and on cpu
  EXPECT_EQ(Get(b).queue_position(), 2);
  runner_.Release("a");
  EXPECT_THAT(runner_.WaitStarted(3), ElementsAre("a", "c", "g"));
  EXPECT_EQ(Get(g).state(), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(jobs_->RunningJob("cpu"), g);
  EXPECT_EQ(jobs_->RunningJob("cpu:1"), g);
  runner_.Release("g");
  EXPECT_EQ(WaitTerminal(g).state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_THAT(runner_.WaitStarted(4), ElementsAre("a", "c", "g", "b"));
  runner_.Release("b");
  runner_.Release("c");
  EXPECT_EQ(WaitTerminal(b).state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(WaitTerminal(c).state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_THAT(runner_.overlaps(), ::testing::IsEmpty());
}

// Two gangs that share a slot, with single jobs around them: all finish, one gang at a time
// holds slots, and no slot ever runs two jobs.
TEST_F(JobManagerGangTest, GangsThatShareSlotsNeverDeadlock) {
  jobs_->Start();
  std::vector<std::string> ids = {
      Submit(Single("s0"), "cpu:1"),
      Submit(Gang("g1", {"cpu", "cpu:1"})),
      Submit(Gang("g2", {"cpu:1", "cpu:2"}), "cpu:1"),
      Submit(Single("s1"), "cpu:2"),
      Submit(Gang("g3", {}, 3)),
      Submit(Single("s2"), "cpu"),
  };
  // Release whatever runs, until all six ran.
  std::set<std::string> released;
  for (size_t n = 1; n <= ids.size(); ++n) {
    const std::vector<std::string> started = runner_.WaitStarted(n);
    ASSERT_GE(started.size(), n) << "only " << started.size() << " jobs started";
    for (const std::string& s : started) {
      if (released.insert(s).second) runner_.Release(s);
    }
  }
  for (const std::string& id : ids) EXPECT_EQ(WaitTerminal(id).state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_THAT(runner_.overlaps(), ::testing::IsEmpty());
}

// A forming gang cancelled while it holds a slot lets it go: the job behind it starts at once.
TEST_F(JobManagerGangTest, ACancelledFormingGangLetsItsHeldSlotGo) {
  jobs_->Start();
  const std::string a = Submit(Single("a"), "cpu:1");
  ASSERT_THAT(runner_.WaitStarted(1), ElementsAre("a"));
  const std::string g = Submit(Gang("g", {"cpu", "cpu:1"}));
  const std::string b = Submit(Single("b"), "cpu");
  EXPECT_THAT(runner_.StartedAfter(std::chrono::milliseconds(200)), ElementsAre("a"));
  auto cancelled = jobs_->Cancel(User("alice"), g);
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  EXPECT_EQ(cancelled->state(), v1::JOB_STATE_CANCELLED);
  EXPECT_THAT(runner_.WaitStarted(2), ElementsAre("a", "b"));
  runner_.Release("a");
  runner_.Release("b");
  EXPECT_EQ(WaitTerminal(b).state(), v1::JOB_STATE_SUCCEEDED);
}

}  // namespace
}  // namespace libreyolo::daemon
