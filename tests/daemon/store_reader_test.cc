// The daemon's reads in the core (server/daemon/reads/store_reader.h) over a fake job manager:
// typed job ids, the caller's identity handed to every job look-up, the job's profile chosen
// among its artifacts, the trace beside a profile by the rule the client shares
// (common/io/trace_artifact.h), and the errors a read keeps.
#include "server/daemon/reads/store_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/io/trace_artifact.h"
#include "tests/support/test_files.h"

namespace libreyolo::daemon {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::string kTrace = std::string(LIBREYOLO_FIXTURES_DIR) + "/traces/synthetic_async.json";
const std::string kProfile =
    std::string(LIBREYOLO_FIXTURES_DIR) + "/profiles/libreyolo-python-infer.json";

// Jobs owned by "ana", each artifact a file; records who asked and what was resolved.
struct FakeJobs {
  std::map<std::string, v1::Job> jobs;
  std::map<std::string, std::string> files;  // "<job>/<artifact>" -> path
  std::vector<std::string> callers;
  std::vector<std::string> resolved;

  void Add(const std::string& id, const std::map<std::string, std::string>& artifacts) {
    v1::Job job;
    job.set_id(id);
    job.set_state(v1::JOB_STATE_SUCCEEDED);
    for (const auto& [name, path] : artifacts) {
      v1::Artifact* a = job.add_artifacts();
      a->set_name(name);
      a->set_sha256(absl::StrCat("sha-of-", name));
      files[absl::StrCat(id, "/", name)] = path;
    }
    jobs[id] = job;
  }
  JobArtifacts Access() {
    return JobArtifacts{
        [this](const Identity& who, const std::string& id) -> absl::StatusOr<v1::Job> {
          callers.push_back(who.user);
          if (who.user != "ana") return absl::PermissionDeniedError("not yours");
          auto it = jobs.find(id);
          if (it == jobs.end()) return absl::NotFoundError(absl::StrCat("no job ", id));
          return it->second;
        },
        [this](const v1::Job& job, const std::string& name) -> absl::StatusOr<std::string> {
          resolved.push_back(name);
          auto it = files.find(absl::StrCat(job.id(), "/", name));
          if (it == files.end()) {
            return absl::NotFoundError(absl::StrCat("job ", job.id(), " has no artifact ", name));
          }
          return it->second;
        }};
  }
};

Identity Caller(const std::string& user) {
  Identity who;
  who.user = user;
  return who;
}
Identity Ana() { return Caller("ana"); }

ArtifactRef Ref(const std::string& id, const std::string& artifact = "") {
  return ArtifactRef{*JobId::Parse(id), artifact};
}

ReaderInvocation Invocation(ReaderId reader) {
  ReaderInvocation inv;
  inv.reader = reader;
  return inv;
}

TEST(TraceArtifactBeside, OneRuleForTheDaemonAndTheClient) {
  EXPECT_EQ(TraceArtifactBeside(""), "profile_trace.json");
  EXPECT_EQ(TraceArtifactBeside("profile.json"), "profile_trace.json");
  EXPECT_EQ(TraceArtifactBeside("profile_repeat.json"), "profile_trace.json");
  EXPECT_EQ(TraceArtifactBeside("infer_repeat.json"), "profile_trace.json");
  EXPECT_EQ(TraceArtifactBeside("rank1.profile.json"), "rank1.profile_trace.json");
  EXPECT_EQ(TraceArtifactBeside("trial0.profile.json"), "trial0.profile_trace.json");
  EXPECT_EQ(TraceArtifactBeside("rank2.profile_trace.json"), "rank2.profile_trace.json");
}

TEST(JobId, TakesOnlyJobIds) {
  EXPECT_EQ(JobId::Parse("20261206-0123abcd")->str(), "20261206-0123abcd");
  for (const char* bad : {"", "../etc", "a/b", "a.b"}) {
    const absl::StatusOr<JobId> id = JobId::Parse(bad, "profile.job_id");
    ASSERT_FALSE(id.ok()) << bad;
    EXPECT_EQ(id.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(id.status().message(), HasSubstr("profile.job_id: "));
  }
  EXPECT_FALSE(JobId::Parse(std::string(65, 'a')).ok());
}

TEST(ArtifactRef, LabelsAsTheViewsShowThem) {
  EXPECT_EQ(Ref("j1").Label(), "job:j1");
  EXPECT_EQ(Ref("j1", "rank1.profile.json").Label(), "job:j1/rank1.profile.json");
}

TEST(StoreReader, ReadsAJobsArtifactAsTheCaller) {
  FakeJobs jobs;
  jobs.Add("j1", {{"profile_trace.json", kTrace}});
  const StoreReader reader(jobs.Access());
  absl::StatusOr<ReaderOutput> out =
      reader.Read(Ana(), Invocation(ReaderId::kSummary), {Ref("j1", "profile_trace.json")});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->json, HasSubstr("job:j1/profile_trace.json"));
  EXPECT_THAT(jobs.callers, ElementsAre("ana"));
  EXPECT_THAT(jobs.resolved, ElementsAre("profile_trace.json"));

  absl::StatusOr<ReaderOutput> other =
      reader.Read(Caller("bo"), Invocation(ReaderId::kSummary), {Ref("j1")});
  EXPECT_EQ(other.status().code(), absl::StatusCode::kPermissionDenied);
}

TEST(StoreReader, NoArtifactNamedReadsTheJobsProfile) {
  FakeJobs jobs;
  jobs.Add("rep", {{"profile.json", kProfile}, {"profile_repeat.json", kProfile}});
  jobs.Add("one", {{"profile.json", kProfile}, {"profile_trace.json", kTrace}});
  const StoreReader reader(jobs.Access());
  ASSERT_TRUE(reader.Read(Ana(), Invocation(ReaderId::kSummary), {Ref("rep")}).ok());
  ASSERT_TRUE(reader.Read(Ana(), Invocation(ReaderId::kSummary), {Ref("one")}).ok());
  EXPECT_THAT(jobs.resolved, ElementsAre("profile_repeat.json", "profile.json"));
}

TEST(StoreReader, CompareReadsTwoJobs) {
  FakeJobs jobs;
  jobs.Add("a", {{"profile.json", kProfile}});
  jobs.Add("b", {{"profile.json", kProfile}});
  const StoreReader reader(jobs.Access());
  absl::StatusOr<ReaderOutput> out =
      reader.Read(Ana(), Invocation(ReaderId::kCompare), {Ref("a"), Ref("b")});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->json, HasSubstr("job:a"));
  EXPECT_THAT(out->json, HasSubstr("job:b"));
}

TEST(StoreReader, AJobWithoutArtifactsHasNoProfileYet) {
  FakeJobs jobs;
  jobs.Add("run", {});
  const StoreReader reader(jobs.Access());
  absl::StatusOr<ReaderOutput> out = reader.Read(Ana(), Invocation(ReaderId::kSummary), {Ref("run")});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(out.status().message(), HasSubstr("job run has no profile (state"));
}

TEST(StoreReader, ModulesLooksForTheTraceBesideTheProfileRead) {
  FakeJobs jobs;
  jobs.Add("ddp", {{"rank1.profile.json", kProfile}});
  const StoreReader reader(jobs.Access());
  absl::StatusOr<ReaderOutput> out = reader.Read(Ana(), Invocation(ReaderId::kModules),
                                                 {Ref("ddp", "rank1.profile.json")});
  ASSERT_EQ(out.status().code(), absl::StatusCode::kFailedPrecondition) << out.status();
  EXPECT_THAT(out.status().message(),
              HasSubstr("modules reads the Chrome trace, and job ddp has no "
                        "rank1.profile_trace.json"));
  EXPECT_THAT(jobs.resolved, ElementsAre("rank1.profile.json", "rank1.profile_trace.json"));
}

TEST(StoreReader, ArtifactCarriesTheRecordedDigest) {
  FakeJobs jobs;
  jobs.Add("j1", {{"profile_trace.json", kTrace}});
  const StoreReader reader(jobs.Access());
  absl::StatusOr<ServedArtifact> a = reader.Artifact(Ana(), *JobId::Parse("j1"), "profile_trace.json");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->path, kTrace);
  EXPECT_EQ(a->sha256, "sha-of-profile_trace.json");
  EXPECT_EQ(reader.Artifact(Ana(), *JobId::Parse("j1"), "x.json").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(reader.Artifact(Caller("bo"), *JobId::Parse("j1"), "profile_trace.json")
                .status()
                .code(),
            absl::StatusCode::kPermissionDenied);
}

}  // namespace
}  // namespace libreyolo::daemon
