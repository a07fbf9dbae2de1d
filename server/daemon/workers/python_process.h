// A child program the daemon runs for a job (the Python LibreYOLO's CLI, python_runner.h) in a
// process group of its own, supervised: its stdout and stderr read line by line, the job's
// cancel, wall-time limit and progress watchdog turned into TERM to the whole group and KILL
// after the grace, and nothing of the group left when it ends (checked in /proc).
//
// Plain POSIX; no gRPC, no LibTorch.
#ifndef LIBREYOLO_SERVER_DAEMON_WORKERS_PYTHON_PROCESS_H_
#define LIBREYOLO_SERVER_DAEMON_WORKERS_PYTHON_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/engine/engine.h"

namespace libreyolo::daemon {

struct ChildCommand {
  std::vector<std::string> argv;      // argv[0] is the executable's path
  std::vector<std::string> env_set;   // "NAME=value", over the daemon's environment
  std::string cwd;                    // "" = the daemon's
};

struct ChildSupervision {
  std::chrono::milliseconds cancel_grace{30000};      // TERM -> KILL
  std::chrono::milliseconds wall_limit{0};            // 0 = none
  std::chrono::milliseconds progress_timeout{0};      // no output line for this long; 0 = none
};

struct ChildEnd {
  pid_t pid = 0;            // the group's leader (its pgid)
  int wait_status = 0;      // the leader's, as waitpid gives it
  bool cancelled = false;   // the cancel token was set while it ran
  bool wall_limit_reached = false;
  bool stalled = false;     // the progress watchdog stopped it
  bool killed_after_grace = false;  // it did not end within the grace after TERM
  // Members of its process group still there after the KILL and a wait (should be none).
  std::vector<pid_t> survivors;
};

// Runs `command` in a new session (setsid: its own process group, no controlling terminal),
// stdin from /dev/null, stdout and stderr into one pipe, each line (split at '\n' or '\r',
// at most kMaxLineBytes kept of a longer one) handed to `on_line` on the calling thread. Returns
// when the leader has ended and the group has been killed and is gone (or survivors listed).
// UNAVAILABLE when it cannot be started.
inline constexpr size_t kMaxLineBytes = 4096;
absl::StatusOr<ChildEnd> RunChildGroup(const ChildCommand& command,
                                       const ChildSupervision& supervision,
                                       const engine::CancelToken& cancel,
                                       const std::function<void(const std::string&)>& on_line);

// The processes whose process group is `pgid`, from /proc/<pid>/stat; zombies (ended, waiting
// to be reaped) are not counted.
std::vector<pid_t> ProcessGroupMembers(pid_t pgid);

// A bounded copy of a child's output: the first `head_bytes` and the last `tail_bytes`, with
// a line saying how much was left out between them.
class BoundedLog {
 public:
  BoundedLog(size_t head_bytes, size_t tail_bytes) : head_max_(head_bytes), tail_max_(tail_bytes) {}
  void Add(const std::string& line);
  std::string Text() const;

 private:
  size_t head_max_, tail_max_;
  std::string head_;
  std::string tail_;  // a window over the latest bytes (cut at a line start when trimmed)
  size_t dropped_ = 0;
};

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_WORKERS_PYTHON_PROCESS_H_
