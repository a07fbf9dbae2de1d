// libreyolod-worker: the engine worker executable (server/worker/worker_main.h), started by
// libreyolod as `libreyolod-worker --fd 3 --device D --parent PID`, one per device slot. It is
// the only executable of the server that links LibTorch: the daemon itself maps none of it, so
// it starts, refuses a second copy and serves RPCs without LibTorch's start-up or memory
// (docs/deploy.md, "Processes"). Never run by hand.
#include <string>
#include <vector>

#include "server/engine/runtime/cpu_threads.h"
#include "server/worker/worker_main.h"
#ifdef LIBREYOLO_WORKER_FAULT_HOOKS
#include "server/worker/fault_hook.h"
#endif

int main(int argc, char** argv) {
  // libgomp reads OMP_WAIT_POLICY when it loads: idle OpenMP threads must not spin on a shared
  // box, so restart once with PASSIVE unless the user chose a policy (cpu_threads.h).
  libreyolo::engine::ReexecWithPassiveOmpWaitPolicy(argv);
#ifdef LIBREYOLO_WORKER_FAULT_HOOKS
  const libreyolo::worker::FaultHook hook = libreyolo::worker::FaultHookFromEnvironment();
#else
  const libreyolo::worker::FaultHook hook;
#endif
  return libreyolo::worker::WorkerMain({argv + 1, argv + argc}, hook);
}
