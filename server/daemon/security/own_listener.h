// The daemon's own listeners: its Unix socket and its plaintext TCP addresses. gRPC's own unix:
// listener does not tell a handler the peer's uid, and gRPC 1.51 caps no connections, so we
// accept connections ourselves, ask the ConnectionGate (a budget per listener kind, caps per
// peer and per user, idle connections closed first, the handshake timeout on TCP, descriptors
// in reserve), record the peer with the Authenticator under the connection's peer string (a
// Unix caller's uid from SO_PEERCRED; a TCP caller as TCP: a bearer token is required), and
// hand the fd to gRPC (grpc::AddInsecureChannelFromFd). TLS listeners stay gRPC's own (a TLS
// connection cannot be handed over as a descriptor in gRPC 1.51).
//
// The peer string: gRPC 1.51 reports "fd:<N>" (N = the accepted descriptor) as
// ServerContext::peer() for every call on a channel added from a descriptor. Descriptor numbers
// are reused after close, so the uid is recorded at each accept, before gRPC sees the
// connection, overwriting any earlier connection's entry. This is race-free: gRPC closes a
// connection's descriptor only when its transport is destroyed, which waits for every call on
// it to end, so while any call carrying "fd:N" is alive, N cannot belong to a newer connection;
// and a newer connection's calls cannot start before its entry is written. Stale entries are
// harmless: only connections handed over by this listener report "fd:" peers.
#ifndef LIBREYOLO_SERVER_DAEMON_SECURITY_OWN_LISTENER_H_
#define LIBREYOLO_SERVER_DAEMON_SECURITY_OWN_LISTENER_H_

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace grpc {
class Server;
}

namespace libreyolo::daemon {

class Authenticator;
class ConnectionGate;

class OwnListener {
 public:
  // Binds `path` with `mode` permissions (removing a stale socket nobody listens on;
  // FAILED_PRECONDITION when another daemon is listening there).
  static absl::StatusOr<std::unique_ptr<OwnListener>> Bind(const std::string& path, int mode);
  // Binds plaintext TCP `hostport` ("127.0.0.1:7000", "[::1]:0", ":7000"); ALREADY_EXISTS
  // naming the address when it is in use. port() is the bound port.
  static absl::StatusOr<std::unique_ptr<OwnListener>> BindTcp(const std::string& address,
                                                               const std::string& hostport);
  ~OwnListener();  // stops accepting, removes the socket file

  // Starts the accept thread; connections go to `server` once it is started. `server` and
  // `auth` must outlive Stop() (call it, or destroy the listener, before Server::Shutdown).
  // `gate` decides on every connection (it must outlive Stop()).
  void Serve(grpc::Server* server, Authenticator* auth, ConnectionGate* gate);
  void Stop();
  const std::string& path() const { return path_; }
  int port() const { return port_; }

 private:
  OwnListener(std::string path, int fd, ino_t inode, bool tcp = false, int port = 0)
      : path_(std::move(path)), fd_(fd), inode_(inode), tcp_(tcp), port_(port) {}
  void AcceptLoop(grpc::Server* server, Authenticator* auth, ConnectionGate* gate);
  // The connection's peer for the gate and the Authenticator; false drops it.
  bool Identify(int connection, Authenticator* auth, std::string* peer);
  // One line per interval at most for the connections the gate closed (handshake timeout,
  // idle ones closed to make room).
  void LogClosed(ConnectionGate* gate, const std::string& last_idle);
  std::string path_;  // the socket file; for TCP, the address as listened on
  int fd_ = -1;
  ino_t inode_ = 0;  // of the socket file we bound: Stop removes only that one
  bool tcp_ = false;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
  std::chrono::steady_clock::time_point closed_logged_{};
};

// For a TLS address that gRPC binds itself: ALREADY_EXISTS naming `address` when its port is
// taken (gRPC binds with SO_REUSEPORT off, and would say only "no address added"); OK otherwise,
// port 0 included (what else is wrong gRPC reports). The same resolution as BindTcp.
absl::Status ProbeTcpPort(const std::string& address, const std::string& hostport);

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_SECURITY_OWN_LISTENER_H_
