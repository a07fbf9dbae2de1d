// Resumable watching through a real libreyolod: a watcher that disconnects and reconnects with
// from_sequence = last seen + 1 gets every event exactly once (the union is 1..N, no gap, no
// repeat), also when the daemon is killed and restarted between the two connections.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/daemon/daemon_process.h"

namespace libreyolo::daemon_test {
namespace {

using ::testing::HasSubstr;

// Event fields that must be identical whenever an event is sent again.
std::string Key(const v1::JobEvent& e) {
  return std::to_string(e.sequence()) + "|" + e.stage() + "|" + std::to_string(e.done()) + "/" +
         std::to_string(e.total()) + "|" + std::to_string(e.state()) + "|" +
         std::to_string(e.time_unix_ms()) + "|" + e.message();
}
std::vector<std::string> Keys(const std::vector<v1::JobEvent>& events) {
  std::vector<std::string> out;
  for (const v1::JobEvent& e : events) out.push_back(Key(e));
  return out;
}

TEST(DaemonResumeTest, ReconnectingWithLastPlusOneMissesAndRepeatsNothing) {
  TempDir dir;
  DaemonDirs dirs(dir.path());
  auto daemon = DaemonProcess::Start(dirs.Flags(), dir.File("daemon.log"));
  ASSERT_TRUE(daemon->WaitServing()) << daemon->LogTail();
  auto channel = UnixChannel(dirs.socket);
  auto stub = v1::ProfilerService::NewStub(channel);

  v1::Job job;
  ASSERT_TRUE(Submit(*stub, TinyInfer(16), &job).ok());

  // Three connections: 3 events, then 2 more, then the rest; each cut by the client.
  std::vector<v1::JobEvent> seen;
  for (int take : {3, 2}) {
    std::vector<v1::JobEvent> part;
    const int64_t from = seen.empty() ? 0 : seen.back().sequence() + 1;
    int n = 0;
    const grpc::Status s =
        Watch(*stub, job.id(), from, &part, "", [&](const v1::JobEvent&) { return ++n == take; });
    ASSERT_EQ(static_cast<int>(part.size()), take) << s.error_message();
    // Cancelled by us; OK when the daemon had already sent everything and closed the stream.
    EXPECT_TRUE(s.ok() || s.error_code() == grpc::StatusCode::CANCELLED) << s.error_message();
    seen.insert(seen.end(), part.begin(), part.end());
  }
  const grpc::Status rest = Watch(*stub, job.id(), seen.back().sequence() + 1, &seen);
  ASSERT_TRUE(rest.ok()) << rest.error_message();
  ASSERT_TRUE(GetJob(*stub, job.id(), &job).ok());
  ASSERT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.error();
  ASSERT_GT(job.last_sequence(), 5);
  EXPECT_EQ(Sequences(seen), OneTo(job.last_sequence()));
  EXPECT_EQ(seen.back().stage(), "done");

  // The stored log replays the same events; from N+1 the stream ends at once.
  std::vector<v1::JobEvent> replay;
  ASSERT_TRUE(Watch(*stub, job.id(), 0, &replay).ok());
  EXPECT_EQ(Keys(replay), Keys(seen));
  std::vector<v1::JobEvent> tail;
  ASSERT_TRUE(Watch(*stub, job.id(), 4, &tail).ok());
  const std::vector<std::string> all = Keys(seen);
  EXPECT_EQ(Keys(tail), std::vector<std::string>(all.begin() + 3, all.end()));
  std::vector<v1::JobEvent> none;
  ASSERT_TRUE(Watch(*stub, job.id(), job.last_sequence() + 1, &none).ok());
  EXPECT_TRUE(none.empty());
  std::vector<v1::JobEvent> bad;
  EXPECT_EQ(Watch(*stub, job.id(), -1, &bad).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  // `libreyolo jobs watch --from K --json` prints events K..N, one JSON line each.
  const CommandResult cli = RunClient(
      {"jobs", "watch", job.id(), "--from", "4", "--json", "--remote", "unix:" + dirs.socket});
  ASSERT_EQ(cli.exit_code, 0) << cli.Describe();
  std::vector<std::string> lines;
  std::istringstream in(cli.out);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("{", 0) == 0) lines.push_back(line);
  }
  ASSERT_EQ(lines.size(), seen.size() - 3) << cli.out;
  EXPECT_THAT(lines.front(), HasSubstr("\"sequence\":\"4\""));
  EXPECT_THAT(lines.back(),
              HasSubstr("\"sequence\":\"" + std::to_string(job.last_sequence()) + "\""));

  EXPECT_EQ(daemon->Terminate(seconds(60)), 0) << daemon->LogTail();
}

// A watcher of a queued job loses its stream when the daemon is killed (kill -9) and resumes
// after the restart: the queued job runs, and the watcher sees 1..N exactly once. The job that
// was running gets one more event, "failed", numbered after its last one.
TEST(DaemonResumeTest, ReconnectingAcrossADaemonRestart) {
  TempDir dir;
  DaemonDirs dirs(dir.path());
  auto daemon = DaemonProcess::Start(dirs.Flags(), dir.File("daemon.log"));
  ASSERT_TRUE(daemon->WaitServing()) << daemon->LogTail();
  auto stub = v1::ProfilerService::NewStub(UnixChannel(dirs.socket));

  v1::Job blocker, queued;
  ASSERT_TRUE(Submit(*stub, TinyInfer(5000), &blocker).ok());
  ASSERT_TRUE(Submit(*stub, TinyInfer(2), &queued).ok());
  EXPECT_EQ(queued.state(), v1::JOB_STATE_QUEUED);

  // Follow the blocker until it measures, and the queued job for its first events.
  std::vector<v1::JobEvent> blocker_events;
  ASSERT_TRUE(Watch(*stub, blocker.id(), 0, &blocker_events, "", [](const v1::JobEvent& e) {
                return e.stage() == "measuring";
              }).error_code() == grpc::StatusCode::CANCELLED);
  ASSERT_EQ(blocker_events.back().stage(), "measuring");

  std::vector<v1::JobEvent> seen;
  {
    // This stream stays open across the kill and ends with an error.
    auto ctx = Ctx("", seconds(240));
    v1::WatchJobRequest req;
    req.set_job_id(queued.id());
    auto reader = stub->WatchJob(ctx.get(), req);
    v1::JobEvent e;
    ASSERT_TRUE(reader->Read(&e));
    seen.push_back(e);
    daemon->Kill9();
    while (reader->Read(&e)) seen.push_back(e);
    const grpc::Status s = reader->Finish();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  }
  ASSERT_FALSE(seen.empty());
  const int64_t before_restart = seen.back().sequence();
  EXPECT_EQ(Sequences(seen), OneTo(before_restart));

  daemon = DaemonProcess::Start(dirs.Flags(), dir.File("daemon2.log"));
  ASSERT_TRUE(daemon->WaitServing()) << daemon->LogTail();
  stub = v1::ProfilerService::NewStub(UnixChannel(dirs.socket));
  const grpc::Status rest = Watch(*stub, queued.id(), before_restart + 1, &seen);
  ASSERT_TRUE(rest.ok()) << rest.error_message();
  ASSERT_TRUE(GetJob(*stub, queued.id(), &queued).ok());
  EXPECT_EQ(queued.state(), v1::JOB_STATE_SUCCEEDED) << queued.error();
  EXPECT_EQ(Sequences(seen), OneTo(queued.last_sequence()));
  EXPECT_GT(queued.last_sequence(), before_restart);
  EXPECT_EQ(seen.back().stage(), "done");

  // The blocker's stream resumes too: the events before the kill, then "failed".
  const int64_t blocker_seen = blocker_events.back().sequence();
  ASSERT_TRUE(Watch(*stub, blocker.id(), blocker_seen + 1, &blocker_events).ok());
  ASSERT_TRUE(GetJob(*stub, blocker.id(), &blocker).ok());
  EXPECT_EQ(blocker.state(), v1::JOB_STATE_FAILED);
  EXPECT_EQ(Sequences(blocker_events), OneTo(blocker.last_sequence()));
  EXPECT_EQ(blocker_events.back().stage(), "failed");
  EXPECT_THAT(blocker_events.back().message(), HasSubstr("libreyolod stopped"));
  // And replaying it whole gives the same.
  std::vector<v1::JobEvent> replay;
  ASSERT_TRUE(Watch(*stub, blocker.id(), 1, &replay).ok());
  EXPECT_EQ(Keys(replay), Keys(blocker_events));

  EXPECT_EQ(daemon->Terminate(seconds(60)), 0) << daemon->LogTail();
}

}  // namespace
}  // namespace libreyolo::daemon_test
