// A state change that cannot be made durable (issue 23, item 1): the store's writes fail at
// every edge a full disk can cut them (each write at its first byte, one byte in and one byte
// short; each fsync, directory fsync and rename), through FaultyFileOps. Whatever fails, the
// manager goes out of service before anything is lost, a job runs exactly once across a
// restart (never again after it finished), and a published artifact is never replaced.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/daemon/jobs/job_manager.h"
#include "tests/daemon/faulty_file_ops.h"
#include "tests/daemon/job_manager_test_util.h"
#include "tests/support/test_files.h"

namespace libreyolo::daemon {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using Call = FaultyFileOps::Call;

// Finishes each job at once, publishing one artifact through the store, and counts the runs
// of each job id.
class PublishingRunner : public JobRunner {
 public:
  RunOutcome Run(const v1::Job& job, const std::function<void(const JobProgress&)>& progress,
                 const engine::CancelToken&) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++runs_[job.id()];
    }
    progress(JobProgress{"measuring", 1, 1, ""});
    RunOutcome out;
    auto scratch = store_->ScratchDir(job.id());
    if (!scratch.ok()) {
      out.status = scratch.status();
      return out;
    }
    std::ofstream(*scratch + "/profile.json") << "{\"job\": \"" << job.id() << "\"}\n";
    auto artifact = store_->PublishArtifact(job.id(), "profile.json", "profile.json", 1 << 20);
    store_->DiscardScratch(job.id());
    if (!artifact.ok()) {
      out.status = artifact.status();
      out.exit_code = 1;
      return out;
    }
    out.artifacts.push_back(*artifact);
    return out;
  }
  void set_store(JobStore* store) { store_ = store; }
  int runs(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu_);
    return runs_[id];
  }

 private:
  JobStore* store_ = nullptr;
  std::mutex mu_;
  std::map<std::string, int> runs_;
};

using test::Alice;
using test::Terminal;

v1::SubmitJobRequest Infer() { return test::InferRequest("j"); }

// A fault to inject: a byte budget, or the n-th call of a kind (and every later one).
struct Fault {
  int write = -1;  // FailWrite(write, cut); -1: a failing call instead
  FaultyFileOps::Cut cut = FaultyFileOps::Cut::kBeforeFirstByte;
  Call call = Call::kWrite;
  int from = -1;
  std::string Name() const {
    static const char* const kCalls[] = {"write", "fsync", "directory fsync", "rename"};
    static const char* const kCuts[] = {"before its first byte", "after one byte",
                                        "one byte short"};
    return write >= 0 ? "write #" + std::to_string(write) + " cut " +
                            kCuts[static_cast<int>(cut)] + ", every later write ENOSPC"
                      : std::string(kCalls[static_cast<int>(call)]) + " #" + std::to_string(from);
  }
};

// What one life of a daemon on a failing store, and a restart on a healthy one, came to.
struct Outcome {
  bool accepted = false;
  v1::JobState reported = v1::JOB_STATE_UNSPECIFIED;  // what callers were told before the restart
  std::string store_error;                            // at the end of the first life
  bool out_of_service_early = false, second_submit_refused = false;
  v1::JobState after_restart = v1::JOB_STATE_UNSPECIFIED;
  int runs = 0;  // over both lives
  std::string artifact_before, artifact_after;
};

class DurabilityTest : public ::testing::Test {
 protected:
  // Waits until the device is idle with the job finished, or idle with the manager out of
  // service (a job that cannot start or finish durably waits there).
  static void Settle(JobManager& jobs, const std::string& id) {
    EXPECT_TRUE(test::Eventually([&] {
      auto j = jobs.Get(Alice(), id);
      return jobs.RunningJob("cpu").empty() &&
             (!j.ok() || Terminal(j->state()) || !jobs.StoreError().empty());
    })) << "job "
        << id << " did not settle";
  }

  static std::string ReadAll(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  Outcome Live(const Fault& fault, FaultyFileOps* counting = nullptr) {
    const fs::path dir = root_ / std::to_string(lives_++);
    FaultyFileOps ops;
    if (fault.write >= 0) ops.FailWrite(fault.write, fault.cut);
    if (fault.from >= 0) ops.FailFrom(fault.call, fault.from);
    FaultyFileOps& used = counting != nullptr ? *counting : ops;
    Outcome o;
    std::string id;
    PublishingRunner runner;
    {
      auto store = JobStore::Open((dir / "state").string(), (dir / "store").string(), &used);
      EXPECT_TRUE(store.ok()) << store.status();
      runner.set_store(store->get());
      JobManager jobs(store->get(), &runner, {"cpu"}, Limits(), Retention());
      jobs.Start();
      auto job = jobs.Submit(Alice(), Infer(), "cpu");
      o.accepted = job.ok();
      if (job.ok()) {
        id = job->id();
        Settle(jobs, id);
        o.reported = jobs.Get(Alice(), id)->state();
      }
      // Out of service by now (the fault hit the first job's writes): a second job is refused.
      // Faults past the first job's writes hit the second one's.
      o.out_of_service_early = !jobs.StoreError().empty();
      auto second = jobs.Submit(Alice(), Infer(), "cpu");
      o.second_submit_refused = !second.ok();
      if (second.ok()) Settle(jobs, second->id());
      o.store_error = jobs.StoreError();
      o.artifact_before = ReadAll(dir / "store" / id / "profile.json");
    }  // the daemon stops (its drain tries the held-back records once more, and fails again)
    auto store = JobStore::Open((dir / "state").string(), (dir / "store").string());
    EXPECT_TRUE(store.ok()) << store.status();
    runner.set_store(store->get());
    JobManager jobs(store->get(), &runner, {"cpu"}, Limits(), Retention());
    std::vector<std::string> warnings;
    EXPECT_TRUE(jobs.Recover(&warnings).ok());
    jobs.Start();
    auto list = jobs.List(Alice(), v1::ListJobsRequest());
    EXPECT_TRUE(list.ok());
    for (const v1::Job& j : list->jobs()) {
      if (j.id() != id) continue;
      Settle(jobs, id);
      o.after_restart = jobs.Get(Alice(), id)->state();
    }
    if (!id.empty()) o.runs = runner.runs(id);
    o.artifact_after = ReadAll(dir / "store" / id / "profile.json");
    return o;
  }

  test::TempDir tmp_{"jmd"};
  fs::path root_{tmp_.path()};
  int lives_ = 0;
};

void ExpectSafe(const Fault& fault, const Outcome& o, bool injected) {
  SCOPED_TRACE(fault.Name());
  if (injected) {
    // Out of service before anything is lost, and saying why.
    EXPECT_FALSE(o.store_error.empty());
    if (o.out_of_service_early) {
      EXPECT_TRUE(o.second_submit_refused);
    }
  }
  if (!o.accepted) {
    EXPECT_EQ(o.after_restart, v1::JOB_STATE_UNSPECIFIED) << "a refused job came back";
    EXPECT_EQ(o.runs, 0);
    return;
  }
  const std::string states = "reported " + v1::JobState_Name(o.reported) + ", after the restart " +
                             v1::JobState_Name(o.after_restart);
  EXPECT_LE(o.runs, 1) << states;
  EXPECT_TRUE(Terminal(o.after_restart)) << states;
  // Only a job whose RUNNING record reached the disk without being made durable (a failed
  // directory fsync) may end FAILED without having run ("stopped while running"): never
  // twice, and never lost without a reason.
  if (o.runs == 0) {
    EXPECT_EQ(o.after_restart, v1::JOB_STATE_FAILED) << states;
  }
  // What callers were told stays true: a job reported finished is finished the same way.
  if (Terminal(o.reported)) {
    EXPECT_EQ(o.after_restart, o.reported);
  }
  if (o.reported == v1::JOB_STATE_SUCCEEDED) {
    EXPECT_FALSE(o.artifact_before.empty());
    EXPECT_EQ(o.artifact_after, o.artifact_before) << "the published artifact changed";
  }
}

TEST_F(DurabilityTest, EveryWriteFailureStopsServiceAndNoJobRunsTwice) {
  FaultyFileOps counting;
  const Outcome clean = Live(Fault{}, &counting);
  ASSERT_EQ(clean.reported, v1::JOB_STATE_SUCCEEDED);
  ASSERT_EQ(clean.runs, 1);
  ASSERT_TRUE(clean.store_error.empty()) << clean.store_error;
  // The healthy life's writes (its second submit included: faults past the first job's writes
  // reach it), each cut before its first byte, after one byte and one byte short. The cut is
  // anchored on the write, not on a byte offset from the start: the records hold times, so a
  // life's byte count differs from the counted life's by a few bytes (an offset near the end
  // was then never reached: 1 run in ~25 injected nothing).
  using Cut = FaultyFileOps::Cut;
  std::vector<Fault> faults;
  const std::vector<int64_t> sizes = counting.write_sizes();
  for (size_t n = 0; n < sizes.size(); ++n) {
    const int w = static_cast<int>(n);
    faults.push_back(Fault{w, Cut::kBeforeFirstByte});
    if (sizes[n] > 1) faults.push_back(Fault{w, Cut::kAfterOneByte});
    if (sizes[n] > 2) faults.push_back(Fault{w, Cut::kOneByteShort});
  }
  for (const Call c : {Call::kFsync, Call::kFsyncDir, Call::kRename}) {
    for (int n = 0; n < counting.calls(c); ++n) {
      faults.push_back(Fault{-1, Cut::kBeforeFirstByte, c, n});
    }
  }
  ASSERT_GT(faults.size(), 20u);
  int refused = 0, held_back = 0, never_started = 0;
  for (const Fault& f : faults) {
    const Outcome o = Live(f);
    ExpectSafe(f, o, /*injected=*/true);
    if (!o.accepted) ++refused;
    if (o.reported == v1::JOB_STATE_RUNNING) ++held_back;
    if (o.reported == v1::JOB_STATE_QUEUED) ++never_started;
  }
  // The edges reach every transition: refused at submit, held queued, held running.
  EXPECT_GT(refused, 0);
  EXPECT_GT(never_started, 0);
  EXPECT_GT(held_back, 0);
}

// Held back, then written: once the store takes writes again, RetryStore records the outcome,
// shows it, and the manager accepts work again.
TEST_F(DurabilityTest, AHeldBackOutcomeIsRecordedWhenTheStoreRecovers) {
  FaultyFileOps ops;
  PublishingRunner runner;
  auto store = JobStore::Open((root_ / "state").string(), (root_ / "store").string(), &ops);
  ASSERT_TRUE(store.ok()) << store.status();
  runner.set_store(store->get());
  JobManager jobs(store->get(), &runner, {"cpu"}, Limits(), Retention());
  // Renames: the submit's record (0), the RUNNING record (1), the artifact (2), the final
  // record (3) fails.
  ops.FailFrom(Call::kRename, 3);
  jobs.Start();
  auto job = jobs.Submit(Alice(), Infer(), "cpu");
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_TRUE(test::Eventually([&] { return !jobs.StoreError().empty(); }));
  DurabilityTest::Settle(jobs, job->id());
  EXPECT_THAT(jobs.StoreError(), HasSubstr("rename"));
  EXPECT_EQ(jobs.Get(Alice(), job->id())->state(), v1::JOB_STATE_RUNNING);
  MetricsSnapshot m = jobs.Metrics();
  EXPECT_FALSE(m.store_ok);
  EXPECT_GE(m.store_write_failures_total, 1);
  auto refused = jobs.Submit(Alice(), Infer(), "cpu");
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable) << refused.status();
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("accepts no jobs"));
  EXPECT_FALSE(jobs.RetryStore());  // still failing

  ops.Heal();
  EXPECT_TRUE(jobs.RetryStore());
  EXPECT_TRUE(jobs.StoreError().empty());
  const v1::Job done = *jobs.Get(Alice(), job->id());
  EXPECT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(done.artifacts_size(), 1);
  EXPECT_TRUE(jobs.Metrics().store_ok);
  EXPECT_TRUE(jobs.Submit(Alice(), Infer(), "cpu").ok());
  EXPECT_EQ(runner.runs(job->id()), 1);
}

// Issue 40 A.5: back in service within one store retry (5 s) of the space coming back, not at
// the retention sweep's next minute (51.6-51.9 s measured in 4/4 runs before).
TEST_F(DurabilityTest, ServiceResumesWithinOneRetryOfTheStoreHealing) {
  FaultyFileOps ops;
  PublishingRunner runner;
  ManualClock clock;
  auto store = JobStore::Open((root_ / "state").string(), (root_ / "store").string(), &ops);
  ASSERT_TRUE(store.ok()) << store.status();
  runner.set_store(store->get());
  JobManager jobs(store->get(), &runner, {"cpu"}, Limits(), Retention(), clock);
  jobs.Start();
  // The sweep's first pass is done and it waits its minute before the store fails.
  ASSERT_TRUE(test::Eventually([&] {
    return clock.WaitsUntil(clock.SteadyNow() + std::chrono::milliseconds(60'000)) > 0;
  }));
  ops.FailFrom(Call::kRename, 3);  // the final record of the job below
  auto job = jobs.Submit(Alice(), Infer(), "cpu");
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(test::Eventually([&] { return !jobs.StoreError().empty(); }));
  DurabilityTest::Settle(jobs, job->id());
  ops.Heal();
  clock.Advance(std::chrono::milliseconds(5'001));
  EXPECT_TRUE(test::Eventually([&] { return jobs.StoreError().empty(); }))
      << "still out of service 5 s after the store healed: " << jobs.StoreError();
  EXPECT_EQ(jobs.Get(Alice(), job->id())->state(), v1::JOB_STATE_SUCCEEDED);
}

// Recovery cannot record what it decided (a job that was running is now FAILED): the daemon
// starts anyway (issue 40, item 8: refusing left it down for good under systemd), out of
// service and saying so, with the record held back; RetryStore writes it once it can.
TEST_F(DurabilityTest, RecoveryThatCannotBeRecordedStartsOutOfService) {
  std::string id;
  {
    auto store = JobStore::Open((root_ / "state").string(), (root_ / "store").string());
    ASSERT_TRUE(store.ok());
    v1::Job job;
    job.set_id("20260101-00000000000000aa");
    job.set_state(v1::JOB_STATE_RUNNING);
    job.set_owner("alice");
    job.set_device("cpu");
    ASSERT_TRUE((*store)->PutJob(job).ok());
    id = job.id();
  }
  FaultyFileOps ops;
  ops.FailFrom(Call::kRename, 0);
  auto store = JobStore::Open((root_ / "state").string(), (root_ / "store").string(), &ops);
  ASSERT_TRUE(store.ok());
  PublishingRunner runner;
  JobManager jobs(store->get(), &runner, {"cpu"}, Limits(), Retention());
  std::vector<std::string> warnings;
  const absl::Status s = jobs.Recover(&warnings);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_THAT(::testing::PrintToString(warnings), HasSubstr(id));
  EXPECT_THAT(jobs.StoreError(), HasSubstr("rename"));
  EXPECT_EQ(jobs.Get(Alice(), id)->state(), v1::JOB_STATE_RUNNING);
  EXPECT_FALSE(jobs.RetryStore());
  ops.Heal();
  EXPECT_TRUE(jobs.RetryStore());
  EXPECT_EQ(jobs.Get(Alice(), id)->state(), v1::JOB_STATE_FAILED);
  EXPECT_EQ(runner.runs(id), 0);
}

}  // namespace
}  // namespace libreyolo::daemon
