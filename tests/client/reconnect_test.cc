// Reconnect: which failed calls ride out a daemon restart. "Reached" belongs to the connection,
// not to one call: a download that starts while the daemon stops (its first message never
// came) still waits for the restart when the submit or the watch reached the daemon before
// (CI once saw `profile infer --remote` end CANCELLED on the third artifact of a job that
// finished during a SIGTERM drain).
#include "client/remote/daemon_connection.h"

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>

#include "gtest/gtest.h"

namespace libreyolo::cli {
namespace {

class ReconnectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("LIBREYOLO_RECONNECT_TIMEOUT_S", "30", 1);
    RemoteTarget t;
    t.address = "unix:/nonexistent/libreyolo-reconnect-test.sock";
    auto c = DaemonConnection::Open(t);
    ASSERT_TRUE(c.ok()) << c.status();
    connection_ = std::move(*c);
  }
  void TearDown() override { ::unsetenv("LIBREYOLO_RECONNECT_TIMEOUT_S"); }
  std::unique_ptr<DaemonConnection> connection_;
};

TEST_F(ReconnectTest, ADaemonNeverReachedIsNotWaitedFor) {
  Reconnect r(*connection_);
  EXPECT_FALSE(r.ShouldRetry(grpc::Status(grpc::StatusCode::UNAVAILABLE, "connect failed")));
  EXPECT_FALSE(connection_->reached());
}

TEST_F(ReconnectTest, AFreshCallOnAReachedConnectionWaitsForTheRestart) {
  {
    Reconnect earlier(*connection_);
    earlier.Reset();  // the submit or the watch had an answer
  }
  EXPECT_TRUE(connection_->reached());
  Reconnect download(*connection_);  // no message yet on this call
  EXPECT_TRUE(download.ShouldRetry(grpc::Status(grpc::StatusCode::CANCELLED, "shutting down")));
  EXPECT_TRUE(download.ShouldRetry(grpc::Status(grpc::StatusCode::UNAVAILABLE, "restarting")));
}

TEST_F(ReconnectTest, AnAnswerIsNotRetried) {
  connection_->MarkReached();
  Reconnect r(*connection_);
  EXPECT_FALSE(r.ShouldRetry(grpc::Status(grpc::StatusCode::NOT_FOUND, "no such job")));
  EXPECT_FALSE(r.ShouldRetry(grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "not yours")));
}

TEST_F(ReconnectTest, TheBudgetEndsTheWaiting) {
  ::setenv("LIBREYOLO_RECONNECT_TIMEOUT_S", "0", 1);
  connection_->MarkReached();
  Reconnect r(*connection_);
  EXPECT_FALSE(r.ShouldRetry(grpc::Status(grpc::StatusCode::UNAVAILABLE, "restarting")));
}

// A private daemon whose process ended (the gone probe says why) is not waited for: nobody
// restarts it, so a download or a watch fails at once, with the reason.
TEST_F(ReconnectTest, AGonePrivateDaemonIsNotWaitedForAndTheErrorSaysWhy) {
  connection_->MarkReached();
  bool gone = false;
  connection_->set_gone_probe([&]() -> std::optional<std::string> {
    if (!gone) return std::nullopt;
    return "the private libreyolod (pid 42) was killed by SIGKILL";
  });
  const grpc::Status broken(grpc::StatusCode::UNAVAILABLE, "Socket closed");
  {
    Reconnect r(*connection_);
    EXPECT_TRUE(r.ShouldRetry(broken));  // still running: a blip is ridden out
  }
  gone = true;
  Reconnect r(*connection_);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(r.ShouldRetry(broken));
  EXPECT_FALSE(r.ShouldRetry(grpc::Status(grpc::StatusCode::CANCELLED, "shutting down")));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(200));
  const absl::Status error = connection_->Error(broken);
  EXPECT_EQ(error.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(error.message().find("was killed by SIGKILL"), absl::string_view::npos) << error;
  // Answers are not about the daemon's process.
  EXPECT_EQ(connection_->Error(grpc::Status(grpc::StatusCode::NOT_FOUND, "no such job")).code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace libreyolo::cli
