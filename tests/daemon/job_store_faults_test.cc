// The job store under injected write failures (FaultyFileOps): a record replaced at any byte
// edge, or with its fsync, rename or directory fsync failing, is the old record or the new one,
// never a mix, and the error says why; an event append that fails leaves the log as it was;
// an artifact is written once and never replaced.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/daemon/store/job_store.h"
#include "server/daemon/store/job_store_scrub.h"
#include "tests/daemon/faulty_file_ops.h"

namespace libreyolo::daemon {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using Call = FaultyFileOps::Call;

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

v1::Job Job(const std::string& id, v1::JobState state) {
  v1::Job job;
  job.set_id(id);
  job.set_state(state);
  job.set_owner("alice");
  job.set_device("cpu");
  (*job.mutable_labels())["padding"] = std::string(300, 'p');
  return job;
}

v1::JobEvent Event(const std::string& id, int64_t seq) {
  v1::JobEvent e;
  e.set_job_id(id);
  e.set_sequence(seq);
  e.set_stage("measuring");
  return e;
}

class JobStoreFaultsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("jsf-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::unique_ptr<JobStore> Open(FileOps* ops) {
    auto store = JobStore::Open((dir_ / "state").string(), (dir_ / "store").string(), ops);
    EXPECT_TRUE(store.ok()) << store.status();
    return *std::move(store);
  }
  // No temp file left in the state directory.
  void ExpectNoTempFiles() {
    for (const auto& e : fs::recursive_directory_iterator(dir_ / "state")) {
      EXPECT_EQ(e.path().filename().string().rfind(".tmp.", 0), std::string::npos) << e.path();
    }
  }
  fs::path dir_;
};

TEST_F(JobStoreFaultsTest, ARecordReplacedAtEveryEdgeIsTheOldOrTheNew) {
  const std::string id = "20260101-0000000000000001";
  FaultyFileOps counting;
  // Count the writes of one replace, then fail it at each byte edge and at each other call.
  {
    auto store = Open(&counting);
    ASSERT_TRUE(store->PutJob(Job(id, v1::JOB_STATE_QUEUED)).ok());
  }
  const int64_t size = counting.write_sizes().at(0);
  ASSERT_GT(size, 300);
  struct Case {
    int64_t bytes;
    Call call;
    int from;
  };
  std::vector<Case> cases;
  for (const int64_t b : {int64_t{0}, int64_t{1}, size / 2, size - 1}) {
    cases.push_back({b, Call::kWrite, -1});
  }
  for (const Call c : {Call::kFsync, Call::kRename, Call::kFsyncDir}) cases.push_back({-1, c, 0});
  const fs::path record = dir_ / "state" / "jobs" / (id + ".json");
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::Message() << "bytes " << c.bytes << " call " << static_cast<int>(c.call));
    fs::remove_all(dir_);
    {
      auto store = Open(nullptr);
      ASSERT_TRUE(store->PutJob(Job(id, v1::JOB_STATE_QUEUED)).ok());
    }
    const std::string before = ReadAll(record);
    FaultyFileOps ops;
    if (c.bytes >= 0) ops.FailAfterBytes(c.bytes);
    if (c.from >= 0) ops.FailFrom(c.call, c.from);
    auto store = Open(&ops);
    const absl::Status s = store->PutJob(Job(id, v1::JOB_STATE_SUCCEEDED));
    EXPECT_FALSE(s.ok());
    const std::string after = ReadAll(record);
    // A failed directory fsync comes after the rename: the new record may already be in place
    // (not yet durable); every other failure leaves the old one.
    if (c.call == Call::kFsyncDir) {
      EXPECT_THAT(after, HasSubstr("JOB_STATE_SUCCEEDED"));
    } else {
      EXPECT_EQ(after, before);
      EXPECT_THAT(std::string(s.message()), HasSubstr(c.bytes >= 0 ? "No space" : "cannot"));
    }
    ExpectNoTempFiles();
  }
}

TEST_F(JobStoreFaultsTest, AFailedAppendLeavesTheEventLogAsItWas) {
  const std::string id = "20260101-0000000000000002";
  {
    auto store = Open(nullptr);
    ASSERT_TRUE(store->PutJob(Job(id, v1::JOB_STATE_RUNNING)).ok());
    ASSERT_TRUE(store->AppendEvent(Event(id, 1)).ok());
  }
  const fs::path log = dir_ / "state" / "events" / (id + ".jsonl");
  const std::string before = ReadAll(log);
  for (const int64_t bytes : {int64_t{0}, int64_t{1}, int64_t{20}}) {
    FaultyFileOps ops;
    ops.FailAfterBytes(bytes);
    auto store = Open(&ops);
    const absl::Status s = store->AppendEvent(Event(id, 2));
    EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
    EXPECT_EQ(ReadAll(log), before) << bytes;
  }
  FaultyFileOps ops;
  ops.FailFrom(Call::kFsync, 0);
  auto store = Open(&ops);
  EXPECT_FALSE(store->AppendEvent(Event(id, 2)).ok());
  EXPECT_EQ(ReadAll(log), before);
  // A new log whose directory entry cannot be made durable is removed again.
  const std::string other = "20260101-0000000000000003";
  FaultyFileOps dir_ops;
  dir_ops.FailFrom(Call::kFsyncDir, 0);
  auto store2 = Open(&dir_ops);
  EXPECT_FALSE(store2->AppendEvent(Event(other, 1)).ok());
  EXPECT_FALSE(fs::exists(dir_ / "state" / "events" / (other + ".jsonl")));
}

TEST_F(JobStoreFaultsTest, PublishedArtifactsAreNeverReplaced) {
  const std::string id = "20260101-0000000000000004";
  auto store = Open(nullptr);
  auto scratch = store->ScratchDir(id);
  ASSERT_TRUE(scratch.ok());
  std::ofstream(*scratch + "/a") << "first run";
  auto first = store->PublishArtifact(id, "a", "profile.json", 1 << 20);
  ASSERT_TRUE(first.ok()) << first.status();
  std::ofstream(*scratch + "/b") << "second run";
  auto second = store->PublishArtifact(id, "b", "profile.json", 1 << 20);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kAlreadyExists) << second.status();
  EXPECT_THAT(std::string(second.status().message()), HasSubstr("never replaced"));
  EXPECT_EQ(ReadAll(dir_ / "store" / id / "profile.json"), "first run");
}

TEST_F(JobStoreFaultsTest, ProbeFailsWhileTheStateDirectoryTakesNoWrites) {
  FaultyFileOps ops;
  auto store = Open(&ops);
  EXPECT_TRUE(store->Probe().ok());
  ops.FailAfterBytes(100);
  EXPECT_EQ(store->Probe().code(), absl::StatusCode::kResourceExhausted);
  ExpectNoTempFiles();
  ops.Heal();
  EXPECT_TRUE(store->Probe().ok());
  EXPECT_FALSE(fs::exists(dir_ / "state" / ".probe"));
}

// Item 6: a bit flipped in a stored artifact is DATA_LOSS to VerifyArtifact and a problem to
// the scrub; an intact store scrubs clean.
TEST_F(JobStoreFaultsTest, VerifyAndScrubFindABitFlip) {
  const std::string id = "20260101-0000000000000005";
  auto store = Open(nullptr);
  auto scratch = store->ScratchDir(id);
  ASSERT_TRUE(scratch.ok());
  std::ofstream(*scratch + "/p") << "profile bytes";
  auto artifact = store->PublishArtifact(id, "p", "profile.json", 1 << 20);
  ASSERT_TRUE(artifact.ok()) << artifact.status();
  v1::Job job = Job(id, v1::JOB_STATE_SUCCEEDED);
  *job.add_artifacts() = *artifact;
  ASSERT_TRUE(store->PutJob(job).ok());
  std::string identity;
  EXPECT_TRUE(store->VerifyArtifact(id, *artifact, &identity).ok());
  auto clean = ScrubStore((dir_ / "state").string(), (dir_ / "store").string());
  ASSERT_TRUE(clean.ok()) << clean.status();
  EXPECT_EQ(clean->artifacts, 1);
  EXPECT_TRUE(clean->problems.empty());

  {
    std::fstream f(dir_ / "store" / id / "profile.json", std::ios::in | std::ios::out);
    f.seekp(3);
    f.put('F');  // 'f' -> 'F': one bit
  }
  std::string stale = identity;
  const absl::Status st = store->VerifyArtifact(id, *artifact, &stale);
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss) << st;
  EXPECT_THAT(std::string(st.message()), HasSubstr(artifact->sha256()));
  auto dirty = ScrubStore((dir_ / "state").string(), (dir_ / "store").string());
  ASSERT_TRUE(dirty.ok());
  ASSERT_EQ(dirty->problems.size(), 1u);
  EXPECT_THAT(dirty->problems[0], HasSubstr(id + "/profile.json: corrupt"));
  std::ostringstream out, err;
  EXPECT_EQ(ScrubMain({"--state-dir", (dir_ / "state").string(), "--store-dir",
                       (dir_ / "store").string()},
                      out, err),
            1);
  EXPECT_THAT(out.str(), HasSubstr("1 problems"));
  EXPECT_EQ(ScrubMain({"--bogus"}, out, err), 2);
}

}  // namespace
}  // namespace libreyolo::daemon
