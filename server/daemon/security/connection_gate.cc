#include "server/daemon/security/connection_gate.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <map>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"

namespace libreyolo::daemon {
namespace {

// Who holds a connection, for the order in which idle ones go: a uid on the Unix socket, an
// address on TCP until the connection's first authenticated call, then its user.
std::string Holder(bool unix_socket, const std::string& peer, const std::string& user) {
  if (unix_socket) return peer;
  return user.empty() ? "address " + peer : "user " + user;
}

}  // namespace

ConnectionGate::ConnectionGate(ConnectionCaps caps, int64_t fd_limit, Clock clock)
    : caps_(caps), fd_limit_(fd_limit), clock_(std::move(clock)) {
  if (!clock_) clock_ = [] { return std::chrono::steady_clock::now(); };
}

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

ConnectionGate::Closed ConnectionGate::TakeClosed() {
  std::lock_guard<std::mutex> lock(mu_);
  const Closed out = closed_;
  closed_ = Closed{};
  return out;
}

bool ConnectionGate::CloseLocked(size_t index) {
  const Entry& e = entries_[index];
  // A duplicate pins the socket the number names now: checked to be ours, shutting it down can
  // reach no other socket, even if gRPC closes its descriptor meanwhile.
  const int copy = ::fcntl(e.fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0 && errno != EBADF) return false;  // out of descriptors: cannot tell, keep it
  if (copy >= 0) {
    struct stat now {};
    if (::fstat(copy, &now) == 0 && S_ISSOCK(now.st_mode) && now.st_dev == e.dev &&
        now.st_ino == e.ino) {
      ::shutdown(copy, SHUT_RDWR);  // gRPC reads the end of the stream and closes its side
    }
    ::close(copy);
  }
  entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(index));
  return true;
}

bool ConnectionGate::CloseIdleLocked(const std::function<bool(const Entry&)>& group,
                                     uint64_t except, std::string* closed) {
  // The idle connection that goes: a never-authenticated one before one charged to a user;
  // then one of whoever holds the most in the group (a flood's address, never the user with
  // one connection); then the one idle the longest.
  std::map<std::string, int64_t> held;
  for (const Entry& e : entries_) {
    if (group(e)) ++held[Holder(e.unix_socket, e.peer, e.user)];
  }
  struct Rank {
    bool authenticated;
    int64_t fewer;  // minus the holder's count: more held goes first
    TimePoint idle_since;
    bool operator<(const Rank& o) const {
      return std::tie(authenticated, fewer, idle_since) <
             std::tie(o.authenticated, o.fewer, o.idle_since);
    }
  };
  size_t best = entries_.size();
  Rank best_rank{};
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    if (e.serial == except || e.in_flight > 0 || !group(e)) continue;
    const Rank rank{e.unix_socket || !e.user.empty(),
                    -held[Holder(e.unix_socket, e.peer, e.user)], e.idle_since};
    if (best == entries_.size() || rank < best_rank) {
      best = i;
      best_rank = rank;
    }
  }
  if (best == entries_.size()) return false;
  const Entry& e = entries_[best];
  std::string what = absl::StrCat(
      "an idle connection of ", Holder(e.unix_socket, e.peer, e.user), " (idle ",
      std::chrono::duration_cast<std::chrono::seconds>(clock_() - e.idle_since).count(), " s)");
  if (!CloseLocked(best)) return false;
  ++closed_.idle;
  if (closed != nullptr) *closed = std::move(what);
  return true;
}

std::string ConnectionGate::Admit(int fd, const std::string& peer, bool unix_socket,
                                  std::string* closed) {
  struct stat self {};
  if (::fstat(fd, &self) != 0) return "the connection's descriptor cannot be examined";
  std::lock_guard<std::mutex> lock(mu_);
  SweepLocked();
  // The kernel gives the lowest free number: every descriptor below this one is in use.
  if (!unix_socket && fd_limit_ > 0 && fd >= fd_limit_ - caps_.reserved_descriptors) {
    return absl::StrCat("descriptor ", fd, " of the process's ", fd_limit_, ": the last ",
                        caps_.reserved_descriptors,
                        " are kept for the store, the workers and the Unix socket "
                        "(reserved_descriptors)");
  }
  // Per peer: a uid on the Unix socket; on TCP an address, counting only the connections not
  // yet charged to a user.
  auto same_peer = [&](const Entry& e) {
    return e.unix_socket == unix_socket && e.peer == peer && (unix_socket || e.user.empty());
  };
  const int64_t mine = std::count_if(entries_.begin(), entries_.end(), same_peer);
  if (mine >= caps_.max_connections_per_peer && !CloseIdleLocked(same_peer, 0, closed)) {
    return absl::StrCat(peer, " has ", mine,
                        " connections open, each with a call in flight: the cap per peer "
                        "(max_connections_per_peer)");
  }
  auto same_budget = [&](const Entry& e) { return e.unix_socket == unix_socket; };
  const int64_t all = std::count_if(entries_.begin(), entries_.end(), same_budget);
  if (all >= caps_.max_connections && !CloseIdleLocked(same_budget, 0, closed)) {
    return absl::StrCat(all, " connections are open on the ", unix_socket ? "Unix socket" : "TCP",
                        " listeners, each with a call in flight: the daemon's cap "
                        "(max_connections)");
  }
  Entry e;
  e.serial = next_serial_++;
  e.fd = fd;
  e.dev = self.st_dev;
  e.ino = self.st_ino;
  e.unix_socket = unix_socket;
  e.peer = peer;
  e.handshake_done = unix_socket;  // the kernel has said who it is
  e.admitted = e.idle_since = clock_();
  entries_.push_back(std::move(e));
  return "";
}

ConnectionGate::Entry* ConnectionGate::FindLocked(uint64_t serial) {
  for (Entry& e : entries_) {
    if (e.serial == serial) return &e;
  }
  return nullptr;
}

uint64_t ConnectionGate::CallStarted(int fd, const std::string& user) {
  std::lock_guard<std::mutex> lock(mu_);
  // While a call of the connection lives, gRPC keeps its descriptor open: the number is this
  // connection's, and at most one entry holds it (an older one was swept at this one's Admit).
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [fd](const Entry& e) { return e.fd == fd; });
  if (it == entries_.end()) return 0;
  ++it->in_flight;
  const uint64_t serial = it->serial;
  if (it->unix_socket || user.empty() || !it->user.empty()) return serial;
  // The first authenticated call: the connection is the user's from now on.
  it->user = user;
  it->handshake_done = true;
  auto users = [&](const Entry& e) { return !e.unix_socket && e.user == user; };
  while (std::count_if(entries_.begin(), entries_.end(), users) > caps_.max_connections_per_peer) {
    if (CloseIdleLocked(users, serial, nullptr)) continue;
    // Every other one is busy too: this newest one goes (its call fails as UNAVAILABLE).
    for (size_t i = 0; i < entries_.size(); ++i) {
      if (entries_[i].serial == serial) {
        if (CloseLocked(i)) ++closed_.idle;
        break;
      }
    }
    break;
  }
  return serial;
}

void ConnectionGate::CallEnded(uint64_t serial, bool completed) {
  if (serial == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  Entry* e = FindLocked(serial);
  if (e == nullptr) return;  // closed meanwhile
  if (e->in_flight > 0 && --e->in_flight == 0) e->idle_since = clock_();
  if (completed) e->handshake_done = true;
}

int64_t ConnectionGate::ExpireHandshakes() {
  std::lock_guard<std::mutex> lock(mu_);
  const TimePoint now = clock_();
  const auto timeout = std::chrono::seconds(caps_.handshake_timeout_s);
  int64_t count = 0;
  for (size_t i = 0; i < entries_.size();) {
    const Entry& e = entries_[i];
    if (!e.unix_socket && !e.handshake_done && now - e.admitted >= timeout && CloseLocked(i)) {
      ++count;
      continue;  // the next entry moved to i
    }
    ++i;
  }
  closed_.handshake += count;
  return count;
}

}  // namespace libreyolo::daemon
