// The files the daemon reads at start-up and on SIGHUP (its config file, its tokens file, the
// TLS files it checks), opened without blocking (issue 40 A.7): a FIFO, a device or a socket
// in a file's place is refused at once, naming what is there, instead of hanging start-up or a
// reload (and with it SIGTERM's drain). One reader for config/ and security/.
#ifndef LIBREYOLO_SERVER_DAEMON_SECURITY_REGULAR_FILE_H_
#define LIBREYOLO_SERVER_DAEMON_SECURITY_REGULAR_FILE_H_

#include <sys/stat.h>

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace libreyolo::daemon {

// Empty when `path` is a regular file we can open, else why not ("not a regular file (a FIFO):
// point it at a regular file", or the open's error).
std::string RegularFileProblem(const std::string& path);

// Checked on the opened file before it is read (the tokens file's mode); an error is returned
// as it is.
using RegularFileCheck = std::function<absl::Status(const struct stat& info)>;

// The contents of the regular file `path`. NOT_FOUND when there is none; FAILED_PRECONDITION
// starting "<what> <path>" ("config file", "tokens file") when it cannot be opened or read, or
// is not a regular file (saying what is there, and the way out `fix`); `check`'s error.
absl::StatusOr<std::string> ReadRegularFile(const std::string& path, absl::string_view what,
                                            absl::string_view fix = "point it at a regular file",
                                            const RegularFileCheck& check = nullptr);

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_SECURITY_REGULAR_FILE_H_
