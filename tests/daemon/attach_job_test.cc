// Issue 37 §3-5: AttachJobRunner over a real registry on a ManualClock, a real store and real
// drop folders, with a fake Kineto: a thread that polls the registry as the process would,
// takes the configuration and writes the trace as Kineto does (`.tmp`, then rename) — or
// writes nothing, writes Kineto's default path instead, or dies. And SubmitJob's validation of
// an AttachSpec and who may submit one.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/time/clock.h"
#include "server/daemon/attach/attach_endpoint.h"
#include "server/daemon/attach/attach_job.h"
#include "server/daemon/attach/kineto_wire.h"
#include "server/daemon/rpc/request_validation.h"
#include "server/daemon/store/job_store.h"
#include "tests/support/test_files.h"

#ifndef LIBREYOLO_FIXTURES_DIR
#error "LIBREYOLO_FIXTURES_DIR must name tests/fixtures"
#endif

namespace libreyolo::daemon::attach {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;
using ::testing::Not;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A child that sleeps until killed: a live pid of our own to trace.
pid_t Sleeper() {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::pause();
    ::_exit(0);
  }
  return pid;
}

// What the fake Kineto does with the configuration it takes.
enum class Producer { kWrites, kSilent, kDefaultPath, kDies };

class AttachJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    AttachEndpointOptions options;
    options.clock = &clock_;
    std::vector<std::string> warnings;
    auto endpoint = AttachEndpoint::Start(options, &warnings);
    ASSERT_TRUE(endpoint.ok()) << endpoint.status();
    endpoint_ = *std::move(endpoint);
    auto store = JobStore::Open(state_.File("state"), state_.File("store"));
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    runner_ = std::make_unique<AttachJobRunner>(endpoint_.get(), store_.get(), config_, clock_);
    runner_->set_drop_root(drops_.File("root"));
  }
  void TearDown() override {
    stop_ = true;
    if (producer_.joinable()) producer_.join();
    if (ticker_.joinable()) ticker_.join();
    if (child_ > 0) {
      ::kill(child_, SIGKILL);
      ::waitpid(child_, nullptr, 0);
    }
  }

  // One poll of `pid` as Kineto sends it (idle: the ACTIVITIES bit); the configuration handed.
  std::string Poll(pid_t pid, std::vector<pid_t> ancestors = {1}) {
    PollInput in;
    in.pid = pid;
    in.uid = ::getuid();
    in.activity_bits = kActivitiesBit;
    in.reported_pids = {pid};
    return endpoint_->registry()
        .Poll(in,
              [&] {
                ProcessFacts f;
                f.ancestors = ancestors;
                f.command_line = "python train.py";
                f.ondemand_trace_dir = trace_dir_;
                return f;
              })
        .config;
  }

  // Polls `pid` every 20 ms (real time) until a configuration comes, then acts as `what` says.
  void StartProducer(pid_t pid, Producer what) {
    producer_ = std::thread([this, pid, what] {
      std::string config;
      while (!stop_ && config.empty()) {
        config = Poll(pid);
        std::this_thread::sleep_for(milliseconds(20));
      }
      if (stop_) return;
      config_text_ = config;
      const size_t at = config.find("ACTIVITIES_LOG_FILE=");
      const std::string log = config.substr(at + 20, config.find('\n', at) - at - 20);
      const std::string final_name = absl::StrCat(log.substr(0, log.size() - 5), "_", pid, ".json");
      const std::string trace = absl::StrReplaceAll(
          ReadAll(std::string(LIBREYOLO_FIXTURES_DIR) + "/attach/ondemand_cpu.json"),
          {{"20261206-0123456789abcdef", job_.id()}});
      switch (what) {
        case Producer::kWrites:
          std::ofstream(final_name + ".tmp") << trace;
          std::rename((final_name + ".tmp").c_str(), final_name.c_str());
          break;
        case Producer::kDefaultPath:
          default_path_ = absl::StrCat("/tmp/libkineto_activities_", pid, ".json");
          std::ofstream(default_path_) << trace;
          break;
        case Producer::kDies:
          ::kill(pid, SIGKILL);
          ::waitpid(pid, nullptr, 0);
          break;
        case Producer::kSilent:
          break;
      }
      delivered_ = true;
    });
  }

  // Moves the clock as fast as real time (a registry wait on a ManualClock ends only when its
  // deadline passes on it).
  void StartTicker() {
    ticker_ = std::thread([this] {
      while (!stop_) {
        std::this_thread::sleep_for(milliseconds(5));
        clock_.Advance(milliseconds(5));
      }
    });
  }

  // The job as SubmitJob records it: `owner_uid` the submitter's (nullopt: a token user).
  v1::Job Job(v1::AttachSpec spec, std::optional<uid_t> owner_uid = 0,
              const std::string& owner = "") {
    job_.set_id("20261206-00000000000000a1");
    job_.set_kind(v1::JOB_KIND_ATTACH);
    job_.set_owner(!owner.empty()     ? owner
                   : owner_uid ? absl::StrCat("uid:", *owner_uid)
                               : std::string("token-user"));
    job_.clear_owner_uid();
    if (owner_uid) job_.set_owner_uid(static_cast<int32_t>(*owner_uid));
    job_.set_device("attach");
    *job_.mutable_request()->mutable_attach() = std::move(spec);
    EXPECT_TRUE(store_->PutJob(job_).ok());
    return job_;
  }

  RunOutcome Run(const v1::Job& job) {
    return runner_->Run(
        job,
        [&](const JobProgress& p) {
          std::lock_guard<std::mutex> lock(mu_);
          stages_.push_back(p.stage);
          messages_ += p.stage + ": " + p.message + "\n";
        },
        cancel_);
  }

  bool DropFoldersGone() {
    std::error_code ec;
    return std::filesystem::is_empty(drops_.File("root"), ec) || ec;
  }

  static v1::AttachSpec ByPid(pid_t pid) {
    v1::AttachSpec spec;
    spec.add_pids(pid);
    spec.set_duration_ms(500);
    spec.mutable_profiler()->add_activities("cpu");
    return spec;
  }

  ManualClock clock_;
  LiveConfig config_{DaemonConfig{}};
  ::libreyolo::test::TempDir state_{"lyattach"}, drops_{"lydrop"};
  std::unique_ptr<AttachEndpoint> endpoint_;
  std::unique_ptr<JobStore> store_;
  std::unique_ptr<AttachJobRunner> runner_;
  engine::CancelToken cancel_;
  v1::Job job_;
  std::thread producer_, ticker_;
  std::atomic<bool> stop_{false}, delivered_{false};
  std::string config_text_, default_path_;
  std::string trace_dir_;  // the process's KINETO_ONDEMAND_TRACE_DIR
  std::mutex mu_;
  std::vector<std::string> stages_;
  std::string messages_;
  pid_t child_ = -1;
};

TEST_F(AttachJobTest, TracesOneProcessIntoTheJob) {
  const pid_t pid = ::getpid();
  Poll(pid);
  StartProducer(pid, Producer::kWrites);
  const RunOutcome out = Run(Job(ByPid(pid)));
  ASSERT_TRUE(out.status.ok()) << out.status << "\n" << messages_;
  EXPECT_EQ(out.exit_code, 0);
  std::vector<std::string> names;
  for (const v1::Artifact& a : out.artifacts) names.push_back(a.name());
  EXPECT_THAT(names, ::testing::UnorderedElementsAre("profile_trace.json", "profile.json"));
  ASSERT_EQ(out.attach_targets.size(), 1u);
  EXPECT_TRUE(out.attach_targets[0].traced());
  EXPECT_EQ(out.attach_targets[0].trace(), "profile_trace.json");
  EXPECT_EQ(out.attach_targets[0].pid(), pid);
  // One configuration: our drop folder, the job's id as the trace's, the window asked.
  EXPECT_THAT(config_text_, HasSubstr(absl::StrCat("REQUEST_TRACE_ID=", job_.id(), "\n")));
  EXPECT_THAT(config_text_, HasSubstr(absl::StrCat("ACTIVITIES_LOG_FILE=", drops_.File("root"),
                                                   "/", job_.id(), "/", job_.id(), ".json\n")));
  EXPECT_THAT(config_text_, HasSubstr("ACTIVITIES_DURATION_MSECS=500\n"));
  EXPECT_THAT(stages_, ::testing::IsSupersetOf({"select", "prepare", "waiting", "delivered",
                                               "warmup", "written", "analysing", "analysed"}));
  EXPECT_THAT(messages_, HasSubstr("under /tmp"));
  EXPECT_THAT(messages_, HasSubstr("from the request: delivered +"));
  const std::string profile = ReadAll(*store_->ArtifactDir(job_.id()) + "/profile.json");
  EXPECT_THAT(profile, HasSubstr(job_.id()));
  EXPECT_TRUE(DropFoldersGone());
  EXPECT_EQ(runner_->ToolFor(job_), kToolKineto);
}

// A process started a moment before `attach --pid` (or a private daemon the command itself
// started, its registry still empty) has not polled yet: the job waits for its first poll
// instead of failing "does not poll this daemon" (seen with the private daemon).
TEST_F(AttachJobTest, AProcessThatHasNotPolledYetIsWaitedFor) {
  const pid_t pid = ::getpid();
  StartProducer(pid, Producer::kWrites);
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    Poll(pid);
  });
  const RunOutcome out = Run(Job(ByPid(pid)));
  late.join();
  // Not registered when the job started: it used to fail at once (NOT_FOUND).
  ASSERT_TRUE(out.status.ok()) << out.status << "\n" << messages_;
  ASSERT_EQ(out.attach_targets.size(), 1u);
  EXPECT_TRUE(out.attach_targets[0].traced());
}

// Kineto takes an on-demand path under the process's KINETO_ONDEMAND_TRACE_DIR: the drop folder
// goes there when it is a directory of the process's user, and the event says so; a symlink
// there is not followed (the job falls back to /tmp, and says why).
TEST_F(AttachJobTest, TheProcesssOwnTraceDirIsUsedWhenItIsItsUsers) {
  const pid_t pid = ::getpid();
  std::filesystem::create_directories(drops_.File("theirs"));
  trace_dir_ = drops_.File("theirs");
  Poll(pid);
  StartProducer(pid, Producer::kWrites);
  const RunOutcome out = Run(Job(ByPid(pid)));
  ASSERT_TRUE(out.status.ok()) << out.status << "\n" << messages_;
  EXPECT_THAT(config_text_, HasSubstr(absl::StrCat("ACTIVITIES_LOG_FILE=", trace_dir_, "/",
                                                   job_.id(), "/", job_.id(), ".json\n")));
  EXPECT_THAT(messages_, HasSubstr("under the processes' KINETO_ONDEMAND_TRACE_DIR"));
  EXPECT_FALSE(std::filesystem::exists(trace_dir_ + "/" + job_.id()));  // removed after
}

TEST_F(AttachJobTest, ASymlinkedTraceDirIsNotFollowed) {
  const pid_t pid = ::getpid();
  std::filesystem::create_directories(drops_.File("elsewhere"));
  std::filesystem::create_directory_symlink(drops_.File("elsewhere"), drops_.File("link"));
  trace_dir_ = drops_.File("link");
  Poll(pid);
  StartProducer(pid, Producer::kWrites);
  const RunOutcome out = Run(Job(ByPid(pid)));
  ASSERT_TRUE(out.status.ok()) << out.status << "\n" << messages_;
  EXPECT_THAT(messages_, HasSubstr(absl::StrCat("cannot use KINETO_ONDEMAND_TRACE_DIR ",
                                                trace_dir_)));
  EXPECT_THAT(config_text_, HasSubstr(absl::StrCat("ACTIVITIES_LOG_FILE=", drops_.File("root"))));
  EXPECT_TRUE(std::filesystem::is_empty(drops_.File("elsewhere")));
}

TEST_F(AttachJobTest, NoMatchListsWhatPollsAndStoresNothing) {
  Poll(::getpid());
  const RunOutcome out = Run(Job(ByPid(999999)));
  EXPECT_EQ(out.status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_THAT(out.status.message(), HasSubstr("process 999999 does not poll this daemon"));
  EXPECT_THAT(out.status.message(), HasSubstr(absl::StrCat(::getpid(), " (python train.py)")));
  EXPECT_TRUE(out.artifacts.empty());
  EXPECT_TRUE(DropFoldersGone());
}

TEST_F(AttachJobTest, AnotherUsersProcessIsRefused) {
  Poll(::getpid());  // root's (uid 0)
  const RunOutcome out = Run(Job(ByPid(::getpid()), 4321));
  EXPECT_EQ(out.status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(out.status.message(), HasSubstr("belongs to another user (uid 0)"));
  // A token user with no uid, even named "root", traces nothing: the record says who it is.
  const RunOutcome token = Run(Job(ByPid(::getpid()), std::nullopt, "root"));
  EXPECT_EQ(token.status.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(token.status.message(), HasSubstr("has no Unix user"));
}

TEST_F(AttachJobTest, TraceThatNeverArrivesFailsAtTheDeadline) {
  const pid_t pid = ::getpid();
  Poll(pid);
  StartProducer(pid, Producer::kSilent);
  std::atomic<bool> ran{false};
  std::thread advance([&] {
    while (!delivered_ && !stop_) std::this_thread::sleep_for(milliseconds(10));
    while (!ran) {  // past start + window + margin, however late the runner looks
      std::this_thread::sleep_for(milliseconds(100));
      clock_.Advance(milliseconds(60000));
    }
  });
  const RunOutcome out = Run(Job(ByPid(pid)));
  ran = true;
  advance.join();
  EXPECT_EQ(out.status.code(), absl::StatusCode::kDeadlineExceeded) << out.status;
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_THAT(out.status.message(), HasSubstr(absl::StrCat("no trace arrived from ", pid)));
  EXPECT_TRUE(out.artifacts.empty());
  EXPECT_TRUE(DropFoldersGone());
}

TEST_F(AttachJobTest, AProcessThatExitsMidTraceIsSaid) {
  child_ = Sleeper();
  Poll(child_);
  StartProducer(child_, Producer::kDies);
  const RunOutcome out = Run(Job(ByPid(child_)));
  child_ = -1;  // reaped by the producer
  EXPECT_EQ(out.status.code(), absl::StatusCode::kAborted) << out.status;
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_THAT(out.status.message(), HasSubstr("exited mid-trace"));
  ASSERT_EQ(out.attach_targets.size(), 1u);
  EXPECT_EQ(out.attach_targets[0].reason(), "exited mid-trace");
}

TEST_F(AttachJobTest, KinetoIgnoringOurPathIsSaid) {
  child_ = Sleeper();
  Poll(child_);
  StartProducer(child_, Producer::kDefaultPath);
  const RunOutcome out = Run(Job(ByPid(child_)));
  std::remove(default_path_.c_str());
  EXPECT_EQ(out.status.code(), absl::StatusCode::kFailedPrecondition) << out.status;
  EXPECT_THAT(out.status.message(), HasSubstr("ignored the trace path it was given"));
  EXPECT_THAT(out.status.message(), HasSubstr("/tmp/libkineto_activities_"));
  EXPECT_TRUE(out.artifacts.empty());
}

TEST_F(AttachJobTest, CancelWithdrawsARequestNotTaken) {
  const pid_t pid = ::getpid();
  Poll(pid);
  StartTicker();
  std::thread canceller([&] {
    while (true) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (std::find(stages_.begin(), stages_.end(), "waiting") != stages_.end()) break;
      }
      std::this_thread::sleep_for(milliseconds(5));
    }
    cancel_.cancelled = true;
  });
  const RunOutcome out = Run(Job(ByPid(pid)));
  canceller.join();
  EXPECT_EQ(out.status.code(), absl::StatusCode::kCancelled);
  EXPECT_TRUE(out.cancel_note.empty());  // nothing was started in the process
  EXPECT_EQ(Poll(pid), "");               // the request is gone: the next poll takes nothing
  EXPECT_EQ(endpoint_->registry().List()[0].state, AttachState::kIdle);
  EXPECT_TRUE(DropFoldersGone());
}

TEST_F(AttachJobTest, CancelAfterKinetoTookItSaysItCannotBeStopped) {
  const pid_t pid = ::getpid();
  Poll(pid);
  StartProducer(pid, Producer::kSilent);
  StartTicker();
  std::thread canceller([&] {
    while (!delivered_) std::this_thread::sleep_for(milliseconds(5));
    cancel_.cancelled = true;
  });
  const RunOutcome out = Run(Job(ByPid(pid)));
  canceller.join();
  EXPECT_EQ(out.status.code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(out.cancel_note, HasSubstr("cannot be stopped"));
}

// ---- SubmitJob's side ----------------------------------------------------------------------

absl::Status Submit(const v1::AttachSpec& spec, const Identity& who,
                    std::string* device = nullptr) {
  v1::SubmitJobRequest r;
  *r.mutable_attach() = spec;
  std::string d;
  DaemonConfig config;
  const absl::Status s = ValidateSubmit(r, config, who, &d);
  if (device != nullptr) *device = d;
  return s;
}

Identity UnixRoot() {
  Identity who;
  who.user = "root";
  who.uid = 0;
  who.unix_peer = true;
  return who;
}

TEST(AttachSubmit, BoundsAndOneTarget) {
  v1::AttachSpec ok;
  ok.add_pids(4242);
  std::string device;
  EXPECT_TRUE(Submit(ok, UnixRoot(), &device).ok());
  EXPECT_EQ(device, "attach");
  auto msg = [](const v1::AttachSpec& s) {
    return std::string(Submit(s, UnixRoot()).message());
  };
  v1::AttachSpec none;
  EXPECT_THAT(msg(none), HasSubstr("exactly one target"));
  v1::AttachSpec two = ok;
  two.set_all(true);
  EXPECT_THAT(msg(two), HasSubstr("exactly one target"));
  v1::AttachSpec init;
  init.add_pids(1);
  EXPECT_THAT(msg(init), HasSubstr("--pid (attach.pids): 1 is not a process to trace"));
  v1::AttachSpec many;
  for (int i = 0; i < 65; ++i) many.add_pids(100 + i);
  EXPECT_THAT(msg(many), HasSubstr("at most 64"));
  v1::AttachSpec both = ok;
  both.set_duration_ms(10);
  both.set_iterations(2);
  EXPECT_THAT(msg(both), HasSubstr("not both"));
  v1::AttachSpec long_window = ok;
  long_window.set_duration_ms(600001);
  EXPECT_THAT(msg(long_window), HasSubstr("--duration-ms (attach.duration_ms): 600001 is outside 1..600000"));
  v1::AttachSpec zero_iter = ok;
  zero_iter.set_iterations(0);
  EXPECT_THAT(msg(zero_iter), HasSubstr("--iterations (attach.iterations): 0 is outside 1..100000"));
  v1::AttachSpec slurm;
  slurm.set_slurm_job_id("12;rm");
  EXPECT_THAT(msg(slurm), HasSubstr("is not a Slurm job id"));
  v1::AttachSpec probe = ok;
  probe.mutable_profiler()->set_overhead_budget_pct(3);
  EXPECT_THAT(msg(probe), HasSubstr("--overhead-budget (attach.profiler.overhead_budget_pct): does not apply"));
  v1::AttachSpec act = ok;
  act.mutable_profiler()->add_activities("tpu");
  EXPECT_THAT(msg(act), HasSubstr("'tpu' is not cpu or cuda"));
}

TEST(AttachSubmit, OnlyUnixUsersUnderTheirOwnNameOrAdmins) {
  v1::AttachSpec ok;
  ok.add_pids(4242);
  Identity token;
  token.user = "alice";  // a token over TCP: no uid
  const absl::Status t = Submit(ok, token);
  EXPECT_EQ(t.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(t.message(), HasSubstr("token user alice has no Unix user on this host"));
  Identity admin = token;
  admin.admin = true;
  EXPECT_TRUE(Submit(ok, admin).ok());
  Identity mismatched = UnixRoot();
  mismatched.user = "alice";  // a token naming alice, sent over the socket by uid 0
  mismatched.admin = false;
  EXPECT_EQ(Submit(ok, mismatched).code(), absl::StatusCode::kPermissionDenied);
  Identity numbered;
  numbered.user = "uid:4321";
  numbered.uid = 4321;
  numbered.unix_peer = true;
  EXPECT_TRUE(Submit(ok, numbered).ok());
}

// Issue 37 §4: a token user attaches as the Unix user attach_unix_users maps it to (nobody,
// uid 65534, is on every host these tests run on); none: refused with that reason.
TEST(AttachSubmit, ATokenUserAttachesAsItsMappedUnixUser) {
  DaemonConfig config;
  config.attach_unix_users = {"alice=nobody", "carol=root", "dave=no-such-user-37x"};
  Identity alice;
  alice.user = "alice";  // a token over TCP
  absl::StatusOr<Identity> mapped = AttachIdentity(alice, config);
  ASSERT_TRUE(mapped.ok()) << mapped.status();
  ASSERT_TRUE(mapped->uid.has_value());
  EXPECT_EQ(*mapped->uid, 65534u);
  EXPECT_EQ(mapped->user, "alice");  // still the job's owner by name
  Identity bob;
  bob.user = "bob";
  absl::StatusOr<Identity> none = AttachIdentity(bob, config);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(none.status().message(), HasSubstr("attach_unix_users maps none for it"));
  EXPECT_THAT(none.status().message(), HasSubstr("'bob=<unix user>'"));
  // A mapping to root or to a user gone from the host since the daemon checked it.
  Identity carol;
  carol.user = "carol";
  EXPECT_THAT(AttachIdentity(carol, config).status().message(), HasSubstr("is root"));
  Identity dave;
  dave.user = "dave";
  EXPECT_THAT(AttachIdentity(dave, config).status().message(), HasSubstr("is not on this host"));
  // On the Unix socket, a token is accepted where it maps to the peer's own uid only.
  Identity peer = alice;
  peer.uid = 65534;
  peer.unix_peer = true;
  EXPECT_TRUE(AttachIdentity(peer, config).ok());
  peer.uid = 4321;
  EXPECT_EQ(AttachIdentity(peer, config).status().code(), absl::StatusCode::kPermissionDenied);
}

// The mapping is checked where the daemon reads its config (start-up and SIGHUP): the entry's
// form, one per token user, a Unix user of this host, not root.
TEST(AttachSubmit, TheMappingIsCheckedWithTheConfig) {
  auto problems = [](std::vector<std::string> entries) {
    DaemonConfig config;
    config.listen = {"unix:/tmp/x.sock"};
    config.attach_unix_users = std::move(entries);
    return std::string(ValidateDaemonConfig(config).message());
  };
  EXPECT_EQ(problems({"alice=nobody", "bob=nobody"}), problems({}));
  EXPECT_THAT(problems({"alice"}), HasSubstr("attach_unix_users (--attach-unix-user): 'alice' is "
                                             "not TOKEN_USER=UNIX_USER"));
  EXPECT_THAT(problems({"al ice=nobody"}), HasSubstr("is not a token user name"));
  EXPECT_THAT(problems({"alice=nobody", "alice=daemon"}), HasSubstr("'alice' is mapped twice"));
  EXPECT_THAT(problems({"alice=no-such-user-37x"}),
              HasSubstr("alice=no-such-user-37x: Unix user 'no-such-user-37x' is not on this host"));
  EXPECT_THAT(problems({"alice=root"}), HasSubstr("is root"));
}

}  // namespace
}  // namespace libreyolo::daemon::attach
