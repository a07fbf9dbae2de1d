#include "server/daemon/security/connection_gate.h"

#include <sys/stat.h>

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace libreyolo::daemon {

ConnectionGate::ConnectionGate(ConnectionCaps caps, int64_t fd_limit)
    : caps_(caps), fd_limit_(fd_limit) {}

void ConnectionGate::set_caps(ConnectionCaps caps) {
  std::lock_guard<std::mutex> lock(mu_);
  caps_ = caps;
}

void ConnectionGate::SweepLocked() {
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [](const Entry& e) {
                                  struct stat now {};
                                  return ::fstat(e.fd, &now) != 0 || !S_ISSOCK(now.st_mode) ||
                                         now.st_dev != e.dev || now.st_ino != e.ino;
                                }),
                 entries_.end());
}

int64_t ConnectionGate::open_connections() {
  std::lock_guard<std::mutex> lock(mu_);
  SweepLocked();
  return static_cast<int64_t>(entries_.size());
}

std::string ConnectionGate::Admit(int fd, const std::string& peer, bool reserve_exempt) {
  struct stat self {};
  if (::fstat(fd, &self) != 0) return "the connection's descriptor cannot be examined";
  std::lock_guard<std::mutex> lock(mu_);
  SweepLocked();
  // The kernel gives the lowest free number: every descriptor below this one is in use.
  if (!reserve_exempt && fd_limit_ > 0 && fd >= fd_limit_ - caps_.reserved_descriptors) {
    return absl::StrCat("descriptor ", fd, " of the process's ", fd_limit_, ": the last ",
                        caps_.reserved_descriptors,
                        " are kept for the store, the workers and the Unix socket "
                        "(reserved_descriptors)");
  }
  if (static_cast<int64_t>(entries_.size()) >= caps_.max_connections) {
    return absl::StrCat(entries_.size(),
                        " connections are open, the daemon's cap "
                        "(max_connections)");
  }
  const int64_t mine = std::count_if(entries_.begin(), entries_.end(),
                                     [&](const Entry& e) { return e.peer == peer; });
  if (mine >= caps_.max_connections_per_peer) {
    return absl::StrCat(peer, " has ", mine,
                        " connections open, the cap per peer "
                        "(max_connections_per_peer)");
  }
  entries_.push_back({fd, self.st_dev, self.st_ino, peer});
  return "";
}

}  // namespace libreyolo::daemon
