// JobManager's artifact seam as its own unit (server/daemon/jobs/artifact_verifier.h), over a
// real store in a temp directory: intact bytes served and remembered, tampered bytes DATA_LOSS
// and forgotten, nothing remembered for a job deleted meanwhile, a job's entries forgotten
// without touching another's.
#include "server/daemon/jobs/artifact_verifier.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "tests/support/test_files.h"

namespace libreyolo::daemon {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class ArtifactVerifierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = JobStore::Open(dir_.path() + "/state", dir_.path() + "/store");
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }
  // Job `id` with one published artifact `name` holding `data`.
  v1::Job Published(const std::string& id, const std::string& name, const std::string& data) {
    v1::Job job;
    job.set_id(id);
    absl::StatusOr<std::string> scratch = store_->ScratchDir(id);
    EXPECT_TRUE(scratch.ok()) << scratch.status();
    const std::string file = *scratch + "/" + name;
    std::ofstream(file, std::ios::binary) << data;
    absl::StatusOr<v1::Artifact> a = store_->PublishArtifact(id, file, name, 1 << 20);
    EXPECT_TRUE(a.ok()) << a.status();
    *job.add_artifacts() = *a;
    return job;
  }
  std::string PathOf(const v1::Job& job, const std::string& name) {
    return *store_->ArtifactPath(job, name);
  }

  test::TempDir dir_{"verifier"};
  std::unique_ptr<JobStore> store_;
};

TEST_F(ArtifactVerifierTest, IntactBytesAreServedAndRemembered) {
  const v1::Job job = Published("j1", "profile.json", "{}");
  ArtifactVerifier verifier(store_.get());
  ArtifactVerifier::Check check = verifier.Verify(job, "profile.json");
  ASSERT_TRUE(check.served.ok()) << check.served.status();
  EXPECT_EQ(*check.served, PathOf(job, "profile.json"));
  EXPECT_TRUE(check.checked);
  EXPECT_EQ(check.key, "j1/profile.json");
  EXPECT_FALSE(check.identity.empty());
  verifier.Record(check, true);
  EXPECT_EQ(verifier.remembered(), 1u);
  // Checked again: the same identity, still intact.
  ArtifactVerifier::Check again = verifier.Verify(job, "profile.json");
  EXPECT_TRUE(again.served.ok());
  EXPECT_EQ(again.identity, check.identity);
}

TEST_F(ArtifactVerifierTest, TamperedBytesAreDataLossAndForgotten) {
  const v1::Job job = Published("j1", "profile.json", "{\"a\": 1}");
  ArtifactVerifier verifier(store_.get());
  verifier.Record(verifier.Verify(job, "profile.json"), true);
  ASSERT_EQ(verifier.remembered(), 1u);
  std::ofstream(PathOf(job, "profile.json"), std::ios::binary | std::ios::trunc) << "{\"a\": 2}";
  ArtifactVerifier::Check check = verifier.Verify(job, "profile.json");
  ASSERT_EQ(check.served.status().code(), absl::StatusCode::kDataLoss) << check.served.status();
  verifier.Record(check, true);
  EXPECT_EQ(verifier.remembered(), 0u);
}

TEST_F(ArtifactVerifierTest, NothingIsRememberedForAJobDeletedMeanwhile) {
  const v1::Job job = Published("j1", "profile.json", "{}");
  ArtifactVerifier verifier(store_.get());
  ArtifactVerifier::Check check = verifier.Verify(job, "profile.json");
  ASSERT_TRUE(check.served.ok());
  verifier.Record(check, false);
  EXPECT_EQ(verifier.remembered(), 0u);
}

TEST_F(ArtifactVerifierTest, AnUnpublishedNameIsNotFoundAndNotChecked) {
  const v1::Job job = Published("j1", "profile.json", "{}");
  ArtifactVerifier verifier(store_.get());
  ArtifactVerifier::Check check = verifier.Verify(job, "other.json");
  EXPECT_EQ(check.served.status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(check.checked);
  verifier.Record(check, true);
  EXPECT_EQ(verifier.remembered(), 0u);
}

TEST_F(ArtifactVerifierTest, ForgetTakesOneJobsEntriesOnly) {
  const v1::Job j1 = Published("j1", "profile.json", "{}");
  const v1::Job j10 = Published("j10", "profile.json", "{}");
  ArtifactVerifier verifier(store_.get());
  verifier.Record(verifier.Verify(j1, "profile.json"), true);
  verifier.Record(verifier.Verify(j10, "profile.json"), true);
  ASSERT_EQ(verifier.remembered(), 2u);
  verifier.Forget("j1");
  EXPECT_EQ(verifier.remembered(), 1u);
  ArtifactVerifier::Check left = verifier.Verify(j10, "profile.json");
  EXPECT_TRUE(left.served.ok());
  EXPECT_THAT(left.key, HasSubstr("j10/"));
}

}  // namespace
}  // namespace libreyolo::daemon
