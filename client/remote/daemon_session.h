// The daemon a command talks to: the one --remote names, else this user's private daemon.
#ifndef LIBREYOLO_CLIENT_REMOTE_DAEMON_SESSION_H_
#define LIBREYOLO_CLIENT_REMOTE_DAEMON_SESSION_H_

#include <memory>

#include "absl/status/statusor.h"
#include "client/cli/args.h"
#include "client/remote/daemon_connection.h"
#include "client/remote/private_daemon.h"

namespace libreyolo::cli {

class DaemonSession {
 public:
  static absl::StatusOr<std::unique_ptr<DaemonSession>> Open(const ParsedArgs& args);
  DaemonConnection& connection() {
    return remote_ != nullptr ? *remote_ : private_->connection();
  }
  // True for --remote: the daemon is shared and outlives this command.
  bool is_remote() const { return remote_ != nullptr; }
  // A private daemon started on demand (by this command or another): shared by this user's
  // commands, and stopped once none of them needs it.
  bool on_demand_private() const { return private_ != nullptr && private_->on_demand(); }

 private:
  std::unique_ptr<DaemonConnection> remote_;
  std::unique_ptr<PrivateDaemon> private_;
};

}  // namespace libreyolo::cli

#endif  // LIBREYOLO_CLIENT_REMOTE_DAEMON_SESSION_H_
