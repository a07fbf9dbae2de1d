#include "server/daemon/unix_listener.h"

#include <grpcpp/server.h>
#include <grpcpp/server_posix.h>
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
#include "server/daemon/auth.h"

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

}  // namespace

absl::StatusOr<std::unique_ptr<UnixListener>> UnixListener::Bind(const std::string& path,
                                                                 int mode) {
  sockaddr_un address{};
  if (absl::Status status = MakeAddress(path, &address); !status.ok()) return status;
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
    absl::StatusOr<bool> listening = SomeoneListens(path, address);
    if (!listening.ok()) return listening.status();
    if (*listening) {
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
  return std::unique_ptr<UnixListener>(new UnixListener(path, fd, info.st_ino));
}

UnixListener::~UnixListener() { Stop(); }

void UnixListener::Serve(grpc::Server* server, Authenticator* auth) {
  if (thread_.joinable() || fd_ < 0) return;
  thread_ = std::thread([this, server, auth] {
    try {
      AcceptLoop(server, auth);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "libreyolod: Unix listener on %s stopped: %s\n", path_.c_str(),
                   e.what());
    } catch (...) {
      std::fprintf(stderr, "libreyolod: Unix listener on %s stopped: unknown exception\n",
                   path_.c_str());
    }
  });
}

void UnixListener::AcceptLoop(grpc::Server* server, Authenticator* auth) {
  std::chrono::steady_clock::time_point last_logged{};
  int64_t failed_since_logged = 0;
  while (!stopping_.load()) {
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
    ucred credentials{};
    socklen_t size = sizeof(credentials);
    if (getsockopt(connection, SOL_SOCKET, SO_PEERCRED, &credentials, &size) != 0 ||
        size != sizeof(credentials)) {
      std::fprintf(stderr, "libreyolod: SO_PEERCRED on %s: %s; connection dropped\n", path_.c_str(),
                   ErrnoText(errno).c_str());
      close(connection);
      continue;
    }
    // Recorded before gRPC sees the connection, so its first call finds it (see the header).
    auth->RecordUnixPeer(absl::StrCat("fd:", connection), credentials.uid);
    grpc::AddInsecureChannelFromFd(server, connection);  // gRPC owns the descriptor now
  }
}

void UnixListener::Stop() {
  stopping_.store(true);
  if (thread_.joinable()) thread_.join();
  if (fd_ < 0) return;
  close(fd_);
  fd_ = -1;
  // Remove the socket file only if it is still ours (not a successor daemon's).
  struct stat info {};
  if (lstat(path_.c_str(), &info) == 0 && S_ISSOCK(info.st_mode) && info.st_ino == inode_) {
    unlink(path_.c_str());
  }
}

}  // namespace libreyolo::daemon
