// Faults through a real libreyolod: kill -9 while a job runs (three times over, on the same
// directories), a store the daemon cannot write, weights that are garbage, SIGTERM during a job.
// What must hold: a job that was running is FAILED with a reason after the restart and leaves
// nothing behind in the store; queued jobs run after the restart; finished jobs' artifacts stay
// readable with their checksums; one bad job fails alone and the daemon keeps serving; SIGTERM
// drains and exits 0 within the drain deadline.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sched.h>
#include <sys/mount.h>
#include <sys/statvfs.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "tests/daemon/daemon_process.h"

namespace libreyolo::daemon_test {
namespace {

using ::testing::HasSubstr;

// Runs long enough that it is always killed or cancelled before it ends.
v1::SubmitJobRequest LongInfer() { return TinyInfer(5000); }

// Watches `id` until an event of `stage` arrives (true), or the stream ends first (false).
bool WaitForStage(v1::ProfilerService::Stub& stub, const std::string& id,
                  const std::string& stage) {
  std::vector<v1::JobEvent> events;
  (void)Watch(stub, id, 0, &events, "", [&](const v1::JobEvent& e) { return e.stage() == stage; });
  return !events.empty() && events.back().stage() == stage;
}

// Every artifact of a finished job reads back whole with its recorded SHA-256.
void ExpectArtifactsIntact(v1::ProfilerService::Stub& stub, const v1::Job& job) {
  ASSERT_GT(job.artifacts_size(), 0) << job.id();
  for (const v1::Artifact& a : job.artifacts()) {
    const ArtifactRead r = ReadArtifact(stub, job.id(), a.name());
    ASSERT_TRUE(r.status.ok()) << job.id() << "/" << a.name() << ": " << r.status.error_message();
    EXPECT_EQ(static_cast<int64_t>(r.data.size()), a.size_bytes()) << job.id() << "/" << a.name();
    EXPECT_EQ(Sha256Hex(r.data), a.sha256()) << job.id() << "/" << a.name();
    EXPECT_EQ(r.sha256, a.sha256()) << job.id() << "/" << a.name();
  }
}

// Nothing of job `id` is left in the store: no artifact directory, no scratch directory.
void ExpectNothingStored(const DaemonDirs& dirs, const std::string& id) {
  EXPECT_FALSE(fs::exists(dirs.store + "/" + id))
      << "partial artifacts of " << id << ": "
      << ::testing::PrintToString(TreeSnapshot(dirs.store));
  EXPECT_FALSE(fs::exists(dirs.store + "/.tmp/" + id)) << "scratch of " << id << " left behind";
}

// No temp files anywhere in the store (outside running jobs' scratch) or the state directory,
// and, when `idle`, no scratch directory at all.
void ExpectNoTempFiles(const DaemonDirs& dirs, bool idle) {
  EXPECT_THAT(FilesNamed(dirs.store, ".tmp.", dirs.store + "/.tmp"), ::testing::IsEmpty());
  EXPECT_THAT(FilesNamed(dirs.state, ".tmp."), ::testing::IsEmpty());
  if (idle) {
    std::vector<std::string> scratch;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dirs.store + "/.tmp", ec)) {
      scratch.push_back(e.path().string());
    }
    EXPECT_THAT(scratch, ::testing::IsEmpty());
  }
}

TEST(DaemonFaultTest, KillNineWhileRunningThreeTimes) {
  TempDir dir;
  DaemonDirs dirs(dir.path());
  auto daemon = DaemonProcess::Start(dirs.Flags(), dir.File("daemon.0.log"));
  ASSERT_TRUE(daemon->WaitServing()) << daemon->LogTail();
  std::vector<v1::Job> finished;  // succeeded jobs of earlier cycles, as recorded then

  for (int cycle = 1; cycle <= 3; ++cycle) {
    SCOPED_TRACE("cycle " + std::to_string(cycle));
    auto stub = v1::ProfilerService::NewStub(UnixChannel(dirs.socket));
    v1::Job running, queued_infer, queued_other;
    ASSERT_TRUE(Submit(*stub, LongInfer(), &running).ok());
    ASSERT_TRUE(Submit(*stub, TinyInfer(), &queued_infer).ok());
    // One training run among the queued jobs once, infer jobs otherwise (they are quicker).
    ASSERT_TRUE(Submit(*stub, cycle == 2 ? TinyRun() : TinyInfer(), &queued_other).ok());
    ASSERT_TRUE(WaitForStage(*stub, running.id(), "measuring")) << daemon->LogTail();
    // The job is mid-run: it has a scratch directory, and the other two are still queued.
    EXPECT_TRUE(fs::is_directory(dirs.store + "/.tmp/" + running.id()));
    v1::Job j;
    ASSERT_TRUE(GetJob(*stub, queued_infer.id(), &j).ok());
    EXPECT_EQ(j.state(), v1::JOB_STATE_QUEUED);

    daemon->Kill9();
    ASSERT_FALSE(daemon->Running());
    if (cycle == 3) {
      // As if the crash had come between publishing an artifact and recording it: a file in the
      // job's artifact directory that its record does not list. Recovery must not keep it.
      fs::create_directories(dirs.store + "/" + running.id());
      WriteFile(dirs.store + "/" + running.id() + "/profile.json", "{\"partial\": true}\n", 0640);
    }

    daemon =
        DaemonProcess::Start(dirs.Flags(), dir.File("daemon." + std::to_string(cycle) + ".log"));
    ASSERT_TRUE(daemon->WaitServing()) << daemon->LogTail();
    stub = v1::ProfilerService::NewStub(UnixChannel(dirs.socket));

    // The job that was running failed, with a reason, and left nothing behind.
    ASSERT_TRUE(GetJob(*stub, running.id(), &j).ok());
    EXPECT_EQ(j.state(), v1::JOB_STATE_FAILED);
    EXPECT_THAT(j.error(), HasSubstr("libreyolod stopped while this job was running"));
    EXPECT_EQ(j.exit_code(), 1);
    EXPECT_EQ(j.artifacts_size(), 0);
    EXPECT_GT(j.finish_time_unix_ms(), 0);
    ExpectNothingStored(dirs, running.id());
    std::vector<v1::JobEvent> events;
    ASSERT_TRUE(Watch(*stub, running.id(), 0, &events).ok());
    EXPECT_EQ(Sequences(events), OneTo(j.last_sequence()));
    EXPECT_EQ(events.back().stage(), "failed");
    EXPECT_EQ(events.back().state(), v1::JOB_STATE_FAILED);
    // Readers and ReadArtifact say so too.
    const ArtifactRead none = ReadArtifact(*stub, running.id(), "profile.json");
    EXPECT_EQ(none.status.error_code(), grpc::StatusCode::NOT_FOUND);

    // The queued jobs run to completion after the restart.
    for (v1::Job* q : {&queued_infer, &queued_other}) {
      ASSERT_TRUE(WaitTerminal(*stub, q->id(), q)) << daemon->LogTail();
      EXPECT_EQ(q->state(), v1::JOB_STATE_SUCCEEDED) << q->error();
      ExpectArtifactsIntact(*stub, *q);
    }
    // Jobs finished in earlier cycles are unchanged and still readable.
    for (const v1::Job& f : finished) {
      ASSERT_TRUE(GetJob(*stub, f.id(), &j).ok()) << f.id();
      EXPECT_EQ(j.state(), v1::JOB_STATE_SUCCEEDED);
      EXPECT_EQ(j.artifacts().size(), f.artifacts().size());
      ExpectArtifactsIntact(*stub, f);
    }
    finished.push_back(queued_infer);
    finished.push_back(queued_other);
    ExpectNoTempFiles(dirs, /*idle=*/true);
  }
  EXPECT_EQ(daemon->Terminate(seconds(60)), 0) << daemon->LogTail();
}

// The store cannot take a job's artifacts: the job fails with a reason naming the problem, its
// partial outputs are discarded, and the daemon serves on (other jobs run, RPCs answer).
TEST(DaemonFaultTest, UnwritableStoreFailsTheJobAndTheDaemonServesOn) {
  TempDir dir;
  DaemonDirs dirs(dir.path());
  auto daemon = DaemonProcess::Start(dirs.Flags(), dir.File("daemon.log"));
  ASSERT_TRUE(daemon->WaitServing()) << daemon->LogTail();
  auto channel = UnixChannel(dirs.socket);
  auto stub = v1::ProfilerService::NewStub(channel);

  // Root ignores permissions, so the root-proof way: while the job waits behind another one,
  // its artifact directory's name is taken by a regular file.
  // A second job finds its directory but cannot publish its second artifact (a directory
  // holds that name): its first artifact must not stay behind, listed or not.
  v1::Job blocker, victim, half;
  ASSERT_TRUE(Submit(*stub, LongInfer(), &blocker).ok());
  ASSERT_TRUE(Submit(*stub, TinyInfer(), &victim).ok());
  ASSERT_TRUE(Submit(*stub, TinyInfer(), &half).ok());
  const std::string squatter = dirs.store + "/" + victim.id();
  WriteFile(squatter, "not a directory\n", 0600);
  fs::create_directories(dirs.store + "/" + half.id() + "/profile_trace.json");
  v1::Job j;
  for (const v1::Job* q : {&victim, &half}) {
    ASSERT_TRUE(GetJob(*stub, q->id(), &j).ok());
    ASSERT_EQ(j.state(), v1::JOB_STATE_QUEUED) << "the job started before the store was spoilt";
  }
  ASSERT_TRUE(WaitForStage(*stub, blocker.id(), "measuring"));
  {
    auto ctx = Ctx();
    v1::CancelJobRequest cancel;
    cancel.set_job_id(blocker.id());
    ASSERT_TRUE(stub->CancelJob(ctx.get(), cancel, &j).ok());
  }
  ASSERT_TRUE(WaitTerminal(*stub, victim.id(), &victim)) << daemon->LogTail();
  EXPECT_EQ(victim.state(), v1::JOB_STATE_FAILED);
  // The error names the squatter by its place in the store: this caller may not name local
  // paths (no allow_local_paths), so it is not shown the daemon's absolute paths (rpc.md).
  EXPECT_THAT(victim.error(), HasSubstr("store/" + victim.id()));
  EXPECT_THAT(victim.error(), ::testing::Not(HasSubstr(dirs.store)));
  EXPECT_THAT(victim.error(), HasSubstr("not a directory"));
  EXPECT_NE(victim.exit_code(), 0);
  EXPECT_EQ(victim.artifacts_size(), 0);
  EXPECT_FALSE(fs::exists(dirs.store + "/.tmp/" + victim.id()));
  EXPECT_EQ(ReadFile(squatter), "not a directory\n");  // never written through
  std::vector<v1::JobEvent> events;
  ASSERT_TRUE(Watch(*stub, victim.id(), 0, &events).ok());
  EXPECT_EQ(events.back().stage(), "failed");
  EXPECT_THAT(events.back().message(), HasSubstr("not a directory"));
  ASSERT_TRUE(WaitTerminal(*stub, half.id(), &half)) << daemon->LogTail();
  EXPECT_EQ(half.state(), v1::JOB_STATE_FAILED);
  EXPECT_THAT(half.error(), HasSubstr("profile_trace.json"));
  EXPECT_EQ(half.artifacts_size(), 0) << half.DebugString();
  EXPECT_FALSE(fs::exists(dirs.store + "/" + half.id() + "/profile.json"))
      << "a failed job's first artifact stayed in the store";
  EXPECT_FALSE(fs::exists(dirs.store + "/.tmp/" + half.id()));
  ASSERT_TRUE(GetJob(*stub, blocker.id(), &blocker).ok());
  EXPECT_EQ(blocker.state(), v1::JOB_STATE_CANCELLED);
  ExpectNothingStored(dirs, blocker.id());

  // Without root, the plain way as well: a store directory without write permission.
  if (::geteuid() != 0) {
    ASSERT_EQ(::chmod(dirs.store.c_str(), 0500), 0);
    v1::Job denied;
    ASSERT_TRUE(Submit(*stub, TinyInfer(), &denied).ok());
    ASSERT_TRUE(WaitTerminal(*stub, denied.id(), &denied));
    ASSERT_EQ(::chmod(dirs.store.c_str(), 0750), 0);
    EXPECT_EQ(denied.state(), v1::JOB_STATE_FAILED);
    EXPECT_THAT(denied.error(), HasSubstr("ermission denied"));
    EXPECT_EQ(denied.artifacts_size(), 0);
    EXPECT_FALSE(fs::exists(dirs.store + "/" + denied.id()));
  }

  // The daemon serves on.
  {
    auto ctx = Ctx();
    v1::DaemonInfo info;
    ASSERT_TRUE(stub->GetDaemonInfo(ctx.get(), v1::GetDaemonInfoRequest(), &info).ok());
    ASSERT_EQ(info.devices_size(), 1);
    EXPECT_TRUE(info.devices(0).running_job_id().empty());
  }
  std::string health;
  ASSERT_TRUE(HealthCheck(channel, &health).ok());
  EXPECT_EQ(health, kServing);
  v1::Job after;
  ASSERT_TRUE(Submit(*stub, TinyInfer(), &after).ok());
  ASSERT_TRUE(WaitTerminal(*stub, after.id(), &after));
  EXPECT_EQ(after.state(), v1::JOB_STATE_SUCCEEDED) << after.error();
  ExpectArtifactsIntact(*stub, after);
  ExpectNoTempFiles(dirs, /*idle=*/true);
  // Our connections closed first: libreyolod's stop waits out its 2 s gRPC shutdown deadline
  // while a client holds one open, idle or not.
  channel.reset();
  stub.reset();
  EXPECT_EQ(daemon->Terminate(seconds(60)), 0) << daemon->LogTail();
}

// On a private daemon (allow_local_paths, our own uid on its socket) a job may name its own
// weights file. A garbage one fails that job alone, with exit code 2 (the CLI's too); the jobs
// around it succeed.
TEST(DaemonFaultTest, GarbageWeightsFailOneJobWithExitCode2) {
  TempDir dir;
  DaemonDirs dirs(dir.path());
  auto daemon = DaemonProcess::Start(
      [&] {
        std::vector<std::string> f = dirs.Flags();
        f.push_back("--allow-local-paths");
        return f;
      }(),
      dir.File("daemon.log"));
  ASSERT_TRUE(daemon->WaitServing()) << daemon->LogTail();
  auto stub = v1::ProfilerService::NewStub(UnixChannel(dirs.socket));
  {
    auto ctx = Ctx();
    v1::DaemonInfo info;
    ASSERT_TRUE(stub->GetDaemonInfo(ctx.get(), v1::GetDaemonInfoRequest(), &info).ok());
    ASSERT_TRUE(info.allows_local_paths());
  }
  const std::string garbage = dir.File("garbage.pt");
  std::string bytes;
  for (int i = 0; i < 4096; ++i) bytes.push_back(static_cast<char>((i * 7919 + 13) % 251));
  WriteFile(garbage, bytes, 0644);

  v1::SubmitJobRequest bad = TinyInfer();
  bad.mutable_infer()->mutable_model()->set_weights(garbage);
  v1::Job first, broken, last;
  ASSERT_TRUE(Submit(*stub, TinyInfer(), &first).ok());
  const grpc::Status s = Submit(*stub, bad, &broken);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_TRUE(Submit(*stub, TinyInfer(), &last).ok());
  for (v1::Job* j : {&first, &broken, &last}) ASSERT_TRUE(WaitTerminal(*stub, j->id(), j));
  EXPECT_EQ(first.state(), v1::JOB_STATE_SUCCEEDED) << first.error();
  EXPECT_EQ(last.state(), v1::JOB_STATE_SUCCEEDED) << last.error();
  EXPECT_EQ(broken.state(), v1::JOB_STATE_FAILED);
  EXPECT_EQ(broken.exit_code(), 2) << broken.error();
  EXPECT_THAT(broken.error(), HasSubstr("garbage.pt"));
  EXPECT_EQ(broken.artifacts_size(), 0);
  ExpectNothingStored(dirs, broken.id());

  // The client exits with the job's code, and says why.
  std::vector<std::string> args = {
      "profile",   "infer",          "--weights", garbage,
      "--project", dir.File("proj"), "--remote",  "unix:" + dirs.socket};
  for (const std::string& f : TinyInferFlags()) args.push_back(f);
  const CommandResult cli = RunClient(args);
  EXPECT_EQ(cli.exit_code, 2) << cli.Describe();
  EXPECT_THAT(cli.err, HasSubstr("garbage.pt"));
  EXPECT_FALSE(fs::exists(dir.File("proj/infer/profile.json")));
  stub.reset();
  EXPECT_EQ(daemon->Terminate(seconds(60)), 0) << daemon->LogTail();
}

// SIGTERM while a job runs: the daemon stops answering health as SERVING, refuses new jobs,
// cancels the running job when the drain deadline passes, and exits 0 soon after. On the next
// start the job is CANCELLED with the reason, and nothing of it is stored.
TEST(DaemonFaultTest, SigtermDuringAJobDrainsAndExitsZero) {
  TempDir dir;
  DaemonDirs dirs(dir.path());
  constexpr int kDrainSeconds = 6;
  std::vector<std::string> flags = dirs.Flags();
  flags.insert(flags.end(), {"--drain-timeout", std::to_string(kDrainSeconds)});
  auto daemon = DaemonProcess::Start(flags, dir.File("daemon.log"));
  ASSERT_TRUE(daemon->WaitServing()) << daemon->LogTail();
  auto channel = UnixChannel(dirs.socket);
  auto stub = v1::ProfilerService::NewStub(channel);
  v1::Job running, queued;
  ASSERT_TRUE(Submit(*stub, LongInfer(), &running).ok());
  ASSERT_TRUE(Submit(*stub, TinyInfer(), &queued).ok());
  ASSERT_TRUE(WaitForStage(*stub, running.id(), "measuring"));

  const auto start = Clock::now();
  ASSERT_EQ(::kill(daemon->pid(), SIGTERM), 0);
  // While it drains: NOT_SERVING, and SubmitJob is UNAVAILABLE.
  std::string health;
  EXPECT_TRUE(PollUntil([&] { return HealthCheck(channel, &health).ok() && health == kNotServing; },
                        seconds(4)))
      << "health: " << ::testing::PrintToString(health);
  v1::Job refused;
  const grpc::Status submit = Submit(*stub, TinyInfer(), &refused);
  EXPECT_EQ(submit.error_code(), grpc::StatusCode::UNAVAILABLE) << submit.error_message();

  const std::optional<int> code = daemon->WaitExit(seconds(60));
  const double total = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_EQ(code, 0) << daemon->LogTail();
  // The deadline, then the next step boundary and the gRPC shutdown (2 s): well below the
  // minutes the job would have taken.
  EXPECT_LT(total, kDrainSeconds + 15) << daemon->LogTail();
  EXPECT_GE(total, kDrainSeconds - 1);
  EXPECT_THAT(daemon->Log(), HasSubstr("draining"));
  EXPECT_THAT(daemon->Log(), HasSubstr("libreyolod: stopped"));

  daemon = DaemonProcess::Start(dirs.Flags(), dir.File("daemon2.log"));
  ASSERT_TRUE(daemon->WaitServing()) << daemon->LogTail();
  stub = v1::ProfilerService::NewStub(UnixChannel(dirs.socket));
  v1::Job j;
  ASSERT_TRUE(GetJob(*stub, running.id(), &j).ok());
  EXPECT_EQ(j.state(), v1::JOB_STATE_CANCELLED);
  EXPECT_THAT(j.error(), HasSubstr("SIGTERM"));
  EXPECT_EQ(j.artifacts_size(), 0);
  ExpectNothingStored(dirs, running.id());
  // The job that was queued stayed queued on disk, and runs now.
  ASSERT_TRUE(WaitTerminal(*stub, queued.id(), &queued));
  EXPECT_EQ(queued.state(), v1::JOB_STATE_SUCCEEDED) << queued.error();
  ExpectNoTempFiles(dirs, /*idle=*/true);
  channel.reset();
  stub.reset();
  EXPECT_EQ(daemon->Terminate(seconds(60)), 0) << daemon->LogTail();
}

// SIGTERM with clients attached: the running job finishes during the drain and its client gets
// the result and the files although the daemon goes away meanwhile; a queued job's client
// sees its stream end UNAVAILABLE, waits for the restart, follows the job to its end there and
// downloads its artifacts. Both exit 0.
TEST(DaemonFaultTest, SigtermMidJobClientsResumeAfterTheRestartAndDownload) {
  TempDir dir;
  DaemonDirs dirs(dir.path());
  std::vector<std::string> flags = dirs.Flags();
  flags.insert(flags.end(), {"--drain-timeout", "120"});
  auto daemon = DaemonProcess::Start(flags, dir.File("daemon.log"));
  ASSERT_TRUE(daemon->WaitServing()) << daemon->LogTail();
  auto stub = v1::ProfilerService::NewStub(UnixChannel(dirs.socket));
  const std::string remote = "unix:" + dirs.socket;
  auto client = [&](const std::string& runs, const std::string& project, const std::string& log) {
    std::vector<std::string> argv = {LIBREYOLO_CLIENT_BINARY, "profile", "infer", "--remote",
                                     remote, "--project", project};
    for (const std::string& w :
         Words("--device cpu --imgsz 64 --warmup 1 --threads 2 --no-record-shapes "
               "--no-profile-memory --no-with-flops --runs " + runs)) {
      argv.push_back(w);
    }
    return Spawn(argv, ChildEnvironment({}), log, log);
  };
  auto jobs_in = [&](v1::JobState state) {
    auto ctx = Ctx();
    v1::ListJobsResponse list;
    if (!stub->ListJobs(ctx.get(), v1::ListJobsRequest(), &list).ok()) return -1;
    int n = 0;
    for (const v1::Job& j : list.jobs()) n += j.state() == state;
    return n;
  };
  const pid_t running = client("150", dir.File("p-running"), dir.File("running.log"));
  ASSERT_TRUE(PollUntil([&] { return jobs_in(v1::JOB_STATE_RUNNING) == 1; }, seconds(120)));
  const pid_t queued = client("2", dir.File("p-queued"), dir.File("queued.log"));
  ASSERT_TRUE(PollUntil([&] { return jobs_in(v1::JOB_STATE_QUEUED) == 1; }, seconds(60)));

  ASSERT_EQ(::kill(daemon->pid(), SIGTERM), 0);
  EXPECT_EQ(daemon->WaitExit(seconds(180)), 0) << daemon->LogTail();
  std::this_thread::sleep_for(seconds(2));  // clients find nobody there for a while
  daemon = DaemonProcess::Start(flags, dir.File("daemon2.log"));
  ASSERT_TRUE(daemon->WaitServing()) << daemon->LogTail();

  EXPECT_EQ(WaitChild(running, seconds(240)), 0) << ReadFile(dir.File("running.log"));
  EXPECT_EQ(WaitChild(queued, seconds(240)), 0) << ReadFile(dir.File("queued.log"));
  for (const char* name : {"running", "queued"}) {
    const std::string project = dir.File(std::string("p-") + name);
    EXPECT_TRUE(fs::exists(project + "/infer/profile.json"))
        << ReadFile(dir.File(std::string(name) + ".log"))
        << ::testing::PrintToString(TreeSnapshot(dir.path()));
    EXPECT_TRUE(fs::exists(project + "/infer/profile_trace.json")) << project;
  }
  stub.reset();
  EXPECT_EQ(daemon->Terminate(seconds(60)), 0) << daemon->LogTail();
}

// Fills the filesystem holding `dir` with a filler file, leaving about `leave` bytes free.
void FillFilesystem(const std::string& dir, int64_t leave) {
  const std::string path = dir + "/zz-filler";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  const std::string chunk(4096, 'f');
  for (;;) {
    struct statvfs fs_info {};
    ASSERT_EQ(::statvfs(dir.c_str(), &fs_info), 0);
    if (static_cast<int64_t>(fs_info.f_bavail * fs_info.f_frsize) <= leave) break;
    if (::write(fd, chunk.data(), chunk.size()) <= 0) break;
  }
  ::close(fd);
}

// A real full filesystem: tmpfs mounts the test makes in a private mount namespace (when it may;
// JobManagerTest.AJobThatCannotBeMadeDurableIsRefusedAndLeavesNothing injects the failure
// without privileges). A full state filesystem refuses jobs with RESOURCE_EXHAUSTED and keeps
// nothing; a full store fails the job with the reason and keeps no partial artifact.
TEST(DaemonFaultTest, AFullStateFilesystemRefusesJobsAndAFullStoreFailsThem) {
  if (::unshare(CLONE_NEWNS) != 0 || ::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr)) {
    GTEST_SKIP() << "cannot mount a tmpfs here (" << std::strerror(errno)
                 << "); JobManagerTest injects the write failure instead";
  }
  TempDir dir;
  DaemonDirs dirs(dir.path());
  for (const std::string& d : {dirs.state, dirs.store}) {
    fs::create_directories(d);
    ASSERT_EQ(::mount("tmpfs", d.c_str(), "tmpfs", 0, "size=2m,mode=0700"), 0) << d;
  }
  struct Unmount {
    std::vector<std::string> dirs;
    ~Unmount() {
      for (const std::string& d : dirs) ::umount2(d.c_str(), MNT_DETACH);
    }
  } unmount{{dirs.state, dirs.store}};
  auto daemon = DaemonProcess::Start(dirs.Flags(), dir.File("daemon.log"));
  ASSERT_TRUE(daemon->WaitServing()) << daemon->LogTail();
  auto stub = v1::ProfilerService::NewStub(UnixChannel(dirs.socket));

  FillFilesystem(dirs.state, 0);
  v1::Job job;
  grpc::Status s = Submit(*stub, TinyInfer(), &job);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("state filesystem is full"));
  EXPECT_THAT(s.error_message(), HasSubstr("No space left on device"));
  ExpectNoTempFiles(dirs, /*idle=*/true);
  stub.reset();
  EXPECT_EQ(daemon->Terminate(seconds(60)), 0) << daemon->LogTail();
  fs::remove(dirs.state + "/zz-filler");
  daemon = DaemonProcess::Start(dirs.Flags(), dir.File("daemon2.log"));
  ASSERT_TRUE(daemon->WaitServing()) << daemon->LogTail();
  stub = v1::ProfilerService::NewStub(UnixChannel(dirs.socket));
  {
    auto ctx = Ctx();
    v1::ListJobsResponse list;
    ASSERT_TRUE(stub->ListJobs(ctx.get(), v1::ListJobsRequest(), &list).ok());
    EXPECT_EQ(list.jobs_size(), 0) << "a refused job came back after the restart";
  }

  // The store full: the job is accepted (its record fits) and fails with the reason.
  FillFilesystem(dirs.store, 16 << 10);
  ASSERT_TRUE(Submit(*stub, TinyInfer(), &job).ok());
  ASSERT_TRUE(WaitTerminal(*stub, job.id(), &job));
  EXPECT_EQ(job.state(), v1::JOB_STATE_FAILED);
  EXPECT_THAT(job.error(), HasSubstr("No space left on device"));
  ExpectNothingStored(dirs, job.id());
  fs::remove(dirs.store + "/zz-filler");
  ASSERT_TRUE(Submit(*stub, TinyInfer(), &job).ok());
  ASSERT_TRUE(WaitTerminal(*stub, job.id(), &job));
  EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.error();
  stub.reset();
  EXPECT_EQ(daemon->Terminate(seconds(60)), 0) << daemon->LogTail();
}

}  // namespace
}  // namespace libreyolo::daemon_test
