// The production JobRunner: turns a stored job into the engine's job spec, resolves its inputs
// in the daemon's directories (or, on private daemons, the caller's paths), runs it in a scratch
// directory and publishes the artifacts into the store.
#ifndef LIBREYOLO_SERVER_DAEMON_ENGINE_RUNNER_H_
#define LIBREYOLO_SERVER_DAEMON_ENGINE_RUNNER_H_

#include <mutex>
#include <string>

#include "server/daemon/daemon_config.h"
#include "server/daemon/job_runner.h"
#include "server/daemon/job_store.h"

namespace libreyolo::daemon {

class EngineRunner : public JobRunner {
 public:
  EngineRunner(const LiveConfig& config, JobStore* store) : config_(config), store_(store) {}
  RunOutcome Run(const v1::Job& job, const std::function<void(const RunProgress&)>& progress,
                 const engine::CancelToken& cancel) override;

 private:
  const LiveConfig& config_;
  JobStore* store_;
  // LibTorch's profiler and its thread settings are per process: jobs on different devices
  // take turns (see docs/rpc.md, "Devices").
  std::mutex engine_mu_;
};

// cli.md's exit code for an engine status: 0 ok, 2 bad input (NOT_FOUND, INVALID_ARGUMENT,
// FAILED_PRECONDITION), 3 no profile (OUT_OF_RANGE), 1 anything else.
int ExitCodeFor(const absl::Status& status);

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_ENGINE_RUNNER_H_
