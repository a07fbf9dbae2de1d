// Publishing a file atomically: write a temp file beside it, fsync, rename. A reader (or a
// crash) sees the old file or the complete new one, never a partial one.
#ifndef LIBREYOLO_COMMON_IO_ATOMIC_FILE_H_
#define LIBREYOLO_COMMON_IO_ATOMIC_FILE_H_

#include <string>

#include "absl/status/status.h"

namespace libreyolo {

// PERMISSION_DENIED / NOT_FOUND (missing directory) / UNAVAILABLE (disk full, other I/O
// errors), each naming the path and the system's reason. The temp file is removed on failure.
absl::Status WriteFileAtomically(const std::string& path, const std::string& content);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_IO_ATOMIC_FILE_H_
