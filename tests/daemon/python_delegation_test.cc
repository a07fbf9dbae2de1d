// Issue 38 §4: `libreyolo profile infer|run` of a native checkpoint of a family the engine lacks,
// through the private daemon the client starts (and once on a daemon of its own, --remote, the
// checkpoint named in its models directory): the job runs the Python LibreYOLO's own
// `libreyolo profile run|infer` (the project's Python environment) and gives a job and its
// profile like any other; its failures come back with its last line and the mapped exit code; a
// cancel mid-run leaves no process of its group behind. The checkpoints (YOLOX-n and D-FINE-n
// from random init) and the dataset are made at test time by the Python tool
// (make_delegated_inputs.py), once per build tree.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/file.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/daemon/daemon_process.h"

#ifndef LIBREYOLO_PYTHON
#error "LIBREYOLO_PYTHON must name the project's Python (tests/daemon/CMakeLists.txt)"
#endif

namespace libreyolo::daemon_test {
namespace {

using ::testing::HasSubstr;

// The process group of `pid` (/proc/<pid>/stat's fifth field), -1 when it is gone.
pid_t GroupOf(pid_t pid) {
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return -1;
  char state = 0;
  int ppid = 0, pgrp = -1;
  if (std::sscanf(stat.c_str() + paren + 2, "%c %d %d", &state, &ppid, &pgrp) != 3) return -1;
  return pgrp;
}

// Processes (not zombies) of process group `pgid`.
std::vector<pid_t> GroupMembers(pid_t pgid) {
  std::vector<pid_t> out;
  for (const fs::directory_entry& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = std::stoi(name);
    if (GroupOf(pid) == pgid && !Ended(pid)) out.push_back(pid);
  }
  return out;
}

class PythonDelegationTest : public ::testing::Test {
 protected:
  // The inputs are made once per build tree (each test case is its own process under ctest) and
  // shared: made under a lock, marked done last.
  static void SetUpTestSuite() {
    inputs_ = new std::string(std::string(LIBREYOLO_BINARY_DIR) + "/tests/daemon/delegated_inputs");
    made_ = new CommandResult();
    made_->exit_code = 0;
    const int lock = ::open((*inputs_ + ".lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
    if (lock >= 0) ::flock(lock, LOCK_EX);
    if (!fs::exists(*inputs_ + "/done")) {
      fs::remove_all(*inputs_);
      *made_ = RunCommand({LIBREYOLO_PYTHON,
                           std::string(LIBREYOLO_SOURCE_DIR) + "/tests/daemon/make_delegated_inputs.py",
                           *inputs_},
                          {}, seconds(300));
      if (made_->exit_code == 0) WriteFile(*inputs_ + "/done", "");
    }
    if (lock >= 0) ::close(lock);
  }
  static void TearDownTestSuite() {
    delete made_;
    delete inputs_;
  }
  void SetUp() override {
    ASSERT_EQ(made_->exit_code, 0) << made_->Describe();
    fs::create_directories(dir_.File("run"));
    ::chmod(dir_.File("run").c_str(), 0700);
    const std::string python_env = fs::path(LIBREYOLO_PYTHON).parent_path().parent_path().string();
    env_ = {"XDG_RUNTIME_DIR=" + dir_.File("run"), "LIBREYOLO_STATE_DIR=" + dir_.File("state"),
            std::string("LIBREYOLOD=") + LIBREYOLOD_BINARY, "LIBREYOLO_PYTHON_ENV=" + python_env,
            "LIBREYOLO_RECONNECT_TIMEOUT_S=10"};
  }
  void TearDown() override {
    for (pid_t pid : ProcessesWithArgument(dir_.File("run"))) ::kill(pid, SIGKILL);
  }
  static std::string Input(const std::string& name) { return *inputs_ + "/" + name; }
  CommandResult Client(const std::vector<std::string>& args) {
    return RunClient(args, env_, seconds(240), dir_.path());
  }
  std::string DaemonLog() const { return ReadFile(dir_.File("state") + "/libreyolod.log"); }

  static std::string* inputs_;
  static CommandResult* made_;
  TempDir dir_;
  std::vector<std::string> env_;
};
std::string* PythonDelegationTest::inputs_ = nullptr;
CommandResult* PythonDelegationTest::made_ = nullptr;

TEST_F(PythonDelegationTest, InferOfAYoloxCheckpointIsAJobOfThePythonTool) {
  const std::string project = dir_.File("px");
  const CommandResult c = Client({"profile", "infer", "--weights", Input("yolox_n.pt"), "--device",
                                  "cpu", "--imgsz", "64", "--warmup", "1", "--runs", "2",
                                  "--threads", "1", "--project", project, "--json"});
  ASSERT_EQ(c.exit_code, 0) << c.Describe() << DaemonLog();
  const std::string id = QueuedJobId(c.out + c.err);
  ASSERT_FALSE(id.empty()) << c.Describe();
  // The Python tool's profile, as it wrote it: its schema, its config (the flags it was given).
  const std::string profile = ReadFile(project + "/infer/profile.json");
  EXPECT_THAT(profile, HasSubstr("libreyolo.profile.analysis/v1"));
  EXPECT_THAT(profile, HasSubstr("\"imgsz\": 64"));
  EXPECT_TRUE(fs::exists(project + "/infer/profile_trace.json"));
  // The job says who measured; its output is kept beside the profile.
  const CommandResult show = Client({"jobs", "show", id, "--json"});
  ASSERT_EQ(show.exit_code, 0) << show.Describe();
  EXPECT_THAT(show.out, HasSubstr("python-libreyolo")) << show.out;
  EXPECT_THAT(show.out, HasSubstr("python_tool.log")) << show.out;
  const CommandResult summary = Client({"profile", "summary", project + "/infer/profile.json"});
  EXPECT_EQ(summary.exit_code, 0) << summary.Describe();
  EXPECT_THAT(summary.out, HasSubstr("latency")) << summary.out;
  // The readers on the stored job, as on any job.
  const CommandResult stored = Client({"profile", "summary", "job:" + id});
  EXPECT_EQ(stored.exit_code, 0) << stored.Describe();
  EXPECT_THAT(stored.out, HasSubstr("the Python LibreYOLO")) << stored.out;

  // --repeat 2: its trials' files and its repeat file, put back as it lays them out.
  const std::string repeated = dir_.File("px2");
  const CommandResult r = Client({"profile", "infer", "--weights", Input("yolox_n.pt"), "--device",
                                  "cpu", "--imgsz", "64", "--warmup", "0", "--runs", "1",
                                  "--repeat", "2", "--no-trace", "--threads", "1", "--project",
                                  repeated});
  ASSERT_EQ(r.exit_code, 0) << r.Describe() << DaemonLog();
  EXPECT_TRUE(fs::exists(repeated + "/infer_0/profile.json")) << r.Describe();
  EXPECT_TRUE(fs::exists(repeated + "/infer_1/profile.json")) << r.Describe();
  EXPECT_THAT(ReadFile(repeated + "/infer_repeat.json"), HasSubstr("\"img_per_s_n\": 2"));
}

// A shared daemon: the checkpoint by name in its models directory, its Python tool configured,
// the stored job read and drawn remotely.
TEST_F(PythonDelegationTest, RemoteInferByNameInTheModelsDirectory) {
  DaemonDirs dirs(dir_.File("d"));
  fs::copy_file(Input("yolox_n.pt"), dirs.models + "/yolox_n.pt");
  const std::string tool = fs::path(LIBREYOLO_PYTHON).parent_path().string() + "/libreyolo";
  std::vector<std::string> flags = dirs.Flags();
  flags.insert(flags.end(), {"--python-tool", tool});
  auto daemon = DaemonProcess::Start(flags, dir_.File("daemon.log"));
  ASSERT_TRUE(daemon->WaitServing()) << daemon->LogTail();
  const std::vector<std::string> remote = {"--remote", "unix:" + dirs.socket};
  std::vector<std::string> args = {"profile", "infer", "--weights", "yolox_n.pt", "--device",
                                   "cpu", "--imgsz", "64", "--warmup", "0", "--runs", "1",
                                   "--no-trace", "--project", dir_.File("pm"), "--json"};
  args.insert(args.end(), remote.begin(), remote.end());
  const CommandResult c = RunClient(args);
  ASSERT_EQ(c.exit_code, 0) << c.Describe() << daemon->LogTail();
  const std::string id = QueuedJobId(c.out + c.err);
  std::vector<std::string> summary = {"profile", "summary", "job:" + id};
  summary.insert(summary.end(), remote.begin(), remote.end());
  const CommandResult s = RunClient(summary);
  EXPECT_EQ(s.exit_code, 0) << s.Describe();
  EXPECT_THAT(s.out, HasSubstr("the Python LibreYOLO")) << s.out;
  std::vector<std::string> report = {"profile", "report", "job:" + id, "-o", dir_.File("r.html")};
  report.insert(report.end(), remote.begin(), remote.end());
  const CommandResult h = RunClient(report);
  EXPECT_EQ(h.exit_code, 0) << h.Describe();
  EXPECT_TRUE(fs::exists(dir_.File("r.html")));
  EXPECT_EQ(daemon->Terminate(seconds(60), nullptr), 0) << daemon->LogTail();
}

TEST_F(PythonDelegationTest, RunOfAYoloxCheckpointTrainsOnTheTestsDataset) {
  const std::string project = dir_.File("pr");
  const CommandResult c = Client(
      {"profile", "run", Input("data/data.yaml"), "--weights", Input("yolox_n.pt"), "--device",
       "cpu", "--imgsz", "64", "--batch", "2", "--steps", "2", "--warmup", "1", "--workers", "0",
       "--threads", "1", "--project", project, "--json"});
  ASSERT_EQ(c.exit_code, 0) << c.Describe() << DaemonLog();
  const std::string profile = ReadFile(project + "/prof/profile.json");
  EXPECT_THAT(profile, HasSubstr("YOLOX-n")) << profile.substr(0, 400);
  EXPECT_TRUE(fs::exists(project + "/prof/profile_trace.json"));
  // Its epochs and its verdict came as the job's events.
  EXPECT_THAT(c.err, HasSubstr("Average loss")) << c.err;
  const CommandResult summary = Client({"profile", "summary", project + "/prof/profile.json"});
  EXPECT_EQ(summary.exit_code, 0) << summary.Describe();
}

TEST_F(PythonDelegationTest, InferOfADetrStyleCheckpoint) {
  // D-FINE-n (a DETR-style query head). Its postprocess takes the top 300 queries: the Python
  // tool fails below 256 px ("selected index k out of range"), so this size.
  const std::string project = dir_.File("pd");
  const CommandResult c = Client({"profile", "infer", "--weights", Input("dfine_n.pt"), "--device",
                                  "cpu", "--imgsz", "256", "--warmup", "0", "--runs", "1",
                                  "--threads", "2", "--no-trace", "--project", project, "--json"});
  ASSERT_EQ(c.exit_code, 0) << c.Describe() << DaemonLog();
  EXPECT_THAT(ReadFile(project + "/infer/profile.json"), HasSubstr("\"imgsz\": 256"));
}

TEST_F(PythonDelegationTest, WhatThePythonToolRefusesOrLacks) {
  // Its own refusal (no image in the folder): its exit code (2) and its last line.
  fs::create_directories(dir_.File("no_images"));
  const CommandResult empty = Client({"profile", "infer", dir_.File("no_images"), "--weights",
                                      Input("yolox_n.pt"), "--device", "cpu", "--imgsz", "64",
                                      "--runs", "1", "--project", dir_.File("pe")});
  EXPECT_EQ(empty.exit_code, 2) << empty.Describe();
  EXPECT_THAT(empty.err, HasSubstr("no images found at")) << empty.Describe();
  EXPECT_THAT(empty.err, HasSubstr("exited with code 2")) << empty.Describe();
  // An option it has no flag for fails the job at once, naming it.
  const CommandResult cycles = Client(
      {"profile", "run", Input("data/data.yaml"), "--weights", Input("yolox_n.pt"), "--device",
       "cpu", "--cycles", "2", "--steps", "1", "--warmup", "0", "--project", dir_.File("pc")});
  EXPECT_EQ(cycles.exit_code, 2) << cycles.Describe();
  EXPECT_THAT(cycles.err, HasSubstr("--cycles (run.cycles)")) << cycles.Describe();
  EXPECT_THAT(cycles.err, HasSubstr("yolox")) << cycles.Describe();
}

TEST_F(PythonDelegationTest, CancelMidRunLeavesNoProcessOfItsGroup) {
  const std::string project = dir_.File("pcancel");
  std::vector<std::string> argv = {LIBREYOLO_CLIENT_BINARY, "profile", "run",
                                   Input("data/data.yaml"), "--weights", Input("yolox_n.pt"),
                                   "--device", "cpu", "--imgsz", "64", "--batch", "2", "--steps",
                                   "200", "--warmup", "1", "--workers", "1", "--threads", "1",
                                   "--project", project, "--json"};
  const pid_t client = Spawn(argv, ChildEnvironment(env_), dir_.File("c.out"), dir_.File("c.err"),
                             dir_.path());
  std::string id;
  ASSERT_TRUE(PollUntil([&] { return !(id = QueuedJobId(ReadFile(dir_.File("c.err")))).empty(); },
                        seconds(120)))
      << ReadFile(dir_.File("c.err")) << DaemonLog();
  // The Python tool runs with the job's drop folder (named by the job id) as its --project; its
  // data-loader worker (--workers 1) is a second process of its group, there once it trains.
  pid_t pgid = -1;
  ASSERT_TRUE(PollUntil(
      [&] {
        for (pid_t pid : ProcessesWithArgument(id)) {
          const pid_t g = GroupOf(pid);
          if (g > 0 && g == pid && GroupMembers(g).size() >= 2) pgid = g;
        }
        return pgid > 0;
      },
      seconds(120), milliseconds(100)))
      << ReadFile(dir_.File("c.err")) << DaemonLog();
  const CommandResult cancel = Client({"jobs", "cancel", id});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.Describe();
  bool timed_out = false;
  WaitChild(client, seconds(120), &timed_out);
  EXPECT_FALSE(timed_out) << ReadFile(dir_.File("c.err"));
  EXPECT_THAT(GroupMembers(pgid), ::testing::IsEmpty());
  EXPECT_THAT(ProcessesWithArgument(id), ::testing::IsEmpty());
  const CommandResult show = Client({"jobs", "show", id, "--json"});
  EXPECT_THAT(show.out, HasSubstr("CANCELLED")) << show.Describe();
  EXPECT_THAT(show.out, HasSubstr("python-libreyolo")) << show.Describe();
}

}  // namespace
}  // namespace libreyolo::daemon_test
