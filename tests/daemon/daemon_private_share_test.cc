// One private daemon, several commands (issue 20, section 3). Each command is a real `libreyolo`
// process with its own lease in <runtime>/libreyolo/leases; the daemon is the one the first
// command starts on demand. Proved here, through the process boundary only:
// - three overlapping commands (two `profile infer`, one `profile run`) all succeed on the one
//   daemon, whichever ends first, and the last one out stops it;
// - the daemon killed (SIGKILL) just before a download: the command fails within seconds with
//   the reason, and keeps the profile.json it already has (the summary is still printed);
// - a command killed (SIGKILL) mid-job leaves no lease that counts: the daemon finishes the job
//   and stops by itself, and the next command starts a fresh one.
// No timing is guessed: every wait polls a file or a process with a deadline; the overlap is
// made by stopping the first command (SIGSTOP) until the others have queued their jobs.
#include <gmock/gmock.h>

#include <algorithm>
#include <filesystem>

#include "tests/daemon/daemon_process.h"

#ifndef LIBREYOLO_GATE_CLIENT_BINARY
#error "LIBREYOLO_GATE_CLIENT_BINARY must name the libreyolo_download_gate binary"
#endif

namespace libreyolo::daemon_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Tiny CPU jobs, one engine thread, no overhead probes.
std::vector<std::string> InferArgs(const std::string& project) {
  return Words(
      "profile infer --json --device cpu --imgsz 64 --warmup 1 --runs 3 --threads 1 "
      "--no-record-shapes --no-profile-memory --no-with-flops --project " +
      project);
}
std::vector<std::string> RunArgs(const std::string& project) {
  return Words(
      "profile run synthetic:8 --json --device cpu --imgsz 64 --batch 2 --steps 2 "
      "--warmup 1 --workers 0 --threads 1 --no-record-shapes --no-profile-memory "
      "--no-with-flops --project " +
      project);
}

// A user's private-daemon environment inside a test's temp dir.
class PrivateDaemonShareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    runtime_ = dir_.File("run");
    state_ = dir_.File("st");
    fs::create_directories(runtime_);
    fs::create_directories(dir_.File("home"));
    socket_ = runtime_ + "/libreyolo/libreyolod.sock";
    leases_ = runtime_ + "/libreyolo/leases";
    ASSERT_LT(socket_.size(), 100u);
    env_ =
        ChildEnvironment({"XDG_RUNTIME_DIR=" + runtime_, "LIBREYOLO_STATE_DIR=" + state_,
                          std::string("LIBREYOLOD=") + LIBREYOLOD_BINARY,
                          "HOME=" + dir_.File("home"), "XDG_STATE_HOME=" + dir_.File("home/state"),
                          // A regression fails in seconds, not after the default 300 s.
                          "LIBREYOLO_RECONNECT_TIMEOUT_S=10"});
  }
  void TearDown() override {
    for (pid_t pid : children_) {
      if (pid > 0 && ::kill(pid, 0) == 0) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
    }
    for (pid_t pid : ProcessesWithArgument(socket_)) ::kill(pid, SIGKILL);  // a daemon left
  }

  // Starts `libreyolo ARGS` (or `binary`); its output goes to <name>.out / <name>.err.
  pid_t Start(const std::string& name, const std::vector<std::string>& args,
              const std::string& binary = LIBREYOLO_CLIENT_BINARY,
              const std::vector<std::string>& extra_env = {}) {
    std::vector<std::string> argv = {binary};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<std::string> env = env_;
    env.insert(env.end(), extra_env.begin(), extra_env.end());
    const pid_t pid = Spawn(argv, env, Out(name), Err(name), dir_.path());
    children_.push_back(pid);
    return pid;
  }
  std::string Out(const std::string& name) const { return dir_.File(name + ".out"); }
  std::string Err(const std::string& name) const { return dir_.File(name + ".err"); }
  std::string Describe(const std::string& name) const {
    return "--- " + name + " stdout ---\n" + ReadFile(Out(name)).substr(0, 3000) + "\n--- " + name +
           " stderr ---\n" + ReadFile(Err(name)) + "\n--- daemon log ---\n" + DaemonLog();
  }
  std::string DaemonLog() const { return ReadFile(state_ + "/libreyolod.log"); }
  // The job id a command printed once its job was queued ("" until then).
  std::string JobIdOf(const std::string& name) const { return QueuedJobId(ReadFile(Err(name))); }
  bool WaitQueued(const std::string& name) {
    return PollUntil([&] { return !JobIdOf(name).empty(); }, milliseconds(120000));
  }
  // The daemon serving the private socket (its engine workers do not listen), -1 for none.
  pid_t DaemonPid() const {
    const std::vector<pid_t> pids =
        ProcessesWithArgument(std::string("--listen") + '\0' + "unix:" + socket_ + '\0');
    return pids.size() == 1 ? pids[0] : -1;
  }
  int LeaseFiles() const {
    int n = 0;
    std::error_code ec;
    for (auto it = fs::directory_iterator(leases_, ec); !ec && it != fs::directory_iterator();
         it.increment(ec)) {
      n += it->path().extension() == ".lease";
    }
    return n;
  }

  TempDir dir_;
  std::string runtime_, state_, socket_, leases_;
  std::vector<std::string> env_;
  std::vector<pid_t> children_;
};

TEST_F(PrivateDaemonShareTest, ThreeOverlappingCommandsAllSucceedOnOneDaemon) {
  // Issue 36 §1: the default --weights is found where the Python LibreYOLO finds it, in
  // weights/ under the directory the command runs in (the commands run in dir_).
  fs::create_directories(dir_.File("weights"));
  fs::copy_file(std::string(LIBREYOLO_SHARED_DIR) + "/fixtures/models/libreyolo9t_seed1234.pt",
                dir_.File("weights/LibreYOLO9t.pt"));
  const pid_t a = Start("a", InferArgs(dir_.File("pa")));
  ASSERT_TRUE(WaitQueued("a")) << Describe("a");
  // `a` started the daemon; it stays stopped (its lease held) until the others are queued, so
  // all three overlap, and `a`, whose job is first in line, ends first.
  ASSERT_EQ(::kill(a, SIGSTOP), 0);
  const pid_t b = Start("b", InferArgs(dir_.File("pb")));
  const pid_t c = Start("c", RunArgs(dir_.File("pc")));
  const bool queued = WaitQueued("b") && WaitQueued("c");
  ASSERT_EQ(::kill(a, SIGCONT), 0);
  ASSERT_TRUE(queued) << Describe("b") << Describe("c");

  EXPECT_EQ(WaitChild(a, milliseconds(240000)), 0) << Describe("a");
  EXPECT_EQ(WaitChild(b, milliseconds(240000)), 0) << Describe("b");
  EXPECT_EQ(WaitChild(c, milliseconds(240000)), 0) << Describe("c");
  for (const char* p : {"pa/infer", "pb/infer", "pc/prof"}) {
    const std::string profile = ReadFile(dir_.File(std::string(p) + "/profile.json"));
    EXPECT_FALSE(profile.empty()) << p;
    // The user's weights/LibreYOLO9t.pt, not a random init.
    EXPECT_THAT(profile, HasSubstr("\"weights\":\"" + dir_.File("weights/LibreYOLO9t.pt") + "\""))
        << p;
    EXPECT_THAT(profile, Not(HasSubstr("random-init"))) << p;
  }
  // One daemon served the three, and the last command out stopped it before it returned.
  const std::string log = DaemonLog();
  size_t starts = 0;
  for (size_t at = log.find("serving on"); at != std::string::npos;
       at = log.find("serving on", at + 1)) {
    ++starts;
  }
  EXPECT_EQ(starts, 1u) << log;
  EXPECT_THAT(log, HasSubstr("libreyolod: stopped"));
  EXPECT_THAT(ProcessesWithArgument(socket_), ::testing::IsEmpty());
  EXPECT_EQ(LeaseFiles(), 0);
}

// Issue 22, section 3 and issue 36, section 4: identical `profile infer` commands got different
// switch sets (all on, shapes off, shapes off) as the probe read the load. The switches are now
// the flags, else fixed defaults: two identical commands, each on a fresh private daemon, record
// the same switches and each measures their cost (nothing is kept between jobs).
TEST_F(PrivateDaemonShareTest, IdenticalCommandsOnFreshDaemonsDecideTheirSwitchesAlike) {
  const auto args = [&](const std::string& project) {
    return Words(
        "profile infer --json --device cpu --imgsz 64 --warmup 1 --runs 3 --threads 1 "
        "--project " +
        project);  // every switch on auto
  };
  const pid_t a = Start("a", args(dir_.File("pa")));
  ASSERT_EQ(WaitChild(a, milliseconds(240000)), 0) << Describe("a");
  // The last command out stopped its daemon before it returned: the next one starts afresh.
  ASSERT_THAT(ProcessesWithArgument(socket_), ::testing::IsEmpty());
  const pid_t b = Start("b", args(dir_.File("pb")));
  ASSERT_EQ(WaitChild(b, milliseconds(240000)), 0) << Describe("b");
  const std::string log = DaemonLog();
  size_t starts = 0;
  for (size_t at = log.find("serving on"); at != std::string::npos;
       at = log.find("serving on", at + 1)) {
    ++starts;
  }
  EXPECT_EQ(starts, 2u) << log;
  // The profiler objects, without their spaces.
  const auto profiler = [&](const std::string& project) {
    std::string text = ReadFile(dir_.File(project + "/infer/profile.json"));
    text.erase(std::remove(text.begin(), text.end(), ' '), text.end());
    const size_t at = text.find("\"profiler\":{");
    return at == std::string::npos ? std::string() : text.substr(at, text.find('}', at) - at);
  };
  const std::string first = profiler("pa"), second = profiler("pb");
  for (const std::string& object : {first, second}) {
    EXPECT_THAT(object, Not(HasSubstr("switch_decision"))) << object;
    EXPECT_THAT(object, HasSubstr("\"switch_source\":{\"record_shapes\":\"default\"")) << object;
  }
  const auto value = [](const std::string& object, const std::string& key) {
    const size_t at = object.find("\"" + key + "\":");
    if (at == std::string::npos) return std::string("absent");
    const size_t from = at + key.size() + 3;
    return object.substr(from, object.find_first_of(",}", from) - from);
  };
  for (const char* key : {"record_shapes", "profile_memory", "with_flops"}) {
    EXPECT_EQ(value(first, key), value(second, key)) << key << "\n" << first << "\n" << second;
  }
  EXPECT_FALSE(std::filesystem::exists(state_ + "/switch-decisions")) << "no decisions kept";
  // Issue 36 §1: no weights anywhere: a random init, and the summary (here its --json) says
  // where the weights were looked for: weights/ and ./ where the command ran, then the private
  // daemon's models directory.
  const std::string summary = ReadFile(Out("a"));
  for (const std::string& place : {dir_.File("weights/LibreYOLO9t.pt"), dir_.File("LibreYOLO9t.pt"),
                                   state_ + "/models/LibreYOLO9t.pt"}) {
    EXPECT_THAT(summary, HasSubstr(place)) << summary.substr(0, 2000);
  }
  EXPECT_THAT(summary, HasSubstr("no weights file at ")) << summary.substr(0, 2000);
}

TEST_F(PrivateDaemonShareTest, TheDaemonKilledBeforeADownloadFailsItAtOnceAndKeepsTheProfile) {
  const std::string gate = dir_.File("gate");
  fs::create_directories(gate);
  // No reconnect budget from the fixture: a daemon that is gone must not be waited for at all.
  env_.erase(std::remove(env_.begin(), env_.end(), "LIBREYOLO_RECONNECT_TIMEOUT_S=10"), env_.end());
  const pid_t a =
      Start("a", InferArgs(dir_.File("pa")), LIBREYOLO_GATE_CLIENT_BINARY,
            {"LIBREYOLO_TEST_GATE_DIR=" + gate, "LIBREYOLO_TEST_GATE_ARTIFACT=report.html"});
  // report.html comes after profile.json (the artifacts are sorted by name).
  ASSERT_TRUE(PollUntil([&] { return fs::exists(gate + "/paused"); }, milliseconds(180000)))
      << Describe("a");
  const pid_t daemon = DaemonPid();
  ASSERT_GT(daemon, 0);
  const std::vector<pid_t> workers = WorkerPids(daemon);
  ASSERT_EQ(::kill(daemon, SIGKILL), 0);
  ASSERT_TRUE(PollUntil([&] { return Ended(daemon); }, milliseconds(10000)));
  for (pid_t w : workers) ::kill(w, SIGKILL);

  const auto go = Clock::now();
  WriteFile(gate + "/go", "");
  bool timed_out = false;
  const int code = WaitChild(a, milliseconds(60000), &timed_out);
  const double took = std::chrono::duration<double>(Clock::now() - go).count();
  ASSERT_FALSE(timed_out) << "the download waited for a daemon that is gone\n" << Describe("a");
  EXPECT_LT(took, 10.0) << Describe("a");
  EXPECT_NE(code, 0) << Describe("a");
  const std::string err = ReadFile(Err("a"));
  EXPECT_THAT(err, HasSubstr("report.html"));
  EXPECT_THAT(err, HasSubstr("was killed by SIGKILL"));
  EXPECT_THAT(err, HasSubstr("libreyolo jobs download"));
  // What it had is kept, and read: the profile, its summary, a report drawn from it.
  EXPECT_TRUE(fs::is_regular_file(dir_.File("pa/infer/profile.json"))) << Describe("a");
  EXPECT_THAT(ReadFile(Out("a")), HasSubstr("\"job_id\"")) << Describe("a");
  EXPECT_TRUE(fs::is_regular_file(dir_.File("pa/infer/report.html")));
  EXPECT_THAT(FilesNamed(dir_.File("pa"), ".tmp"), ::testing::IsEmpty());
}

TEST_F(PrivateDaemonShareTest, ACommandKilledMidJobLeavesNoLeaseThatKeepsTheDaemon) {
  const pid_t a = Start("a", InferArgs(dir_.File("pa")));
  ASSERT_TRUE(WaitQueued("a")) << Describe("a");
  const pid_t daemon = DaemonPid();
  ASSERT_GT(daemon, 0);
  ASSERT_EQ(::kill(a, SIGKILL), 0);
  EXPECT_EQ(WaitChild(a, milliseconds(10000)), -1);
  // Its lease died with it: the daemon runs the job to its end, then stops by itself.
  ASSERT_TRUE(PollUntil([&] { return Ended(daemon); }, milliseconds(180000)))
      << "the daemon outlived its last command\n"
      << Describe("a");
  const std::string log = DaemonLog();
  EXPECT_THAT(log, HasSubstr("no job to run and no lease"));
  EXPECT_THAT(log, HasSubstr("libreyolod: stopped"));
  EXPECT_EQ(LeaseFiles(), 0);
  const std::string id = JobIdOf("a");
  EXPECT_THAT(ReadFile(state_ + "/state/jobs/" + id + ".json"), HasSubstr("SUCCEEDED")) << id;

  // The next command starts a fresh daemon, sees the job, and stops the daemon again.
  const pid_t list = Start("list", {"jobs", "list", "--json"});
  EXPECT_EQ(WaitChild(list, milliseconds(120000)), 0) << Describe("list");
  EXPECT_THAT(ReadFile(Out("list")), HasSubstr(id));
  EXPECT_THAT(ProcessesWithArgument(socket_), ::testing::IsEmpty());
}

}  // namespace
}  // namespace libreyolo::daemon_test
