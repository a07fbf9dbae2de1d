#include "common/io/file_reader.h"

#include <sys/stat.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/status/status_macros.h"

namespace libreyolo {
namespace {

// The gzip trailer's ISIZE: the uncompressed length modulo 2^32, little-endian.
size_t GzipTrailerSize(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return 0;
  unsigned char b[4] = {0, 0, 0, 0};
  size_t n = 0;
  if (std::fseek(f, -4, SEEK_END) == 0) n = std::fread(b, 1, 4, f);
  std::fclose(f);
  if (n != 4) return 0;
  return size_t{b[0]} | size_t{b[1]} << 8 | size_t{b[2]} << 16 | size_t{b[3]} << 24;
}

bool LooksGzip(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  unsigned char magic[2] = {0, 0};
  const size_t n = std::fread(magic, 1, 2, f);
  std::fclose(f);
  return n == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
}

}  // namespace

std::optional<std::string> NonRegularFileKind(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return std::nullopt;  // open says
  if (S_ISDIR(st.st_mode)) return "a directory";
  if (S_ISCHR(st.st_mode)) return "a character device";
  if (S_ISBLK(st.st_mode)) return "a block device";
  if (S_ISFIFO(st.st_mode)) return "a FIFO (a pipe)";
  if (S_ISSOCK(st.st_mode)) return "a socket";
  return "not a regular file";
}

namespace {

// A file is opened several times (the gzip probe, its trailer, the read), and the readers may
// open it again after peeking: only a regular file reads the same each time. Refused at once.
absl::Status CheckRegularFile(const std::string& path) {
  const std::optional<std::string> kind = NonRegularFileKind(path);
  if (!kind) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(path, " is ", *kind, ": give a file (a profile.json or a Chrome trace, plain or "
                   "gzip); save a stream to a file first"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<ChunkedFileReader>> ChunkedFileReader::Open(
    const std::string& path) {
  RETURN_IF_ERROR(CheckRegularFile(path));
  std::FILE* probe = std::fopen(path.c_str(), "rb");
  if (probe == nullptr) {
    const int err = errno;
    if (err == ENOENT) return absl::NotFoundError(absl::StrCat("no such file: ", path));
    return absl::PermissionDeniedError(
        absl::StrCat("cannot open ", path, ": ", std::strerror(err)));
  }
  std::fclose(probe);
  std::unique_ptr<ChunkedFileReader> reader(new ChunkedFileReader());
  reader->path_ = path;
  reader->compressed_ = LooksGzip(path);
  std::error_code ec;
  const auto file_size = std::filesystem::file_size(path, ec);
  reader->size_hint_ = reader->compressed_ ? GzipTrailerSize(path)
                                           : (ec ? 0 : static_cast<size_t>(file_size));
  gzFile gz = gzopen(path.c_str(), "rb");
  if (gz == nullptr) return absl::InternalError(absl::StrCat("cannot open ", path));
  gzbuffer(gz, 1 << 18);
  reader->gz_ = gz;
  return reader;
}

ChunkedFileReader::~ChunkedFileReader() {
  if (gz_ != nullptr) gzclose(static_cast<gzFile>(gz_));
}

absl::StatusOr<size_t> ChunkedFileReader::Read(char* out, size_t capacity) {
  auto gz = static_cast<gzFile>(gz_);
  const unsigned want = static_cast<unsigned>(capacity > (1u << 30) ? (1u << 30) : capacity);
  const int n = gzread(gz, out, want);
  int errnum = Z_OK;
  const char* msg = gzerror(gz, &errnum);
  if (n < 0 || (errnum != Z_OK && errnum != Z_STREAM_END)) {
    return absl::DataLossError(absl::StrCat(
        path_, ": ", compressed_ ? "corrupt or truncated gzip data" : "read error", " (",
        msg != nullptr ? msg : "unknown", "); re-copy or re-export the file"));
  }
  return static_cast<size_t>(n);
}

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  ASSIGN_OR_RETURN(auto reader, ChunkedFileReader::Open(path));
  std::string data;
  std::vector<char> buf(1 << 16);
  while (true) {
    ASSIGN_OR_RETURN(auto n, reader->Read(buf.data(), buf.size()));
    if (n == 0) break;
    data.append(buf.data(), n);
  }
  return data;
}

}  // namespace libreyolo
