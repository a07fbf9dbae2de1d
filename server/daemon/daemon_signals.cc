#include "server/daemon/daemon_signals.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/io/lease_dir.h"
#include "common/status/thread_guard.h"

namespace libreyolo::daemon {
namespace {

int g_write_fd = -1;

void OnSignal(int sig) {
  const int saved = errno;
  const char byte = static_cast<char>(sig);
  (void)!::write(g_write_fd, &byte, 1);  // a full pipe drops it: never blocks
  errno = saved;
}

struct Rule {
  int sig;
  const char* name;
  SignalAction action;
  const char* reason;
};

constexpr const char* kLogged = "logged and ignored: its default would end the daemon silently";
constexpr const char* kFault = "default: a fault in the daemon, which dumps core";

const Rule kRules[] = {
    {SIGTERM, "SIGTERM", SignalAction::kDrain, "drain and exit 0 (systemctl stop)"},
    {SIGINT, "SIGINT", SignalAction::kDrain, "drain and exit 0 (Ctrl-C)"},
    {SIGHUP, "SIGHUP", SignalAction::kReload, "reload (systemctl reload)"},
    {SIGPIPE, "SIGPIPE", SignalAction::kIgnore, "ignored: a closed peer is an error return"},
    {SIGUSR1, "SIGUSR1", SignalAction::kLog, kLogged},
    {SIGUSR2, "SIGUSR2", SignalAction::kLog, kLogged},
    {SIGALRM, "SIGALRM", SignalAction::kLog, kLogged},
    {SIGVTALRM, "SIGVTALRM", SignalAction::kLog, kLogged},
    {SIGPROF, "SIGPROF", SignalAction::kLog, kLogged},
    {SIGIO, "SIGIO", SignalAction::kLog, kLogged},
    {SIGPWR, "SIGPWR", SignalAction::kLog, kLogged},
    {SIGSTKFLT, "SIGSTKFLT", SignalAction::kLog, kLogged},
    {SIGXCPU, "SIGXCPU", SignalAction::kLog,
     "logged and ignored: over the CPU-time soft limit (the hard limit still kills)"},
    {SIGXFSZ, "SIGXFSZ", SignalAction::kLog,
     "logged and ignored: over the file-size limit, the write fails and says so"},
    {SIGQUIT, "SIGQUIT", SignalAction::kDefault, "default: exit at once with a core dump"},
    {SIGKILL, "SIGKILL", SignalAction::kDefault, "cannot be caught: the next start recovers"},
    {SIGSTOP, "SIGSTOP", SignalAction::kDefault, "cannot be caught: stops the daemon"},
    {SIGTSTP, "SIGTSTP", SignalAction::kDefault, "default: job control stops the daemon"},
    {SIGTTIN, "SIGTTIN", SignalAction::kDefault, "default: job control stops the daemon"},
    {SIGTTOU, "SIGTTOU", SignalAction::kDefault, "default: job control stops the daemon"},
    {SIGCONT, "SIGCONT", SignalAction::kDefault, "default: continues a stopped daemon"},
    {SIGCHLD, "SIGCHLD", SignalAction::kDefault, "default (ignored): workers are reaped by pid"},
    {SIGURG, "SIGURG", SignalAction::kDefault, "default (ignored)"},
    {SIGWINCH, "SIGWINCH", SignalAction::kDefault, "default (ignored)"},
    {SIGSEGV, "SIGSEGV", SignalAction::kDefault, kFault},
    {SIGBUS, "SIGBUS", SignalAction::kDefault, kFault},
    {SIGFPE, "SIGFPE", SignalAction::kDefault, kFault},
    {SIGILL, "SIGILL", SignalAction::kDefault, kFault},
    {SIGTRAP, "SIGTRAP", SignalAction::kDefault, kFault},
    {SIGABRT, "SIGABRT", SignalAction::kDefault, kFault},
    {SIGSYS, "SIGSYS", SignalAction::kDefault, kFault},
};

const Rule* Find(int sig) {
  for (const Rule& r : kRules) {
    if (r.sig == sig) return &r;
  }
  return nullptr;
}

bool RealTime(int sig) { return sig >= SIGRTMIN && sig <= SIGRTMAX; }

}  // namespace

SignalAction DaemonSignalAction(int sig) {
  if (const Rule* r = Find(sig)) return r->action;
  return RealTime(sig) ? SignalAction::kLog : SignalAction::kDefault;
}

std::string SignalActionReason(int sig) {
  if (const Rule* r = Find(sig)) return r->reason;
  if (RealTime(sig)) return kLogged;
  return "";
}

std::string SignalName(int sig) {
  if (const Rule* r = Find(sig)) return r->name;
  if (RealTime(sig)) {
    return sig == SIGRTMIN ? "SIGRTMIN" : absl::StrCat("SIGRTMIN+", sig - SIGRTMIN);
  }
  return absl::StrCat("signal ", sig);
}

absl::Status InstallDaemonSignalHandlers(int write_fd) {
  const int flags = ::fcntl(write_fd, F_GETFL);
  if (flags < 0 || ::fcntl(write_fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    return absl::InternalError(absl::StrCat("signal pipe: fcntl: ", std::strerror(errno)));
  }
  g_write_fd = write_fd;
  struct sigaction handle {};
  handle.sa_handler = OnSignal;
  sigemptyset(&handle.sa_mask);
  handle.sa_flags = SA_RESTART;
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  for (int sig = 1; sig <= SIGRTMAX; ++sig) {
    const SignalAction a = DaemonSignalAction(sig);
    if (a == SignalAction::kDefault) continue;
    if (::sigaction(sig, a == SignalAction::kIgnore ? &ignore : &handle, nullptr) != 0) {
      return absl::InternalError(
          absl::StrCat("sigaction(", SignalName(sig), "): ", std::strerror(errno)));
    }
  }
  return absl::OkStatus();
}

std::string IgnoredSignalLogLine(int sig, int64_t count) {
  if (count <= 0 || (count & (count - 1)) != 0) return "";
  return absl::StrCat("libreyolod: ", SignalName(sig), " ignored",
                      count == 1 ? "" : absl::StrCat(" (", count, " times since start)"),
                      ": libreyolod drains on SIGTERM or SIGINT and reloads on SIGHUP");
}

struct ReloadRunner::State {
  std::function<void()> reload;
  std::mutex mu;
  std::condition_variable cv;
  bool pending = false;   // a SIGHUP to act on
  bool running = false;   // reload() runs now
  bool stopping = false;
  std::chrono::steady_clock::time_point started;
  std::thread thread;
};

ReloadRunner::ReloadRunner(std::function<void()> reload) : state_(std::make_shared<State>()) {
  state_->reload = std::move(reload);
  state_->thread = std::thread([state = state_] {
    std::unique_lock<std::mutex> lock(state->mu);
    while (true) {
      state->cv.wait(lock, [&] { return state->pending || state->stopping; });
      if (state->stopping) break;
      state->pending = false;
      state->running = true;
      state->started = std::chrono::steady_clock::now();
      lock.unlock();
      // A reload that throws changes nothing it had not applied yet; the next SIGHUP retries.
      (void)RunGuarded("SIGHUP reload", "the running configuration stays", state->reload);
      lock.lock();
      state->running = false;
      state->cv.notify_all();
    }
  });
}

ReloadRunner::~ReloadRunner() { Stop(std::chrono::milliseconds(0)); }

bool ReloadRunner::Request(std::chrono::steady_clock::duration* running_for) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->pending = true;
  state_->cv.notify_all();
  if (!state_->running) return true;
  if (running_for != nullptr) *running_for = std::chrono::steady_clock::now() - state_->started;
  return false;
}

bool ReloadRunner::Stop(std::chrono::milliseconds timeout) {
  bool idle = false;
  {
    std::unique_lock<std::mutex> lock(state_->mu);
    state_->stopping = true;
    state_->pending = false;
    state_->cv.notify_all();
    idle = state_->cv.wait_for(lock, timeout, [&] { return !state_->running; });
  }
  if (!state_->thread.joinable()) return idle;
  if (idle) {
    state_->thread.join();
  } else {
    state_->thread.detach();  // blocked in the reload: it keeps the state alive
  }
  return idle;
}

SignalLoopEnd RunSignalLoop(int fd, ReloadRunner& reloader, const SignalLoopTarget& target,
                            std::ostream& err) {
  std::map<int, int64_t> ignored;  // per logged signal, how many arrived
  while (true) {
    char byte = 0;
    const ssize_t n = ::read(fd, &byte, 1);
    if (n == 0) return SignalLoopEnd::kClosed;
    if (n < 0 && errno != EINTR && errno != EAGAIN) return SignalLoopEnd::kClosed;
    if (n != 1) continue;
    const int sig = byte;
    if (byte == kUnleasedByte) {
      err << "libreyolod: no job to run and no lease in " << target.lease_dir << ": stopping"
          << std::endl;
      target.drain();
      return SignalLoopEnd::kUnleased;
    }
    const SignalAction action = DaemonSignalAction(sig);
    if (action == SignalAction::kLog) {
      const std::string line = IgnoredSignalLogLine(sig, ++ignored[sig]);
      if (!line.empty()) err << line << std::endl;
      continue;
    }
    if (action == SignalAction::kReload) {
      std::chrono::steady_clock::duration running{};
      if (!reloader.Request(&running)) {
        err << "libreyolod: SIGHUP: the reload before has run for "
            << std::chrono::duration_cast<std::chrono::seconds>(running).count()
            << " s (a config or tokens file on a mount that hangs?); this one follows it"
            << std::endl;
      }
      continue;
    }
    if (action != SignalAction::kDrain) continue;
    err << "libreyolod: " << (sig == SIGTERM ? "SIGTERM" : "SIGINT") << ": draining (up to "
        << target.drain_timeout_s() << " s)" << std::endl;
    target.drain();
    return SignalLoopEnd::kDrain;
  }
}

void WatchLeases(const std::function<bool()>& busy, const std::string& dir, int write_fd,
                 const std::atomic<bool>& stopped, std::chrono::milliseconds interval) {
  while (!stopped.load()) {
    std::this_thread::sleep_for(interval);
    if (busy()) continue;
    std::optional<LeaseDirLock> lock = LeaseDirLock::TryAcquire(dir);
    if (!lock || busy() || CountLiveLeases(dir) > 0) continue;
    lock->HoldUntilExit();
    (void)!::write(write_fd, &kUnleasedByte, 1);
    return;
  }
}

}  // namespace libreyolo::daemon
