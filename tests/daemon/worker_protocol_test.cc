// The daemon <-> engine worker framing (server/worker/worker_protocol.h) on a real socketpair:
// whole messages both ways, a clean end, and the corrupt streams a crashing peer can leave.
#include "server/worker/worker_protocol.h"

#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "libreyolo/worker/v1/worker.pb.h"

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

}  // namespace
}  // namespace libreyolo::worker
