// What a device's job thread calls to run one job. The production runner (engine_runner.h)
// drives the LibTorch engine in worker processes; the interface keeps the queue and the service
// free of it.
#ifndef LIBREYOLO_SERVER_DAEMON_JOBS_JOB_RUNNER_H_
#define LIBREYOLO_SERVER_DAEMON_JOBS_JOB_RUNNER_H_

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
  // Said of a cancelled job beside who cancelled it: "the engine worker ... killed after not
  // stopping within 30 s of the cancel".
  std::string cancel_note;
};

// What the engine is, as GetDaemonInfo reports it.
struct EngineFacts {
  std::string libtorch_version;  // "2.11.0+cu130"
  std::string cuda_version;      // "" for a CPU-only LibTorch
  int cuda_device_count = 0;
};

class JobRunner {
 public:
  virtual ~JobRunner() = default;
  // Runs `job` to completion on its device. `cancel` is observed between steps. Must not
  // throw; every failure comes back in the outcome.
  virtual RunOutcome Run(const v1::Job& job,
                         const std::function<void(const RunProgress&)>& progress,
                         const engine::CancelToken& cancel) = 0;
  virtual EngineFacts Facts() const { return {}; }
  // One line about `device` ("cpu, 16 cores, BLAS ...", "NVIDIA H200, 132 SMs, ...").
  virtual std::string DescribeDevice(const std::string& device) const { return device; }
  // Engine workers that ended without being asked to (each is replaced): a crash, an exit, a
  // death before it was ready, a kill after the cancel grace, a lost CUDA context.
  virtual int64_t WorkerRestarts() const { return 0; }
};

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_JOBS_JOB_RUNNER_H_
