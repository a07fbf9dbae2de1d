// Faults on cue, for tests of the daemon's supervision: compiled only into the test build of
// the worker (libreyolod-worker-test-hooks, started by libreyolod_test_hooks), never into
// libreyolod-worker.
//
// LIBREYOLO_WORKER_FAULT="ACTION@STAGE:N[,ACTION@STAGE:N...]" acts at the progress event of STAGE
// whose `done` is N: segv (a segmentation fault), abort, exit (exit code 7), hang (sleeps,
// ignoring cancel, until killed), stop (SIGSTOP to itself: stopped, as by `kill -STOP`).
// LIBREYOLO_WORKER_FAULT_ONCE=FILE: act only while FILE does not exist, and create it (so the
// restarted worker runs the next job normally).
#ifndef LIBREYOLO_SERVER_WORKER_FAULT_HOOK_H_
#define LIBREYOLO_SERVER_WORKER_FAULT_HOOK_H_

#include "server/worker/worker_main.h"

namespace libreyolo::worker {

FaultHook FaultHookFromEnvironment();

}  // namespace libreyolo::worker

#endif  // LIBREYOLO_SERVER_WORKER_FAULT_HOOK_H_
