// The daemon <-> engine worker framing (server/worker/worker_protocol.h) on a real socketpair:
// whole messages both ways, a clean end, and the corrupt streams a crashing peer can leave.
#include "server/worker/worker_protocol.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <ostream>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "libreyolo/worker/v1/worker.pb.h"

namespace libreyolo {
// A failed comparison prints the fields, not the bytes.
void PrintTo(const JobProgress& p, std::ostream* os) {
  *os << "{" << ::testing::PrintToString(p.stage) << ", " << p.done << ", " << p.total << ", "
      << ::testing::PrintToString(p.message) << "}";
}
}  // namespace libreyolo

namespace libreyolo::worker {
namespace {

namespace wv1 = ::libreyolo::worker_wire::v1;

class Pair {
 public:
  Pair() { EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fd_), 0); }
  ~Pair() {
    for (int fd : fd_) {
      if (fd >= 0) ::close(fd);
    }
  }
  int a() const { return fd_[0]; }
  int b() const { return fd_[1]; }
  void CloseA() {
    ::close(fd_[0]);
    fd_[0] = -1;
  }
  void CloseB() {
    ::close(fd_[1]);
    fd_[1] = -1;
  }

 private:
  int fd_[2] = {-1, -1};
};

TEST(WorkerProtocolTest, MessagesArriveWholeAndInOrder) {
  Pair p;
  wv1::DaemonToWorker run;
  run.mutable_run()->mutable_job()->set_id("20261201-abc");
  run.mutable_run()->set_project_dir(std::string(100000, 'x'));  // bigger than one socket write
  wv1::DaemonToWorker cancel;
  cancel.mutable_cancel()->set_job_id("20261201-abc");
  std::thread writer([&] {
    EXPECT_TRUE(WriteFrame(p.a(), run).ok());
    EXPECT_TRUE(WriteFrame(p.a(), cancel).ok());
  });
  wv1::DaemonToWorker got;
  ASSERT_TRUE(*ReadFrame(p.b(), &got));
  EXPECT_EQ(got.run().job().id(), "20261201-abc");
  EXPECT_EQ(got.run().project_dir().size(), 100000u);
  ASSERT_TRUE(*ReadFrame(p.b(), &got));
  EXPECT_TRUE(got.has_cancel());
  writer.join();
  p.CloseA();
  absl::StatusOr<bool> end = ReadFrame(p.b(), &got);
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_FALSE(*end) << "a close between frames is a clean end";
}

TEST(WorkerProtocolTest, APeerThatDiesInsideAFrameIsUnavailable) {
  Pair p;
  const char partial[] = {10, 0, 0, 0, 1, 2};  // says 10 bytes, sends 2
  ASSERT_EQ(::write(p.a(), partial, sizeof(partial)), static_cast<ssize_t>(sizeof(partial)));
  p.CloseA();
  wv1::WorkerToDaemon got;
  absl::StatusOr<bool> r = ReadFrame(p.b(), &got);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
}

TEST(WorkerProtocolTest, OversizedOrGarbageFramesAreDataLoss) {
  {
    Pair p;
    const unsigned char huge[] = {0xff, 0xff, 0xff, 0x7f};
    ASSERT_EQ(::write(p.a(), huge, sizeof(huge)), 4);
    wv1::WorkerToDaemon got;
    EXPECT_EQ(ReadFrame(p.b(), &got).status().code(), absl::StatusCode::kDataLoss);
  }
  {
    Pair p;
    const unsigned char garbage[] = {3, 0, 0, 0, 0xff, 0xff, 0xff};
    ASSERT_EQ(::write(p.a(), garbage, sizeof(garbage)), 7);
    wv1::WorkerToDaemon got;
    EXPECT_EQ(ReadFrame(p.b(), &got).status().code(), absl::StatusCode::kDataLoss);
  }
}

TEST(WorkerProtocolTest, WritingToAGonePeerIsUnavailableNotSigpipe) {
  Pair p;
  p.CloseB();
  wv1::WorkerToDaemon m;
  m.mutable_progress()->set_stage("measuring");
  absl::Status s = WriteFrame(p.a(), m);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
}

// The one conversion of a job's progress to and from worker.proto's Progress: every field lands
// in its own wire field (distinct values, so a swap shows) and comes back as it was.
TEST(WorkerProtocolTest, ProgressCrossesTheWireFieldForField) {
  const JobProgress progress{"profiling", 7, int64_t{1} << 40, "trace\nline \xc3\xa9"};
  const wv1::Progress wire = ProgressToWire(progress);
  EXPECT_EQ(wire.stage(), "profiling");
  EXPECT_EQ(wire.done(), 7);
  EXPECT_EQ(wire.total(), int64_t{1} << 40);
  EXPECT_EQ(wire.message(), "trace\nline \xc3\xa9");
  EXPECT_EQ(ProgressFromWire(wire), progress);
  // Through a frame, as the worker sends it and the daemon reads it.
  Pair p;
  wv1::WorkerToDaemon sent;
  *sent.mutable_progress() = wire;
  ASSERT_TRUE(WriteFrame(p.a(), sent).ok());
  wv1::WorkerToDaemon got;
  ASSERT_TRUE(*ReadFrame(p.b(), &got));
  ASSERT_TRUE(got.has_progress());
  EXPECT_EQ(ProgressFromWire(got.progress()), progress);
  // A stage without a count or a message: the defaults both ways.
  EXPECT_EQ(ProgressFromWire(ProgressToWire(JobProgress{"warmup", 0, 0, ""})),
            (JobProgress{"warmup", 0, 0, ""}));
  EXPECT_EQ(ProgressFromWire(wv1::Progress()), JobProgress{});
}

}  // namespace
}  // namespace libreyolo::worker
