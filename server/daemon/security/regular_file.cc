#include "server/daemon/security/regular_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status/status_macros.h"

namespace libreyolo::daemon {
namespace {

// "a FIFO", "a directory", ... for a file that is not a regular one.
std::string KindOfFile(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

// `path` opened for reading without blocking. -1 with errno on failure.
int OpenWithoutBlocking(const std::string& path) {
  return open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
}

// Closes the descriptor on every way out.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

std::string RegularFileProblem(const std::string& path) {
  const Fd fd(OpenWithoutBlocking(path));
  if (fd.get() < 0) return std::strerror(errno);
  struct stat info {};
  if (fstat(fd.get(), &info) != 0) return "cannot be examined";
  return S_ISREG(info.st_mode) ? "" : absl::StrCat("not a regular file (", KindOfFile(info.st_mode),
                                                   "): point it at a regular file");
}

absl::StatusOr<std::string> ReadRegularFile(const std::string& path, absl::string_view what,
                                            absl::string_view fix, const RegularFileCheck& check) {
  const Fd fd(OpenWithoutBlocking(path));
  if (fd.get() < 0) {
    const int error = errno;
    if (error == ENOENT) return absl::NotFoundError(absl::StrCat(what, " ", path, " not found"));
    return absl::FailedPreconditionError(
        absl::StrCat(what, " ", path, " cannot be read: ", std::strerror(error)));
  }
  struct stat info {};
  if (fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, " ", path, " is not a regular file (", KindOfFile(info.st_mode),
                     "): it is refused rather than waited on; ", fix));
  }
  if (check) {
    RETURN_IF_ERROR(check(info));
  }
  std::string text;
  char buffer[8192];
  for (;;) {
    const ssize_t n = read(fd.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return absl::FailedPreconditionError(
          absl::StrCat(what, " ", path, " cannot be read: ", std::strerror(errno)));
    }
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  return text;
}

}  // namespace libreyolo::daemon
