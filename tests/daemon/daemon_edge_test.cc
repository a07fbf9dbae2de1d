// Issue 23, items 7-9, through a real libreyolod: a reader RPC's error echoes a hostile value
// as the one short escaped excerpt; SIGUSR1, SIGUSR2, SIGALRM and a real-time signal are logged
// and ignored (they used to end the daemon silently); start-up refuses an admin that is not a
// user name, a metrics textfile in a missing folder and 200,000 listen entries with exit 2
// (the last used to exit 1, "Too many open files").
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/daemon/daemon_process.h"

namespace libreyolo::daemon_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr int kExitConfig = 2;

CommandResult RunDaemon(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {LIBREYOLOD_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, {}, seconds(60));
}

TEST(DaemonEdgeTest, StartUpRefusesBadAdminsAMissingMetricsFolderAndTooManyListens) {
  TempDir dir;
  DaemonDirs dirs(dir.path());
  std::string many = "listen:\n";
  for (int i = 0; i < 200000; ++i) many += "  - unix:" + dir.File("s" + std::to_string(i)) + "\n";
  WriteFile(dir.File("many.yaml"), many);
  const std::string missing = dir.File("no-such-folder") + "/libreyolod.prom";
  struct Case {
    std::vector<std::string> extra;
    std::vector<std::string> expect;
  };
  const std::vector<Case> cases = {
      {{"--admin", "bad user"}, {"admins: 'bad user' is not a user name"}},
      {{"--metrics-textfile", missing}, {missing, "does not exist", "--metrics-textfile"}},
      {{"--config", dir.File("many.yaml")}, {"listen: 200000 addresses; at most 64"}},
  };
  for (const Case& c : cases) {
    // The listen entries of the file win only without --listen: drop the dirs' one for it.
    std::vector<std::string> args =
        c.extra[0] == "--config"
            ? std::vector<std::string>{"--state-dir", dirs.state, "--store-dir", dirs.store}
            : dirs.Flags();
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    const CommandResult r = RunDaemon(args);
    EXPECT_EQ(r.exit_code, kExitConfig) << c.extra[0] << ": " << r.Describe();
    for (const std::string& e : c.expect) EXPECT_THAT(r.err, HasSubstr(e)) << c.extra[0];
    EXPECT_LT(r.err.size(), 4096u) << c.extra[0];
    EXPECT_THAT(r.err, Not(HasSubstr("serving"))) << c.extra[0];
  }
}

TEST(DaemonEdgeTest, SignalsThatUsedToEndTheDaemonSilentlyAreLoggedAndIgnored) {
  TempDir dir;
  DaemonDirs dirs(dir.path());
  auto daemon = DaemonProcess::Start(dirs.Flags(), dir.File("daemon.log"));
  ASSERT_TRUE(daemon->WaitServing()) << daemon->LogTail();
  const std::vector<std::pair<int, std::string>> sent = {{SIGUSR1, "SIGUSR1"},
                                                         {SIGUSR2, "SIGUSR2"},
                                                         {SIGALRM, "SIGALRM"},
                                                         {SIGRTMIN + 5, "SIGRTMIN+5"},
                                                         {SIGPIPE, ""}};
  for (const auto& [sig, name] : sent) {
    ASSERT_EQ(::kill(daemon->pid(), sig), 0);
    if (name.empty()) continue;
    EXPECT_TRUE(PollUntil(
        [&] { return daemon->Log().find(name + " ignored") != std::string::npos; }, seconds(20)))
        << name << "\n"
        << daemon->LogTail();
  }
  EXPECT_TRUE(daemon->Running());
  std::string health;
  EXPECT_TRUE(HealthCheck(UnixChannel(dirs.socket), &health).ok() && health == kServing);
  EXPECT_EQ(daemon->Terminate(seconds(60)), 0) << daemon->LogTail();
}

TEST(DaemonEdgeTest, AReaderRpcEchoesAHostileValueAsAShortExcerpt) {
  TempDir dir;
  DaemonDirs dirs(dir.path());
  auto daemon = DaemonProcess::Start(dirs.Flags(), dir.File("daemon.log"));
  ASSERT_TRUE(daemon->WaitServing()) << daemon->LogTail();
  auto stub = v1::ProfilerService::NewStub(UnixChannel(dirs.socket));
  v1::Job job;
  ASSERT_TRUE(Submit(*stub, TinyInfer(), &job).ok());
  ASSERT_TRUE(WaitTerminal(*stub, job.id(), &job));
  ASSERT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.error();
  // Under each field's bound (64 bytes for phase and sort, 256 for grep and field), with ESC
  // and BEL: the message holds no control byte and not the value whole.
  const std::string short_value = "\x1b]0;x\x07" + std::string(56, 'A');
  const std::string long_value = "\x1b]0;x\x07" + std::string(240, 'A');
  auto check = [&](const grpc::Status& s, const std::string& what) {
    EXPECT_FALSE(s.ok()) << what;
    const std::string& m = s.error_message();
    for (char c : m) {
      EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20) << what << ": " << m;
    }
    EXPECT_THAT(m, HasSubstr("\\x1b]0;x\\x07")) << what;
    EXPECT_LT(m.size(), 349u) << what << ": " << m;
  };
  {
    v1::KernelsRequest r;
    r.mutable_profile()->set_job_id(job.id());
    r.set_phase(short_value);
    v1::ReaderResponse resp;
    auto ctx = Ctx();
    check(stub->Kernels(ctx.get(), r, &resp), "Kernels.phase");
  }
  {
    v1::KernelsRequest r;
    r.mutable_profile()->set_job_id(job.id());
    r.set_grep("(" + long_value);  // unbalanced: not a regular expression
    v1::ReaderResponse resp;
    auto ctx = Ctx();
    check(stub->Kernels(ctx.get(), r, &resp), "Kernels.grep");
  }
  {
    v1::OpsRequest r;
    r.mutable_profile()->set_job_id(job.id());
    r.set_sort(short_value);
    v1::ReaderResponse resp;
    auto ctx = Ctx();
    check(stub->Ops(ctx.get(), r, &resp), "Ops.sort");
  }
  {
    v1::GetRequest r;
    r.mutable_profile()->set_job_id(job.id());
    r.set_field(long_value);
    v1::ReaderResponse resp;
    auto ctx = Ctx();
    check(stub->Get(ctx.get(), r, &resp), "Get.field");
  }
  {
    v1::WhatIfRequest r;
    r.mutable_profile()->set_job_id(job.id());
    r.set_remove_category(short_value);
    v1::ReaderResponse resp;
    auto ctx = Ctx();
    check(stub->WhatIf(ctx.get(), r, &resp), "WhatIf.remove_category");
  }
  EXPECT_EQ(daemon->Terminate(seconds(60)), 0) << daemon->LogTail();
}

// Issue 40 A.7: a config or tokens file replaced by a FIFO (any open that blocks) and SIGHUP
// used to wedge the signal thread, so that SIGTERM 30 s later had not started a drain; at
// start-up the same FIFO hung the daemon. The reload now refuses the FIFO at once, runs off the
// signal thread, and SIGTERM drains within seconds; start-up refuses it, naming the file.
TEST(DaemonEdgeTest, AFifoInPlaceOfTheTokensOrConfigFileNeitherHangsNorWedgesSigterm) {
  TempDir dir;
  DaemonDirs dirs(dir.path());
  const std::string tokens = dir.File("tokens");
  const std::string config = dir.File("libreyolod.yaml");
  WriteFile(tokens, "edge-fifo-token-0123456789abcdef alice\n");
  ASSERT_EQ(::chmod(tokens.c_str(), 0600), 0);
  WriteFile(config, "drain_timeout_s: 30\n");
  std::vector<std::string> args = dirs.Flags();
  args.insert(args.end(), {"--tokens-file", tokens, "--config", config});
  auto daemon = DaemonProcess::Start(args, dir.File("daemon.log"));
  ASSERT_TRUE(daemon->WaitServing()) << daemon->LogTail();
  for (const std::string& file : {tokens, config}) {
    const std::string kept = file + ".kept";
    ASSERT_EQ(::rename(file.c_str(), kept.c_str()), 0);
    ASSERT_EQ(::mkfifo(file.c_str(), 0600), 0);
    ASSERT_EQ(::kill(daemon->pid(), SIGHUP), 0);
    EXPECT_TRUE(PollUntil(
        [&] {
          const std::string log = daemon->Log();
          return log.find("reload failed") != std::string::npos &&
                 log.find(file + " is not a regular file (a FIFO)") != std::string::npos;
        },
        seconds(20)))
        << file << "\n"
        << daemon->LogTail();
    ::unlink(file.c_str());
    ASSERT_EQ(::rename(kept.c_str(), file.c_str()), 0);
  }
  // The FIFO again, SIGHUP, and SIGTERM at once: the drain starts and the daemon exits.
  const std::string kept = tokens + ".kept";
  ASSERT_EQ(::rename(tokens.c_str(), kept.c_str()), 0);
  ASSERT_EQ(::mkfifo(tokens.c_str(), 0600), 0);
  ASSERT_EQ(::kill(daemon->pid(), SIGHUP), 0);
  double elapsed = 0;
  EXPECT_EQ(daemon->Terminate(seconds(20), &elapsed), 0) << daemon->LogTail();
  EXPECT_LT(elapsed, 10.0) << daemon->LogTail();
  EXPECT_THAT(daemon->Log(), HasSubstr("SIGTERM: draining"));
  // At start-up: refused with the file's name (exit 2), within seconds.
  for (const char* flag : {"--tokens-file", "--config"}) {
    std::vector<std::string> start = dirs.Flags();
    start.insert(start.end(), {flag, tokens});
    const auto t0 = std::chrono::steady_clock::now();
    const CommandResult r = RunDaemon(start);
    EXPECT_EQ(r.exit_code, kExitConfig) << flag << ": " << r.Describe();
    EXPECT_THAT(r.err, HasSubstr(tokens + " is not a regular file (a FIFO)")) << flag;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20)) << flag;
  }
  ::unlink(tokens.c_str());
}

}  // namespace
}  // namespace libreyolo::daemon_test
