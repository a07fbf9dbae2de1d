// Where `libreyolo profile infer` takes its default source from (issue 36 §3): the Python
// LibreYOLO's bundled photograph (libreyolo.SAMPLE_IMAGE, assets/parkour.jpg) when the Python
// tool this binary hands over to is installed, so that both tools' default numbers describe the
// same image; the daemon's generated sample otherwise. A fake install in a temp dir stands for
// the Python tool (its layout: <prefix>/bin/libreyolo, <prefix>/lib/python3.X/site-packages).
#include "client/commands/job_request.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/cli/job_flags.h"
#include "gtest/gtest.h"

namespace libreyolo::cli {
namespace {

namespace fs = std::filesystem;
namespace v1 = ::libreyolo::profiler::v1;

class DefaultSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/libreyolo_job_request_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    prefix_ = tmpl;
    fs::create_directories(prefix_ / "bin");
    cli_ = (prefix_ / "bin" / "libreyolo").string();
    std::ofstream(cli_) << "#!/bin/sh\necho 1.6.0\n";
    ::chmod(cli_.c_str(), 0755);
    const char* old = std::getenv("LIBREYOLO_PYTHON_CLI");
    if (old != nullptr) saved_ = old;
    ::setenv("LIBREYOLO_PYTHON_CLI", cli_.c_str(), 1);
  }
  void TearDown() override {
    if (saved_.empty()) {
      ::unsetenv("LIBREYOLO_PYTHON_CLI");
    } else {
      ::setenv("LIBREYOLO_PYTHON_CLI", saved_.c_str(), 1);
    }
    fs::remove_all(prefix_);
  }
  std::string Install(const std::string& python, const std::string& packages) {
    const fs::path assets = prefix_ / "lib" / python / packages / "libreyolo" / "assets";
    fs::create_directories(assets);
    std::ofstream(assets / "parkour.jpg") << "jpeg";
    return (assets / "parkour.jpg").string();
  }
  v1::SubmitJobRequest Build(std::vector<std::string> words) {
    const CommandSpec spec{"infer", "", "", {{"input", false, ""}}, InferSpecFlags()};
    auto parsed = ParseArgs(spec, words);
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    auto r = BuildInferRequest(*parsed, /*remote=*/false);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : v1::SubmitJobRequest();
  }

  fs::path prefix_;
  std::string cli_, saved_;
};

TEST_F(DefaultSourceTest, ThePythonToolsBundledPhotographWhenItIsInstalled) {
  const std::string photo = Install("python3.11", "site-packages");
  EXPECT_EQ(PythonSampleImageBeside(cli_), photo);
  EXPECT_EQ(Build({}).infer().source(), photo);
  // A source the user names is theirs.
  EXPECT_EQ(Build({cli_}).infer().source(), cli_);
}

TEST_F(DefaultSourceTest, ADebianDistPackagesInstallIsFoundToo) {
  const std::string photo = Install("python3.12", "dist-packages");
  EXPECT_EQ(Build({}).infer().source(), photo);
}

TEST_F(DefaultSourceTest, WithoutThePythonToolTheDaemonsSampleImage) {
  // The CLI is there, its package is not (or its assets are gone): the daemon's own sample.
  EXPECT_EQ(PythonSampleImageBeside(cli_), std::nullopt);
  EXPECT_EQ(Build({}).infer().source(), "");
}

}  // namespace
}  // namespace libreyolo::cli
