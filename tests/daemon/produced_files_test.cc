// Files made outside the engine, taken into a job (server/daemon/external/produced_files.h):
// the drop folder, the take's refusals (links, FIFOs, another owner, size, names), a copy that
// the producer cannot change afterwards, and real traces analysed into the job's profile
// (tests/fixtures/attach/, made by make_attach_fixtures.py).
#include "server/daemon/external/produced_files.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/load/load_profile.h"
#include "common/profile/profile.h"
#include "common/readers/ranks_view.h"
#include "common/readers/summary_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_files.h"

namespace libreyolo::daemon::external {
namespace {

using ::libreyolo::test::ReadFile;
using ::libreyolo::test::TempDir;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::UnorderedElementsAre;

namespace fs = std::filesystem;

constexpr char kJob[] = "20261206-0123456789abcdef";  // the on-demand fixture's trace_id
constexpr char kDdpJob[] = "20261206-00000000000000dd";  // the DDP fixtures' trace_id

std::string Fixture(const std::string& name) {
  return std::string(LIBREYOLO_SOURCE_DIR) + "/tests/fixtures/attach/" + name;
}

class ProducedFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(tmp_.File("drops"));
    auto store = JobStore::Open(tmp_.File("state"), tmp_.File("store"));
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }

  DropFolder Make(const std::string& job = kJob) {
    auto folder = MakeDropFolder(tmp_.File("drops"), job, ::geteuid());
    EXPECT_TRUE(folder.ok()) << folder.status();
    return folder.ok() ? *folder : DropFolder{};
  }
  // The names of what the job's artifact folder holds now.
  std::vector<std::string> Stored(const std::string& job = kJob) {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(tmp_.File("store/" + job), ec)) {
      names.push_back(e.path().filename().string());
    }
    return names;
  }
  std::string StoredFile(const std::string& name, const std::string& job = kJob) {
    return tmp_.File("store/" + job + "/" + name);
  }

  TempDir tmp_{"lypf"};
  std::unique_ptr<JobStore> store_;
};

TEST_F(ProducedFilesTest, DropFolderIsPrivateNewAndNeverReused) {
  const DropFolder folder = Make();
  struct stat st {};
  ASSERT_EQ(::lstat(folder.path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_EQ(st.st_uid, ::geteuid());
  auto again = MakeDropFolder(tmp_.File("drops"), kJob, ::geteuid());
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists) << again.status();

  // A link planted under the next job's name is an existing entry: refused, not followed.
  fs::create_directories(tmp_.File("elsewhere"));
  ASSERT_EQ(::symlink(tmp_.File("elsewhere").c_str(), tmp_.File("drops/job-2").c_str()), 0);
  auto planted = MakeDropFolder(tmp_.File("drops"), "job-2", ::geteuid());
  EXPECT_EQ(planted.status().code(), absl::StatusCode::kAlreadyExists) << planted.status();
  EXPECT_TRUE(fs::is_empty(tmp_.File("elsewhere")));
  EXPECT_EQ(MakeDropFolder(tmp_.File("drops"), "../x", ::geteuid()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Another user's folder: root gives it away; any other daemon says it cannot, naming the user.
TEST_F(ProducedFilesTest, AnotherUsersFolderNeedsRoot) {
  const uid_t other = ::geteuid() == 65534 ? 65533 : 65534;
  if (::geteuid() == 0) {
    auto folder = MakeDropFolder(tmp_.File("drops"), kJob, other);
    ASSERT_TRUE(folder.ok()) << folder.status();
    struct stat st {};
    ASSERT_EQ(::lstat(folder->path.c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, other);
    // And the same call from a daemon that is not root (a child that gave up root).
    ASSERT_EQ(::chmod(tmp_.path().c_str(), 0777), 0);
    ASSERT_EQ(::chmod(tmp_.File("drops").c_str(), 01777), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      if (::setresuid(65533, 65533, 65533) != 0) ::_exit(3);
      auto refused = MakeDropFolder(tmp_.File("drops"), "job-3", 65534);
      const bool named = refused.status().message().find("65534") != std::string::npos;
      ::_exit(refused.status().code() == absl::StatusCode::kFailedPrecondition && named ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    EXPECT_FALSE(fs::exists(tmp_.File("drops/job-3")));
  } else {
    auto refused = MakeDropFolder(tmp_.File("drops"), kJob, other);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(refused.status().message(), HasSubstr(std::to_string(other)));
  }
}

TEST_F(ProducedFilesTest, TakesAPlainFileAndTheProducerCannotChangeItAfterwards) {
  const DropFolder folder = Make();
  const std::string produced = folder.path + "/od_4242.json";
  test::WriteFile(produced, "{\"original\": true}", 0644);
  auto taken = TakeProducedFiles(folder, {{"od_4242.json", "profile_trace.json"}}, store_.get(),
                                 kJob, 1 << 20);
  ASSERT_TRUE(taken.ok()) << taken.status();
  ASSERT_EQ(taken->size(), 1u);
  EXPECT_EQ((*taken)[0].name(), "profile_trace.json");
  // The producer rewrites, truncates and renames its file: the stored copy stays.
  test::WriteFile(produced, "{\"rewritten\": 1}", 0644);
  ASSERT_EQ(::truncate(produced.c_str(), 3), 0);
  ASSERT_EQ(::rename(produced.c_str(), (folder.path + "/moved.json").c_str()), 0);
  EXPECT_EQ(ReadFile(StoredFile("profile_trace.json")), "{\"original\": true}");
  EXPECT_TRUE(store_->VerifyArtifact(kJob, (*taken)[0], nullptr).ok());
}

TEST_F(ProducedFilesTest, APlantedLinkIsRefusedAndNotFollowed) {
  const DropFolder folder = Make();
  const std::string secret = tmp_.Write("outside/secret.json", "{\"secret\": 1}");
  ASSERT_EQ(::symlink(secret.c_str(), (folder.path + "/od_1.json").c_str()), 0);
  // Any open or read of the target would show here.
  const int watch = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  ASSERT_GE(watch, 0);
  ASSERT_GE(::inotify_add_watch(watch, secret.c_str(), IN_OPEN | IN_ACCESS), 0);
  auto taken = TakeProducedFiles(folder, {{"od_1.json", "profile_trace.json"}}, store_.get(),
                                 kJob, 1 << 20);
  EXPECT_EQ(taken.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(taken.status().message(), HasSubstr("od_1.json in the drop folder"));
  EXPECT_THAT(taken.status().message(), HasSubstr("symbolic link: refused"));
  char events[4096];
  EXPECT_LT(::read(watch, events, sizeof(events)), 0) << "the link's target was opened";
  ::close(watch);
  EXPECT_EQ(ReadFile(secret), "{\"secret\": 1}");
  EXPECT_TRUE(Stored().empty());
}

TEST_F(ProducedFilesTest, AFifoIsRefusedWithoutBlocking) {
  const DropFolder folder = Make();
  ASSERT_EQ(::mkfifo((folder.path + "/od_2.json").c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  auto taken = TakeProducedFiles(folder, {{"od_2.json", "profile_trace.json"}}, store_.get(),
                                 kJob, 1 << 20);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(taken.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(taken.status().message(), HasSubstr("is a FIFO"));
  EXPECT_TRUE(Stored().empty());
}

TEST_F(ProducedFilesTest, AFileOfAnotherOwnerIsRefused) {
  DropFolder folder = Make();
  test::WriteFile(folder.path + "/od_3.json", "{}", 0644);
  absl::StatusCode expected = absl::StatusCode::kPermissionDenied;
  if (::geteuid() == 0) {
    // The folder is the producer's (as MakeDropFolder gives it); the file in it is root's.
    ASSERT_EQ(::chown(folder.path.c_str(), 4242, static_cast<gid_t>(-1)), 0);
    folder.producer = 4242;
  } else {
    folder.producer = ::geteuid() + 1;  // not the folder's owner either: refused there first
    expected = absl::StatusCode::kFailedPrecondition;
  }
  auto taken = TakeProducedFiles(folder, {{"od_3.json", "profile_trace.json"}}, store_.get(),
                                 kJob, 1 << 20);
  EXPECT_EQ(taken.status().code(), expected) << taken.status();
  EXPECT_THAT(taken.status().message(), HasSubstr(std::to_string(folder.producer)));
  EXPECT_TRUE(Stored().empty());
}

TEST_F(ProducedFilesTest, AnOversizedFileIsRefusedAndNothingOfTheCallStays) {
  const DropFolder folder = Make();
  test::WriteFile(folder.path + "/small.json", "{}", 0644);
  test::WriteFile(folder.path + "/big.json", std::string(1000, 'x'), 0644);
  auto taken = TakeProducedFiles(
      folder, {{"small.json", "profile.json"}, {"big.json", "profile_trace.json"}}, store_.get(),
      kJob, 100);
  EXPECT_EQ(taken.status().code(), absl::StatusCode::kResourceExhausted) << taken.status();
  EXPECT_THAT(taken.status().message(), HasSubstr("big.json in the drop folder"));
  EXPECT_THAT(taken.status().message(), HasSubstr("1000 bytes"));
  EXPECT_TRUE(Stored().empty()) << "profile.json, taken first, was left published";
}

TEST_F(ProducedFilesTest, NamesThatAreNotPlainAreRefused) {
  const DropFolder folder = Make();
  tmp_.Write("drops/x.json", "{}");
  for (const std::string name : {"../x.json", "a/b.json", ".hidden", "", "x\ny"}) {
    auto taken = TakeProducedFiles(folder, {{name, "profile.json"}}, store_.get(), kJob, 1 << 20);
    EXPECT_EQ(taken.status().code(), absl::StatusCode::kInvalidArgument) << name;
  }
  test::WriteFile(folder.path + "/ok.json", "{}", 0644);
  auto taken = TakeProducedFiles(folder, {{"ok.json", "../profile.json"}}, store_.get(), kJob,
                                 1 << 20);
  EXPECT_EQ(taken.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Stored().empty());
}

TEST_F(ProducedFilesTest, RemovingTheFolderFollowsNoLink) {
  const DropFolder folder = Make();
  const std::string kept = tmp_.Write("outside/kept.json", "{}");
  ASSERT_EQ(::symlink(tmp_.File("outside").c_str(), (folder.path + "/link").c_str()), 0);
  tmp_.Write("drops/" + std::string(kJob) + "/sub/od_9.json", "{}");
  RemoveDropFolder(folder);
  EXPECT_FALSE(fs::exists(fs::symlink_status(folder.path)));
  EXPECT_TRUE(fs::exists(kept));
  // The folder itself swapped for a link: the link goes, its target stays.
  const DropFolder second = Make("job-2");
  fs::remove(second.path);
  ASSERT_EQ(::symlink(tmp_.File("outside").c_str(), second.path.c_str()), 0);
  RemoveDropFolder(second);
  EXPECT_FALSE(fs::exists(fs::symlink_status(second.path)));
  EXPECT_TRUE(fs::exists(kept));
}

v1::Job JobWithId(const std::string& id) {
  v1::Job job;
  job.set_id(id);
  job.set_tool(kToolKineto);
  return job;
}

TEST_F(ProducedFilesTest, AnotherRequestsTraceIsRefused) {
  const std::string other = "20261206-ffffffffffffffff";
  auto folder = MakeDropFolder(tmp_.File("drops"), other, ::geteuid());
  ASSERT_TRUE(folder.ok());
  fs::copy_file(Fixture("ondemand_cpu.json"), folder->path + "/od_4242.json");
  std::vector<v1::Artifact> artifacts;
  const absl::Status s =
      AnalyseIntoJob(JobWithId(other), *folder, {{4242, std::nullopt, "python train.py", "od_4242.json"}},
                     TraceOrigin{kToolKineto, other}, store_.get(), 16 << 20, &artifacts);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_THAT(s.message(), HasSubstr(kJob));  // what the file says
  EXPECT_TRUE(artifacts.empty());
  EXPECT_TRUE(Stored(other).empty());
}

// A real Kineto on-demand trace (no ProfilerStep marks): its profile reads back, names its
// trace and its tool, and says no step it did not see.
TEST_F(ProducedFilesTest, AnOnDemandTraceBecomesTheJobsProfile) {
  EXPECT_STREQ(kToolKineto, kKinetoOnDemandToolName);
  EXPECT_STREQ(kToolPython, kPythonLibreyoloToolName);
  const DropFolder folder = Make();
  fs::copy_file(Fixture("ondemand_cpu.json"), folder.path + "/od_4242.json");
  std::vector<v1::Artifact> artifacts;
  const absl::Status s = AnalyseIntoJob(
      JobWithId(kJob), folder, {{4242, std::nullopt, "python train.py", "od_4242.json"}},
      TraceOrigin{kToolKineto, kJob}, store_.get(), 16 << 20, &artifacts);
  ASSERT_TRUE(s.ok()) << s;
  std::vector<std::string> names;
  for (const v1::Artifact& a : artifacts) names.push_back(a.name());
  EXPECT_THAT(names, UnorderedElementsAre("profile_trace.json", "profile.json"));
  EXPECT_THAT(Stored(), UnorderedElementsAre("profile_trace.json", "profile.json"));

  auto p = LoadProfile(StoredFile("profile.json"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->trace.value_or(""), "profile_trace.json");
  EXPECT_EQ(p->tool_name, "kineto-on-demand");
  EXPECT_EQ(p->tool_version, "trace schemaVersion 1");
  EXPECT_FALSE(p->step_ms.has_value());
  EXPECT_FALSE(p->real_steps.has_value());
  EXPECT_FALSE(p->img_per_s.has_value());
  ASSERT_TRUE(p->window_wall_ms.has_value());
  EXPECT_GT(*p->window_wall_ms, 30.0);  // the 40 ms Kineto recorded
  EXPECT_LT(*p->window_wall_ms, 60.0);
  EXPECT_FALSE(p->ops.empty());
  EXPECT_THAT(p->config_json, HasSubstr("\"pid\":4242"));
  EXPECT_EQ(StepTimingOf(*p), StepTiming::kProfiledWindow);

  const SummaryView v = BuildSummary(*p, "job:" + std::string(kJob));
  EXPECT_THAT(RenderSummaryText(v), HasSubstr("measured by"));
  EXPECT_THAT(RenderSummaryText(v), HasSubstr("the traced process's own Kineto"));
  EXPECT_THAT(RenderSummaryText(v), HasSubstr("pid 4242"));
  EXPECT_THAT(RenderSummaryText(v), HasSubstr("recorded, no steps marked"));
  EXPECT_THAT(RenderSummaryJson(v), HasSubstr("the traced process's own Kineto"));
}

TEST_F(ProducedFilesTest, APythonLibreyoloProfileSaysWhoMeasured) {
  Profile p;
  p.source_kind = "profile";
  p.tool_name = kToolPython;
  p.tool_version = "1.6.0";
  const SummaryView v = BuildSummary(p, "job:x");
  EXPECT_THAT(RenderSummaryText(v), HasSubstr("the Python LibreYOLO's own measurement"));
  EXPECT_THAT(RenderSummaryJson(v), HasSubstr("the Python LibreYOLO's own measurement"));
  EXPECT_THAT(RenderSummaryJson(v), HasSubstr("1.6.0"));
}

// Two ranks' traces: named by RANK (given out of order), rank 0's profile carries the cross-rank
// view of the stored traces, which the ranks reader reads back.
TEST_F(ProducedFilesTest, TwoRanksAreNamedByRankAndReadAsADataParallelJob) {
  const DropFolder folder = Make(kDdpJob);
  fs::copy_file(Fixture("ddp_rank1.json"), folder.path + "/od_200.json");
  fs::copy_file(Fixture("ddp_rank0.json"), folder.path + "/od_300.json");
  std::vector<v1::Artifact> artifacts;
  const absl::Status s = AnalyseIntoJob(
      JobWithId(kDdpJob), folder,
      {{200, 1, "torchrun r1", "od_200.json"}, {300, 0, "torchrun r0", "od_300.json"}},
      TraceOrigin{kToolKineto, kDdpJob}, store_.get(), 16 << 20, &artifacts);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_THAT(Stored(kDdpJob), UnorderedElementsAre("profile_trace.json", "profile.json",
                                                    "rank1.profile_trace.json",
                                                    "rank1.profile.json"));
  EXPECT_EQ(ReadFile(StoredFile("profile_trace.json", kDdpJob)),
            ReadFile(Fixture("ddp_rank0.json")));
  auto rank1 = LoadProfile(StoredFile("rank1.profile.json", kDdpJob));
  ASSERT_TRUE(rank1.ok()) << rank1.status();
  EXPECT_EQ(rank1->trace.value_or(""), "rank1.profile_trace.json");
  EXPECT_THAT(rank1->config_json, HasSubstr("\"pid\":200"));
  EXPECT_EQ(rank1->real_steps.value_or(0), 2);  // ProfilerStep marks: real steps

  auto p = LoadProfile(StoredFile("profile.json", kDdpJob));
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_FALSE(p->ranks_json.empty());
  auto view = RanksViewFromJson(p->ranks_json);
  ASSERT_TRUE(view.ok()) << view.status();
  ASSERT_EQ(view->result.ranks.size(), 2u);
  EXPECT_EQ(view->result.ranks[0].info.rank, 0);
  EXPECT_EQ(view->result.ranks[0].path, "profile_trace.json");
  EXPECT_EQ(view->result.ranks[1].path, "rank1.profile_trace.json");
  // The stored traces read as a data-parallel job's.
  auto again = BuildRanksViewOfTraces(
      "job", {StoredFile("profile_trace.json", kDdpJob),
              StoredFile("rank1.profile_trace.json", kDdpJob)});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->result.ranks.size(), 2u);
}

// Without RANK in their environments, the processes are named in pid order.
TEST_F(ProducedFilesTest, WithoutRanksTheOrderIsThePids) {
  const DropFolder folder = Make(kDdpJob);
  fs::copy_file(Fixture("ddp_rank0.json"), folder.path + "/od_300.json");
  fs::copy_file(Fixture("ddp_rank1.json"), folder.path + "/od_200.json");
  std::vector<v1::Artifact> artifacts;
  ASSERT_TRUE(AnalyseIntoJob(JobWithId(kDdpJob), folder,
                             {{300, std::nullopt, "a", "od_300.json"},
                              {200, std::nullopt, "b", "od_200.json"}},
                             TraceOrigin{kToolKineto, kDdpJob}, store_.get(), 16 << 20,
                             &artifacts)
                  .ok());
  EXPECT_EQ(ReadFile(StoredFile("profile_trace.json", kDdpJob)),
            ReadFile(Fixture("ddp_rank1.json")));  // pid 200 first
  EXPECT_EQ(ReadFile(StoredFile("rank1.profile_trace.json", kDdpJob)),
            ReadFile(Fixture("ddp_rank0.json")));
}

// Issue 37 §6: a torchrun job's ranks traced on demand (real traces of a 2-rank Gloo DDP,
// rank 1 sleeping 15 ms before each backward: make_attach_fixtures.py). The traces carry no
// distributedInfo and no steps: the ranks are the processes' RANKs, the world their number,
// and the cross-rank view compares them over the window both recorded. It names rank 1, and
// the folder the files are downloaded into reads the same.
TEST_F(ProducedFilesTest, OnDemandRanksAreComparedOverTheirCommonWindow) {
  constexpr char kAttach[] = "20261206-00000000000000a2";  // the fixtures' trace_id
  const DropFolder folder = Make(kAttach);
  fs::copy_file(Fixture("ondemand_ddp_rank1.json"), folder.path + "/od_200.json");
  fs::copy_file(Fixture("ondemand_ddp_rank0.json"), folder.path + "/od_300.json");
  std::vector<v1::Artifact> artifacts;
  const absl::Status s = AnalyseIntoJob(
      JobWithId(kAttach), folder,
      {{200, 1, "ddp_loop.py", "od_200.json"}, {300, 0, "ddp_loop.py", "od_300.json"}},
      TraceOrigin{kToolKineto, kAttach}, store_.get(), 16 << 20, &artifacts);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(ReadFile(StoredFile("rank1.profile_trace.json", kAttach)),
            ReadFile(Fixture("ondemand_ddp_rank1.json")));
  auto rank1 = LoadProfile(StoredFile("rank1.profile.json", kAttach));
  ASSERT_TRUE(rank1.ok()) << rank1.status();
  EXPECT_THAT(rank1->config_json, HasSubstr("\"rank\":1,\"world_size\":2"));
  // A window, not a step, in the verdict.
  EXPECT_THAT(rank1->bound_why, HasSubstr("ms window"));
  EXPECT_THAT(rank1->bound_why, Not(HasSubstr("step")));

  auto p = LoadProfile(StoredFile("profile.json", kAttach));
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_FALSE(p->ranks_json.empty()) << "no cross-rank view in rank 0's profile";
  auto view = RanksViewFromJson(p->ranks_json);
  ASSERT_TRUE(view.ok()) << view.status();
  const CrossRankResult& r = view->result;
  EXPECT_TRUE(r.windowed);
  EXPECT_EQ(r.world_size, 2);
  EXPECT_EQ(r.backend, "gloo");  // from the collective spans
  ASSERT_EQ(r.ranks.size(), 2u);
  EXPECT_EQ(r.ranks[1].path, "rank1.profile_trace.json");
  EXPECT_EQ(r.ranks[1].steps, 0);
  // The window both traces recorded: rank 1's "PyTorch Profiler (0)" start to rank 0's end.
  EXPECT_NEAR(r.step_ms_mean, 149.9197, 1e-3);
  EXPECT_EQ(r.ranks[0].step_ms, r.ranks[1].step_ms);
  ASSERT_TRUE(r.straggler.has_value()) << r.verdict;
  EXPECT_EQ(*r.straggler, 1);
  // Rank 0 waits in its all-reduces for rank 1's sleeps: most of the window (114 vs 16 ms).
  EXPECT_GT(*r.collective_wait_ms, 50.0);
  EXPECT_GT(r.ranks[0].comm_ms, r.ranks[1].comm_ms + 50.0);
  EXPECT_FALSE(r.collective_wait_median_ms.has_value());  // no steps to take a median over
  EXPECT_THAT(r.verdict, HasSubstr("rank 1 is a straggler"));
  EXPECT_THAT(r.verdict, HasSubstr("per window"));
  EXPECT_THAT(r.verdict, HasSubstr("outside its profiled ops"));  // a sleep is no op

  const std::string text = RenderSummaryText(BuildSummary(*p, std::string("job:") + kAttach));
  EXPECT_THAT(text, HasSubstr("per rank, per window"));
  EXPECT_THAT(text, HasSubstr("straggler            rank 1"));
  EXPECT_THAT(text, HasSubstr("ms/window"));
  EXPECT_THAT(text, Not(HasSubstr("ms/step")));

  // Downloaded, the files lie in rank folders (<project>/attach/rank<R>/): the folder reader
  // takes each trace's rank and world from the profile beside it.
  const std::string dl = tmp_.File("attach");
  for (const auto& [rank, prefix] : {std::pair<int, std::string>{0, ""}, {1, "rank1."}}) {
    const std::string to = dl + "/rank" + std::to_string(rank);
    fs::create_directories(to);
    fs::copy_file(StoredFile(prefix + "profile.json", kAttach), to + "/profile.json");
    fs::copy_file(StoredFile(prefix + "profile_trace.json", kAttach), to + "/profile_trace.json");
  }
  auto folder_view = BuildRanksView(dl);
  ASSERT_TRUE(folder_view.ok()) << folder_view.status();
  EXPECT_EQ(folder_view->result.straggler, r.straggler);
  EXPECT_EQ(folder_view->result.collective_wait_ms, r.collective_wait_ms);
  EXPECT_EQ(folder_view->result.verdict, r.verdict);
}

}  // namespace
}  // namespace libreyolo::daemon::external
