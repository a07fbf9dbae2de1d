// Issue 23, item 8: every engine worker death is counted (libreyolod_worker_restarts_total)
// and logged. The counter used to count only the workers started again after a death in a
// job: a worker that died before it was ready, and one killed after the cancel grace with no
// job after it, were not counted, and a death before ready wrote no log line.
//
// The workers here are small shell scripts standing in for `libreyolod-worker`: they speak
// just enough of the worker protocol (server/worker/worker_protocol.h: a 4-byte little-endian
// length, then WorkerToDaemon; an empty Hello is the two bytes 0a 00) to be ready, or not.
#include "server/daemon/workers/engine_runner.h"

#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace libreyolo::daemon {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr char kHello[] = R"(printf '\002\000\000\000\012\000' >&3)";

class EngineRunnerDeaths : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("engine_runner_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    auto store = JobStore::Open((dir_ / "state").string(), (dir_ / "store").string());
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    DaemonConfig c;
    c.models_dir = (dir_ / "models").string();
    c.images_dir = (dir_ / "images").string();
    live_ = std::make_unique<LiveConfig>(c);
  }
  void TearDown() override {
    runner_.reset();
    fs::remove_all(dir_);
  }

  // A runner whose workers run `body` (sh).
  EngineRunner& Runner(const std::string& body) {
    const std::string script = (dir_ / "worker.sh").string();
    std::ofstream(script) << "#!/bin/sh\n" << body << "\n";
    ::chmod(script.c_str(), 0755);
    runner_ = std::make_unique<EngineRunner>(*live_, store_.get(), script);
    return *runner_;
  }

  static v1::Job Job() {
    v1::Job j;
    j.set_id("20250101-0123456789abcdef");
    j.set_device("cpu");
    j.mutable_request()->mutable_infer()->mutable_model()->set_device("cpu");
    return j;
  }

  fs::path dir_;
  std::unique_ptr<JobStore> store_;
  std::unique_ptr<LiveConfig> live_;
  std::unique_ptr<EngineRunner> runner_;
};

TEST_F(EngineRunnerDeaths, AWorkerThatDiesBeforeItIsReadyIsCountedAndLogged) {
  EngineRunner& runner = Runner("exit 3");
  ::testing::internal::CaptureStderr();
  const absl::Status start = runner.StartWorker("cpu");
  EXPECT_FALSE(start.ok());
  EXPECT_THAT(std::string(start.message()), HasSubstr("exited with code 3 before it was ready"));
  EXPECT_EQ(runner.WorkerRestarts(), 1);
  // The device's next job tries a fresh worker, which dies the same way: the job fails with
  // the reason, and that is a second death.
  engine::CancelToken cancel;
  const RunOutcome out = runner.Run(Job(), nullptr, cancel);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(out.status.ok());
  EXPECT_THAT(std::string(out.status.message()), HasSubstr("before it was ready"));
  EXPECT_EQ(runner.WorkerRestarts(), 2);
  EXPECT_THAT(log, HasSubstr("exited with code 3 before it was ready"));
  EXPECT_THAT(log, HasSubstr("; 1 engine worker death since start"));
  EXPECT_THAT(log, HasSubstr("; 2 engine worker deaths since start"));
}

TEST_F(EngineRunnerDeaths, AWorkerKilledAfterTheCancelGraceIsCountedAndLogged) {
  // Ready, then deaf: it reads (and ignores) everything until its socket closes.
  EngineRunner& runner = Runner(std::string(kHello) + "\nexec cat <&3 >/dev/null");
  runner.set_cancel_grace(std::chrono::milliseconds(0));
  ASSERT_TRUE(runner.StartWorker("cpu").ok());
  EXPECT_EQ(runner.WorkerRestarts(), 0);
  engine::CancelToken cancel;
  cancel.cancelled = true;
  ::testing::internal::CaptureStderr();
  const RunOutcome out = runner.Run(Job(), nullptr, cancel);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(absl::IsCancelled(out.status)) << out.status;
  EXPECT_THAT(out.cancel_note, HasSubstr("killed after not stopping within 0 s of the cancel"));
  EXPECT_EQ(runner.WorkerRestarts(), 1) << "no job after it: counted all the same";
  EXPECT_THAT(log, HasSubstr("killed after not stopping"));
  EXPECT_THAT(log, HasSubstr("1 engine worker death since start"));
}

TEST_F(EngineRunnerDeaths, AWorkerThatDiesInAJobIsCountedOnceAndLogged) {
  EngineRunner& runner = Runner(std::string(kHello) + "\nhead -c 1 <&3 >/dev/null\nexit 7");
  ASSERT_TRUE(runner.StartWorker("cpu").ok());
  engine::CancelToken cancel;
  ::testing::internal::CaptureStderr();
  const RunOutcome out = runner.Run(Job(), nullptr, cancel);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(absl::IsInternal(out.status)) << out.status;
  EXPECT_THAT(std::string(out.status.message()), HasSubstr("exited with code 7"));
  EXPECT_EQ(runner.WorkerRestarts(), 1);
  EXPECT_THAT(log, HasSubstr("exited with code 7"));
  // A worker stopped by the daemon (here at the runner's end) is not a death.
  runner.StopWorkers();
  EXPECT_EQ(runner.WorkerRestarts(), 1);
}

// Issue 40 A.4: a worker killed (the OOM killer prefers an idle ~800 MiB worker) or stopped
// while idle used to fail the device's next job at once ("killed by signal 9 before its first
// step"), or cost it the whole watchdog. It is found before the job and replaced: the job runs
// on a fresh worker (here one that ends the job with exit 7, to tell the two apart).
class EngineRunnerIdleDeaths : public EngineRunnerDeaths,
                               public ::testing::WithParamInterface<int> {};

TEST_P(EngineRunnerIdleDeaths, AnIdleWorkerKilledOrStoppedIsReplacedBeforeTheNextJob) {
  const fs::path pids = dir_ / "pids";
  EngineRunner& runner = Runner(absl::StrCat("echo $$ >> ", pids.string(), "\n", kHello,
                                             "\nhead -c 1 <&3 >/dev/null\nexit 7"));
  runner.set_progress_timeout(std::chrono::milliseconds(3000));  // bounds the old failure
  ASSERT_TRUE(runner.StartWorker("cpu").ok());
  pid_t first = 0;
  std::ifstream(pids) >> first;
  ASSERT_GT(first, 1);
  ASSERT_EQ(::kill(first, GetParam()), 0);
  // The signal has landed (a worker idle for a while): a zombie until the runner looks, or
  // stopped.
  const std::string landed = GetParam() == SIGKILL ? ") Z" : ") T";
  for (int i = 0; i < 500; ++i) {
    std::ifstream stat("/proc/" + std::to_string(first) + "/stat");
    std::string all;
    std::getline(stat, all);
    if (all.find(landed) != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  engine::CancelToken cancel;
  ::testing::internal::CaptureStderr();
  const RunOutcome out = runner.Run(Job(), nullptr, cancel);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(std::string(out.status.message()), HasSubstr("exited with code 7"))
      << "the job ran on a fresh worker: " << out.status;
  EXPECT_THAT(log, HasSubstr(GetParam() == SIGKILL
                                 ? "died while idle: killed by signal 9"
                                 : "was stopped while idle (state T"));
  EXPECT_THAT(log, HasSubstr("a fresh one starts for the next job"));
  EXPECT_EQ(runner.WorkerRestarts(), 2) << "the idle death and the job's own end";
  EXPECT_NE(::kill(first, 0), 0) << "the first worker is gone (reaped), not left stopped";
}

INSTANTIATE_TEST_SUITE_P(KillAndStop, EngineRunnerIdleDeaths,
                         ::testing::Values(SIGKILL, SIGSTOP));

TEST_F(EngineRunnerDeaths, AWorkerStoppedByTheDaemonIsNotADeath) {
  EngineRunner& runner = Runner(std::string(kHello) + "\nexec cat <&3 >/dev/null");
  ASSERT_TRUE(runner.StartWorker("cpu").ok());
  runner.StopWorkers();
  EXPECT_EQ(runner.WorkerRestarts(), 0);
}

// Issue 23, item 4: no job holds a device forever. A worker that stops talking (SIGSTOP, a hung
// step) is killed by the progress watchdog, and one that keeps reporting but never ends is
// killed at the job's wall-time limit; each fails its job naming the deadline and the stage,
// and counts as a death (the next job gets a fresh worker).
class EngineRunnerDeadlines : public EngineRunnerDeaths {
 protected:
  // A worker script's frame: WorkerToDaemon{progress{stage, done, total}}, length-prefixed.
  std::string ProgressFrame(const std::string& stage, int64_t done, int64_t total) {
    wv1::WorkerToDaemon m;
    m.mutable_progress()->set_stage(stage);
    m.mutable_progress()->set_done(done);
    m.mutable_progress()->set_total(total);
    const std::string body = m.SerializeAsString();
    std::string frame(4, '\0');
    for (size_t i = 0; i < 4; ++i) frame[i] = static_cast<char>((body.size() >> (8 * i)) & 0xff);
    const std::string file = (dir_ / (stage + ".frame")).string();
    std::ofstream(file, std::ios::binary) << frame << body;
    return file;
  }
};

TEST_F(EngineRunnerDeadlines, AStoppedWorkerIsKilledByTheProgressWatchdog) {
  const std::string frame = ProgressFrame("measuring", 3, 150);
  // Ready, given the job, one step's progress, then stopped as `kill -STOP` leaves it.
  EngineRunner& runner = Runner(std::string(kHello) + "\nhead -c 1 <&3 >/dev/null\ncat " +
                                frame + " >&3\nkill -STOP $$\nsleep 60");
  // 2 s: far above the time the script takes to write its one frame on a loaded machine, so
  // the stage named is always the step's, never "before its first step".
  runner.set_progress_timeout(std::chrono::milliseconds(2000));
  ASSERT_TRUE(runner.StartWorker("cpu").ok());
  engine::CancelToken cancel;
  ::testing::internal::CaptureStderr();
  const auto start = std::chrono::steady_clock::now();
  const RunOutcome out = runner.Run(Job(), nullptr, cancel);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(absl::IsInternal(out.status)) << out.status;
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_THAT(std::string(out.status.message()),
              HasSubstr("killed: no progress for 2 s during measuring, step 3/150"));
  EXPECT_THAT(std::string(out.status.message()), HasSubstr("a fresh worker for the next job"));
  EXPECT_LT(took, 30) << "the stopped worker was waited for";
  EXPECT_EQ(runner.WorkerRestarts(), 1);
  EXPECT_THAT(log, HasSubstr("no progress for 2 s"));
}

TEST_F(EngineRunnerDeadlines, AWorkerSilentFromTheStartIsKilledByTheWatchdog) {
  EngineRunner& runner = Runner(std::string(kHello) + "\nexec cat <&3 >/dev/null");
  runner.set_progress_timeout(std::chrono::milliseconds(200));
  ASSERT_TRUE(runner.StartWorker("cpu").ok());
  engine::CancelToken cancel;
  ::testing::internal::CaptureStderr();
  const RunOutcome out = runner.Run(Job(), nullptr, cancel);
  (void)::testing::internal::GetCapturedStderr();
  EXPECT_THAT(std::string(out.status.message()),
              HasSubstr("no progress for 0.2 s before its first step"));
}

TEST_F(EngineRunnerDeadlines, AJobStillReportingAtItsWallTimeLimitIsStopped) {
  const std::string frame = ProgressFrame("measuring", 7, 1000);
  // Given the job, reports every 50 ms (so the watchdog never fires) and never ends.
  EngineRunner& runner = Runner(std::string(kHello) + "\nhead -c 1 <&3 >/dev/null\nwhile :; do cat " +
                                frame + " >&3 || exit 1; sleep 0.05; done");
  runner.set_progress_timeout(std::chrono::milliseconds(5000));
  ASSERT_TRUE(runner.StartWorker("cpu").ok());
  v1::Job job = Job();
  job.set_max_wall_seconds(2);  // room for the script's first frame on a loaded machine
  engine::CancelToken cancel;
  ::testing::internal::CaptureStderr();
  const auto start = std::chrono::steady_clock::now();
  const RunOutcome out = runner.Run(job, nullptr, cancel);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  (void)::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(absl::IsDeadlineExceeded(out.status)) << out.status;
  EXPECT_EQ(out.exit_code, 2) << "the submitter's to fix: more time or a shorter job";
  EXPECT_THAT(std::string(out.status.message()),
              HasSubstr("the job's wall-time limit of 2 s was reached during measuring, step "
                        "7/1000"));
  EXPECT_THAT(std::string(out.status.message()), HasSubstr("--time-limit"));
  EXPECT_GE(took, 1.9);
  EXPECT_EQ(runner.WorkerRestarts(), 1);
}

// The cause of a failed gang (CI, 2026-12-03: rank 1's worker SIGKILLed, and the job blamed
// rank 0, whose Gloo saw "Connection closed by peer" and ended first).
TEST(GangCauseRank, ADeadRankIsTheCauseEvenWhenASurvivorEndedFirst) {
  EngineWorker::JobEnd ok, failed, killed, grace, stalled;
  ok.done.emplace();
  failed.done.emplace();
  failed.done->set_code(1);
  failed.done->set_error("training failed: Connection closed by peer [127.0.0.1]:11957");
  killed.death = "killed by signal 9 (Killed)";
  grace.death = "killed after not stopping within 3 s of the cancel";
  grace.cancelled_by_kill = true;
  stalled.death = "killed: no progress for 600 s";
  stalled.stalled = true;
  EXPECT_EQ(GangCauseRank({failed, killed}, {0, 1}), 1);
  EXPECT_EQ(GangCauseRank({killed, failed}, {1, 0}), 0);
  EXPECT_EQ(GangCauseRank({failed, failed}, {1, 0}), 1) << "no death: the first to fail";
  EXPECT_EQ(GangCauseRank({failed, grace}, {0, 1}), 0) << "the daemon's own kill is no cause";
  EXPECT_EQ(GangCauseRank({stalled, failed}, {0, 1}), 0) << "neither died: the first";
  EXPECT_EQ(GangCauseRank({ok, killed, killed}, {0, 2, 1}), 2) << "the first death";
  EXPECT_EQ(GangCauseRank({ok, ok}, {0, 1}), -1);
}

// A stopped rank (SIGSTOP) and its peer waiting for it in an all-reduce both fall silent; the
// watchdog ends both, in either order. The stopped one is the cause, whichever ended first.
TEST(GangCauseRank, AStoppedRankIsTheCauseOverAPeerWaitingForIt) {
  EngineWorker::JobEnd waiting, stopped, failed, killed;
  waiting.death = "killed: no progress for 6 s during training, step 4/80";
  waiting.stalled = true;
  stopped = waiting;
  stopped.stopped = true;
  failed.done.emplace();
  failed.done->set_code(1);
  killed.death = "killed by signal 9 (Killed)";
  EXPECT_EQ(GangCauseRank({waiting, stopped}, {0, 1}), 1);
  EXPECT_EQ(GangCauseRank({stopped, waiting}, {1, 0}), 0);
  EXPECT_EQ(GangCauseRank({failed, stopped}, {0, 1}), 1) << "its peer's Gloo error came first";
  EXPECT_EQ(GangCauseRank({stopped, killed}, {0, 1}), 1) << "a death on its own still wins";
  EngineWorker::JobEnd grace_stopped;
  grace_stopped.death = "killed after not stopping within 3 s of the cancel";
  grace_stopped.cancelled_by_kill = true;
  grace_stopped.stopped = true;
  EXPECT_EQ(GangCauseRank({failed, grace_stopped}, {0, 1}), 1)
      << "its peer's collective timed out first; it was killed stopped at the cancel grace";
}

TEST(JobWallSeconds, TheRequestIsCappedByTheDaemonAndZeroMeansTheDaemons) {
  EXPECT_EQ(JobWallSeconds(0, 3600), 3600);
  EXPECT_EQ(JobWallSeconds(60, 3600), 60);
  EXPECT_EQ(JobWallSeconds(7200, 3600), 3600);
  EXPECT_EQ(JobWallSeconds(-5, 3600), 3600);
  EXPECT_EQ(JobWallSeconds(kMaxJobSeconds, kMaxJobSeconds), kMaxJobSeconds);
}

}  // namespace
}  // namespace libreyolo::daemon

namespace libreyolo::daemon {
namespace {

// Issue 40 A.10: --worker-binary naming a directory passed access(X_OK) and failed at the
// first spawn with exit 1; it is a configuration error (exit 2) naming the directory.
TEST(FindWorkerExecutable, ADirectoryIsAConfigurationError) {
  const absl::StatusOr<std::string> found =
      FindWorkerExecutable(::testing::TempDir(), "/usr/bin/libreyolod");
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(found.status().message()), HasSubstr("is a directory"));
}

}  // namespace
}  // namespace libreyolo::daemon
