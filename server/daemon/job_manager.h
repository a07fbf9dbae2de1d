// The daemon's job table: submission with limits, one queue per device (priority first, then
// fair across users, FIFO per user), one job thread per device (the runner puts each device's
// jobs in its own engine worker process), progress events with
// sequence numbers for resumable watching, cancellation, recovery after a crash, retention.
// Every state change is persisted through the JobStore before it is visible to callers.
#ifndef LIBREYOLO_SERVER_DAEMON_JOB_MANAGER_H_
#define LIBREYOLO_SERVER_DAEMON_JOB_MANAGER_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "server/daemon/auth.h"
#include "server/daemon/daemon_config.h"
#include "server/daemon/job_runner.h"
#include "server/daemon/job_store.h"
#include "server/daemon/prometheus.h"

namespace libreyolo::daemon {

class JobManager {
 public:
  // `devices` are normalised names ("cpu", "cuda:0"), the first being the default.
  JobManager(JobStore* store, JobRunner* runner, std::vector<std::string> devices, Limits limits,
             Retention retention);
  ~JobManager();  // Drain(0) if still running

  // Loads the store: jobs that were running when the daemon died become FAILED with a reason,
  // queued jobs are queued again in their order, finished ones stay readable.
  absl::Status Recover(std::vector<std::string>* warnings);
  void Start();  // the device workers and the retention sweep
  // Stops accepting (UNAVAILABLE), lets running jobs finish until `deadline`, then cancels them
  // and waits for the workers. Queued jobs stay queued on disk for the next start.
  void Drain(std::chrono::milliseconds deadline);
  // The first step of a drain: SubmitJob answers UNAVAILABLE from now on.
  void StopAccepting() { accepting_ = false; }
  // SIGHUP: new limits and retention for submissions and sweeps from now on; queued and
  // running jobs are not touched.
  void SetLimits(const Limits& limits, const Retention& retention);

  // `request` already validated by the service. RESOURCE_EXHAUSTED for full queues/limits.
  absl::StatusOr<v1::Job> Submit(const Identity& who, const v1::SubmitJobRequest& request,
                                 const std::string& device);
  // NOT_FOUND for unknown ids and for other users' jobs (their existence is not disclosed).
  absl::StatusOr<v1::Job> Get(const Identity& who, const std::string& id) const;
  absl::StatusOr<v1::ListJobsResponse> List(const Identity& who,
                                            const v1::ListJobsRequest& request) const;
  absl::StatusOr<v1::Job> Cancel(const Identity& who, const std::string& id);

  // Calls `send` for each event with sequence >= from (in order) and returns when the job's
  // last event was sent, `send` returns false (client gone), or `stop()` turns true.
  absl::Status Watch(const Identity& who, const std::string& id, int64_t from,
                     const std::function<bool(const v1::JobEvent&)>& send,
                     const std::function<bool()>& stop);

  // Resolves a job the caller may read, for artifacts and readers.
  absl::StatusOr<v1::Job> Readable(const Identity& who, const std::string& id) const {
    return Get(who, id);
  }

  MetricsSnapshot Metrics() const;
  const std::vector<std::string>& devices() const { return devices_; }
  const JobRunner& runner() const { return *runner_; }
  int32_t QueueLength(const std::string& device) const;
  std::string RunningJob(const std::string& device) const;
  // Whether any job is queued or running (a private daemon stops itself only when not).
  bool Busy() const;
  bool accepting() const { return accepting_.load(); }

 private:
  struct Entry {
    v1::Job job;
    std::vector<v1::JobEvent> events;
    engine::CancelToken cancel;
    int64_t submit_order = 0;
  };
  struct DeviceState {
    std::thread worker;
    std::string running;                                // job id
    std::map<std::string, int64_t> last_start_by_user;  // fairness
  };

  bool Visible(const Identity& who, const v1::Job& job) const;
  // Queued jobs of `device` in the order they will run.
  std::vector<Entry*> QueueOrderLocked(const std::string& device) const;
  void AppendEventLocked(Entry& e, const std::string& stage, int64_t done, int64_t total,
                         const std::string& message);
  void PersistLocked(const Entry& e);
  void RefreshQueuePositionsLocked(const std::string& device);
  void WorkerLoop(const std::string& device);
  void RunOne(const std::string& device, Entry& e);
  void SweepRetention();
  int64_t NowMs() const;

  JobStore* store_;
  JobRunner* runner_;
  std::vector<std::string> devices_;
  mutable std::mutex mu_;
  Limits limits_;        // guarded by mu_
  Retention retention_;  // guarded by mu_
  std::condition_variable work_cv_;    // workers: a job was queued, or stopping
  std::condition_variable events_cv_;  // watchers: an event was appended
  std::map<std::string, std::unique_ptr<Entry>> jobs_;
  std::map<std::string, DeviceState> device_state_;
  std::map<std::string, std::string> request_ids_;  // owner + "/" + request_id -> job id
  int64_t next_submit_order_ = 0;
  int64_t starts_ = 0;
  int64_t submitted_total_ = 0;
  std::atomic<bool> accepting_{true};
  bool stopping_ = false;
  bool drained_ = false;  // the drain is over: open streams end UNAVAILABLE
  std::thread retention_thread_;
  std::condition_variable retention_cv_;
  std::atomic<int64_t> watchers_{0};
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::vector<std::string> persist_errors_;
};

// "cpu" -> "cpu"; "0" / "cuda:0" -> "cuda:0"; anything else INVALID_ARGUMENT.
absl::StatusOr<std::string> NormaliseDevice(const std::string& device);

// A fresh job id: 16 lowercase hex characters from a random source, prefixed by the date
// ("20261129-3f9a1c0b7e2d4a55") so ids sort by submission day.
std::string NewJobId();

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_JOB_MANAGER_H_
