// Publishing a file atomically: write a temp file beside it, fsync, rename, fsync the directory.
// A reader (or a crash) sees the old file or the complete new one, never a partial one.
//
// Temp files are "<dir>/.tmp.<name>.<unique>": hidden, never ending in the final name's suffix
// (node_exporter reads only *.prom, our readers only *.json), and recognisable by the prefix
// kAtomicTempPrefix so that recovery can remove what a crash left.
//
// Errors name the path and the system's reason: PERMISSION_DENIED (EACCES, EPERM, EROFS),
// NOT_FOUND (a missing directory), RESOURCE_EXHAUSTED (disk full, quota, file size limit),
// UNAVAILABLE (other I/O errors). The temp file is removed on failure and the previous file, if
// any, is left as it was.
#ifndef LIBREYOLO_COMMON_IO_ATOMIC_FILE_H_
#define LIBREYOLO_COMMON_IO_ATOMIC_FILE_H_

#include <sys/types.h>

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace libreyolo {

inline constexpr absl::string_view kAtomicTempPrefix = ".tmp.";

// Writes `content` as `path` with permissions `mode` (not masked by the umask).
absl::Status WriteFileAtomically(const std::string& path, absl::string_view content,
                                 mode_t mode = 0644);

// For a writer that fills the file itself (a trace exporter, a download): a temp path beside
// `path`, unique in this process and across processes (pid and a counter); nothing is created.
std::string TempPathBeside(const std::string& path);

// Publishes a complete temp file (written by the caller) as `path`: fsync, rename, fsync the
// directory. On failure `tmp` is removed.
absl::Status PublishTempFile(const std::string& tmp, const std::string& path);

// write(2) until all of `data` is written (EINTR retried); errors name `path`.
absl::Status WriteAllToFd(int fd, absl::string_view data, absl::string_view path);

// fsync(2) on a directory, so that a rename or unlink in it is durable.
absl::Status FsyncDirectory(const std::string& dir);

// The status for a failed system call: `errno_value` mapped as above, the message
// "<what> <path>: <strerror>".
absl::Status FileError(int errno_value, absl::string_view what, absl::string_view path);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_IO_ATOMIC_FILE_H_
