// Issue 40 A.9: a TorchScript file whose constants are a foreign pickle (constants.pkl reduces to
// os.system, tests/daemon/fixtures/foreign_constants.torchscript, made by
// make_foreign_pickle_torchscript.py) named as a job's weights. The walk saw exit 1 and raw
// newlines in the job's error (LibTorch throws a script error, not a c10::Error, and its message
// starts with a newline). Now: the pickle never runs, the job fails with exit code 2, and its
// error is one line that names the file and what LibTorch found.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/daemon/daemon_process.h"

namespace libreyolo::daemon_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kMarker[] = "/tmp/libreyolo-issue40-a9-foreign-pickle-ran";  // the payload's

TEST(DaemonForeignPickle, ATorchScriptWithAForeignPickleFailsInOneLineWithExitTwo) {
  TempDir dir;
  DaemonDirs dirs(dir.path());
  std::filesystem::remove(kMarker);
  std::filesystem::copy_file(
      std::string(LIBREYOLO_SOURCE_DIR) + "/tests/daemon/fixtures/foreign_constants.torchscript",
      dirs.models + "/foreign.torchscript");
  auto daemon = DaemonProcess::Start(dirs.Flags(), dir.File("daemon.log"));
  ASSERT_TRUE(daemon->WaitServing()) << daemon->LogTail();
  auto stub = v1::ProfilerService::NewStub(UnixChannel(dirs.socket));

  v1::SubmitJobRequest r = TinyInfer(1);
  r.mutable_infer()->mutable_model()->set_weights("foreign.torchscript");
  v1::Job job;
  ASSERT_TRUE(Submit(*stub, r, &job).ok());
  ASSERT_TRUE(WaitTerminal(*stub, job.id(), &job, seconds(180)));
  EXPECT_EQ(job.state(), v1::JOB_STATE_FAILED) << job.error();
  EXPECT_EQ(job.exit_code(), 2) << job.error();
  EXPECT_THAT(job.error(), HasSubstr("foreign.torchscript"));
  EXPECT_THAT(job.error(), HasSubstr("cannot load it as TorchScript"));
  // What LibTorch found, not an empty first line of its message.
  EXPECT_THAT(job.error(), HasSubstr("posix.system")) << job.error();
  EXPECT_THAT(job.error(), Not(HasSubstr("\n"))) << job.error();
  EXPECT_THAT(job.error(), Not(HasSubstr("\r")));
  std::vector<v1::JobEvent> events;
  ASSERT_TRUE(Watch(*stub, job.id(), 0, &events).ok());
  for (const v1::JobEvent& e : events) EXPECT_THAT(e.message(), Not(HasSubstr("\n"))) << e.stage();
  EXPECT_FALSE(std::filesystem::exists(kMarker)) << "the foreign pickle ran";
  EXPECT_EQ(daemon->Terminate(std::chrono::seconds(60), nullptr), 0) << daemon->LogTail();
}

}  // namespace
}  // namespace libreyolo::daemon_test
