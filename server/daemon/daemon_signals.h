// What libreyolod does with each signal, decided once and documented (docs/deploy.md,
// "Signals"): SIGTERM and SIGINT drain, SIGHUP reloads, the signals whose default would end the
// daemon without a word (SIGUSR1, SIGUSR2, SIGALRM, the real-time signals, ...) are logged and
// otherwise ignored, SIGPIPE is ignored, and the rest keep their default on purpose (a fault
// dumps core, SIGQUIT dumps core, job control stops and continues).
#ifndef LIBREYOLO_SERVER_DAEMON_DAEMON_SIGNALS_H_
#define LIBREYOLO_SERVER_DAEMON_DAEMON_SIGNALS_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "absl/status/status.h"

namespace libreyolo::daemon {

enum class SignalAction {
  kDrain,    // SIGTERM, SIGINT: stop accepting, drain, exit 0
  kReload,   // SIGHUP: reload tokens, admins, limits, ...
  kLog,      // a line in the log, nothing else
  kIgnore,   // SIG_IGN (SIGPIPE: a closed peer is an error return)
  kDefault,  // the kernel's default, kept on purpose (faults, SIGQUIT, job control, ...)
};

// The daemon's action for `sig` (1..SIGRTMAX); kDefault for a number that is not a signal.
SignalAction DaemonSignalAction(int sig);

// Why the signal has its action, one short phrase (for the docs' table and the tests).
std::string SignalActionReason(int sig);

// "SIGUSR1", "SIGRTMIN+3".
std::string SignalName(int sig);

// Installs the actions: a handler that writes the signal's number to `write_fd` (made
// non-blocking, so that a flood of signals can never block the thread it lands on) for kDrain,
// kReload and kLog, SIG_IGN for kIgnore. Handlers (not SIG_IGN) for the logged signals, so that
// the engine workers, which exec the daemon's binary, start with the defaults.
absl::Status InstallDaemonSignalHandlers(int write_fd);

// The log line of the `count`-th kLog signal `sig` since start, or "" (the 1st, 2nd, 4th,
// 8th, ... are logged: a flood of signals cannot flood the log).
std::string IgnoredSignalLogLine(int sig, int64_t count);

// Runs the SIGHUP reload on a thread of its own (issue 40 A.7), so that a reload that blocks (a
// config or tokens file on a hung NFS or FUSE mount, where no O_NONBLOCK helps) never holds the
// signal thread: SIGTERM always drains. A SIGHUP that comes while a reload runs is folded into
// one more reload after it. A reload that throws is logged (RunGuarded, "SIGHUP reload") and the
// thread stays for the next SIGHUP.
class ReloadRunner {
 public:
  explicit ReloadRunner(std::function<void()> reload);
  ~ReloadRunner();  // Stop(0) when the owner did not stop it
  ReloadRunner(const ReloadRunner&) = delete;
  ReloadRunner& operator=(const ReloadRunner&) = delete;

  // Asks for a reload and returns at once. False when a reload is running already (this one
  // then follows it); `running_for` says for how long.
  bool Request(std::chrono::steady_clock::duration* running_for = nullptr);
  // No more reloads; waits up to `timeout` for the one running. False when it still runs: its
  // thread is left behind (detached), so whatever the reload uses must not be destroyed; the
  // caller exits without destroying it.
  bool Stop(std::chrono::milliseconds timeout);

 private:
  struct State;
  std::shared_ptr<State> state_;  // shared with the thread, which may outlive this object
};

// The byte the lease watcher writes to the signal fd (0 is no signal's number): stop, nobody
// needs this daemon any more.
inline constexpr char kUnleasedByte = 0;

// What the signal loop acts on: the running daemon in libreyolod (DaemonMain), a recorder in
// the tests.
struct SignalLoopTarget {
  std::function<void()> drain;              // stop accepting, drain, let the daemon's Wait end
  std::function<int64_t()> drain_timeout_s;  // for the SIGTERM line (a reload may change it)
  std::string lease_dir;                    // for the line of kUnleasedByte
};

// Why RunSignalLoop returned.
enum class SignalLoopEnd {
  kDrain,     // SIGTERM or SIGINT: target.drain ran
  kUnleased,  // the lease watcher's kUnleasedByte: target.drain ran
  kClosed,    // the fd's write end was closed (or it failed): nothing drained
};

// The daemon's signal loop: reads one byte per event from `fd` (the pipe the handlers of
// InstallDaemonSignalHandlers and the lease watcher write to; a test's pipe) and acts on it:
// SIGHUP asks `reloader` for a reload (the loop never waits for one), a kLog signal writes
// IgnoredSignalLogLine to `err`, SIGTERM/SIGINT and kUnleasedByte write why to `err`, run
// target.drain and return. EOF on `fd` returns kClosed without draining.
SignalLoopEnd RunSignalLoop(int fd, ReloadRunner& reloader, const SignalLoopTarget& target,
                            std::ostream& err);

// --lease-dir: every `interval`, when `busy` says no job is queued or running, counts the live
// leases under `dir`'s control lock; with none, keeps that lock until the process exits (a
// client that comes now waits for it, then starts a fresh daemon), writes kUnleasedByte to
// `write_fd` and returns. Returns when `stopped` is set.
void WatchLeases(const std::function<bool()>& busy, const std::string& dir, int write_fd,
                 const std::atomic<bool>& stopped,
                 std::chrono::milliseconds interval = std::chrono::milliseconds(250));

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_DAEMON_SIGNALS_H_
