// Follows a job to its end over WatchJob: resumes from the last sequence number after a broken
// stream, and stops early (CANCELLED) when the user presses Ctrl-C.
#ifndef LIBREYOLO_CLIENT_REMOTE_JOB_WATCH_H_
#define LIBREYOLO_CLIENT_REMOTE_JOB_WATCH_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "client/remote/daemon_connection.h"

namespace libreyolo::cli {

// SIGINT sets a flag instead of killing the process while a job is watched.
void InstallInterruptFlag();
bool Interrupted();
void ClearInterrupt();

// While it lives, cancels `ctx` as soon as Ctrl-C is seen (the flag above), so that a stream
// (WatchJob, ReadArtifact) ends at once instead of when its next message comes.
class CancelOnInterrupt {
 public:
  explicit CancelOnInterrupt(grpc::ClientContext* ctx);
  ~CancelOnInterrupt();
  CancelOnInterrupt(const CancelOnInterrupt&) = delete;
  CancelOnInterrupt& operator=(const CancelOnInterrupt&) = delete;

 private:
  std::atomic<bool> done_{false};
  std::thread thread_;
};

struct WatchResult {
  v1::Job job;             // the job after its last event (GetJob)
  int64_t last_sequence = 0;
  bool interrupted = false;  // Ctrl-C: the job may still be running
};

// Streams events from `from_sequence` to `on_event` until the job ends or Ctrl-C.
absl::StatusOr<WatchResult> WatchJob(DaemonConnection& c, const std::string& job_id,
                                     int64_t from_sequence,
                                     const std::function<void(const v1::JobEvent&)>& on_event);

}  // namespace libreyolo::cli

#endif  // LIBREYOLO_CLIENT_REMOTE_JOB_WATCH_H_
