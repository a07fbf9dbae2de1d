// Durable job state. Layout:
//   <state_dir>/jobs/<id>.json        the Job record (protobuf JSON; with the daemon's own
//                                     "libreyolod_run_clock" key, RunClock), replaced atomically
//   <state_dir>/events/<id>.jsonl     the job's events, one JSON object per line, appended
//   <store_dir>/<id>/<artifact>       the job's artifacts, published by rename
// Every replace is write temp -> fsync -> rename -> fsync(dir), so a crash leaves the old or the
// new file, never a partial one. An event line cut short by a crash is dropped on load.
#ifndef LIBREYOLO_SERVER_DAEMON_STORE_JOB_STORE_H_
#define LIBREYOLO_SERVER_DAEMON_STORE_JOB_STORE_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/io/atomic_file.h"
#include "libreyolo/profiler/v1/profiler.pb.h"

namespace libreyolo::daemon {

namespace v1 = ::libreyolo::profiler::v1;

// How long a job ran on the monotonic clock (issue 40 A.6: a step of the wall clock must not
// bill fair share or durations, across a restart either). Kept in the job's record file beside
// the Job's fields (key "libreyolod_run_clock"), not in the Job message that clients get:
// `start_steady_ms` is CLOCK_MONOTONIC at its start, in ms, valid in the boot `boot_id` names
// (Clock::BootId); `ran_ms` how long it ran, once it ended (-1 before).
struct RunClock {
  std::string boot_id;
  int64_t start_steady_ms = 0;
  int64_t ran_ms = -1;
};

struct StoredJob {
  v1::Job job;
  std::vector<v1::JobEvent> events;  // in sequence order
  std::optional<RunClock> run;       // absent in records written before it existed
};

class JobStore {
 public:
  // Creates the directories if needed (0700 state, 0750 store). FAILED_PRECONDITION naming the
  // directory when it cannot be created or written. Every write, fsync and rename the store
  // makes goes through `ops` (the system's by default; a test's to inject failures), which
  // must outlive the store.
  static absl::StatusOr<std::unique_ptr<JobStore>> Open(const std::string& state_dir,
                                                        const std::string& store_dir,
                                                        FileOps* ops = nullptr);

  // Every job on disk with its events. Records that cannot be parsed are moved aside to
  // <state_dir>/corrupt/ and reported in `warnings` (never silently dropped, never fatal).
  absl::StatusOr<std::vector<StoredJob>> LoadAll(std::vector<std::string>* warnings);

  // `run`, when given, is written into the record file with the job (see RunClock).
  absl::Status PutJob(const v1::Job& job, const std::optional<RunClock>& run = std::nullopt);
  absl::Status AppendEvent(const v1::JobEvent& event);  // write + fsync

  // The job's artifact directory (created on demand) and a scratch directory for a running
  // job's outputs under <store_dir>/.tmp/<id>/ (removed by DiscardScratch / on recovery).
  absl::StatusOr<std::string> ArtifactDir(const std::string& job_id);
  absl::StatusOr<std::string> ScratchDir(const std::string& job_id);
  void DiscardScratch(const std::string& job_id);
  // Removes the job's artifact directory, when it is a real directory (best effort): what a
  // job that did not succeed may have published before it failed or the daemon died. Its
  // record and events stay.
  void DiscardArtifacts(const std::string& job_id);

  // Moves `file` (in the scratch dir) into the artifact dir as `name` atomically and returns
  // its Artifact entry (size and SHA-256). RESOURCE_EXHAUSTED when larger than `max_bytes`.
  // Artifacts are written once: ALREADY_EXISTS (the published file untouched) when the job
  // already has one of that name.
  absl::StatusOr<v1::Artifact> PublishArtifact(const std::string& job_id, const std::string& file,
                                               const std::string& name, int64_t max_bytes);

  // The path of a published artifact, validated: `name` must be one of the job's artifacts
  // (no separators, no dot-dot); NOT_FOUND otherwise. Never resolves outside store_dir.
  absl::StatusOr<std::string> ArtifactPath(const v1::Job& job, const std::string& name) const;

  // Re-reads a published artifact of `job_id` and compares it with `artifact`'s size and
  // SHA-256: DATA_LOSS naming both digests when they differ. `identity`, when not null, gets
  // what identifies the file's current contents (device, inode, size, change times), so a
  // caller can skip re-hashing a file that was not touched since.
  absl::Status VerifyArtifact(const std::string& job_id, const v1::Artifact& artifact,
                              std::string* identity) const;

  // Deletes the job's event log (its record stays; OK when there is none): the space a queued
  // job's events hold, freed by a cancel on a full state filesystem. Needs no space.
  absl::Status DiscardEvents(const std::string& job_id);

  // Deletes the job's record, events and artifacts (retention).
  absl::Status DeleteJob(const std::string& job_id);

  // Writes and removes a small file in the state directory (write, fsync, rename, fsync of
  // the directory): whether a state change could be made durable now. A daemon that failed to
  // record one probes with it before it accepts work again.
  absl::Status Probe();

  const std::string& state_dir() const { return state_dir_; }
  const std::string& store_dir() const { return store_dir_; }

 private:
  JobStore(std::string state_dir, std::string store_dir, FileOps& ops)
      : state_dir_(std::move(state_dir)), store_dir_(std::move(store_dir)), ops_(ops) {}
  std::string state_dir_, store_dir_;
  FileOps& ops_;
  std::mutex append_mu_;
};

// Which finished jobs retention removes now, oldest first: those finished before
// now - max_age_hours, then the oldest beyond max_jobs. Queued/running jobs are never chosen.
std::vector<std::string> JobsToExpire(const std::vector<v1::Job>& jobs, int64_t now_unix_ms,
                                      int64_t max_age_hours, int64_t max_jobs);

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_STORE_JOB_STORE_H_
