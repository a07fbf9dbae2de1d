// Issue 20 section 6, first contact, through RunCli as main() drives it: a mistyped flag or
// subcommand gets "did you mean ...?" (client/cli/suggest.h), and only when a name is close.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "client/app/cli.h"
#include "client/cli/python_cli.h"
#include "client/cli/suggest.h"
#include "tests/support/cli_run.h"

namespace libreyolo::cli {
namespace {

using Result = testing::CliResult;
using testing::Cli;

const std::string kPythonInfer =
    std::string(LIBREYOLO_FIXTURES_DIR) + "/profiles/libreyolo-python-infer.json";

TEST(Suggest, EditDistanceCountsSwapsAsOneEdit) {
  EXPECT_EQ(EditDistance("device", "device"), 0);
  EXPECT_EQ(EditDistance("devcie", "device"), 1);  // a swap
  EXPECT_EQ(EditDistance("devic", "device"), 1);
  EXPECT_EQ(EditDistance("dvice", "device"), 1);
  EXPECT_EQ(EditDistance("", "abc"), 3);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3);
}

TEST(Suggest, ClosestNameOnlyWhenItIsClose) {
  const std::vector<std::string> flags = {"device", "repeat", "remote", "runs", "json"};
  EXPECT_EQ(ClosestName("devcie", flags), "device");
  EXPECT_EQ(ClosestName("dev", flags), "device");   // a unique prefix
  EXPECT_EQ(ClosestName("re", flags), std::nullopt);  // repeat or remote: no guess
  EXPECT_EQ(ClosestName("jsn", flags), "json");
  EXPECT_EQ(ClosestName("batch", flags), std::nullopt);
  EXPECT_EQ(ClosestName("x", flags), std::nullopt);
}

TEST(DidYouMean, MistypedFlagOfAJobCommand) {
  const Result r = Cli({"profile", "infer", "--devcie", "cpu"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown flag --devcie for 'infer'; did you mean --device?"),
            std::string::npos)
      << r.err;
  const Result single_dash = Cli({"profile", "run", "synthetic", "-device", "cpu"});
  EXPECT_EQ(single_dash.code, 2);
  EXPECT_NE(single_dash.err.find("did you mean --device?"), std::string::npos) << single_dash.err;
}

TEST(DidYouMean, MistypedFlagOfAReaderAndOfJobs) {
  const Result r = Cli({"profile", "kernels", kPythonInfer, "--tpo", "3"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("did you mean --top?"), std::string::npos) << r.err;
  const Result jobs = Cli({"jobs", "list", "--remtoe", "h:1"});
  EXPECT_EQ(jobs.code, 2);
  EXPECT_NE(jobs.err.find("did you mean --remote?"), std::string::npos) << jobs.err;
  // Negated switches are candidates too.
  const Result no = Cli({"profile", "infer", "--no-trac"});
  EXPECT_NE(no.err.find("did you mean --no-trace?"), std::string::npos) << no.err;
}

TEST(DidYouMean, NothingCloseSuggestsNothing) {
  const Result r = Cli({"profile", "summary", kPythonInfer, "--frobnicate"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.find("did you mean"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("see --help for its flags"), std::string::npos) << r.err;
}

TEST(DidYouMean, MistypedSubcommandsAndGroups) {
  const Result profile = Cli({"profile", "sumary", kPythonInfer});
  EXPECT_EQ(profile.code, 2);
  EXPECT_NE(profile.err.find("unknown subcommand 'sumary'. Did you mean 'summary'?"),
            std::string::npos)
      << profile.err;
  EXPECT_NE(Cli({"profile", "infr"}).err.find("Did you mean 'infer'?"), std::string::npos);
  const Result jobs = Cli({"jobs", "lsit"});
  EXPECT_EQ(jobs.code, 2);
  EXPECT_NE(jobs.err.find("Did you mean 'list'?"), std::string::npos) << jobs.err;
  const Result group = Cli({"profle", "summary"});
  EXPECT_EQ(group.code, 2);
  EXPECT_NE(group.err.find("Did you mean 'profile'?"), std::string::npos) << group.err;
}

// A misspelt group stays ours (answered with "did you mean"), but no command of the Python
// LibreYOLO 1.6.0 (its `libreyolo --help`) is taken for one: those are all handed over.
TEST(DidYouMean, PythonCommandsAreHandedOverNotCorrected) {
  for (const char* own : {"profile", "jobs", "profle", "jbos", "--version", "--help", "-h"}) {
    EXPECT_TRUE(IsOwnCommand({own})) << own;
  }
  EXPECT_TRUE(IsOwnCommand({}));
  for (const char* python :
       {"version", "checks", "models", "formats", "cfg", "info", "metadata", "compare", "verify",
        "enroll", "detany3d", "fcos3d", "wilddet3d", "3dmood", "predict", "train", "val",
        "export", "quantize", "ui", "monitor", "label", "doctor", "help", "--install-completion",
        "-v"}) {
    EXPECT_FALSE(IsOwnCommand({python})) << python;
  }
}

// Issue 23, item 4: --time-limit is checked before any daemon is reached, and says its form.
TEST(TimeLimit, BadValuesAreRefusedBeforeAnyDaemonIsStarted) {
  for (const char* bad : {"0", "-5", "abc", "1.5h", "9999999999", "90x", ""}) {
    SCOPED_TRACE(bad);
    const Result r = Cli({"profile", "infer", "--device", "cpu", "--time-limit", bad});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("--time-limit needs a positive number of seconds (or 30m, 2h)"),
              std::string::npos)
        << r.err;
  }
}

}  // namespace
}  // namespace libreyolo::cli
