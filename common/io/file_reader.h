// Chunked reading of a file that may be gzip-compressed, detected by content, not by name.
#ifndef LIBREYOLO_COMMON_IO_FILE_READER_H_
#define LIBREYOLO_COMMON_IO_FILE_READER_H_

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace libreyolo {

// What `path` is when it exists and is not a regular file ("a directory", "a character device",
// "a FIFO (a pipe)", "a socket", ...); nullopt for a regular file or a path stat cannot see (the
// open that follows says why). A reader of a FIFO blocks until a writer comes and one of
// /dev/zero never ends: callers that take a path from a user check it first.
std::optional<std::string> NonRegularFileKind(const std::string& path);

// Reads a plain or gzip file in fixed-size chunks (so a 1 GB trace never sits in memory whole).
// Errors: NOT_FOUND for a missing file, DATA_LOSS for a truncated or corrupt gzip stream.
class ChunkedFileReader {
 public:
  static absl::StatusOr<std::unique_ptr<ChunkedFileReader>> Open(const std::string& path);
  ~ChunkedFileReader();
  ChunkedFileReader(const ChunkedFileReader&) = delete;
  ChunkedFileReader& operator=(const ChunkedFileReader&) = delete;

  // Fills `out` with up to `capacity` bytes; returns the count, 0 at the end of the data.
  absl::StatusOr<size_t> Read(char* out, size_t capacity);
  bool compressed() const { return compressed_; }
  // The size of the data Read() will return: the file size, or for gzip the size its trailer
  // records (modulo 4 GiB, so only a hint).
  size_t UncompressedSizeHint() const { return size_hint_; }
  const std::string& path() const { return path_; }

 private:
  ChunkedFileReader() = default;
  void* gz_ = nullptr;  // gzFile; kept opaque so zlib.h stays out of this header
  std::string path_;
  bool compressed_ = false;
  size_t size_hint_ = 0;
};

// Reads the whole (decompressed) file into a string: for small files such as profile.json.
absl::StatusOr<std::string> ReadWholeFile(const std::string& path);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_IO_FILE_READER_H_
