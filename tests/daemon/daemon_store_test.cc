// The store through a real libreyolod (issue 23, items 1 and 6): state and store on one small
// tmpfs the test mounts (a private mount namespace; skipped with the reason where mounting is
// refused: JobManager/JobStore fault tests inject the same failures without privileges),
// nearly full at several free-space edges: a job that finished is never run again after a
// restart and its artifacts never change; a bit-flipped artifact is refused (DATA_LOSS, a
// metric, a job event) and `libreyolod scrub` finds it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sched.h>
#include <sys/mount.h>
#include <sys/statvfs.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/daemon/daemon_process.h"

namespace libreyolo::daemon_test {
namespace {

using ::testing::HasSubstr;

// Fills the filesystem holding `dir`, leaving about `leave` bytes free.
void Fill(const std::string& dir, int64_t leave) {
  const std::string path = dir + "/zz-filler";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  const std::string chunk(1024, 'f');
  for (;;) {
    struct statvfs info {};
    ASSERT_EQ(::statvfs(dir.c_str(), &info), 0);
    if (static_cast<int64_t>(info.f_bavail * info.f_frsize) <= leave) break;
    if (::write(fd, chunk.data(), chunk.size()) <= 0) break;
  }
  ::close(fd);
}

// How many times the job's event log says it started.
int Starts(const DaemonDirs& dirs, const std::string& id) {
  std::ifstream in(dirs.state + "/events/" + id + ".jsonl");
  std::string line;
  int n = 0;
  while (std::getline(in, line)) n += line.find("\"stage\":\"starting\"") != std::string::npos;
  return n;
}

bool MountPrivateTmpfs(const std::string& dir, const std::string& size, std::string* why) {
  if (::unshare(CLONE_NEWNS) != 0 || ::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr)) {
    *why = std::strerror(errno);
    return false;
  }
  fs::create_directories(dir);
  if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, ("size=" + size + ",mode=0700").c_str()) != 0) {
    *why = std::strerror(errno);
    return false;
  }
  return true;
}

TEST(DaemonStoreTest, ANearlyFullStateFilesystemNeverRunsAFinishedJobAgain) {
  TempDir dir;
  for (const int64_t leave : {int64_t{0}, int64_t{1024}, int64_t{4096}, int64_t{6144},
                             int64_t{8192}, int64_t{12288}, int64_t{16384}, int64_t{32768}}) {
    SCOPED_TRACE(testing::Message() << leave << " bytes free");
    const std::string root = dir.path() + "/fs" + std::to_string(leave);
    std::string why;
    if (!MountPrivateTmpfs(root, "8m", &why)) {
      GTEST_SKIP() << "cannot mount a tmpfs here (" << why
                   << "); job_manager_durability_test injects the failures instead";
    }
    struct Unmount {
      std::string d;
      ~Unmount() { ::umount2(d.c_str(), MNT_DETACH); }
    } unmount{root};
    DaemonDirs dirs(root);
    auto daemon = DaemonProcess::Start(dirs.Flags(), dir.File("d" + std::to_string(leave) + ".log"));
    ASSERT_TRUE(daemon->WaitServing()) << daemon->LogTail();
    auto channel = UnixChannel(dirs.socket);
    auto stub = v1::ProfilerService::NewStub(channel);
    Fill(root, leave);
    v1::Job job;
    const grpc::Status submitted = Submit(*stub, TinyInfer(), &job);
    v1::Job reported;
    if (submitted.ok()) {
      // Finished, or held back with the daemon out of service.
      (void)WaitForJob(
          *stub, job.id(),
          [&](const v1::Job& j) {
            std::string health;
            return Terminal(j.state()) ||
                   (HealthCheck(channel, &health).ok() && health == kNotServing);
          },
          &reported, seconds(120));
      if (!Terminal(reported.state())) {
        // Out of service says so: health, metrics, refusal of new work.
        std::string health;
        ASSERT_TRUE(HealthCheck(channel, &health).ok());
        EXPECT_EQ(health, kNotServing);
        v1::Job other;
        const grpc::Status refused = Submit(*stub, TinyInfer(), &other);
        EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE) << refused.error_message();
        auto ctx = Ctx();
        v1::GetMetricsResponse metrics;
        ASSERT_TRUE(stub->GetMetrics(ctx.get(), v1::GetMetricsRequest(), &metrics).ok());
        EXPECT_THAT(metrics.text(), HasSubstr("libreyolod_store_ok 0"));
      }
    } else {
      EXPECT_THAT(submitted.error_code(), testing::AnyOf(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                                         grpc::StatusCode::UNAVAILABLE))
          << submitted.error_message();
    }
    // Our connection closed first: the daemon's stop waits out its 2 s gRPC shutdown deadline
    // while a client holds one open, idle or not (16 stops here).
    stub.reset();
    channel.reset();
    EXPECT_EQ(daemon->Terminate(seconds(60)), 0) << daemon->LogTail();
    fs::remove(root + "/zz-filler");

    daemon = DaemonProcess::Start(dirs.Flags(), dir.File("r" + std::to_string(leave) + ".log"));
    ASSERT_TRUE(daemon->WaitServing()) << daemon->LogTail();
    stub = v1::ProfilerService::NewStub(UnixChannel(dirs.socket));
    if (!submitted.ok()) {
      // A refused submission stored nothing (it has no id): no job after the restart.
      auto ctx = Ctx();
      v1::ListJobsResponse list;
      ASSERT_TRUE(stub->ListJobs(ctx.get(), v1::ListJobsRequest(), &list).ok());
      EXPECT_EQ(list.jobs_size(), 0);
    } else {
      v1::Job after;
      ASSERT_TRUE(WaitTerminal(*stub, job.id(), &after)) << daemon->LogTail();
      EXPECT_LE(Starts(dirs, job.id()), 1) << "the job ran again after the restart";
      if (Terminal(reported.state())) {
        EXPECT_EQ(after.state(), reported.state()) << after.error();
      }
      if (reported.state() == v1::JOB_STATE_SUCCEEDED) {
        ASSERT_EQ(after.artifacts_size(), reported.artifacts_size());
        for (int i = 0; i < after.artifacts_size(); ++i) {
          EXPECT_EQ(after.artifacts(i).sha256(), reported.artifacts(i).sha256());
          const ArtifactRead r = ReadArtifact(*stub, job.id(), after.artifacts(i).name());
          EXPECT_TRUE(r.status.ok()) << r.status.error_message();
          EXPECT_EQ(Sha256Hex(r.data), reported.artifacts(i).sha256());
        }
      }
    }
    stub.reset();
    EXPECT_EQ(daemon->Terminate(seconds(60)), 0) << daemon->LogTail();
  }
}

TEST(DaemonStoreTest, ABitFlippedArtifactIsRefusedAndScrubFindsIt) {
  TempDir dir;
  DaemonDirs dirs(dir.path());
  auto daemon = DaemonProcess::Start(dirs.Flags(), dir.File("daemon.log"));
  ASSERT_TRUE(daemon->WaitServing()) << daemon->LogTail();
  auto stub = v1::ProfilerService::NewStub(UnixChannel(dirs.socket));
  v1::Job job;
  ASSERT_TRUE(Submit(*stub, TinyInfer(), &job).ok());
  ASSERT_TRUE(WaitTerminal(*stub, job.id(), &job));
  ASSERT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.error();
  ASSERT_GT(job.artifacts_size(), 0);
  const v1::Artifact& a = job.artifacts(0);
  ASSERT_TRUE(ReadArtifact(*stub, job.id(), a.name()).status.ok());  // intact: served
  const CommandResult clean =
      RunCommand({LIBREYOLOD_BINARY, "scrub", "--state-dir", dirs.state, "--store-dir", dirs.store});
  EXPECT_EQ(clean.exit_code, 0) << clean.Describe();

  // One bit flipped in place, its size unchanged.
  const std::string path = dirs.store + "/" + job.id() + "/" + a.name();
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f.good()) << path;
    f.seekg(a.size_bytes() / 2);
    char c = 0;
    f.get(c);
    f.seekp(a.size_bytes() / 2);
    f.put(static_cast<char>(c ^ 0x01));
  }
  const ArtifactRead r = ReadArtifact(*stub, job.id(), a.name());
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::DATA_LOSS) << r.status.error_message();
  EXPECT_THAT(r.status.error_message(), HasSubstr("corrupt"));
  auto ctx = Ctx();
  v1::GetMetricsResponse metrics;
  ASSERT_TRUE(stub->GetMetrics(ctx.get(), v1::GetMetricsRequest(), &metrics).ok());
  EXPECT_THAT(metrics.text(), HasSubstr("libreyolod_artifacts_corrupt_total 1"));
  std::vector<v1::JobEvent> events;
  ASSERT_TRUE(Watch(*stub, job.id(), 0, &events).ok());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().stage(), "corrupt");
  EXPECT_THAT(daemon->LogTail(), HasSubstr("corrupt"));

  const CommandResult scrub =
      RunCommand({LIBREYOLOD_BINARY, "scrub", "--state-dir", dirs.state, "--store-dir", dirs.store});
  EXPECT_EQ(scrub.exit_code, 1) << scrub.Describe();
  EXPECT_THAT(scrub.out, HasSubstr(job.id() + "/" + a.name() + ": corrupt"));
  EXPECT_EQ(daemon->Terminate(seconds(60)), 0) << daemon->LogTail();
}

}  // namespace
}  // namespace libreyolo::daemon_test
