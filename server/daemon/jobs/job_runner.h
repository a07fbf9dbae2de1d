// What a device's job thread calls to run one job. The production runner (engine_runner.h)
// drives the LibTorch engine in worker processes; the interface keeps the queue and the service
// free of it.
#ifndef LIBREYOLO_SERVER_DAEMON_JOBS_JOB_RUNNER_H_
#define LIBREYOLO_SERVER_DAEMON_JOBS_JOB_RUNNER_H_

#include <atomic>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/job/progress.h"
#include "libreyolo/profiler/v1/profiler.pb.h"
#include "server/engine/engine.h"

namespace libreyolo::daemon {

namespace v1 = ::libreyolo::profiler::v1;

// The lane attach jobs (JOB_KIND_ATTACH) queue and run on: it holds no device (the traced
// processes hold their own), so its time is not billed as device time in the fair share.
inline constexpr char kAttachLane[] = "attach";

// Who made a job's profile (Job.tool; JobRunner::ToolFor): our LibTorch engine, the Python
// LibreYOLO's own `libreyolo profile` (a delegated job, issue 38 §4), or the traced process's
// own Kineto (an attach job, issue 37).
inline constexpr char kToolEngine[] = "libreyolo-engine";
inline constexpr char kToolPython[] = "python-libreyolo";
inline constexpr char kToolKineto[] = "kineto-on-demand";

// A job reports its progress as JobProgress through a ProgressFn (common/job/progress.h, the
// one type of it the engine, its worker and the daemon share).

struct RunOutcome {
  absl::Status status;                 // OK, CANCELLED, or why it failed
  int exit_code = 0;                   // what `libreyolo profile run|infer` exits with
  std::vector<v1::Artifact> artifacts;  // published into the store
  double step_ms = 0, img_per_s = 0;
  std::string bound;
  // Said of a cancelled job beside who cancelled it: "the engine worker ... killed after not
  // stopping within 30 s of the cancel".
  std::string cancel_note;
  // An attach job's processes: traced and skipped, each with why (Job.attach_targets).
  std::vector<v1::AttachTarget> attach_targets;
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
  virtual RunOutcome Run(const v1::Job& job, const ProgressFn& progress,
                         const engine::CancelToken& cancel) = 0;
  // Who will make `job`'s profile (Job.tool, set when it starts): "libreyolo-engine",
  // "python-libreyolo", "kineto-on-demand" (server/daemon/external/produced_files.h).
  virtual std::string ToolFor(const v1::Job& job) const {
    (void)job;
    return kToolEngine;
  }
  virtual EngineFacts Facts() const { return {}; }
  // One line about `device` ("cpu, 16 cores, BLAS ...", "NVIDIA H200, 132 SMs, ...").
  virtual std::string DescribeDevice(const std::string& device) const { return device; }
  // Engine workers that ended without being asked to (each is replaced): a crash, an exit, a
  // death before it was ready, a kill after the cancel grace, a lost CUDA context.
  virtual int64_t WorkerRestarts() const { return 0; }
};

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_JOBS_JOB_RUNNER_H_
