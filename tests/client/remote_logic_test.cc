// The client's remote logic against gRPC's gmock stubs (issue 22 §5): no daemon, no socket. A
// DaemonConnection made WithStub sends its calls to MockProfilerServiceStub, and every stream is
// a scripted grpc::testing::MockClientReader, so a broken stream, a restart or a corrupted chunk
// happens exactly where the test puts it. What is asserted is what the headers promise:
// job_watch.h (resume from the last sequence, Ctrl-C), artifact_download.h (SHA-256, nothing
// partial at the destination), remote_reader.h (the daemon's errors keep their meaning) and
// daemon_connection.h (Reconnect: who is waited for, within LIBREYOLO_RECONNECT_TIMEOUT_S).
#include <grpcpp/test/mock_stream.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/remote/artifact_download.h"
#include "client/remote/daemon_connection.h"
#include "client/remote/job_list.h"
#include "client/remote/job_watch.h"
#include "client/remote/remote_reader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "libreyolo/profiler/v1/profiler_mock.grpc.pb.h"

namespace libreyolo::cli {
namespace {

namespace fs = std::filesystem;
using ::grpc::testing::MockClientReader;
using ::testing::_;
using ::testing::HasSubstr;
using ::testing::InSequence;
using ::testing::NiceMock;
using ::testing::Property;
using ::testing::Return;

constexpr char kAddress[] = "unix:/nonexistent/remote-logic-test.sock";
constexpr char kJob[] = "job-1";

// A stream that hands out `messages` in order, then ends with `end`. Returned raw: the stub's
// *Raw method gives it to the code under test, which owns (and deletes) it.
template <typename T>
MockClientReader<T>* Stream(std::vector<T> messages, grpc::Status end = grpc::Status::OK) {
  auto* reader = new NiceMock<MockClientReader<T>>();
  auto queue = std::make_shared<std::deque<T>>(messages.begin(), messages.end());
  ON_CALL(*reader, Read(_)).WillByDefault([queue](T* m) {
    if (queue->empty()) return false;
    *m = std::move(queue->front());
    queue->pop_front();
    return true;
  });
  ON_CALL(*reader, Finish()).WillByDefault(Return(end));
  return reader;
}

v1::JobEvent Event(int64_t sequence, v1::JobState state, const std::string& stage) {
  v1::JobEvent e;
  e.set_job_id(kJob);
  e.set_sequence(sequence);
  e.set_state(state);
  e.set_stage(stage);
  return e;
}

v1::ArtifactChunk Chunk(int64_t offset, const std::string& data, bool last = false,
                        const std::string& sha256 = "") {
  v1::ArtifactChunk c;
  c.set_offset(offset);
  c.set_data(data);
  c.set_total_size(11);
  c.set_last(last);
  c.set_sha256(sha256);
  return c;
}

// SHA-256 of "hello world", the artifact the download tests serve.
constexpr char kHelloSha[] = "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9";

// A GetJob answer with the job in `state`.
auto JobIn(v1::JobState state) {
  return [state](grpc::ClientContext*, const v1::GetJobRequest& req, v1::Job* job) {
    job->set_id(req.job_id());
    job->set_state(state);
    return grpc::Status::OK;
  };
}

auto WatchFrom(int64_t from) {
  return Property(&v1::WatchJobRequest::from_sequence, from);
}

class RemoteLogicTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Long enough for the few retries a test makes (0.25 s each: every message resets the
    // backoff), short enough that a test that wrongly waits cannot hang for minutes.
    ::setenv("LIBREYOLO_RECONNECT_TIMEOUT_S", "5", 1);
    auto stub = std::make_unique<NiceMock<v1::MockProfilerServiceStub>>();
    stub_ = stub.get();
    RemoteTarget target;
    target.address = kAddress;
    target.token = "secret";
    connection_ = DaemonConnection::WithStub(std::move(stub), target);
    // A stream nobody expected fails the test (gmock says so) instead of crashing it.
    ON_CALL(*stub_, WatchJobRaw(_, _)).WillByDefault([](grpc::ClientContext*, const auto&) {
      return Stream<v1::JobEvent>({}, {grpc::StatusCode::INTERNAL, "unexpected WatchJob"});
    });
    ON_CALL(*stub_, ReadArtifactRaw(_, _)).WillByDefault([](grpc::ClientContext*, const auto&) {
      return Stream<v1::ArtifactChunk>({}, {grpc::StatusCode::INTERNAL, "unexpected ReadArtifact"});
    });
    dir_ = fs::temp_directory_path() /
           absl::StrCat("libreyolo-remote-logic-", ::getpid(), "-",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override {
    ::unsetenv("LIBREYOLO_RECONNECT_TIMEOUT_S");
    ClearInterrupt();
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  // Follows kJob from `from`, recording the sequence of every event shown.
  absl::StatusOr<WatchResult> Watch(int64_t from = 1) {
    return WatchJob(*connection_, kJob, from,
                    [this](const v1::JobEvent& e) { shown_.push_back(e.sequence()); });
  }

  std::vector<std::string> FilesIn(const fs::path& d) const {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(d, ec)) {
      names.push_back(entry.path().filename().string());
    }
    return names;
  }

  static std::string ReadAll(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  // The watch opened from sequence `from` hands out `events`, then ends with `end`.
  void ExpectStreamFrom(int64_t from, std::vector<v1::JobEvent> events,
                        grpc::Status end = grpc::Status::OK) {
    EXPECT_CALL(*stub_, WatchJobRaw(_, WatchFrom(from)))
        .WillOnce(Return(Stream<v1::JobEvent>(std::move(events), std::move(end))));
  }

  NiceMock<v1::MockProfilerServiceStub>* stub_ = nullptr;  // owned by connection_
  std::unique_ptr<DaemonConnection> connection_;
  std::vector<int64_t> shown_;
  fs::path dir_;
};

// ---- job_watch ------------------------------------------------------------------------------

TEST_F(RemoteLogicTest, AWatchFollowsTheStreamToItsTerminalEventThenReadsTheJob) {
  ExpectStreamFrom(1, {Event(1, v1::JOB_STATE_QUEUED, "queued"),
                                             Event(2, v1::JOB_STATE_RUNNING, "measuring"),
                                             Event(3, v1::JOB_STATE_SUCCEEDED, "done")});
  EXPECT_CALL(*stub_, GetJob(_, Property(&v1::GetJobRequest::job_id, kJob), _))
      .WillOnce(JobIn(v1::JOB_STATE_SUCCEEDED));
  auto watched = Watch();
  ASSERT_TRUE(watched.ok()) << watched.status();
  EXPECT_EQ(shown_, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(watched->last_sequence, 3);
  EXPECT_EQ(watched->job.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_FALSE(watched->interrupted);
  EXPECT_TRUE(connection_->reached());
}

// The cancel path watches again from last_sequence + 1: the request starts there.
TEST_F(RemoteLogicTest, AWatchStartsAtTheSequenceAskedFor) {
  ExpectStreamFrom(7, {Event(7, v1::JOB_STATE_CANCELLED, "cancelled")});
  EXPECT_CALL(*stub_, GetJob(_, _, _)).WillOnce(JobIn(v1::JOB_STATE_CANCELLED));
  auto watched = Watch(7);
  ASSERT_TRUE(watched.ok()) << watched.status();
  EXPECT_EQ(shown_, (std::vector<int64_t>{7}));
}

// A daemon restart ends the stream with UNAVAILABLE after the drain: the watch reopens it from
// the next sequence, so no event is shown twice and none is lost.
TEST_F(RemoteLogicTest, ABrokenStreamIsReopenedFromTheNextSequence) {
  InSequence order;
  ExpectStreamFrom(1, {Event(1, v1::JOB_STATE_QUEUED, "queued"),
                                             Event(2, v1::JOB_STATE_RUNNING, "warmup")},
                                            {grpc::StatusCode::UNAVAILABLE, "Socket closed"});
  ExpectStreamFrom(3, {Event(3, v1::JOB_STATE_RUNNING, "measuring")},
                                            {grpc::StatusCode::UNAVAILABLE, "Socket closed"});
  ExpectStreamFrom(4, {Event(4, v1::JOB_STATE_SUCCEEDED, "done")});
  EXPECT_CALL(*stub_, GetJob(_, _, _)).WillOnce(JobIn(v1::JOB_STATE_SUCCEEDED));
  auto watched = Watch();
  ASSERT_TRUE(watched.ok()) << watched.status();
  EXPECT_EQ(shown_, (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(watched->last_sequence, 4);
}

// CANCELLED that the user did not ask for (a call caught in the daemon's shutdown) is retried
// like UNAVAILABLE once the daemon was reached.
TEST_F(RemoteLogicTest, ACancelledStreamTheUserDidNotAskForIsReopened) {
  InSequence order;
  ExpectStreamFrom(1, {Event(1, v1::JOB_STATE_RUNNING, "warmup")},
                                            {grpc::StatusCode::CANCELLED, "shutting down"});
  ExpectStreamFrom(2, {Event(2, v1::JOB_STATE_FAILED, "failed")});
  EXPECT_CALL(*stub_, GetJob(_, _, _)).WillOnce(JobIn(v1::JOB_STATE_FAILED));
  auto watched = Watch();
  ASSERT_TRUE(watched.ok()) << watched.status();
  EXPECT_EQ(shown_, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(watched->job.state(), v1::JOB_STATE_FAILED);
}

// An address where nobody ever answered (a typo, no daemon) fails at once, with the hint that
// names the address.
TEST_F(RemoteLogicTest, ANeverReachedAddressIsNotRetried) {
  EXPECT_CALL(*stub_, WatchJobRaw(_, _))
      .WillOnce(Return(Stream<v1::JobEvent>({}, {grpc::StatusCode::UNAVAILABLE, "connect failed"})));
  EXPECT_CALL(*stub_, GetJob(_, _, _)).Times(0);
  auto watched = Watch();
  ASSERT_FALSE(watched.ok());
  EXPECT_EQ(watched.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(watched.status().message(),
              HasSubstr(absl::StrCat("cannot reach libreyolod at ", kAddress, ": connect failed")));
  EXPECT_FALSE(connection_->reached());
}

// Retrying stops when LIBREYOLO_RECONNECT_TIMEOUT_S is spent (0: no retry at all).
TEST_F(RemoteLogicTest, TheReconnectBudgetEndsTheWatch) {
  ::setenv("LIBREYOLO_RECONNECT_TIMEOUT_S", "0", 1);
  EXPECT_CALL(*stub_, WatchJobRaw(_, _))
      .WillOnce(Return(Stream<v1::JobEvent>({Event(1, v1::JOB_STATE_RUNNING, "warmup")},
                                            {grpc::StatusCode::UNAVAILABLE, "Socket closed"})));
  auto watched = Watch();
  ASSERT_FALSE(watched.ok());
  EXPECT_EQ(watched.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(shown_, (std::vector<int64_t>{1}));
}

// Any other answer ends the retrying: it is the daemon's answer, kept as it is.
TEST_F(RemoteLogicTest, AnAnswerEndsTheWatch) {
  EXPECT_CALL(*stub_, WatchJobRaw(_, _))
      .WillOnce(Return(Stream<v1::JobEvent>({}, {grpc::StatusCode::NOT_FOUND, "no job job-1"})));
  auto watched = Watch();
  ASSERT_FALSE(watched.ok());
  EXPECT_EQ(watched.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(watched.status().message(), "no job job-1");
}

// A private daemon that died is not waited for, and the error says why.
TEST_F(RemoteLogicTest, AGonePrivateDaemonEndsTheWatchWithTheReason) {
  bool gone = false;
  connection_->set_gone_probe([&]() -> std::optional<std::string> {
    if (!gone) return std::nullopt;
    return "the private libreyolod (pid 42) was killed by SIGKILL";
  });
  EXPECT_CALL(*stub_, WatchJobRaw(_, _)).WillOnce([&](grpc::ClientContext*, const auto&) {
    gone = true;  // dies while the job runs
    return Stream<v1::JobEvent>({Event(1, v1::JOB_STATE_RUNNING, "warmup")},
                                {grpc::StatusCode::UNAVAILABLE, "Socket closed"});
  });
  auto watched = Watch();
  ASSERT_FALSE(watched.ok());
  EXPECT_EQ(watched.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(watched.status().message(), HasSubstr("(pid 42) was killed by SIGKILL"));
}

// A stream that ends cleanly without a terminal event: GetJob says whether the job goes on
// (watch again, from the next sequence) or has ended (stop).
TEST_F(RemoteLogicTest, AStreamEndingWithoutATerminalEventAsksGetJob) {
  InSequence order;
  ExpectStreamFrom(1, {Event(1, v1::JOB_STATE_QUEUED, "queued"),
                                             Event(2, v1::JOB_STATE_RUNNING, "warmup")});
  EXPECT_CALL(*stub_, GetJob(_, _, _)).WillOnce(JobIn(v1::JOB_STATE_RUNNING));
  ExpectStreamFrom(3, {});
  EXPECT_CALL(*stub_, GetJob(_, _, _)).WillOnce(JobIn(v1::JOB_STATE_SUCCEEDED));
  EXPECT_CALL(*stub_, GetJob(_, _, _)).WillOnce(JobIn(v1::JOB_STATE_SUCCEEDED));  // the result
  auto watched = Watch();
  ASSERT_TRUE(watched.ok()) << watched.status();
  EXPECT_EQ(shown_, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(watched->last_sequence, 2);
  EXPECT_EQ(watched->job.state(), v1::JOB_STATE_SUCCEEDED);
}

// Issue 39 §4: the Ctrl-C watcher thread runs through RunGuarded: one that throws logs one line
// naming it, and the watch fails with a message saying what happened and the way on (it used
// to end the process through std::terminate). Without the injection the same watch succeeds.
TEST_F(RemoteLogicTest, AWatcherThreadThatThrowsFailsTheWatch) {
  internal::g_interrupt_watcher_throws_for_test = 1;
  ExpectStreamFrom(1, {Event(1, v1::JOB_STATE_RUNNING, "warmup")});
  testing::internal::CaptureStderr();
  auto watched = Watch();
  const std::string logged = testing::internal::GetCapturedStderr();
  EXPECT_EQ(internal::g_interrupt_watcher_throws_for_test.exchange(0), 0);
  ASSERT_FALSE(watched.ok());
  EXPECT_EQ(watched.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(watched.status().message(),
              HasSubstr("the client's 'Ctrl-C watcher' thread threw (injected by the test)"));
  EXPECT_THAT(watched.status().message(), HasSubstr("libreyolo jobs watch ID"));
  EXPECT_EQ(logged,
            "libreyolo: thread 'Ctrl-C watcher' threw: injected by the test; the stream is "
            "cancelled and the command fails\n");

  ExpectStreamFrom(1, {Event(1, v1::JOB_STATE_SUCCEEDED, "done")});
  EXPECT_CALL(*stub_, GetJob(_, _, _)).WillOnce(JobIn(v1::JOB_STATE_SUCCEEDED));
  auto again = Watch();
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->job.state(), v1::JOB_STATE_SUCCEEDED);
}

// The final GetJob rides out a restart too (a job that ended during a drain).
TEST_F(RemoteLogicTest, TheFinalGetJobRidesOutARestart) {
  EXPECT_CALL(*stub_, WatchJobRaw(_, _))
      .WillOnce(Return(Stream<v1::JobEvent>({Event(1, v1::JOB_STATE_SUCCEEDED, "done")})));
  InSequence order;
  EXPECT_CALL(*stub_, GetJob(_, _, _))
      .WillOnce(Return(grpc::Status(grpc::StatusCode::UNAVAILABLE, "draining")));
  EXPECT_CALL(*stub_, GetJob(_, _, _)).WillOnce(JobIn(v1::JOB_STATE_SUCCEEDED));
  auto watched = Watch();
  ASSERT_TRUE(watched.ok()) << watched.status();
  EXPECT_EQ(watched->job.state(), v1::JOB_STATE_SUCCEEDED);
}

// Ctrl-C stops the watch (not the job) and is not mistaken for a restart to ride out.
TEST_F(RemoteLogicTest, CtrlCEndsTheWatchWithoutReopeningIt) {
  InstallInterruptFlag();
  EXPECT_CALL(*stub_, WatchJobRaw(_, _)).WillOnce([](grpc::ClientContext*, const auto&) {
    auto* reader = new NiceMock<MockClientReader<v1::JobEvent>>();
    auto count = std::make_shared<int>(0);
    ON_CALL(*reader, Read(_)).WillByDefault([count](v1::JobEvent* e) {
      if (++*count == 1) {
        *e = Event(1, v1::JOB_STATE_RUNNING, "measuring");
        return true;
      }
      ::raise(SIGINT);  // the user, while the next event is awaited
      return false;
    });
    ON_CALL(*reader, Finish())
        .WillByDefault(Return(grpc::Status(grpc::StatusCode::CANCELLED, "Cancelled")));
    return reader;
  });
  ON_CALL(*stub_, GetJob(_, _, _)).WillByDefault(JobIn(v1::JOB_STATE_RUNNING));
  auto watched = Watch();
  ASSERT_TRUE(watched.ok()) << watched.status();
  EXPECT_TRUE(watched->interrupted);
  EXPECT_EQ(watched->last_sequence, 1);
  EXPECT_EQ(shown_, (std::vector<int64_t>{1}));
}

// ---- artifact_download ----------------------------------------------------------------------

auto ArtifactAt(const std::string& name, int64_t offset) {
  return ::testing::AllOf(Property(&v1::ReadArtifactRequest::job_id, kJob),
                          Property(&v1::ReadArtifactRequest::name, name),
                          Property(&v1::ReadArtifactRequest::offset, offset));
}

// `jobs list --limit N` pages through ListJobs: a daemon answers at most 500 a page, and the
// client used to ask once, cap its page size to int32 (2^63-1 became -1: "page_size: must be
// >= 0") and print "(more: raise --limit)" for a limit it could not raise past 500.
TEST_F(RemoteLogicTest, AJobListFollowsThePagesUpToItsLimit) {
  // A daemon of 1,234 jobs, numbered from the newest, that answers 500 a page at most.
  const auto daemon = [](grpc::ClientContext*, const v1::ListJobsRequest& r,
                         v1::ListJobsResponse* out) {
    int64_t from = 0;
    if (!r.page_token().empty()) from = std::stoll(r.page_token());
    const int64_t page = std::min<int64_t>(r.page_size() <= 0 ? 50 : r.page_size(), 500);
    for (int64_t i = from; i < std::min<int64_t>(from + page, 1234); ++i) {
      out->add_jobs()->set_id(absl::StrCat("job-", i));
    }
    if (from + page < 1234) out->set_next_page_token(absl::StrCat(from + page));
    return grpc::Status::OK;
  };
  ON_CALL(*stub_, ListJobs(_, _, _)).WillByDefault(daemon);
  EXPECT_CALL(*stub_, ListJobs(_, _, _)).Times(3);
  auto some = ListJobsUpTo(*connection_, v1::ListJobsRequest(), 1100);
  ASSERT_TRUE(some.ok()) << some.status();
  ASSERT_EQ(some->jobs_size(), 1100);
  EXPECT_EQ(some->jobs(1099).id(), "job-1099");
  EXPECT_EQ(some->next_page_token(), "1100");  // more match
  ::testing::Mock::VerifyAndClearExpectations(stub_);
  ON_CALL(*stub_, ListJobs(_, _, _)).WillByDefault(daemon);
  auto all = ListJobsUpTo(*connection_, v1::ListJobsRequest(), 9223372036854775807);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->jobs_size(), 1234);
  EXPECT_EQ(all->jobs(1233).id(), "job-1233");
  EXPECT_TRUE(all->next_page_token().empty());
  // A daemon that hands out tokens for empty pages, or more jobs than asked, holds nothing.
  ON_CALL(*stub_, ListJobs(_, _, _))
      .WillByDefault([](grpc::ClientContext*, const v1::ListJobsRequest& r,
                        v1::ListJobsResponse* out) {
        for (int i = 0; i < 3 && r.page_token().empty(); ++i) out->add_jobs()->set_id("x");
        out->set_next_page_token("again");
        return grpc::Status::OK;
      });
  auto odd = ListJobsUpTo(*connection_, v1::ListJobsRequest(), 2);
  ASSERT_TRUE(odd.ok());
  EXPECT_EQ(odd->jobs_size(), 2);
  odd = ListJobsUpTo(*connection_, v1::ListJobsRequest(), 10);
  ASSERT_TRUE(odd.ok());
  EXPECT_EQ(odd->jobs_size(), 3);
  ON_CALL(*stub_, ListJobs(_, _, _))
      .WillByDefault(Return(grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "not yours")));
  EXPECT_EQ(ListJobsUpTo(*connection_, v1::ListJobsRequest(), 5).status().code(),
            absl::StatusCode::kPermissionDenied);
}

TEST_F(RemoteLogicTest, ADownloadWritesTheChunksAndPublishesTheVerifiedFile) {
  EXPECT_CALL(*stub_, ReadArtifactRaw(_, ArtifactAt("profile.json", 0)))
      .WillOnce(Return(Stream<v1::ArtifactChunk>(
          {Chunk(0, "hello "), Chunk(6, "world", /*last=*/true, kHelloSha)})));
  const fs::path dest = dir_ / "infer" / "profile.json";  // directories made on the way
  auto got = DownloadArtifact(*connection_, kJob, "profile.json", dest.string());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, 11);
  EXPECT_EQ(ReadAll(dest), "hello world");
  EXPECT_EQ(FilesIn(dest.parent_path()), (std::vector<std::string>{"profile.json"}));
}

// Issue 36 §6: Ctrl-C during a download ends it at once (not after the file), CANCELLED, with
// nothing left behind: neither the file nor its temp.
TEST_F(RemoteLogicTest, CtrlCDuringADownloadEndsItAndLeavesNoTempFile) {
  InstallInterruptFlag();
  EXPECT_CALL(*stub_, ReadArtifactRaw(_, ArtifactAt("profile_trace.json", 0)))
      .WillOnce([](grpc::ClientContext*, const auto&) {
        auto* reader = new NiceMock<MockClientReader<v1::ArtifactChunk>>();
        auto count = std::make_shared<int>(0);
        ON_CALL(*reader, Read(_)).WillByDefault([count](v1::ArtifactChunk* c) {
          if (++*count == 1) {
            *c = Chunk(0, "hello ");
            return true;
          }
          ::raise(SIGINT);  // the user, while the next chunk is awaited
          return false;
        });
        ON_CALL(*reader, Finish())
            .WillByDefault(Return(grpc::Status(grpc::StatusCode::CANCELLED, "Cancelled")));
        return reader;
      });
  const fs::path dest = dir_ / "prof" / "profile_trace.json";
  auto got = DownloadArtifact(*connection_, kJob, "profile_trace.json", dest.string());
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kCancelled) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("interrupted"));
  EXPECT_THAT(FilesIn(dest.parent_path()), ::testing::IsEmpty());
}

// Issue 36 §6: the temp file of a download that was killed (SIGKILL: no handler runs) is removed
// by the next download of that file; one that a live download holds is left alone.
TEST_F(RemoteLogicTest, ADownloadRemovesTheTempFileAKilledOneLeft) {
  fs::create_directories(dir_ / "infer");
  // pid 2^22 + 1 is above Linux's pid_max limit: no process has it.
  const fs::path abandoned = dir_ / "infer" / ".tmp.profile.json.4194305.0";
  const fs::path other_file = dir_ / "infer" / ".tmp.report.html.4194305.0";
  const fs::path live = dir_ / "infer" / absl::StrCat(".tmp.profile.json.", ::getpid(), ".99");
  for (const fs::path& p : {abandoned, other_file, live}) std::ofstream(p) << "partial";
  EXPECT_CALL(*stub_, ReadArtifactRaw(_, ArtifactAt("profile.json", 0)))
      .WillOnce(Return(Stream<v1::ArtifactChunk>(
          {Chunk(0, "hello "), Chunk(6, "world", /*last=*/true, kHelloSha)})));
  const fs::path dest = dir_ / "infer" / "profile.json";
  auto got = DownloadArtifact(*connection_, kJob, "profile.json", dest.string());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_FALSE(fs::exists(abandoned));
  EXPECT_TRUE(fs::exists(other_file));  // another file's temp: not this download's to judge
  EXPECT_TRUE(fs::exists(live));        // its writer (this process) is alive
  EXPECT_EQ(ReadAll(dest), "hello world");
}

// Issue 36 §6: a run's last cycle trace is also its profile_trace.json: the same bytes are
// downloaded once, the second name a hard link to the first.
TEST_F(RemoteLogicTest, IdenticalArtifactsAreDownloadedOnceAndLinked) {
  EXPECT_CALL(*stub_, ReadArtifactRaw(_, ArtifactAt("profile_trace.12.json", 0)))
      .WillOnce(Return(Stream<v1::ArtifactChunk>(
          {Chunk(0, "hello "), Chunk(6, "world", /*last=*/true, kHelloSha)})));
  EXPECT_CALL(*stub_, ReadArtifactRaw(_, ArtifactAt("profile_trace.json", 0))).Times(0);
  std::map<std::string, std::string> fetched;
  v1::Artifact cycle, trace;
  for (auto [a, name] : {std::pair{&cycle, "profile_trace.12.json"},
                         std::pair{&trace, "profile_trace.json"}}) {
    a->set_name(name);
    a->set_size_bytes(11);
    a->set_sha256(kHelloSha);
  }
  const fs::path first = dir_ / "prof" / "profile_trace.12.json";
  const fs::path second = dir_ / "prof" / "profile_trace.json";
  ASSERT_TRUE(FetchArtifact(*connection_, kJob, cycle, first.string(), &fetched).ok());
  auto got = FetchArtifact(*connection_, kJob, trace, second.string(), &fetched);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, 11);
  EXPECT_EQ(ReadAll(second), "hello world");
  EXPECT_TRUE(fs::equivalent(first, second));  // one file, two names
  EXPECT_EQ(FilesIn(dir_ / "prof").size(), 2u);  // no temp left
}

// A broken download resumes from the bytes already received, not from the start.
TEST_F(RemoteLogicTest, ABrokenDownloadResumesFromTheBytesReceived) {
  InSequence order;
  EXPECT_CALL(*stub_, ReadArtifactRaw(_, ArtifactAt("profile.json", 0)))
      .WillOnce(Return(Stream<v1::ArtifactChunk>(
          {Chunk(0, "hello ")}, {grpc::StatusCode::UNAVAILABLE, "Socket closed"})));
  EXPECT_CALL(*stub_, ReadArtifactRaw(_, ArtifactAt("profile.json", 6)))
      .WillOnce(Return(
          Stream<v1::ArtifactChunk>({Chunk(6, "world", /*last=*/true, kHelloSha)})));
  const fs::path dest = dir_ / "profile.json";
  auto got = DownloadArtifact(*connection_, kJob, "profile.json", dest.string());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(ReadAll(dest), "hello world");
}

// A chunk that does not hash to the daemon's SHA-256 is DATA_LOSS, and nothing appears at the
// destination (the temp file goes too).
TEST_F(RemoteLogicTest, ACorruptedChunkIsDataLossAndLeavesNoFile) {
  EXPECT_CALL(*stub_, ReadArtifactRaw(_, _))
      .WillOnce(Return(Stream<v1::ArtifactChunk>(
          {Chunk(0, "hello "), Chunk(6, "wOrld", /*last=*/true, kHelloSha)})));
  const fs::path dest = dir_ / "profile.json";
  auto got = DownloadArtifact(*connection_, kJob, "profile.json", dest.string());
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(got.status().message(), HasSubstr("SHA-256 mismatch"));
  EXPECT_THAT(got.status().message(), HasSubstr(kHelloSha));
  EXPECT_FALSE(fs::exists(dest));
  EXPECT_TRUE(FilesIn(dir_).empty());
}

// A stream that ends cleanly before the last chunk is DATA_LOSS, not a short profile.
TEST_F(RemoteLogicTest, AShortStreamIsDataLossAndLeavesNoFile) {
  EXPECT_CALL(*stub_, ReadArtifactRaw(_, _))
      .WillOnce(Return(Stream<v1::ArtifactChunk>({Chunk(0, "hello ")})));
  const fs::path dest = dir_ / "profile.json";
  auto got = DownloadArtifact(*connection_, kJob, "profile.json", dest.string());
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(got.status().message(), "artifact profile.json: the stream ended early");
  EXPECT_FALSE(fs::exists(dest));
  EXPECT_TRUE(FilesIn(dir_).empty());
}

// The same after a resume: the error is the last stream's (it ended early), not the
// UNAVAILABLE of the stream before, which was ridden out.
TEST_F(RemoteLogicTest, AResumedStreamThatEndsEarlyIsDataLoss) {
  InSequence order;
  EXPECT_CALL(*stub_, ReadArtifactRaw(_, ArtifactAt("profile.json", 0)))
      .WillOnce(Return(Stream<v1::ArtifactChunk>(
          {Chunk(0, "hello ")}, {grpc::StatusCode::UNAVAILABLE, "Socket closed"})));
  EXPECT_CALL(*stub_, ReadArtifactRaw(_, ArtifactAt("profile.json", 6)))
      .WillOnce(Return(Stream<v1::ArtifactChunk>({Chunk(6, "wor")})));
  const fs::path dest = dir_ / "profile.json";
  auto got = DownloadArtifact(*connection_, kJob, "profile.json", dest.string());
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(got.status().message(), "artifact profile.json: the stream ended early");
  EXPECT_FALSE(fs::exists(dest));
}

// A resumed stream must carry on where the file is; a chunk anywhere else is DATA_LOSS.
TEST_F(RemoteLogicTest, AChunkAtTheWrongOffsetIsDataLoss) {
  EXPECT_CALL(*stub_, ReadArtifactRaw(_, _))
      .WillOnce(Return(Stream<v1::ArtifactChunk>({Chunk(0, "hello "), Chunk(0, "hello ")})));
  const fs::path dest = dir_ / "profile.json";
  auto got = DownloadArtifact(*connection_, kJob, "profile.json", dest.string());
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(got.status().message(), HasSubstr("chunk at offset 0, expected 6"));
  EXPECT_FALSE(fs::exists(dest));
}

// The daemon's answer keeps its code (FetchJobInputs skips a job's missing trace on NOT_FOUND)
// and names the artifact; it is not retried.
TEST_F(RemoteLogicTest, ADownloadAnswerKeepsItsCodeAndNamesTheArtifact) {
  connection_->MarkReached();
  EXPECT_CALL(*stub_, ReadArtifactRaw(_, _))
      .WillOnce(Return(Stream<v1::ArtifactChunk>(
          {}, {grpc::StatusCode::NOT_FOUND, "job job-1 has no artifact profile_trace.json"})));
  const fs::path dest = dir_ / "profile_trace.json";
  auto got = DownloadArtifact(*connection_, kJob, "profile_trace.json", dest.string());
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(got.status().message(),
            "artifact profile_trace.json: job job-1 has no artifact profile_trace.json");
  EXPECT_FALSE(fs::exists(dest));
}

// ---- remote_reader --------------------------------------------------------------------------

TEST_F(RemoteLogicTest, AReadAsksForTheJobsProfileAndReturnsTheDaemonsRenderings) {
  ReaderInvocation inv;
  inv.reader = ReaderId::kSummary;
  EXPECT_CALL(*stub_, Read(_, _, _))
      .WillOnce([](grpc::ClientContext*, const v1::ReadRequest& req, v1::ReaderResponse* resp) {
        EXPECT_TRUE(req.has_summary());
        EXPECT_EQ(req.summary().profile().job_id(), kJob);
        EXPECT_EQ(req.summary().profile().artifact(), "profile_repeat.json");
        resp->set_text("the text\n");
        resp->set_json("{\"the\":\"json\"}");
        return grpc::Status::OK;
      });
  auto out = ReadOnDaemon(*connection_, inv, {JobRef{kJob, "profile_repeat.json"}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->text, "the text\n");
  EXPECT_EQ(out->json, "{\"the\":\"json\"}");
}

TEST_F(RemoteLogicTest, AReadOfAnUnreachableDaemonNamesTheAddress) {
  EXPECT_CALL(*stub_, Read(_, _, _))
      .WillOnce(Return(grpc::Status(grpc::StatusCode::UNAVAILABLE, "connect failed")));
  auto out = ReadOnDaemon(*connection_, ReaderInvocation{}, {JobRef{kJob, ""}});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(out.status().message(),
              HasSubstr(absl::StrCat("cannot reach libreyolod at ", kAddress, ": connect failed")));
  EXPECT_THAT(out.status().message(), HasSubstr("is it running?"));
}

TEST_F(RemoteLogicTest, AReadKeepsTheDaemonsErrors) {
  EXPECT_CALL(*stub_, Read(_, _, _))
      .WillOnce(Return(grpc::Status(grpc::StatusCode::NOT_FOUND, "no job job-1")))
      .WillOnce(Return(grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "bad token")));
  auto missing = ReadOnDaemon(*connection_, ReaderInvocation{}, {JobRef{kJob, ""}});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "no job job-1");
  auto refused = ReadOnDaemon(*connection_, ReaderInvocation{}, {JobRef{kJob, ""}});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(refused.status().message(), absl::StrCat("bad token (daemon ", kAddress, ")"));
}

// An older libreyolod without the Read RPC: say so, and what to do instead.
TEST_F(RemoteLogicTest, AReadOnADaemonWithoutReadIsAFailedPrecondition) {
  EXPECT_CALL(*stub_, Read(_, _, _))
      .WillOnce(Return(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "")));
  auto out = ReadOnDaemon(*connection_, ReaderInvocation{}, {JobRef{kJob, ""}});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(out.status().message(), HasSubstr(absl::StrCat(kAddress, " predates the Read RPC")));
}

// compare takes two profiles: the wrong count is refused before anything is sent.
TEST_F(RemoteLogicTest, AReadWithTheWrongNumberOfJobsSendsNothing) {
  EXPECT_CALL(*stub_, Read(_, _, _)).Times(0);
  ReaderInvocation inv;
  inv.reader = ReaderId::kCompare;
  auto out = ReadOnDaemon(*connection_, inv, {JobRef{kJob, ""}});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace libreyolo::cli
