// Start-up, configuration and signals through a real libreyolod (issue 9, items 1-6): every
// start-up error is a message and a documented exit code (2: configuration, 3: in use), never a
// signal; a taken TCP port or a state dir held by another daemon fails the start; SIGHUP reloads
// the tokens file and limits without dropping jobs or streams, and a failed reload keeps the
// running settings; the process keeps its name after its OMP re-exec.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <string>
#include <thread>
#include <vector>

#include "tests/daemon/daemon_process.h"

namespace libreyolo::daemon_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr int kExitConfig = 2;
constexpr int kExitInUse = 3;

CommandResult RunDaemon(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {LIBREYOLOD_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, {}, seconds(60));
}

grpc::Status DaemonInfo(const std::shared_ptr<grpc::Channel>& channel, const std::string& token,
                        v1::DaemonInfo* info) {
  auto stub = v1::ProfilerService::NewStub(channel);
  auto ctx = Ctx(token, seconds(10));
  return stub->GetDaemonInfo(ctx.get(), v1::GetDaemonInfoRequest(), info);
}

grpc::Status ListJobs(const std::shared_ptr<grpc::Channel>& channel, const std::string& token) {
  auto stub = v1::ProfilerService::NewStub(channel);
  auto ctx = Ctx(token, seconds(10));
  v1::ListJobsResponse resp;
  return stub->ListJobs(ctx.get(), v1::ListJobsRequest(), &resp);
}

TEST(DaemonStartupTest, ConfigMistakesExitTwoWithAMessageNeverASignal) {
  TempDir dir;
  DaemonDirs dirs(dir.path());
  WriteFile(dir.File("regular"), "x");
  WriteFile(dir.File("bad-tokens"), "only-a-token-and-no-user\n");
  WriteFile(dir.File("tokens"), "t0k3n-0123456789abcdef alice\n");
  WriteFile(dir.File("unknown.yaml"), "limits:\n  max_bath: 3\n");
  // Issue 40 A.10: a guessable plaintext token; a tokens file another user could rewrite.
  WriteFile(dir.File("short-tokens"),
            "# ok\nsha256:" + std::string(64, 'a') + " bob\nt0k3n alice\n");
  WriteFile(dir.File("foreign-tokens"), "t0k3n-0123456789abcdef alice\n");
  const bool as_root = ::geteuid() == 0;
  if (as_root) {
    ASSERT_EQ(::chown(dir.File("foreign-tokens").c_str(), 65534, 65534), 0);
  }
  struct Case {
    std::string name;
    std::vector<std::string> extra;
    mode_t tokens_mode;
    std::string expect;
  };
  const std::string tcp = "tcp:127.0.0.1:0";
  const std::vector<Case> cases = {
      {"tokens file mode 0644", {"--tokens-file", dir.File("tokens")}, 0644, "chmod 600"},
      {"tokens file mode 0640", {"--tokens-file", dir.File("tokens")}, 0640, "chmod 600"},
      {"missing tokens file", {"--tokens-file", dir.File("nope")}, 0600, "not found"},
      {"malformed tokens file", {"--tokens-file", dir.File("bad-tokens")}, 0600,
       "expected '<token> <user> [admin]'"},
      {"state dir under a regular file", {"--state-dir", dir.File("regular") + "/state"}, 0600,
       "state directory"},
      {"store dir under a regular file", {"--store-dir", dir.File("regular") + "/store"}, 0600,
       "store directory"},
      {"unknown config key", {"--config", dir.File("unknown.yaml")}, 0600, "max_bath"},
      {"negative limit", {"--max-watchers", "-1"}, 0600, "limits.max_watchers"},
      {"limit beyond int32", {"--max-queue-length", "9223372036854775807"}, 0600, "out of range"},
      {"TCP without TLS or --insecure-tcp", {"--listen", tcp}, 0600, "insecure-tcp"},
      {"TLS key missing", {"--tls-cert", dir.File("nope.pem")}, 0600, "nope.pem"},
      {"worker executable missing", {"--worker-binary", dir.File("no-worker")}, 0600,
       "worker_binary " + dir.File("no-worker") + " is not an executable file"},
      {"worker executable not executable", {"--worker-binary", dir.File("regular")}, 0600,
       "point it at libreyolod-worker"},
      {"plaintext token of 5 bytes", {"--tokens-file", dir.File("short-tokens")}, 0600,
       "short-tokens line 3: a plaintext token of 5 bytes can be guessed"},
  };
  std::vector<Case> all = cases;
  if (as_root) {  // only root can give a file away
    all.push_back({"tokens file owned by uid 65534",
                   {"--tokens-file", dir.File("foreign-tokens")},
                   0600,
                   "is owned by uid 65534"});
  }
  for (const Case& c : all) {
    ASSERT_EQ(::chmod(dir.File("tokens").c_str(), c.tokens_mode), 0);
    std::vector<std::string> args = dirs.Flags();
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    const CommandResult r = RunDaemon(args);
    EXPECT_EQ(r.exit_code, kExitConfig) << c.name << ": " << r.Describe();
    EXPECT_THAT(r.err, HasSubstr("libreyolod: error: ")) << c.name;
    EXPECT_THAT(r.err, HasSubstr(c.expect)) << c.name << ": " << r.err;
    EXPECT_THAT(r.err, Not(HasSubstr("serving"))) << c.name;
  }
}

TEST(DaemonStartupTest, ATakenTcpPortFailsTheStart) {
  TempDir dir;
  WriteFile(dir.File("tokens"), "t0k3n-0123456789abcdef alice\n");
  DaemonDirs first(dir.path() + "/a");
  DaemonDirs second(dir.path() + "/b");
  auto tcp_flags = [&](const DaemonDirs& d, const std::string& listen) {
    std::vector<std::string> f = d.Flags({"unix:" + d.socket, listen});
    f.insert(f.end(), {"--insecure-tcp", "--tokens-file", dir.File("tokens")});
    return f;
  };
  auto daemon = DaemonProcess::Start(tcp_flags(first, "tcp:127.0.0.1:0"), dir.File("a.log"));
  ASSERT_TRUE(daemon->WaitServing()) << daemon->LogTail();
  const std::string port = std::to_string(daemon->tcp_port());
  // A second daemon on the same port (gRPC's SO_REUSEPORT would have let it "serve").
  const CommandResult r = RunDaemon(tcp_flags(second, "tcp:127.0.0.1:" + port));
  EXPECT_EQ(r.exit_code, kExitInUse) << r.Describe();
  EXPECT_THAT(r.err, HasSubstr("address already in use"));
  EXPECT_THAT(r.err, HasSubstr(port));
  // Every call still reaches the first daemon.
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(ListJobs(TcpChannel("127.0.0.1:" + port), "t0k3n-0123456789abcdef").ok());
  }
  EXPECT_EQ(daemon->Terminate(seconds(60)), 0) << daemon->LogTail();

  // A port some other program holds.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const std::string held = std::to_string(ntohs(address.sin_port));
  const CommandResult other = RunDaemon(tcp_flags(second, "tcp:127.0.0.1:" + held));
  ::close(fd);
  EXPECT_EQ(other.exit_code, kExitInUse) << other.Describe();
  EXPECT_THAT(other.err, HasSubstr("127.0.0.1:" + held));
}

TEST(DaemonStartupTest, ASecondDaemonOnTheSameStateDirRefusesAndTouchesNothing) {
  TempDir dir;
  DaemonDirs dirs(dir.path());
  auto daemon = DaemonProcess::Start(dirs.Flags(), dir.File("first.log"));
  ASSERT_TRUE(daemon->WaitServing()) << daemon->LogTail();
  auto stub = v1::ProfilerService::NewStub(UnixChannel(dirs.socket));
  v1::Job running;
  ASSERT_TRUE(Submit(*stub, TinyInfer(5000), &running).ok());
  ASSERT_TRUE(WaitForJob(
      *stub, running.id(), [](const v1::Job& j) { return j.state() == v1::JOB_STATE_RUNNING; },
      &running));
  // The running job's scratch directory: what a recovering daemon would remove. (The job
  // writes into it while it runs, so only its presence is compared, not the tree under it.)
  const std::string scratch = dirs.store + "/.tmp/" + running.id();
  ASSERT_TRUE(PollUntil([&] { return fs::is_directory(scratch); }, seconds(60)))
      << ::testing::PrintToString(TreeSnapshot(dirs.store));

  // Same directories, another socket: it must not recover (fail) the running job.
  std::vector<std::string> flags = dirs.Flags({"unix:" + dir.File("second.sock")});
  const CommandResult r = RunDaemon(flags);
  EXPECT_EQ(r.exit_code, kExitInUse) << r.Describe();
  EXPECT_THAT(r.err, HasSubstr("in use by another libreyolod (pid " +
                               std::to_string(daemon->pid()) + ")"));
  v1::Job now;
  ASSERT_TRUE(GetJob(*stub, running.id(), &now).ok());
  EXPECT_EQ(now.state(), v1::JOB_STATE_RUNNING) << now.error();
  EXPECT_TRUE(fs::is_directory(scratch)) << "the second daemon removed the running job's scratch";
  // Only the store dir shared: refused as well.
  DaemonDirs other(dir.path() + "/other");
  std::vector<std::string> store_only = other.Flags();
  store_only.insert(store_only.end(), {"--store-dir", dirs.store});
  const CommandResult s = RunDaemon(store_only);
  EXPECT_EQ(s.exit_code, kExitInUse) << s.Describe();
  EXPECT_THAT(s.err, HasSubstr("store_dir"));

  // Once the first one is gone (even by kill -9), the lock is free.
  daemon->Kill9();
  auto next = DaemonProcess::Start(flags, dir.File("second.log"));
  ASSERT_TRUE(next->WaitServing()) << next->LogTail();
  EXPECT_EQ(next->Terminate(seconds(60)), 0) << next->LogTail();
}

TEST(DaemonStartupTest, SighupReloadsTokensAndLimitsAndKeepsJobsAndStreams) {
  TempDir dir;
  DaemonDirs dirs(dir.path());
  WriteFile(dir.File("tokens"), "old-token-0123456789 alice\n");
  WriteFile(dir.File("d.yaml"), "limits:\n  max_queue_length: 5\n");
  std::vector<std::string> flags = dirs.Flags({"unix:" + dirs.socket, "tcp:127.0.0.1:0"});
  flags.insert(flags.end(), {"--insecure-tcp", "--tokens-file", dir.File("tokens"), "--config",
                             dir.File("d.yaml")});
  auto daemon = DaemonProcess::Start(flags, dir.File("daemon.log"));
  ASSERT_TRUE(daemon->WaitServing()) << daemon->LogTail();
  auto tcp = TcpChannel("127.0.0.1:" + std::to_string(daemon->tcp_port()));
  ASSERT_TRUE(ListJobs(tcp, "old-token-0123456789").ok());
  v1::DaemonInfo info;
  ASSERT_TRUE(DaemonInfo(tcp, "old-token-0123456789", &info).ok());
  EXPECT_EQ(info.max_queue_length(), 5);

  // A job runs and a stream watches it across the reloads.
  auto stub = v1::ProfilerService::NewStub(UnixChannel(dirs.socket));
  v1::Job job;
  ASSERT_TRUE(Submit(*stub, TinyInfer(40), &job).ok());
  std::vector<v1::JobEvent> events;
  grpc::Status watched;
  std::thread watcher([&] { watched = Watch(*stub, job.id(), 0, &events); });

  WriteFile(dir.File("tokens"), "new-token-0123456789 alice\n");
  WriteFile(dir.File("d.yaml"), "limits:\n  max_queue_length: 7\n");
  ASSERT_EQ(::kill(daemon->pid(), SIGHUP), 0);
  ASSERT_TRUE(PollUntil([&] { return daemon->Log().find("SIGHUP: reloaded") != std::string::npos; },
                        seconds(20)))
      << daemon->LogTail();
  EXPECT_TRUE(ListJobs(tcp, "new-token-0123456789").ok());
  EXPECT_EQ(ListJobs(tcp, "old-token-0123456789").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  ASSERT_TRUE(DaemonInfo(tcp, "new-token-0123456789", &info).ok());
  EXPECT_EQ(info.max_queue_length(), 7);

  // A reload that fails (a tokens file others can read) keeps everything as it was.
  WriteFile(dir.File("tokens"), "third-token-0123456789 alice\n", 0644);
  ASSERT_EQ(::kill(daemon->pid(), SIGHUP), 0);
  ASSERT_TRUE(PollUntil(
      [&] { return daemon->Log().find("SIGHUP: reload failed") != std::string::npos; },
      seconds(20)))
      << daemon->LogTail();
  EXPECT_THAT(daemon->Log(), HasSubstr("chmod 600"));
  EXPECT_TRUE(ListJobs(tcp, "new-token-0123456789").ok());
  EXPECT_EQ(ListJobs(tcp, "third-token-0123456789").error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  // Issue 40 A.10: so does one with a guessable plaintext token; an empty tokens file reloads
  // (it revokes every token user) and says that TCP callers cannot authenticate now.
  WriteFile(dir.File("tokens"), "t0k3n alice\n");
  ASSERT_EQ(::kill(daemon->pid(), SIGHUP), 0);
  ASSERT_TRUE(PollUntil(
      [&] { return daemon->Log().find("5 bytes can be guessed") != std::string::npos; },
      seconds(20)))
      << daemon->LogTail();
  EXPECT_THAT(daemon->Log(), HasSubstr("reload failed, the running configuration stays: tokens "
                                       "file " + dir.File("tokens") + " line 1"));
  EXPECT_TRUE(ListJobs(tcp, "new-token-0123456789").ok());
  EXPECT_EQ(ListJobs(tcp, "t0k3n").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  WriteFile(dir.File("tokens"), "# nobody for now\n");
  ASSERT_EQ(::kill(daemon->pid(), SIGHUP), 0);
  ASSERT_TRUE(PollUntil(
      [&] { return daemon->Log().find("holds no token") != std::string::npos; }, seconds(20)))
      << daemon->LogTail();
  EXPECT_THAT(daemon->Log(), HasSubstr("SIGHUP: tokens file " + dir.File("tokens") +
                                       " holds no token, so no caller can authenticate on tcp:"));
  EXPECT_EQ(ListJobs(tcp, "new-token-0123456789").error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  // A key that needs a restart is named, not applied.
  WriteFile(dir.File("tokens"), "new-token-0123456789 alice\n");
  WriteFile(dir.File("d.yaml"), "limits:\n  max_queue_length: 7\nunix_socket_mode: 0600\n");
  ASSERT_EQ(::kill(daemon->pid(), SIGHUP), 0);
  ASSERT_TRUE(PollUntil(
      [&] { return daemon->Log().find("unix_socket_mode changed: restart") != std::string::npos; },
      seconds(20)))
      << daemon->LogTail();

  watcher.join();
  EXPECT_TRUE(watched.ok()) << watched.error_message();
  ASSERT_TRUE(WaitTerminal(*stub, job.id(), &job));
  EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.error();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_TRUE(daemon->Running());
  EXPECT_EQ(daemon->Terminate(seconds(60)), 0) << daemon->LogTail();
}

TEST(DaemonStartupTest, KeepsItsProcessNameAndAQuietLog) {
  TempDir dir;
  DaemonDirs dirs(dir.path());
  auto daemon = DaemonProcess::Start(dirs.Flags(), dir.File("daemon.log"));
  ASSERT_TRUE(daemon->WaitServing()) << daemon->LogTail();
  // The kernel's name is ours (pgrep -x libreyolod).
  std::string comm = ReadFile("/proc/" + std::to_string(daemon->pid()) + "/comm");
  while (!comm.empty() && comm.back() == '\n') comm.pop_back();
  EXPECT_EQ(comm, "libreyolod");
  // The daemon maps no LibTorch (nor libgomp, cuDNN or NCCL): only its engine worker does, and
  // the worker's OpenMP threads wait passively (after its OMP_WAIT_POLICY re-exec).
  const std::string maps = ReadFile("/proc/" + std::to_string(daemon->pid()) + "/maps");
  ASSERT_FALSE(maps.empty());
  for (const char* library : {"libtorch", "libc10", "libgomp", "libcudnn", "libnccl"}) {
    EXPECT_THAT(maps, Not(HasSubstr(library))) << "the daemon maps " << library;
  }
  const std::vector<pid_t> workers = WorkerPids(daemon->pid());
  ASSERT_EQ(workers.size(), 1u);
  const std::string worker = "/proc/" + std::to_string(workers[0]);
  EXPECT_THAT(ReadFile(worker + "/maps"), HasSubstr("libtorch"));
  EXPECT_THAT(ReadFile(worker + "/environ"), HasSubstr("OMP_WAIT_POLICY=PASSIVE"));
  auto stub = v1::ProfilerService::NewStub(UnixChannel(dirs.socket));
  v1::Job job;
  ASSERT_TRUE(Submit(*stub, TinyInfer(), &job).ok());
  ASSERT_TRUE(WaitTerminal(*stub, job.id(), &job));
  EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.error();
  EXPECT_EQ(daemon->Terminate(seconds(60)), 0);
  EXPECT_THAT(daemon->Log(), Not(HasSubstr("Logging before InitGoogleLogging")));
  EXPECT_THAT(daemon->Log(), Not(HasSubstr("WARNING: Logging")));
  // Kineto's search for GPUs in a CPU slot (on a host without a CUDA driver: "ERROR: ...
  // gpuGetDeviceCount failed with code 35" at every profiler start).
  EXPECT_THAT(daemon->Log(), Not(HasSubstr("gpuGetDeviceCount")));
}

// The metric families of a Prometheus text page ("# TYPE name kind" lines).
std::set<std::string> Families(const std::string& text) {
  std::set<std::string> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("# TYPE ", 0) == 0) out.insert(line.substr(7, line.find(' ', 7) - 7));
  }
  return out;
}

TEST(DaemonStartupTest, MetricsTextfileHasWhatGetMetricsHas) {
  TempDir dir;
  DaemonDirs dirs(dir.path());
  std::vector<std::string> flags = dirs.Flags();
  flags.insert(flags.end(), {"--metrics-textfile", dir.File("libreyolod.prom")});
  auto daemon = DaemonProcess::Start(flags, dir.File("daemon.log"));
  ASSERT_TRUE(daemon->WaitServing()) << daemon->LogTail();
  ASSERT_TRUE(PollUntil([&] { return fs::exists(dir.File("libreyolod.prom")); }, seconds(20)));
  auto stub = v1::ProfilerService::NewStub(UnixChannel(dirs.socket));
  auto ctx = Ctx();
  v1::GetMetricsResponse metrics;
  ASSERT_TRUE(stub->GetMetrics(ctx.get(), v1::GetMetricsRequest(), &metrics).ok());
  const std::set<std::string> from_rpc = Families(metrics.text());
  EXPECT_TRUE(from_rpc.count("libreyolod_resident_memory_bytes")) << metrics.text();
  EXPECT_EQ(Families(ReadFile(dir.File("libreyolod.prom"))), from_rpc);
  EXPECT_EQ(daemon->Terminate(seconds(60)), 0) << daemon->LogTail();
}

}  // namespace
}  // namespace libreyolo::daemon_test
