#include "client/remote/daemon_session.h"

#include "common/status/status_macros.h"

namespace libreyolo::cli {

absl::StatusOr<std::unique_ptr<DaemonSession>> DaemonSession::Open(const ParsedArgs& args) {
  ASSIGN_OR_RETURN(auto target, ResolveRemote(args));
  auto s = std::unique_ptr<DaemonSession>(new DaemonSession());
  if (target.has_value()) {
    ASSIGN_OR_RETURN(s->remote_, DaemonConnection::Open(*target));
    return s;
  }
  ASSIGN_OR_RETURN(s->private_, PrivateDaemon::Acquire());
  return s;
}

}  // namespace libreyolo::cli
