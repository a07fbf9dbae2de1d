#include "common/io/lease_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status/status_macros.h"

namespace libreyolo {
namespace {

namespace fs = std::filesystem;

constexpr char kControlFile[] = ".lock";
constexpr char kLeaseSuffix[] = ".lease";

absl::StatusOr<UniqueFd> OpenControl(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    return absl::PermissionDeniedError(absl::StrCat("cannot create ", dir, ": ", ec.message()));
  }
  ::chmod(dir.c_str(), 0700);
  const std::string path = (fs::path(dir) / kControlFile).string();
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd.valid()) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  }
  return fd;
}

}  // namespace

absl::StatusOr<LeaseDirLock> LeaseDirLock::Acquire(const std::string& dir,
                                                   std::chrono::milliseconds timeout) {
  ASSIGN_OR_RETURN(auto fd, OpenControl(dir));
  // Polled rather than a blocking flock, so the wait is bounded.
  const auto until = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) return LeaseDirLock(std::move(fd));
    if (errno != EWOULDBLOCK && errno != EINTR) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot lock ", dir, "/", kControlFile, ": ", std::strerror(errno)));
    }
    if (std::chrono::steady_clock::now() >= until) {
      return absl::DeadlineExceededError(
          absl::StrCat(dir, "/", kControlFile, " stayed locked for ", timeout.count() / 1000,
                       " s (a libreyolo command or libreyolod holds it)"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::optional<LeaseDirLock> LeaseDirLock::TryAcquire(const std::string& dir) {
  auto fd = OpenControl(dir);
  if (!fd.ok() || ::flock(fd->get(), LOCK_EX | LOCK_NB) != 0) return std::nullopt;
  return LeaseDirLock(*std::move(fd));
}

absl::StatusOr<Lease> Lease::Take(const std::string& dir, const std::string& what) {
  static std::atomic<int> serial{0};
  const std::string path =
      (fs::path(dir) / absl::StrCat(::getpid(), "-", serial.fetch_add(1), kLeaseSuffix)).string();
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!fd.valid()) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot create the lease ", path, ": ", std::strerror(errno)));
  }
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    ::unlink(path.c_str());
    return absl::InternalError(absl::StrCat("cannot lock the lease ", path, ": ",
                                            std::strerror(error)));
  }
  const std::string text = absl::StrCat(::getpid(), " ", what, "\n");
  (void)!::write(fd.get(), text.data(), text.size());  // for people reading the directory
  return Lease(path, std::move(fd));
}

void Lease::Release() {
  if (!fd_.valid()) return;
  ::unlink(path_.c_str());  // before the unlock: a counter never finds it unlocked
  fd_.Reset();
}

int CountLiveLeases(const std::string& dir) {
  int live = 0;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    const std::string path = it->path().string();
    if (!absl::EndsWith(path, kLeaseSuffix)) continue;
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd.valid()) continue;  // removed meanwhile
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) {
      ::unlink(path.c_str());  // its holder is gone
    } else {
      ++live;
    }
  }
  return live;
}

}  // namespace libreyolo
