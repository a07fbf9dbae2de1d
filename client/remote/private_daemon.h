// This user's private libreyolod: a daemon on a Unix socket in the user's runtime directory,
// with its state under $XDG_STATE_HOME/libreyolo (so jobs and artifacts survive it), started
// when a command needs one and none is running, and stopped again by the command that started
// it. A daemon the user already runs there is used and left running.
#ifndef LIBREYOLO_CLIENT_REMOTE_PRIVATE_DAEMON_H_
#define LIBREYOLO_CLIENT_REMOTE_PRIVATE_DAEMON_H_

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "client/remote/daemon_connection.h"

namespace libreyolo::cli {

struct PrivateDaemonPaths {
  std::string runtime_dir;  // $XDG_RUNTIME_DIR/libreyolo, else /tmp/libreyolo-<uid> (0700)
  std::string socket;       // <runtime_dir>/libreyolod.sock
  std::string state_root;   // $LIBREYOLO_STATE_DIR, $XDG_STATE_HOME/libreyolo, ~/.local/state/libreyolo
  std::string log;          // <state_root>/libreyolod.log
};
PrivateDaemonPaths PrivateDaemonPathsForUser();

// The libreyolod binary: $LIBREYOLOD, next to this program, the build tree's
// ../server/daemon/libreyolod, then $PATH.
absl::StatusOr<std::string> FindDaemonBinary();

class PrivateDaemon {
 public:
  // Connects to the running private daemon or starts one (waiting until it serves).
  static absl::StatusOr<std::unique_ptr<PrivateDaemon>> Acquire();
  ~PrivateDaemon();  // stops the daemon if this process started it (SIGTERM, then waits)

  DaemonConnection& connection() { return *connection_; }
  bool started_here() const { return pid_ > 0; }

 private:
  PrivateDaemon() = default;
  std::unique_ptr<DaemonConnection> connection_;
  pid_t pid_ = -1;
};

}  // namespace libreyolo::cli

#endif  // LIBREYOLO_CLIENT_REMOTE_PRIVATE_DAEMON_H_
