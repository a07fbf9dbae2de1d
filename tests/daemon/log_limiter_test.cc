// gRPC's log lines under a flood (issue 23 item 2): a call site prints at most once per window,
// and its next line says how many were held back.
#include "server/daemon/log_limiter.h"

#include <gtest/gtest.h>

namespace libreyolo::daemon {
namespace {

TEST(LogLimiter, AFloodOfOneLinePrintsOncePerWindowWithTheCount) {
  LogLimiter limiter(absl::Seconds(10));
  const absl::Time t0 = absl::FromUnixSeconds(1'764'000'000);
  const std::string site = "tcp_server_posix.cc:412";
  int printed = 0;
  for (int i = 0; i < 5000; ++i) {  // 5000 failed accepts within 5 s
    if (limiter.Admit(site, "Failed accept4: Too many open files", t0 + absl::Milliseconds(i)))
      ++printed;
  }
  EXPECT_EQ(printed, 1);
  auto next = limiter.Admit(site, "Failed accept4: Too many open files", t0 + absl::Seconds(11));
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(*next, "Failed accept4: Too many open files (4999 more like this in the last 10s)");
  // Another site is not held back by the first; a quiet site prints every line.
  EXPECT_TRUE(limiter.Admit("chttp2_server.cc:99", "Handshake failed", t0 + absl::Seconds(11)));
  EXPECT_EQ(*limiter.Admit("chttp2_server.cc:99", "x", t0 + absl::Seconds(30)), "x");
}

}  // namespace
}  // namespace libreyolo::daemon
