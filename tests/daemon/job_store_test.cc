// Tests of the daemon's job store: persistence round trips, crash recovery, quarantine of
// corrupt records, artifacts (SHA-256, size limit, path validation), job id validation, I/O
// errors, and the retention rule.
#include "server/daemon/store/job_store.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace libreyolo::daemon {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// SHA-256("abc"), FIPS 180-2 appendix B.1, and of the empty string.
constexpr char kSha256Abc[] = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
constexpr char kSha256Empty[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteAll(const std::string& path, const std::string& data, bool append = false) {
  std::ofstream out(path, std::ios::binary | (append ? std::ios::app : std::ios::trunc));
  out << data;
  ASSERT_TRUE(out.good()) << path;
}

v1::Job MakeJob(const std::string& id, v1::JobState state, int64_t create_ms = 1000,
                int64_t finish_ms = 0) {
  v1::Job job;
  job.set_id(id);
  job.set_kind(v1::JOB_KIND_INFER);
  job.set_state(state);
  job.set_owner("alice");
  (*job.mutable_labels())["team"] = "vision";
  job.set_create_time_unix_ms(create_ms);
  job.set_finish_time_unix_ms(finish_ms);
  job.mutable_request()->mutable_infer()->set_batch(4);
  return job;
}

v1::JobEvent MakeEvent(const std::string& id, int64_t seq, const std::string& stage) {
  v1::JobEvent e;
  e.set_job_id(id);
  e.set_sequence(seq);
  e.set_time_unix_ms(1000 + seq);
  e.set_state(v1::JOB_STATE_RUNNING);
  e.set_stage(stage);
  e.set_done(seq);
  e.set_total(10);
  return e;
}

absl::Status StatusOf(const absl::Status& s) { return s; }
template <typename T>
absl::Status StatusOf(const absl::StatusOr<T>& s) {
  return s.status();
}
#define ASSERT_OK(expr)                             \
  do {                                              \
    const absl::Status assert_ok_ = StatusOf(expr); \
    ASSERT_TRUE(assert_ok_.ok()) << assert_ok_;     \
  } while (false)

bool Equal(const google::protobuf::Message& a, const google::protobuf::Message& b) {
  return google::protobuf::util::MessageDifferencer::Equals(a, b);
}

std::string Joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

class JobStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "job_store_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    state_ = root_ + "/state";
    store_ = root_ + "/store";
    Reopen();
  }
  void TearDown() override {
    js_.reset();
    std::error_code ec;
    for (const auto& e : fs::recursive_directory_iterator(root_, ec)) {
      if (e.is_directory() && !e.is_symlink()) ::chmod(e.path().c_str(), 0700);
    }
    fs::remove_all(root_, ec);
  }
  void Reopen() {
    js_.reset();
    auto s = JobStore::Open(state_, store_);
    ASSERT_TRUE(s.ok()) << s.status();
    js_ = std::move(*s);
  }
  std::vector<StoredJob> Load(std::vector<std::string>* warnings) {
    auto jobs = js_->LoadAll(warnings);
    EXPECT_TRUE(jobs.ok()) << jobs.status();
    return jobs.ok() ? *std::move(jobs) : std::vector<StoredJob>{};
  }
  std::string Events(const std::string& id) { return state_ + "/events/" + id + ".jsonl"; }
  std::string Record(const std::string& id) { return state_ + "/jobs/" + id + ".json"; }

  // Writes `data` into the job's scratch dir and returns the file's path.
  std::string Scratch(const std::string& id, const std::string& file, const std::string& data) {
    auto dir = js_->ScratchDir(id);
    EXPECT_TRUE(dir.ok()) << dir.status();
    const std::string path = *dir + "/" + file;
    WriteAll(path, data);
    return path;
  }

  std::string root_, state_, store_;
  std::unique_ptr<JobStore> js_;
};

TEST_F(JobStoreTest, OpenCreatesDirectoriesWithTheirModes) {
  const mode_t old = ::umask(022);
  TearDown();
  SetUp();
  ::umask(old);
  struct stat st {};
  ASSERT_EQ(::stat(state_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat(store_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0750u);
  EXPECT_TRUE(fs::is_directory(state_ + "/jobs"));
  EXPECT_TRUE(fs::is_directory(state_ + "/events"));
  EXPECT_EQ(js_->state_dir(), state_);
  EXPECT_EQ(js_->store_dir(), store_);
}

TEST_F(JobStoreTest, RoundTripsJobsAndEvents) {
  v1::Job a = MakeJob("job-a", v1::JOB_STATE_QUEUED, 2000);
  v1::Job b = MakeJob("job_B", v1::JOB_STATE_RUNNING, 1000);
  ASSERT_OK(js_->PutJob(a));
  ASSERT_OK(js_->PutJob(b));
  a.set_state(v1::JOB_STATE_SUCCEEDED);  // replaced in place
  a.set_step_ms(12.5);
  v1::Artifact* art = a.add_artifacts();
  art->set_name("profile.json");
  art->set_size_bytes(3);
  ASSERT_OK(js_->PutJob(a));
  for (int64_t seq : {1, 2, 3}) ASSERT_OK(js_->AppendEvent(MakeEvent("job-a", seq, "x")));
  ASSERT_OK(js_->AppendEvent(MakeEvent("job_B", 1, "queued")));

  Reopen();
  std::vector<std::string> warnings;
  std::vector<StoredJob> jobs = Load(&warnings);
  EXPECT_THAT(warnings, IsEmpty());
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_TRUE(Equal(jobs[0].job, b));  // oldest created first
  EXPECT_TRUE(Equal(jobs[1].job, a));
  ASSERT_EQ(jobs[1].events.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(Equal(jobs[1].events[i], MakeEvent("job-a", static_cast<int64_t>(i) + 1, "x")));
  }
  ASSERT_EQ(jobs[0].events.size(), 1u);
  EXPECT_EQ(jobs[0].events[0].stage(), "queued");

  // One JSON object per line, with the .proto's field names.
  const std::string log = ReadAll(Events("job-a"));
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 3);
  EXPECT_THAT(log, HasSubstr("\"job_id\":\"job-a\""));
  EXPECT_THAT(ReadAll(Record("job-a")), HasSubstr("\"create_time_unix_ms\""));
}

// Issue 40 A.6: the run clock (the monotonic start and run time a wall-clock step cannot
// move) is kept in the record file beside the Job's fields and read back; the Job itself is
// unchanged, a record without one loads with none, and a malformed one is ignored.
TEST_F(JobStoreTest, KeepsARunClockBesideTheRecord) {
  const v1::Job job = MakeJob("timed", v1::JOB_STATE_SUCCEEDED, 1000);
  ASSERT_OK(js_->PutJob(job, RunClock{"3f0c-boot", 123'456'789, 1500}));
  ASSERT_OK(js_->PutJob(MakeJob("plain", v1::JOB_STATE_SUCCEEDED, 2000)));
  WriteAll(Record("odd"), R"({"id":"odd","create_time_unix_ms":"3000",)"
                          R"("libreyolod_run_clock":{"boot_id":7,"start_steady_ms":-5}})");
  Reopen();
  std::vector<std::string> warnings;
  std::vector<StoredJob> jobs = Load(&warnings);
  EXPECT_THAT(warnings, IsEmpty());
  ASSERT_EQ(jobs.size(), 3u);
  EXPECT_TRUE(Equal(jobs[0].job, job));
  ASSERT_TRUE(jobs[0].run.has_value());
  EXPECT_EQ(jobs[0].run->boot_id, "3f0c-boot");
  EXPECT_EQ(jobs[0].run->start_steady_ms, 123'456'789);
  EXPECT_EQ(jobs[0].run->ran_ms, 1500);
  EXPECT_FALSE(jobs[1].run.has_value());
  EXPECT_EQ(jobs[2].job.id(), "odd");
  EXPECT_FALSE(jobs[2].run.has_value());
  EXPECT_THAT(ReadAll(Record("timed")), HasSubstr("\"libreyolod_run_clock\":{"));
}

TEST_F(JobStoreTest, LoadsEventsInSequenceOrder) {
  ASSERT_OK(js_->PutJob(MakeJob("j", v1::JOB_STATE_RUNNING)));
  for (int64_t seq : {3, 1, 2}) ASSERT_OK(js_->AppendEvent(MakeEvent("j", seq, "m")));
  std::vector<std::string> warnings;
  auto jobs = Load(&warnings);
  ASSERT_EQ(jobs.size(), 1u);
  std::vector<int64_t> seqs;
  for (const auto& e : jobs[0].events) seqs.push_back(e.sequence());
  EXPECT_THAT(seqs, ElementsAre(1, 2, 3));
  EXPECT_THAT(warnings, IsEmpty());
}

// What a cancel on a full state filesystem frees (issue 40, item 8): the log goes, the record
// stays, a later append starts a new log; a job without a log is fine.
TEST_F(JobStoreTest, DiscardEventsDeletesTheLogAndKeepsTheRecord) {
  ASSERT_OK(js_->PutJob(MakeJob("j", v1::JOB_STATE_QUEUED)));
  for (int64_t seq : {1, 2}) ASSERT_OK(js_->AppendEvent(MakeEvent("j", seq, "queued")));
  ASSERT_OK(js_->DiscardEvents("j"));
  EXPECT_FALSE(fs::exists(Events("j")));
  ASSERT_OK(js_->DiscardEvents("j"));  // none left: OK
  ASSERT_OK(js_->AppendEvent(MakeEvent("j", 3, "cancelled")));
  std::vector<std::string> warnings;
  auto jobs = Load(&warnings);
  ASSERT_EQ(jobs.size(), 1u);
  ASSERT_EQ(jobs[0].events.size(), 1u);
  EXPECT_EQ(jobs[0].events[0].sequence(), 3);
  EXPECT_EQ(js_->DiscardEvents("../x").code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(JobStoreTest, RecoversFromACrashMidWrite) {
  const v1::Job job = MakeJob("j1", v1::JOB_STATE_RUNNING);
  ASSERT_OK(js_->PutJob(job));
  ASSERT_OK(js_->AppendEvent(MakeEvent("j1", 1, "warmup")));
  ASSERT_OK(js_->AppendEvent(MakeEvent("j1", 2, "warmup")));
  // The crash: a replacement record half written to its temp file, an event line cut short,
  // and a running job's scratch outputs.
  WriteAll(state_ + "/jobs/.tmp.j1.json.Ab12Cd", "{\"id\":\"j1\",\"sta");
  WriteAll(Events("j1"), "{\"job_id\":\"j1\",\"sequence\":\"3\",\"sta", /*append=*/true);
  Scratch("j1", "profile.json", "partial");

  Reopen();
  std::vector<std::string> warnings;
  auto jobs = Load(&warnings);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_TRUE(Equal(jobs[0].job, job));  // the old record, whole
  ASSERT_EQ(jobs[0].events.size(), 2u);
  EXPECT_THAT(Joined(warnings), HasSubstr("j1.jsonl:3: dropped the last event line"));
  EXPECT_FALSE(fs::exists(state_ + "/jobs/.tmp.j1.json.Ab12Cd"));
  EXPECT_FALSE(fs::exists(store_ + "/.tmp/j1"));
  EXPECT_TRUE(fs::is_directory(store_ + "/.tmp"));

  // The torn tail was cut off: the next append is clean and loads without warnings.
  ASSERT_OK(js_->AppendEvent(MakeEvent("j1", 3, "measuring")));
  warnings.clear();
  jobs = Load(&warnings);
  EXPECT_THAT(warnings, IsEmpty());
  ASSERT_EQ(jobs.size(), 1u);
  ASSERT_EQ(jobs[0].events.size(), 3u);
  EXPECT_EQ(jobs[0].events[2].stage(), "measuring");
}

TEST_F(JobStoreTest, AppendAfterATornLineStartsOnANewLine) {
  ASSERT_OK(js_->PutJob(MakeJob("j", v1::JOB_STATE_RUNNING)));
  ASSERT_OK(js_->AppendEvent(MakeEvent("j", 1, "a")));
  WriteAll(Events("j"), "{\"job_id\":\"j\",\"seq", /*append=*/true);  // no LoadAll since
  ASSERT_OK(js_->AppendEvent(MakeEvent("j", 2, "b")));
  std::vector<std::string> warnings;
  auto jobs = Load(&warnings);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].events.size(), 2u);
  EXPECT_THAT(Joined(warnings), HasSubstr("j.jsonl:2: skipped an unparsable event line"));
}

TEST_F(JobStoreTest, GarbledLinesAreSkippedWithFileAndLine) {
  ASSERT_OK(js_->PutJob(MakeJob("j", v1::JOB_STATE_RUNNING)));
  ASSERT_OK(js_->AppendEvent(MakeEvent("j", 1, "a")));
  WriteAll(Events("j"), "this is not json\n", /*append=*/true);
  ASSERT_OK(js_->AppendEvent(MakeEvent("j", 2, "b")));
  WriteAll(Events("j"), "{\"job_id\":\"j\",\"sequence\":\"3\",\"stage\":\n", /*append=*/true);

  std::vector<std::string> warnings;
  auto jobs = Load(&warnings);
  ASSERT_EQ(jobs.size(), 1u);
  ASSERT_EQ(jobs[0].events.size(), 2u);
  EXPECT_EQ(jobs[0].events[1].stage(), "b");
  const std::string all = Joined(warnings);
  EXPECT_THAT(all, HasSubstr(Events("j") + ":2: skipped an unparsable event line"));
  EXPECT_THAT(all, HasSubstr(Events("j") + ":4: dropped the last event line"));
}

TEST_F(JobStoreTest, CorruptRecordsAreQuarantined) {
  ASSERT_OK(js_->PutJob(MakeJob("good", v1::JOB_STATE_SUCCEEDED)));
  WriteAll(Record("bad"), "{\"id\": \"bad\", \"state\": ");
  WriteAll(Record("renamed"), "{\"id\": \"other\"}\n");  // id does not match the file name
  WriteAll(Events("ghost"), "{\"job_id\":\"ghost\",\"sequence\":\"1\"}\n");  // no record

  std::vector<std::string> warnings;
  auto jobs = Load(&warnings);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].job.id(), "good");
  EXPECT_FALSE(fs::exists(Record("bad")));
  EXPECT_FALSE(fs::exists(Record("renamed")));
  EXPECT_FALSE(fs::exists(Events("ghost")));
  EXPECT_TRUE(fs::exists(state_ + "/corrupt/bad.json"));
  EXPECT_TRUE(fs::exists(state_ + "/corrupt/renamed.json"));
  EXPECT_TRUE(fs::exists(state_ + "/corrupt/ghost.jsonl"));
  const std::string all = Joined(warnings);
  EXPECT_THAT(all, HasSubstr(Record("bad") + ": cannot parse the job record"));
  EXPECT_THAT(all, HasSubstr("does not match its name"));
  EXPECT_THAT(all, HasSubstr("an event log without a job record"));

  // A second corrupt record of the same name does not overwrite the first one.
  WriteAll(Record("bad"), "garbage");
  warnings.clear();
  jobs = Load(&warnings);
  EXPECT_EQ(jobs.size(), 1u);
  EXPECT_TRUE(fs::exists(state_ + "/corrupt/bad.json.1"));
  EXPECT_EQ(ReadAll(state_ + "/corrupt/bad.json.1"), "garbage");
}

TEST_F(JobStoreTest, PublishArtifactMovesTheFileWithSizeAndSha256) {
  const std::string src = Scratch("j", "out.json", "abc");
  auto art = js_->PublishArtifact("j", src, "profile.json", 1024);
  ASSERT_TRUE(art.ok()) << art.status();
  EXPECT_EQ(art->name(), "profile.json");
  EXPECT_EQ(art->size_bytes(), 3);
  EXPECT_EQ(art->sha256(), kSha256Abc);
  EXPECT_FALSE(fs::exists(src));
  EXPECT_EQ(ReadAll(store_ + "/j/profile.json"), "abc");
  EXPECT_EQ(*js_->ArtifactDir("j"), store_ + "/j");

  // A bare name is looked up in the job's scratch dir; a republish of a name is refused and
  // leaves the published artifact as it was (written once: issue 23).
  Scratch("j", "trace.json", "");
  art = js_->PublishArtifact("j", "trace.json", "profile.json", 1024);
  EXPECT_EQ(art.status().code(), absl::StatusCode::kAlreadyExists) << art.status();
  EXPECT_EQ(ReadAll(store_ + "/j/profile.json"), "abc");
  art = js_->PublishArtifact("j", "trace.json", "trace.json", 1024);
  ASSERT_TRUE(art.ok()) << art.status();
  EXPECT_EQ(art->size_bytes(), 0);
  EXPECT_EQ(art->sha256(), kSha256Empty);

  js_->DiscardScratch("j");
  EXPECT_FALSE(fs::exists(store_ + "/.tmp/j"));
}

TEST_F(JobStoreTest, PublishArtifactEnforcesTheSizeLimit) {
  const std::string src = Scratch("j", "out.json", std::string(100, 'x'));
  auto art = js_->PublishArtifact("j", src, "profile.json", 99);
  EXPECT_EQ(art.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(art.status().message(), HasSubstr("100 bytes, over the limit of 99 bytes"));
  EXPECT_FALSE(fs::exists(store_ + "/j/profile.json"));
  art = js_->PublishArtifact("j", src, "profile.json", 100);  // exactly at the limit
  EXPECT_TRUE(art.ok()) << art.status();
}

TEST_F(JobStoreTest, PublishArtifactRejectsBadInputs) {
  const std::string src = Scratch("j", "out.json", "abc");
  for (const char* name : {"../x", "a/b", "", ".hidden", "..", "/etc/passwd"}) {
    EXPECT_EQ(js_->PublishArtifact("j", src, name, 1024).status().code(),
              absl::StatusCode::kInvalidArgument)
        << name;
  }
  EXPECT_EQ(js_->PublishArtifact("j", "nope.json", "profile.json", 1024).status().code(),
            absl::StatusCode::kNotFound);
  ASSERT_EQ(::symlink(src.c_str(), (*js_->ScratchDir("j") + "/link.json").c_str()), 0);
  EXPECT_FALSE(js_->PublishArtifact("j", "link.json", "profile.json", 1024).ok());
  EXPECT_TRUE(fs::exists(src));
}

TEST_F(JobStoreTest, ArtifactPathAcceptsOnlyTheJobsArtifacts) {
  v1::Job job = MakeJob("j", v1::JOB_STATE_SUCCEEDED);
  *job.add_artifacts() = *js_->PublishArtifact("j", Scratch("j", "p", "abc"), "profile.json", 1024);
  job.add_artifacts()->set_name("../x");  // a tampered record gains nothing
  job.add_artifacts()->set_name("/etc/passwd");
  job.add_artifacts()->set_name("missing.json");

  auto path = js_->ArtifactPath(job, "profile.json");
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(*path, store_ + "/j/profile.json");
  for (const char* name : {"../x", "/etc/passwd", "other.json", "missing.json", "", ".",
                           "j/profile.json", "profile.json/"}) {
    const auto bad = js_->ArtifactPath(job, name);
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kNotFound) << name;
  }
  EXPECT_THAT(js_->ArtifactPath(job, "other.json").status().message(),
              HasSubstr("not one of the job's artifacts"));
}

TEST_F(JobStoreTest, ArtifactPathRefusesSymlinkEscapes) {
  const std::string outside = root_ + "/outside";
  fs::create_directories(outside);
  WriteAll(outside + "/profile.json", "secret");

  // A symlinked artifact inside a real job directory.
  v1::Job job = MakeJob("j", v1::JOB_STATE_SUCCEEDED);
  job.add_artifacts()->set_name("profile.json");
  job.add_artifacts()->set_name("passwd");
  ASSERT_OK(js_->ArtifactDir("j"));
  ASSERT_EQ(::symlink((outside + "/profile.json").c_str(), (store_ + "/j/profile.json").c_str()),
            0);
  ASSERT_EQ(::symlink("/etc/passwd", (store_ + "/j/passwd").c_str()), 0);
  EXPECT_EQ(js_->ArtifactPath(job, "profile.json").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(js_->ArtifactPath(job, "passwd").status().code(), absl::StatusCode::kNotFound);

  // A job directory that is itself a symlink out of the store.
  v1::Job k = MakeJob("k", v1::JOB_STATE_SUCCEEDED);
  k.add_artifacts()->set_name("profile.json");
  ASSERT_EQ(::symlink(outside.c_str(), (store_ + "/k").c_str()), 0);
  EXPECT_EQ(js_->ArtifactPath(k, "profile.json").status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(js_->ArtifactDir("k").ok());  // nor is it used to publish into
}

TEST_F(JobStoreTest, JobIdsAreValidatedEverywhere) {
  const std::string too_long(65, 'a');
  for (const std::string& id : {std::string(""), std::string("../x"), std::string("a/b"),
                                std::string("."), std::string(".."), std::string("a b"),
                                std::string("a.json"), too_long, std::string("a\0b", 3)}) {
    SCOPED_TRACE(id);
    v1::Job job = MakeJob(id, v1::JOB_STATE_QUEUED);
    const auto code = absl::StatusCode::kInvalidArgument;
    EXPECT_EQ(js_->PutJob(job).code(), code);
    EXPECT_EQ(js_->AppendEvent(MakeEvent(id, 1, "q")).code(), code);
    EXPECT_EQ(js_->ArtifactDir(id).status().code(), code);
    EXPECT_EQ(js_->ScratchDir(id).status().code(), code);
    EXPECT_EQ(js_->PublishArtifact(id, "f", "profile.json", 10).status().code(), code);
    EXPECT_EQ(js_->ArtifactPath(job, "profile.json").status().code(), code);
    EXPECT_EQ(js_->DeleteJob(id).code(), code);
    js_->DiscardScratch(id);  // a no-op, not a crash
  }
  EXPECT_THAT(js_->PutJob(MakeJob("../x", v1::JOB_STATE_QUEUED)).message(),
              HasSubstr("is not a job id"));
  EXPECT_TRUE(js_->PutJob(MakeJob(std::string(64, 'Z'), v1::JOB_STATE_QUEUED)).ok());
  EXPECT_TRUE(js_->PutJob(MakeJob("Ab_9-", v1::JOB_STATE_QUEUED)).ok());
  EXPECT_FALSE(fs::exists(root_ + "/x.json"));
}

TEST_F(JobStoreTest, UnwritableDirectoriesGiveClearErrors) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
  const std::string locked = root_ + "/locked";
  fs::create_directories(locked);
  ASSERT_EQ(::chmod(locked.c_str(), 0500), 0);
  auto s = JobStore::Open(locked + "/state", store_);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.status().message(), HasSubstr(locked + "/state"));
  EXPECT_THAT(s.status().message(), HasSubstr("Permission denied"));
  s = JobStore::Open(state_, locked);  // exists, but cannot be written
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.status().message(), HasSubstr(locked));

  // The directory becomes read-only under an open store.
  ASSERT_EQ(::chmod((state_ + "/jobs").c_str(), 0500), 0);
  const absl::Status st = js_->PutJob(MakeJob("j", v1::JOB_STATE_QUEUED));
  EXPECT_EQ(st.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(st.message(), HasSubstr(state_ + "/jobs"));
  EXPECT_THAT(st.message(), HasSubstr("Permission denied"));
}

TEST_F(JobStoreTest, AFileInPlaceOfADirectoryGivesAClearError) {
  WriteAll(root_ + "/file", "x");
  auto s = JobStore::Open(root_ + "/file/state", store_);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.status().message(), HasSubstr(root_ + "/file"));
  EXPECT_THAT(s.status().message(), HasSubstr("Not a directory"));
  s = JobStore::Open(state_, root_ + "/file");
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.status().message(), HasSubstr("unusable store directory"));
}

// A full disk, simulated with RLIMIT_FSIZE (EFBIG, with SIGXFSZ ignored): the writes fail
// part way and leave neither a temp file nor a partial line behind.
TEST_F(JobStoreTest, AFullDiskFailsCleanly) {
  v1::Job job = MakeJob("j", v1::JOB_STATE_RUNNING);
  ASSERT_OK(js_->PutJob(job));
  ASSERT_OK(js_->AppendEvent(MakeEvent("j", 1, "a")));
  const std::string record = ReadAll(Record("j"));
  const std::string log = ReadAll(Events("j"));

  struct rlimit old {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  auto* old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old;
  small.rlim_cur = log.size() + 64;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  v1::Job bigger = job;
  bigger.set_error(std::string(4096, 'e'));
  const absl::Status put = js_->PutJob(bigger);
  v1::JobEvent event = MakeEvent("j", 2, "b");
  event.set_message(std::string(4096, 'm'));
  const absl::Status append = js_->AppendEvent(event);
  auto art = js_->PublishArtifact("j", Scratch("j", "p", "abc"), "profile.json", 1024);
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &old), 0);
  std::signal(SIGXFSZ, old_handler);

  EXPECT_FALSE(put.ok());
  EXPECT_THAT(put.message(), HasSubstr(state_ + "/jobs/.tmp.j.json."));
  EXPECT_THAT(put.message(), HasSubstr("File too large"));
  EXPECT_FALSE(append.ok());
  EXPECT_THAT(append.message(), HasSubstr(Events("j")));
  EXPECT_TRUE(art.ok()) << art.status();  // a rename writes no data
  EXPECT_EQ(ReadAll(Record("j")), record);
  EXPECT_EQ(ReadAll(Events("j")), log);
  for (const auto& e : fs::directory_iterator(state_ + "/jobs")) {
    EXPECT_EQ(e.path().filename(), "j.json");
  }
  js_->DiscardScratch("j");
  std::vector<std::string> warnings;
  auto jobs = Load(&warnings);
  EXPECT_THAT(warnings, IsEmpty());
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_TRUE(Equal(jobs[0].job, job));
  EXPECT_EQ(jobs[0].events.size(), 1u);
}

TEST_F(JobStoreTest, DeleteJobRemovesRecordEventsAndArtifacts) {
  ASSERT_OK(js_->PutJob(MakeJob("j", v1::JOB_STATE_SUCCEEDED)));
  ASSERT_OK(js_->PutJob(MakeJob("keep", v1::JOB_STATE_SUCCEEDED)));
  ASSERT_OK(js_->AppendEvent(MakeEvent("j", 1, "done")));
  ASSERT_OK(js_->PublishArtifact("j", Scratch("j", "p", "abc"), "profile.json", 10));
  Scratch("j", "left", "x");
  ASSERT_OK(js_->DeleteJob("j"));
  EXPECT_FALSE(fs::exists(Record("j")));
  EXPECT_FALSE(fs::exists(Events("j")));
  EXPECT_FALSE(fs::exists(store_ + "/j"));
  EXPECT_FALSE(fs::exists(store_ + "/.tmp/j"));
  EXPECT_TRUE(js_->DeleteJob("j").ok());  // idempotent
  std::vector<std::string> warnings;
  auto jobs = Load(&warnings);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].job.id(), "keep");
  EXPECT_THAT(warnings, IsEmpty());
}

TEST_F(JobStoreTest, LoadAllWithoutAWarningsVector) {
  WriteAll(Record("bad"), "{");
  auto jobs = js_->LoadAll(nullptr);
  ASSERT_TRUE(jobs.ok());
  EXPECT_TRUE(jobs->empty());
  EXPECT_TRUE(fs::exists(state_ + "/corrupt/bad.json"));
}

// ---- Retention -------------------------------------------------------------------------------

constexpr int64_t kHour = 3600 * 1000;
constexpr int64_t kNow = 1000 * kHour;

TEST(JobsToExpireTest, AgeRule) {
  const std::vector<v1::Job> jobs = {
      MakeJob("new", v1::JOB_STATE_SUCCEEDED, 0, kNow - 1 * kHour),
      MakeJob("old", v1::JOB_STATE_FAILED, 0, kNow - 30 * kHour),
      MakeJob("older", v1::JOB_STATE_CANCELLED, 0, kNow - 50 * kHour),
      MakeJob("edge", v1::JOB_STATE_SUCCEEDED, 0, kNow - 24 * kHour),  // not before the cutoff
      MakeJob("queued", v1::JOB_STATE_QUEUED, kNow - 90 * kHour),
      MakeJob("running", v1::JOB_STATE_RUNNING, kNow - 90 * kHour),
  };
  EXPECT_THAT(JobsToExpire(jobs, kNow, 24, 0), ElementsAre("older", "old"));
  EXPECT_THAT(JobsToExpire(jobs, kNow, 0, 0), IsEmpty());  // 0 = keep
  EXPECT_THAT(JobsToExpire(jobs, kNow, 1000000, 0), IsEmpty());
  EXPECT_THAT(JobsToExpire(jobs, kNow, std::numeric_limits<int64_t>::max(), 0), IsEmpty());
}

TEST(JobsToExpireTest, CountRule) {
  std::vector<v1::Job> jobs;
  for (int i = 0; i < 5; ++i) {
    jobs.push_back(
        MakeJob("f" + std::to_string(i), v1::JOB_STATE_SUCCEEDED, 0, kNow - (10 - i) * kHour));
  }
  jobs.push_back(MakeJob("q", v1::JOB_STATE_QUEUED, kNow - 100 * kHour));
  jobs.push_back(MakeJob("r", v1::JOB_STATE_RUNNING, kNow - 100 * kHour));
  EXPECT_THAT(JobsToExpire(jobs, kNow, 0, 3), ElementsAre("f0", "f1"));
  EXPECT_THAT(JobsToExpire(jobs, kNow, 0, 5), IsEmpty());
  EXPECT_THAT(JobsToExpire(jobs, kNow, 0, 1), ElementsAre("f0", "f1", "f2", "f3"));
  // Both rules: the age rule takes f0..f2, the cap alone would take f0 only.
  EXPECT_THAT(JobsToExpire(jobs, kNow, 7, 4), ElementsAre("f0", "f1", "f2"));
  // The cap takes more than the age rule.
  EXPECT_THAT(JobsToExpire(jobs, kNow, 9, 2), ElementsAre("f0", "f1", "f2"));
}

TEST(JobsToExpireTest, NeverQueuedOrRunningAndFinishTimeFallsBackToCreation) {
  const std::vector<v1::Job> jobs = {
      MakeJob("q", v1::JOB_STATE_QUEUED, 1), MakeJob("r", v1::JOB_STATE_RUNNING, 1),
      MakeJob("u", v1::JOB_STATE_UNSPECIFIED, 1),
      MakeJob("recovered", v1::JOB_STATE_FAILED, 2, 0),  // failed on recovery, no finish time
  };
  EXPECT_THAT(JobsToExpire(jobs, kNow, 1, 0), ElementsAre("recovered"));
  EXPECT_THAT(JobsToExpire(jobs, kNow, 0, 1), IsEmpty());
  EXPECT_THAT(JobsToExpire({}, kNow, 1, 1), IsEmpty());
}

}  // namespace
}  // namespace libreyolo::daemon
