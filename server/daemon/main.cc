// libreyolod: the profiling daemon. Configuration from --config FILE plus flags; SIGTERM or
// SIGINT drains running jobs (drain_timeout_s) and exits 0.
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "server/daemon/daemon.h"
#include "server/daemon/daemon_config.h"
#include "server/engine/cpu_threads.h"

namespace {

// Libraries start threads before main (OpenBLAS's pool, for one), so blocking signals for a
// sigwait thread is not enough: a handler that writes the signal number to a pipe is.
int g_signal_pipe[2] = {-1, -1};

void OnSignal(int sig) {
  const char byte = static_cast<char>(sig);
  (void)!::write(g_signal_pipe[1], &byte, 1);
}

}  // namespace

int main(int argc, char** argv) {
  // libgomp reads OMP_WAIT_POLICY when it loads: idle OpenMP threads must not spin on a shared
  // box, so restart once with PASSIVE unless the user chose a policy (cpu_threads.h).
  libreyolo::engine::ReexecWithPassiveOmpWaitPolicy(argv);
  using libreyolo::daemon::DaemonConfig;
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (::pipe(g_signal_pipe) != 0) {
    std::cerr << "libreyolod: error: pipe() failed\n";
    return 1;
  }
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  DaemonConfig config;
  DaemonConfig scratch;
  auto flags = libreyolo::daemon::ApplyDaemonFlags(args, &scratch);
  if (!flags.ok()) {
    std::cerr << "libreyolod: error: " << flags.status().message()
              << "\nRun 'libreyolod --help' for the flags.\n";
    return 2;
  }
  if (flags->help) {
    std::cout << libreyolo::daemon::DaemonFlagsHelp();
    return 0;
  }
  if (!flags->config_file.empty()) {
    auto loaded = libreyolo::daemon::LoadDaemonConfig(flags->config_file);
    if (!loaded.ok()) {
      std::cerr << "libreyolod: error: " << loaded.status().message() << "\n";
      return 2;
    }
    config = *std::move(loaded);
  }
  // Flags win over the file.
  if (auto again = libreyolo::daemon::ApplyDaemonFlags(args, &config); !again.ok()) {
    std::cerr << "libreyolod: error: " << again.status().message() << "\n";
    return 2;
  }
  if (auto valid = libreyolo::daemon::ValidateDaemonConfig(config); !valid.ok()) {
    std::cerr << "libreyolod: error: " << valid.message() << "\n";
    return 2;
  }
  std::vector<std::string> warnings;
  auto daemon = libreyolo::daemon::Daemon::Start(config, &warnings);
  for (const std::string& w : warnings) std::cerr << "libreyolod: warning: " << w << "\n";
  if (!daemon.ok()) {
    std::cerr << "libreyolod: error: " << daemon.status().message() << "\n";
    return 1;
  }
  std::cerr << "libreyolod: serving on";
  size_t tcp = 0;
  for (const std::string& a : config.listen) {
    if (a.rfind("unix:", 0) == 0 || tcp >= (*daemon)->tcp_ports().size()) {
      std::cerr << " " << a;
    } else {
      std::cerr << " " << a << " (port " << (*daemon)->tcp_ports()[tcp++] << ")";
    }
  }
  std::cerr << std::endl;
  std::thread signal_thread([&] {
    char byte = 0;
    while (::read(g_signal_pipe[0], &byte, 1) != 1) {
    }
    const int sig = byte;
    std::cerr << "libreyolod: " << (sig == SIGTERM ? "SIGTERM" : "SIGINT") << ": draining (up to "
              << config.drain_timeout_s << " s)" << std::endl;
    (*daemon)->Shutdown();
  });
  (*daemon)->Wait();
  signal_thread.join();
  std::cerr << "libreyolod: stopped" << std::endl;
  return 0;
}
