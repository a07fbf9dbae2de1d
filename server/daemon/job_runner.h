// What a device worker calls to run one job. The production runner (engine_runner.h) drives the
// LibTorch engine; the interface keeps the queue and the service free of it.
#ifndef LIBREYOLO_SERVER_DAEMON_JOB_RUNNER_H_
#define LIBREYOLO_SERVER_DAEMON_JOB_RUNNER_H_

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "libreyolo/profiler/v1/profiler.pb.h"
#include "server/engine/engine.h"

namespace libreyolo::daemon {

namespace v1 = ::libreyolo::profiler::v1;

struct RunProgress {
  std::string stage;
  int64_t done = 0, total = 0;
  std::string message;
};

struct RunOutcome {
  absl::Status status;                 // OK, CANCELLED, or why it failed
  int exit_code = 0;                   // what `libreyolo profile run|infer` exits with
  std::vector<v1::Artifact> artifacts;  // published into the store
  double step_ms = 0, img_per_s = 0;
  std::string bound;
};

class JobRunner {
 public:
  virtual ~JobRunner() = default;
  // Runs `job` to completion on its device. `cancel` is observed between steps. Must not
  // throw; every failure comes back in the outcome.
  virtual RunOutcome Run(const v1::Job& job,
                         const std::function<void(const RunProgress&)>& progress,
                         const engine::CancelToken& cancel) = 0;
};

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_JOB_RUNNER_H_
