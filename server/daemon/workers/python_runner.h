// Issue 38 §4: a RUN or INFER job whose weights are a native checkpoint of a family the engine
// lacks (yolox, rtdetr, ...) runs the Python LibreYOLO's own `libreyolo profile run|infer` (the
// CLI the daemon's `python_tool` names), as a job of the daemon like any other: in the job's
// device slot (CUDA_VISIBLE_DEVICES / --device, the slot's threads), its progress lines turned
// into events, its cancel (TERM to its process group, KILL after cancel_grace_s; nothing of the
// group left), the job's wall-time limit, and its files (profile.json, its trace,
// profile_repeat.json) taken from a drop folder (external/produced_files.h), checked (the
// profile must parse) and stored as the job's artifacts. The outcome's `tool` is
// "python-libreyolo". Nothing of the Python tool is copied into ours: it runs as it is.
//
// Plain C++ over the store and common/ (no gRPC, no LibTorch; the checkpoint reader is
// torch-free).
#ifndef LIBREYOLO_SERVER_DAEMON_WORKERS_PYTHON_RUNNER_H_
#define LIBREYOLO_SERVER_DAEMON_WORKERS_PYTHON_RUNNER_H_

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "libreyolo/profiler/v1/profiler.pb.h"
#include "server/daemon/config/daemon_config.h"
#include "server/daemon/jobs/job_runner.h"
#include "server/daemon/store/job_store.h"

namespace libreyolo::daemon {

// Whether a job goes to the Python tool. For a RUN or INFER job whose weights (resolved as
// job_inputs.cc resolves them: a plain name in models_dir, a local path) are a native
// torch.save checkpoint whose `model_family` is not yolo9: that family ("yolox"). nullopt for
// everything the engine runs or reports on itself: LibreYOLO9 checkpoints, TorchScript exports,
// the default random init, a missing or unreadable file, an ATTACH job.
//
// `why_not` (may be null) is set, for a delegated family only, when this daemon cannot run it:
// no Python tool configured ("this daemon has no Python LibreYOLO to run yolox: set python_tool
// ..."), or an option of the job that the Python tool has no flag for ("--nproc 2: the Python
// LibreYOLO's `profile run` has no data-parallel mode"). The router fails such a job at once
// with that message (exit 2); it is "" otherwise.
std::optional<std::string> DelegatedFamily(const v1::Job& job, const DaemonConfig& config,
                                           std::string* why_not);

// The Python tool's command line for `job` (resolved: ResolveJobInputs), writing into
// `project` (its --project): ["<python_tool>", "profile", "run"|"infer", flags...].
// INVALID_ARGUMENT naming the option the Python tool has no flag for (DelegatedFamily's
// why_not says the same before the job starts). Exposed for tests.
absl::StatusOr<std::vector<std::string>> PythonToolArgs(const v1::Job& job,
                                                        const std::string& python_tool,
                                                        const std::string& project);

// One progress line of the Python tool's output as an event, nullopt for any other line.
std::optional<RunProgress> ParsePythonProgress(const std::string& line);

class PythonRunner : public JobRunner {
 public:
  PythonRunner(const LiveConfig& config, JobStore* store);

  // Runs `job` (which DelegatedFamily sent here) with the Python tool to its end. Never throws.
  RunOutcome Run(const v1::Job& job, const std::function<void(const RunProgress&)>& progress,
                 const engine::CancelToken& cancel) override;

  // Overrides the config's cancel_grace_s (tests).
  void set_cancel_grace(std::chrono::milliseconds grace) { cancel_grace_ = grace; }

 private:
  const LiveConfig& config_;
  JobStore* store_;
  std::optional<std::chrono::milliseconds> cancel_grace_;
};

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_WORKERS_PYTHON_RUNNER_H_
