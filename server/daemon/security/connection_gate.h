// The connections the daemon's own listeners accept (the Unix socket, plaintext TCP), capped in
// total and per peer, with descriptors kept in reserve (issue 23 item 2). A listener asks Admit
// for each accepted connection before it hands the descriptor to gRPC; one refused is closed at
// once. gRPC owns and closes the descriptors it is handed and says nothing when it does, so the
// gate keeps each one's (device, inode) and counts it while the descriptor still names that
// socket: closed, or reused by any other file or socket, it is no longer counted (a socket's
// inode is unique while it is open, so a reused number is told apart).
#ifndef LIBREYOLO_SERVER_DAEMON_SECURITY_CONNECTION_GATE_H_
#define LIBREYOLO_SERVER_DAEMON_SECURITY_CONNECTION_GATE_H_

#include <sys/types.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace libreyolo::daemon {

struct ConnectionCaps {
  int64_t max_connections = 512;          // all listeners together
  int64_t max_connections_per_peer = 64;  // one uid on the Unix socket, one address on TCP
  // Descriptors never given to a connection: the store, the workers' sockets, the log and the
  // Unix socket's own callers keep working when a flood reaches the process's limit.
  int64_t reserved_descriptors = 64;
};

class ConnectionGate {
 public:
  // `fd_limit`: the process's descriptor limit (RLIMIT_NOFILE's soft value).
  ConnectionGate(ConnectionCaps caps, int64_t fd_limit);

  // An accepted connection's descriptor and its peer ("uid:1000", "127.0.0.1"): "" when it is
  // admitted (and counted from now on), else why it is refused, for the log. `reserve_exempt`:
  // the Unix socket's callers may use the reserve (the local user and the admin get in when TCP
  // has taken every other descriptor); they still count against the caps.
  std::string Admit(int fd, const std::string& peer, bool reserve_exempt = false);

  int64_t open_connections();
  void set_caps(ConnectionCaps caps);

 private:
  struct Entry {
    int fd;
    dev_t dev;
    ino_t ino;
    std::string peer;
  };
  void SweepLocked();

  std::mutex mu_;
  ConnectionCaps caps_;
  int64_t fd_limit_;
  std::vector<Entry> entries_;
};

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_SECURITY_CONNECTION_GATE_H_
