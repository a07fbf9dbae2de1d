// Issue 37 §1-3 with a real PyTorch process (the project's Python environment, CPU): a torch
// loop started with `libreyolo profile attach --env`'s environment registers with a real
// libreyolod (over --remote, and with the private daemon) within a deadline and shows in
// `attach --list` as idle with its pid and command line; and a duration configuration handed
// to such a process through the endpoint makes Kineto write a trace carrying the requested
// trace_id (the path `profile attach --pid` takes next).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <rapidjson/document.h>
#include <sys/socket.h>

#include "server/daemon/attach/attach_endpoint.h"
#include "tests/daemon/daemon_process.h"

#ifndef LIBREYOLO_PYTHON
#error "LIBREYOLO_PYTHON must name the project's Python"
#endif

namespace libreyolo::daemon_test {
namespace {

namespace attach = ::libreyolo::daemon::attach;

// A CPU torch loop; its command line carries `marker`.
constexpr char kLoop[] = R"(import sys, time, torch
x = torch.randn(64, 64)
end = time.time() + float(sys.argv[2])
while time.time() < end:
    y = x @ x
    time.sleep(0.005)
)";

// The process started with `env` (NAME=value lines), running kLoop for `seconds`.
pid_t StartLoop(const TempDir& tmp, const std::vector<std::string>& env, const std::string& marker,
                int seconds = 120) {
  const std::string script = tmp.Write("loop.py", kLoop);
  return Spawn({LIBREYOLO_PYTHON, script, marker, std::to_string(seconds)}, ChildEnvironment(env),
               tmp.File("py.log"), tmp.File("py.log"));
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

// `attach --list --json`'s entry for `pid`, once it is there (nullopt at the deadline).
std::optional<std::string> WaitListed(const std::vector<std::string>& remote, pid_t pid,
                                      const std::vector<std::string>& env, seconds timeout) {
  std::optional<std::string> found;
  PollUntil(
      [&] {
        std::vector<std::string> args = {"profile", "attach", "--list", "--json"};
        args.insert(args.end(), remote.begin(), remote.end());
        const CommandResult r = RunClient(args, env, seconds(30));
        rapidjson::Document doc;
        if (r.exit_code != 0 || doc.Parse(r.out.c_str()).HasParseError()) return false;
        if (!doc.HasMember("processes")) return false;
        for (const auto& p : doc["processes"].GetArray()) {
          if (p["pid"].GetInt() == pid) {
            found = r.out;
            return true;
          }
        }
        return false;
      },
      timeout, milliseconds(100));
  return found;
}

class AttachProcessTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (loop_ > 0) {
      ::kill(loop_, SIGKILL);
      ::waitpid(loop_, nullptr, 0);
    }
  }
  TempDir tmp_{"lyp"};
  pid_t loop_ = -1;
};

TEST_F(AttachProcessTest, TorchLoopRegistersWithTheDaemonAndIsListedIdle) {
  DaemonDirs dirs(tmp_.path());
  std::vector<std::string> flags = dirs.Flags();
  flags.insert(flags.end(), {"--attach-dir", tmp_.File("attach")});
  auto daemon = DaemonProcess::Start(flags, tmp_.File("daemon.log"));
  ASSERT_TRUE(daemon->WaitServing()) << daemon->LogTail();
  const std::vector<std::string> remote = {"--remote", "unix:" + dirs.socket};
  std::vector<std::string> args = {"profile", "attach", "--env"};
  args.insert(args.end(), remote.begin(), remote.end());
  const CommandResult env = RunClient(args);
  ASSERT_EQ(env.exit_code, 0) << env.Describe();
  const std::string dir = tmp_.File("attach") + "/" + std::to_string(::geteuid());
  EXPECT_EQ(Lines(env.out),
            (std::vector<std::string>{"KINETO_USE_DAEMON=1", "KINETO_IPC_SOCKET_DIR=" + dir}));
  const auto started = Clock::now();
  loop_ = StartLoop(tmp_, Lines(env.out), "attach-marker-remote");
  const std::optional<std::string> listed = WaitListed(remote, loop_, {}, seconds(60));
  ASSERT_TRUE(listed.has_value()) << ReadFile(tmp_.File("py.log")) << daemon->LogTail();
  std::cout << "registered and listed "
            << std::chrono::duration<double>(Clock::now() - started).count()
            << " s after the process started\n";
  rapidjson::Document doc;
  doc.Parse(listed->c_str());
  const auto& p = doc["processes"][0];
  EXPECT_EQ(p["pid"].GetInt(), loop_);
  EXPECT_STREQ(p["state"].GetString(), "ATTACH_STATE_IDLE");
  EXPECT_NE(std::string(p["command_line"].GetString()).find("attach-marker-remote"),
            std::string::npos);
  EXPECT_EQ(p["endpoint"].GetString(), dir);
  // The table names it too.
  args = {"profile", "attach", "--list"};
  args.insert(args.end(), remote.begin(), remote.end());
  const CommandResult table = RunClient(args);
  EXPECT_NE(table.out.find(std::to_string(loop_) + " "), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("idle"), std::string::npos) << table.out;
  // Killed, it leaves the list (death noticed by the next sweep, within a second or two).
  ::kill(loop_, SIGKILL);
  ::waitpid(loop_, nullptr, 0);
  const pid_t gone = loop_;
  loop_ = -1;
  EXPECT_TRUE(PollUntil(
      [&] {
        const CommandResult r = RunClient(args);
        return r.exit_code == 0 && r.out.find(std::to_string(gone) + " ") == std::string::npos;
      },
      seconds(30), milliseconds(200)));
}

TEST_F(AttachProcessTest, PrivateDaemonServesAttachAndStaysWhileAProcessPolls) {
  const std::vector<std::string> env = {"XDG_RUNTIME_DIR=" + tmp_.File("run"),
                                        "LIBREYOLO_STATE_DIR=" + tmp_.File("state"),
                                        "LIBREYOLOD=" LIBREYOLOD_BINARY};
  fs::create_directories(tmp_.File("run"));
  ::chmod(tmp_.File("run").c_str(), 0700);
  const CommandResult printed = RunClient({"profile", "attach", "--env"}, env);
  ASSERT_EQ(printed.exit_code, 0) << printed.Describe();
  const std::vector<std::string> lines = Lines(printed.out);
  ASSERT_EQ(lines.size(), 2u) << printed.out;
  EXPECT_EQ(lines[1], "KINETO_IPC_SOCKET_DIR=" + tmp_.File("run") + "/libreyolo/attach/" +
                          std::to_string(::geteuid()));
  loop_ = StartLoop(tmp_, lines, "attach-marker-private");
  // The private daemon outlived the command (the grace after --env), so the process registers.
  EXPECT_TRUE(WaitListed({}, loop_, env, seconds(60)).has_value()) << ReadFile(tmp_.File("py.log"));
  for (pid_t d : ProcessesWithArgument(tmp_.File("run"))) ::kill(d, SIGTERM);
  PollUntil([&] { return ProcessesWithArgument(tmp_.File("run")).empty(); }, seconds(30));
}

// If time allows (issue 37's next stage, proved here): a duration configuration handed to a
// registered process on its next idle poll makes Kineto write an on-demand trace whose
// trace_id is the one requested.
TEST_F(AttachProcessTest, DeliveredDurationConfigWritesATraceWithTheTraceId) {
  attach::AttachEndpointOptions options;
  options.socket_root = tmp_.File("attach");
  std::vector<std::string> warnings;
  auto endpoint = attach::AttachEndpoint::Start(options, &warnings);
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  absl::StatusOr<std::string> dir = (*endpoint)->PrepareUser(::geteuid());
  ASSERT_TRUE(dir.ok()) << dir.status();
  loop_ = StartLoop(tmp_, {"KINETO_USE_DAEMON=1", "KINETO_IPC_SOCKET_DIR=" + *dir}, "od");
  attach::AttachRegistry& registry = (*endpoint)->registry();
  ASSERT_TRUE(PollUntil([&] { return registry.IsRegistered(loop_, ::geteuid()); }, seconds(60)))
      << ReadFile(tmp_.File("py.log"));
  const std::string trace_id = "job-37-" + std::to_string(::getpid());
  absl::StatusOr<uint64_t> ticket = registry.SetPendingConfig(
      loop_,
      "ACTIVITIES_LOG_FILE=" + tmp_.File("od.json") +
          "\nPROFILE_START_TIME=0\nACTIVITIES_DURATION_MSECS=500\nREQUEST_TRACE_ID=" + trace_id);
  ASSERT_TRUE(ticket.ok()) << ticket.status();
  const auto asked = Clock::now();
  const std::optional<attach::Delivery> delivered =
      registry.WaitForDelivery(*ticket, libreyolo::Clock::Real().SteadyNow() + seconds(30));
  ASSERT_TRUE(delivered.has_value());
  const double to_delivery = std::chrono::duration<double>(Clock::now() - asked).count();
  const std::string trace = tmp_.File("od_" + std::to_string(loop_) + ".json");
  ASSERT_TRUE(PollUntil([&] { return fs::exists(trace); }, seconds(90), milliseconds(100)))
      << ReadFile(tmp_.File("py.log"));
  std::cout << "config delivered " << to_delivery << " s after it was put, trace written "
            << std::chrono::duration<double>(Clock::now() - asked).count() << " s after\n";
  rapidjson::Document doc;
  ASSERT_FALSE(doc.Parse(ReadFile(trace).c_str()).HasParseError());
  ASSERT_TRUE(doc.HasMember("trace_id"));
  EXPECT_EQ(doc["trace_id"].GetString(), trace_id);
  ASSERT_TRUE(doc.HasMember("traceEvents"));
  EXPECT_GT(doc["traceEvents"].Size(), 0u);
}

// ---- attach jobs on one shared daemon (issue 37 §3 and §6) ---------------------------------

// A CPU training loop that steps an optimizer (Kineto's iteration mode counts its steps).
constexpr char kTrainLoop[] = R"(import sys, time, torch
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
end = time.time() + float(sys.argv[2])
while time.time() < end:
    loss = model(torch.randn(8, 64)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    time.sleep(0.01)
)";

// tests/fixtures/attach/make_attach_fixtures.py's DDP loop: 2 Gloo ranks under torchrun, rank
// SLOW_RANK sleeping SLOW_S before each backward (the other waits in the all-reduce).
constexpr char kDdpLoop[] = R"(import os, time, torch, torch.distributed as dist
torch.set_num_threads(1)
dist.init_process_group("gloo")
rank = dist.get_rank()
model = torch.nn.parallel.DistributedDataParallel(
    torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4)))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
end = time.time() + float(os.environ["LOOP_SECONDS"])
go = torch.zeros(1)
while go.item() == 0:
    loss = model(torch.randn(8, 64)).sum()
    opt.zero_grad()
    if rank == int(os.environ["SLOW_RANK"]):
        time.sleep(float(os.environ["SLOW_S"]))
    loss.backward()
    opt.step()
    time.sleep(0.002)
    go = torch.tensor([1.0 if time.time() > end else 0.0])
    dist.all_reduce(go, op=dist.ReduceOp.MAX)
dist.destroy_process_group()
)";

// One libreyolod with an attach endpoint for every case of the suite; each case starts its own
// processes with `attach --env`'s environment and attaches to them as a job.
class AttachJobProcessTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    shared_ = new Shared;
    DaemonDirs dirs(shared_->tmp.path());
    std::vector<std::string> flags = dirs.Flags();
    flags.insert(flags.end(), {"--attach-dir", shared_->tmp.File("attach")});
    shared_->daemon = DaemonProcess::Start(flags, shared_->tmp.File("daemon.log"));
    shared_->remote = {"--remote", "unix:" + dirs.socket};
    if (!shared_->daemon->WaitServing()) return;
    const CommandResult env = RunClient(With({"profile", "attach", "--env"}));
    if (env.exit_code == 0) shared_->env = Lines(env.out);
  }
  static void TearDownTestSuite() {
    delete shared_;
    shared_ = nullptr;
  }
  void SetUp() override {
    ASSERT_EQ(shared_->env.size(), 2u) << shared_->daemon->LogTail();
  }
  void TearDown() override {
    for (pid_t pid : started_) {
      ::kill(pid, SIGTERM);  // torchrun passes it to its workers
      if (!PollUntil([&] { return ::waitpid(pid, nullptr, WNOHANG) == pid; }, seconds(15))) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
    }
    for (pid_t pid : ProcessesWithArgument(tmp_.path())) ::kill(pid, SIGKILL);
  }

  // `args` with the shared daemon's connection flags.
  static std::vector<std::string> With(std::vector<std::string> args) {
    args.insert(args.end(), shared_->remote.begin(), shared_->remote.end());
    return args;
  }
  pid_t Start(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
              const std::string& cwd = "") {
    std::vector<std::string> env = shared_->env;
    env.insert(env.end(), extra_env.begin(), extra_env.end());
    const pid_t pid =
        Spawn(argv, ChildEnvironment(env), tmp_.File("py.log"), tmp_.File("py.log"), cwd);
    started_.push_back(pid);
    return pid;
  }
  // Waits until `n` polling processes have `marker` in their command line (and, with
  // `ranked`, a RANK).
  bool WaitPolling(const std::string& marker, size_t n, bool ranked = false) {
    return PollUntil(
        [&] {
          const CommandResult r = RunClient(With({"profile", "attach", "--list", "--json"}));
          rapidjson::Document doc;
          if (r.exit_code != 0 || doc.Parse(r.out.c_str()).HasParseError()) return false;
          if (!doc.HasMember("processes")) return false;
          size_t found = 0;
          for (const auto& p : doc["processes"].GetArray()) {
            const std::string line = p["command_line"].GetString();
            if (line.find(marker) == std::string::npos) continue;
            if (!ranked || p.HasMember("rank")) ++found;
          }
          return found >= n;
        },
        seconds(60), milliseconds(200));
  }
  // `profile attach ARGS --json`: the job's id ("" on failure, with the output in `failure`).
  std::string AttachJob(const std::vector<std::string>& args, std::string* failure,
                        std::string* events = nullptr, double* took = nullptr) {
    std::vector<std::string> all = {"profile", "attach"};
    all.insert(all.end(), args.begin(), args.end());
    all.insert(all.end(), {"--project", tmp_.File("proj"), "--json"});
    const auto asked = Clock::now();
    const CommandResult job = RunClient(With(all), {}, seconds(120));
    if (took != nullptr) *took = std::chrono::duration<double>(Clock::now() - asked).count();
    if (events != nullptr) *events = job.err;
    rapidjson::Document summary;
    if (job.exit_code != 0 || summary.Parse(job.out.c_str()).HasParseError() ||
        !summary.HasMember("job_id")) {
      *failure = job.Describe() + shared_->daemon->LogTail() + ReadFile(tmp_.File("py.log"));
      return "";
    }
    return summary["job_id"].GetString();
  }
  // The job's "from the request: ..." event text, printed with how long the command took.
  static void PrintLatency(const std::string& what, const std::string& events, double took) {
    const size_t at = events.find("from the request: ");
    if (at == std::string::npos) return;
    std::cout << what << ": " << took << " s for the command; the job's "
              << events.substr(at, events.find('"', at) - at) << "\n";
  }
  static CommandResult Read(const std::string& reader, const std::string& id) {
    return RunClient(With({"profile", reader, "job:" + id}));
  }

  struct Shared {
    TempDir tmp{"lypj"};
    std::unique_ptr<DaemonProcess> daemon;
    std::vector<std::string> remote, env;
  };
  static Shared* shared_;
  TempDir tmp_{"lyp"};
  std::vector<pid_t> started_;
};
AttachJobProcessTest::Shared* AttachJobProcessTest::shared_ = nullptr;

// Issue 37 §3: `libreyolo profile attach --pid` is a job: a torch loop started with --env's
// environment, traced for a one-second window, the job SUCCEEDED with the trace and its
// profile, which `profile summary job:<id>` reads. Prints the latency from the request to the
// analysed profile, broken into its parts (the job's "analysed" event).
TEST_F(AttachJobProcessTest, AttachByPidIsAJobWhoseProfileTheReadersRead) {
  const std::string script = tmp_.Write("loop.py", kLoop);
  const pid_t loop = Start({LIBREYOLO_PYTHON, script, "attach-marker-job", "120"}, {});
  ASSERT_TRUE(WaitPolling("attach-marker-job", 1)) << ReadFile(tmp_.File("py.log"));
  std::string failure, events;
  double took = 0;
  const std::string id =
      AttachJob({"--pid", std::to_string(loop), "--duration-ms", "1000", "--activities", "cpu"},
                &failure, &events, &took);
  ASSERT_FALSE(id.empty()) << failure;
  // The stages as events, and the latency's parts; a CPU window asks Kineto for no warm-up.
  for (const char* stage : {"\"select\"", "\"waiting\"", "\"delivered\"", "\"written\"",
                            "\"analysed\""}) {
    EXPECT_NE(events.find(stage), std::string::npos) << stage << "\n" << events;
  }
  EXPECT_NE(events.find("Kineto warms up for 0 s"), std::string::npos) << events;
  PrintLatency("attach --pid", events, took);
  EXPECT_TRUE(fs::exists(tmp_.File("proj") + "/attach/profile.json"));
  EXPECT_TRUE(fs::exists(tmp_.File("proj") + "/attach/profile_trace.json"));
  // The job's record: SUCCEEDED, Kineto's, the process traced.
  const CommandResult shown = RunClient(With({"jobs", "show", id, "--json"}));
  ASSERT_EQ(shown.exit_code, 0) << shown.Describe();
  rapidjson::Document record;
  ASSERT_FALSE(record.Parse(shown.out.c_str()).HasParseError());
  EXPECT_STREQ(record["state"].GetString(), "JOB_STATE_SUCCEEDED");
  EXPECT_STREQ(record["kind"].GetString(), "JOB_KIND_ATTACH");
  EXPECT_STREQ(record["tool"].GetString(), "kineto-on-demand");
  ASSERT_TRUE(record.HasMember("attach_targets")) << shown.out;
  EXPECT_EQ(record["attach_targets"][0]["pid"].GetInt(), loop);
  EXPECT_TRUE(record["attach_targets"][0]["traced"].GetBool());
  // The readers of the stored profile, over the daemon: who measured, and the real process's
  // ops (its loop's matmul) over the whole window (Kineto honoured the warm-up of 0).
  const CommandResult read = Read("summary", id);
  ASSERT_EQ(read.exit_code, 0) << read.Describe();
  EXPECT_NE(read.out.find("the traced process's own Kineto"), std::string::npos) << read.out;
  EXPECT_NE(read.out.find(std::to_string(loop)), std::string::npos) << read.out;
  // The whole window was recorded without a warm-up.
  std::smatch window;
  ASSERT_TRUE(std::regex_search(read.out, window, std::regex(R"(window +([0-9.]+) ms recorded)")))
      << read.out;
  EXPECT_GT(std::stod(window[1].str()), 900.0) << read.out;
  const CommandResult ops = Read("ops", id);
  ASSERT_EQ(ops.exit_code, 0) << ops.Describe();
  EXPECT_NE(ops.out.find("aten::mm"), std::string::npos) << ops.out;
}

// Issue 37 §6: iteration mode on a loop that steps an optimizer: Kineto counts the optimizer's
// steps (torch's step hook under KINETO_USE_DAEMON) and records that many from the next one.
TEST_F(AttachJobProcessTest, IterationModeRecordsTheOptimizersSteps) {
  const std::string script = tmp_.Write("train.py", kTrainLoop);
  const pid_t loop = Start({LIBREYOLO_PYTHON, script, "attach-marker-steps", "120"}, {});
  ASSERT_TRUE(WaitPolling("attach-marker-steps", 1)) << ReadFile(tmp_.File("py.log"));
  std::string failure, events;
  double took = 0;
  const std::string id = AttachJob(
      {"--pid", std::to_string(loop), "--iterations", "3", "--activities", "cpu"}, &failure,
      &events, &took);
  ASSERT_FALSE(id.empty()) << failure;
  PrintLatency("attach --iterations 3", events, took);
  EXPECT_NE(events.find("records 3 iteration(s)"), std::string::npos) << events;
  // The training's own ops: the optimizer's step and the backward.
  const CommandResult ops = Read("ops", id);
  ASSERT_EQ(ops.exit_code, 0) << ops.Describe();
  EXPECT_NE(ops.out.find("aten::addmm"), std::string::npos) << ops.out;
  EXPECT_NE(ReadFile(tmp_.File("proj") + "/attach/profile_trace.json").find("Optimizer.step#SGD"),
            std::string::npos);
}

// The inputs of a `libreyolo train` of the Python LibreYOLO, offline: a YOLOX-n from random init
// (its own `save`) and a 4+4-image detection dataset of noise, one box each (as
// make_delegated_inputs.py, without its D-FINE).
constexpr char kTrainInputs[] = R"(import os, sys
import numpy as np, torch
from PIL import Image
from libreyolo import LibreYOLOX
out = sys.argv[1]
torch.manual_seed(0)
LibreYOLOX(model_path=None, size="n", nb_classes=2, device="cpu").save(f"{out}/yolox_n.pt")
rng = np.random.default_rng(0)
for split in ("train", "val"):
    os.makedirs(f"{out}/data/images/{split}", exist_ok=True)
    os.makedirs(f"{out}/data/labels/{split}", exist_ok=True)
    for i in range(4):
        Image.fromarray((rng.random((96, 96, 3)) * 255).astype("uint8")).save(
            f"{out}/data/images/{split}/img{i}.jpg")
        with open(f"{out}/data/labels/{split}/img{i}.txt", "w") as f:
            f.write(f"{i % 2} 0.5 0.5 0.3 0.4\n")
with open(f"{out}/data/data.yaml", "w") as f:
    f.write(f"path: {out}/data\ntrain: images/train\nval: images/val\nnc: 2\nnames: [a, b]\n")
)";

// Issue 37 §6: the Python LibreYOLO's own `libreyolo train` of a family our engine does not train
// (YOLOX), started with --env's environment and attached once it trains: the job's profile
// reads the real training (its forward, backward and optimizer ops). One iteration (optimizer
// step to step) holds a forward and its backward: the trace has no forward mark, and its forward
// phase comes from Kineto's fwdbwd flows (docs/metrics.md "Phases"), which a window that ends
// before the forward's backward does not have.
TEST_F(AttachJobProcessTest, ThePythonLibreYolosOwnTrainingAttachedMidRun) {
  const std::string work = tmp_.File("train");
  fs::create_directories(work);
  const CommandResult inputs =
      RunCommand({LIBREYOLO_PYTHON, tmp_.Write("inputs.py", kTrainInputs), work}, {}, seconds(120));
  ASSERT_EQ(inputs.exit_code, 0) << inputs.Describe();
  const std::string cli = fs::path(LIBREYOLO_PYTHON).parent_path().string() + "/libreyolo";
  const pid_t train = Start({cli, "train", "--data", work + "/data/data.yaml", "--model",
                             work + "/yolox_n.pt", "--epochs", "300", "--batch", "2", "--imgsz",
                             "64", "--device", "cpu", "--workers", "0"},
                            {"HF_HUB_OFFLINE=1"}, work);
  // Mid-run: once it polls and has trained an epoch (its set-up, before, takes seconds and
  // trains nothing).
  ASSERT_TRUE(WaitPolling("yolox_n.pt", 1)) << ReadFile(tmp_.File("py.log"));
  ASSERT_TRUE(PollUntil(
      [&] { return ReadFile(tmp_.File("py.log")).find("Epoch 1 ") != std::string::npos; },
      seconds(60), milliseconds(200)))
      << ReadFile(tmp_.File("py.log"));
  std::string failure, events;
  double took = 0;
  const std::string id = AttachJob(
      {"--pid", std::to_string(train), "--iterations", "1", "--activities", "cpu"}, &failure,
      &events, &took);
  ASSERT_FALSE(id.empty()) << failure;
  PrintLatency("attach --pid <libreyolo train> --iterations 1", events, took);
  const CommandResult ops = Read("ops", id);
  ASSERT_EQ(ops.exit_code, 0) << ops.Describe();
  EXPECT_NE(ops.out.find("aten::convolution"), std::string::npos) << ops.out;
  EXPECT_NE(ops.out.find("aten::convolution_backward"), std::string::npos) << ops.out;
  const CommandResult phases = Read("phases", id);
  ASSERT_EQ(phases.exit_code, 0) << phases.Describe();
  EXPECT_NE(phases.out.find("backward"), std::string::npos) << phases.out;
  EXPECT_NE(phases.out.find("optimizer"), std::string::npos) << phases.out;
  // The forward row, with its CPU time (the rule's message for no phases names "## forward ##").
  EXPECT_TRUE(std::regex_search(phases.out, std::regex(R"((^|\n) *forward +[0-9])")))
      << phases.out;
  std::cout << phases.out.substr(0, 2000) << "\n";
}

// Issue 37 §6: a 2-rank Gloo DDP started by torchrun, attached as one job by the launcher's
// pid: the launcher is skipped, both ranks traced over one window, and the job's cross-rank
// view names rank 1, slowed on purpose, the straggler.
TEST_F(AttachJobProcessTest, TorchrunDdpByTheLaunchersPidIsOneJobThatNamesTheSlowRank) {
  const std::string script = tmp_.Write("ddp_loop.py", kDdpLoop);
  int port = 0;
  {
    const int s = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    ::close(s);
  }
  const pid_t launcher = Start(
      {LIBREYOLO_PYTHON, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port",
       std::to_string(port), script},
      {"LOOP_SECONDS=90", "SLOW_RANK=1", "SLOW_S=0.015", "OMP_NUM_THREADS=1"});
  ASSERT_TRUE(WaitPolling("ddp_loop.py", 2, /*ranked=*/true)) << ReadFile(tmp_.File("py.log"));
  std::string failure, events;
  double took = 0;
  const std::string id = AttachJob({"--pid", std::to_string(launcher), "--duration-ms", "1000",
                                    "--activities", "cpu"},
                                   &failure, &events, &took);
  ASSERT_FALSE(id.empty()) << failure;
  PrintLatency("attach --pid <torchrun>", events, took);
  // Two ranks traced, the launcher skipped as one.
  const CommandResult shown = RunClient(With({"jobs", "show", id, "--json"}));
  ASSERT_EQ(shown.exit_code, 0) << shown.Describe();
  rapidjson::Document record;
  ASSERT_FALSE(record.Parse(shown.out.c_str()).HasParseError());
  int traced = 0;
  bool launcher_skipped = false;
  for (const auto& t : record["attach_targets"].GetArray()) {
    if (t["traced"].GetBool()) ++traced;
    if (t["pid"].GetInt() == launcher) {
      launcher_skipped = !t["traced"].GetBool() &&
                         std::string(t["reason"].GetString()).find("launcher") != std::string::npos;
    }
  }
  EXPECT_EQ(traced, 2) << shown.out;
  EXPECT_TRUE(launcher_skipped) << shown.out;
  EXPECT_TRUE(fs::exists(tmp_.File("proj") + "/attach/rank0/profile_trace.json"));
  EXPECT_TRUE(fs::exists(tmp_.File("proj") + "/attach/rank1/profile_trace.json"));
  // The cross-rank view, per window: rank 1 the straggler.
  const CommandResult summary = Read("summary", id);
  ASSERT_EQ(summary.exit_code, 0) << summary.Describe();
  EXPECT_NE(summary.out.find("straggler            rank 1"), std::string::npos) << summary.out;
  std::cout << summary.out.substr(0, 3000) << "\n";
}

}  // namespace
}  // namespace libreyolo::daemon_test
