// `libreyolo profile summary DIR/` and `--rank K` through the whole command line: exit codes
// (docs/cli.md), the flag's checks, and the fixture traces of one rank of a large job.
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/io/rank_artifacts.h"
#include "common/readers/ranks_view.h"
#include "tests/support/cli_run.h"
#include "tests/support/test_files.h"

namespace libreyolo::cli {
namespace {

using ::libreyolo::CrossRankMetric;
using ::libreyolo::CrossRankMetrics;
using ::libreyolo::RankArtifact;
using ::libreyolo::RankArtifactName;
using ::libreyolo::SplitRankArtifact;

using testing::Cli;

std::string Fixture(const std::string& name) {
  return absl::StrCat(LIBREYOLO_FIXTURES_DIR, "/traces/", name);
}

// A CPU-only Gloo rank: two 10 ms steps, `dataload_ms` of data loading, a 1 ms op, and an
// all-reduce of `comm_ms` on Gloo's thread.
std::string Rank(int rank, int world, int dataload_ms, int comm_ms) {
  std::string ev;
  for (int s = 0; s < 2; ++s) {
    const int t = s * 100'000;
    absl::StrAppend(
        &ev, s ? "," : "", R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#)", s + 1,
        R"(", "pid": 1, "tid": 1, "ts": )", t, R"(, "dur": 100000},)",
        R"({"ph": "X", "cat": "user_annotation", "name": "enumerate(DataLoader)#it", "pid": 1,)",
        R"( "tid": 1, "ts": )", t, R"(, "dur": )", dataload_ms * 1000, "},",
        R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": )",
        t + 70'000, R"(, "dur": 1000},)",
        R"({"ph": "X", "cat": "user_annotation", "name": "gloo:all_reduce", "pid": 1, "tid": 2,)",
        R"( "ts": )", t + 72'000, R"(, "dur": )", comm_ms * 1000,
        R"(, "args": {"Input Dims": [[256]], "Input type": ["float"]}})");
  }
  return absl::StrCat(R"({"distributedInfo": {"backend": "gloo", "rank": )", rank,
                      R"(, "world_size": )", world, R"(}, "traceEvents": [)", ev, "]}");
}

TEST(RanksCli, SummaryOfAFolderAndRankFlag) {
  libreyolo::test::TempDir d;
  d.Write("rank0.json", Rank(0, 2, 1, 25));
  d.Write("rank1.json", Rank(1, 2, 21, 5));
  const auto text = Cli({"profile", "summary", d.path()});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("verdict: rank 1 is a straggler: its dataload is 20.0 ms longer per "
                          "step"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("the others wait 20.0 ms per step"), std::string::npos) << text.out;
  const auto json = Cli({"profile", "summary", d.path(), "--json"});
  ASSERT_EQ(json.code, 0) << json.err;
  EXPECT_NE(json.out.find("\"straggler\": 1,"), std::string::npos) << json.out;
  EXPECT_NE(json.out.find("\"collectives\": 2,"), std::string::npos);  // an integer
  EXPECT_NE(json.out.find("\"straggler_extra_compute_ms\": 0.0"), std::string::npos);
  EXPECT_NE(json.out.find("\"allreduce_bytes\": 1024.0"), std::string::npos);
  // Every figure of the run is a row of the one table (CrossRankMetrics), in its order: the
  // JSON's top-level numbers are written from it, nothing beside it.
  rapidjson::Document doc;
  doc.Parse(json.out.c_str());
  ASSERT_TRUE(doc.IsObject());
  std::vector<std::string> figures;
  for (const auto& m : doc.GetObject()) {
    const std::string key = m.name.GetString();
    if ((m.value.IsNumber() || m.value.IsNull()) && key != "world_size" && key != "threads") {
      figures.push_back(key);
    }
  }
  std::vector<std::string> table;
  for (const CrossRankMetric& m : CrossRankMetrics()) table.push_back(m.name);
  EXPECT_EQ(figures, table);

  // `report DIR/` (issue 21 §2): the cross-rank page, its figures the same numbers as --json.
  const std::string html_path = d.File("ranks.html");
  const auto report = Cli({"profile", "report", d.path(), "-o", html_path});
  ASSERT_EQ(report.code, 0) << report.err;
  const std::string html = libreyolo::test::ReadFile(html_path);
  EXPECT_NE(html.find("rank 1 is a straggler"), std::string::npos);
  EXPECT_NE(html.find("<svg"), std::string::npos);  // the per-rank chart
  for (const std::string& name : table) {
    const std::string cell = absl::StrCat("<td class=\"t\">", name, "</td><td data-v=\"");
    const size_t at = html.find(cell);
    ASSERT_NE(at, std::string::npos) << name;
    const rapidjson::Value& want = doc[name.c_str()];
    if (!want.IsNumber()) continue;
    const size_t from = at + cell.size();
    EXPECT_DOUBLE_EQ(std::stod(html.substr(from, html.find('"', from) - from)), want.GetDouble())
        << name;
  }
  // A folder beside a file: exit 2, saying what to give.
  const auto mixed = Cli({"profile", "report", d.path(), d.File("rank0.json"), "-o", html_path});
  EXPECT_EQ(mixed.code, 2);
  EXPECT_NE(mixed.err.find("is a folder while"), std::string::npos) << mixed.err;
  EXPECT_NE(mixed.err.find("report BEFORE/ AFTER/"), std::string::npos) << mixed.err;

  EXPECT_EQ(Cli({"profile", "kernels", d.path()}).code, 2);
  for (const char* reader : {"summary", "phases", "kernels", "ops"}) {
    const auto r = Cli({"profile", reader, d.path(), "--rank", "1"});
    EXPECT_EQ(r.code, 0) << reader << ": " << r.err;
  }
  EXPECT_EQ(Cli({"profile", "ops", d.path(), "--rank", "x"}).code, 2);
  const auto missing = Cli({"profile", "ops", d.path(), "--rank", "2"});
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("holds ranks 0..1 of a 2-rank job"), std::string::npos) << missing.err;
  EXPECT_EQ(Cli({"profile", "summary", d.File("rank0.json"), "--rank", "0"}).code, 2);
  const auto remote = Cli({"profile", "summary", "job:abc", "--rank", "0"});
  EXPECT_EQ(remote.code, 2);
  EXPECT_NE(remote.err.find("not a job on a daemon"), std::string::npos) << remote.err;
}

// `compare BEFORE/ AFTER/` (issue 21 §2): two runs' folders side by side, as compare shows two
// profiles; `--rank K` compares rank K's traces; a folder against a file is refused.
TEST(RanksCli, CompareTwoRunsFolders) {
  libreyolo::test::TempDir slow, fixed, wide;
  slow.Write("rank0.json", Rank(0, 2, 1, 25));
  slow.Write("rank1.json", Rank(1, 2, 21, 5));
  fixed.Write("rank0.json", Rank(0, 2, 1, 5));
  fixed.Write("rank1.json", Rank(1, 2, 1, 5));
  const auto text = Cli({"profile", "compare", slow.path(), fixed.path()});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("a single run cannot support a significance call"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("rank 1 is a straggler"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("balanced"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("rank 1 dataload_ms"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("warning:"), std::string::npos) << text.out;
  const auto json = Cli({"profile", "compare", slow.path(), fixed.path(), "--json"});
  ASSERT_EQ(json.code, 0) << json.err;
  // The others waited 20 ms per step for rank 1 before, nothing after; the same names as the
  // folder's summary --json.
  rapidjson::Document d;
  d.Parse(json.out.c_str());
  ASSERT_TRUE(d.IsObject() && d.HasMember("deltas")) << json.out;
  auto delta = [&](const std::string& metric) -> const rapidjson::Value* {
    for (const auto& row : d["deltas"].GetArray()) {
      if (row["metric"].GetString() == metric) return &row;
    }
    ADD_FAILURE() << "no delta " << metric << " in " << json.out;
    return nullptr;
  };
  const rapidjson::Value* wait = delta("collective_wait_ms");
  ASSERT_NE(wait, nullptr);
  EXPECT_DOUBLE_EQ((*wait)["before"].GetDouble(), 20.0);
  EXPECT_DOUBLE_EQ((*wait)["after"].GetDouble(), 0.0);
  EXPECT_DOUBLE_EQ((*wait)["pct"].GetDouble(), -100.0);
  EXPECT_FALSE((*wait)["higher_is_better"].GetBool());
  const rapidjson::Value* dataload = delta("rank 1 dataload_ms");
  ASSERT_NE(dataload, nullptr);
  EXPECT_DOUBLE_EQ((*dataload)["before"].GetDouble(), 21.0);
  EXPECT_DOUBLE_EQ((*dataload)["after"].GetDouble(), 1.0);
  const rapidjson::Value* bytes = delta("allreduce_bytes");
  ASSERT_NE(bytes, nullptr);
  EXPECT_DOUBLE_EQ((*bytes)["before"].GetDouble(), 1024.0);
  EXPECT_TRUE((*bytes)["higher_is_better"].IsNull()) << "gradients are neither better nor worse";
  EXPECT_STREQ(d["bound"]["before"].GetString(), "rank 1 is a straggler");
  EXPECT_STREQ(d["bound"]["after"].GetString(), "balanced");

  // `report BEFORE/ AFTER/`: the same rows, the same exact values as `compare --json`.
  const std::string html_path = fixed.File("compare.html");
  const auto report = Cli({"profile", "report", slow.path(), fixed.path(), "-o", html_path});
  ASSERT_EQ(report.code, 0) << report.err;
  const std::string html = libreyolo::test::ReadFile(html_path);
  EXPECT_NE(html.find(absl::StrCat("before: ", slow.path(), ": 2 ranks, gloo")), std::string::npos);
  EXPECT_NE(html.find(absl::StrCat("after: ", fixed.path(), ": 2 ranks, gloo")), std::string::npos);
  EXPECT_NE(html.find("<tr data-metric=\"collective_wait_ms\" data-before=\"20\" "
                      "data-after=\"0\">"),
            std::string::npos);
  EXPECT_NE(html.find("<tr data-metric=\"rank 1 dataload_ms\" data-before=\"21\" "
                      "data-after=\"1\">"),
            std::string::npos);

  const auto one = Cli({"profile", "compare", slow.path(), fixed.path(), "--rank", "1"});
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_NE(one.out.find("rank1.json (rank 1)"), std::string::npos) << one.out;

  wide.Write("rank0.json", Rank(0, 3, 1, 5));
  wide.Write("rank1.json", Rank(1, 3, 1, 5));
  wide.Write("rank2.json", Rank(2, 3, 1, 5));
  const auto mixed = Cli({"profile", "compare", slow.path(), wide.path()});
  ASSERT_EQ(mixed.code, 0) << mixed.err;
  EXPECT_NE(mixed.out.find("warning: different world_size: 2 before, 3 after; the numbers are "
                           "not like for like"),
            std::string::npos)
      << mixed.out;

  const auto file = Cli({"profile", "compare", slow.path(), slow.File("rank0.json")});
  EXPECT_EQ(file.code, 2);
  EXPECT_NE(file.err.find("compare reads two folders of per-rank traces or two profiles"),
            std::string::npos)
      << file.err;
}

// A data-parallel job's layout (<project>/prof/rank<R>/, what the engine writes and the client
// fetches a daemon's gang into): read as the ranks even where a single-device run's
// profile_trace.json sits beside them in the same prof/.
TEST(RanksCli, RankFoldersWinOverASingleRunsTraceBesideThem) {
  libreyolo::test::TempDir d;
  d.Write("prof/profile_trace.json", R"({"traceEvents": []})");  // an earlier one-device run
  d.Write("prof/rank0/profile_trace.json", Rank(0, 2, 1, 25));
  d.Write("prof/rank1/profile_trace.json", Rank(1, 2, 21, 5));
  const auto json = Cli({"profile", "summary", d.File("prof"), "--json"});
  ASSERT_EQ(json.code, 0) << json.err;
  EXPECT_NE(json.out.find("\"world_size\": 2"), std::string::npos) << json.out;
  EXPECT_NE(json.out.find("\"straggler\": 1,"), std::string::npos) << json.out;
}

// The names of a gang's artifacts (common/io/rank_artifacts.h): rank 0's plain, rank R's
// prefixed, and back.
TEST(RankArtifacts, NamesRoundTrip) {
  EXPECT_EQ(RankArtifactName(0, "profile.json"), "profile.json");
  EXPECT_EQ(RankArtifactName(3, "profile_trace.json"), "rank3.profile_trace.json");
  for (int64_t rank : {0, 1, 7, 63}) {
    const RankArtifact back = SplitRankArtifact(RankArtifactName(rank, "profile_trace.12.json"));
    EXPECT_EQ(back.rank, rank);
    EXPECT_EQ(back.file, "profile_trace.12.json");
  }
  // Names that only look like it are rank 0's files as they are.
  for (const char* name : {"rank.json", "rankx.json", "rank0.json", "rank3.", "ranking.json"}) {
    EXPECT_EQ(SplitRankArtifact(name).rank, 0) << name;
    EXPECT_EQ(SplitRankArtifact(name).file, name) << name;
  }
}

TEST(RanksCli, BadFoldersAreExitTwoUnreadableRanksExitOne) {
  libreyolo::test::TempDir empty;
  EXPECT_EQ(Cli({"profile", "summary", empty.path()}).code, 2);
  libreyolo::test::TempDir dup;
  dup.Write("a.json", Rank(0, 2, 1, 1));
  dup.Write("b.json", Rank(0, 2, 1, 1));
  EXPECT_EQ(Cli({"profile", "summary", dup.path()}).code, 2);
  libreyolo::test::TempDir corrupt;
  corrupt.Write("a.json", Rank(0, 2, 1, 1));
  const std::string whole = Rank(1, 2, 1, 1);
  corrupt.Write("b.json", whole.substr(0, whole.size() - 40));
  const auto r = Cli({"profile", "summary", corrupt.path()});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("rank 1 ("), std::string::npos) << r.err;
}

// The fixtures hold one rank of a large job each: the folder says what it is, --rank reads it.
TEST(RanksCli, OneRankOfALargeJob) {
  struct Case {
    const char* file;
    const char* says;
    const char* rank;
  };
  for (const Case& c : {Case{"trace_filter.json.gz",
                             "holds rank 0 of a 128-rank job (backend "
                             "nccl); ranks 1..127 are missing",
                             "0"},
                        Case{"cpu_only.json.gz",
                             "holds rank 34 of a 300-rank job (backend "
                             "gloo); ranks 0..33, 35..299 are missing",
                             "34"}}) {
    libreyolo::test::TempDir d;
    std::filesystem::copy_file(Fixture(c.file), d.File(c.file));
    const auto r = Cli({"profile", "summary", d.path()});
    EXPECT_EQ(r.code, 2) << c.file;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(absl::StrCat("--rank ", c.rank)), std::string::npos) << r.err;
    const auto one = Cli({"profile", "summary", d.path(), "--rank", c.rank, "--json"});
    EXPECT_EQ(one.code, 0) << one.err;
  }
}

}  // namespace
}  // namespace libreyolo::cli
