// libreyolod: the profiling daemon (server/daemon/daemon_main.h says what it does). The engine
// runs in separate worker processes (libreyolod-worker, server/worker/main.cc): this
// executable links no LibTorch. Exit codes: common/status/exit_code.h, kDaemonExit*.
#include <iostream>
#include <string>
#include <vector>

#include "server/daemon/daemon_main.h"

// The engine worker executable this daemon starts: the test build of the daemon starts the
// worker built with the fault hook (server/worker/fault_hook.h).
#ifndef LIBREYOLO_WORKER_EXECUTABLE
#define LIBREYOLO_WORKER_EXECUTABLE ::libreyolo::daemon::kWorkerExecutableName
#endif

int main(int argc, char** argv) {
  return libreyolo::daemon::DaemonMain(std::vector<std::string>(argv + 1, argv + argc), std::cout,
                                       std::cerr, LIBREYOLO_WORKER_EXECUTABLE);
}
