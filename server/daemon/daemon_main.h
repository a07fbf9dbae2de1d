// libreyolod's whole life but the process's entry point (issue 39 §4): server/daemon/main.cc
// hands argv over, as the client's and the worker's mains do. Configuration from --config FILE
// plus flags (parsed once); SIGTERM or SIGINT drains running jobs (drain_timeout_s) and returns
// 0; SIGHUP reloads the tokens file, admins, limits and retention (docs/deploy.md, "Reload");
// every other signal whose default would end the daemon is logged and ignored
// (daemon_signals.h, docs/deploy.md "Signals"). With --lease-dir it also stops by itself, the
// same way, once it has nothing to run and no live lease (docs/cli.md). The signal loop and the
// lease watcher are daemon_signals.h's RunSignalLoop and WatchLeases, over a pipe a test drives.
#ifndef LIBREYOLO_SERVER_DAEMON_DAEMON_MAIN_H_
#define LIBREYOLO_SERVER_DAEMON_DAEMON_MAIN_H_

#include <ostream>
#include <string>
#include <vector>

#include "server/daemon/workers/engine_worker.h"

namespace libreyolo::daemon {

// `args`: argv[1..]. "scrub ..." checks the store offline (job_store_scrub.h). Returns the
// process's exit code (common/status/exit_code.h, kDaemonExit*): 0 after a drain or --help, 2
// for a bad flag or configuration, the start status's code when the daemon cannot start.
// `worker_name`: the engine worker executable looked for beside the daemon's binary (the test
// build of the daemon names the one built with the fault hook, server/worker/fault_hook.h).
// Writes --help to `out`, every log line to `err`. Installs the process's signal handlers.
int DaemonMain(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
               const std::string& worker_name = kWorkerExecutableName);

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_DAEMON_MAIN_H_
