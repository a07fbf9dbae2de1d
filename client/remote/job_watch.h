// Follows a job to its end over WatchJob: resumes from the last sequence number after a broken
// stream, and stops early (CANCELLED) when the user presses Ctrl-C.
#ifndef LIBREYOLO_CLIENT_REMOTE_JOB_WATCH_H_
#define LIBREYOLO_CLIENT_REMOTE_JOB_WATCH_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/remote/daemon_connection.h"

namespace libreyolo::cli {

// SIGINT sets a flag instead of killing the process while a job is watched.
void InstallInterruptFlag();
bool Interrupted();
void ClearInterrupt();

// While it lives, cancels `ctx` as soon as Ctrl-C is seen (the flag above), so that a stream
// (WatchJob, ReadArtifact) ends at once instead of when its next message comes. Its thread runs
// through RunGuarded (issue 39 §4): should it throw, it logs one line, cancels `ctx` and
// status() says so, for the command to fail with that message instead of the process ending.
class CancelOnInterrupt {
 public:
  explicit CancelOnInterrupt(grpc::ClientContext* ctx);
  ~CancelOnInterrupt();
  CancelOnInterrupt(const CancelOnInterrupt&) = delete;
  CancelOnInterrupt& operator=(const CancelOnInterrupt&) = delete;

  // Ends the thread (idempotent; the destructor calls it).
  void Stop();
  // OK, or INTERNAL naming the thread and what it threw (then `ctx` was cancelled).
  absl::Status status() const;

 private:
  std::atomic<bool> done_{false};
  mutable std::mutex mu_;
  absl::Status failure_;  // guarded by mu_
  std::thread thread_;    // last: starts once the members above exist
};

namespace internal {
// Test hook (issue 39 §4): while > 0, each CancelOnInterrupt thread that starts takes one and
// throws std::runtime_error at once.
extern std::atomic<int> g_interrupt_watcher_throws_for_test;
}  // namespace internal

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
