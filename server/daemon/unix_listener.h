// The daemon's Unix socket. gRPC's own unix: listener does not tell a handler the peer's uid,
// so we accept connections ourselves, read SO_PEERCRED, record the uid with the Authenticator
// under the connection's peer string, and hand the fd to gRPC (grpc::AddInsecureChannelFromFd).
#ifndef LIBREYOLO_SERVER_DAEMON_UNIX_LISTENER_H_
#define LIBREYOLO_SERVER_DAEMON_UNIX_LISTENER_H_

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

  // Starts the accept thread; connections go to `server` once it is started.
  void Serve(grpc::Server* server, Authenticator* auth);
  void Stop();
  const std::string& path() const { return path_; }

 private:
  UnixListener(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_ = -1;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_UNIX_LISTENER_H_
