#include "common/io/unique_fd.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace libreyolo {
namespace {

bool IsOpen(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

TEST(UniqueFd, ClosesOnScopeExitAndMovesOwnership) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const int r = fds[0];
  {
    UniqueFd a(r);
    UniqueFd w(fds[1]);
    EXPECT_TRUE(a.valid());
    UniqueFd b(std::move(a));
    EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
    EXPECT_EQ(b.get(), r);
    ASSERT_EQ(::write(w.get(), "xy", 2), 2);
    char buf[4];
    EXPECT_EQ(b.Read(buf, sizeof buf), 2);
    EXPECT_EQ(w.Close(), 0);
    EXPECT_FALSE(w.valid());
    EXPECT_EQ(b.Read(buf, sizeof buf), 0);  // the write end is closed: end of file
    EXPECT_TRUE(IsOpen(r));
  }
  EXPECT_FALSE(IsOpen(r));
}

TEST(UniqueFd, ReleaseKeepsTheDescriptorOpenAndCloseReportsEbadf) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  UniqueFd w(fds[1]);
  int released;
  {
    UniqueFd r(fds[0]);
    released = r.Release();
    EXPECT_EQ(r.Close(), EBADF);  // nothing held
  }
  EXPECT_TRUE(IsOpen(released));
  UniqueFd again;
  again = UniqueFd(released);
  again.Reset();
  EXPECT_FALSE(IsOpen(released));
}

}  // namespace
}  // namespace libreyolo
