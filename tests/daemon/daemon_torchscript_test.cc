// A TorchScript export of another family in a daemon's models directory, named by a remote client
// as any weights file is: the job profiles it under its family's name (issue 20, section 2), and
// what the engine refuses comes back with the documented exit code and the way out.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/daemon/daemon_process.h"

namespace libreyolo::daemon_test {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

std::vector<std::string> Concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(DaemonTorchScript, AnExportInTheModelsDirIsProfiledAsItsFamily) {
  TempDir dir;
  DaemonDirs dirs(dir.path());
  // The Python LibreYOLO exports a random-init YOLOX (its own export path, no download).
  const CommandResult made = RunCommand(
      {LIBREYOLO_PYTHON, std::string(LIBREYOLO_SOURCE_DIR) + "/tests/engine/torchscript/make_exports.py",
       dir.File("exports"), "--families", "yolox", "--no-npy"},
      {}, std::chrono::seconds(300));
  ASSERT_EQ(made.exit_code, 0) << made.Describe();
  fs::copy_file(dir.File("exports") + "/yolox.torchscript", dirs.models + "/yolox-n.torchscript");

  auto daemon = DaemonProcess::Start(dirs.Flags(), dir.File("daemon.log"));
  ASSERT_TRUE(daemon->WaitServing()) << daemon->LogTail();
  const std::vector<std::string> remote = {"--remote", "unix:" + dirs.socket};
  // Unprobed (--no-probe-overhead): the switches' cost is InferJob's subject, not this test's.
  const std::vector<std::string> job = {"profile", "infer", "--weights", "yolox-n.torchscript",
                                        "--device", "cpu", "--runs", "3", "--warmup", "1",
                                        "--threads", "1", "--no-probe-overhead"};
  const CommandResult c =
      RunClient(Concat(Concat(job, remote), {"--project", dir.File("proj"), "--json"}));
  ASSERT_EQ(c.exit_code, 0) << c.Describe();
  EXPECT_THAT(c.out, HasSubstr("\"model\": \"LibreYOLOXn\"")) << c.out;
  const std::string profile = ReadFile(dir.File("proj") + "/infer/profile.json");
  EXPECT_THAT(profile, HasSubstr("\"model_family\":\"yolox\"")) << profile.substr(0, 2000);
  EXPECT_THAT(profile, HasSubstr("\"format\":\"torchscript\""));
  EXPECT_THAT(profile, HasSubstr("module scopes n/a"));

  // Traced at batch 1, YOLOX's graph takes a batch: --batch 2 runs (the probe; D-FINE's,
  // which does not, is refused: engine_torchscript_model_test).
  const CommandResult b = RunClient(
      Concat(Concat(job, remote), {"--batch", "2", "--project", dir.File("proj2"), "--json"}));
  EXPECT_EQ(b.exit_code, 0) << b.Describe();
  EXPECT_THAT(ReadFile(dir.File("proj2") + "/infer/profile.json"), HasSubstr("\"batch\":2"));
  // Training an export is refused and points to profile infer.
  const CommandResult t = RunClient(
      Concat({"profile", "run", "synthetic", "--weights", "yolox-n.torchscript", "--device", "cpu",
              "--steps", "2", "--warmup", "1"},
             remote));
  EXPECT_EQ(t.exit_code, 2) << t.Describe();
  EXPECT_THAT(t.out + t.err, HasSubstr("profile infer")) << t.Describe();

  EXPECT_EQ(daemon->Terminate(std::chrono::seconds(60), nullptr), 0) << daemon->LogTail();
}

}  // namespace
}  // namespace libreyolo::daemon_test
