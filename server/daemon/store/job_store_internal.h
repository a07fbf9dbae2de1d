// The job store's own helpers, shared by its files (job_store.cc: records, event logs,
// recovery, retention; job_store_artifacts.cc: scratch and artifact directories; the helpers'
// definitions in job_store_fs.cc). Not an interface: include it from those files only.
#ifndef LIBREYOLO_SERVER_DAEMON_STORE_JOB_STORE_INTERNAL_H_
#define LIBREYOLO_SERVER_DAEMON_STORE_JOB_STORE_INTERNAL_H_

#include <sys/types.h>

#include <cstddef>
#include <exception>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/io/atomic_file.h"
#include "common/io/unique_fd.h"
#include "common/job/names.h"

namespace libreyolo::daemon::job_store_internal {

inline constexpr absl::string_view kTmpPrefix = kAtomicTempPrefix;  // temp files, any store dir
inline constexpr absl::string_view kScratchRoot = ".tmp";  // <store_dir>/.tmp/<id>/

// Runs `f`, turning any exception (bad_alloc) into INTERNAL naming `what`.
template <typename F>
auto Guarded(absl::string_view what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("job store: ", what, ": ", e.what()));
  } catch (...) {
    return absl::InternalError(absl::StrCat("job store: ", what, ": unknown exception"));
  }
}

// "<what> <path>: <strerror>", coded by absl::ErrnoToStatus.
absl::Status OsError(int err, absl::string_view what, absl::string_view path);

// A quoted, escaped and shortened rendering of an untrusted string for error messages.
std::string Quote(absl::string_view s);

// Job ids (common/job/names.h); CheckJobId says so as INVALID_ARGUMENT, in the one message
// (NotAJobIdMessage).
inline bool ValidJobId(absl::string_view id) { return IsJobId(id); }

absl::Status CheckJobId(absl::string_view id);

// Plain file names (common/job/names.h), the rule the client checks too.
inline bool ValidArtifactName(absl::string_view name) { return IsPlainArtifactName(name); }

std::string Join(absl::string_view dir, absl::string_view name);

std::string Parent(const std::string& path);

std::string StripTrailingSlashes(std::string path);

// Closes `fd` and reports a failed close (a writer must not ignore one).
absl::Status CloseFd(UniqueFd& fd, absl::string_view path);

absl::Status FsyncFd(int fd, absl::string_view path, FileOps& ops = SystemFileOps());

// mkdir -p; the last component gets `mode`, missing parents 0755 (both less the umask). A
// symlink to a directory is accepted as an existing directory.
absl::Status MakeDirs(const std::string& path, mode_t mode);

// Creates `path` (one level) with `mode` unless it exists; refuses anything but a real
// directory there (a symlink could point outside the store).
absl::Status MakeRealDir(const std::string& path, mode_t mode);

absl::StatusOr<std::vector<std::string>> ListDir(const std::string& dir);

// The whole file (O_NOFOLLOW).
absl::StatusOr<std::string> ReadFile(const std::string& path);

struct Layout {
  std::string jobs, events, scratch_root;
};

Layout LayoutOf(const std::string& state_dir, const std::string& store_dir);

}  // namespace libreyolo::daemon::job_store_internal

#endif  // LIBREYOLO_SERVER_DAEMON_STORE_JOB_STORE_INTERNAL_H_
