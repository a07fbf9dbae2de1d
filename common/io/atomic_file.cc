#include "common/io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/io/unique_fd.h"

namespace libreyolo {
namespace {

// "<dir>/" (empty for a bare name) and the name.
std::pair<std::string, std::string> SplitPath(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {"", path};
  return {path.substr(0, slash + 1), path.substr(slash + 1)};
}

std::string DirOf(const std::string& path) {
  const auto [dir, name] = SplitPath(path);
  if (dir.empty()) return ".";
  return dir.size() == 1 ? dir : dir.substr(0, dir.size() - 1);
}

// Syncs and closes `fd` (the temp file `tmp`), renames it to `path`, syncs the directory.
absl::Status SyncAndRename(UniqueFd fd, const std::string& tmp, const std::string& path) {
  absl::Status st;
  if (::fsync(fd.get()) != 0) st = FileError(errno, "cannot fsync", tmp);
  if (const int err = fd.Close(); st.ok() && err != 0) st = FileError(err, "cannot close", tmp);
  if (st.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    st = FileError(errno, absl::StrCat("cannot rename ", tmp, " to"), path);
  }
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  return FsyncDirectory(DirOf(path));
}

}  // namespace

absl::Status FileError(int errno_value, absl::string_view what, absl::string_view path) {
  const std::string msg = absl::StrCat(what, " ", path, ": ", std::strerror(errno_value));
  switch (errno_value) {
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(msg);
    case ENOENT:
    case ENOTDIR:
      return absl::NotFoundError(msg);
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
      return absl::ResourceExhaustedError(msg);
    default:
      return absl::UnavailableError(msg);
  }
}

absl::Status WriteAllToFd(int fd, absl::string_view data, absl::string_view path) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return FileError(errno, "cannot write", path);
    if (n == 0) return FileError(ENOSPC, "cannot write", path);
    data.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

absl::Status FsyncDirectory(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return FileError(errno, "cannot open directory", dir);
  if (::fsync(fd.get()) != 0) return FileError(errno, "cannot fsync", dir);
  if (const int err = fd.Close(); err != 0) return FileError(err, "cannot close", dir);
  return absl::OkStatus();
}

std::string TempPathBeside(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  const auto [dir, name] = SplitPath(path);
  return absl::StrCat(dir, kAtomicTempPrefix, name, ".", ::getpid(), ".",
                      counter.fetch_add(1, std::memory_order_relaxed));
}

absl::Status WriteFileAtomically(const std::string& path, absl::string_view content, mode_t mode) {
  const auto [dir, name] = SplitPath(path);
  std::string tmp = absl::StrCat(dir, kAtomicTempPrefix, name, ".XXXXXX");
  UniqueFd fd(::mkostemp(tmp.data(), O_CLOEXEC));
  if (!fd.valid()) return FileError(errno, "cannot create a temp file for", path);
  absl::Status st = WriteAllToFd(fd.get(), content, tmp);
  if (st.ok() && ::fchmod(fd.get(), mode) != 0) st = FileError(errno, "cannot chmod", tmp);
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  return SyncAndRename(std::move(fd), tmp, path);
}

absl::Status PublishTempFile(const std::string& tmp, const std::string& path) {
  UniqueFd fd(::open(tmp.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return FileError(err, "cannot reopen", tmp);
  }
  return SyncAndRename(std::move(fd), tmp, path);
}

}  // namespace libreyolo
