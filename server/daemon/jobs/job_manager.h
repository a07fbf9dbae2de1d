// The daemon's job table: submission with limits, one queue per device (fair share of device
// time across users; priority, then FIFO, within a user), one job thread per device (the
// runner puts each device's jobs in its own engine worker process), progress events with
// sequence numbers for resumable watching, cancellation, recovery after a crash, retention.
// Every state change is persisted through the JobStore before it is visible to callers. One
// that cannot be (a full state filesystem) puts the manager out of service: it accepts and
// starts no job, and says why (StoreError, metrics, the listener), until RetryStore has written
// what was held back and a probe write passes. A job is never started without a durable
// RUNNING record, so a job that finished is never run again after a restart.
// Files: job_manager.cc (submission, reading, cancel, watch, metrics), job_manager_dispatch.cc
// (queue order, the device workers, store health), job_manager_gang.cc (gangs). Its seams are
// units of their own: admission.h (whether a submission is accepted), gang_placement.h,
// artifact_verifier.h, fair_share.h.
#ifndef LIBREYOLO_SERVER_DAEMON_JOBS_JOB_MANAGER_H_
#define LIBREYOLO_SERVER_DAEMON_JOBS_JOB_MANAGER_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "common/time/clock.h"
#include "server/daemon/config/daemon_config.h"
#include "server/daemon/jobs/admission.h"
#include "server/daemon/jobs/artifact_verifier.h"
#include "server/daemon/jobs/fair_share.h"
#include "server/daemon/jobs/gang_placement.h"
#include "server/daemon/jobs/job_devices.h"
#include "server/daemon/jobs/job_runner.h"
#include "server/daemon/jobs/metrics_snapshot.h"
#include "server/daemon/jobs/user_slots.h"
#include "server/daemon/security/auth.h"
#include "server/daemon/store/job_store.h"

namespace libreyolo::daemon {

class JobManager {
 public:
  // `devices` are normalised names ("cpu", "cuda:0"), the first being the default.
  // Every time the manager records (job and event times, device-time accounting) or measures
  // (uptime, the drain's deadline, progress throttling, retention's and the store retry's
  // intervals) comes from `clock`; tests pass a ManualClock and drive it.
  JobManager(JobStore* store, JobRunner* runner, std::vector<std::string> devices, Limits limits,
             Retention retention, const Clock& clock = Clock::Real());
  ~JobManager();  // Drain(0) if still running

  // Loads the store: jobs that were running when the daemon died become FAILED with a reason,
  // queued jobs are queued again in their order, finished ones stay readable. A recovered state
  // that cannot be recorded (a full state filesystem) does not stop the start: the manager
  // starts out of service with that record held back (RetryStore writes it), and `warnings`
  // says so. Errors only when the store cannot be read at all.
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

  // `request` already validated by the service. Admission (admission.h) decides whether it is
  // accepted: UNAVAILABLE while draining or out of service, INVALID_ARGUMENT for a device this
  // daemon does not serve, ALREADY_EXISTS for a request_id reused with another request,
  // RESOURCE_EXHAUSTED for full queues/limits or a record that cannot be written.
  absl::StatusOr<v1::Job> Submit(const Identity& who, const v1::SubmitJobRequest& request,
                                 const std::string& device);
  // NOT_FOUND for unknown ids and for other users' jobs (their existence is not disclosed).
  absl::StatusOr<v1::Job> Get(const Identity& who, const std::string& id) const;
  absl::StatusOr<v1::ListJobsResponse> List(const Identity& who,
                                            const v1::ListJobsRequest& request) const;
  // A queued job is CANCELLED at once, also while the manager is out of service: when its
  // record cannot be written for lack of space, its stored event log is deleted first (what a
  // queued job stores is its queue events; the space they held takes the record and the
  // "cancelled" event) and the record written again. UNAVAILABLE when even that fails.
  absl::StatusOr<v1::Job> Cancel(const Identity& who, const std::string& id);
  // A finished job's record, events and artifacts go (as retention removes them), and its
  // request_id with them; returns the job as it was. NOT_FOUND as Get; FAILED_PRECONDITION for
  // a queued or running job (cancel it first); the store's error when it cannot delete.
  absl::StatusOr<v1::Job> Delete(const Identity& who, const std::string& id);

  // Calls `send` for each event with sequence >= from (in order), then the job's newest unstored
  // event (below) when it follows them, and each newer one; returns when the job's last event
  // was sent, `send` returns false (client gone), or `stop()` turns true.
  absl::Status Watch(const Identity& who, const std::string& id, int64_t from,
                     const std::function<bool(const v1::JobEvent&)>& send,
                     const std::function<bool()>& stop);

  // Resolves a job the caller may read, for artifacts and readers.
  absl::StatusOr<v1::Job> Readable(const Identity& who, const std::string& id) const {
    return Get(who, id);
  }

  // The path of artifact `name` of `job` (from Readable) for serving, after checking its bytes
  // against the recorded size and SHA-256 (ArtifactVerifier: a file unchanged since its last
  // check is not hashed again). A corrupt one is DATA_LOSS, counted
  // (libreyolod_artifacts_corrupt_total), logged and recorded as a "corrupt" event of the job.
  // Errors of ArtifactPath otherwise.
  absl::StatusOr<std::string> VerifiedArtifactPath(const v1::Job& job, const std::string& name);
  // How many artifacts that check remembers as intact (a job's go when retention deletes it).
  size_t VerifiedArtifactsRemembered() const;

  MetricsSnapshot Metrics() const;
  const std::vector<std::string>& devices() const { return devices_; }
  const JobRunner& runner() const { return *runner_; }
  int32_t QueueLength(const std::string& device) const;
  std::string RunningJob(const std::string& device) const;
  // Whether any job is queued or running (a private daemon stops itself only when not).
  bool Busy() const;
  bool accepting() const { return accepting_.load(); }

  // Empty while every state change has been made durable; otherwise why the manager is out of
  // service (the first failed write).
  std::string StoreError() const;
  // Told (under the manager's lock: it must not call back) when the store goes out of service
  // (`ok` false, with the reason) and when it is back. The daemon sets health and logs.
  void SetStoreListener(std::function<void(bool ok, const std::string& why)> listener);
  // Writes the records held back by a failed write, then probes the store; true when the
  // manager is in service again (or never left it). The retention thread calls it every few
  // seconds while out of service; tests call it directly.
  bool RetryStore();

  // A job's stored event log is bounded (docs/rpc.md, "Events"): its state changes (the first
  // "queued", "starting", "done"/"failed"/"cancelled") are always stored; other events
  // (progress, notices) are stored while the log holds fewer than kThinEventsFrom events, then
  // only when their stage differs from the last stored event's, and not at all once it holds
  // kMaxStoredEvents. Queue positions are never stored. What is not stored still reaches
  // watchers, as the job's newest unstored event.
  static constexpr size_t kThinEventsFrom = 200;
  static constexpr size_t kMaxStoredEvents = 400;

 private:
  struct Entry {
    v1::Job job;
    std::vector<v1::JobEvent> events;
    engine::CancelToken cancel;
    int64_t submit_order = 0;
    // A finished job whose final record could not be written: it stays RUNNING to callers (and
    // on disk) until RetryStore writes this, then appends its final event (`pending_stage`).
    // With an empty stage: a start that could not be recorded, and the QUEUED record is
    // written again.
    std::optional<v1::Job> pending;
    std::string pending_stage;
    // The newest event that is not stored (a queue position; progress past the log's bound):
    // kept for watchers only, replaced by a newer one, dropped when an event is stored. It
    // carries the sequence of the latest stored event (docs/rpc.md, "Resuming");
    // `unstored_gen` numbers its replacements so that a watcher sends each one once.
    std::optional<v1::JobEvent> unstored;
    int64_t unstored_gen = 0;
    // When it started and how long it ran, on the monotonic clock (issue 40 A.6: a step of
    // the wall clock must not bill device time or durations). `ran_ms` is -1 until it ends;
    // both are kept in its record file (RunClock), so a restart reads them back, and
    // `started_boot` names the boot `started_steady` belongs to ("" when not known).
    Clock::SteadyTime started_steady{};
    std::string started_boot;
    int64_t ran_ms = -1;
  };
  struct DeviceState {
    std::thread worker;
    std::string running;  // job id
  };

  // What `record`'s file keeps of e's run clock: none before it started.
  std::optional<RunClock> RunClockLocked(const Entry& e, const v1::Job& record) const;
  // How long a recovered job ran (e.ran_ms), from its stored run clock when it has one, else
  // its wall-clock span bounded by its time limit (said in `warnings` when bounded).
  void RecoverRunTimeLocked(Entry& e, const std::optional<RunClock>& run,
                            std::vector<std::string>* warnings);
  bool Visible(const Identity& who, const v1::Job& job) const;
  // Submit's steps, in order, under mu_ (the checks are Admission's, admission.h).
  // Idempotency by request id: the job an earlier identical request of `who` made (nullptr:
  // none), or ALREADY_EXISTS when that id came with a different request.
  absl::StatusOr<const Entry*> SameRequestLocked(const Identity& who,
                                                 const v1::SubmitJobRequest& request) const;
  // What the table holds for `who` submitting to `device` (Admission::Count).
  Admission::Load LoadLocked(const Identity& who, const std::string& device) const;
  // The new job's record: QUEUED, owned by `who`, on `device` or its data-parallel `ranks`.
  std::unique_ptr<Entry> NewEntryLocked(const Identity& who, const v1::SubmitJobRequest& request,
                                        const std::string& device,
                                        const std::vector<std::string>& ranks);
  // Writes the new job's record durably; on failure the manager goes out of service and the
  // job is refused (Admission::RefuseUnrecorded).
  absl::Status PersistNewJobLocked(const v1::Job& job);
  // Puts the persisted job in the table and its queue (fair share, request id, positions),
  // stores its first "queued" event and wakes the workers.
  const Entry& EnqueueLocked(std::unique_ptr<Entry> e, const Identity& who,
                             const v1::SubmitJobRequest& request,
                             const std::set<std::string>& active_users);
  // Queued jobs of `device` in the order they will run.
  std::vector<Entry*> QueueOrderLocked(const std::string& device) const;
  // Device time `user` has used (fair_), the running jobs' time so far included.
  int64_t UsageLocked(const std::string& user) const;
  v1::JobEvent NewEventLocked(const Entry& e, const std::string& stage, int64_t done, int64_t total,
                              const std::string& message) const;
  // Stores the event (one fsync'd append) and shows it to watchers.
  void AppendEventLocked(Entry& e, const std::string& stage, int64_t done, int64_t total,
                         const std::string& message);
  // Shows the event to watchers without storing it (e's newest unstored event).
  void ShowEventLocked(Entry& e, const std::string& stage, int64_t done, int64_t total,
                       const std::string& message);
  // A progress event or notice: stored or only shown, by the log's bound (kMaxStoredEvents).
  void AppendNoteLocked(Entry& e, const std::string& stage, int64_t done, int64_t total,
                        const std::string& message);
  // Recovery's decision for `e` (FAILED: it was running, or its device is no longer served),
  // recorded with its "failed" event; held back (out of service) when it cannot be written.
  void RecoverAsFailedLocked(Entry& e, v1::Job failed, std::vector<std::string>* warnings);
  // Cancel of a queued job: writes `next` (freeing e's stored events when the state filesystem
  // is full); false, with the manager out of service, when it cannot.
  bool CommitQueuedCancelLocked(Entry& e, const v1::Job& next);
  // Writes `next` as e's record and makes it e's state; on failure leaves e as it was, puts
  // the manager out of service and returns false.
  bool CommitLocked(Entry& e, const v1::Job& next);
  void StoreFailedLocked(const absl::Status& status);
  bool RetryStoreLocked();
  // Every queued job's position: its place in its device's order; a gang's, the largest over
  // its devices (it starts when the last of them comes to it). A change is shown to watchers,
  // not stored (positions are recomputed on recovery): one "queued" event each in memory.
  // `fresh` (a job just submitted) is left to its caller, which stores its first event.
  void RefreshQueuePositionsLocked(const Entry* fresh = nullptr);
  void WorkerLoop(const std::string& device);
  // job_manager_gang.cc, over gangs_. The job `device`'s thread takes next: the forming gang when it holds
  // this device, else the first of the device's order that is not a gang waiting behind
  // another (a gang found first becomes the forming one). nullptr when there is none.
  Entry* NextForLocked(const std::string& device);
  // Holds `device` for the gang `e`; true when every device of the gang is now held (the
  // caller then starts it), false when the caller must wait for the gang to start and end.
  bool ReserveForGangLocked(Entry& e, const std::string& device);
  // Lets go of every device held for gang `id` (it ran, or was cancelled while forming).
  void ReleaseGangLocked(const std::string& id);
  // Runs `e` on its devices (the caller's thread, for a gang the one that held its last).
  void RunOne(Entry& e);
  // The record of `job` after `out`, and the stage of its final event.
  v1::Job FinishedRecord(const Entry& e, const RunOutcome& out, std::string* stage) const;
  void SweepRetention();
  int64_t NowMs() const;

  JobStore* store_;
  JobRunner* runner_;
  std::vector<std::string> devices_;
  mutable std::mutex mu_;
  Limits limits_;                      // guarded by mu_
  Retention retention_;                // guarded by mu_
  std::condition_variable work_cv_;    // workers: a job was queued, or stopping
  std::condition_variable events_cv_;  // watchers: an event was appended
  std::map<std::string, std::unique_ptr<Entry>> jobs_;
  std::map<std::string, DeviceState> device_state_;
  std::map<std::string, std::string> request_ids_;  // owner + "/" + request_id -> job id
  // Gang placement (gang_placement.h): the one forming gang (one at a time, so that two gangs
  // never each hold part of what the other needs) and the idle devices held for it until all
  // of its devices are; their job threads wait meanwhile. Guarded by mu_.
  GangPlacement gangs_;
  int64_t next_submit_order_ = 0;
  int64_t submitted_total_ = 0;
  std::atomic<bool> accepting_{true};
  bool stopping_ = false;
  bool drained_ = false;  // the drain is over: open streams end UNAVAILABLE
  std::thread retention_thread_;
  std::condition_variable retention_cv_;
  UserSlots watchers_{"open watchers", "max_watchers"};  // WatchJob streams
  const Clock& clock_;
  Clock::SteadyTime started_;
  int64_t expired_total_ ABSL_GUARDED_BY(mu_) = 0;    // finished jobs deleted by retention
  int64_t deleted_total_ ABSL_GUARDED_BY(mu_) = 0;    // finished jobs deleted by DeleteJob
  int64_t retention_kicks_ ABSL_GUARDED_BY(mu_) = 0;  // SetLimits calls: retention sweeps now
  std::vector<std::string> persist_errors_;           // retention's failed deletions (tried again)
  std::string store_error_ ABSL_GUARDED_BY(mu_);      // out of service when not empty
  int64_t store_write_failures_ ABSL_GUARDED_BY(mu_) = 0;
  std::function<void(bool, const std::string&)> store_listener_ ABSL_GUARDED_BY(mu_);
  // Fair share (fair_share.h): device time each user's finished jobs used, the order of their
  // latest starts (ties) and the mean run (queue positions).
  FairShare fair_ ABSL_GUARDED_BY(mu_);
  void RebuildUsageLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);  // at Recover, from the records
  int64_t artifacts_corrupt_ ABSL_GUARDED_BY(mu_) = 0;
  // The artifacts last verified intact (its own lock: hashing runs outside mu_; taken after
  // mu_ where both are held, as Record and Forget are).
  ArtifactVerifier verifier_{store_};
  void ForgetVerifiedLocked(const std::string& job_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    verifier_.Forget(job_id);
  }
};

// A data-parallel request's place in its run (Job.world): its global ranks, world and group.
v1::JobWorld JobWorldOf(const v1::DataParallelOptions& dp);

// A fresh job id: 16 lowercase hex characters from a random source, prefixed by the date
// ("20261129-3f9a1c0b7e2d4a55") so ids sort by submission day.
std::string NewJobId();

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_JOBS_JOB_MANAGER_H_
