#include "common/io/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace libreyolo {
namespace {

absl::Status Errno(int err, const std::string& what, const std::string& path) {
  const std::string msg = absl::StrCat(what, " ", path, ": ", std::strerror(err));
  switch (err) {
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(msg);
    case ENOENT:
    case ENOTDIR:
      return absl::NotFoundError(msg);
    default:
      return absl::UnavailableError(msg);
  }
}

}  // namespace

absl::Status WriteFileAtomically(const std::string& path, const std::string& content) {
  const std::string tmp = absl::StrCat(path, ".tmp.", ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errno(errno, "cannot write", path);
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      ::close(fd);
      std::remove(tmp.c_str());
      return Errno(err, "writing failed for", path);
    }
    done += static_cast<size_t>(n);
  }
  int err = ::fsync(fd) != 0 ? errno : 0;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    std::remove(tmp.c_str());
    return Errno(err, "writing failed for", path);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    err = errno;
    std::remove(tmp.c_str());
    return Errno(err, "cannot rename into", path);
  }
  return absl::OkStatus();
}

}  // namespace libreyolo
