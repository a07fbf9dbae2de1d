#include "common/status/exit_code.h"

#include <gtest/gtest.h>

namespace libreyolo {
namespace {

// The table of README.md "Exit codes", code by code: the client, the engine tool and the daemon's
// job records all answer from here (they disagreed before: UNAVAILABLE was 2 in the client, 1
// in the engine tool and the daemon; OUT_OF_RANGE was 3 there and 2 or 1 in the readers).
TEST(ExitCodeForStatus, EveryStatusCode) {
  using C = absl::StatusCode;
  const struct {
    C code;
    int exit;
  } kTable[] = {
      {C::kOk, 0},
      {C::kOutOfRange, 3},
      {C::kInvalidArgument, 2},
      {C::kNotFound, 2},
      {C::kFailedPrecondition, 2},
      {C::kAlreadyExists, 2},
      {C::kPermissionDenied, 2},
      {C::kUnauthenticated, 2},
      {C::kUnavailable, 2},
      {C::kDeadlineExceeded, 2},
      {C::kResourceExhausted, 2},
      {C::kDataLoss, 1},
      {C::kInternal, 1},
      {C::kUnknown, 1},
      {C::kCancelled, 1},
      {C::kAborted, 1},
      {C::kUnimplemented, 1},
  };
  for (const auto& row : kTable) {
    EXPECT_EQ(ExitCodeForStatus(absl::Status(row.code, row.code == C::kOk ? "" : "x")), row.exit)
        << absl::StatusCodeToString(row.code);
  }
  EXPECT_EQ(kExitOk, 0);
  EXPECT_EQ(kExitAnalysisFailed, 1);
  EXPECT_EQ(kExitUsage, 2);
  EXPECT_EQ(kExitNoProfile, 3);
  EXPECT_EQ(kExitInterrupted, 130);
}

// libreyolod's own exit codes live in the same header (issue 22: server/daemon/main.cc had a
// switch of its own): docs/deploy.md "Start-up errors".
TEST(ExitCode, DaemonStartFailures) {
  using C = absl::StatusCode;
  EXPECT_EQ(DaemonExitCodeForStartStatus(absl::Status(C::kAlreadyExists, "port in use")), 3);
  for (C c : {C::kInvalidArgument, C::kNotFound, C::kFailedPrecondition, C::kPermissionDenied,
              C::kOutOfRange}) {
    EXPECT_EQ(DaemonExitCodeForStartStatus(absl::Status(c, "x")), 2) << absl::StatusCodeToString(c);
  }
  for (C c : {C::kInternal, C::kUnknown, C::kResourceExhausted, C::kUnavailable}) {
    EXPECT_EQ(DaemonExitCodeForStartStatus(absl::Status(c, "x")), 1) << absl::StatusCodeToString(c);
  }
}

}  // namespace
}  // namespace libreyolo
