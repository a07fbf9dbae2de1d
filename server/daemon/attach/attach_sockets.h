// The attach endpoint's sockets (issue 37 §1): Kineto's daemon address as a file socket
// `<root>/<uid>/dynolog` in a directory per Unix user (owned by that user, mode 0700, so only its
// processes reach it), or the abstract name `\0dynolog\0` (addrlen 11) that dynolog uses, opt-in.
// Every socket has SO_PASSCRED: each datagram carries its sender's pid and uid as the kernel
// knows them. Replies go to the sender's own address; one in a user's directory is reached
// through a descriptor of the socket file that was checked (a socket owned by that user), so a
// symlink planted there never redirects a reply.
#ifndef LIBREYOLO_SERVER_DAEMON_ATTACH_ATTACH_SOCKETS_H_
#define LIBREYOLO_SERVER_DAEMON_ATTACH_ATTACH_SOCKETS_H_

#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include <string>

#include "absl/status/statusor.h"

namespace libreyolo::daemon::attach {

// The socket's name in a directory, and the abstract name, that Kineto looks for.
inline constexpr char kDaemonSocketName[] = "dynolog";

// `<root>/<uid>`, created when missing: `root` as a directory of the daemon's user not
// writable by others (0755 so users can reach their own directory in it), the user's
// directory owned by `uid` with mode 0700. A daemon that cannot chown (neither root nor holding
// CAP_CHOWN) cannot give another user a directory: FAILED_PRECONDITION saying so. An existing
// directory of the wrong owner or mode is repaired when it can be, refused when not.
absl::StatusOr<std::string> EnsureUserDir(const std::string& root, uid_t uid);

// Binds `<dir>/dynolog` (a stale socket there is replaced), mode 0666 inside the 0700
// directory, non-blocking, close-on-exec, SO_PASSCRED. The descriptor.
absl::StatusOr<int> BindDirSocket(const std::string& dir);

// Binds the abstract name `\0<name>\0` (Kineto's address includes the trailing NUL).
// ALREADY_EXISTS naming the likely holder when the name is taken (EADDRINUSE): something the
// daemon needs is in use, so its start-up exits 3 (docs/deploy.md, "Start-up errors").
absl::StatusOr<int> BindAbstractSocket(const std::string& name);

// The peer of one datagram.
struct Sender {
  sockaddr_un addr{};
  socklen_t addr_len = 0;
  bool has_credentials = false;
  pid_t pid = 0;
  uid_t uid = 0;
};

// Sends `bytes` to `to` without blocking. For a socket in a user directory (`dir` not empty)
// the sender's path must be a socket owned by `to.uid` directly inside `dir`; it is reached
// through an O_PATH descriptor so a path swapped after the check is never followed. OK, or
// why not (an unbound sender, a full queue, a path outside `dir`).
absl::Status SendReply(int fd, const Sender& to, const std::string& dir, const std::string& bytes);

}  // namespace libreyolo::daemon::attach

#endif  // LIBREYOLO_SERVER_DAEMON_ATTACH_ATTACH_SOCKETS_H_
