// A read-only view of a zip archive held in memory, enough for what `torch.save` writes:
// STORED entries (torch's default), DEFLATE (archives re-zipped by other tools) and zip64.
#ifndef LIBREYOLO_SERVER_ENGINE_CHECKPOINT_ZIP_ARCHIVE_H_
#define LIBREYOLO_SERVER_ENGINE_CHECKPOINT_ZIP_ARCHIVE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace libreyolo::engine {

struct ZipEntry {
  std::string name;
  uint16_t method = 0;  // 0 stored, 8 deflate
  uint32_t crc32 = 0;
  uint64_t compressed_size = 0;
  uint64_t uncompressed_size = 0;
  uint64_t local_header_offset = 0;
};

// The archive borrows `bytes`, which must outlive it. Open() reads only the central directory;
// each entry is bounds-checked, decompressed and CRC-checked when Read() asks for it.
class ZipArchive {
 public:
  // INVALID_ARGUMENT naming `what` when `bytes` is not a zip or its directory is truncated.
  static absl::StatusOr<ZipArchive> Open(absl::string_view bytes, std::string what);

  const std::vector<ZipEntry>& entries() const { return entries_; }
  const ZipEntry* Find(absl::string_view name) const;
  // The entry's uncompressed contents; INVALID_ARGUMENT when it is truncated, corrupt, uses a
  // compression method other than stored/deflate, or when all DEFLATE output read so far would
  // exceed max(256 MiB, 16x the archive): weights barely compress, so more is a zip bomb.
  absl::StatusOr<std::string> Read(const ZipEntry& entry) const;

 private:
  ZipArchive(absl::string_view bytes, std::string what) : bytes_(bytes), what_(std::move(what)) {}
  absl::Status ReadCentralDirectory();

  absl::string_view bytes_;
  std::string what_;
  std::vector<ZipEntry> entries_;
  absl::flat_hash_map<std::string, size_t> by_name_;  // first entry of each name wins
  mutable uint64_t inflated_ = 0;  // DEFLATE output so far, against the zip-bomb budget
};

// Builds a zip of STORED entries (no zip64) with correct CRCs: for tests and the fuzzer, which
// need archives around hand-written pickles.
std::string WriteStoredZip(const std::vector<std::pair<std::string, std::string>>& entries);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_CHECKPOINT_ZIP_ARCHIVE_H_
