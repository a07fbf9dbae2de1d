// A directory of leases on a shared process (the private libreyolod that the `libreyolo`
// commands of one user share): each user of the process holds one file there, `*.lease`,
// under an exclusive flock(2) for as long as it needs the process. The kernel drops the lock
// when its holder dies (SIGKILL included), so the lease of a dead process counts for nothing
// and is removed by the next count: no lease outlives its owner.
//
// Taking a lease, and every decision that depends on the count (stop the process, start one),
// happen under the directory's control lock (an exclusive flock on `<dir>/.lock`): a lease
// cannot appear between a count and what is done about it, and a lease file is never seen
// unlocked between its creation and its flock.
#ifndef LIBREYOLO_COMMON_IO_LEASE_DIR_H_
#define LIBREYOLO_COMMON_IO_LEASE_DIR_H_

#include <chrono>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "common/io/unique_fd.h"

namespace libreyolo {

// The control lock of a lease directory, held while the object lives.
class LeaseDirLock {
 public:
  // Creates `dir` (0700) when missing and takes its control lock, waiting up to `timeout`.
  // DEADLINE_EXCEEDED when another process keeps it longer; PERMISSION_DENIED when the
  // directory or the lock file cannot be made.
  static absl::StatusOr<LeaseDirLock> Acquire(const std::string& dir,
                                              std::chrono::milliseconds timeout);
  // The lock if nobody holds it right now, else nullopt (also when it cannot be opened).
  static std::optional<LeaseDirLock> TryAcquire(const std::string& dir);

  LeaseDirLock(LeaseDirLock&&) = default;
  LeaseDirLock& operator=(LeaseDirLock&&) = default;
  // Gives the descriptor up without unlocking: the lock then lasts until the process exits
  // (a daemon that decided to stop keeps it while it stops).
  void HoldUntilExit() { (void)fd_.Release(); }

 private:
  explicit LeaseDirLock(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
};

// One lease: `<dir>/<pid>-<n>.lease`, locked while the object lives; Release (or the
// destructor, or the death of the process) ends it.
class Lease {
 public:
  // Creates and locks a new lease in `dir`; the file names the holder (`what`, and its pid).
  // Take it with the directory's control lock held.
  static absl::StatusOr<Lease> Take(const std::string& dir, const std::string& what);

  Lease() = default;
  Lease(Lease&&) = default;
  Lease& operator=(Lease&&) = default;
  ~Lease() { Release(); }

  // Removes the file and unlocks it. Idempotent.
  void Release();
  bool held() const { return fd_.valid(); }
  const std::string& path() const { return path_; }

 private:
  Lease(std::string path, UniqueFd fd) : path_(std::move(path)), fd_(std::move(fd)) {}
  std::string path_;
  UniqueFd fd_;
};

// The leases in `dir` whose holder is alive (their flock is held by another open file: a lease
// this process holds counts too). The others are removed. Call it with the control lock held.
// 0 for a directory that does not exist.
int CountLiveLeases(const std::string& dir);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_IO_LEASE_DIR_H_
