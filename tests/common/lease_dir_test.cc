// Leases across processes (common/io/lease_dir.h): a lease counts while its holder lives, a
// holder killed with SIGKILL leaves nothing that counts (its file is removed by the next count),
// and the control lock is exclusive between processes and bounded when waited for.
#include "common/io/lease_dir.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "gtest/gtest.h"
#include "tests/support/test_files.h"

namespace libreyolo {
namespace {

namespace fs = std::filesystem;
using ::libreyolo::test::TempDir;

int LeaseFiles(const std::string& dir) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.path().extension() == ".lease";
  return n;
}

// A child that takes a lease, writes one byte to `ready` and waits to be killed.
pid_t ChildHoldingALease(const std::string& dir, int ready) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    auto lock = LeaseDirLock::Acquire(dir, std::chrono::seconds(10));
    if (!lock.ok()) ::_exit(2);
    auto lease = Lease::Take(dir, "child");
    if (!lease.ok()) ::_exit(3);
    lock = absl::UnavailableError("released");  // the control lock goes, the lease stays
    const char byte = 1;
    (void)!::write(ready, &byte, 1);
    for (;;) ::pause();
  }
  return pid;
}

TEST(LeaseDirTest, ALeaseCountsUntilReleased) {
  TempDir tmp;
  const std::string dir = tmp.File("leases");
  EXPECT_EQ(CountLiveLeases(dir), 0);  // no directory yet
  auto lock = LeaseDirLock::Acquire(dir, std::chrono::seconds(1));
  ASSERT_TRUE(lock.ok()) << lock.status();
  auto a = Lease::Take(dir, "a");
  auto b = Lease::Take(dir, "b");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(CountLiveLeases(dir), 2);  // this process's own leases count
  a->Release();
  EXPECT_FALSE(a->held());
  EXPECT_EQ(CountLiveLeases(dir), 1);
  EXPECT_EQ(LeaseFiles(dir), 1);
  { Lease moved = *std::move(b); }  // the destructor releases it
  EXPECT_EQ(CountLiveLeases(dir), 0);
  EXPECT_EQ(LeaseFiles(dir), 0);
}

TEST(LeaseDirTest, TheLeaseOfAKilledProcessDoesNotCountAndIsRemoved) {
  TempDir tmp;
  const std::string dir = tmp.File("leases");
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t child = ChildHoldingALease(dir, pipe_fds[1]);
  char byte = 0;
  ASSERT_EQ(::read(pipe_fds[0], &byte, 1), 1);
  {
    auto lock = LeaseDirLock::Acquire(dir, std::chrono::seconds(5));
    ASSERT_TRUE(lock.ok()) << lock.status();
    EXPECT_EQ(CountLiveLeases(dir), 1);
  }
  ::kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_EQ(LeaseFiles(dir), 1);  // the file stays behind...
  auto lock = LeaseDirLock::Acquire(dir, std::chrono::seconds(5));
  ASSERT_TRUE(lock.ok()) << lock.status();
  EXPECT_EQ(CountLiveLeases(dir), 0);  // ...but counts for nothing
  EXPECT_EQ(LeaseFiles(dir), 0);
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
}

TEST(LeaseDirTest, TheControlLockIsExclusiveBetweenProcessesAndTheWaitIsBounded) {
  TempDir tmp;
  const std::string dir = tmp.File("leases");
  auto held = LeaseDirLock::Acquire(dir, std::chrono::seconds(1));
  ASSERT_TRUE(held.ok()) << held.status();
  const pid_t child = ::fork();
  if (child == 0) {
    const bool busy = !LeaseDirLock::TryAcquire(dir).has_value();
    const auto start = std::chrono::steady_clock::now();
    auto waited = LeaseDirLock::Acquire(dir, std::chrono::milliseconds(200));
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - start)
                        .count();
    const bool bounded = waited.status().code() == absl::StatusCode::kDeadlineExceeded &&
                         ms >= 200 && ms < 5000;
    ::_exit(busy && bounded ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  held = absl::UnavailableError("released");
  EXPECT_TRUE(LeaseDirLock::TryAcquire(dir).has_value());
}

}  // namespace
}  // namespace libreyolo
