#include "common/status/status_macros.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace libreyolo {
namespace {

absl::StatusOr<std::unique_ptr<int>> MakeInt(int v) {
  if (v < 0) return absl::InvalidArgumentError("negative");
  return std::make_unique<int>(v);
}

absl::Status Check(int v, int* calls) {
  ++*calls;
  return v < 0 ? absl::OutOfRangeError("below zero") : absl::OkStatus();
}

absl::StatusOr<int> Sum(int a, int b) {
  ASSIGN_OR_RETURN(std::unique_ptr<int> x, MakeInt(a));  // a move-only value
  ASSIGN_OR_RETURN(auto y, MakeInt(b));
  return *x + *y;
}

absl::Status Twice(int v, int* calls) {
  RETURN_IF_ERROR(Check(v, calls));
  RETURN_IF_ERROR(Check(v + 1, calls));
  return absl::OkStatus();
}

TEST(StatusMacros, AssignOrReturnAssignsOrPassesTheErrorOn) {
  EXPECT_EQ(*Sum(2, 3), 5);
  const auto bad = Sum(2, -1);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "negative");
}

TEST(StatusMacros, AssignOrReturnIntoAnExistingVariable) {
  auto f = [](int v) -> absl::StatusOr<std::string> {
    std::unique_ptr<int> p;
    ASSIGN_OR_RETURN(p, MakeInt(v));
    return std::to_string(*p);
  };
  EXPECT_EQ(*f(7), "7");
  EXPECT_FALSE(f(-7).ok());
}

TEST(StatusMacros, ReturnIfErrorEvaluatesOnceAndStopsAtTheFirstError) {
  int calls = 0;
  EXPECT_TRUE(Twice(1, &calls).ok());
  EXPECT_EQ(calls, 2);
  calls = 0;
  EXPECT_EQ(Twice(-5, &calls).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(calls, 1);
  calls = 0;
  auto in_if = [&](int v) -> absl::Status {
    if (v > 0) RETURN_IF_ERROR(Check(-v, &calls));  // one statement, safe in an unbraced if
    else
      return absl::CancelledError("else branch");
    return absl::OkStatus();
  };
  EXPECT_EQ(in_if(1).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(in_if(-1).code(), absl::StatusCode::kCancelled);
}

}  // namespace
}  // namespace libreyolo
