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
}

}  // namespace
}  // namespace libreyolo
