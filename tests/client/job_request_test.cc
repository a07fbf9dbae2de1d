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
#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/cli/job_flags.h"
#include "client/commands/job_commands.h"
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

// Issue 36 §6: `profile run --nproc 2` into a project that holds an earlier single-device run
// (the README's own order of commands) left prof/profile.json beside rank0/ and rank1/; the
// other way round, rank folders stayed beside a single-device run's files.
class OtherRunsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/libreyolo_other_runs_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    project_ = tmpl;
    fs::create_directories(project_ / "prof");
  }
  void TearDown() override { fs::remove_all(project_); }
  void Make(const std::string& rel) {
    fs::create_directories((project_ / "prof" / rel).parent_path());
    std::ofstream(project_ / "prof" / rel) << "{}";
  }
  std::vector<std::string> Left() const {
    std::vector<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(project_ / "prof")) {
      if (e.is_regular_file()) out.push_back(fs::relative(e.path(), project_ / "prof").string());
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  fs::path project_;
};

TEST_F(OtherRunsTest, ADataParallelRunRemovesASingleRunsFilesAndLargerRanks) {
  for (const char* f : {"profile.json", "profile_summary.json", "profile_trace.json",
                        "profile_trace.7.json", "report.html", "notes.txt", "rank0/profile.json",
                        "rank1/profile.json", "rank2/profile.json"}) {
    Make(f);
  }
  std::ostringstream err;
  RemoveOtherRuns(project_.string(), 2, err, /*json=*/false);
  EXPECT_EQ(Left(), (std::vector<std::string>{"notes.txt", "rank0/profile.json",
                                              "rank1/profile.json"}));
  EXPECT_NE(err.str().find("prof/profile.json (an earlier single-device run's"),
            std::string::npos)
      << err.str();
  EXPECT_NE(err.str().find("rank2 (an earlier run's rank; this run has 2)"), std::string::npos);
}

TEST_F(OtherRunsTest, ASingleDeviceRunRemovesEveryRankFolder) {
  for (const char* f : {"profile.json", "rank0/profile.json", "rank1/profile.json"}) Make(f);
  std::ostringstream err;
  RemoveOtherRuns(project_.string(), 0, err, /*json=*/false);
  EXPECT_EQ(Left(), (std::vector<std::string>{"profile.json"}));
  EXPECT_NE(err.str().find("this run is on one device"), std::string::npos) << err.str();
}

}  // namespace
}  // namespace libreyolo::cli
