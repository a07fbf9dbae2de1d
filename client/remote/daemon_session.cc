#include "client/remote/daemon_session.h"

namespace libreyolo::cli {

absl::StatusOr<std::unique_ptr<DaemonSession>> DaemonSession::Open(const ParsedArgs& args) {
  auto target = ResolveRemote(args);
  if (!target.ok()) return target.status();
  auto s = std::unique_ptr<DaemonSession>(new DaemonSession());
  if (target->has_value()) {
    auto c = DaemonConnection::Open(**target);
    if (!c.ok()) return c.status();
    s->remote_ = *std::move(c);
    return s;
  }
  auto p = PrivateDaemon::Acquire();
  if (!p.ok()) return p.status();
  s->private_ = *std::move(p);
  return s;
}

}  // namespace libreyolo::cli
