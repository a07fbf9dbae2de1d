// An owned POSIX file descriptor: closed when it goes out of scope, movable, not copyable.
#ifndef LIBREYOLO_COMMON_IO_UNIQUE_FD_H_
#define LIBREYOLO_COMMON_IO_UNIQUE_FD_H_

#include <unistd.h>

#include <cerrno>
#include <utility>

namespace libreyolo {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { Reset(); }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.Release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) Reset(other.Release());
    return *this;
  }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }

  // Gives the descriptor up without closing it.
  int Release() { return std::exchange(fd_, -1); }
  // Closes the descriptor held (if any) and takes `fd`; errors of that close are ignored.
  void Reset(int fd = -1) {
    const int old = std::exchange(fd_, fd);
    if (old >= 0) ::close(old);
  }
  // Closes the descriptor and reports the close: 0, or the errno (EIO, ENOSPC on NFS...) that a
  // writer must not ignore. Closing an invalid descriptor is EBADF.
  int Close() {
    const int fd = std::exchange(fd_, -1);
    if (fd < 0) return EBADF;
    return ::close(fd) == 0 ? 0 : errno;
  }
  // Reads up to n bytes, retrying on EINTR; -1 (errno set) on error, 0 at the end.
  ssize_t Read(void* out, size_t n) const {
    for (;;) {
      const ssize_t got = ::read(fd_, out, n);
      if (got >= 0 || errno != EINTR) return got;
    }
  }

 private:
  int fd_ = -1;
};

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_IO_UNIQUE_FD_H_
