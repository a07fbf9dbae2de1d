// A FileOps (common/io/atomic_file.h) for tests that makes the store's writes fail the way a
// full or failing disk does: after a byte budget (the write that crosses it is cut short, the
// next fails ENOSPC), or at the n-th fsync, directory fsync or rename (EIO / ENOSPC). It also
// counts what it saw, so a test can first run a scenario cleanly and then fail it at every
// edge. Fsyncs that are not failed do nothing (the tests check ordering, not the disk). It can
// also stand for a small filesystem (LimitDisk): space counted in blocks from the files really
// there, so that deleting a file frees room as on a real disk.
#ifndef LIBREYOLO_TESTS_DAEMON_FAULTY_FILE_OPS_H_
#define LIBREYOLO_TESTS_DAEMON_FAULTY_FILE_OPS_H_

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <filesystem>
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
  // Where FailWrite cuts its write, in that write's own bytes.
  enum class Cut { kBeforeFirstByte, kAfterOneByte, kOneByteShort };
  // The n-th write (0-based, counted from the start) is cut at `cut` (it writes the bytes before
  // the cut and returns short; with none to write it fails ENOSPC) and every later write fails
  // ENOSPC: a disk that fills up during that write. Anchored on the write rather than on a byte
  // count from the start, so a life whose records are a few bytes longer or shorter than the
  // life that was counted (timestamps, durations) is cut at the same point of the same record.
  void FailWrite(int n, Cut cut) {
    std::lock_guard<std::mutex> lock(mu_);
    cut_write_ = n;
    cut_ = cut;
  }
  // The n-th call (0-based, counted from the start) of `call` fails, and every later one.
  void FailFrom(Call call, int n) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_call_ = call;
    fail_from_ = n;
  }
  // A filesystem of `bytes` holding `dir`: a write fails ENOSPC when the files under `dir`,
  // each counted in whole 4 KiB blocks, would take more. Nothing is reserved: files written
  // around the store (a test's filler) count as they are. Heal lifts it.
  void LimitDisk(const std::string& dir, int64_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    disk_dir_ = dir;
    disk_bytes_ = bytes;
  }
  // What the files under `dir` take, in whole 4 KiB blocks.
  static int64_t DiskUsage(const std::string& dir) {
    int64_t used = 0;
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      struct stat st {};
      if (::lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode)) used += Blocks(st.st_size);
    }
    return used;
  }
  void Heal() {
    std::lock_guard<std::mutex> lock(mu_);
    byte_budget_ = -1;
    cut_write_ = -1;
    fail_from_ = -1;
    disk_bytes_ = -1;
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
      const int n = counts_[static_cast<int>(Call::kWrite)];
      if (Fails(Call::kWrite)) return FailWith(ENOSPC);
      if (cut_write_ >= 0 && n > cut_write_) return FailWith(ENOSPC);
      if (cut_write_ >= 0 && n == cut_write_) {
        const size_t keep = cut_ == Cut::kBeforeFirstByte ? 0
                            : cut_ == Cut::kAfterOneByte  ? 1
                                                          : (size > 0 ? size - 1 : 0);
        if (keep == 0) return FailWith(ENOSPC);
        allowed = std::min(allowed, keep);
      }
      if (disk_bytes_ >= 0 && DiskUsage(disk_dir_) + Growth(fd, size) > disk_bytes_) {
        return FailWith(ENOSPC);
      }
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
  static int64_t Blocks(int64_t bytes) { return (bytes + kBlock - 1) / kBlock * kBlock; }
  // The blocks a write of `size` bytes to `fd` adds (0 when it fits in its last one).
  static int64_t Growth(int fd, size_t size) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return 0;
    const int flags = ::fcntl(fd, F_GETFL);
    const off_t at =
        (flags >= 0 && (flags & O_APPEND) != 0) ? st.st_size : ::lseek(fd, 0, SEEK_CUR);
    const int64_t end =
        std::max<int64_t>(st.st_size, static_cast<int64_t>(at) + static_cast<int64_t>(size));
    return Blocks(end) - Blocks(st.st_size);
  }
  int Result(Call call, int err) {
    std::lock_guard<std::mutex> lock(mu_);
    return Fails(call) ? FailWith(err) : 0;
  }

  static constexpr int64_t kBlock = 4096;
  mutable std::mutex mu_;
  int64_t byte_budget_ = -1;
  int cut_write_ = -1;
  Cut cut_ = Cut::kBeforeFirstByte;
  std::string disk_dir_;
  int64_t disk_bytes_ = -1;
  Call fail_call_ = Call::kWrite;
  int fail_from_ = -1;
  int counts_[4] = {0, 0, 0, 0};
  int failures_ = 0;
  std::vector<int64_t> write_sizes_;
};

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_TESTS_DAEMON_FAULTY_FILE_OPS_H_
