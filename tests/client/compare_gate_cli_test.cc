// Issue 20 section 5 through RunCli, as main() drives it: the CI gate `compare
// --fail-if-slower PCT` on profiles with img/s trials (as profile_repeat.json carries them):
// PASS / FAIL / INCONCLUSIVE, each with its exit code, and the --json field.
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "client/cli/cli.h"
#include "tests/support/cli_run.h"

namespace libreyolo::cli {
namespace {

namespace fs = std::filesystem;

using Result = testing::CliResult;
using testing::Cli;

const std::string kPythonInfer =
    std::string(LIBREYOLO_FIXTURES_DIR) + "/profiles/libreyolo-python-infer.json";

class CompareGateCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("libreyolo_gate_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The Python tool's infer profile with img/s trials (as profile_repeat.json carries them).
  std::string Profile(const std::string& name, const std::vector<double>& trials) {
    std::ifstream in(kPythonInfer);
    std::stringstream ss;
    ss << in.rdbuf();
    rapidjson::Document d;
    d.Parse(ss.str().c_str());
    auto& alloc = d.GetAllocator();
    double mean = 0;
    for (double t : trials) mean += t / static_cast<double>(trials.size());
    double var = 0;
    for (double t : trials) var += (t - mean) * (t - mean);
    d["img_per_s"].SetDouble(mean);
    if (trials.size() >= 2) {
      rapidjson::Value list(rapidjson::kArrayType);
      for (double t : trials) list.PushBack(t, alloc);
      d.AddMember("img_per_s_trials", list, alloc);
      d.AddMember("img_per_s_n", static_cast<int64_t>(trials.size()), alloc);
      d.AddMember("img_per_s_std", std::sqrt(var / static_cast<double>(trials.size() - 1)), alloc);
    }
    rapidjson::StringBuffer buf;
    rapidjson::Writer<rapidjson::StringBuffer> w(buf);
    d.Accept(w);
    const fs::path p = dir_ / name;
    std::ofstream(p) << buf.GetString();
    return p.string();
  }

  fs::path dir_;
};

TEST_F(CompareGateCli, PassFailInconclusiveEachWithItsExitCode) {
  const std::string before = Profile("before.json", {100, 102, 98, 100});
  const std::string same = Profile("same.json", {99, 101, 100, 100});
  const std::string slower = Profile("slower.json", {80, 82, 78, 80});
  const std::string borderline = Profile("borderline.json", {95, 97, 93, 95});
  const Result pass = Cli({"profile", "compare", before, same, "--fail-if-slower", "5"});
  EXPECT_EQ(pass.code, 0) << pass.err;
  EXPECT_EQ(pass.out.rfind("gate: PASS (exit 0): ", 0), 0u) << pass.out;
  const Result fail = Cli({"profile", "compare", before, slower, "--fail-if-slower", "5"});
  EXPECT_EQ(fail.code, 4) << fail.err;
  EXPECT_EQ(fail.out.rfind("gate: FAIL (exit 4): img/s -20.00 %", 0), 0u) << fail.out;
  const Result unsure = Cli({"profile", "compare", before, borderline, "--fail-if-slower", "5"});
  EXPECT_EQ(unsure.code, 5) << unsure.err;
  EXPECT_EQ(unsure.out.rfind("gate: INCONCLUSIVE (exit 5): ", 0), 0u) << unsure.out;
  // Without the flag, compare answers 0 as before and prints no gate.
  const Result plain = Cli({"profile", "compare", before, slower});
  EXPECT_EQ(plain.code, 0);
  EXPECT_EQ(plain.out.find("gate:"), std::string::npos);
}

TEST_F(CompareGateCli, SingleRunIsInconclusive) {
  const std::string one = Profile("one.json", {100});
  const std::string many = Profile("many.json", {50, 51, 49});
  const Result r = Cli({"profile", "compare", one, many, "--fail-if-slower", "5"});
  EXPECT_EQ(r.code, 5) << r.err;
  EXPECT_NE(r.out.find("gate: INCONCLUSIVE (exit 5): single run (n=1 before, n=3 after): a "
                       "single run cannot support a significance call"),
            std::string::npos)
      << r.out;
}

TEST_F(CompareGateCli, JsonCarriesTheVerdict) {
  const std::string before = Profile("before.json", {100, 102, 98, 100});
  const std::string slower = Profile("slower.json", {80, 82, 78, 80});
  const Result r =
      Cli({"profile", "compare", before, slower, "--fail-if-slower", "5", "--json"});
  EXPECT_EQ(r.code, 4);
  rapidjson::Document d;
  d.Parse(r.out.c_str());
  ASSERT_TRUE(d.IsObject() && d.HasMember("gate")) << r.out;
  EXPECT_STREQ(d["gate"]["verdict"].GetString(), "FAIL");
  EXPECT_EQ(d["gate"]["exit_code"].GetInt(), 4);
  EXPECT_NEAR(d["gate"]["img_per_s_change_pct"].GetDouble(), -20, 1e-9);
  EXPECT_TRUE(d.HasMember("deltas"));  // the comparison itself is still there
}

TEST_F(CompareGateCli, BadThresholdsAndMissingInputsAreUsageErrors) {
  const std::string p = Profile("p.json", {100, 101});
  for (const char* bad : {"-1", "100", "abc", "nan"}) {
    const Result r = Cli({"profile", "compare", p, p, "--fail-if-slower", bad});
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_NE(r.err.find("--fail-if-slower"), std::string::npos) << r.err;
  }
  EXPECT_EQ(Cli({"profile", "compare", p, "/nonexistent.json", "--fail-if-slower", "5"}).code, 2);
}

}  // namespace
}  // namespace libreyolo::cli
