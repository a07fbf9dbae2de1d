// Publishing a file atomically: write a temp file beside it, fsync, rename, fsync the directory.
// A reader (or a crash) sees the old file or the complete new one, never a partial one.
//
// Temp files are "<dir>/.tmp.<name>.<unique>": hidden, never ending in the final name's suffix
// (node_exporter reads only *.prom, our readers only *.json), and recognisable by the prefix
// kAtomicTempPrefix so that recovery can remove what a crash left.
//
// Errors name the path and the system's reason: PERMISSION_DENIED (EACCES, EPERM, EROFS),
// NOT_FOUND (a missing directory), ALREADY_EXISTS (EEXIST), RESOURCE_EXHAUSTED (disk full, quota, file size limit),
// UNAVAILABLE (other I/O errors). The temp file is removed on failure and the previous file, if
// any, is left as it was.
#ifndef LIBREYOLO_COMMON_IO_ATOMIC_FILE_H_
#define LIBREYOLO_COMMON_IO_ATOMIC_FILE_H_

#include <sys/types.h>

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace libreyolo {

inline constexpr absl::string_view kAtomicTempPrefix = ".tmp.";

// The system calls that make a file durable, as a seam: a test passes its own (tests/daemon/
// faulty_file_ops.h) to fail any write, fsync or rename at any byte, as a full disk would. They
// return what the system call returns and set errno alike.
class FileOps {
 public:
  virtual ~FileOps() = default;
  virtual ssize_t Write(int fd, const void* data, size_t size);
  virtual int Fsync(int fd);     // a file
  virtual int FsyncDir(int fd);  // a directory, after a rename, link or unlink in it
  virtual int Rename(const char* from, const char* to);
  // Renames unless `to` exists (EEXIST then): renameat2(RENAME_NOREPLACE), or link + unlink
  // where the file system lacks it.
  virtual int RenameNoReplace(const char* from, const char* to);
  virtual int Ftruncate(int fd, off_t size);
};

// The real system calls.
FileOps& SystemFileOps();

// Writes `content` as `path` with permissions `mode` (not masked by the umask).
absl::Status WriteFileAtomically(const std::string& path, absl::string_view content,
                                 mode_t mode = 0644, FileOps& ops = SystemFileOps());

// Writes an output a user named (`report -o FILE`): a new path or an existing regular file is
// written atomically (WriteFileAtomically); an existing symbolic link, device, FIFO or socket
// (/dev/null, /dev/stdout, a named pipe, a link to a report) is opened and written through, as a
// shell redirection writes it, and is never replaced (a rename over /dev/null run as root would
// put a regular file in its place). A directory is INVALID_ARGUMENT. The device's own errors are
// returned (ENOSPC from /dev/full: RESOURCE_EXHAUSTED).
absl::Status WriteNamedOutput(const std::string& path, absl::string_view content,
                              mode_t mode = 0644);

// Whether WriteNamedOutput writes `path` through (it exists and is not a regular file or a
// directory), so that no file is created beside it.
bool WritesThrough(const std::string& path);

// Like WriteFileAtomically, for a file written once: ALREADY_EXISTS (and nothing changed) when
// `path` exists.
absl::Status WriteFileOnce(const std::string& path, absl::string_view content, mode_t mode,
                           FileOps& ops = SystemFileOps());

// For a writer that fills the file itself (a trace exporter, a download): a temp path beside
// `path`, unique in this process and across processes (pid and a counter); nothing is created.
std::string TempPathBeside(const std::string& path);

// Publishes a complete temp file (written by the caller) as `path`: fsync, rename, fsync the
// directory. On failure `tmp` is removed.
absl::Status PublishTempFile(const std::string& tmp, const std::string& path,
                             FileOps& ops = SystemFileOps());

// write(2) until all of `data` is written (EINTR retried); errors name `path`.
absl::Status WriteAllToFd(int fd, absl::string_view data, absl::string_view path,
                          FileOps& ops = SystemFileOps());

// fsync(2) on a directory, so that a rename or unlink in it is durable.
absl::Status FsyncDirectory(const std::string& dir, FileOps& ops = SystemFileOps());

// The status for a failed system call: `errno_value` mapped as above, the message
// "<what> <path>: <strerror>".
absl::Status FileError(int errno_value, absl::string_view what, absl::string_view path);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_IO_ATOMIC_FILE_H_
