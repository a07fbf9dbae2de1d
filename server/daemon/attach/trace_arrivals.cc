// TraceArrivals (attach_job.h): a drop folder's finished files, told by inotify. Kineto writes
// `<name>.tmp` and renames it to `<name>` (IN_MOVED_TO); a writer that writes the final name at
// once ends with IN_CLOSE_WRITE. The folder is never listed or polled.
#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "server/daemon/attach/attach_job.h"

namespace libreyolo::daemon::attach {

absl::StatusOr<std::unique_ptr<TraceArrivals>> TraceArrivals::Watch(const std::string& dir) {
  const int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("inotify_init1: ", std::strerror(errno)));
  }
  // IN_DONT_FOLLOW: the folder itself is never a symlink's target; IN_ONLYDIR: it is a folder.
  const int wd = ::inotify_add_watch(fd, dir.c_str(),
                                     IN_MOVED_TO | IN_CLOSE_WRITE | IN_DONT_FOLLOW | IN_ONLYDIR);
  if (wd < 0) {
    const int err = errno;
    ::close(fd);
    return absl::InternalError(
        absl::StrCat("cannot watch the drop folder ", dir, ": ", std::strerror(err)));
  }
  return std::unique_ptr<TraceArrivals>(new TraceArrivals(fd, wd));
}

TraceArrivals::~TraceArrivals() {
  if (fd_ >= 0) ::close(fd_);
}

void TraceArrivals::Drain(int timeout_ms) {
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) <= 0) return;
  alignas(inotify_event) std::array<char, 16384> buf;
  while (true) {
    const ssize_t n = ::read(fd_, buf.data(), buf.size());
    if (n <= 0) return;  // EAGAIN: drained
    for (ssize_t off = 0; off + static_cast<ssize_t>(sizeof(inotify_event)) <= n;) {
      const auto* e = reinterpret_cast<const inotify_event*>(buf.data() + off);
      off += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
      if (e->len == 0 || (e->mask & IN_ISDIR) != 0) continue;
      const std::string name(e->name, strnlen(e->name, e->len));
      if (std::find(arrived_.begin(), arrived_.end(), name) == arrived_.end()) {
        arrived_.push_back(name);
      }
    }
  }
}

std::vector<std::string> TraceArrivals::WaitFor(const std::vector<std::string>& expected,
                                                std::chrono::steady_clock::time_point deadline,
                                                const std::function<bool()>& stop,
                                                std::chrono::milliseconds tick) {
  auto found = [&] {
    std::vector<std::string> out;
    for (const std::string& name : expected) {
      if (std::find(arrived_.begin(), arrived_.end(), name) != arrived_.end()) out.push_back(name);
    }
    return out;
  };
  while (true) {
    std::vector<std::string> have = found();
    if (have.size() == expected.size() || (stop && stop())) return have;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return have;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    Drain(static_cast<int>(std::max<int64_t>(1, std::min(left, tick).count())));
  }
}

}  // namespace libreyolo::daemon::attach
