#include "server/daemon/daemon_main.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <thread>
#include <utility>

#include <grpc/grpc.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status/exit_code.h"
#include "common/status/thread_guard.h"
#include "server/daemon/config/daemon_config.h"
#include "server/daemon/daemon.h"
#include "server/daemon/daemon_signals.h"
#include "server/daemon/store/job_store_scrub.h"

namespace libreyolo::daemon {
namespace {

// Every connection, job file and worker socket takes a descriptor: the soft limit (1024 under
// systemd's default) is raised to the hard one (524288 there), so a flood of connections meets
// the idle and handshake timeouts long before the limit (issue 23 item 2).
void RaiseDescriptorLimit() {
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) != 0 || files.rlim_cur >= files.rlim_max) return;
  files.rlim_cur = files.rlim_max;
  (void)::setrlimit(RLIMIT_NOFILE, &files);
}

// The line whoever waits for the daemon reads (scripts, tests, systemd's log), in one write.
std::string ServingLine(const DaemonConfig& config, const Daemon& daemon) {
  std::string serving = "libreyolod: serving on";
  size_t tcp = 0;
  for (const std::string& a : config.listen) {
    if (a.rfind("unix:", 0) == 0 || tcp >= daemon.tcp_ports().size()) {
      absl::StrAppend(&serving, " ", a);
    } else {
      absl::StrAppend(&serving, " ", a, " (port ", daemon.tcp_ports()[tcp++], ")");
    }
  }
  absl::StrAppend(&serving, " (pid ", ::getpid(), ")\n");
  return serving;
}

// SIGHUP: the file read again, the flags parsed at start-up over it; a reload that fails keeps
// every running setting and says why.
void ReloadDaemon(Daemon& daemon, const ParsedFlags& flags, std::ostream& err) {
  absl::StatusOr<DaemonConfig> loaded = LoadDaemonConfigWithFlags(flags);
  std::vector<std::string> notes;
  absl::Status status = loaded.ok() ? daemon.Reload(*loaded, &notes) : loaded.status();
  if (!status.ok()) {
    err << "libreyolod: SIGHUP: reload failed, the running configuration stays: "
        << status.message() << std::endl;
    return;
  }
  for (const std::string& n : notes) err << "libreyolod: SIGHUP: " << n << "\n";
  err << "libreyolod: SIGHUP: reloaded " << absl::StrJoin(ReloadableKeys(), ", ") << std::endl;
}

// Serves until a drain: the signal loop on `signal_fd` (its write end `signal_write_fd`, which
// the lease watcher writes to), the lease watcher, the reload thread.
int Serve(Daemon& daemon, const DaemonConfig& config, const ParsedFlags& flags, int signal_fd,
          int signal_write_fd, std::ostream& err) {
  std::atomic<bool> stopped{false};
  std::thread lease_thread;
  if (!config.lease_dir.empty()) {
    lease_thread = std::thread([&] {
      RunGuarded("lease watcher", "libreyolod keeps serving and no longer stops by itself", [&] {
        WatchLeases([&] { return daemon.Busy(); }, config.lease_dir, signal_write_fd, stopped);
      });
    });
  }
  // The reload runs off the signal thread (issue 40 A.7): one that blocks on a file cannot keep
  // SIGTERM from draining.
  ReloadRunner reloader([&] { ReloadDaemon(daemon, flags, err); });
  const SignalLoopTarget target{[&] { daemon.Shutdown(); },
                                [&] { return daemon.drain_timeout_s(); }, config.lease_dir};
  std::thread signal_thread([&] {
    RunGuarded("signal loop", "libreyolod drains: it could not act on a SIGTERM any more",
               [&] { (void)RunSignalLoop(signal_fd, reloader, target, err); },
               [&](const std::string&) { daemon.Shutdown(); });
  });
  daemon.Wait();
  signal_thread.join();
  stopped = true;
  if (lease_thread.joinable()) lease_thread.join();
  if (!reloader.Stop(std::chrono::seconds(2))) {
    // Drained; the blocked reload still uses the daemon, which is therefore not destroyed.
    err << "libreyolod: stopped (a reload is still blocked reading its files; exiting "
           "without waiting for it)"
        << std::endl;
    std::_Exit(kDaemonExitOk);
  }
  err << "libreyolod: stopped" << std::endl;
  return kDaemonExitOk;
}

}  // namespace

int DaemonMain(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
               const std::string& worker_name) {
  RaiseDescriptorLimit();
  if (!args.empty() && args[0] == "scrub") return ScrubMain({args.begin() + 1, args.end()}, out, err);
  int pipe_fds[2] = {-1, -1};
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    err << "libreyolod: error: pipe() failed\n";
    return kDaemonExitUnexpected;
  }
  // Both ends stay open for the life of the process: a signal handler may write at any time.
  // Installed before anything can take long: a SIGHUP or SIGUSR1 during start-up is handled
  // (a reload once serving, a log line), never the default action that kills the process.
  if (absl::Status s = InstallDaemonSignalHandlers(pipe_fds[1]); !s.ok()) {
    err << "libreyolod: error: " << s.message() << "\n";
    return kDaemonExitUnexpected;
  }
  // argv is parsed once: start-up and every SIGHUP reload apply these flags over the file.
  absl::StatusOr<ParsedFlags> flags = ParseDaemonFlags(args);
  if (!flags.ok()) {
    err << "libreyolod: error: " << flags.status().message()
        << "\nRun 'libreyolod --help' for the flags.\n";
    return kDaemonExitConfig;
  }
  if (flags->help) {
    out << DaemonFlagsHelp();
    return kDaemonExitOk;
  }
  absl::StatusOr<DaemonConfig> config = LoadDaemonConfigWithFlags(*flags);
  if (!config.ok()) {
    err << "libreyolod: error: " << config.status().message() << "\n";
    return kDaemonExitConfig;
  }
  // gRPC stays initialised until the process exits. Otherwise ~grpc::Server, after the drain,
  // runs the last grpc_shutdown, which joins gRPC's executor threads; with gRPC 1.51 one of them
  // may be polling up to ~10 s for a timer left by a large stream (grpc/grpc#41050): every stop
  // after a ReadArtifact download took 10 s more (a private daemon's client waits for that).
  grpc_init();
  std::vector<std::string> warnings;
  auto daemon = Daemon::Start(*config, &warnings, worker_name);
  for (const std::string& w : warnings) err << "libreyolod: warning: " << w << "\n";
  if (!daemon.ok()) {
    err << "libreyolod: error: " << daemon.status().message() << "\n";
    return DaemonExitCodeForStartStatus(daemon.status());
  }
  err << ServingLine(*config, **daemon) << std::flush;
  return Serve(**daemon, *config, *flags, pipe_fds[0], pipe_fds[1], err);
}

}  // namespace libreyolo::daemon
