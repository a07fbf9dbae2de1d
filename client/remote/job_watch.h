// Follows a job to its end over WatchJob: resumes from the last sequence number after a broken
// stream, and stops early (CANCELLED) when the user presses Ctrl-C.
#ifndef LIBREYOLO_CLIENT_REMOTE_JOB_WATCH_H_
#define LIBREYOLO_CLIENT_REMOTE_JOB_WATCH_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "client/remote/daemon_connection.h"

namespace libreyolo::cli {

// SIGINT sets a flag instead of killing the process while a job is watched.
void InstallInterruptFlag();
bool Interrupted();
void ClearInterrupt();

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
