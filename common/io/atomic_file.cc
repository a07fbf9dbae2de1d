#include "common/io/atomic_file.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/io/unique_fd.h"
#include "common/status/status_macros.h"

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

// Syncs and closes `fd` (the temp file `tmp`), renames it to `path` (unless `path` exists,
// with `no_replace`), syncs the directory.
absl::Status SyncAndRename(UniqueFd fd, const std::string& tmp, const std::string& path,
                           bool no_replace, FileOps& ops) {
  absl::Status st;
  if (ops.Fsync(fd.get()) != 0) st = FileError(errno, "cannot fsync", tmp);
  if (const int err = fd.Close(); st.ok() && err != 0) st = FileError(err, "cannot close", tmp);
  if (st.ok() && (no_replace ? ops.RenameNoReplace(tmp.c_str(), path.c_str())
                             : ops.Rename(tmp.c_str(), path.c_str())) != 0) {
    st = FileError(errno, absl::StrCat("cannot rename ", tmp, " to"), path);
  }
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  return FsyncDirectory(DirOf(path), ops);
}

absl::Status WriteAndPublish(const std::string& path, absl::string_view content, mode_t mode,
                             bool no_replace, FileOps& ops) {
  const auto [dir, name] = SplitPath(path);
  std::string tmp = absl::StrCat(dir, kAtomicTempPrefix, name, ".XXXXXX");
  UniqueFd fd(::mkostemp(tmp.data(), O_CLOEXEC));
  if (!fd.valid()) return FileError(errno, "cannot create a temp file for", path);
  absl::Status st = WriteAllToFd(fd.get(), content, tmp, ops);
  if (st.ok() && ::fchmod(fd.get(), mode) != 0) st = FileError(errno, "cannot chmod", tmp);
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  return SyncAndRename(std::move(fd), tmp, path, no_replace, ops);
}

}  // namespace

ssize_t FileOps::Write(int fd, const void* data, size_t size) { return ::write(fd, data, size); }
int FileOps::Fsync(int fd) { return ::fsync(fd); }
int FileOps::FsyncDir(int fd) { return ::fsync(fd); }
int FileOps::Rename(const char* from, const char* to) { return ::rename(from, to); }
int FileOps::Ftruncate(int fd, off_t size) { return ::ftruncate(fd, size); }

int FileOps::RenameNoReplace(const char* from, const char* to) {
  if (::renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS) return -1;
  if (::link(from, to) != 0) return -1;  // EEXIST when `to` exists
  ::unlink(from);
  return 0;
}

FileOps& SystemFileOps() {
  static FileOps* const ops = new FileOps();  // stateless; never destroyed
  return *ops;
}

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
    case EEXIST:
      return absl::AlreadyExistsError(msg);
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
      return absl::ResourceExhaustedError(msg);
    default:
      return absl::UnavailableError(msg);
  }
}

bool WritesThrough(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

absl::Status WriteNamedOutput(const std::string& path, absl::string_view content, mode_t mode) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(path, " is a directory; name a file"));
  }
  if (!WritesThrough(path)) return WriteFileAtomically(path, content, mode);
  // A dangling link gets its target created, as `> link` would.
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
  if (!fd.valid()) return FileError(errno, "cannot open", path);
  RETURN_IF_ERROR(WriteAllToFd(fd.get(), content, path));
  // A regular file behind a link is synced; a device or pipe has nothing to sync (EINVAL).
  if (::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode) && ::fsync(fd.get()) != 0) {
    return FileError(errno, "cannot fsync", path);
  }
  if (const int err = fd.Close(); err != 0) return FileError(err, "cannot close", path);
  return absl::OkStatus();
}

absl::Status WriteAllToFd(int fd, absl::string_view data, absl::string_view path,
                          FileOps& ops) {
  while (!data.empty()) {
    const ssize_t n = ops.Write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return FileError(errno, "cannot write", path);
    if (n == 0) return FileError(ENOSPC, "cannot write", path);
    data.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

absl::Status FsyncDirectory(const std::string& dir, FileOps& ops) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return FileError(errno, "cannot open directory", dir);
  if (ops.FsyncDir(fd.get()) != 0) return FileError(errno, "cannot fsync", dir);
  if (const int err = fd.Close(); err != 0) return FileError(err, "cannot close", dir);
  return absl::OkStatus();
}

std::string TempPathBeside(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  const auto [dir, name] = SplitPath(path);
  return absl::StrCat(dir, kAtomicTempPrefix, name, ".", ::getpid(), ".",
                      counter.fetch_add(1, std::memory_order_relaxed));
}

absl::Status WriteFileAtomically(const std::string& path, absl::string_view content, mode_t mode,
                                 FileOps& ops) {
  return WriteAndPublish(path, content, mode, /*no_replace=*/false, ops);
}

absl::Status WriteFileOnce(const std::string& path, absl::string_view content, mode_t mode,
                           FileOps& ops) {
  return WriteAndPublish(path, content, mode, /*no_replace=*/true, ops);
}

absl::Status PublishTempFile(const std::string& tmp, const std::string& path, FileOps& ops) {
  UniqueFd fd(::open(tmp.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return FileError(err, "cannot reopen", tmp);
  }
  return SyncAndRename(std::move(fd), tmp, path, /*no_replace=*/false, ops);
}

}  // namespace libreyolo
