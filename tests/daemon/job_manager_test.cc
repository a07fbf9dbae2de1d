// Tests of the job manager with a scripted runner (no engine): queue order (users taking
// turns, then priority and FIFO per user), limits, cancellation, resumable watching, visibility,
// idempotent submission, crash recovery and draining.
#include "server/daemon/jobs/job_manager.h"

#include <signal.h>
#include <sys/resource.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/daemon/job_manager_test_util.h"
#include "tests/support/test_files.h"

namespace libreyolo::daemon {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Runs each job until the test releases it (or it is cancelled), recording the start order.
class ScriptedRunner : public JobRunner {
 public:
  RunOutcome Run(const v1::Job& job, const std::function<void(const JobProgress&)>& progress,
                 const engine::CancelToken& cancel) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      started_.push_back(job.request().labels().at("name"));
    }
    cv_.notify_all();
    for (int i = 1; i <= 3; ++i) progress(JobProgress{"measuring", i, 3, ""});
    std::unique_lock<std::mutex> lock(mu_);
    const std::string name = job.request().labels().at("name");
    while (released_.count(name) == 0 && !release_all_) {
      if (cancel.cancelled.load())
        return test::CancelledOutcome(1);
      cv_.wait_for(lock, std::chrono::milliseconds(10));
    }
    RunOutcome out;
    if (name.rfind("fail", 0) == 0) {
      out.status = absl::NotFoundError("--weights x: no such file");
      out.exit_code = 2;
    } else {
      out.step_ms = 12.5;
      out.img_per_s = 80;
      out.bound = "compute";
    }
    return out;
  }
  void Release(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    released_.insert(name);
    cv_.notify_all();
  }
  void ReleaseAll() {
    std::lock_guard<std::mutex> lock(mu_);
    release_all_ = true;
    cv_.notify_all();
  }
  // Waits until `n` jobs have started; returns the start order.
  std::vector<std::string> WaitStarted(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(20), [&] { return started_.size() >= n; });
    return started_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> started_;
  std::set<std::string> released_;
  bool release_all_ = false;
};

using test::InferRequest;
using test::User;

class JobManagerTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }
  void TearDown() override {
    runner_.ReleaseAll();
    jobs_.reset();
  }
  void Open(Limits limits = Limits()) {
    store_ = test::OpenStore(dir_);
    ASSERT_NE(store_, nullptr);
    jobs_ = std::make_unique<JobManager>(store_.get(), &runner_, std::vector<std::string>{"cpu"},
                                         limits, Retention());
  }
  v1::Job WaitTerminal(const std::string& id) {
    return test::WaitTerminal(*jobs_, User("root", true), id);
  }
  std::vector<v1::JobEvent> Events(const std::string& id, int64_t from = 1) {
    return test::Events(*jobs_, User("root", true), id, from);
  }

  test::TempDir tmp_{"jm"};
  fs::path dir_{tmp_.path()};
  ScriptedRunner runner_;
  std::unique_ptr<JobStore> store_;
  std::unique_ptr<JobManager> jobs_;
};

// A job that cannot be recorded durably is refused, not accepted and lost at the next restart.
// The write failure is real, injected without privileges: RLIMIT_FSIZE makes every write past
// 1 KiB fail (EFBIG; SIGXFSZ ignored), as a full filesystem fails it with ENOSPC. The process
// test DaemonFaultTest.AFullStateFilesystemRefusesJobs does the same on a real full tmpfs.
TEST_F(JobManagerTest, AJobThatCannotBeMadeDurableIsRefusedAndLeavesNothing) {
  v1::SubmitJobRequest big = InferRequest("big");
  (*big.mutable_labels())["padding"] = std::string(4096, 'x');  // the record is > 1 KiB
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  const auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
  rlimit tight = old;
  tight.rlim_cur = 1024;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &tight), 0);
  auto refused = jobs_->Submit(User("alice"), big, "cpu");
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &old), 0);
  ::signal(SIGXFSZ, old_handler);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted) << refused.status();
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("not accepted"));
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("state filesystem is full"));
  // Not listed, nothing half-written on disk, and a restart finds nothing either.
  auto list = jobs_->List(User("alice"), v1::ListJobsRequest());
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->jobs_size(), 0);
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir_ / "state")) {
    if (e.is_regular_file() && e.path().filename() != "libreyolod.lock") {
      files.push_back(e.path().string());
    }
  }
  EXPECT_THAT(files, ::testing::IsEmpty());
  jobs_.reset();
  Open();
  std::vector<std::string> warnings;
  ASSERT_TRUE(jobs_->Recover(&warnings).ok());
  list = jobs_->List(User("alice"), v1::ListJobsRequest());
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->jobs_size(), 0);
  // With room again, the same job is accepted.
  jobs_->Start();
  auto accepted = jobs_->Submit(User("alice"), big, "cpu");
  EXPECT_TRUE(accepted.ok()) << accepted.status();
}

// Users take turns (fair share of device time, job_manager_fairness_test.cc); a priority
// orders only its user's own jobs, so alice's priority job goes before her other ones, not
// before bob's and carol's.
TEST_F(JobManagerTest, UsersTakeTurnsAndPriorityOrdersAUsersOwnJobs) {
  jobs_->Start();
  auto a1 = jobs_->Submit(User("alice"), InferRequest("a1"), "cpu");
  ASSERT_TRUE(a1.ok());
  runner_.WaitStarted(1);  // a1 holds the device
  std::vector<v1::Job> queued;
  for (const auto& [user, name, prio] :
       std::vector<std::tuple<std::string, std::string, int>>{{"alice", "a2", 0},
                                                              {"alice", "a3", 0},
                                                              {"bob", "b1", 0},
                                                              {"carol", "c1", 0},
                                                              {"alice", "d1", 5}}) {
    auto j = jobs_->Submit(User(user), InferRequest(name, prio), "cpu");
    ASSERT_TRUE(j.ok()) << j.status();
    queued.push_back(*j);
  }
  // Positions now: b1 1, c1 2, d1 (alice's priority job) 3, a2 4, a3 5.
  EXPECT_EQ(jobs_->Get(User("bob"), queued[2].id())->queue_position(), 1);
  EXPECT_EQ(jobs_->Get(User("alice"), queued[4].id())->queue_position(), 3);
  EXPECT_EQ(jobs_->Get(User("alice"), queued[1].id())->queue_position(), 5);
  runner_.ReleaseAll();
  EXPECT_THAT(runner_.WaitStarted(6), ElementsAre("a1", "b1", "c1", "d1", "a2", "a3"));
  for (const v1::Job& j : queued) EXPECT_EQ(WaitTerminal(j.id()).state(), v1::JOB_STATE_SUCCEEDED);
}

// Issue 23, item 4: a job's wall-time limit is fixed at submit, the submitter's capped by the
// daemon's (and the daemon's when none was asked).
TEST_F(JobManagerTest, AJobsWallTimeLimitIsTheRequestsCappedByTheDaemons) {
  Limits limits;
  limits.max_job_seconds = 50;
  Open(limits);
  v1::SubmitJobRequest asked = InferRequest("a1");
  asked.set_max_wall_seconds(20);
  auto a = jobs_->Submit(User("alice"), asked, "cpu");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->max_wall_seconds(), 20);
  asked.set_max_wall_seconds(500);
  auto b = jobs_->Submit(User("alice"), asked, "cpu");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->max_wall_seconds(), 50);
  auto c = jobs_->Submit(User("alice"), InferRequest("a3"), "cpu");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->max_wall_seconds(), 50);
}

TEST_F(JobManagerTest, LimitsOnQueueLengthAndJobsPerUser) {
  Limits limits;
  limits.max_queue_length = 2;
  limits.max_jobs_per_user = 2;
  Open(limits);  // not started: everything stays queued
  ASSERT_TRUE(jobs_->Submit(User("alice"), InferRequest("a1"), "cpu").ok());
  ASSERT_TRUE(jobs_->Submit(User("alice"), InferRequest("a2"), "cpu").ok());
  auto third = jobs_->Submit(User("alice"), InferRequest("a3"), "cpu");
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  auto other = jobs_->Submit(User("bob"), InferRequest("b1"), "cpu");
  EXPECT_EQ(other.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(other.status().message()), HasSubstr("max_queue_length"));
  auto wrong = jobs_->Submit(User("bob"), InferRequest("b1"), "cuda:0");
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kInvalidArgument);
  // Issue 20 section 6: --device defaults to 0; a daemon without a GPU says the way out.
  EXPECT_THAT(std::string(wrong.status().message()),
              HasSubstr("cuda:0 is not served by this daemon (it has: cpu); it serves no GPU: "
                        "use --device cpu"));
}

TEST_F(JobManagerTest, CancelQueuedAtOnceAndRunningAtTheNextStep) {
  jobs_->Start();
  auto a1 = jobs_->Submit(User("alice"), InferRequest("a1"), "cpu");
  runner_.WaitStarted(1);
  auto a2 = jobs_->Submit(User("alice"), InferRequest("a2"), "cpu");
  auto c2 = jobs_->Cancel(User("alice"), a2->id());
  ASSERT_TRUE(c2.ok());
  EXPECT_EQ(c2->state(), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(jobs_->Cancel(User("bob"), a1->id()).status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(jobs_->Cancel(User("alice"), a1->id()).ok());
  const v1::Job done = WaitTerminal(a1->id());
  EXPECT_EQ(done.state(), v1::JOB_STATE_CANCELLED);
  EXPECT_THAT(done.error(), HasSubstr("cancelled by alice"));
  // Cancelling a finished job changes nothing.
  EXPECT_EQ(jobs_->Cancel(User("alice"), a1->id())->state(), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(Events(a2->id()).back().stage(), "cancelled");
}

// Issue 36 §6: `libreyolo jobs delete` (DeleteJob). A finished job goes with its events, and
// its request_id with it; a running one is refused (cancel first); another user's is not found,
// an admin may delete it. Nothing of it is left in the store: a restart does not bring it back.
TEST_F(JobManagerTest, DeleteRemovesAFinishedJobAndRefusesALiveOne) {
  jobs_->Start();
  v1::SubmitJobRequest req = InferRequest("a1");
  req.set_request_id("retry-1");
  auto a1 = jobs_->Submit(User("alice"), req, "cpu");
  ASSERT_TRUE(a1.ok());
  runner_.WaitStarted(1);
  auto running = jobs_->Delete(User("alice"), a1->id());
  EXPECT_EQ(running.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(running.status().message()), HasSubstr("cancel it first"));
  runner_.Release("a1");
  ASSERT_EQ(WaitTerminal(a1->id()).state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(jobs_->Delete(User("bob"), a1->id()).status().code(), absl::StatusCode::kNotFound);
  auto deleted = jobs_->Delete(User("alice"), a1->id());
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(deleted->id(), a1->id());
  EXPECT_EQ(jobs_->Get(User("alice"), a1->id()).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(jobs_->Delete(User("alice"), a1->id()).status().code(), absl::StatusCode::kNotFound);
  // The request_id is free again: the same submit makes a new job.
  auto again = jobs_->Submit(User("alice"), req, "cpu");
  ASSERT_TRUE(again.ok());
  EXPECT_NE(again->id(), a1->id());
  runner_.Release("a1");
  ASSERT_EQ(WaitTerminal(again->id()).state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_TRUE(jobs_->Delete(User("root", /*admin=*/true), again->id()).ok());
  EXPECT_EQ(jobs_->Metrics().jobs_deleted_total, 2);
  // Gone from the store too.
  jobs_.reset();
  auto reopened = test::OpenStore(dir_);
  ASSERT_NE(reopened, nullptr);
  std::vector<std::string> warnings;
  auto all = reopened->LoadAll(&warnings);
  ASSERT_TRUE(all.ok()) << all.status();
  for (const StoredJob& j : *all) {
    EXPECT_NE(j.job.id(), a1->id());
    EXPECT_NE(j.job.id(), again->id());
  }
}

TEST_F(JobManagerTest, WatchResumesWithoutGapsOrRepeats) {
  jobs_->Start();
  auto a1 = jobs_->Submit(User("alice"), InferRequest("a1"), "cpu");
  runner_.WaitStarted(1);
  // Read what exists so far, stop, then resume from the next sequence after the job ends.
  std::vector<v1::JobEvent> first;
  ASSERT_TRUE(jobs_
                  ->Watch(
                      User("alice"), a1->id(), 0,
                      [&](const v1::JobEvent& e) {
                        first.push_back(e);
                        return first.size() < 2;  // the client goes away after two
                      },
                      [] { return false; })
                  .ok());
  ASSERT_EQ(first.size(), 2u);
  runner_.Release("a1");
  const auto rest = Events(a1->id(), first.back().sequence() + 1);
  std::vector<int64_t> seqs;
  for (const auto& e : first) seqs.push_back(e.sequence());
  for (const auto& e : rest) seqs.push_back(e.sequence());
  for (size_t i = 0; i < seqs.size(); ++i) EXPECT_EQ(seqs[i], static_cast<int64_t>(i + 1));
  EXPECT_EQ(rest.back().stage(), "done");
  EXPECT_EQ(rest.back().state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(jobs_->Get(User("alice"), a1->id())->last_sequence(), seqs.back());
}

TEST_F(JobManagerTest, UsersSeeTheirOwnJobsAdminsSeeAll) {
  auto a = jobs_->Submit(User("alice"), InferRequest("a1"), "cpu");
  auto b = jobs_->Submit(User("bob"), InferRequest("b1"), "cpu");
  EXPECT_EQ(jobs_->Get(User("bob"), a->id()).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(jobs_->Get(User("root", true), a->id()).ok());
  v1::ListJobsRequest all;
  EXPECT_EQ(jobs_->List(User("bob"), all)->jobs_size(), 1);
  EXPECT_EQ(jobs_->List(User("root", true), all)->jobs_size(), 2);
  v1::ListJobsRequest others;
  others.set_owner("alice");
  EXPECT_EQ(jobs_->List(User("bob"), others).status().code(), absl::StatusCode::kPermissionDenied);
  v1::ListJobsRequest labelled;
  (*labelled.mutable_labels())["name"] = "b1";
  auto l = jobs_->List(User("root", true), labelled);
  ASSERT_EQ(l->jobs_size(), 1);
  EXPECT_EQ(l->jobs(0).id(), b->id());
  v1::ListJobsRequest paged;
  paged.set_page_size(1);
  auto p1 = jobs_->List(User("root", true), paged);
  ASSERT_FALSE(p1->next_page_token().empty());
  paged.set_page_token(p1->next_page_token());
  auto p2 = jobs_->List(User("root", true), paged);
  ASSERT_EQ(p2->jobs_size(), 1);
  EXPECT_NE(p2->jobs(0).id(), p1->jobs(0).id());
  EXPECT_TRUE(p2->next_page_token().empty());
}

// Who submitted is the daemon's record (Job.owner_uid, Job.owner_admin: the caller's Identity),
// durable with the job: the attach job's owner check reads it (issue 37 §4).
TEST_F(JobManagerTest, TheSubmittersUidAndAdminFlagAreRecorded) {
  Identity peer = User("alice");
  peer.unix_peer = true;
  peer.uid = 4321;
  auto by_peer = jobs_->Submit(peer, InferRequest("p"), "cpu");
  ASSERT_TRUE(by_peer.ok()) << by_peer.status();
  ASSERT_TRUE(by_peer->has_owner_uid());
  EXPECT_EQ(by_peer->owner_uid(), 4321);
  EXPECT_FALSE(by_peer->owner_admin());
  auto by_token = jobs_->Submit(User("carol", /*admin=*/true), InferRequest("t"), "cpu");
  ASSERT_TRUE(by_token.ok()) << by_token.status();
  EXPECT_FALSE(by_token->has_owner_uid());  // a token user: no Unix uid
  EXPECT_TRUE(by_token->owner_admin());
  std::vector<std::string> warnings;
  auto stored = store_->LoadAll(&warnings);
  ASSERT_TRUE(stored.ok()) << stored.status();
  int seen = 0;
  for (const auto& s : *stored) {
    if (s.job.id() == by_peer->id()) {
      EXPECT_EQ(s.job.owner_uid(), 4321);
      ++seen;
    } else if (s.job.id() == by_token->id()) {
      EXPECT_FALSE(s.job.has_owner_uid());
      EXPECT_TRUE(s.job.owner_admin());
      ++seen;
    }
  }
  EXPECT_EQ(seen, 2);
}

TEST_F(JobManagerTest, RequestIdMakesSubmitIdempotent) {
  v1::SubmitJobRequest r = InferRequest("a1");
  r.set_request_id("retry-1");
  auto first = jobs_->Submit(User("alice"), r, "cpu");
  auto again = jobs_->Submit(User("alice"), r, "cpu");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(first->id(), again->id());
  r.mutable_infer()->set_imgsz(128);
  EXPECT_EQ(jobs_->Submit(User("alice"), r, "cpu").status().code(),
            absl::StatusCode::kAlreadyExists);
}

TEST_F(JobManagerTest, RecoveryFailsInterruptedJobsAndRunsQueuedOnes) {
  jobs_->Start();
  auto a1 = jobs_->Submit(User("alice"), InferRequest("a1"), "cpu");
  runner_.WaitStarted(1);
  auto a2 = jobs_->Submit(User("alice"), InferRequest("a2"), "cpu");
  // Simulate a crash: copy the state while a1 runs, as kill -9 would leave it.
  const fs::path snapshot = dir_ / "snapshot";
  fs::create_directories(snapshot);
  fs::copy(dir_ / "state", snapshot / "state", fs::copy_options::recursive);
  fs::create_directories(snapshot / "store");
  runner_.ReleaseAll();
  jobs_.reset();
  ScriptedRunner fresh;
  fresh.ReleaseAll();
  auto store = JobStore::Open((snapshot / "state").string(), (snapshot / "store").string());
  ASSERT_TRUE(store.ok());
  JobManager recovered(store->get(), &fresh, {"cpu"}, Limits(), Retention());
  std::vector<std::string> warnings;
  ASSERT_TRUE(recovered.Recover(&warnings).ok());
  auto failed = recovered.Get(User("alice"), a1->id());
  EXPECT_EQ(failed->state(), v1::JOB_STATE_FAILED);
  EXPECT_THAT(failed->error(), HasSubstr("libreyolod stopped while this job was running"));
  EXPECT_EQ(recovered.Get(User("alice"), a2->id())->state(), v1::JOB_STATE_QUEUED);
  recovered.Start();
  EXPECT_THAT(fresh.WaitStarted(1), ElementsAre("a2"));
  EXPECT_EQ(test::WaitTerminal(recovered, User("alice"), a2->id()).state(),
            v1::JOB_STATE_SUCCEEDED);
  recovered.Drain(std::chrono::milliseconds(0));
}

TEST_F(JobManagerTest, AFailingJobFailsAloneWithItsExitCode) {
  jobs_->Start();
  auto bad = jobs_->Submit(User("alice"), InferRequest("fail-weights"), "cpu");
  auto good = jobs_->Submit(User("alice"), InferRequest("ok"), "cpu");
  runner_.ReleaseAll();
  const v1::Job b = WaitTerminal(bad->id());
  EXPECT_EQ(b.state(), v1::JOB_STATE_FAILED);
  EXPECT_EQ(b.exit_code(), 2);
  EXPECT_THAT(b.error(), HasSubstr("no such file"));
  const v1::Job g = WaitTerminal(good->id());
  EXPECT_EQ(g.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_DOUBLE_EQ(g.step_ms(), 12.5);
}

TEST(NormaliseDevice, Names) {
  EXPECT_EQ(*NormaliseDevice("cpu"), "cpu");
  EXPECT_EQ(*NormaliseDevice("0"), "cuda:0");
  EXPECT_EQ(*NormaliseDevice("CUDA:3"), "cuda:3");
  EXPECT_FALSE(NormaliseDevice("gpu").ok());
  EXPECT_FALSE(NormaliseDevice("-1").ok());
}

}  // namespace
}  // namespace libreyolo::daemon
