// The production JobRunner: runs each device's jobs in an engine worker process (one per device
// slot, engine_worker.h) that it starts, supervises and restarts, and publishes what a job wrote
// into the store. The daemon itself never loads LibTorch for its own work: the engine's facts it
// reports (GetDaemonInfo) come from the workers' Hello.
//
// A worker that dies fails only its running job ("the engine worker for cpu (pid N) was killed
// by signal 11 (Segmentation fault) during measuring, step 3/150"); the next job on that device
// starts a fresh worker. Jobs on different devices run at the same time, each in its own process.
#ifndef LIBREYOLO_SERVER_DAEMON_WORKERS_ENGINE_RUNNER_H_
#define LIBREYOLO_SERVER_DAEMON_WORKERS_ENGINE_RUNNER_H_

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "server/daemon/config/daemon_config.h"
#include "server/daemon/jobs/job_runner.h"
#include "server/daemon/store/job_store.h"
#include "server/daemon/workers/engine_worker.h"

namespace libreyolo::daemon {

// A failed data-parallel job's cause, from its ranks' ends (`finished[r]`: the order in which
// rank r ended, 0 first): a rank whose worker died on its own (a signal, an exit; not a kill of
// the daemon's: cancel grace, watchdog, wall-time limit) is the cause, the first of them to end;
// else the first rank to fail. A dead rank's peers report "Connection closed by peer" from c10d
// at once, often before the daemon has read the death from the worker's pipe, so the order of
// the ends alone would blame a survivor. -1 when every rank succeeded.
int GangCauseRank(const std::vector<EngineWorker::JobEnd>& ends,
                  const std::vector<int64_t>& finished);

class EngineRunner : public JobRunner {
 public:
  // `worker_executable`: the daemon's own binary ("/proc/self/exe").
  EngineRunner(const LiveConfig& config, JobStore* store, std::string worker_executable);
  ~EngineRunner() override;  // StopWorkers()

  // Starts `device`'s worker and waits for it to be ready (LibTorch loaded). UNAVAILABLE with the
  // reason when it cannot start; the daemon's start-up fails on the first one.
  absl::Status StartWorker(const std::string& device);
  // Starts the workers of `devices` together (spawned from the calling thread, which must
  // outlive them: see EngineWorker::Spawn) and waits for each. One warning per device whose
  // worker did not start; its jobs try again and fail with the reason.
  void StartWorkers(const std::vector<std::string>& devices, std::vector<std::string>* warnings);
  // Stops every worker (after the job manager's drain: they are idle). Idempotent.
  void StopWorkers();

  RunOutcome Run(const v1::Job& job, const ProgressFn& progress,
                 const engine::CancelToken& cancel) override;
  EngineFacts Facts() const override;
  std::string DescribeDevice(const std::string& device) const override;
  // Every worker death (engine_worker.h's JobEnd.death, a start that died before its Hello, a
  // lost CUDA context), each also one log line: the replacements the daemon makes.
  int64_t WorkerRestarts() const override { return deaths_.load(); }

  // How long a worker may take to stop after a cancel before it is killed.
  void set_cancel_grace(std::chrono::milliseconds grace) { cancel_grace_ = grace; }
  // Overrides the config's progress_timeout_s (tests: a watchdog in milliseconds).
  void set_progress_timeout(std::chrono::milliseconds timeout) { progress_timeout_ = timeout; }

 private:
  struct Slot {
    std::unique_ptr<EngineWorker> worker;
    wv1::Hello hello;        // the latest worker's
    std::string start_error;  // why the latest start failed
  };
  // The device's live worker, starting one if there is none (a restart after a death).
  absl::StatusOr<EngineWorker*> EnsureWorker(const std::string& device);
  // What a device's worker is started with beyond its channel (nothing today).
  std::vector<std::string> WorkerArgs(const std::string& device) const;
  // Counts a worker's death and, with `log`, writes its line ("libreyolod: <what>; N worker
  // deaths since start").
  void RecordDeath(const std::string& what, bool log = true);
  // The deadlines a job's worker is watched with.
  EngineWorker::Supervision Watch(const v1::Job& job, const DaemonConfig& config) const;
  // What a worker's end of a job means: OK (its Done said so), or why the job failed ("the
  // engine worker for cpu (pid N) was killed by signal 9 ... during measuring, step 3/150"),
  // counting a death. A worker killed after ignoring a cancel sets `cancel_note`.
  absl::Status EndStatus(const v1::Job& job, const std::string& device, pid_t pid,
                         const EngineWorker& worker, const EngineWorker::JobEnd& end,
                         const DaemonConfig& config, std::string* cancel_note);
  // Stores the files a worker wrote in `job_dir` as the job's artifacts, each named `prefix` +
  // its file name; for a job without `prefix`, also a --repeat job's earlier trial folders
  // (named as common/io/trial_artifacts.h says) and the repeat file at the project root.
  absl::Status Publish(const v1::Job& job, const std::string& job_dir, const std::string& scratch,
                       const std::string& prefix, const DaemonConfig& config,
                       const ProgressFn& progress, RunOutcome* out);
  // engine_runner_ranks.cc: a data-parallel job, one rank per device of job.devices on that
  // device's worker, all at once; rank 0 serves the rendezvous on a free loopback port. The
  // first rank to fail stops the others (a cancel; their workers are killed past the grace),
  // and the job fails with its cause's reason (GangCauseRank), "rank R of N (device): ...". On
  // success every rank's files are published (common/io/rank_artifacts.h names them).
  absl::Status RunRanks(const v1::Job& job, const v1::Job& resolved, const std::string& scratch,
                        const DaemonConfig& config, const ProgressFn& progress,
                        const engine::CancelToken& cancel, RunOutcome* out);

  const LiveConfig& config_;
  JobStore* store_;
  const std::string executable_;
  std::chrono::milliseconds hello_timeout_{120000};
  std::chrono::milliseconds cancel_grace_{30000};
  std::optional<std::chrono::milliseconds> progress_timeout_;
  mutable std::mutex mu_;  // slots_; a slot's worker is used by its device's job thread only
  std::map<std::string, Slot> slots_;
  wv1::Hello first_hello_;
  std::atomic<int64_t> deaths_{0};
};

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_WORKERS_ENGINE_RUNNER_H_
