// One engine worker process, as the daemon sees it: started from the worker executable
// (`libreyolod-worker ...`, server/worker/worker_main.h) with one end of a socketpair, asked to
// run one job at a time, and watched. A worker that dies (a signal, an OOM kill, an exit) fails
// only the job it was running, with the signal and the stage it was in; a worker that does not
// stop within the cancel grace after a cancel is killed. Torch-free: the daemon never loads
// LibTorch for its own work.
#ifndef LIBREYOLO_SERVER_DAEMON_WORKERS_ENGINE_WORKER_H_
#define LIBREYOLO_SERVER_DAEMON_WORKERS_ENGINE_WORKER_H_

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "libreyolo/worker/v1/worker.pb.h"
#include "server/daemon/jobs/job_runner.h"

namespace libreyolo::daemon {

namespace wv1 = ::libreyolo::worker_wire::v1;

// The engine worker executable's file name, as installed and as built.
inline constexpr char kWorkerExecutableName[] = "libreyolod-worker";

// The worker executable the daemon starts: `configured` (worker_binary) when set, else
// `name` beside `daemon_binary` (an install: both in one bin directory) or in the build tree's
// server/worker/ (daemon_binary in server/daemon/). NOT_FOUND naming every place looked at and
// the ways out (the daemon cannot run a job without it).
absl::StatusOr<std::string> FindWorkerExecutable(const std::string& configured,
                                                 const std::string& daemon_binary,
                                                 const std::string& name = kWorkerExecutableName);

class EngineWorker {
 public:
  // Starts `executable --fd 3 --device <device> --parent <our pid> [extra_args]` and waits up to
  // `hello_timeout` for its Hello. UNAVAILABLE naming the cause when it cannot be started, dies
  // or stays silent (it is killed then).
  static absl::StatusOr<std::unique_ptr<EngineWorker>> Start(
      const std::string& executable, const std::string& device,
      std::chrono::milliseconds hello_timeout, const std::vector<std::string>& extra_args = {});
  // Start() in two halves, so that one thread can start several workers and then wait for them
  // together. The worker's parent-death signal follows the *thread* that spawned it: spawn from
  // a thread that lives as long as the worker should (the daemon's main thread, a device's job
  // thread), never from a short-lived helper thread.
  static absl::StatusOr<std::unique_ptr<EngineWorker>> Spawn(
      const std::string& executable, const std::string& device,
      const std::vector<std::string>& extra_args = {});
  absl::Status AwaitHello(std::chrono::milliseconds timeout);
  ~EngineWorker();  // Stop(5 s)

  // How a job is watched: the deadlines after which its worker is killed.
  struct Supervision {
    // After a cancel, how long the worker may take to stop.
    std::chrono::milliseconds cancel_grace{30000};
    // The progress watchdog: the longest time without a message from the worker (a step's
    // progress, a stage's start), whatever the stage.
    std::chrono::milliseconds progress_timeout{600000};
    // The job's wall-time limit, from the moment it is sent to the worker.
    std::chrono::milliseconds wall_limit{86400000};
    // Not a deadline: the bound the job is sent with (RunJob.max_decoded_pixels), the most
    // pixels the engine decodes from one image (limits.max_decoded_pixels); 0 = the engine's.
    int64_t max_decoded_pixels = 0;
  };
  struct JobEnd {
    // The worker's Done, when it sent one.
    std::optional<wv1::Done> done;
    // Why there is no Done: "killed by signal 11 (Segmentation fault)", "exited with code 7",
    // "killed after not stopping within 30 s of the cancel", "killed: no progress for 600 s",
    // "killed: the job's wall-time limit of 3600 s was reached".
    std::string death;
    bool cancelled_by_kill = false;  // it ignored a cancel past the grace and was killed
    bool wall_limit_reached = false;  // killed at the job's wall-time limit
    bool stalled = false;             // killed by the progress watchdog
    bool stopped = false;             // it was stopped (state T: SIGSTOP, a debugger) when killed
  };
  // Sends the job and relays its progress until the worker's Done or its death. Sets of
  // `cancel` are forwarded (observed between the engine's steps); a worker still running
  // `cancel_grace` after the first one is killed, and so is one silent for `progress_timeout`
  // (stopped, hung) or still running at `wall_limit`. The last progress seen is in LastStage().
  // `rank`: this worker's place in a data-parallel job (world size 1 or unset: none).
  JobEnd RunJob(const v1::Job& resolved_job, const std::string& project_dir,
                const ProgressFn& progress, const engine::CancelToken& cancel,
                const Supervision& supervision, const wv1::RankPlacement& rank = {});

  // Asks the worker to stop, kills it after `grace`, reaps it. Idempotent.
  void Stop(std::chrono::milliseconds grace);

  // Whether an idle worker can take a job (issue 40 A.4): "" when it can; else what happened
  // to it while it waited, after which it is reaped and alive() is false: "died while idle:
  // killed by signal 9 (Killed)" (the OOM killer prefers an idle worker), "was stopped while
  // idle (state T: SIGSTOP or a debugger) and was killed", "closed its channel while idle
  // (...)". Call between jobs only.
  std::string CheckIdle();

  bool alive() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  const wv1::Hello& hello() const { return hello_; }
  // "measuring, step 3/150": where the last job was when its worker died.
  std::string LastStage() const;

 private:
  EngineWorker(pid_t pid, int fd, std::string device)
      : pid_(pid), fd_(fd), device_(std::move(device)) {}
  // Waits for the process to end (killing it after `grace`) and describes how it ended.
  std::string Reap(std::chrono::milliseconds grace);

  pid_t pid_;
  int fd_;
  std::string device_;
  wv1::Hello hello_;
  JobProgress last_progress_;
};

// "killed by signal 9 (Killed)", "exited with code 3", from a waitpid status.
std::string DescribeWaitStatus(int status);

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_WORKERS_ENGINE_WORKER_H_
