#include "common/io/block_reader.h"

#include <fcntl.h>
#include <isa-l/igzip_lib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/io/file_reader.h"
#include "common/io/unique_fd.h"
#include "common/status/status_macros.h"

namespace libreyolo {
namespace {

absl::Status ReadError(const std::string& path) {
  return absl::DataLossError(absl::StrCat(path, ": read error (", std::strerror(errno),
                                          "); re-copy or re-export the file"));
}

class PlainReader : public BlockReader {
 public:
  PlainReader(std::string path, int fd, size_t size) : path_(std::move(path)), fd_(fd) {
    size_hint_ = size;
  }
  absl::StatusOr<size_t> Read(char* out, size_t capacity) override {
    size_t got = 0;
    while (got < capacity) {
      const ssize_t n = fd_.Read(out + got, capacity - got);
      if (n < 0) return ReadError(path_);
      if (n == 0) break;
      got += static_cast<size_t>(n);
    }
    return got;
  }

 private:
  std::string path_;
  UniqueFd fd_;
};

// igzip over the file's gzip members in turn, like zlib's gzread: after a member, input that does
// not start another member (the 1f 8b magic) is ignored.
class GzipReader : public BlockReader {
 public:
  GzipReader(std::string path, int fd, size_t size_hint)
      : path_(std::move(path)), fd_(fd), in_(1 << 20) {
    size_hint_ = size_hint;
    compressed_ = true;
    isal_inflate_init(&state_);
    state_.crc_flag = ISAL_GZIP;
  }

  absl::StatusOr<size_t> Read(char* out, size_t capacity) override {
    const size_t limit = capacity > (1u << 30) ? (1u << 30) : capacity;
    state_.next_out = reinterpret_cast<uint8_t*>(out);
    state_.avail_out = static_cast<uint32_t>(limit);
    while (state_.avail_out > 0 && !done_) {
      if (state_.block_state == ISAL_BLOCK_FINISH) {
        if (!NextMember()) {
          done_ = true;
          break;
        }
        continue;
      }
      if (state_.avail_in == 0 && !eof_) {
        RETURN_IF_ERROR(Fill());
      }
      const uint32_t before_out = state_.avail_out;
      const uint32_t before_in = state_.avail_in;
      const int ret = isal_inflate(&state_);
      if (ret < 0) return Corrupt();
      const bool progress = state_.avail_out != before_out || state_.avail_in != before_in;
      if (!progress && eof_ && state_.avail_in == 0 &&
          state_.block_state != ISAL_BLOCK_FINISH) {
        return Corrupt();  // the input ended inside a member: truncated
      }
    }
    return limit - state_.avail_out;
  }

 private:
  absl::Status Fill() {
    const ssize_t n = fd_.Read(reinterpret_cast<char*>(in_.data()), in_.size());
    if (n < 0) return ReadError(path_);
    if (n == 0) eof_ = true;
    state_.next_in = in_.data();
    state_.avail_in = static_cast<uint32_t>(n);
    return absl::OkStatus();
  }

  // After a finished member: true when another one follows (and the state is reset for it).
  bool NextMember() {
    if (state_.avail_in < 2 && !eof_) {  // the magic may straddle a read
      const uint32_t k = state_.avail_in;
      if (k == 1) in_[0] = state_.next_in[0];
      const ssize_t n = fd_.Read(reinterpret_cast<char*>(in_.data()) + k, in_.size() - k);
      if (n <= 0) eof_ = true;
      state_.next_in = in_.data();
      state_.avail_in = k + static_cast<uint32_t>(n > 0 ? n : 0);
    }
    if (state_.avail_in < 2 || state_.next_in[0] != 0x1f || state_.next_in[1] != 0x8b) {
      return false;
    }
    uint8_t* next = state_.next_in;
    const uint32_t avail = state_.avail_in;
    isal_inflate_reset(&state_);
    state_.crc_flag = ISAL_GZIP;
    state_.next_in = next;
    state_.avail_in = avail;
    return true;
  }

  absl::Status Corrupt() const {
    return absl::DataLossError(absl::StrCat(
        path_, ": corrupt or truncated gzip data (igzip); re-copy or re-export the file"));
  }

  std::string path_;
  UniqueFd fd_;
  std::vector<uint8_t> in_;
  inflate_state state_{};
  bool eof_ = false;
  bool done_ = false;
};

}  // namespace

absl::StatusOr<std::unique_ptr<BlockReader>> BlockReader::Open(const std::string& path) {
  // The checks (and their errors) and the size hint are ChunkedFileReader's.
  ASSIGN_OR_RETURN(auto probe, ChunkedFileReader::Open(path));
  const bool compressed = probe->compressed();
  const size_t hint = probe->UncompressedSizeHint();
  probe.reset();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  }
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  if (compressed) return std::unique_ptr<BlockReader>(new GzipReader(path, fd, hint));
  return std::unique_ptr<BlockReader>(new PlainReader(path, fd, hint));
}

}  // namespace libreyolo
