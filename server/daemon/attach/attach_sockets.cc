#include "server/daemon/attach/attach_sockets.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status/status_macros.h"

namespace libreyolo::daemon::attach {
namespace {

constexpr size_t kPathOffset = offsetof(sockaddr_un, sun_path);

absl::Status Errno(absl::string_view what, const std::string& path, int err) {
  return absl::InternalError(absl::StrCat(what, " ", path, ": ", std::strerror(err)));
}

// A descriptor closed at scope exit.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

absl::Status EnsureRoot(const std::string& root) {
  std::error_code ec;
  std::filesystem::create_directories(root, ec);
  if (ec) return Errno("cannot create the attach directory", root, ec.value());
  struct stat st {};
  if (::lstat(root.c_str(), &st) != 0) return Errno("cannot read", root, errno);
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("the attach directory ", root, " is not a directory (a symlink?)"));
  }
  if (st.st_uid != ::geteuid()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the attach directory ", root, " belongs to uid ", st.st_uid, ", not to libreyolod's ",
        ::geteuid(), ": set attach_dir to a directory of the daemon"));
  }
  if ((st.st_mode & 07777) != 0755 && ::chmod(root.c_str(), 0755) != 0) {
    return Errno("cannot chmod 0755", root, errno);
  }
  return absl::OkStatus();
}

absl::StatusOr<sockaddr_un> PathAddress(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() + 1 > sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the socket path ", path, " is longer than a Unix socket allows (",
                     sizeof(addr.sun_path) - 1, " bytes): choose a shorter attach_dir"));
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  return addr;
}

}  // namespace

absl::StatusOr<std::string> EnsureUserDir(const std::string& root, uid_t uid) {
  RETURN_IF_ERROR(EnsureRoot(root));
  const std::string dir = absl::StrCat(root, "/", uid);
  const bool made = ::mkdir(dir.c_str(), 0700) == 0;
  if (!made && errno != EEXIST) return Errno("cannot create", dir, errno);
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (fd.get() < 0) return Errno("cannot open the directory", dir, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Errno("cannot read", dir, errno);
  if (st.st_uid != uid && ::fchown(fd.get(), uid, static_cast<gid_t>(-1)) != 0) {
    const int err = errno;
    if (made) ::rmdir(dir.c_str());
    if (err == EPERM) {
      return absl::FailedPreconditionError(absl::StrCat(
          "libreyolod runs as uid ", ::geteuid(),
          " and can make processes attachable only for "
          "its own user, not for uid ",
          uid,
          ": run the shared daemon as root or give it "
          "CAP_CHOWN and CAP_DAC_OVERRIDE (docs/deploy.md, \"Attach\"), or use your private "
          "daemon (no --remote)"));
    }
    return Errno(absl::StrCat("cannot give uid ", uid, " the directory"), dir, err);
  }
  if ((st.st_mode & 07777) != 0700 && ::fchmod(fd.get(), 0700) != 0) {
    return Errno("cannot chmod 0700", dir, errno);
  }
  return dir;
}

absl::StatusOr<int> BindDirSocket(const std::string& dir) {
  const std::string path = absl::StrCat(dir, "/", kDaemonSocketName);
  ASSIGN_OR_RETURN(sockaddr_un addr, PathAddress(path));
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode) && !S_ISLNK(st.st_mode)) {
      return absl::FailedPreconditionError(
          absl::StrCat(path, " exists and is not a socket: remove it"));
    }
    ::unlink(path.c_str());  // a socket left by an earlier daemon, or a planted symlink
  }
  Fd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return Errno("cannot make a socket for", path, errno);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(sockaddr_un)) != 0) {
    return Errno("cannot bind", path, errno);
  }
  // Mode 0666 (Kineto's own choice) on the very file bound: a path swapped since is not chmodded.
  Fd file(::open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (file.get() < 0 || ::fstat(file.get(), &st) != 0 || !S_ISSOCK(st.st_mode) ||
      st.st_uid != ::geteuid() ||
      ::chmod(absl::StrCat("/proc/self/fd/", file.get()).c_str(), 0666) != 0) {
    return absl::InternalError(absl::StrCat("cannot make ", path, " writable by its user"));
  }
  const int on = 1;
  if (::setsockopt(fd.get(), SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) != 0) {
    return Errno("cannot ask for credentials on", path, errno);
  }
  return fd.release();
}

absl::StatusOr<int> BindAbstractSocket(const std::string& name) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (name.empty() || name.size() + 2 > sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError("bad abstract socket name");
  }
  std::memcpy(addr.sun_path + 1, name.data(), name.size());  // \0name\0
  const auto len = static_cast<socklen_t>(kPathOffset + name.size() + 2);
  Fd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return Errno("cannot make a socket for", "@" + name, errno);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
    if (errno == EADDRINUSE) {  // in use: libreyolod's start-up exits 3, as for a taken port
      return absl::AlreadyExistsError(absl::StrCat(
          "the abstract socket name '", name,
          "' (Kineto's default daemon address) is held by "
          "another process: dynolog (--enable_ipc_monitor), a dynolog that Ray started, or "
          "another libreyolod. Stop it, or turn attach_dynolog_compat off and make processes "
          "attachable with `libreyolo profile attach --env` (a socket directory per user)"));
    }
    return Errno("cannot bind", "@" + name, errno);
  }
  const int on = 1;
  if (::setsockopt(fd.get(), SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) != 0) {
    return Errno("cannot ask for credentials on", "@" + name, errno);
  }
  return fd.release();
}

absl::Status SendReply(int fd, const Sender& to, const std::string& dir, const std::string& bytes) {
  if (to.addr_len <= kPathOffset + 1) return absl::FailedPreconditionError("unbound sender");
  const char* raw = to.addr.sun_path;
  const size_t raw_len = to.addr_len - kPathOffset;
  auto send = [&](const sockaddr_un& addr, socklen_t len) {
    if (::sendto(fd, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL,
                 reinterpret_cast<const sockaddr*>(&addr), len) < 0) {
      return absl::UnavailableError(std::strerror(errno));
    }
    return absl::OkStatus();
  };
  if (raw[0] == '\0') {  // abstract: only on the abstract endpoint (no permissions there anyway)
    if (!dir.empty()) return absl::PermissionDeniedError("abstract sender on a directory socket");
    return send(to.addr, to.addr_len);
  }
  const std::string path(raw, ::strnlen(raw, raw_len));
  const std::string prefix = dir + "/";
  if (dir.empty() || !absl::StartsWith(path, prefix) ||
      path.find('/', prefix.size()) != std::string::npos || path.size() == prefix.size()) {
    return absl::PermissionDeniedError("sender outside the socket directory");
  }
  Fd file(::open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (file.get() < 0 || ::fstat(file.get(), &st) != 0 || !S_ISSOCK(st.st_mode) ||
      st.st_uid != to.uid) {
    return absl::PermissionDeniedError("the sender's address is not its own socket");
  }
  ASSIGN_OR_RETURN(sockaddr_un via, PathAddress(absl::StrCat("/proc/self/fd/", file.get())));
  return send(via, sizeof(sockaddr_un));
}

}  // namespace libreyolo::daemon::attach
