// SHA-256 of a file's bytes, as lowercase hex: the checksum of stored artifacts and of their
// downloads (both ends compute it here, so they agree by construction).
#ifndef LIBREYOLO_COMMON_IO_SHA256_H_
#define LIBREYOLO_COMMON_IO_SHA256_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace libreyolo {

// Streams the file. Errors name the path and the system's reason (common/io/atomic_file.h's
// mapping: NOT_FOUND for a missing file, PERMISSION_DENIED, UNAVAILABLE for a read error).
absl::StatusOr<std::string> Sha256File(const std::string& path);

// Of an open descriptor, from its offset to the end; `path` is for messages. `size`, when
// given, receives the number of bytes hashed.
absl::StatusOr<std::string> Sha256Fd(int fd, absl::string_view path, int64_t* size = nullptr);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_IO_SHA256_H_
