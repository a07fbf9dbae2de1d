// This user's private libreyolod: a daemon on a Unix socket in the user's runtime directory,
// with its state under $XDG_STATE_HOME/libreyolo (so jobs and artifacts survive it), started
// when a command needs one and none is running. A daemon the user already runs there is used
// and left running.
//
// Commands share it: each holds a lease (common/io/lease_dir.h) in <runtime_dir>/leases from
// before it connects until it has its last artifact. The last command out stops the daemon it
// finds with nothing left to run; a daemon started on demand (--lease-dir) also stops itself
// once it has no job and no live lease, so a command killed with SIGKILL, whose lease dies with
// it, keeps it only until its job ends. Starting, counting and stopping happen under the lease
// directory's lock: a command that comes while a daemon stops waits, then starts a fresh one
// (also for a daemon stopped otherwise, SIGTERM from the user: its directories' locks are
// waited for before the start).
#ifndef LIBREYOLO_CLIENT_REMOTE_PRIVATE_DAEMON_H_
#define LIBREYOLO_CLIENT_REMOTE_PRIVATE_DAEMON_H_

#include <sys/types.h>

#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/remote/daemon_connection.h"
#include "common/io/lease_dir.h"

namespace libreyolo::cli {

struct PrivateDaemonPaths {
  std::string runtime_dir;  // $XDG_RUNTIME_DIR/libreyolo, else /tmp/libreyolo-<uid> (0700)
  std::string socket;       // <runtime_dir>/libreyolod.sock
  std::string state_root;   // $LIBREYOLO_STATE_DIR, $XDG_STATE_HOME/libreyolo, ~/.local/state/libreyolo
  std::string log;          // <state_root>/libreyolod.log
  std::string leases;       // <runtime_dir>/leases: one lease per command using the daemon
  std::string pid_file;     // <runtime_dir>/libreyolod.pid: the daemon started on demand
};
PrivateDaemonPaths PrivateDaemonPathsForUser();

// Retention sized for a workstation (issue 36 §6: the private store grew to 1.7 GB after 32 small
// jobs under a shared daemon's 30 days / 1000 jobs): every job's files are downloaded into its
// --project folder, so the store is a short history, not the only copy. Finished jobs go after
// kPrivateRetentionMaxAgeHours or beyond the newest kPrivateRetentionMaxJobs.
inline constexpr int64_t kPrivateRetentionMaxJobs = 50;
inline constexpr int64_t kPrivateRetentionMaxAgeHours = 24 * 7;
// The libreyolod flags that set it.
std::vector<std::string> PrivateDaemonRetentionFlags();

// The libreyolod binary: $LIBREYOLOD, next to this program, the build tree's
// ../server/daemon/libreyolod, then $PATH.
absl::StatusOr<std::string> FindDaemonBinary();

class PrivateDaemon {
 public:
  // Takes a lease (the file names this command line), then connects to the running private
  // daemon or starts one (waiting until it serves). A daemon that is still stopping (its state
  // or store directory locked, nothing answering on the socket) is waited for first, at most
  // LIBREYOLO_DAEMON_STOP_WAIT_S seconds (default 30), said once on `notes`.
  static absl::StatusOr<std::unique_ptr<PrivateDaemon>> Acquire(std::ostream& notes = std::cerr);
  // Ends the lease. When no other live lease remains and the daemon (one started on demand)
  // has no queued or running job, stops it (SIGTERM, then waits) before returning.
  ~PrivateDaemon();

  DaemonConnection& connection() { return *connection_; }
  bool started_here() const { return child_; }
  // A daemon started on demand by a `libreyolo` command (this one or another), not one the
  // user runs on the socket.
  bool on_demand() const { return pid_ > 0; }
  // Why the daemon process has ended ("the private libreyolod (pid N) was killed by SIGKILL
  // (log ...)"), or nullopt while it runs or when it is not one started on demand.
  std::optional<std::string> GoneReason();

 private:
  PrivateDaemon() = default;
  bool Ended();
  bool HasLiveJobs();
  // Starts libreyolod (`args`) and waits until it answers (60 s). ALREADY_EXISTS when it exits
  // kDaemonExitInUse: another process held its state or store directory.
  absl::Status StartAndWait(const std::vector<std::string>& args);
  void Stop();

  PrivateDaemonPaths paths_;
  Lease lease_;
  std::unique_ptr<DaemonConnection> connection_;
  pid_t pid_ = -1;      // the daemon started on demand; -1 for one the user runs
  bool child_ = false;  // started by this process: waitpid tells how it ended
  std::optional<int> wait_status_;  // its waitpid status, once reaped
};

}  // namespace libreyolo::cli

#endif  // LIBREYOLO_CLIENT_REMOTE_PRIVATE_DAEMON_H_
