// Issue 23, item 8: every signal has an action chosen on purpose (server/daemon/daemon_signals.h)
// and documented (docs/deploy.md, "Signals"). SIGUSR1, SIGUSR2 and SIGALRM used to end the
// daemon silently (their default action): now they reach the daemon's signal pipe, which logs
// them. The process-level check is daemon_edge_test.cc.
#include "server/daemon/daemon_signals.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "server/daemon/config/daemon_config.h"
#include "server/daemon/security/auth.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace libreyolo::daemon {
namespace {

using ::testing::HasSubstr;

// Signals whose default action ends the process without a core dump or a word.
const std::vector<int>& SilentKillers() {
  static const auto* v =
      new std::vector<int>{SIGHUP,  SIGINT,    SIGUSR1,   SIGUSR2, SIGPIPE, SIGALRM,
                           SIGTERM, SIGSTKFLT, SIGVTALRM, SIGPROF, SIGIO,   SIGPWR};
  return *v;
}

TEST(DaemonSignals, NoSignalEndsTheDaemonSilently) {
  for (int sig : SilentKillers()) {
    EXPECT_NE(DaemonSignalAction(sig), SignalAction::kDefault) << SignalName(sig);
  }
  for (int sig = SIGRTMIN; sig <= SIGRTMAX; ++sig) {
    EXPECT_EQ(DaemonSignalAction(sig), SignalAction::kLog) << SignalName(sig);
  }
  EXPECT_EQ(DaemonSignalAction(SIGTERM), SignalAction::kDrain);
  EXPECT_EQ(DaemonSignalAction(SIGINT), SignalAction::kDrain);
  EXPECT_EQ(DaemonSignalAction(SIGHUP), SignalAction::kReload);
  EXPECT_EQ(DaemonSignalAction(SIGPIPE), SignalAction::kIgnore);
  EXPECT_EQ(DaemonSignalAction(SIGSEGV), SignalAction::kDefault);  // a fault dumps core
}

TEST(DaemonSignals, EverySignalHasAReason) {
  for (int sig = 1; sig <= SIGRTMAX; ++sig) {
    if (sig > SIGSYS && sig < SIGRTMIN) continue;  // reserved by the C library's threads
    EXPECT_FALSE(SignalActionReason(sig).empty()) << SignalName(sig);
    EXPECT_THAT(SignalName(sig), ::testing::StartsWith("SIG")) << sig;
  }
}

// Every signal named in the code's table appears in the docs' table.
TEST(DaemonSignals, TheDeployGuideListsEverySignal) {
  std::ifstream in(std::string(LIBREYOLO_SOURCE_DIR) + "/docs/deploy.md");
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  const size_t begin = doc.find("### Signals");
  ASSERT_NE(begin, std::string::npos);
  const std::string section = doc.substr(begin, doc.find("\n### ", begin + 1) - begin);
  for (int sig = 1; sig <= SIGSYS; ++sig) {
    EXPECT_THAT(section, HasSubstr(SignalName(sig))) << "docs/deploy.md, Signals";
  }
  EXPECT_THAT(section, HasSubstr("SIGRTMIN"));
}

TEST(DaemonSignals, LoggedSignalsReachThePipeAndTheProcessLives) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  ASSERT_TRUE(InstallDaemonSignalHandlers(pipe_fds[1]).ok());
  EXPECT_NE(::fcntl(pipe_fds[1], F_GETFL) & O_NONBLOCK, 0) << "a full pipe must not block";
  const std::vector<int> sent = {SIGUSR1, SIGUSR2, SIGALRM, SIGRTMIN + 3, SIGHUP, SIGTERM};
  for (int sig : sent) ASSERT_EQ(::raise(sig), 0);  // delivered before raise returns
  ASSERT_EQ(::raise(SIGPIPE), 0);                   // ignored: nothing in the pipe
  char got[16] = {};
  const ssize_t n = ::read(pipe_fds[0], got, sizeof(got));
  ASSERT_EQ(n, static_cast<ssize_t>(sent.size()));
  for (size_t i = 0; i < sent.size(); ++i) EXPECT_EQ(got[i], static_cast<char>(sent[i]));
  for (int sig : sent) ::signal(sig, SIG_DFL);
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
}

TEST(DaemonSignals, AFloodOfSignalsIsLoggedSparingly) {
  EXPECT_EQ(IgnoredSignalLogLine(SIGUSR1, 1),
            "libreyolod: SIGUSR1 ignored: libreyolod drains on SIGTERM or SIGINT and reloads on "
            "SIGHUP");
  EXPECT_THAT(IgnoredSignalLogLine(SIGALRM, 2), HasSubstr("SIGALRM ignored (2 times"));
  EXPECT_EQ(IgnoredSignalLogLine(SIGUSR2, 3), "");
  EXPECT_THAT(IgnoredSignalLogLine(SIGUSR2, 1024), HasSubstr("1024 times"));
  int logged = 0;
  for (int64_t i = 1; i <= 100000; ++i) logged += IgnoredSignalLogLine(SIGUSR1, i).empty() ? 0 : 1;
  EXPECT_EQ(logged, 17);  // 1, 2, 4, ..., 65536
  EXPECT_EQ(SignalName(SIGRTMIN + 2), "SIGRTMIN+2");
}

// Issue 40 A.7: a FIFO in a config or tokens file's place (any open that blocks) used to hang
// start-up, and a SIGHUP reload on the signal thread, so that SIGTERM never drained.

// A FIFO in a fresh directory; the directory and the FIFO are removed at the end.
class Fifo {
 public:
  Fifo() {
    char dir[] = "/tmp/lysig.XXXXXX";
    dir_ = ::mkdtemp(dir);
    path_ = dir_ + "/file";
    EXPECT_EQ(::mkfifo(path_.c_str(), 0600), 0);
  }
  ~Fifo() {
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
  }
  const std::string& path() const { return path_; }
  // Opens and closes the write end: a reader blocked in open() on the FIFO goes on.
  void Release() const {
    const int fd = ::open(path_.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) ::close(fd);
  }

 private:
  std::string dir_;
  std::string path_;
};

// `load` run with a bound: a reader that blocks on the FIFO fails the test instead of hanging
// it (the FIFO is released, so the reader ends).
template <typename T>
T Bounded(const Fifo& fifo, std::function<T()> load) {
  auto result = std::async(std::launch::async, std::move(load));
  if (result.wait_for(std::chrono::seconds(3)) != std::future_status::ready) {
    ADD_FAILURE() << "the read of " << fifo.path() << " blocked";
    while (result.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
      fifo.Release();
    }
  }
  return result.get();
}

TEST(DaemonSignals, AFifoAsTheTokensFileIsRefusedAtOnceNamingIt) {
  Fifo fifo;
  const absl::Status s = Bounded<absl::Status>(
      fifo, [&] { return TokenTable::Load(fifo.path()).status(); });
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("tokens file " + fifo.path()));
  EXPECT_THAT(std::string(s.message()), HasSubstr("not a regular file (a FIFO)"));
}

TEST(DaemonSignals, AFifoAsTheConfigFileIsRefusedAtOnceNamingIt) {
  Fifo fifo;
  const absl::Status s =
      Bounded<absl::Status>(fifo, [&] { return LoadDaemonConfig(fifo.path()).status(); });
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("config file " + fifo.path()));
  EXPECT_THAT(std::string(s.message()), HasSubstr("(a FIFO)"));
}

TEST(DaemonSignals, AReloadThatBlocksHoldsNeitherTheRequesterNorStop) {
  Fifo fifo;
  std::atomic<int> runs{0};
  // The reload blocks as an open on a hung mount does: a FIFO opened for reading, no writer.
  ReloadRunner reloader([&] {
    ++runs;
    const int fd = ::open(fifo.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) ::close(fd);
  });
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(reloader.Request());
  while (runs.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::chrono::steady_clock::duration running{};
  EXPECT_FALSE(reloader.Request(&running)) << "the first reload still runs";
  EXPECT_FALSE(reloader.Request());  // folded into the same one more run
  EXPECT_FALSE(reloader.Stop(std::chrono::milliseconds(100))) << "the reload is blocked";
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2))
      << "the caller (the signal thread) waited for the blocked reload";
  // Released, the thread ends on its own and runs no further reload (stopped).
  fifo.Release();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  fifo.Release();
  EXPECT_EQ(runs.load(), 1);
}

TEST(DaemonSignals, ReloadsRunOneAfterAnotherAndStopWaitsForTheRunningOne) {
  std::atomic<int> runs{0};
  std::promise<void> gate;
  std::shared_future<void> open_gate = gate.get_future().share();
  ReloadRunner reloader([&] {
    ++runs;
    open_gate.wait();
  });
  EXPECT_TRUE(reloader.Request());
  while (runs.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_FALSE(reloader.Request());
  EXPECT_FALSE(reloader.Request());
  gate.set_value();
  // The two that came during the first are one more reload.
  for (int i = 0; i < 200 && runs.load() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(reloader.Stop(std::chrono::seconds(5)));
  EXPECT_EQ(runs.load(), 2);
}

}  // namespace
}  // namespace libreyolo::daemon
