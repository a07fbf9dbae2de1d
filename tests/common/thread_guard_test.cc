// Issue 39 §4: the catch-all at the top of a thread (common/status/thread_guard.h), with a throw
// injected into a real thread: one escaped line naming the thread and the action, the action
// run, the process alive.
#include "common/status/thread_guard.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/readers/ranks_view.h"
#include "common/readers/ranks_view_internal.h"
#include "common/trace/trace_reader_internal.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_files.h"

namespace libreyolo {
namespace {

TEST(ThreadGuard, ABodyThatReturnsRunsNoAction) {
  bool ran = false, acted = false;
  testing::internal::CaptureStderr();
  EXPECT_TRUE(RunGuarded("t", "a", [&] { ran = true; }, [&](const std::string&) { acted = true; }));
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_TRUE(ran);
  EXPECT_FALSE(acted);
}

TEST(ThreadGuard, AThrowInAThreadIsOneEscapedLineAndTheAction) {
  std::string seen;
  bool returned = true;
  testing::internal::CaptureStderr();
  std::thread t([&] {
    returned = RunGuarded(
        "trace reader 'x'", "the reader fails",
        [] { throw std::runtime_error("bad\nthing \"quoted\"\x01"); },
        [&](const std::string& what) { seen = what; });
  });
  t.join();
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "libreyolo: thread 'trace reader \\'x\\'' threw: bad\\nthing \\\"quoted\\\"\\001; "
            "the reader fails\n");
  EXPECT_FALSE(returned);
  EXPECT_EQ(seen, "bad\\nthing \\\"quoted\\\"\\001");
}

TEST(ThreadGuard, AnythingThrownIsCaughtAndLongMessagesAreCut) {
  std::string seen;
  testing::internal::CaptureStderr();
  EXPECT_FALSE(RunGuarded("t", "kept up", [] { throw 42; },
                          [&](const std::string& what) { seen = what; }));
  EXPECT_FALSE(RunGuarded("t", "kept up", [] { throw std::runtime_error(std::string(1000, 'x')); }));
  const std::string logged = testing::internal::GetCapturedStderr();
  EXPECT_EQ(seen, "an exception that is not a std::exception");
  EXPECT_THAT(logged, testing::HasSubstr(std::string(240, 'x') + "...; kept up\n"));
  EXPECT_THAT(logged, testing::Not(testing::HasSubstr(std::string(241, 'x'))));
  EXPECT_EQ(std::count(logged.begin(), logged.end(), '\n'), 2);
}

// The trace reader's batch walkers (common/trace/trace_reader.cc): a walker that throws fails
// the read, naming the thread, where it used to end the process (std::terminate); without the
// injection the same text reads.
TEST(ThreadGuard, ATraceBatchWalkerThatThrowsFailsTheRead) {
  std::string json = "[";
  for (int i = 0; i < 3000; ++i) {
    absl::StrAppend(&json, i == 0 ? "" : ",\n", R"({"ph": "X", "cat": "cpu_op", "name": "aten::op)",
                    i % 7, R"(", "ts": )", i * 10, R"(, "dur": 5, "pid": 1, "tid": 1})");
  }
  json += "]";
  auto clean = internal::ReadTraceTextSimdjson(json, size_t{1} << 16, 1000, nullptr, 2);
  ASSERT_TRUE(clean.has_value() && clean->ok());
  // The caller walks queued batches itself when the walkers are slow to wake: a read whose
  // walkers took no batch threw nothing and reads; the next try injects again.
  int threw = 0;
  for (int attempt = 0; attempt < 200 && threw < 3; ++attempt) {
    internal::g_batch_walker_throws_for_test = 1;
    testing::internal::CaptureStderr();
    auto got = internal::ReadTraceTextSimdjson(json, size_t{1} << 16, 1000, nullptr, 2);
    const std::string logged = testing::internal::GetCapturedStderr();
    ASSERT_TRUE(got.has_value()) << "left to the RapidJSON reader";
    if (internal::g_batch_walker_throws_for_test.exchange(0) > 0) {  // no walker took a batch
      EXPECT_TRUE(got->ok()) << got->status();
      continue;
    }
    ++threw;
    ASSERT_FALSE(got->ok()) << "a walker threw and the read still succeeded";
    EXPECT_THAT(got->status().message(),
                testing::HasSubstr("a trace batch walker thread threw: injected by the test"));
    EXPECT_THAT(logged, testing::HasSubstr("libreyolo: thread 'trace batch walker' threw: "
                                           "injected by the test; the trace read fails\n"));
  }
  EXPECT_GT(threw, 0) << "no walker thread took a batch in 200 reads";
}

// The rank-folder reader's threads (common/readers/ranks_view.cc, ParallelFor): a rank whose
// read throws fails the read, naming the thread and the rank, where it used to end the process
// (a non-std exception) or fail without naming the thread; without the injection the same
// folder reads.
TEST(ThreadGuard, ARankTraceReaderThatThrowsFailsTheRead) {
  test::TempDir d;
  for (int rank = 0; rank < 2; ++rank) {
    std::string events;
    for (int step = 0; step < 2; ++step) {
      const int64_t t = step * 100'000;
      absl::StrAppend(
          &events, step == 0 ? "" : ",\n",
          R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#)", step + 1,
          R"(", "ts": )", t, R"(, "dur": 100000, "pid": 1, "tid": 1},)",
          R"({"ph": "X", "cat": "cpu_op", "name": "aten::conv2d", "ts": )", t + 1000,
          R"(, "dur": 50000, "pid": 1, "tid": 1},)",
          R"({"ph": "X", "cat": "user_annotation", "name": "gloo:all_reduce", "ts": )", t + 60000,
          R"(, "dur": 30000, "pid": 1, "tid": 2, "args": {"Input Dims": [[1000]], )",
          R"("Input type": ["float"]}})");
    }
    d.Write(absl::StrCat("rank", rank, ".json"),
            absl::StrCat(R"({"schemaVersion": 1, "distributedInfo": {"backend": "gloo", "rank": )",
                         rank, R"(, "world_size": 2, "pg_config": [{"pg_size": 2, "ranks": [0, 1]}]},)",
                         R"( "traceEvents": [)", events, "]}"));
  }
  auto clean = BuildRanksView(d.path(), 2);
  ASSERT_TRUE(clean.ok()) << clean.status();
  for (int threads : {1, 2}) {
    internal::g_rank_read_throws_for_test = 1;
    testing::internal::CaptureStderr();
    auto got = BuildRanksView(d.path(), threads);
    const std::string logged = testing::internal::GetCapturedStderr();
    EXPECT_EQ(internal::g_rank_read_throws_for_test.exchange(0), 0);
    ASSERT_FALSE(got.ok()) << "a reader threw and the read still succeeded";
    const std::string message(got.status().message());
    EXPECT_THAT(message,
                testing::HasSubstr("the rank trace reader thread threw: injected by the test"));
    EXPECT_THAT(message, testing::MatchesRegex("rank [01] \\(.*rank[01]\\.json\\): .*"));
    EXPECT_THAT(logged, testing::MatchesRegex("libreyolo: thread 'rank trace reader \\(.*rank[01]"
                                              "\\.json\\)' threw: injected by the test; this "
                                              "rank's read fails\n"));
  }
}

}  // namespace
}  // namespace libreyolo
