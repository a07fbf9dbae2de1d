// The names a job hands across processes (common/job/names.h): one job-id rule and one message
// for a bad id, whichever process checks it (issue 39 §3).
#include "common/job/names.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace libreyolo {
namespace {

using ::testing::HasSubstr;

TEST(JobNames, AJobIdIsUpTo64LettersDigitsDashesAndUnderscores) {
  EXPECT_TRUE(IsJobId("20261206-0123456789abcdef"));
  EXPECT_TRUE(IsJobId(std::string(kMaxJobIdBytes, 'Z')));
  EXPECT_FALSE(IsJobId(""));
  EXPECT_FALSE(IsJobId(std::string(kMaxJobIdBytes + 1, 'Z')));
  EXPECT_FALSE(IsJobId("../x"));
  EXPECT_FALSE(IsJobId("a.b"));
}

TEST(JobNames, ABadIdGetsTheOneMessageWithTheWayOut) {
  EXPECT_EQ(NotAJobIdMessage("../x"),
            "'../x' is not a job id (at most 64 bytes of letters, digits, - and _; "
            "`libreyolo jobs list` shows yours)");
  // A hostile id prints escaped and cut short.
  EXPECT_THAT(NotAJobIdMessage("\x1b[2J"), HasSubstr("'\\x1b[2J' is not a job id"));
  EXPECT_THAT(NotAJobIdMessage(std::string(500, '/')), HasSubstr("(500 bytes)"));
}

TEST(JobNames, CheckJobIdNamesTheFieldWhenGivenOne) {
  EXPECT_TRUE(CheckJobId("abc").ok());
  const absl::Status bare = CheckJobId("a b");
  EXPECT_EQ(bare.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bare.message(), NotAJobIdMessage("a b"));
  EXPECT_EQ(CheckJobId("a b", "profile.job_id").message(),
            "profile.job_id: " + NotAJobIdMessage("a b"));
}

}  // namespace
}  // namespace libreyolo
