// A job's events and the state filesystem (issue 40, item 8): a drain of N queued jobs stores
// O(N) events (each start used to store a "queued" event for every waiting job: ~N^2/2, which
// filled a small state disk); queue positions reach watchers without being stored, and a watcher
// resuming from the next sequence, across a restart too, misses no stored event and sees no
// sequence go back; a job's stored log is bounded; a queued job can be cancelled while the store
// is full; and recovery that cannot record what it decided starts out of service instead of not
// at all. The "full" store is FaultyFileOps::LimitDisk: space counted from the files there.
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
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
using test::Alice;
using test::Eventually;
using test::InferRequest;
using test::User;
using ::testing::HasSubstr;

// Finishes each job at once after its script (progress events), counting runs per job id.
class QuickRunner : public JobRunner {
 public:
  using Script =
      std::function<void(const v1::Job&, const std::function<void(const JobProgress&)>&)>;
  void SetScript(Script script) { script_ = std::move(script); }
  RunOutcome Run(const v1::Job& job, const std::function<void(const JobProgress&)>& progress,
                 const engine::CancelToken&) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++runs_[job.id()];
    }
    if (script_) {
      script_(job, progress);
    } else {
      progress(JobProgress{"measuring", 1, 1, ""});
    }
    return RunOutcome{};
  }
  int runs(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu_);
    return runs_[id];
  }
  int total_runs() {
    std::lock_guard<std::mutex> lock(mu_);
    int n = 0;
    for (const auto& [id, count] : runs_) n += count;
    return n;
  }

 private:
  Script script_;
  std::mutex mu_;
  std::map<std::string, int> runs_;
};

Identity Admin() { return User("root", /*admin=*/true); }

Limits RoomyLimits() {
  Limits limits;
  limits.max_queue_length = 5000;
  limits.max_jobs_per_user = 5000;
  return limits;
}

// What a watcher gets now: the stream up to the job's newest event, then it stops.
std::vector<v1::JobEvent> Snapshot(JobManager& jobs, const std::string& id, int64_t from) {
  std::vector<v1::JobEvent> out;
  (void)jobs.Watch(
      Admin(), id, from,
      [&](const v1::JobEvent& e) {
        out.push_back(e);
        return true;
      },
      [] { return true; });
  return out;
}

std::vector<std::string> LogLines(const fs::path& state, const std::string& id) {
  std::ifstream in(state / "events" / (id + ".jsonl"));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

int64_t StoredEvents(const fs::path& state) {
  int64_t n = 0;
  for (const auto& f : fs::directory_iterator(state / "events")) {
    std::ifstream in(f.path());
    for (std::string line; std::getline(in, line);) ++n;
  }
  return n;
}

// A stream from `from` that is open (its first pass done) when `act` runs; the events it gets
// until then and the first one after (at most 20 s of real time).
std::vector<v1::JobEvent> StreamAcross(JobManager& jobs, const std::string& id, int64_t from,
                                       const std::function<void()>& act) {
  std::mutex mu;
  std::vector<v1::JobEvent> got;
  bool acted = false;
  std::atomic<bool> open{false}, give_up{false};
  std::thread watcher([&] {
    (void)jobs.Watch(
        Admin(), id, from,
        [&](const v1::JobEvent& e) {
          std::lock_guard<std::mutex> lock(mu);
          got.push_back(e);
          return !acted;  // after the act: one event
        },
        [&] {
          open = true;
          return give_up.load();
        });
  });
  EXPECT_TRUE(Eventually([&] { return open.load(); }));
  {
    std::lock_guard<std::mutex> lock(mu);
    acted = true;
  }
  act();
  if (!Eventually([&] {
        std::lock_guard<std::mutex> lock(mu);
        return !got.empty();
      })) {
    give_up = true;
  }
  watcher.join();
  return got;
}

std::string Describe(const std::vector<v1::JobEvent>& events) {
  std::string out;
  for (const v1::JobEvent& e : events) {
    out += std::to_string(e.sequence()) + ":" + e.stage() + "@" +
           std::to_string(e.queue_position()) + " ";
  }
  return out;
}

class JobManagerEventsTest : public ::testing::Test {
 protected:
  // The manager (not started) on the store in tmp_, through ops_.
  void Open(Limits limits = RoomyLimits(), const Clock& clock = Clock::Real()) {
    jobs_.reset();
    auto store = JobStore::Open(state_.string(), (root_ / "store").string(), &ops_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    jobs_ = std::make_unique<JobManager>(store_.get(), &runner_, std::vector<std::string>{"cpu"},
                                         limits, Retention(), clock);
  }
  std::string Submit(const Identity& who, const std::string& name = "j") {
    auto job = jobs_->Submit(who, InferRequest(name), "cpu");
    EXPECT_TRUE(job.ok()) << job.status();
    return job.ok() ? job->id() : "";
  }
  v1::JobState State(const std::string& id) { return jobs_->Get(Admin(), id)->state(); }
  // Fills the state "disk": LimitDisk at what is there now plus `room` bytes.
  void FillDisk(int64_t room = 0) {
    ops_.LimitDisk(state_.string(), FaultyFileOps::DiskUsage(state_.string()) + room);
  }

  ManualClock clock_{1'767'225'600'000};  // for the tests that drive time; before jobs_
  test::TempDir tmp_{"jme"};
  fs::path root_{tmp_.path()};
  fs::path state_{root_ / "state"};
  FaultyFileOps ops_;
  QuickRunner runner_;
  std::unique_ptr<JobStore> store_;
  std::unique_ptr<JobManager> jobs_;
};

// 400 queued jobs of four users drain: every job stores its own few events (queued, starting,
// progress, done), not one per job that started before it. Before the fix: 80,000+ events.
TEST_F(JobManagerEventsTest, DrainingAQueueStoresLinearlyManyEvents) {
  int n = 400;
  if (const char* env = std::getenv("LIBREYOLO_DRAIN_JOBS")) n = std::atoi(env);  // measurements
  Open();
  std::vector<std::string> ids;
  for (int i = 0; i < n; ++i) ids.push_back(Submit(User("u" + std::to_string(i % 4))));
  const size_t writes_queued = ops_.write_sizes().size();
  jobs_->Start();
  ASSERT_TRUE(Eventually([&] { return !jobs_->Busy(); }, std::chrono::seconds(120)));
  for (const std::string& id : ids) ASSERT_EQ(State(id), v1::JOB_STATE_SUCCEEDED);
  const int64_t events = StoredEvents(state_);
  const size_t writes = ops_.write_sizes().size();
  std::cout << "drain of " << n << " jobs: " << events << " stored events, " << writes
            << " store writes (" << writes_queued << " while queueing), state dir "
            << FaultyFileOps::DiskUsage(state_.string()) / 1024 << " KiB in 4 KiB blocks\n";
  EXPECT_LE(events, 4 * n);
  EXPECT_LE(writes, static_cast<size_t>(7 * n));
  // The job that waited longest: the same few events as the first.
  size_t longest = 0;
  for (const std::string& id : ids) longest = std::max(longest, LogLines(state_, id).size());
  EXPECT_LE(longest, 4u);
}

// Positions go to watchers, not to the store, numbered as the stored event before them; a
// watcher resuming from the next sequence gets the positions from then on and, after a
// restart too, the next stored event numbered after the last stored one (nothing skipped,
// nothing numbered lower than what it saw).
TEST_F(JobManagerEventsTest, QueuePositionsReachWatchersAndResumeAcrossARestart) {
  Open(RoomyLimits(), clock_);
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    clock_.Advance(std::chrono::milliseconds(1));  // recovery orders the queue by these times
    ids.push_back(Submit(Alice(), "a" + std::to_string(i)));
  }
  const std::string last = ids.back();
  auto first = Snapshot(*jobs_, last, 0);
  ASSERT_EQ(first.size(), 1u) << Describe(first);
  EXPECT_EQ(first[0].sequence(), 1);
  EXPECT_EQ(first[0].queue_position(), 5);

  ASSERT_TRUE(jobs_->Cancel(Admin(), ids[0]).ok());
  ASSERT_TRUE(jobs_->Cancel(Alice(), ids[1]).ok());
  EXPECT_EQ(LogLines(state_, last).size(), 1u) << "a position change was stored";
  // From the start: the stored event, then the newest position (no sequence of its own).
  auto all = Snapshot(*jobs_, last, 0);
  ASSERT_EQ(all.size(), 2u) << Describe(all);
  EXPECT_EQ(all[1].sequence(), 1);
  EXPECT_EQ(all[1].stage(), "queued");
  EXPECT_EQ(all[1].queue_position(), 3);
  EXPECT_EQ(jobs_->Get(Alice(), last)->last_sequence(), 1);
  // Resumed from the next sequence: nothing it may have had already, then each new position.
  EXPECT_TRUE(Snapshot(*jobs_, last, 2).empty());
  std::vector<v1::JobEvent> live =
      StreamAcross(*jobs_, last, 2, [&] { ASSERT_TRUE(jobs_->Cancel(Alice(), ids[2]).ok()); });
  ASSERT_EQ(live.size(), 1u) << Describe(live);
  EXPECT_EQ(live[0].sequence(), 1);
  EXPECT_EQ(live[0].queue_position(), 2);

  // A restart recomputes positions and stores none of them: a stream from the start gets the
  // stored event and the position now; a resumed one the next stored event, numbered 2.
  Open(RoomyLimits(), clock_);
  std::vector<std::string> warnings;
  ASSERT_TRUE(jobs_->Recover(&warnings).ok());
  EXPECT_EQ(LogLines(state_, last).size(), 1u);
  all = Snapshot(*jobs_, last, 0);
  ASSERT_EQ(all.size(), 2u) << Describe(all);
  EXPECT_EQ(all[1].sequence(), 1);
  EXPECT_EQ(all[1].queue_position(), 2);
  EXPECT_TRUE(Snapshot(*jobs_, last, 2).empty());
  live = StreamAcross(*jobs_, last, 2, [&] { jobs_->Start(); });
  ASSERT_FALSE(live.empty());
  // Its position as the job ahead starts (numbered as the stored event before it), or, had
  // that one come and gone already, the next stored event: never a lower number, none skipped.
  const bool position = live[0].sequence() == 1 && live[0].queue_position() == 1;
  const bool started = live[0].sequence() == 2 && live[0].stage() == "starting";
  EXPECT_TRUE(position || started) << Describe(live);
  ASSERT_TRUE(Eventually([&] { return !jobs_->Busy(); }));
  ASSERT_EQ(State(last), v1::JOB_STATE_SUCCEEDED);
  auto rest = Snapshot(*jobs_, last, 2);
  ASSERT_FALSE(rest.empty());
  EXPECT_EQ(rest.front().stage(), "starting") << Describe(rest);
  for (size_t i = 0; i < rest.size(); ++i) EXPECT_EQ(rest[i].sequence(), 2 + int64_t(i));
  EXPECT_EQ(rest.back().stage(), "done");
  // A finished job replays its stored log: 1..N, nothing repeated.
  auto replay = Snapshot(*jobs_, last, 0);
  for (size_t i = 0; i < replay.size(); ++i) EXPECT_EQ(replay[i].sequence(), 1 + int64_t(i));
  EXPECT_EQ(replay.size(), LogLines(state_, last).size());
}

// A long job's progress: stored up to the bound (thinned to stage changes past
// kThinEventsFrom), then only shown; its state changes are stored whatever the count.
TEST_F(JobManagerEventsTest, AJobsStoredLogIsBounded) {
  ManualClock& clock = clock_;
  Open(RoomyLimits(), clock);
  std::vector<v1::JobEvent> live;
  runner_.SetScript([&](const v1::Job& job, const std::function<void(const JobProgress&)>& p) {
    for (int i = 1; i <= 1000; ++i) {  // past the progress throttle: 300 ms apart
      clock.Advance(std::chrono::milliseconds(300));
      p(JobProgress{"measuring", i, 1000, ""});
    }
    for (int cycle = 1; cycle <= 500; ++cycle) {  // a stage change each time
      p(JobProgress{"profiling", cycle, 500, ""});
      p(JobProgress{"writing", cycle, 500, "trace"});
    }
    live = Snapshot(*jobs_, job.id(), 0);
  });
  const std::string id = Submit(Alice());
  jobs_->Start();
  ASSERT_TRUE(Eventually([&] { return !jobs_->Busy(); }));
  ASSERT_EQ(State(id), v1::JOB_STATE_SUCCEEDED);
  const std::vector<std::string> log = LogLines(state_, id);
  EXPECT_EQ(log.size(), JobManager::kMaxStoredEvents + 1);  // the bound, then "done"
  EXPECT_THAT(log.front(), HasSubstr("\"stage\":\"queued\""));
  EXPECT_THAT(log[1], HasSubstr("\"stage\":\"starting\""));
  EXPECT_THAT(log.back(), HasSubstr("\"stage\":\"done\""));
  // What was not stored reached a watcher: the stored events, then the newest progress,
  // numbered as the last stored one.
  ASSERT_EQ(live.size(), JobManager::kMaxStoredEvents + 1);
  EXPECT_EQ(live.back().stage(), "writing");
  EXPECT_EQ(live.back().done(), 500);
  EXPECT_EQ(live.back().sequence(), static_cast<int64_t>(JobManager::kMaxStoredEvents));
  // Watchers replay what is stored, without gaps.
  auto replay = Snapshot(*jobs_, id, 0);
  ASSERT_EQ(replay.size(), log.size());
  for (size_t i = 0; i < replay.size(); ++i) EXPECT_EQ(replay[i].sequence(), 1 + int64_t(i));
}

// The state filesystem is full and the manager out of service: an admin and an owner still
// cancel queued jobs (each frees its queue events, which take the record and its "cancelled"
// event); a restart on the full disk keeps them cancelled; with room again the rest run.
TEST_F(JobManagerEventsTest, AQueuedJobCanBeCancelledWhileTheStoreIsFull) {
  Open();
  std::vector<std::string> alice, bob;
  for (int i = 0; i < 4; ++i) alice.push_back(Submit(Alice()));
  for (int i = 0; i < 2; ++i) bob.push_back(Submit(User("bob")));
  FillDisk(2 * 4096);
  test::WriteFile((state_ / "filler").string(), std::string(2 * 4096, 'f'));
  auto refused = jobs_->Submit(Alice(), InferRequest("late"), "cpu");
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted) << refused.status();
  ASSERT_FALSE(jobs_->StoreError().empty());

  for (const std::string& id : bob) {
    auto cancelled = jobs_->Cancel(Admin(), id);
    ASSERT_TRUE(cancelled.ok()) << cancelled.status();
    EXPECT_EQ(cancelled->state(), v1::JOB_STATE_CANCELLED);
  }
  auto own = jobs_->Cancel(Alice(), alice[0]);
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_EQ(own->state(), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(Snapshot(*jobs_, alice[0], 0).back().stage(), "cancelled");
  jobs_->Start();  // out of service: nothing starts

  Open();  // a restart, the disk still full
  std::vector<std::string> warnings;
  ASSERT_TRUE(jobs_->Recover(&warnings).ok());
  for (const std::string& id : bob) EXPECT_EQ(State(id), v1::JOB_STATE_CANCELLED);
  const v1::Job cancelled = *jobs_->Get(Alice(), alice[0]);
  EXPECT_EQ(cancelled.state(), v1::JOB_STATE_CANCELLED);
  EXPECT_THAT(cancelled.error(), HasSubstr("cancelled by alice while queued"));
  EXPECT_EQ(State(alice[1]), v1::JOB_STATE_QUEUED);

  fs::remove(state_ / "filler");
  jobs_->Start();
  ASSERT_TRUE(jobs_->RetryStore());
  for (size_t i = 1; i < alice.size(); ++i) {
    EXPECT_EQ(test::WaitTerminal(*jobs_, Alice(), alice[i]).state(), v1::JOB_STATE_SUCCEEDED);
  }
  EXPECT_EQ(runner_.total_runs(), 3);
}

// Recovery decides that a job that was running has FAILED, and the full disk cannot take the
// record: the manager starts anyway, out of service and saying why, shows the job as it was
// until the record is written, starts nothing meanwhile, still cancels, and once there is room
// records the failure and runs the queue. Before the fix: Recover refused (exit 2 at start-up).
TEST_F(JobManagerEventsTest, RecoveryThatCannotBeRecordedStartsOutOfService) {
  Open();
  const std::string queued = Submit(Alice()), other = Submit(Alice());
  v1::Job running;
  running.set_id("20260101-00000000000000aa");
  running.set_state(v1::JOB_STATE_RUNNING);
  running.set_owner("alice");
  running.set_device("cpu");
  running.set_create_time_unix_ms(1);
  running.set_start_time_unix_ms(2);
  running.set_last_sequence(2);
  ASSERT_TRUE(store_->PutJob(running).ok());
  FillDisk();

  Open();
  std::vector<std::string> warnings;
  const absl::Status recovered = jobs_->Recover(&warnings);
  ASSERT_TRUE(recovered.ok()) << recovered;
  EXPECT_THAT(testing::PrintToString(warnings),
              testing::AllOf(HasSubstr(running.id()), HasSubstr("out of service")));
  EXPECT_FALSE(jobs_->StoreError().empty());
  std::vector<std::string> told;
  jobs_->SetStoreListener([&](bool ok, const std::string& why) {
    told.push_back(std::string(ok ? "ok: " : "out: ") + why);
  });
  ASSERT_EQ(told.size(), 1u);
  EXPECT_THAT(told[0], HasSubstr("out: "));
  EXPECT_EQ(State(running.id()), v1::JOB_STATE_RUNNING);  // until its FAILED record is written
  jobs_->Start();
  ASSERT_TRUE(jobs_->Cancel(Admin(), other).ok());
  EXPECT_EQ(State(other), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(State(queued), v1::JOB_STATE_QUEUED);

  ops_.Heal();
  ASSERT_TRUE(jobs_->RetryStore());
  const v1::Job failed = *jobs_->Get(Alice(), running.id());
  EXPECT_EQ(failed.state(), v1::JOB_STATE_FAILED);
  EXPECT_THAT(failed.error(), HasSubstr("libreyolod stopped while this job was running"));
  const std::vector<v1::JobEvent> events = Snapshot(*jobs_, running.id(), 0);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().stage(), "failed");
  EXPECT_EQ(events.back().sequence(), 3);  // after the record's last one
  EXPECT_EQ(test::WaitTerminal(*jobs_, Alice(), queued).state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(runner_.runs(running.id()), 0);
  EXPECT_EQ(runner_.total_runs(), 1);
  EXPECT_THAT(told.back(), HasSubstr("ok: "));
  jobs_->SetStoreListener(nullptr);  // `told` goes before the manager
}

}  // namespace
}  // namespace libreyolo::daemon
