// The engine worker: `libreyolod-worker --fd N --device D --parent PID` (server/worker/main.cc),
// started by the daemon (server/daemon/workers/engine_worker.h), one per device slot. It runs the
// LibTorch engine for one job at a time and talks to the daemon over the inherited socket
// (worker_protocol.h). It dies with its daemon (a parent-death signal, and the socket's end),
// gives device memory back between jobs, and exits after a job that left its CUDA context
// unusable so the daemon starts a fresh one.
#ifndef LIBREYOLO_SERVER_WORKER_WORKER_MAIN_H_
#define LIBREYOLO_SERVER_WORKER_WORKER_MAIN_H_

#include <string>
#include <vector>

#include "common/job/progress.h"

namespace libreyolo::worker {

// Called at every progress event of a job, after it is sent. Test builds of libreyolod install
// one that crashes or hangs the worker on cue (fault_hook.h); production has none.
using FaultHook = ProgressFn;

// Runs the worker for `args` (its command line after the program name). Returns the process's
// exit code: 0 when the daemon said Stop or went away, 2 for bad arguments, 1 for a broken
// channel, 3 after a job that lost the CUDA context.
int WorkerMain(const std::vector<std::string>& args, const FaultHook& fault_hook);

}  // namespace libreyolo::worker

#endif  // LIBREYOLO_SERVER_WORKER_WORKER_MAIN_H_
