// A FileOps (common/io/atomic_file.h) for tests that makes the store's writes fail the way a
// full or failing disk does: after a byte budget (the write that crosses it is cut short, the
// next fails ENOSPC), or at the n-th fsync, directory fsync or rename (EIO / ENOSPC). It also
// counts what it saw, so a test can first run a scenario cleanly and then fail it at every
// edge. Fsyncs that are not failed do nothing (the tests check ordering, not the disk).
#ifndef LIBREYOLO_TESTS_DAEMON_FAULTY_FILE_OPS_H_
#define LIBREYOLO_TESTS_DAEMON_FAULTY_FILE_OPS_H_

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "common/io/atomic_file.h"

namespace libreyolo::daemon {

class FaultyFileOps : public FileOps {
 public:
  enum class Call { kWrite, kFsync, kFsyncDir, kRename };

  // Every write past `bytes` bytes (counted from now, over all files) fails: the write that
  // crosses the budget writes what fits and returns short; the next fails ENOSPC. -1: none.
  void FailAfterBytes(int64_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    byte_budget_ = bytes;
  }
  // The n-th call (0-based, counted from the start) of `call` fails, and every later one.
  void FailFrom(Call call, int n) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_call_ = call;
    fail_from_ = n;
  }
  void Heal() {
    std::lock_guard<std::mutex> lock(mu_);
    byte_budget_ = -1;
    fail_from_ = -1;
  }
  // Sizes of the writes seen, in order; calls of each kind seen.
  std::vector<int64_t> write_sizes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return write_sizes_;
  }
  int calls(Call call) const {
    std::lock_guard<std::mutex> lock(mu_);
    return counts_[static_cast<int>(call)];
  }
  int failures() const {
    std::lock_guard<std::mutex> lock(mu_);
    return failures_;
  }

  ssize_t Write(int fd, const void* data, size_t size) override {
    size_t allowed = size;
    {
      std::lock_guard<std::mutex> lock(mu_);
      write_sizes_.push_back(static_cast<int64_t>(size));
      if (Fails(Call::kWrite)) return FailWith(ENOSPC);
      if (byte_budget_ >= 0) {
        if (byte_budget_ == 0) return FailWith(ENOSPC);
        if (static_cast<int64_t>(size) > byte_budget_) allowed = static_cast<size_t>(byte_budget_);
        byte_budget_ -= static_cast<int64_t>(allowed);
      }
    }
    return ::write(fd, data, allowed);
  }
  int Fsync(int) override { return Result(Call::kFsync, EIO); }
  int FsyncDir(int) override { return Result(Call::kFsyncDir, EIO); }
  int Rename(const char* from, const char* to) override {
    if (Result(Call::kRename, ENOSPC) != 0) return -1;
    return FileOps::Rename(from, to);
  }
  int RenameNoReplace(const char* from, const char* to) override {
    if (Result(Call::kRename, ENOSPC) != 0) return -1;
    return FileOps::RenameNoReplace(from, to);
  }

 private:
  // Under mu_: counts the call; true when it is to fail.
  bool Fails(Call call) {
    const int n = counts_[static_cast<int>(call)]++;
    return fail_from_ >= 0 && call == fail_call_ && n >= fail_from_;
  }
  int FailWith(int err) {
    ++failures_;
    errno = err;
    return -1;
  }
  int Result(Call call, int err) {
    std::lock_guard<std::mutex> lock(mu_);
    return Fails(call) ? FailWith(err) : 0;
  }

  mutable std::mutex mu_;
  int64_t byte_budget_ = -1;
  Call fail_call_ = Call::kWrite;
  int fail_from_ = -1;
  int counts_[4] = {0, 0, 0, 0};
  int failures_ = 0;
  std::vector<int64_t> write_sizes_;
};

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_TESTS_DAEMON_FAULTY_FILE_OPS_H_
