// `libreyolo profile report` as a user runs it (through RunCli): every fixture, a comparison,
// a profile.json with its trace beside it, -o handling, --json, and the readers' exit codes.
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "client/app/cli.h"
#include "common/analysis/profile_json_write.h"
#include "common/load/load_profile.h"
#include "tests/support/cli_run.h"

namespace libreyolo::cli {
namespace {

namespace fs = std::filesystem;

using Result = testing::CliResult;
using testing::Cli;

std::string Fixture(const std::string& rel) {
  return std::string(LIBREYOLO_FIXTURES_DIR) + "/" + rel;
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class ReportCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("libreyolo_report_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add);
    fs::remove_all(dir_);
  }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(ReportCommand, EveryFixtureAndAComparisonWriteAPage) {
  for (const char* f :
       {"traces/alexnet.json.gz", "traces/amd_trace.json.gz", "traces/cpu_only.json.gz",
        "traces/cupti_profiler.json.gz", "traces/simple_add.json.gz", "traces/trace_filter.json.gz",
        "profiles/libreyolo-python-infer.json", "profiles/libreyolo-python-run.json"}) {
    const std::string out = Path(fs::path(f).filename().string() + ".html");
    const Result r = Cli({"profile", "report", Fixture(f), "-o", out});
    ASSERT_EQ(r.code, 0) << f << ": " << r.err;
    EXPECT_TRUE(r.err.empty()) << f << ": " << r.err;
    EXPECT_EQ(r.out, "wrote " + out + " (" + std::to_string(fs::file_size(out)) + " bytes)\n");
    const std::string html = ReadBytes(out);
    EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u) << f;
    EXPECT_NE(html.find("</html>"), std::string::npos) << f;
  }
  const Result c =
      Cli({"profile", "report", Fixture("traces/trace_filter.json.gz"),
           Fixture("traces/amd_trace.json.gz"), "--output", Path("cmp.html"), "--json"});
  ASSERT_EQ(c.code, 0) << c.err;
  rapidjson::Document d;
  d.Parse(c.out.c_str());
  ASSERT_FALSE(d.HasParseError()) << c.out;
  EXPECT_EQ(std::string(d["output"].GetString()), Path("cmp.html"));
  EXPECT_EQ(d["bytes"].GetInt64(), static_cast<int64_t>(fs::file_size(Path("cmp.html"))));
  EXPECT_NE(ReadBytes(Path("cmp.html")).find("<section id=\"significance\">"), std::string::npos);
}

TEST_F(ReportCommand, DashWritesThePageToStdout) {
  const Result r = Cli({"profile", "report", Fixture("traces/amd_trace.json.gz"), "-o", "-"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("<!DOCTYPE html>", 0), 0u);
}

// -o naming a link or a device writes through it (docs/report.md): the link stays a link, /dev/null
// stays a device even for root, and /dev/full's "No space left on device" is exit 2.
TEST_F(ReportCommand, ALinkOrADeviceIsWrittenThroughNotReplaced) {
  const std::string t = Fixture("traces/amd_trace.json.gz");
  ASSERT_EQ(Cli({"profile", "report", t, "-o", Path("page.html")}).code, 0);
  std::filesystem::create_symlink(Path("page.html"), Path("latest.html"));
  std::filesystem::resize_file(Path("page.html"), 0);
  Result r = Cli({"profile", "report", t, "-o", Path("latest.html")});
  EXPECT_EQ(r.code, 0) << r.err;
  // Before the devices: an implementation that renames over its output stops here.
  ASSERT_TRUE(std::filesystem::is_symlink(Path("latest.html")));
  EXPECT_GT(std::filesystem::file_size(Path("page.html")), 1000u);
  r = Cli({"profile", "report", t, "-o", "/dev/null"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::is_character_file("/dev/null"));
  if (std::filesystem::is_character_file("/dev/full")) {
    r = Cli({"profile", "report", t, "-o", "/dev/full"});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("/dev/full: No space left on device"), std::string::npos) << r.err;
    EXPECT_TRUE(std::filesystem::is_character_file("/dev/full"));
  }
}

TEST_F(ReportCommand, ProfileJsonFindsItsTraceBeside) {
  // A profile.json that names its trace relative to the job, as the daemon stores it.
  fs::copy_file(Fixture("traces/trace_filter.json.gz"), Path("profile_trace.json"));
  auto p = LoadProfile(Path("profile_trace.json"));
  ASSERT_TRUE(p.ok()) << p.status();
  p->source_kind = "profile";
  p->trace = "runs/profile/prof/profile_trace.json";
  std::ofstream(Path("profile.json")) << WriteProfileJson(*p);
  const Result r = Cli({"profile", "report", Path("profile.json"), "-o", Path("r.html")});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string html = ReadBytes(Path("r.html"));
  const size_t steps = html.find("<section id=\"steps\">");
  ASSERT_NE(steps, std::string::npos);
  const std::string body = html.substr(steps, html.find("</section>", steps) - steps);
  EXPECT_EQ(body.find("n/a"), std::string::npos) << "per-step bars expected";
  EXPECT_NE(html.find("timeline drawn from</dt><dd>" + Path("profile_trace.json")),
            std::string::npos);
}

TEST_F(ReportCommand, ExitCodesAsTheReaders) {
  const std::string t = Fixture("traces/amd_trace.json.gz");
  // Missing input: 2.
  Result r = Cli({"profile", "report", Path("nope.json"), "-o", Path("x.html")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("nope.json"), std::string::npos) << r.err;
  // An input that cannot be analysed: 1, and nothing written.
  std::ofstream(Path("bad.json")) << "{\"traceEvents\": [";
  r = Cli({"profile", "report", Path("bad.json"), "-o", Path("x.html")});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_FALSE(fs::exists(Path("x.html")));
  // -o in a folder that does not exist, -o naming a folder, an unwritable folder: 2.
  r = Cli({"profile", "report", t, "-o", Path("no/such/dir/r.html")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r.err;
  r = Cli({"profile", "report", t, "-o", dir_.string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("is a directory"), std::string::npos) << r.err;
  if (::geteuid() != 0) {  // root writes anywhere
    fs::create_directories(Path("ro"));
    fs::permissions(Path("ro"), fs::perms::owner_read | fs::perms::owner_exec);
    r = Cli({"profile", "report", t, "-o", Path("ro/r.html")});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("not writable"), std::string::npos) << r.err;
  }
  // -o naming the input itself: 2, and the input is untouched.
  fs::copy_file(t, Path("in.json.gz"));
  r = Cli({"profile", "report", Path("in.json.gz"), "-o", Path("in.json.gz")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("would be overwritten"), std::string::npos) << r.err;
  EXPECT_EQ(ReadBytes(Path("in.json.gz")), ReadBytes(t));
  // Bad arguments: 2.
  EXPECT_EQ(Cli({"profile", "report"}).code, 2);
  EXPECT_EQ(Cli({"profile", "report", t, t, t}).code, 2);
  EXPECT_EQ(Cli({"profile", "report", t, "-o"}).code, 2);
  EXPECT_EQ(Cli({"profile", "report", t, "-x", "y"}).code, 2);
  EXPECT_EQ(Cli({"profile", "report", t, "output=r.html"}).code, 2);
  // A job address with no daemon to ask: 2 (as every reader).
  r = Cli({"profile", "report", "job:abc", "-o", Path("j.html"), "--remote", "127.0.0.1:1"});
  EXPECT_EQ(r.code, 2) << r.err;
}

TEST_F(ReportCommand, HelpAndTheSubcommandList) {
  const Result list = Cli({"profile"});
  EXPECT_NE(list.out.find("  report "), std::string::npos) << list.out;
  const Result help = Cli({"profile", "report", "--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("-o, --output FILE"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("BEFORE AFTER"), std::string::npos) << help.out;
}

}  // namespace
}  // namespace libreyolo::cli
