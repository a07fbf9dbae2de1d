// The connections the daemon's own listeners accept (the Unix socket, plaintext TCP), capped so
// that a flood cannot lock out the people the caps protect (issue 23 item 2, issue 40 A.3). A
// listener asks Admit for each accepted connection before it hands the descriptor to gRPC; one
// refused is closed at once. gRPC owns and closes the descriptors it is handed and says nothing
// when it does, so the gate keeps each one's (device, inode) and counts it while the descriptor
// still names that socket: closed, or reused by any other file or socket, it is no longer
// counted (a socket's inode is unique while it is open, so a reused number is told apart).
//
// The rules:
// - Two budgets of max_connections each: plaintext TCP's and the Unix socket's (whose callers
//   the kernel has authenticated), so a TCP flood never takes the local user's or root's way in.
// - Per peer, max_connections_per_peer: on TCP an address until the connection carries an
//   authenticated call, then the call's user (so one user's channels never take the
//   connections of everyone else behind the same address); on the Unix socket a uid.
// - A cap reached closes an idle connection of the same group (no call in flight; on TCP the
//   never-authenticated first; then one of whoever holds the most, so that a flood's address
//   pays, not a user with one connection; then the oldest idle) to admit the new one; only
//   when every one has a call in flight is the new connection refused. A user past the cap when a connection
//   becomes theirs loses their oldest idle one, or, with every one busy, that newest one.
// - A TCP connection that has neither carried an authenticated call nor completed a call
//   within handshake_timeout_s of its accept is closed (ExpireHandshakes): a peer that sends
//   only the HTTP/2 preface, or nothing, holds its slot for that long at most.
// The gate closes a connection with shutdown(2) on a duplicate of its descriptor, checked to
// name the same socket, so it never touches a socket that gRPC has closed and the kernel has
// given the number to; gRPC then reads the end of the stream and closes its descriptor.
#ifndef LIBREYOLO_SERVER_DAEMON_SECURITY_CONNECTION_GATE_H_
#define LIBREYOLO_SERVER_DAEMON_SECURITY_CONNECTION_GATE_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace libreyolo::daemon {

struct ConnectionCaps {
  int64_t max_connections = 512;          // each budget: plaintext TCP's, the Unix socket's
  int64_t max_connections_per_peer = 64;  // an address, then a user (TCP); a uid (Unix socket)
  // Descriptors never given to a TCP connection: the store, the workers' sockets, the log and
  // the Unix socket's own callers keep working when a flood reaches the process's limit.
  int64_t reserved_descriptors = 64;
  // A TCP connection with no authenticated call and no completed call after this long is
  // closed (DaemonConfig::handshake_timeout_s).
  int64_t handshake_timeout_s = 10;
};

class ConnectionGate {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  // `fd_limit`: the process's descriptor limit (RLIMIT_NOFILE's soft value). `clock`: the
  // steady clock unless a test injects one.
  ConnectionGate(ConnectionCaps caps, int64_t fd_limit, Clock clock = {});

  // An accepted connection's descriptor and its peer ("uid:1000", "127.0.0.1"): "" when it is
  // admitted (and counted from now on), else why it is refused, for the log. `unix_socket`:
  // the Unix socket's budget, and its callers may use the descriptor reserve. `closed`, when
  // given, says which idle connection was closed to make room ("" when none was).
  std::string Admit(int fd, const std::string& peer, bool unix_socket = false,
                    std::string* closed = nullptr);

  // A call began on the connection whose descriptor is `fd` ("fd:<N>" as its peer); `user`: the
  // call's authenticated user on TCP ("" when it has none). Returns the connection's serial for
  // CallEnded, 0 when the gate does not know the connection (TLS ones are gRPC's own).
  uint64_t CallStarted(int fd, const std::string& user);
  // The call ended; `completed`: with a status other than UNAUTHENTICATED.
  void CallEnded(uint64_t serial, bool completed);

  // Closes the TCP connections past handshake_timeout_s without an authenticated or completed
  // call; returns how many. The listeners call it several times a second.
  int64_t ExpireHandshakes();

  // Connections the gate closed since the last call (for one log line per interval).
  struct Closed {
    int64_t handshake = 0;  // ExpireHandshakes
    int64_t idle = 0;       // an idle one to admit another, or over a user's cap
  };
  Closed TakeClosed();

  int64_t open_connections();
  void set_caps(ConnectionCaps caps);

 private:
  using TimePoint = std::chrono::steady_clock::time_point;
  struct Entry {
    uint64_t serial = 0;
    int fd = -1;
    dev_t dev = 0;
    ino_t ino = 0;
    bool unix_socket = false;
    std::string peer;  // the address, or "uid:N"
    std::string user;  // TCP: the user of its first authenticated call, "" before
    bool handshake_done = false;
    int64_t in_flight = 0;
    TimePoint admitted;
    TimePoint idle_since;
  };
  void SweepLocked();
  // Closes the idle entry of `group` that goes first (see above), `except` excluded; false
  // when each has a call in flight.
  bool CloseIdleLocked(const std::function<bool(const Entry&)>& group, uint64_t except,
                       std::string* closed);
  // shutdown(2) of the entry's socket and its removal; false when its descriptor could not be
  // duplicated (the process is out of descriptors), the entry then stays.
  bool CloseLocked(size_t index);
  Entry* FindLocked(uint64_t serial);

  std::mutex mu_;
  ConnectionCaps caps_;
  int64_t fd_limit_;
  Clock clock_;
  uint64_t next_serial_ = 1;
  std::vector<Entry> entries_;
  Closed closed_;
};

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_SECURITY_CONNECTION_GATE_H_
