#include "server/daemon/store/dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace libreyolo::daemon {

namespace fs = std::filesystem;

absl::StatusOr<std::unique_ptr<DirLock>> DirLock::Acquire(const std::string& dir,
                                                          const std::string& what) {
  const std::string path = (fs::path(dir) / "libreyolod.lock").string();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::FailedPreconditionError(absl::StrCat(what, " ", dir, ": cannot open its lock file ",
                                                      path, ": ", std::strerror(errno)));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int flock_error = errno;
    char text[32] = {};
    const ssize_t n = ::pread(fd, text, sizeof(text) - 1, 0);
    ::close(fd);
    if (flock_error != EWOULDBLOCK) {
      return absl::FailedPreconditionError(
          absl::StrCat(what, " ", dir, ": cannot lock ", path, ": ", std::strerror(flock_error)));
    }
    int64_t pid = 0;
    const bool named = n > 0 && absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &pid);
    return absl::AlreadyExistsError(absl::StrCat(
        what, " ", dir, " is in use by another libreyolod",
        named ? absl::StrCat(" (pid ", pid, ")") : std::string(),
        ": stop it, or give this daemon its own --state-dir and --store-dir"));
  }
  // Ours: record the pid for the next one to name (best effort; the lock is what counts).
  const std::string pid = absl::StrCat(::getpid(), "\n");
  if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, pid.data(), pid.size(), 0);
  return std::unique_ptr<DirLock>(new DirLock(path, fd));
}

DirLock::~DirLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace libreyolo::daemon
