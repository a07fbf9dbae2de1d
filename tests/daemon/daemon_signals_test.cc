// Issue 23, item 8: every signal has an action chosen on purpose (server/daemon/daemon_signals.h)
// and documented (docs/deploy.md, "Signals"). SIGUSR1, SIGUSR2 and SIGALRM used to end the
// daemon silently (their default action): now they reach the daemon's signal pipe, which logs
// them. The process-level check is daemon_edge_test.cc.
#include "server/daemon/daemon_signals.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

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

}  // namespace
}  // namespace libreyolo::daemon
