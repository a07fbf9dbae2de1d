// The per-user caps of the shared resources (issue 23 item 3): WatchJob streams, reader calls and
// artifact downloads all count through UserSlots.
#include "server/daemon/jobs/user_slots.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace libreyolo::daemon {
namespace {

using ::testing::HasSubstr;

TEST(UserSlots, OneUserCannotTakeEverySlot) {
  UserSlots reads("reader calls in flight", "max_reads");
  auto a1 = reads.Acquire("alice", 16, 2);
  auto a2 = reads.Acquire("alice", 16, 2);
  ASSERT_TRUE(a1.ok() && a2.ok());
  auto a3 = reads.Acquire("alice", 16, 2);
  EXPECT_EQ(a3.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(a3.status().message(),
            "alice already has 2 reader calls in flight (limit max_reads_per_user 2); close one "
            "or retry later");
  auto b1 = reads.Acquire("bob", 16, 2);  // bob is not locked out by alice
  EXPECT_TRUE(b1.ok()) << b1.status();
  EXPECT_EQ(reads.in_use(), 3);
  EXPECT_EQ(reads.in_use_by("alice"), 2);
  { UserSlots::Slot gone = *std::move(a1); }  // alice ends one call
  EXPECT_EQ(reads.in_use_by("alice"), 1);
  EXPECT_TRUE(reads.Acquire("alice", 16, 2).ok());
  // The refused attempt left no trace: carol never held a slot.
  EXPECT_EQ(reads.in_use_by("carol"), 0);
}

TEST(UserSlots, TheSharedCapHoldsAndAReloadedCapAppliesToTheNextCall) {
  UserSlots downloads("artifact downloads in flight", "max_downloads");
  auto a = downloads.Acquire("alice", 2, 8);
  auto b = downloads.Acquire("bob", 2, 8);
  ASSERT_TRUE(a.ok() && b.ok());
  auto c = downloads.Acquire("carol", 2, 8);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(c.status().message(),
            "too many artifact downloads in flight (limit max_downloads 2); retry later");
  *b = UserSlots::Slot();  // bob's stream ends: moved-from and reassigned, released once
  EXPECT_EQ(downloads.in_use(), 1);
  EXPECT_TRUE(downloads.Acquire("carol", 2, 8).ok());  // and released again at once
  // A SIGHUP lowered the per-user cap to 1: alice's open stream stays, her next is refused.
  auto a2 = downloads.Acquire("alice", 64, 1);
  EXPECT_EQ(a2.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(downloads.in_use(), 1);
}

TEST(UserSlots, ManyThreadsNeverExceedTheCapsAndGiveEverythingBack) {
  UserSlots slots("open watchers", "max_watchers");
  constexpr int kTotal = 6, kPerUser = 2;
  std::atomic<int> held{0}, most{0}, refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      const std::string user = "user" + std::to_string(t % 4);
      for (int i = 0; i < 2000; ++i) {
        auto s = slots.Acquire(user, kTotal, kPerUser);
        if (!s.ok()) {
          ++refused;
          continue;
        }
        const int now = ++held;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        EXPECT_LE(slots.in_use_by(user), kPerUser);
        --held;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_LE(most.load(), kTotal);
  EXPECT_EQ(slots.in_use(), 0);
  for (int u = 0; u < 4; ++u) EXPECT_EQ(slots.in_use_by("user" + std::to_string(u)), 0);
}

}  // namespace
}  // namespace libreyolo::daemon
