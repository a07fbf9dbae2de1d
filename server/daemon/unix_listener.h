// The daemon's Unix socket. gRPC's own unix: listener does not tell a handler the peer's uid,
// so we accept connections ourselves, read SO_PEERCRED, record the uid with the Authenticator
// under the connection's peer string, and hand the fd to gRPC (grpc::AddInsecureChannelFromFd).
//
// The peer string: gRPC 1.51 reports "fd:<N>" (N = the accepted descriptor) as
// ServerContext::peer() for every call on a channel added from a descriptor. Descriptor numbers
// are reused after close, so the uid is recorded at each accept, before gRPC sees the
// connection, overwriting any earlier connection's entry. This is race-free: gRPC closes a
// connection's descriptor only when its transport is destroyed, which waits for every call on
// it to end, so while any call carrying "fd:N" is alive, N cannot belong to a newer connection;
// and a newer connection's calls cannot start before its entry is written. Stale entries are
// harmless: only connections handed over by this listener report "fd:" peers.
#ifndef LIBREYOLO_SERVER_DAEMON_UNIX_LISTENER_H_
#define LIBREYOLO_SERVER_DAEMON_UNIX_LISTENER_H_

#include <sys/types.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace grpc {
class Server;
}

namespace libreyolo::daemon {

class Authenticator;

class UnixListener {
 public:
  // Binds `path` with `mode` permissions (removing a stale socket nobody listens on;
  // FAILED_PRECONDITION when another daemon is listening there).
  static absl::StatusOr<std::unique_ptr<UnixListener>> Bind(const std::string& path, int mode);
  ~UnixListener();  // stops accepting, removes the socket file

  // Starts the accept thread; connections go to `server` once it is started. `server` and
  // `auth` must outlive Stop() (call it, or destroy the listener, before Server::Shutdown).
  void Serve(grpc::Server* server, Authenticator* auth);
  void Stop();
  const std::string& path() const { return path_; }

 private:
  UnixListener(std::string path, int fd, ino_t inode)
      : path_(std::move(path)), fd_(fd), inode_(inode) {}
  void AcceptLoop(grpc::Server* server, Authenticator* auth);
  std::string path_;
  int fd_ = -1;
  ino_t inode_ = 0;  // of the socket file we bound: Stop removes only that one
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_UNIX_LISTENER_H_
