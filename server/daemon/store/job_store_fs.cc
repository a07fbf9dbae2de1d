// The job store's file-system helpers and name checks (declared in job_store_internal.h).
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/render/terminal_text.h"
#include "server/daemon/store/job_store_internal.h"

namespace libreyolo::daemon::job_store_internal {

absl::Status OsError(int err, absl::string_view what, absl::string_view path) {
  return absl::ErrnoToStatus(err, absl::StrCat(what, " ", path));
}

// An untrusted string in an error message: quoted, as the one excerpt every echo uses.
std::string Quote(absl::string_view s) {
  return absl::StrCat("'", Excerpt(std::string_view(s.data(), s.size())), "'");
}

absl::Status CheckJobId(absl::string_view id) { return ::libreyolo::CheckJobId(id); }

std::string Join(absl::string_view dir, absl::string_view name) {
  return absl::StrCat(dir, "/", name);
}

std::string Parent(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string StripTrailingSlashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

// Closes `fd` and reports a failed close (a writer must not ignore one).
absl::Status CloseFd(UniqueFd& fd, absl::string_view path) {
  if (const int err = fd.Close(); err != 0) return OsError(err, "cannot close", path);
  return absl::OkStatus();
}

absl::Status FsyncFd(int fd, absl::string_view path, FileOps& ops) {
  if (ops.Fsync(fd) != 0) return OsError(errno, "cannot fsync", path);
  return absl::OkStatus();
}

// mkdir -p; the last component gets `mode`, missing parents 0755 (both less the umask). A
// symlink to a directory is accepted as an existing directory.
absl::Status MakeDirs(const std::string& path, mode_t mode) {
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    const std::string prefix = path.substr(0, pos);
    if (prefix.empty()) continue;
    const mode_t m = pos == std::string::npos ? mode : 0755;
    if (::mkdir(prefix.c_str(), m) == 0) continue;
    const int err = errno;
    struct stat st {};
    if (err == EEXIST && ::stat(prefix.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) continue;
    return OsError(err == EEXIST ? ENOTDIR : err, "cannot create directory", prefix);
  }
  return absl::OkStatus();
}

// Creates `path` (one level) with `mode` unless it exists; refuses anything but a real
// directory there (a symlink could point outside the store).
absl::Status MakeRealDir(const std::string& path, mode_t mode) {
  if (::mkdir(path.c_str(), mode) != 0 && errno != EEXIST) {
    return OsError(errno, "cannot create directory", path);
  }
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return OsError(errno, "cannot stat", path);
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is not a directory", S_ISLNK(st.st_mode) ? " (a symlink)" : ""));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> ListDir(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return OsError(errno, "cannot list directory", dir);
  std::vector<std::string> names;
  errno = 0;
  while (const dirent* e = ::readdir(d)) {
    const absl::string_view name = e->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  const int err = errno;
  ::closedir(d);
  if (err != 0) return OsError(err, "cannot list directory", dir);
  std::sort(names.begin(), names.end());
  return names;
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return OsError(errno, "cannot open", path);
  std::string data;
  std::array<char, 1 << 16> buf{};
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return OsError(errno, "cannot read", path);
    }
    if (n == 0) break;
    data.append(buf.data(), static_cast<size_t>(n));
  }
  return data;
}

Layout LayoutOf(const std::string& state_dir, const std::string& store_dir) {
  return {Join(state_dir, "jobs"), Join(state_dir, "events"), Join(store_dir, kScratchRoot)};
}

}  // namespace libreyolo::daemon::job_store_internal
