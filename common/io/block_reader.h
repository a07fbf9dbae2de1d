// The bytes of a plain or gzip file, in blocks: plain files by read(2), gzip files inflated by
// ISA-L's igzip (2-4x zlib's speed). For the trace reader, which calls it from a thread of its own
// so that inflation overlaps with parsing.
#ifndef LIBREYOLO_COMMON_IO_BLOCK_READER_H_
#define LIBREYOLO_COMMON_IO_BLOCK_READER_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace libreyolo {

class BlockReader {
 public:
  // Errors as ChunkedFileReader::Open: NOT_FOUND for a missing file, PERMISSION_DENIED.
  static absl::StatusOr<std::unique_ptr<BlockReader>> Open(const std::string& path);
  virtual ~BlockReader() = default;
  // Fills `out` with up to `capacity` bytes; 0 at the end of the data. DATA_LOSS for a corrupt
  // or truncated gzip stream (the message says "corrupt or truncated gzip data", as zlib's path).
  virtual absl::StatusOr<size_t> Read(char* out, size_t capacity) = 0;
  // The file size, or for gzip the size its trailer records (modulo 4 GiB): a hint.
  size_t UncompressedSizeHint() const { return size_hint_; }
  bool compressed() const { return compressed_; }

 protected:
  BlockReader() = default;
  size_t size_hint_ = 0;
  bool compressed_ = false;
};

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_IO_BLOCK_READER_H_
