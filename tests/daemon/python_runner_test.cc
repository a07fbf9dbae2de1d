// Issue 38 §4, the pieces of the delegated Python job that need no Python: which jobs go to the
// Python LibreYOLO (DelegatedFamily over hand-made torch.save archives), its command line and
// what it refuses (PythonToolArgs), which one runs (PythonToolPath), its output as events
// (PythonProgress), and the supervision of a process group (RunChildGroup with shell children:
// a cancel's TERM, KILL after the grace, the wall-time limit, the watchdog, nothing left).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/daemon/workers/python_process.h"
#include "server/daemon/workers/python_runner.h"
#include "server/engine/checkpoint/zip_archive.h"
#include "tests/support/test_files.h"

namespace libreyolo::daemon {
namespace {

namespace fs = std::filesystem;
using ::libreyolo::test::TempDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using std::chrono::milliseconds;

// A protocol-2 pickle of a dict of strings, as torch.save writes LibreYOLO's metadata.
std::string PickleDict(const std::vector<std::pair<std::string, std::string>>& items) {
  std::string p = "\x80\x02}(";
  auto str = [&](const std::string& s) {
    p += 'X';
    const auto n = static_cast<uint32_t>(s.size());
    for (int i = 0; i < 4; ++i) p += static_cast<char>((n >> (8 * i)) & 0xff);
    p += s;
  };
  for (const auto& [k, v] : items) {
    str(k);
    str(v);
  }
  return p + "u.";
}

std::string WriteArchive(const TempDir& dir, const std::string& name,
                         const std::vector<std::pair<std::string, std::string>>& entries) {
  const std::string path = dir.File(name);
  std::ofstream(path, std::ios::binary) << engine::WriteStoredZip(entries);
  return path;
}

v1::Job InferJob(const std::string& weights) {
  v1::Job job;
  job.set_id("j1");
  job.set_kind(v1::JOB_KIND_INFER);
  job.set_device("cpu");
  job.mutable_request()->mutable_infer()->mutable_model()->set_weights(weights);
  return job;
}

v1::Job RunJob(const std::string& weights, const std::string& data) {
  v1::Job job;
  job.set_id("j2");
  job.set_kind(v1::JOB_KIND_RUN);
  job.set_device("cuda:1");
  v1::RunSpec* run = job.mutable_request()->mutable_run();
  run->mutable_model()->set_weights(weights);
  run->set_data(data);
  return job;
}

// An executable stand-in for the Python tool.
std::string FakeTool(const TempDir& dir) {
  const std::string path = dir.File("libreyolo");
  std::ofstream(path) << "#!/bin/sh\nexit 0\n";
  fs::permissions(path, fs::perms::owner_all);
  return path;
}

TEST(DelegatedFamilyTest, ANativeCheckpointOfAnotherFamilyGoesToThePythonTool) {
  TempDir dir;
  DaemonConfig config;
  config.models_dir = dir.path();
  config.python_tool = FakeTool(dir);
  const std::string yolox = WriteArchive(
      dir, "yolox_n.pt",
      {{"archive/data.pkl", PickleDict({{"model_family", "yolox"}, {"size", "n"}})},
       {"archive/version", "3\n"}});
  std::string why_not = "stale";
  EXPECT_EQ(DelegatedFamily(InferJob(yolox), config, &why_not), "yolox");
  EXPECT_EQ(why_not, "");
  // By its plain name in the models directory, as the engine would resolve it.
  EXPECT_EQ(DelegatedFamily(InferJob("yolox_n.pt"), config, &why_not), "yolox");
  const auto model = NativeCheckpointModel(yolox);
  ASSERT_TRUE(model.has_value());
  EXPECT_EQ(model->size, "n");

  // What the engine runs or reports on itself stays there.
  const std::string yolo9 = WriteArchive(
      dir, "y9.pt", {{"archive/data.pkl", PickleDict({{"model_family", "yolo9"}, {"size", "t"}})}});
  const std::string bare = WriteArchive(dir, "bare.pt", {{"archive/data.pkl", PickleDict({})}});
  const std::string script = WriteArchive(
      dir, "x.torchscript",
      {{"archive/data.pkl", PickleDict({{"model_family", "yolox"}})},
       {"archive/constants.pkl", "\x80\x02)."}});
  const std::string text = dir.File("notes.pt");
  std::ofstream(text) << "not a zip";
  for (const std::string& w : {yolo9, bare, script, text, dir.File("missing.pt"),
                               std::string("LibreYOLO9t.pt")}) {
    EXPECT_EQ(DelegatedFamily(InferJob(w), config, &why_not), std::nullopt) << w;
  }
  v1::Job attach;
  attach.mutable_request()->mutable_attach();
  EXPECT_EQ(DelegatedFamily(attach, config, &why_not), std::nullopt);
}

TEST(DelegatedFamilyTest, WhyNotNamesTheMissingToolOrTheOptionItLacks) {
  TempDir dir;
  DaemonConfig config;
  config.python_tool = "off";
  const std::string yolox = WriteArchive(
      dir, "yolox_n.pt",
      {{"archive/data.pkl", PickleDict({{"model_family", "yolox"}, {"size", "n"}})}});
  std::string why_not;
  EXPECT_EQ(DelegatedFamily(InferJob(yolox), config, &why_not), "yolox");
  EXPECT_THAT(why_not, HasSubstr("this daemon has no Python LibreYOLO to run yolox"));
  EXPECT_THAT(why_not, HasSubstr("set python_tool"));

  config.python_tool = FakeTool(dir);
  v1::Job job = InferJob(yolox);
  job.mutable_request()->mutable_infer()->mutable_profiler()->set_record_shapes(false);
  EXPECT_EQ(DelegatedFamily(job, config, &why_not), "yolox");
  EXPECT_THAT(why_not, HasSubstr("is a yolox checkpoint"));
  EXPECT_THAT(why_not, HasSubstr("--record-shapes (infer.profiler.record_shapes)"));
  EXPECT_THAT(why_not, HasSubstr("has no such option"));
  // --postprocess none is the engine's: the Python tool's profile infer always decodes.
  job = InferJob(yolox);
  job.mutable_request()->mutable_infer()->set_postprocess("none");
  EXPECT_EQ(DelegatedFamily(job, config, &why_not), "yolox");
  EXPECT_THAT(why_not, HasSubstr("--postprocess (infer.postprocess)"));
  job.mutable_request()->mutable_infer()->set_postprocess("auto");
  EXPECT_EQ(DelegatedFamily(job, config, &why_not), "yolox");
  EXPECT_THAT(why_not, Not(HasSubstr("--postprocess")));
  job = InferJob(yolox);
  job.mutable_request()->mutable_infer()->mutable_model()->set_size("t");
  EXPECT_EQ(DelegatedFamily(job, config, &why_not), "yolox");
  EXPECT_THAT(why_not, HasSubstr("is size n, not t"));
}

TEST(PythonToolArgsTest, InferMapsEveryOptionToTheToolsFlag) {
  DaemonConfig config;
  v1::Job job = InferJob("/m/yolox.pt");
  v1::InferSpec* s = job.mutable_request()->mutable_infer();
  s->set_source("/img/-odd.jpg");
  s->set_imgsz(320);
  s->set_conf(0.5);
  s->set_trace(false);
  auto args = PythonToolArgs(job, "/env/bin/libreyolo", "/drop/j1", "n", config);
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_THAT(*args,
              ElementsAre("/env/bin/libreyolo", "profile", "infer", "--batch", "1", "--imgsz",
                          "320", "--no-half", "--amp-dtype", "float16", "--warmup", "20", "--runs",
                          "100", "--repeat", "1", "--conf", "0.5", "--iou", "0.45", "--max-det",
                          "300", "--no-trace", "--weights", "/m/yolox.pt", "--size", "n",
                          "--device", "cpu", "--project", "/drop/j1", "--", "/img/-odd.jpg"));
}

TEST(PythonToolArgsTest, RunFindsTheDataYamlAndRefusesWhatTheToolLacks) {
  TempDir dir;
  DaemonConfig config;
  config.datasets_dir = dir.path();
  fs::create_directories(dir.File("tiny"));
  std::ofstream(dir.File("tiny/data.yaml")) << "train: images\n";
  v1::Job job = RunJob("/m/yolox.pt", "tiny");
  auto args = PythonToolArgs(job, "tool", "/drop", "s", config);
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_THAT(*args, ElementsAre("tool", "profile", "run", "--batch", "16", "--imgsz", "640",
                                 "--workers", "8", "--amp", "--steps", "20", "--warmup", "5",
                                 "--repeat", "1", "--weights", "/m/yolox.pt", "--size", "s",
                                 "--device", "0", "--project", "/drop", "--",
                                 dir.File("tiny/data.yaml")));

  auto refused = [&](const std::function<void(v1::RunSpec*)>& change) {
    v1::Job j = RunJob("/m/yolox.pt", "tiny");
    change(j.mutable_request()->mutable_run());
    auto a = PythonToolArgs(j, "tool", "/drop", "s", config);
    return a.ok() ? std::string("accepted") : std::string(a.status().message());
  };
  EXPECT_THAT(refused([](v1::RunSpec* r) { r->set_data("synthetic:8"); }),
              HasSubstr("the engine's synthetic dataset"));
  EXPECT_THAT(refused([](v1::RunSpec* r) { r->set_data("none"); }),
              HasSubstr("the Python LibreYOLO trains from a data yaml; none at"));
  EXPECT_THAT(refused([](v1::RunSpec* r) { r->set_cycles(2); }), HasSubstr("--cycles (run.cycles)"));
  EXPECT_THAT(refused([](v1::RunSpec* r) { r->set_wait(1); }), HasSubstr("--wait (run.wait)"));
  EXPECT_THAT(refused([](v1::RunSpec* r) { r->mutable_data_parallel()->set_nproc(2); }),
              HasSubstr("--nproc (run.data_parallel.nproc)"));
  EXPECT_THAT(refused([](v1::RunSpec* r) { r->mutable_profiler()->set_collector("libtorch"); }),
              HasSubstr("--collector (run.profiler.collector)"));
  EXPECT_EQ(refused([](v1::RunSpec* r) { r->set_cycles(1); }), "accepted");
}

TEST(PythonToolPathTest, ConfiguredOffOrMissing) {
  TempDir dir;
  DaemonConfig config;
  config.python_tool = FakeTool(dir);
  EXPECT_EQ(PythonToolPath(config, "yolox").value_or(""), config.python_tool);
  config.python_tool = dir.File("nothing");
  EXPECT_THAT(std::string(PythonToolPath(config, "yolox").status().message()),
              HasSubstr("python_tool " + dir.File("nothing") + " is not an executable file"));
  config.python_tool = "off";
  EXPECT_EQ(PythonToolPath(config, "rtdetr").status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(PythonProgressTest, ItsLinesAsEvents) {
  PythonProgress p(2);
  EXPECT_FALSE(p.Line("2026-12-06 14:38:38 | INFO     | Using device: cpu").has_value());
  auto start = p.Line("2026-12-06 14:38:39 | INFO     | Starting training for 8 epochs");
  ASSERT_TRUE(start.has_value());
  EXPECT_EQ(start->stage, "training");
  EXPECT_EQ(start->done, 1);
  EXPECT_EQ(start->total, 2);
  auto epoch = p.Line("2026-12-06 14:38:46 | INFO     | Epoch 1 - Average loss: 24.0241");
  ASSERT_TRUE(epoch.has_value());
  EXPECT_EQ(epoch->message, "Epoch 1 - Average loss: 24.0241");
  EXPECT_EQ(p.Line("x | INFO | LibreYOLO training profile — YOLOX-n")->stage, "analysing");
  EXPECT_EQ(p.Line("latency  p50 1313.2 ms | p90 1313.2 ms")->stage, "measured");
  EXPECT_FALSE(p.Line("  File \"x.py\", line 3").has_value());
}

TEST(BoundedLogTest, KeepsTheHeadAndTheTail) {
  BoundedLog log(20, 30);
  for (int i = 0; i < 100; ++i) log.Add(absl::StrCat("line ", i));
  const std::string text = log.Text();
  EXPECT_THAT(text, ::testing::StartsWith("line 0\nline 1\n"));
  EXPECT_THAT(text, HasSubstr("bytes of output left out"));
  EXPECT_THAT(text, ::testing::EndsWith("line 99\n"));
  EXPECT_LT(text.size(), 100u);
}

// ---- the process group ----

ChildSupervision Quick() {
  ChildSupervision s;
  s.cancel_grace = milliseconds(300);
  return s;
}

TEST(RunChildGroupTest, CancelTermsTheGroupAndKillsWhatIgnoresIt) {
  engine::CancelToken cancel;
  std::vector<std::string> lines;
  pid_t grandchild = 0;
  // The leader ignores TERM; its background sleep (a second member of the group) does not.
  auto end = RunChildGroup(
      {{"/bin/sh", "-c", "sleep 60 & echo child $!; trap '' TERM; echo started; "
                         "while :; do sleep 0.05; done"},
       {},
       ""},
      Quick(), cancel, [&](const std::string& line) {
        lines.push_back(line);
        if (line.rfind("child ", 0) == 0) grandchild = std::stoi(line.substr(6));
        if (line == "started") cancel.cancelled = true;
      });
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_TRUE(end->cancelled);
  EXPECT_TRUE(end->killed_after_grace);
  EXPECT_TRUE(WIFSIGNALED(end->wait_status));
  EXPECT_THAT(end->survivors, ::testing::IsEmpty());
  EXPECT_THAT(ProcessGroupMembers(end->pid), ::testing::IsEmpty());
  // The background sleep went with the group: gone, or a zombie its new parent has still to
  // reap.
  ASSERT_GT(grandchild, 0);
  const std::string text = ::libreyolo::test::ReadFile("/proc/" + std::to_string(grandchild) + "/stat");
  EXPECT_TRUE(text.empty() || text.find(") Z") != std::string::npos) << text;
}

TEST(RunChildGroupTest, ExitCodeLinesEnvironmentAndDirectory) {
  TempDir dir;
  engine::CancelToken cancel;
  std::vector<std::string> lines;
  auto end = RunChildGroup({{"/bin/sh", "-c", "printf 'a\\rb\\n'; echo $R38; pwd; exit 3"},
                            {"R38=set"},
                            dir.path()},
                           Quick(), cancel, [&](const std::string& l) { lines.push_back(l); });
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_TRUE(WIFEXITED(end->wait_status));
  EXPECT_EQ(WEXITSTATUS(end->wait_status), 3);
  EXPECT_THAT(lines, ElementsAre("a", "b", "set", fs::canonical(dir.path()).string()));
  EXPECT_FALSE(end->cancelled || end->stalled || end->wall_limit_reached);
}

TEST(RunChildGroupTest, WallLimitAndWatchdogStopIt) {
  engine::CancelToken cancel;
  ChildSupervision wall = Quick();
  wall.wall_limit = milliseconds(300);
  auto a = RunChildGroup({{"/bin/sh", "-c", "echo go; exec sleep 60"}, {}, ""}, wall, cancel,
                         nullptr);
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->wall_limit_reached);
  EXPECT_FALSE(a->killed_after_grace);  // sleep ends on TERM
  ChildSupervision quiet = Quick();
  quiet.progress_timeout = milliseconds(300);
  auto b = RunChildGroup({{"/bin/sh", "-c", "echo once; exec sleep 60"}, {}, ""}, quiet, cancel,
                         nullptr);
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(b->stalled);
  auto c = RunChildGroup({{"/nonexistent/tool"}, {}, ""}, Quick(), cancel, nullptr);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("cannot start /nonexistent/tool"));
}

}  // namespace
}  // namespace libreyolo::daemon
