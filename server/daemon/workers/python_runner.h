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
#include "server/engine/checkpoint/checkpoint_model.h"

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

// What a native torch.save checkpoint says it is (model_family, size, nc beside its state dict),
// read by the torch-free checkpoint reader from the archive's pickle alone (the file is mapped:
// a large checkpoint's storages are not read). nullopt for anything else: a TorchScript export,
// not a zip, unreadable (the engine loads those and reports on them).
std::optional<engine::CheckpointModel> NativeCheckpointModel(const std::string& path);

// The Python LibreYOLO CLI this daemon runs for `family`'s jobs: `python_tool` when set ("off":
// none), else $LIBREYOLO_PYTHON_ENV/bin/libreyolo, else bin/libreyolo of the project's Python
// environment this daemon was built against (scripts/python-env.sh at configure time).
// FAILED_PRECONDITION when there is none: "this daemon has no Python LibreYOLO to run yolox:
// set python_tool ...".
absl::StatusOr<std::string> PythonToolPath(const DaemonConfig& config, const std::string& family);

// The Python tool's command line for `job` (resolved: ResolveJobInputs), writing into
// `project` (its --project): ["<tool>", "profile", "run"|"infer", flags..., "--", positional].
// `checkpoint_size` is the weights' own size (their metadata), given when the job names none.
// INVALID_ARGUMENT naming the option the Python tool has no flag for, a --size the checkpoint
// is not, or the synthetic dataset; NOT_FOUND for a dataset with no data yaml.
absl::StatusOr<std::vector<std::string>> PythonToolArgs(const v1::Job& job, const std::string& tool,
                                                        const std::string& project,
                                                        const std::string& checkpoint_size,
                                                        const DaemonConfig& config);

// The Python tool's output, line by line, as the job's events: its stages (setting up, each
// training epoch, analysing) and its result lines; nullopt for any other line.
class PythonProgress {
 public:
  explicit PythonProgress(int64_t trials) : trials_(trials) {}
  std::optional<JobProgress> Line(const std::string& line);

 private:
  int64_t trials_;
  int64_t trial_ = 0;
};

class PythonRunner : public JobRunner {
 public:
  PythonRunner(const LiveConfig& config, JobStore* store);

  // Runs `job` (which DelegatedFamily sent here) with the Python tool to its end. Never throws.
  RunOutcome Run(const v1::Job& job, const ProgressFn& progress,
                 const engine::CancelToken& cancel) override;
  std::string ToolFor(const v1::Job& job) const override;

  // Overrides the config's cancel_grace_s (tests).
  void set_cancel_grace(std::chrono::milliseconds grace) { cancel_grace_ = grace; }

 private:
  // Takes the tool's files from `project` (its --project: <kind>/ or, for `trials` > 1, each
  // <kind>_T/ and the repeat file) into the job's artifacts, each profile checked (LoadProfile)
  // before it counts; the headline numbers into `out`.
  absl::Status TakeFiles(const v1::Job& job, const std::string& project, int64_t trials,
                         const DaemonConfig& config, RunOutcome* out);

  const LiveConfig& config_;
  JobStore* store_;
  std::optional<std::chrono::milliseconds> cancel_grace_;
};

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_WORKERS_PYTHON_RUNNER_H_
