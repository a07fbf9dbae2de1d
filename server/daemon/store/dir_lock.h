// One daemon per state and store directory: an exclusive flock(2) on a lock file inside the
// directory, held for the daemon's life. The kernel drops it when the process dies (kill -9
// included), so a stale lock never needs cleaning up. The holder's pid is written into the file
// so that a second daemon can name it.
#ifndef LIBREYOLO_SERVER_DAEMON_STORE_DIR_LOCK_H_
#define LIBREYOLO_SERVER_DAEMON_STORE_DIR_LOCK_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace libreyolo::daemon {

class DirLock {
 public:
  // Locks `dir`/libreyolod.lock (created when missing; `dir` must exist). ALREADY_EXISTS
  // naming the holder's pid when another process holds it; FAILED_PRECONDITION naming the
  // file when it cannot be opened or locked.
  // `what` names the directory in messages ("state_dir").
  static absl::StatusOr<std::unique_ptr<DirLock>> Acquire(const std::string& dir,
                                                          const std::string& what);
  ~DirLock();
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

  const std::string& path() const { return path_; }

 private:
  DirLock(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_;
};

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_STORE_DIR_LOCK_H_
