// The engine in worker processes (issue 10, section 1), against a real daemon built with the
// worker's fault hook (libreyolod_test_hooks; LIBREYOLO_WORKER_FAULT, server/worker/fault_hook.h):
// a worker that dies fails only its job, naming the signal and the stage, and the next job
// runs in a fresh worker; two CPU slots run two jobs at once; a cancel reaches the worker
// between steps, and a worker that ignores it is killed; no worker outlives its daemon.
#include <signal.h>
#include <sys/wait.h>

#include <cstdlib>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/daemon/daemon_process.h"

namespace libreyolo::daemon_test {
namespace {

using ::testing::HasSubstr;

// The fault is read from the environment the daemon (and so its workers) inherit.
class ScopedFault {
 public:
  ScopedFault(const std::string& spec, const std::string& once_file = "") {
    ::setenv("LIBREYOLO_WORKER_FAULT", spec.c_str(), 1);
    if (!once_file.empty()) ::setenv("LIBREYOLO_WORKER_FAULT_ONCE", once_file.c_str(), 1);
  }
  ~ScopedFault() {
    ::unsetenv("LIBREYOLO_WORKER_FAULT");
    ::unsetenv("LIBREYOLO_WORKER_FAULT_ONCE");
  }
};

TEST(DaemonWorkerTest, ACrashingWorkerFailsOnlyItsJobAndTheNextJobRuns) {
  for (const char* action : {"segv", "abort"}) {
    SCOPED_TRACE(action);
    TempDir dir;
    DaemonDirs dirs(dir.path());
    ScopedFault fault(std::string(action) + "@measuring:1", dir.File("fault-done"));
    auto daemon = DaemonProcess::Start(dirs.Flags(), dir.File("daemon.log"));
    ASSERT_TRUE(daemon->WaitServing()) << daemon->LogTail();
    const std::vector<pid_t> before = WorkerPids(daemon->pid());
    ASSERT_EQ(before.size(), 1u) << "one worker for the cpu slot";
    auto channel = UnixChannel(dirs.socket);
    auto stub = v1::ProfilerService::NewStub(channel);
    v1::Job crashed, next;
    ASSERT_TRUE(Submit(*stub, TinyInfer(4), &crashed).ok());
    ASSERT_TRUE(Submit(*stub, TinyInfer(2), &next).ok());
    ASSERT_TRUE(WaitTerminal(*stub, crashed.id(), &crashed));
    EXPECT_EQ(crashed.state(), v1::JOB_STATE_FAILED);
    EXPECT_EQ(crashed.exit_code(), 1);
    const std::string signal = std::string(action) == "segv" ? "signal 11" : "signal 6";
    EXPECT_THAT(crashed.error(), HasSubstr("the engine worker for cpu"));
    EXPECT_THAT(crashed.error(), HasSubstr("killed by " + signal));
    EXPECT_THAT(crashed.error(), HasSubstr("during measuring, step 1/"));
    EXPECT_EQ(crashed.artifacts_size(), 0);
    // The daemon serves on, and the queued job runs in a fresh worker.
    std::string health;
    EXPECT_TRUE(HealthCheck(channel, &health).ok() && health == kServing);
    ASSERT_TRUE(WaitTerminal(*stub, next.id(), &next));
    EXPECT_EQ(next.state(), v1::JOB_STATE_SUCCEEDED) << next.error() << daemon->LogTail();
    const std::vector<pid_t> after = WorkerPids(daemon->pid());
    ASSERT_EQ(after.size(), 1u);
    EXPECT_NE(after[0], before[0]);
    v1::GetMetricsRequest mreq;
    v1::GetMetricsResponse metrics;
    auto ctx = Ctx();
    ASSERT_TRUE(stub->GetMetrics(ctx.get(), mreq, &metrics).ok());
    EXPECT_THAT(metrics.text(), HasSubstr("libreyolod_worker_restarts_total 1"));
    EXPECT_EQ(daemon->Terminate(seconds(60)), 0) << daemon->LogTail();
    EXPECT_TRUE(Ended(after[0])) << "the worker outlived its daemon";
  }
}

TEST(DaemonWorkerTest, TwoCpuSlotsRunTwoJobsAtOnce) {
  TempDir dir;
  DaemonDirs dirs(dir.path());
  std::vector<std::string> flags = dirs.Flags();
  flags.insert(flags.end(), {"--device", "cpu:1", "--threads", "1"});
  auto daemon = DaemonProcess::Start(flags, dir.File("daemon.log"));
  ASSERT_TRUE(daemon->WaitServing()) << daemon->LogTail();
  EXPECT_EQ(WorkerPids(daemon->pid()).size(), 2u);
  auto stub = v1::ProfilerService::NewStub(UnixChannel(dirs.socket));
  v1::Job a, b;
  v1::SubmitJobRequest ra = TinyInfer(40), rb = TinyInfer(40);
  ra.mutable_infer()->mutable_model()->set_threads(1);
  rb.mutable_infer()->mutable_model()->set_threads(1);
  rb.mutable_infer()->mutable_model()->set_device("cpu:1");
  ASSERT_TRUE(Submit(*stub, ra, &a).ok());
  ASSERT_TRUE(Submit(*stub, rb, &b).ok());
  ASSERT_TRUE(WaitTerminal(*stub, a.id(), &a));
  ASSERT_TRUE(WaitTerminal(*stub, b.id(), &b));
  EXPECT_EQ(a.state(), v1::JOB_STATE_SUCCEEDED) << a.error();
  EXPECT_EQ(b.state(), v1::JOB_STATE_SUCCEEDED) << b.error();
  EXPECT_EQ(a.device(), "cpu");
  EXPECT_EQ(b.device(), "cpu:1");
  // Overlapping in time: each started before the other finished.
  EXPECT_LT(a.start_time_unix_ms(), b.finish_time_unix_ms());
  EXPECT_LT(b.start_time_unix_ms(), a.finish_time_unix_ms());
  EXPECT_EQ(daemon->Terminate(seconds(60)), 0) << daemon->LogTail();
}

TEST(DaemonWorkerTest, CancelReachesTheWorkerAndAHungWorkerIsKilled) {
  TempDir dir;
  DaemonDirs dirs(dir.path());
  // The first job's worker hangs (ignoring the cancel, as a stuck kernel would); the second
  // job, in a fresh worker, is cancelled between steps as usual.
  ScopedFault fault("hang@measuring:1", dir.File("fault-done"));
  std::vector<std::string> flags = dirs.Flags();
  flags.insert(flags.end(), {"--cancel-grace", "3"});
  auto daemon = DaemonProcess::Start(flags, dir.File("daemon.log"));
  ASSERT_TRUE(daemon->WaitServing()) << daemon->LogTail();
  auto stub = v1::ProfilerService::NewStub(UnixChannel(dirs.socket));
  auto cancel = [&](const std::string& id) {
    auto ctx = Ctx();
    v1::CancelJobRequest req;
    req.set_job_id(id);
    v1::Job j;
    return stub->CancelJob(ctx.get(), req, &j);
  };
  auto at_step = [&](const std::string& id, int64_t step) {
    v1::Job j;
    return WaitForJob(
        *stub, id,
        [&](const v1::Job&) {
          std::vector<v1::JobEvent> events;
          (void)Watch(*stub, id, 1, &events, "",
                      [&](const v1::JobEvent& e) { return e.stage() == "measuring" && e.done() >= step; },
                      seconds(5));
          return !events.empty() && events.back().stage() == "measuring" &&
                 events.back().done() >= step;
        },
        &j, seconds(120));
  };
  v1::Job hung;
  ASSERT_TRUE(Submit(*stub, TinyInfer(1000), &hung).ok());
  ASSERT_TRUE(at_step(hung.id(), 1));
  const auto start = Clock::now();
  ASSERT_TRUE(cancel(hung.id()).ok());
  ASSERT_TRUE(WaitTerminal(*stub, hung.id(), &hung));
  const double took = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_EQ(hung.state(), v1::JOB_STATE_CANCELLED);
  EXPECT_THAT(hung.error(), HasSubstr("killed after not stopping within 3 s of the cancel"));
  EXPECT_GE(took, 2.5);
  EXPECT_LT(took, 30);

  v1::Job polite;
  ASSERT_TRUE(Submit(*stub, TinyInfer(1000), &polite).ok());
  ASSERT_TRUE(at_step(polite.id(), 1));
  ASSERT_TRUE(cancel(polite.id()).ok());
  ASSERT_TRUE(WaitTerminal(*stub, polite.id(), &polite));
  EXPECT_EQ(polite.state(), v1::JOB_STATE_CANCELLED);
  EXPECT_THAT(polite.error(), ::testing::Not(HasSubstr("killed")));
  EXPECT_EQ(daemon->Terminate(seconds(60)), 0) << daemon->LogTail();
}

// Issue 23, item 8: a worker killed after the cancel grace is a death like any other, counted
// at once and logged (libreyolod_worker_restarts_total used to count a death only when the
// device's next job started a fresh worker, and never a death before ready).
TEST(DaemonWorkerTest, AWorkerKilledAfterTheCancelGraceIsCountedAndLogged) {
  TempDir dir;
  DaemonDirs dirs(dir.path());
  ScopedFault fault("hang@measuring:1", dir.File("fault-done"));
  std::vector<std::string> flags = dirs.Flags();
  flags.insert(flags.end(), {"--cancel-grace", "1"});
  auto daemon = DaemonProcess::Start(flags, dir.File("daemon.log"));
  ASSERT_TRUE(daemon->WaitServing()) << daemon->LogTail();
  auto stub = v1::ProfilerService::NewStub(UnixChannel(dirs.socket));
  v1::Job hung;
  ASSERT_TRUE(Submit(*stub, TinyInfer(1000), &hung).ok());
  std::vector<v1::JobEvent> events;
  (void)Watch(
      *stub, hung.id(), 0, &events, "",
      [](const v1::JobEvent& e) { return e.stage() == "measuring" && e.done() >= 1; },
      seconds(120));
  ASSERT_TRUE(PollUntil([&] { return fs::exists(dir.File("fault-done")); }, seconds(60)));
  auto ctx = Ctx();
  v1::CancelJobRequest cancel;
  cancel.set_job_id(hung.id());
  v1::Job j;
  ASSERT_TRUE(stub->CancelJob(ctx.get(), cancel, &j).ok());
  ASSERT_TRUE(WaitTerminal(*stub, hung.id(), &hung));
  EXPECT_EQ(hung.state(), v1::JOB_STATE_CANCELLED);
  EXPECT_THAT(hung.error(), HasSubstr("killed after not stopping"));
  v1::GetMetricsResponse metrics;
  auto mctx = Ctx();
  ASSERT_TRUE(stub->GetMetrics(mctx.get(), v1::GetMetricsRequest(), &metrics).ok());
  EXPECT_THAT(metrics.text(), HasSubstr("libreyolod_worker_restarts_total 1\n"));
  EXPECT_THAT(daemon->Log(), HasSubstr("1 engine worker death since start"));
  EXPECT_EQ(daemon->Terminate(seconds(60)), 0) << daemon->LogTail();
}

// Issue 23, item 4: no job holds a device forever. A worker stopped mid-job (SIGSTOP) used to
// keep its job RUNNING and the device's queue blocked for as long as anyone waited: the
// progress watchdog kills it and fails the job naming the stage; a job that keeps reporting
// past its wall-time limit (the submitter's, capped by the daemon's) is stopped there; the
// jobs queued behind both run in fresh workers.
TEST(DaemonWorkerTest, AStoppedWorkerAndAJobPastItsTimeLimitFreeTheDevice) {
  TempDir dir;
  DaemonDirs dirs(dir.path());
  ScopedFault fault("stop@measuring:2", dir.File("fault-done"));
  std::vector<std::string> flags = dirs.Flags();
  flags.insert(flags.end(), {"--progress-timeout", "10", "--max-job-seconds", "600"});
  auto daemon = DaemonProcess::Start(flags, dir.File("daemon.log"));
  ASSERT_TRUE(daemon->WaitServing()) << daemon->LogTail();
  auto stub = v1::ProfilerService::NewStub(UnixChannel(dirs.socket));
  v1::Job stopped, slow, next;
  ASSERT_TRUE(Submit(*stub, TinyInfer(1000), &stopped).ok());
  v1::SubmitJobRequest long_job = TinyInfer(9000);
  long_job.set_max_wall_seconds(4);
  ASSERT_TRUE(Submit(*stub, long_job, &slow).ok());
  EXPECT_EQ(slow.max_wall_seconds(), 4);
  ASSERT_TRUE(Submit(*stub, TinyInfer(2), &next).ok());
  EXPECT_EQ(next.max_wall_seconds(), 600) << "0 asked: the daemon's limit";

  ASSERT_TRUE(WaitTerminal(*stub, stopped.id(), &stopped));
  EXPECT_EQ(stopped.state(), v1::JOB_STATE_FAILED);
  EXPECT_EQ(stopped.exit_code(), 1);
  EXPECT_THAT(stopped.error(), HasSubstr("killed: no progress for 10 s during measuring, step 2/"));
  ASSERT_TRUE(WaitTerminal(*stub, slow.id(), &slow));
  EXPECT_EQ(slow.state(), v1::JOB_STATE_FAILED);
  EXPECT_EQ(slow.exit_code(), 2);
  EXPECT_THAT(slow.error(), HasSubstr("the job's wall-time limit of 4 s was reached during "));
  EXPECT_GE(slow.finish_time_unix_ms() - slow.start_time_unix_ms(), 3900);
  EXPECT_EQ(slow.artifacts_size(), 0);
  ASSERT_TRUE(WaitTerminal(*stub, next.id(), &next));
  EXPECT_EQ(next.state(), v1::JOB_STATE_SUCCEEDED) << next.error() << daemon->LogTail();

  v1::GetMetricsResponse metrics;
  auto mctx = Ctx();
  ASSERT_TRUE(stub->GetMetrics(mctx.get(), v1::GetMetricsRequest(), &metrics).ok());
  EXPECT_THAT(metrics.text(), HasSubstr("libreyolod_worker_restarts_total 2\n"));
  EXPECT_EQ(daemon->Terminate(seconds(60)), 0) << daemon->LogTail();
}

TEST(DaemonWorkerTest, NoWorkerOutlivesAKilledDaemon) {
  TempDir dir;
  DaemonDirs dirs(dir.path());
  std::vector<std::string> flags = dirs.Flags();
  flags.insert(flags.end(), {"--device", "cpu:1"});
  auto daemon = DaemonProcess::Start(flags, dir.File("daemon.log"));
  ASSERT_TRUE(daemon->WaitServing()) << daemon->LogTail();
  auto stub = v1::ProfilerService::NewStub(UnixChannel(dirs.socket));
  v1::Job running;
  ASSERT_TRUE(Submit(*stub, TinyInfer(1000), &running).ok());
  ASSERT_TRUE(WaitForJob(
      *stub, running.id(), [](const v1::Job& j) { return j.state() == v1::JOB_STATE_RUNNING; },
      &running, seconds(120)));
  const std::vector<pid_t> workers = WorkerPids(daemon->pid());
  ASSERT_EQ(workers.size(), 2u);
  daemon->Kill9();
  for (pid_t w : workers) {
    EXPECT_TRUE(PollUntil([&] { return Ended(w); }, seconds(10)))
        << "worker " << w << " outlived its daemon";
  }
  // The next daemon on the same directories starts (nothing holds them) and records the job
  // that was running as failed.
  daemon = DaemonProcess::Start(dirs.Flags(), dir.File("daemon2.log"));
  ASSERT_TRUE(daemon->WaitServing()) << daemon->LogTail();
  stub = v1::ProfilerService::NewStub(UnixChannel(dirs.socket));
  v1::Job j;
  ASSERT_TRUE(GetJob(*stub, running.id(), &j).ok());
  EXPECT_EQ(j.state(), v1::JOB_STATE_FAILED);
  EXPECT_EQ(daemon->Terminate(seconds(60)), 0) << daemon->LogTail();
}

TEST(DaemonWorkerTest, DaemonInfoComesFromTheWorkers) {
  TempDir dir;
  DaemonDirs dirs(dir.path());
  auto daemon = DaemonProcess::Start(dirs.Flags(), dir.File("daemon.log"));
  ASSERT_TRUE(daemon->WaitServing()) << daemon->LogTail();
  auto stub = v1::ProfilerService::NewStub(UnixChannel(dirs.socket));
  auto ctx = Ctx();
  v1::DaemonInfo info;
  ASSERT_TRUE(stub->GetDaemonInfo(ctx.get(), v1::GetDaemonInfoRequest(), &info).ok());
  EXPECT_THAT(info.libtorch_version(), ::testing::MatchesRegex("[0-9]+\\.[0-9]+.*"));
  ASSERT_EQ(info.devices_size(), 1);
  EXPECT_THAT(info.devices(0).description(), HasSubstr("cores"));
  // The engine runs in the worker executable: its command line says so.
  const std::vector<pid_t> workers = WorkerPids(daemon->pid());
  ASSERT_EQ(workers.size(), 1u);
  EXPECT_THAT(ReadFile("/proc/" + std::to_string(workers[0]) + "/cmdline"),
              HasSubstr(std::string("libreyolod-worker-test-hooks") + '\0' + "--fd"));
  EXPECT_EQ(daemon->Terminate(seconds(60)), 0) << daemon->LogTail();
}

}  // namespace
}  // namespace libreyolo::daemon_test
