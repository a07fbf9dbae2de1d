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

#include "client/app/cli.h"
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
  const Result pass =
      Cli({"profile", "compare", before, same, "--fail-if-slower", "5", "--job-drift-pct", "0"});
  EXPECT_EQ(pass.code, 0) << pass.err;
  EXPECT_EQ(pass.out.rfind("gate: PASS (exit 0): ", 0), 0u) << pass.out;
  const Result fail =
      Cli({"profile", "compare", before, slower, "--fail-if-slower", "5", "--job-drift-pct", "0"});
  EXPECT_EQ(fail.code, 4) << fail.err;
  EXPECT_EQ(fail.out.rfind("gate: FAIL (exit 4): img/s -20.00 %", 0), 0u) << fail.out;
  const Result unsure = Cli(
      {"profile", "compare", before, borderline, "--fail-if-slower", "5", "--job-drift-pct", "0"});
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
  const Result r =
      Cli({"profile", "compare", one, many, "--fail-if-slower", "5", "--job-drift-pct", "0"});
  EXPECT_EQ(r.code, 5) << r.err;
  EXPECT_NE(r.out.find("gate: INCONCLUSIVE (exit 5): single run (n=1 before, n=3 after): a "
                       "single run cannot support a significance call"),
            std::string::npos)
      << r.out;
}

TEST_F(CompareGateCli, JsonCarriesTheVerdict) {
  const std::string before = Profile("before.json", {100, 102, 98, 100});
  const std::string slower = Profile("slower.json", {80, 82, 78, 80});
  const Result r = Cli({"profile", "compare", before, slower, "--fail-if-slower", "5", "--json",
                        "--job-drift-pct", "0"});
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
  EXPECT_EQ(Cli({"profile", "compare", p, "/nonexistent.json", "--fail-if-slower", "5",
                 "--job-drift-pct", "0"})
                .code,
            2);
}

std::string GateFixture(const std::string& name) {
  return std::string(LIBREYOLO_FIXTURES_DIR) + "/gate/" + name + ".json";
}

// Issue 36 §5: two identical --repeat 3 jobs on a loaded box, the second 27 % slower from the
// load (tests/fixtures/gate): the trials alone said FAIL; with the drift between jobs (the
// default --job-drift-pct) it is not a FAIL, and a true regression still is.
TEST_F(CompareGateCli, RecordedPairsWithTheDriftBetweenJobs) {
  const Result loaded = Cli({"profile", "compare", GateFixture("loaded-before"),
                             GateFixture("loaded-after"), "--fail-if-slower", "5"});
  EXPECT_EQ(loaded.code, 5) << loaded.out << loaded.err;
  EXPECT_EQ(loaded.out.rfind("gate: INCONCLUSIVE (exit 5): img/s -27.10 %", 0), 0u) << loaded.out;
  EXPECT_NE(loaded.out.find("drift between jobs"), std::string::npos) << loaded.out;
  const Result within =
      Cli({"profile", "compare", GateFixture("loaded-before"), GateFixture("loaded-after"),
           "--fail-if-slower", "5", "--job-drift-pct", "0"});
  EXPECT_EQ(within.code, 4) << within.out;  // the answer, from the trials alone
  const Result regression =
      Cli({"profile", "compare", GateFixture("regression-before"), GateFixture("regression-after"),
           "--fail-if-slower", "5", "--json"});
  EXPECT_EQ(regression.code, 4) << regression.out << regression.err;
  rapidjson::Document d;
  d.Parse(regression.out.c_str());
  ASSERT_TRUE(d.IsObject() && d.HasMember("gate")) << regression.out;
  EXPECT_STREQ(d["gate"]["verdict"].GetString(), "FAIL");
  EXPECT_GT(d["gate"]["job_drift_pct"].GetDouble(), 0);
  EXPECT_TRUE(d["gate"]["pair_drift_pct"].IsNumber());
}

// Like for like only: another imgsz (or mode, model, size, device) is exit 2 with the reason;
// a different batch is a lever, compared per image and said once.
TEST_F(CompareGateCli, OnlyLikeForLike) {
  auto edited = [&](const std::string& name, const char* key, int value) {
    std::ifstream in(GateFixture("loaded-before"));
    std::stringstream ss;
    ss << in.rdbuf();
    rapidjson::Document d;
    d.Parse(ss.str().c_str());
    d["config"][key].SetInt(value);
    rapidjson::StringBuffer buf;
    rapidjson::Writer<rapidjson::StringBuffer> w(buf);
    d.Accept(w);
    const fs::path p = dir_ / name;
    std::ofstream(p) << buf.GetString();
    return p.string();
  };
  const std::string before = GateFixture("loaded-before");
  const Result imgsz = Cli(
      {"profile", "compare", before, edited("i320.json", "imgsz", 320), "--fail-if-slower", "5"});
  EXPECT_EQ(imgsz.code, 2) << imgsz.out;
  EXPECT_TRUE(imgsz.out.empty()) << imgsz.out;
  EXPECT_NE(imgsz.err.find("imgsz 160 before, 320 after"), std::string::npos) << imgsz.err;
  EXPECT_NE(imgsz.err.find("like-for-like"), std::string::npos) << imgsz.err;
  const Result batch =
      Cli({"profile", "compare", before, edited("b4.json", "batch", 4), "--fail-if-slower", "5"});
  EXPECT_NE(batch.code, 2) << batch.err;
  size_t lines = 0;  // lines that speak of the batch
  std::istringstream text(batch.out);
  for (std::string line; std::getline(text, line);)
    lines += line.find("batch") != std::string::npos;
  EXPECT_EQ(lines, 1u) << batch.out;  // said once
  EXPECT_NE(batch.out.find("different batch: 1 before, 4 after; a lever: compare the per-image "
                           "figures"),
            std::string::npos)
      << batch.out;
}

TEST_F(CompareGateCli, JobDriftFlagIsChecked) {
  const std::string p = GateFixture("loaded-before");
  for (const char* bad : {"-1", "100", "abc", "nan"}) {
    const Result r =
        Cli({"profile", "compare", p, p, "--fail-if-slower", "5", "--job-drift-pct", bad});
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_NE(r.err.find("--job-drift-pct"), std::string::npos) << r.err;
  }
  // Without the gate it means nothing: said, not ignored.
  const Result alone = Cli({"profile", "compare", p, p, "--job-drift-pct", "2"});
  EXPECT_EQ(alone.code, 2);
  EXPECT_NE(alone.err.find("give it with --fail-if-slower"), std::string::npos) << alone.err;
}

}  // namespace
}  // namespace libreyolo::cli
