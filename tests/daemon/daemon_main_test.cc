// Issue 39 §4: libreyolod's main is DaemonMain (server/daemon/daemon_main.h) over a signal loop
// that reads an fd (daemon_signals.h, RunSignalLoop) and a lease watcher that writes to it
// (WatchLeases). These tests drive both through a pipe of their own: SIGHUP reloads, SIGTERM
// drains, a logged signal is logged, the lease watcher stops an unleased idle daemon, and a
// reload that throws is logged and leaves the loop serving. The process-level checks (real
// signals to a real libreyolod) are daemon_edge_test.cc's.
#include "server/daemon/daemon_main.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/io/lease_dir.h"
#include "common/status/exit_code.h"
#include "server/daemon/daemon_signals.h"
#include "tests/support/test_files.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace libreyolo::daemon {
namespace {

using ::libreyolo::test::TempDir;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;

// A pipe for the loop, the loop on a thread of its own, and what it did.
class LoopHarness {
 public:
  explicit LoopHarness(std::function<void()> reload, std::string lease_dir = "")
      : reloader_([this, reload = std::move(reload)] {
          reload();
          ++reloads_;
        }) {
    EXPECT_EQ(::pipe2(fds_, O_CLOEXEC), 0);
    target_.drain = [this] { ++drains_; };
    target_.drain_timeout_s = [] { return int64_t{7}; };
    target_.lease_dir = std::move(lease_dir);
    thread_ = std::thread([this] { end_ = RunSignalLoop(fds_[0], reloader_, target_, err_); });
  }
  ~LoopHarness() {
    CloseWriteEnd();
    if (thread_.joinable()) thread_.join();
    reloader_.Stop(2s);
    ::close(fds_[0]);
  }

  void Send(int sig) {
    const char byte = static_cast<char>(sig);
    ASSERT_EQ(::write(fds_[1], &byte, 1), 1);
  }
  int write_fd() const { return fds_[1]; }
  void CloseWriteEnd() {
    if (fds_[1] >= 0) ::close(fds_[1]);
    fds_[1] = -1;
  }
  // Waits (up to 10 s) for the loop to return; then what it wrote is safe to read.
  SignalLoopEnd Join() {
    thread_.join();
    return end_;
  }
  // Waits up to 10 s for `n` finished reloads.
  bool WaitForReloads(int n) {
    for (auto until = std::chrono::steady_clock::now() + 10s;
         std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(5ms)) {
      if (reloads_.load() >= n) return true;
    }
    return false;
  }
  int reloads() const { return reloads_.load(); }
  int drains() const { return drains_.load(); }
  std::string err() const { return err_.str(); }

 private:
  int fds_[2] = {-1, -1};
  std::atomic<int> reloads_{0}, drains_{0};
  ReloadRunner reloader_;
  SignalLoopTarget target_;
  std::ostringstream err_;  // written by the loop's thread only; read after Join
  SignalLoopEnd end_ = SignalLoopEnd::kClosed;
  std::thread thread_;
};

TEST(DaemonSignalLoop, SighupReloadsAndSigtermDrains) {
  LoopHarness loop([] {});
  loop.Send(SIGHUP);
  ASSERT_TRUE(loop.WaitForReloads(1)) << "SIGHUP did not reload";
  loop.Send(SIGUSR1);
  loop.Send(SIGHUP);
  ASSERT_TRUE(loop.WaitForReloads(2));
  EXPECT_EQ(loop.drains(), 0) << "nothing drains before SIGTERM";
  loop.Send(SIGTERM);
  EXPECT_EQ(loop.Join(), SignalLoopEnd::kDrain);
  EXPECT_EQ(loop.drains(), 1);
  EXPECT_EQ(loop.reloads(), 2);
  EXPECT_THAT(loop.err(), HasSubstr("libreyolod: SIGUSR1 ignored: libreyolod drains on SIGTERM"));
  EXPECT_THAT(loop.err(), HasSubstr("libreyolod: SIGTERM: draining (up to 7 s)\n"));
}

TEST(DaemonSignalLoop, SigintDrainsAndAClosedPipeEndsWithoutDraining) {
  {
    LoopHarness loop([] {});
    loop.Send(SIGINT);
    EXPECT_EQ(loop.Join(), SignalLoopEnd::kDrain);
    EXPECT_THAT(loop.err(), HasSubstr("libreyolod: SIGINT: draining"));
  }
  LoopHarness loop([] {});
  loop.CloseWriteEnd();
  EXPECT_EQ(loop.Join(), SignalLoopEnd::kClosed);
  EXPECT_EQ(loop.drains(), 0);
}

// The throw injection of the reload thread (common/status/thread_guard.h): the line names the
// thread and the action, the loop keeps serving, the next SIGHUP reloads.
TEST(DaemonSignalLoop, AReloadThatThrowsIsLoggedAndTheNextOneRuns) {
  std::atomic<int> calls{0};
  LoopHarness loop([&] {
    if (calls++ == 0) throw std::runtime_error("injected\nsecond line");
  });
  testing::internal::CaptureStderr();
  loop.Send(SIGHUP);
  for (int i = 0; i < 1000 && calls.load() == 0; ++i) std::this_thread::sleep_for(5ms);
  std::this_thread::sleep_for(50ms);  // the guard's line follows the throw
  const std::string logged = testing::internal::GetCapturedStderr();
  EXPECT_EQ(logged,
            "libreyolo: thread 'SIGHUP reload' threw: injected\\nsecond line; the running "
            "configuration stays\n");
  EXPECT_EQ(loop.reloads(), 0) << "the throwing reload did not finish";
  loop.Send(SIGHUP);
  ASSERT_TRUE(loop.WaitForReloads(1)) << "the reload thread died with the exception";
  loop.Send(SIGTERM);
  EXPECT_EQ(loop.Join(), SignalLoopEnd::kDrain);
}

TEST(DaemonLeaseWatcher, AnIdleDaemonWithoutLeasesStops) {
  TempDir dir("lylease");
  LoopHarness loop([] {}, dir.path());
  std::atomic<bool> busy{true}, stopped{false};
  absl::StatusOr<Lease> lease = Lease::Take(dir.path(), "daemon_main_test");
  ASSERT_TRUE(lease.ok()) << lease.status();
  std::thread watcher([&] {
    WatchLeases([&] { return busy.load(); }, dir.path(), loop.write_fd(), stopped, 10ms);
  });
  std::this_thread::sleep_for(100ms);
  busy = false;  // idle, but a live lease
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(loop.drains(), 0) << "stopped with a live lease";
  lease->Release();
  EXPECT_EQ(loop.Join(), SignalLoopEnd::kUnleased);
  watcher.join();
  EXPECT_EQ(loop.drains(), 1);
  EXPECT_THAT(loop.err(), HasSubstr("libreyolod: no job to run and no lease in " + dir.path() +
                                    ": stopping\n"));
}

TEST(DaemonLeaseWatcher, ReturnsWhenStopped) {
  TempDir dir("lylease");
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  std::atomic<bool> stopped{false};
  std::thread watcher([&] { WatchLeases([] { return true; }, dir.path(), fds[1], stopped, 5ms); });
  std::this_thread::sleep_for(30ms);
  stopped = true;
  watcher.join();
  ::close(fds[1]);
  char byte = 1;
  EXPECT_EQ(::read(fds[0], &byte, 1), 0) << "a busy daemon was told to stop";
  ::close(fds[0]);
}

// DaemonMain's own answers, before a daemon starts (it installs the signal handlers: the
// defaults come back at the end).
TEST(DaemonMain, HelpAndABadFlag) {
  std::ostringstream out, err;
  EXPECT_EQ(DaemonMain({"--help"}, out, err), kDaemonExitOk);
  EXPECT_THAT(out.str(), HasSubstr("--lease-dir"));
  EXPECT_EQ(err.str(), "");
  std::ostringstream out2, err2;
  EXPECT_EQ(DaemonMain({"--no-such-flag"}, out2, err2), kDaemonExitConfig);
  EXPECT_THAT(err2.str(), HasSubstr("Run 'libreyolod --help' for the flags."));
  EXPECT_THAT(err2.str(), HasSubstr("--no-such-flag"));
  EXPECT_EQ(out2.str(), "");
  std::ostringstream out3, err3;
  EXPECT_EQ(DaemonMain({"--config", "/nonexistent/libreyolod.yaml"}, out3, err3),
            kDaemonExitConfig);
  EXPECT_THAT(err3.str(), HasSubstr("/nonexistent/libreyolod.yaml"));
  EXPECT_THAT(err3.str(), Not(HasSubstr("--help")));
  for (int sig = 1; sig <= SIGRTMAX; ++sig) {
    if (DaemonSignalAction(sig) != SignalAction::kDefault) ::signal(sig, SIG_DFL);
  }
}

}  // namespace
}  // namespace libreyolo::daemon
