#include "server/daemon/security/own_listener.h"

#include <arpa/inet.h>
#include <grpcpp/server.h>
#include <grpcpp/server_posix.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status/status_macros.h"
#include "common/status/thread_guard.h"
#include "server/daemon/security/auth.h"
#include "server/daemon/security/connection_gate.h"

namespace libreyolo::daemon {
namespace {

constexpr int kPollTimeoutMs = 100;  // how quickly Stop is noticed
// Out of descriptors, accept fails at every poll: one log line per this interval at most, with
// how many attempts failed since the last one (issue 23 item 2: a line per attempt flooded the
// journal).
constexpr auto kAcceptErrorLogInterval = std::chrono::seconds(10);
constexpr int kBacklog = 128;

std::string ErrnoText(int error) { return std::strerror(error); }

// The address of `path`, or an error when it does not fit in sun_path.
absl::Status MakeAddress(const std::string& path, sockaddr_un* address) {
  *address = sockaddr_un{};
  address->sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(address->sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("Unix socket path '", path,
                                                   "' is empty or longer than ",
                                                   sizeof(address->sun_path) - 1, " bytes"));
  }
  std::memcpy(address->sun_path, path.c_str(), path.size() + 1);
  return absl::OkStatus();
}

// sockaddr_un is what bind/connect take; the cast is the POSIX socket API's idiom.
const sockaddr* AsSockaddr(const sockaddr_un* address) {
  return reinterpret_cast<const sockaddr*>(address);
}

std::string ParentDirectory(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// True when a daemon accepts connections on `path`; an error other than "nobody listens".
absl::StatusOr<bool> SomeoneListens(const std::string& path, const sockaddr_un& address) {
  const int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (probe < 0) {
    return absl::InternalError(absl::StrCat("socket(AF_UNIX): ", ErrnoText(errno)));
  }
  int result = 0;
  do {
    result = connect(probe, AsSockaddr(&address), sizeof(address));
  } while (result != 0 && errno == EINTR);
  const int error = errno;
  close(probe);
  if (result == 0) return true;
  if (error == ECONNREFUSED || error == ENOENT) return false;  // a stale socket file
  return absl::FailedPreconditionError(
      absl::StrCat("cannot probe the existing socket ", path, ": ", ErrnoText(error)));
}

// A TCP listen address resolved for binding: getaddrinfo's list (freed with it) and the port.
struct TcpAddresses {
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> list{nullptr, &freeaddrinfo};
  std::string port;
};

// "127.0.0.1:7000", "[::1]:0", ":7000" (any address) resolved as passive stream addresses;
// INVALID_ARGUMENT naming `address` when it has no port or does not resolve.
absl::StatusOr<TcpAddresses> ResolveTcp(const std::string& address, const std::string& hostport) {
  const size_t colon = hostport.rfind(':');
  if (colon == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("listen ", address, ": expected HOST:PORT"));
  }
  std::string host = hostport.substr(0, colon);
  TcpAddresses out;
  out.port = hostport.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (const int e =
          getaddrinfo(host.empty() ? nullptr : host.c_str(), out.port.c_str(), &hints, &found);
      e != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("listen ", address, ": cannot resolve ", hostport, ": ", gai_strerror(e)));
  }
  out.list.reset(found);
  return out;
}

// A socket for `a` with SO_REUSEADDR (as gRPC: a port in TIME_WAIT is free); -1 on failure.
int TcpSocket(const addrinfo& a) {
  const int fd = socket(a.ai_family, a.ai_socktype | SOCK_CLOEXEC, a.ai_protocol);
  if (fd < 0) return -1;
  const int on = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  return fd;
}

absl::Status AddressInUse(const std::string& address, const std::string& port) {
  return absl::AlreadyExistsError(absl::StrCat(
      "listen ", address, ": address already in use; another libreyolod or ", "program holds port ",
      port, " (`ss -ltnp 'sport = :", port, "'` names it): stop it or choose another port"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<OwnListener>> OwnListener::Bind(const std::string& path,
                                                                 int mode) {
  sockaddr_un address{};
  RETURN_IF_ERROR(MakeAddress(path, &address));
  if (mode < 0 || mode > 0777) {
    return absl::InvalidArgumentError(absl::StrCat("Unix socket mode ", mode, " is not 0..0777"));
  }
  const std::string parent = ParentDirectory(path);
  struct stat info {};
  if (stat(parent.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("the directory ", parent, " of the Unix socket ", path,
                     " does not exist: create it (systemd: RuntimeDirectory=libreyolod)"));
  }
  if (lstat(path.c_str(), &info) == 0) {
    if (!S_ISSOCK(info.st_mode)) {
      return absl::FailedPreconditionError(
          absl::StrCat(path, " exists and is not a socket: remove it or choose another path"));
    }
    ASSIGN_OR_RETURN(bool listening, SomeoneListens(path, address));
    if (listening) {
      return absl::AlreadyExistsError(absl::StrCat(
          "another libreyolod listens on ", path, ": stop it or choose another socket path"));
    }
    if (unlink(path.c_str()) != 0 && errno != ENOENT) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot remove the stale socket ", path, ": ", ErrnoText(errno)));
    }
  }
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket(AF_UNIX): ", ErrnoText(errno)));
  auto fail = [fd, &path](const char* what, bool remove) {
    const int error = errno;
    close(fd);
    if (remove) unlink(path.c_str());
    return absl::FailedPreconditionError(absl::StrCat(what, " ", path, ": ", ErrnoText(error)));
  };
  if (bind(fd, AsSockaddr(&address), sizeof(address)) != 0) return fail("cannot bind", false);
  // The mode is set before listen(): until then every connect() is refused, so no caller gets
  // in through the umask's permissions.
  if (chmod(path.c_str(), static_cast<mode_t>(mode)) != 0) return fail("cannot chmod", true);
  if (lstat(path.c_str(), &info) != 0) return fail("cannot stat", true);
  if (listen(fd, kBacklog) != 0) return fail("cannot listen on", true);
  return std::unique_ptr<OwnListener>(new OwnListener(path, fd, info.st_ino));
}

absl::StatusOr<std::unique_ptr<OwnListener>> OwnListener::BindTcp(const std::string& address,
                                                                  const std::string& hostport) {
  ASSIGN_OR_RETURN(TcpAddresses found, ResolveTcp(address, hostport));
  absl::Status last = absl::UnavailableError(absl::StrCat("listen ", address, ": no address"));
  for (const addrinfo* a = found.list.get(); a != nullptr; a = a->ai_next) {
    const int fd = TcpSocket(*a);
    if (fd < 0) continue;
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, kBacklog) != 0) {
      const int error = errno;
      close(fd);
      last = error == EADDRINUSE
                 ? AddressInUse(address, found.port)
                 : absl::UnavailableError(absl::StrCat("listen ", address, ": ", ErrnoText(error)));
      continue;
    }
    sockaddr_storage bound{};
    socklen_t size = sizeof(bound);
    getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &size);
    const int got =
        ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                          : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    return std::unique_ptr<OwnListener>(new OwnListener(address, fd, 0, true, got));
  }
  return last;
}

absl::Status ProbeTcpPort(const std::string& address, const std::string& hostport) {
  absl::StatusOr<TcpAddresses> found = ResolveTcp(address, hostport);
  // An unsplittable address is the config validator's to report, an unresolvable one gRPC's.
  if (!found.ok() || found->port == "0") return absl::OkStatus();  // port 0: any free port
  for (const addrinfo* a = found->list.get(); a != nullptr; a = a->ai_next) {
    const int fd = TcpSocket(*a);
    if (fd < 0) continue;
    const bool in_use = bind(fd, a->ai_addr, a->ai_addrlen) != 0 && errno == EADDRINUSE;
    close(fd);
    if (in_use) return AddressInUse(address, found->port);
  }
  return absl::OkStatus();
}

OwnListener::~OwnListener() { Stop(); }

void OwnListener::Serve(grpc::Server* server, Authenticator* auth, ConnectionGate* gate) {
  if (thread_.joinable() || fd_ < 0) return;
  // The RPC edge (rpc_edge.cc) tells the gate of each call through the Authenticator: which
  // connection is busy, and whose it is once a call authenticates.
  auth->set_connection_gate(gate);
  thread_ = std::thread([this, server, auth, gate] {
    RunGuarded(absl::StrCat("listener ", path_),
               "libreyolod keeps serving; this listener accepts no more connections",
               [&] { AcceptLoop(server, auth, gate); });
  });
}

bool OwnListener::Identify(int connection, Authenticator* auth, std::string* peer) {
  const std::string key = absl::StrCat("fd:", connection);
  if (tcp_) {
    sockaddr_storage from{};
    socklen_t size = sizeof(from);
    char text[INET6_ADDRSTRLEN] = "?";
    if (getpeername(connection, reinterpret_cast<sockaddr*>(&from), &size) == 0) {
      const void* a =
          from.ss_family == AF_INET6
              ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(&from)->sin6_addr)
              : static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(&from)->sin_addr);
      inet_ntop(from.ss_family, a, text, sizeof(text));
    }
    *peer = text;
    auth->RecordTcpPeer(key);  // before gRPC sees it: its calls need a token
    return true;
  }
  ucred credentials{};
  socklen_t size = sizeof(credentials);
  if (getsockopt(connection, SOL_SOCKET, SO_PEERCRED, &credentials, &size) != 0 ||
      size != sizeof(credentials)) {
    std::fprintf(stderr, "libreyolod: SO_PEERCRED on %s: %s; connection dropped\n", path_.c_str(),
                 ErrnoText(errno).c_str());
    return false;
  }
  *peer = absl::StrCat("uid:", credentials.uid);
  // Recorded before gRPC sees the connection, so its first call finds it (see the header).
  auth->RecordUnixPeer(key, credentials.uid);
  return true;
}

void OwnListener::LogClosed(ConnectionGate* gate, const std::string& last_idle) {
  const auto now = std::chrono::steady_clock::now();
  if (closed_logged_ != std::chrono::steady_clock::time_point{} &&
      now - closed_logged_ < kAcceptErrorLogInterval) {
    return;
  }
  const ConnectionGate::Closed closed = gate->TakeClosed();
  if (closed.handshake == 0 && closed.idle == 0) return;
  std::string line = "libreyolod: connections: closed";
  if (closed.handshake > 0) {
    absl::StrAppend(&line, " ", closed.handshake,
                    " connection(s) that made no authenticated call within handshake_timeout_s");
  }
  if (closed.idle > 0) {
    absl::StrAppend(&line, closed.handshake > 0 ? " and" : "", " ", closed.idle,
                    " idle connection(s) to admit others under the caps (max_connections, "
                    "max_connections_per_peer)",
                    last_idle.empty() ? "" : absl::StrCat(", the last ", last_idle));
  }
  absl::StrAppend(&line, " since the last line\n");
  std::fputs(line.c_str(), stderr);
  closed_logged_ = now;
}

void OwnListener::AcceptLoop(grpc::Server* server, Authenticator* auth, ConnectionGate* gate) {
  std::chrono::steady_clock::time_point last_logged{};
  int64_t failed_since_logged = 0;
  std::chrono::steady_clock::time_point refusal_logged{};
  int64_t refused_since_logged = 0;
  std::string last_idle;  // the last idle connection closed to make room, for the log
  while (!stopping_.load()) {
    if (tcp_) gate->ExpireHandshakes();
    LogClosed(gate, last_idle);
    pollfd waiting{fd_, POLLIN, 0};
    const int ready = poll(&waiting, 1, kPollTimeoutMs);
    if (ready <= 0) continue;  // timeout, or EINTR
    // gRPC's endpoint needs a non-blocking descriptor: with a blocking one, calls stall.
    const int connection = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (connection < 0) {
      const int error = errno;
      if (error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM) {
        ++failed_since_logged;
        const auto now = std::chrono::steady_clock::now();
        if (last_logged == std::chrono::steady_clock::time_point{} ||
            now - last_logged >= kAcceptErrorLogInterval) {
          std::fprintf(stderr,
                       "libreyolod: accept on %s: %s (%lld attempt%s since the last line)\n",
                       path_.c_str(), ErrnoText(error).c_str(),
                       static_cast<long long>(failed_since_logged),
                       failed_since_logged == 1 ? "" : "s");
          last_logged = now;
          failed_since_logged = 0;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(kPollTimeoutMs));
      }
      continue;  // EAGAIN, EINTR, ECONNABORTED, ...
    }
    std::string peer;
    if (!Identify(connection, auth, &peer)) {
      close(connection);
      continue;
    }
    std::string closed;
    const std::string why = gate->Admit(connection, peer, /*unix_socket=*/!tcp_, &closed);
    if (!closed.empty()) last_idle = closed;
    if (!why.empty()) {
      close(connection);
      // One line per interval at most: a flood must not flood the log.
      ++refused_since_logged;
      const auto now = std::chrono::steady_clock::now();
      if (refusal_logged == std::chrono::steady_clock::time_point{} ||
          now - refusal_logged >= kAcceptErrorLogInterval) {
        std::fprintf(stderr,
                     "libreyolod: %s: connection from %s closed: %s (%lld refused since the "
                     "last line)\n",
                     path_.c_str(), peer.c_str(), why.c_str(),
                     static_cast<long long>(refused_since_logged));
        refusal_logged = now;
        refused_since_logged = 0;
      }
      continue;
    }
    grpc::AddInsecureChannelFromFd(server, connection);  // gRPC owns the descriptor now
  }
}

void OwnListener::Stop() {
  stopping_.store(true);
  if (thread_.joinable()) thread_.join();
  if (fd_ < 0) return;
  close(fd_);
  fd_ = -1;
  if (tcp_) return;
  // Remove the socket file only if it is still ours (not a successor daemon's).
  struct stat info {};
  if (lstat(path_.c_str(), &info) == 0 && S_ISSOCK(info.st_mode) && info.st_ino == inode_) {
    unlink(path_.c_str());
  }
}

}  // namespace libreyolo::daemon
