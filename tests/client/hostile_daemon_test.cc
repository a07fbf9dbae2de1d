// The client against a hostile daemon (issue 40 A.1): a daemon that is compromised, reached over
// a plaintext path, or simply not the one meant (a wrong LIBREYOLO_REMOTE) answers job records
// whose artifact names are paths ("../../escape1.txt", an absolute path), rank names out of any
// world, or job ids that are not ids. The real `libreyolo` commands (RunCli, in process) talk
// to such a daemon served here on a Unix socket; whatever they do, no file appears outside
// --project, nothing is written at all, and the exit code is 1 with the offending name
// escaped. The pure rules (CheckJobAnswer, ArtifactDestination) are checked case by case.
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <csignal>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/app/cli.h"
#include "client/remote/daemon_answer.h"
#include "client/remote/job_watch.h"
#include "common/io/sha256.h"
#include "common/io/trial_artifacts.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "libreyolo/profiler/v1/profiler.grpc.pb.h"

namespace libreyolo::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kPayload[] = "echo pwned\n";

// Answers every job with the artifact names it was given, and serves kPayload (with its true
// SHA-256, so a client that writes where it is told succeeds) for any of them.
class HostileDaemon final : public v1::ProfilerService::Service {
 public:
  HostileDaemon(std::vector<std::string> names, std::string sha, std::string id = "")
      : names_(std::move(names)), sha_(std::move(sha)), id_(std::move(id)) {}

  grpc::Status SubmitJob(grpc::ServerContext*, const v1::SubmitJobRequest*, v1::Job* job) override {
    Fill("job-1", v1::JOB_STATE_QUEUED, job);
    job->clear_artifacts();
    return grpc::Status::OK;
  }
  grpc::Status WatchJob(grpc::ServerContext*, const v1::WatchJobRequest* req,
                        grpc::ServerWriter<v1::JobEvent>* w) override {
    v1::JobEvent e;
    e.set_job_id(req->job_id());
    e.set_sequence(1);
    e.set_state(v1::JOB_STATE_SUCCEEDED);
    e.set_stage("done");
    w->Write(e);
    return grpc::Status::OK;
  }
  grpc::Status GetJob(grpc::ServerContext*, const v1::GetJobRequest* req, v1::Job* job) override {
    Fill(req->job_id(), v1::JOB_STATE_SUCCEEDED, job);
    return grpc::Status::OK;
  }
  grpc::Status DeleteJob(grpc::ServerContext*, const v1::DeleteJobRequest* req,
                         v1::Job* job) override {
    Fill(req->job_id(), v1::JOB_STATE_SUCCEEDED, job);
    return grpc::Status::OK;
  }
  grpc::Status ReadArtifact(grpc::ServerContext* ctx, const v1::ReadArtifactRequest* req,
                            grpc::ServerWriter<v1::ArtifactChunk>* w) override {
    ++reads;
    if (!interrupt_on.empty() && req->name() == interrupt_on) {
      // The user presses Ctrl-C while this file downloads (the client shares this process):
      // nothing more comes until the client gives up on the call.
      ::raise(SIGINT);
      for (int i = 0; i < 500 && !ctx->IsCancelled(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled by the client");
    }
    v1::ArtifactChunk c;
    c.set_offset(0);
    c.set_data(kPayload);
    c.set_total_size(static_cast<int64_t>(sizeof(kPayload) - 1));
    c.set_last(true);
    c.set_sha256(sha_);
    w->Write(c);
    return grpc::Status::OK;
  }

  int reads = 0;
  std::string interrupt_on;  // an artifact whose download the user interrupts

 private:
  void Fill(const std::string& asked, v1::JobState state, v1::Job* job) const {
    job->set_id(id_.empty() ? asked : id_);
    job->set_kind(v1::JOB_KIND_INFER);
    job->set_state(state);
    job->set_device("cpu");
    for (const std::string& n : names_) {
      v1::Artifact* a = job->add_artifacts();
      a->set_name(n);
      a->set_size_bytes(static_cast<int64_t>(sizeof(kPayload) - 1));
      // The interrupted one differs from the others (identical artifacts are fetched once).
      a->set_sha256(n == interrupt_on ? std::string(64, 'a') : sha_);
    }
  }

  std::vector<std::string> names_;
  std::string sha_;
  std::string id_;
};

class HostileDaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            absl::StrCat("libreyolo-hostile-", ::getpid(), "-",
                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    // root/a/b/project: "../../escape1.txt" from project/infer lands in root/a/b, beside it.
    project_ = root_ / "a" / "b" / "project";
    fs::create_directories(project_);
    const fs::path payload = root_ / "payload";
    std::ofstream(payload) << kPayload;
    sha_ = *Sha256File(payload.string());
    fs::remove(payload);
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
    fs::remove_all(root_);
  }

  void Serve(std::vector<std::string> names, std::string id = "") {
    daemon_ = std::make_unique<HostileDaemon>(std::move(names), sha_, std::move(id));
    socket_ = (root_ / "d.sock").string();
    grpc::ServerBuilder b;
    b.AddListeningPort("unix:" + socket_, grpc::InsecureServerCredentials());
    b.RegisterService(daemon_.get());
    server_ = b.BuildAndStart();
    ASSERT_NE(server_, nullptr);
  }

  int Run(std::vector<std::string> args) {
    for (const std::string& a : {std::string("--remote"), "unix:" + socket_,
                                 std::string("--project"), project_.string()}) {
      args.push_back(a);
    }
    out_.str("");
    err_.str("");
    return RunCli(args, out_, err_);
  }

  // Every regular file under root_, but the socket.
  std::vector<std::string> FilesWritten() const {
    std::vector<std::string> files;
    for (const auto& e : fs::recursive_directory_iterator(root_)) {
      if (e.is_regular_file()) files.push_back(e.path().string());
    }
    return files;
  }

  fs::path root_, project_;
  std::string sha_, socket_;
  std::unique_ptr<HostileDaemon> daemon_;
  std::unique_ptr<grpc::Server> server_;
  std::ostringstream out_, err_;
};

TEST_F(HostileDaemonTest, JobsDownloadWritesNoNameThatClimbsOut) {
  Serve({"profile.json", "../../escape1.txt"});
  EXPECT_EQ(Run({"jobs", "download", "job-1"}), 1) << err_.str();
  EXPECT_THAT(err_.str(), HasSubstr("'../../escape1.txt' is not a plain file name"));
  EXPECT_THAT(err_.str(), HasSubstr("nothing was written"));
  // Nothing at all: the names are checked before the first file, so profile.json is not
  // written either.
  EXPECT_THAT(FilesWritten(), ::testing::IsEmpty());
  EXPECT_EQ(daemon_->reads, 0);
}

TEST_F(HostileDaemonTest, JobsDownloadWritesNoAbsolutePath) {
  const std::string target = (root_ / "bashrc").string();
  Serve({target});
  EXPECT_EQ(Run({"jobs", "download", "job-1"}), 1) << err_.str();
  EXPECT_FALSE(fs::exists(target));
  EXPECT_THAT(FilesWritten(), ::testing::IsEmpty());
}

TEST_F(HostileDaemonTest, ProfileInferRemoteWritesNoNameThatClimbsOut) {
  Serve({"profile.json", "../../escape1.txt"});
  EXPECT_EQ(Run({"profile", "infer", "--device", "cpu"}), 1) << err_.str();
  EXPECT_THAT(err_.str(), HasSubstr("is not a plain file name"));
  EXPECT_FALSE(fs::exists(root_ / "a" / "b" / "escape1.txt"));
  EXPECT_THAT(FilesWritten(), ::testing::IsEmpty());
}

TEST_F(HostileDaemonTest, AJobIdThatIsNotAnIdIsRefusedBeforeItIsPrintedOrUsed) {
  Serve({"profile.json"}, "../x\x1b[2J");
  EXPECT_EQ(Run({"profile", "infer", "--device", "cpu"}), 1) << err_.str();
  EXPECT_THAT(err_.str(), HasSubstr("the job id"));
  EXPECT_THAT(err_.str(), Not(HasSubstr("\x1b")));
  EXPECT_THAT(FilesWritten(), ::testing::IsEmpty());
}

TEST_F(HostileDaemonTest, AWellFormedJobStillDownloads) {
  // The control: the same daemon with plain names writes them under the project.
  Serve({"profile.json", "profile_trace.json"});
  EXPECT_EQ(Run({"jobs", "download", "job-1"}), 0) << err_.str();
  EXPECT_TRUE(fs::exists(project_ / "infer" / "profile.json"));
  EXPECT_TRUE(fs::exists(project_ / "infer" / "profile_trace.json"));
}

// Issue 36 §6: Ctrl-C during the final download of `profile infer` (the job has ended, its files
// are coming) was swallowed: exit 0, no message. It stops the download in flight, keeps the files
// already written, leaves nothing of the one in flight, and exits 130 naming the command that
// fetches the rest.
TEST_F(HostileDaemonTest, CtrlCDuringTheFinalDownloadExits130AndSaysHowToFetchTheRest) {
  Serve({"profile.json", "profile_trace.json"});
  daemon_->interrupt_on = "profile_trace.json";
  ClearInterrupt();
  const int code = Run({"profile", "infer", "--device", "cpu"});
  ClearInterrupt();
  EXPECT_EQ(code, 130) << err_.str();
  EXPECT_THAT(err_.str(), HasSubstr("interrupted during the download of job job-1"));
  EXPECT_THAT(err_.str(), HasSubstr("libreyolo jobs download job-1 --project"));
  EXPECT_TRUE(fs::exists(project_ / "infer" / "profile.json"));  // written before: kept
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(project_ / "infer")) {
    names.push_back(e.path().filename().string());
  }
  EXPECT_EQ(names, std::vector<std::string>{"profile.json"});  // no partial trace, no temp file
}

// Issue 39 §2: `profile report job:<id> --remote` reads from the daemon named (it was the one
// reader without --remote: "unknown flag --remote for 'report'", exit 2).
TEST_F(HostileDaemonTest, ReportTakesRemoteAsEveryReaderDoes) {
  Serve({"profile.json"});
  const std::string html = (root_ / "report.html").string();
  const int code = RunCli({"profile", "report", "job:job-1", "--remote", "unix:" + socket_, "-o",
                           html},
                          out_, err_);
  EXPECT_THAT(err_.str(), Not(HasSubstr("unknown flag")));
  EXPECT_GE(daemon_->reads, 1) << "the profile was read from the daemon named: " << err_.str();
  // This daemon serves a shell line as its profile.json: refused as a profile, not written.
  EXPECT_NE(code, 0);
  EXPECT_FALSE(fs::exists(html));
}

// Issue 36 §6: `jobs delete` says what it freed (the deleted job's artifacts), and prints the
// daemon's answer escaped.
TEST_F(HostileDaemonTest, JobsDeleteSaysWhatWasFreed) {
  Serve({"profile.json", "profile_trace.json"}, "job\x1b[2J");
  EXPECT_EQ(RunCli({"jobs", "delete", "job-1", "--remote", "unix:" + socket_}, out_, err_), 0)
      << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("deleted job job\\x1b[2J (2 artifacts, 22 bytes freed"));
  EXPECT_THAT(out_.str(), Not(HasSubstr("\x1b")));
}

v1::Job JobWith(std::vector<std::string> names, v1::JobKind kind = v1::JOB_KIND_INFER) {
  v1::Job job;
  job.set_id("20261206-0123456789abcdef");
  job.set_kind(kind);
  for (const std::string& n : names) job.add_artifacts()->set_name(n);
  return job;
}

v1::Job RanksJob(std::vector<std::string> names, int64_t first_rank) {
  v1::Job job = JobWith(std::move(names), v1::JOB_KIND_RUN);
  job.add_devices("cpu:0");
  job.add_devices("cpu:1");
  job.mutable_world()->set_first_rank(static_cast<int32_t>(first_rank));
  return job;
}

TEST(CheckJobAnswer, RefusesEveryNameThatIsNotOneFileInTheProject) {
  for (const std::string& bad : std::vector<std::string>{
           "../x", "/etc/passwd", "a/b", ".bashrc", "..", ".", "", "x\ny", "x\x1b[2J", "a..b",
           std::string(129, 'a'), std::string("nul\0byte", 8)}) {
    const absl::Status st = CheckJobAnswer(JobWith({"profile.json", bad}), "unix:/d");
    EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss) << bad;
    EXPECT_THAT(st.message(), Not(HasSubstr("\n"))) << bad;
    EXPECT_THAT(st.message(), HasSubstr("unix:/d")) << bad;
  }
  EXPECT_TRUE(CheckJobAnswer(JobWith({"profile.json", "profile_trace.12.json",
                                      "profile_repeat.json", "report.html"}),
                             "unix:/d")
                  .ok());
}

TEST(CheckJobAnswer, RefusesRanksOutsideAnyWorldAndNamesTwice) {
  EXPECT_TRUE(CheckJobAnswer(RanksJob({"profile.json", "rank1.profile.json"}, 0), "d").ok());
  EXPECT_TRUE(CheckJobAnswer(RanksJob({"profile.json", "rank1.profile.json"}, 6), "d").ok());
  EXPECT_FALSE(CheckJobAnswer(RanksJob({"rank9223372036854775807.profile.json"}, 0), "d").ok());
  EXPECT_FALSE(CheckJobAnswer(RanksJob({"profile.json"}, -1), "d").ok());
  EXPECT_FALSE(CheckJobAnswer(RanksJob({"profile.json"}, 2147483647), "d").ok());
  EXPECT_FALSE(CheckJobAnswer(JobWith({"profile.json", "profile.json"}), "d").ok());
  v1::Job bad_id = JobWith({"profile.json"});
  bad_id.set_id("../../x");
  EXPECT_FALSE(CheckJobAnswer(bad_id, "d").ok());
}

TEST(ArtifactDestination, AlwaysLiesUnderTheProject) {
  const v1::Job ranks = RanksJob({}, 2);
  EXPECT_EQ(*ArtifactDestination("p", ranks, "rank1.profile.json"), "p/prof/rank3/profile.json");
  EXPECT_EQ(*ArtifactDestination("p", ranks, "profile.json"), "p/prof/rank2/profile.json");
  EXPECT_EQ(*ArtifactDestination("p", JobWith({}), "profile_repeat.json"), "p/profile_repeat.json");
  EXPECT_FALSE(ArtifactDestination("p", ranks, "rank1.../x").ok());
  EXPECT_FALSE(ArtifactDestination("p", JobWith({}), "../../escape1.txt").ok());
}

v1::Job RepeatJob(std::vector<std::string> names, int64_t repeat, v1::JobKind kind) {
  v1::Job job = JobWith(std::move(names), kind);
  if (kind == v1::JOB_KIND_RUN) job.mutable_request()->mutable_run()->set_repeat(repeat);
  if (kind == v1::JOB_KIND_INFER) job.mutable_request()->mutable_infer()->set_repeat(repeat);
  return job;
}

// Issue 36 §3: a --repeat job's files land in the Python tool's trial folders, named as the
// daemon publishes them (common/io/trial_artifacts.h), and back.
TEST(TrialArtifacts, NamesRoundTripAndLandInThePythonToolsFolders) {
  for (int64_t trials : {2, 3, 11}) {
    for (int64_t t = 0; t < trials; ++t) {
      for (const std::string file : {"profile.json", "profile_trace.json", "report.html"}) {
        const std::string name = TrialArtifactName(t, trials, file);
        EXPECT_EQ(name.find('/'), std::string::npos);
        const auto back = SplitTrialArtifact(name, trials);
        ASSERT_TRUE(back.has_value()) << name;
        EXPECT_EQ(back->trial, t) << name;
        EXPECT_EQ(back->file, file) << name;
      }
    }
  }
  EXPECT_EQ(TrialArtifactName(0, 2, "profile.json"), "trial0.profile.json");
  EXPECT_EQ(TrialArtifactName(1, 2, "profile.json"), "profile.json");  // the final trial's
  const v1::Job infer = RepeatJob({}, 3, v1::JOB_KIND_INFER);
  EXPECT_EQ(*ArtifactDestination("p", infer, "trial0.profile.json"), "p/infer_0/profile.json");
  EXPECT_EQ(*ArtifactDestination("p", infer, "trial1.profile.json"), "p/infer_1/profile.json");
  EXPECT_EQ(*ArtifactDestination("p", infer, "profile.json"), "p/infer_2/profile.json");
  EXPECT_EQ(*ArtifactDestination("p", infer, "profile_trace.json"),
            "p/infer_2/profile_trace.json");
  EXPECT_EQ(*ArtifactDestination("p", infer, "infer_repeat.json"), "p/infer_repeat.json");
  const v1::Job run = RepeatJob({}, 2, v1::JOB_KIND_RUN);
  EXPECT_EQ(*ArtifactDestination("p", run, "trial0.metrics.jsonl"), "p/prof_0/metrics.jsonl");
  EXPECT_EQ(*ArtifactDestination("p", run, "report.html"), "p/prof_1/report.html");
  EXPECT_EQ(*ArtifactDestination("p", run, "profile_repeat.json"), "p/profile_repeat.json");
  // A single run keeps <kind>/; a "trial" name there is an ordinary file name.
  EXPECT_EQ(*ArtifactDestination("p", RepeatJob({}, 1, v1::JOB_KIND_INFER), "profile.json"),
            "p/infer/profile.json");
  // Published names the daemon would never give: refused, nothing written.
  for (const std::string bad : {"trial2.profile.json", "trial00.profile.json",
                                "trial+0.profile.json", "trial-1.profile.json", "trial0.",
                                "trial0.../x", "trial0..."}) {
    const absl::Status st =
        CheckJobAnswer(RepeatJob({"profile.json", bad}, 3, v1::JOB_KIND_INFER), "unix:/d");
    EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss) << bad;
  }
  EXPECT_TRUE(CheckJobAnswer(RepeatJob({"trial0.profile.json", "trial1.profile.json",
                                        "profile.json", "profile_trace.json",
                                        "infer_repeat.json", "report.html"},
                                       3, v1::JOB_KIND_INFER),
                             "d")
                  .ok());
}

TEST(ScratchFolder, IsPrivateUnpredictableAndRemoved) {
  std::string path;
  {
    auto a = ScratchFolder::Create("libreyolo-scratch-test");
    auto b = ScratchFolder::Create("libreyolo-scratch-test");
    ASSERT_TRUE(a.ok() && b.ok());
    path = (*a)->path();
    EXPECT_NE(path, (*b)->path());
    EXPECT_EQ(fs::status(path).permissions() & fs::perms::all, fs::perms::owner_all);
    std::ofstream(fs::path(path) / "f") << "x";
  }
  EXPECT_FALSE(fs::exists(path));
}

// Issue 37 §3: an attach job that traced several processes names its files by rank; they go
// into <project>/attach/rank<R>/ as a data-parallel job's go into prof/, so that `summary
// <project>/attach/` reads them as one run's ranks. One process: its files as they are.
TEST(ArtifactDestination, AMultiProcessAttachJobsFilesGoIntoRankFolders) {
  const std::vector<std::string> names = {"profile.json", "profile_trace.json",
                                          "rank1.profile.json", "rank1.profile_trace.json"};
  const v1::Job ranks = JobWith(names, v1::JOB_KIND_ATTACH);
  EXPECT_TRUE(CheckJobAnswer(ranks, "d").ok());
  EXPECT_EQ(*ArtifactDestination("p", ranks, "profile.json"), "p/attach/rank0/profile.json");
  EXPECT_EQ(*ArtifactDestination("p", ranks, "profile_trace.json"),
            "p/attach/rank0/profile_trace.json");
  EXPECT_EQ(*ArtifactDestination("p", ranks, "rank1.profile_trace.json"),
            "p/attach/rank1/profile_trace.json");
  const v1::Job one = JobWith({"profile.json", "profile_trace.json"}, v1::JOB_KIND_ATTACH);
  EXPECT_EQ(*ArtifactDestination("p", one, "profile.json"), "p/attach/profile.json");
  // A run's own rank-like file name without rank folders stays a run's.
  EXPECT_EQ(*ArtifactDestination("p", JobWith(names, v1::JOB_KIND_RUN), "rank1.profile.json"),
            "p/prof/rank1.profile.json");
  EXPECT_FALSE(CheckJobAnswer(JobWith({"profile.json", "rank1.profile.json",
                                       "rank1024.profile.json"},
                                      v1::JOB_KIND_ATTACH),
                              "d")
                   .ok());
  EXPECT_FALSE(
      CheckJobAnswer(JobWith({"rank1.profile.json", "rank01.profile.json"}, v1::JOB_KIND_ATTACH),
                     "d")
          .ok());  // two names for one file
}

}  // namespace
}  // namespace libreyolo::cli
