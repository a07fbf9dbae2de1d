// libreyolod: the profiling daemon. Configuration from --config FILE plus flags; SIGTERM or
// SIGINT drains running jobs (drain_timeout_s) and exits 0; SIGHUP reloads the tokens file,
// admins, limits and retention (docs/deploy.md, "Reload"); every other signal whose default
// would end the daemon is logged and ignored (daemon_signals.h, docs/deploy.md "Signals"). With
// --lease-dir it also stops by itself, the same way, once it has nothing to run and no live
// lease (docs/cli.md). The engine runs in separate worker processes (libreyolod-worker,
// server/worker/main.cc): this executable links no LibTorch.
//
// Exit codes (docs/deploy.md, "Start-up errors"): common/status/exit_code.h, kDaemonExit*.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/io/lease_dir.h"
#include "common/status/exit_code.h"
#include "server/daemon/config/daemon_config.h"
#include "server/daemon/daemon.h"
#include "server/daemon/daemon_signals.h"
#include "server/daemon/store/job_store_scrub.h"
#include "server/daemon/workers/engine_worker.h"

// The engine worker executable this daemon starts (FindWorkerExecutable): the test build of the
// daemon starts the worker built with the fault hook (server/worker/fault_hook.h).
#ifndef LIBREYOLO_WORKER_EXECUTABLE
#define LIBREYOLO_WORKER_EXECUTABLE ::libreyolo::daemon::kWorkerExecutableName
#endif

namespace {

// Libraries start threads before main (OpenBLAS's pool, for one), so blocking signals for a
// sigwait thread is not enough: a handler that writes the signal number to a pipe is
// (InstallDaemonSignalHandlers).
int g_signal_pipe[2] = {-1, -1};

// Written to the signal pipe by the lease watcher (0 is no signal's number): stop, nobody
// needs this daemon any more.
constexpr char kUnleased = 0;

// --lease-dir: every 250 ms, when no job is queued or running, counts the live leases under the
// directory's control lock; with none, keeps that lock until the process exits (a client that
// comes now waits for it, then starts a fresh daemon) and asks the signal thread to stop.
void WatchLeases(const libreyolo::daemon::Daemon& daemon, const std::string& dir,
                 const std::atomic<bool>& stopped) {
  while (!stopped.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    if (daemon.Busy()) continue;
    std::optional<libreyolo::LeaseDirLock> lock = libreyolo::LeaseDirLock::TryAcquire(dir);
    if (!lock || daemon.Busy() || libreyolo::CountLiveLeases(dir) > 0) continue;
    lock->HoldUntilExit();
    (void)!::write(g_signal_pipe[1], &kUnleased, 1);
    return;
  }
}

using ::libreyolo::kDaemonExitConfig;
using ::libreyolo::kDaemonExitOk;
using ::libreyolo::kDaemonExitUnexpected;

// Every connection, job file and worker socket takes a descriptor: the soft limit (1024 under
// systemd's default) is raised to the hard one (524288 there), so a flood of connections meets
// the idle and handshake timeouts long before the limit (issue 23 item 2).
void RaiseDescriptorLimit() {
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) != 0 || files.rlim_cur >= files.rlim_max) return;
  files.rlim_cur = files.rlim_max;
  (void)::setrlimit(RLIMIT_NOFILE, &files);
}

}  // namespace

int main(int argc, char** argv) {
  RaiseDescriptorLimit();
  const std::vector<std::string> args(argv + 1, argv + argc);
  // Checks the store offline (docs/deploy.md): server/daemon/store/job_store_scrub.h.
  if (!args.empty() && args[0] == "scrub") {
    return libreyolo::daemon::ScrubMain({args.begin() + 1, args.end()}, std::cout, std::cerr);
  }
  if (::pipe2(g_signal_pipe, O_CLOEXEC) != 0) {
    std::cerr << "libreyolod: error: pipe() failed\n";
    return kDaemonExitUnexpected;
  }
  // Installed before anything can take long: a SIGHUP or SIGUSR1 during start-up is handled
  // (a reload once serving, a log line), never the default action that kills the process.
  if (absl::Status s = libreyolo::daemon::InstallDaemonSignalHandlers(g_signal_pipe[1]); !s.ok()) {
    std::cerr << "libreyolod: error: " << s.message() << "\n";
    return kDaemonExitUnexpected;
  }

  {
    libreyolo::daemon::DaemonConfig scratch;
    auto flags = libreyolo::daemon::ApplyDaemonFlags(args, &scratch);
    if (!flags.ok()) {
      std::cerr << "libreyolod: error: " << flags.status().message()
                << "\nRun 'libreyolod --help' for the flags.\n";
      return kDaemonExitConfig;
    }
    if (flags->help) {
      std::cout << libreyolo::daemon::DaemonFlagsHelp();
      return kDaemonExitOk;
    }
  }
  auto config = libreyolo::daemon::LoadConfigFromArgs(args);
  if (!config.ok()) {
    std::cerr << "libreyolod: error: " << config.status().message() << "\n";
    return kDaemonExitConfig;
  }
  std::vector<std::string> warnings;
  auto daemon = libreyolo::daemon::Daemon::Start(*config, &warnings, LIBREYOLO_WORKER_EXECUTABLE);
  for (const std::string& w : warnings) std::cerr << "libreyolod: warning: " << w << "\n";
  if (!daemon.ok()) {
    std::cerr << "libreyolod: error: " << daemon.status().message() << "\n";
    return ::libreyolo::DaemonExitCodeForStartStatus(daemon.status());
  }
  // One write: whoever waits for this line (scripts, tests, systemd's log) never reads half.
  std::string serving = "libreyolod: serving on";
  size_t tcp = 0;
  for (const std::string& a : config->listen) {
    if (a.rfind("unix:", 0) == 0 || tcp >= (*daemon)->tcp_ports().size()) {
      absl::StrAppend(&serving, " ", a);
    } else {
      absl::StrAppend(&serving, " ", a, " (port ", (*daemon)->tcp_ports()[tcp++], ")");
    }
  }
  absl::StrAppend(&serving, " (pid ", ::getpid(), ")\n");
  std::cerr << serving << std::flush;
  std::atomic<bool> stopped{false};
  std::thread lease_thread;
  if (!config->lease_dir.empty()) {
    lease_thread = std::thread(WatchLeases, std::cref(**daemon), config->lease_dir,
                               std::cref(stopped));
  }
  // The reload runs off the signal thread (issue 40 A.7): one that blocks on a file cannot keep
  // SIGTERM from draining.
  libreyolo::daemon::ReloadRunner reloader([&] {
    // A reload that fails keeps every running setting and says why.
    auto loaded = libreyolo::daemon::LoadConfigFromArgs(args);
    std::vector<std::string> notes;
    absl::Status status = loaded.ok() ? (*daemon)->Reload(*loaded, &notes) : loaded.status();
    if (!status.ok()) {
      std::cerr << "libreyolod: SIGHUP: reload failed, the running configuration stays: "
                << status.message() << std::endl;
      return;
    }
    for (const std::string& n : notes) std::cerr << "libreyolod: SIGHUP: " << n << "\n";
    std::cerr << "libreyolod: SIGHUP: reloaded "
              << absl::StrJoin(libreyolo::daemon::ReloadableKeys(), ", ") << std::endl;
  });
  std::thread signal_thread([&] {
    using libreyolo::daemon::SignalAction;
    std::map<int, int64_t> ignored;  // per logged signal, how many arrived
    while (true) {
      char byte = 0;
      if (::read(g_signal_pipe[0], &byte, 1) != 1) continue;
      const int sig = byte;
      if (sig == kUnleased) {
        std::cerr << "libreyolod: no job to run and no lease in " << config->lease_dir
                  << ": stopping" << std::endl;
        (*daemon)->Shutdown();
        return;
      }
      const SignalAction action = libreyolo::daemon::DaemonSignalAction(sig);
      if (action == SignalAction::kLog) {
        const std::string line = libreyolo::daemon::IgnoredSignalLogLine(sig, ++ignored[sig]);
        if (!line.empty()) std::cerr << line << std::endl;
        continue;
      }
      if (action == SignalAction::kReload) {
        std::chrono::steady_clock::duration running{};
        if (!reloader.Request(&running)) {
          std::cerr << "libreyolod: SIGHUP: the reload before has run for "
                    << std::chrono::duration_cast<std::chrono::seconds>(running).count()
                    << " s (a config or tokens file on a mount that hangs?); this one follows it"
                    << std::endl;
        }
        continue;
      }
      if (action != SignalAction::kDrain) continue;
      std::cerr << "libreyolod: " << (sig == SIGTERM ? "SIGTERM" : "SIGINT")
                << ": draining (up to " << (*daemon)->drain_timeout_s() << " s)" << std::endl;
      (*daemon)->Shutdown();
      return;
    }
  });
  (*daemon)->Wait();
  signal_thread.join();
  stopped = true;
  if (lease_thread.joinable()) lease_thread.join();
  if (!reloader.Stop(std::chrono::seconds(2))) {
    // Drained; the blocked reload still uses the daemon, which is therefore not destroyed.
    std::cerr << "libreyolod: stopped (a reload is still blocked reading its files; exiting "
                 "without waiting for it)"
              << std::endl;
    std::_Exit(kDaemonExitOk);
  }
  std::cerr << "libreyolod: stopped" << std::endl;
  return kDaemonExitOk;
}
