// The `libreyolo profile` command contract (shared/spec/cli.md): every reader, --help, --json,
// exit codes and error messages, driven through RunCli exactly as main() does.
#include "client/app/cli.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "client/commands/job_commands.h"
#include "client/commands/reader_commands.h"
#include "client/remote/progress_display.h"
#include "common/readers/run_reader.h"
#include "tests/support/cli_run.h"
#include "tests/support/test_files.h"

namespace libreyolo::cli {
namespace {

namespace fs = std::filesystem;

using Result = testing::CliResult;
using testing::Cli;

std::string Fixture(const std::string& rel) { return std::string(LIBREYOLO_FIXTURES_DIR) + "/" + rel; }
const std::string kTrace = Fixture("traces/trace_filter.json.gz");
const std::string kAmd = Fixture("traces/amd_trace.json.gz");

bool IsJson(const std::string& s) {
  rapidjson::Document d;
  d.Parse(s.c_str());
  return !d.HasParseError();
}

using test::TempDir;

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Issue 22: `--top -3` showed every row locally (the daemon refused it): one bound, both paths.
TEST(CliContract, TopOutsideItsBoundIsExitTwoLocally) {
  for (const char* reader : {"kernels", "ops"}) {
    // 2^31 and 2^63-1 are integers too: out of bounds, not "needs an integer".
    for (const char* top : {"-3", "100001", "2147483648", "9223372036854775807"}) {
      const Result r = Cli({"profile", reader, kAmd, "--top", top});
      EXPECT_EQ(r.code, 2) << reader << " --top " << top;
      EXPECT_NE(r.err.find("top: "), std::string::npos) << r.err;
      EXPECT_NE(r.err.find("0 = all rows"), std::string::npos) << r.err;
      EXPECT_TRUE(r.out.empty());
    }
    // Past 64 bits: out of range, with the range; text that is no integer: said so.
    Result r = Cli({"profile", reader, kAmd, "--top", "-99999999999999999999"});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("--top: -99999999999999999999 is out of range (an integer of 64 bits, "
                         "-9223372036854775808..9223372036854775807)"),
              std::string::npos)
        << r.err;
    r = Cli({"profile", reader, kAmd, "--top", "12abc"});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("--top needs an integer, got '12abc'"), std::string::npos) << r.err;
  }
}

// The other readers' bounds are the daemon's too (issue 22: `--remove-launches -1` and 1e300
// were read locally while the daemon refused them): common/readers' checks, one message.
TEST(CliContract, DepthAndRemoveLaunchesHaveTheDaemonsBoundsLocally) {
  for (const char* depth : {"0", "1025", "-2"}) {
    const Result r = Cli({"profile", "modules", kAmd, "--depth", depth});
    EXPECT_EQ(r.code, 2) << depth;
    EXPECT_NE(r.err.find(std::string("depth: ") + depth + " is outside 1..1024"), std::string::npos)
        << r.err;
  }
  for (const char* n : {"-1", "1e10"}) {
    const Result r = Cli({"profile", "what-if", kAmd, "--remove-launches", n});
    EXPECT_EQ(r.code, 2) << n;
    EXPECT_NE(r.err.find("remove_launches: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("is not a number in [0, 1e+09]"), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty());
  }
  EXPECT_EQ(Cli({"profile", "what-if", kAmd, "--remove-launches", "1e9"}).code, 0);
}

// One row per reader (common/readers/run_reader.h): its place is its id, its name is the
// subcommand's, and `libreyolo profile` lists the readers in the table's order, then report.
TEST(CliContract, TheReaderTableDrivesTheSubcommands) {
  const std::vector<ReaderDef>& table = Readers();
  const std::vector<ReaderCommand>& commands = ReaderCommands();
  ASSERT_EQ(commands.size(), table.size() + 1);
  for (size_t i = 0; i < table.size(); ++i) {
    EXPECT_EQ(static_cast<size_t>(table[i].id), i);
    EXPECT_EQ(&Reader(table[i].id), &table[i]);
    EXPECT_EQ(FindReader(table[i].name), &table[i]);
    EXPECT_EQ(commands[i].spec.name, table[i].name);
    const size_t required = static_cast<size_t>(
        std::count_if(commands[i].spec.positionals.begin(), commands[i].spec.positionals.end(),
                      [](const PositionalSpec& p) { return p.required; }));
    EXPECT_EQ(required, table[i].inputs) << table[i].name;
  }
  EXPECT_EQ(commands.back().spec.name, "report");
  EXPECT_EQ(FindReader("report"), nullptr);
}

TEST(CliContract, ProfileAloneListsSubcommands) {
  const Result r = Cli({"profile"});
  EXPECT_EQ(r.code, 0);
  for (const char* sub : {"run", "infer", "summary", "get", "phases", "kernels", "ops", "modules",
                          "compare", "what-if", "latency"}) {
    EXPECT_NE(r.out.find(std::string("  ") + sub), std::string::npos) << sub;
  }
}

TEST(CliContract, HelpOnEverySubcommandListsItsFlags) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> expected = {
      {"summary", {"--json"}},
      {"get", {"--json", "field"}},
      {"phases", {"--json"}},
      {"kernels", {"--top", "--category", "--grep", "--tensorcore", "--sort", "--phase", "--json"}},
      {"ops", {"--top", "--phase", "--sort", "--group-by-input-shape", "--json",
               "self_cpu_memory_usage"}},
      {"modules", {"--depth", "--sort", "--format", "--json", "self_cpu", "folded"}},
      {"compare", {"before", "after", "--json"}},
      {"what-if", {"--remove-category", "--remove-launches", "--json"}},
      {"latency", {"--buckets", "--slowest", "--json", "1..1000", "0..100000"}},
  };
  for (const auto& [sub, flags] : expected) {
    const Result r = Cli({"profile", sub, "--help"});
    EXPECT_EQ(r.code, 0) << sub;
    for (const auto& f : flags) EXPECT_NE(r.out.find(f), std::string::npos) << sub << " " << f;
  }
}

TEST(CliContract, EveryReaderAnswersOnEveryFixtureInTextAndJson) {
  for (const char* name : {"alexnet", "amd_trace", "cpu_only", "cupti_profiler", "simple_add",
                           "trace_filter"}) {
    const std::string t = Fixture(std::string("traces/") + name + ".json.gz");
    const std::vector<std::vector<std::string>> commands = {
        {"profile", "summary", t},
        {"profile", "get", t},
        {"profile", "get", t, "step_ms"},
        {"profile", "phases", t},
        {"profile", "kernels", t},
        {"profile", "ops", t},
        {"profile", "compare", t, kTrace},
        {"profile", "what-if", t, "--remove-launches", "10"},
    };
    for (auto cmd : commands) {
      Result r = Cli(cmd);
      EXPECT_EQ(r.code, 0) << name << " " << cmd[1] << ": " << r.err;
      EXPECT_TRUE(r.err.empty()) << name << " " << cmd[1] << ": " << r.err;
      EXPECT_FALSE(r.out.empty()) << name << " " << cmd[1];
      cmd.push_back("--json");
      r = Cli(cmd);
      EXPECT_EQ(r.code, 0) << name << " " << cmd[1] << " --json";
      EXPECT_TRUE(IsJson(r.out)) << name << " " << cmd[1] << " --json: " << r.out;
    }
  }
}

TEST(CliContract, PythonLibreYoloProfilesReadInEveryReader) {
  const std::string run = Fixture("profiles/libreyolo-python-run.json");
  const std::string infer = Fixture("profiles/libreyolo-python-infer.json");
  for (const std::string& p : {run, infer}) {
    for (std::vector<std::string> cmd : std::vector<std::vector<std::string>>{
             {"profile", "summary", p},
             {"profile", "get", p},
             {"profile", "phases", p},
             {"profile", "kernels", p},
             {"profile", "ops", p},
             {"profile", "ops", p, "--phase", "forward"},
             {"profile", "compare", run, p},
             {"profile", "what-if", p, "--remove-launches", "1"}}) {
      Result r = Cli(cmd);
      EXPECT_EQ(r.code, 0) << p << " " << cmd[1] << ": " << r.err;
      cmd.push_back("--json");
      r = Cli(cmd);
      EXPECT_EQ(r.code, 0) << p << " " << cmd[1] << " --json: " << r.err;
      EXPECT_TRUE(IsJson(r.out)) << p << " " << cmd[1];
    }
  }
  // The numbers they hold, and n/a for what they lack.
  EXPECT_EQ(Cli({"profile", "get", infer, "latency_p50_ms"}).out, "153\n");
  EXPECT_EQ(Cli({"profile", "get", infer, "nms_ms"}).out, "0.641\n");
  EXPECT_EQ(Cli({"profile", "get", run, "backward_wall_ms"}).out, "189.09\n");
  EXPECT_EQ(Cli({"profile", "get", run, "peak_vram_mb"}).out, "n/a\n");
  EXPECT_EQ(Cli({"profile", "get", run, "launch_api_ms"}).out, "n/a\n");
  const Result s = Cli({"profile", "summary", infer});
  EXPECT_NE(s.out.find("latency p50/p90/p99    153.00 / 158.62 / 160.99 ms"), std::string::npos)
      << s.out;
  EXPECT_NE(s.out.find("peak VRAM              n/a"), std::string::npos) << s.out;
}

// `latency` (issue 39 §3): an inference profile reads (percentiles only for the Python tool's),
// a training profile is exit 2 naming the way out, and bad flag values are exit 2 before
// anything is read.
TEST(CliContract, LatencyReaderInputsAndFlagValues) {
  const std::string infer = Fixture("profiles/libreyolo-python-infer.json");
  const std::string run = Fixture("profiles/libreyolo-python-run.json");
  Result r = Cli({"profile", "latency", infer});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("p50 153.000 / p90 158.615 / p99 160.992 ms"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("records percentiles only"), std::string::npos) << r.out;
  r = Cli({"profile", "latency", infer, "--json", "--buckets", "1000", "--slowest", "0"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(IsJson(r.out)) << r.out;
  EXPECT_NE(r.out.find("\"histogram\": null"), std::string::npos) << r.out;
  r = Cli({"profile", "latency", run});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("`libreyolo profile phases " + run + "`"), std::string::npos) << r.err;
  for (const std::vector<std::string>& bad :
       std::vector<std::vector<std::string>>{{"--buckets", "0"},
                                             {"--buckets", "1001"},
                                             {"--buckets", "-1"},
                                             {"--buckets", "nan"},
                                             {"--buckets", "1.5"},
                                             {"--buckets", "99999999999"},
                                             {"--buckets", "4294967297"},  // 1 as an int32
                                             {"--slowest", "-1"},
                                             {"--slowest", "4294967296"},
                                             {"--slowest", "100001"},
                                             {"--slowest", "x"}}) {
    std::vector<std::string> cmd = {"profile", "latency", "/nonexistent/profile.json"};
    cmd.insert(cmd.end(), bad.begin(), bad.end());
    r = Cli(cmd);
    EXPECT_EQ(r.code, 2) << bad[0] << " " << bad[1];
    EXPECT_TRUE(r.out.empty());
    // Refused for its value, not for the missing file.
    EXPECT_EQ(r.err.find("nonexistent"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(bad[0].substr(2)), std::string::npos) << r.err;
  }
}

// `modules` on a trace with module scopes (our --with-modules ranges), in every form; on one
// without, the documented exit 2 and the way to get them.
TEST(CliContract, ModulesReaderTableJsonFoldedAndNoScopes) {
  TempDir dir;
  auto x = [](const std::string& cat, const std::string& name, int ts, int dur) {
    return "{\"ph\": \"X\", \"cat\": \"" + cat + "\", \"name\": \"" + name +
           "\", \"pid\": 1, \"tid\": 1, \"ts\": " + std::to_string(ts) +
           ", \"dur\": " + std::to_string(dur) + "}";
  };
  const std::string trace = dir.Write(
      "m.json", "{\"traceEvents\": [" + x("user_annotation", "ProfilerStep#1", 0, 100) + ", " +
                    x("user_annotation", "nn.Module: backbone", 0, 60) + ", " +
                    x("user_annotation", "nn.Module: backbone.conv0", 10, 30) + ", " +
                    x("cpu_op", "aten::conv2d", 12, 20) + ", " +
                    x("user_annotation", "nn.Module: head", 60, 30) + "]}");
  Result r = Cli({"profile", "modules", trace});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("  backbone.conv0"), std::string::npos) << r.out;  // nested by depth
  EXPECT_NE(r.out.find("no GPU kernels in this trace"), std::string::npos) << r.out;
  r = Cli({"profile", "modules", trace, "--sort", "self_cpu", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(IsJson(r.out)) << r.out;
  EXPECT_LT(r.out.find("\"module\": \"backbone\""), r.out.find("\"module\": \"head\""))
      << r.out;  // self CPU 30 (backbone) before 30 (head): stable, then conv0's 30
  r = Cli({"profile", "modules", trace, "--format", "folded"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out,
            "backbone 30\nbackbone;backbone.conv0 10\nbackbone;backbone.conv0;aten::conv2d 20\n"
            "head 30\n");
  r = Cli({"profile", "modules", trace, "--format", "folded", "--json"});
  EXPECT_EQ(r.code, 2);
  r = Cli({"profile", "modules", trace, "--depth", "0"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("depth: 0 is outside 1..1024"), std::string::npos) << r.err;
  r = Cli({"profile", "modules", trace, "--sort", "gpu_total"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no GPU kernels"), std::string::npos) << r.err;
  r = Cli({"profile", "modules", kTrace});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no module scopes in this trace"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("run with --with-modules"), std::string::npos) << r.err;
}

TEST(CliContract, SummaryPutsTheVerdictFirst) {
  const Result r = Cli({"profile", "summary", kTrace});
  ASSERT_EQ(r.code, 0);
  EXPECT_EQ(r.out.rfind("verdict: communication", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("kernel composition"), std::string::npos);
  EXPECT_NE(r.out.find("top kernels per step"), std::string::npos);
}

TEST(CliContract, GetPrintsOneValueAndNothingElse) {
  const Result r = Cli({"profile", "get", kTrace, "step_ms"});
  ASSERT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "615.1445\n");
  const Result b = Cli({"profile", "get", kTrace, "bound"});
  EXPECT_EQ(b.out, "communication\n");
}

TEST(CliContract, GetUnknownFieldExits2WithHint) {
  const Result r = Cli({"profile", "get", kTrace, "no_such_metric"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(r.out.empty());
  EXPECT_NE(r.err.find("unknown metric 'no_such_metric'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("to list metrics"), std::string::npos) << r.err;
}

TEST(CliContract, MissingFileExits2) {
  const Result r = Cli({"profile", "summary", "/nonexistent/profile.json"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(r.out.empty());
  EXPECT_NE(r.err.find("no such file: /nonexistent/profile.json"), std::string::npos) << r.err;
}

TEST(CliContract, BadJsonExits1WithOffset) {
  TempDir dir;
  const std::string bad = dir.Write("bad.json", "{\"traceEvents\": [{\"ph\": \"X\", ");
  const Result r = Cli({"profile", "summary", bad});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(r.out.empty());
  EXPECT_NE(r.err.find("not valid JSON at byte"), std::string::npos) << r.err;
  // A trace, a profile and an empty file: RapidJSON's reason and our sentence, one full stop.
  const std::string profile =
      dir.Write("profile.json", "{\"schema\": \"libreyolo.profile.analysis/v1\", ");
  for (const std::string& f : {bad, profile, dir.Write("empty.json", "")}) {
    const Result e = Cli({"profile", "summary", f});
    EXPECT_EQ(e.code, 1) << f;
    EXPECT_EQ(e.err.find(".."), std::string::npos) << e.err;
    EXPECT_NE(e.err.find(". Is the file complete?"), std::string::npos) << e.err;
  }
}

TEST(CliContract, TruncatedGzipExits1) {
  TempDir dir;
  const std::string bytes = ReadBytes(kTrace);
  const std::string cut = dir.Write("cut.json.gz", bytes.substr(0, bytes.size() / 2));
  const Result r = Cli({"profile", "summary", cut});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(r.out.empty());
  EXPECT_NE(r.err.find("truncated gzip"), std::string::npos) << r.err;
}

TEST(CliContract, NotATraceExits1) {
  TempDir dir;
  const std::string other = dir.Write("other.json", "{\"hello\": [1, 2, 3]}");
  const Result r = Cli({"profile", "summary", other});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("not a Chrome trace"), std::string::npos) << r.err;
}

TEST(CliContract, DamagedProfileNamesTheKey) {
  TempDir dir;
  const std::string p = dir.Write(
      "profile.json", R"({"schema": "libreyolo.profile.analysis/v1", "step_ms": "fast"})");
  const Result r = Cli({"profile", "summary", p});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("\"step_ms\" should be a number"), std::string::npos) << r.err;
}

TEST(CliContract, UnknownPhaseExits2ListingPhases) {
  for (const char* sub : {"kernels", "ops"}) {
    const Result r = Cli({"profile", sub, kAmd, "--phase", "nope"});
    EXPECT_EQ(r.code, 2) << sub;
    // forward: inferred from the trace's fwdbwd flows (it has no forward mark).
    EXPECT_NE(
        r.err.find("unknown phase 'nope'; this profile has: forward, backward, optimizer"),
        std::string::npos)
        << r.err;
  }
}

TEST(CliContract, PhaseFilterSelectsThatPhase) {
  const Result r = Cli({"profile", "kernels", kAmd, "--phase", "optimizer", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  rapidjson::Document d;
  d.Parse(r.out.c_str());
  ASSERT_TRUE(d["kernels"].IsArray());
  EXPECT_EQ(d["kernels"].Size(), 1u);
}

TEST(CliContract, WhatIfWithoutOptionsExits2) {
  const Result r = Cli({"profile", "what-if", kTrace});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--remove-category"), std::string::npos);
  const Result both =
      Cli({"profile", "what-if", kTrace, "--remove-category", "gemm", "--remove-launches", "5"});
  EXPECT_EQ(both.code, 2);
}

TEST(CliContract, KeyValueArgumentIsRefusedWithHint) {
  const Result r = Cli({"profile", "kernels", kTrace, "top=5"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("looks like key=value"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--top 5"), std::string::npos) << r.err;
}

TEST(CliContract, UnknownFlagAndBadValuesExit2) {
  EXPECT_EQ(Cli({"profile", "kernels", kTrace, "--bogus"}).code, 2);
  EXPECT_EQ(Cli({"profile", "kernels", kTrace, "--top", "many"}).code, 2);
  EXPECT_EQ(Cli({"profile", "kernels", kTrace, "--sort", "speed"}).code, 2);
  EXPECT_EQ(Cli({"profile", "kernels", kTrace, "--grep", "("}).code, 2);
  EXPECT_EQ(Cli({"profile", "ops", kTrace, "--sort", "speed"}).code, 2);
  EXPECT_EQ(Cli({"profile", "summary"}).code, 2);
  EXPECT_EQ(Cli({"profile", "summary", kTrace, kTrace}).code, 2);
  EXPECT_EQ(Cli({"profile", "frobnicate"}).code, 2);
}

TEST(CliContract, GroupByInputShapeNeedsShapes) {
  // trace_filter was recorded with shapes; amd_trace's cpu ops carry none in the window.
  const Result ok = Cli({"profile", "ops", kTrace, "--group-by-input-shape", "--top", "5"});
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_NE(ok.out.find("input shapes"), std::string::npos);
  const Result no = Cli({"profile", "ops", Fixture("traces/alexnet.json.gz"),
                         "--group-by-input-shape"});
  EXPECT_EQ(no.code, 2);
  EXPECT_NE(no.err.find("recorded without input shapes"), std::string::npos) << no.err;
}

TEST(CliContract, OpsTableHasTheSelfCpuFooterAndSortKeys) {
  for (const char* key : {"cpu_time_total", "self_cpu_time_total", "cpu_time_avg", "count",
                          "self_cpu_memory_usage", "cpu_memory_usage", "flops",
                          "device_time_total", "self_device_time_total", "device_memory_usage",
                          "self_device_memory_usage"}) {
    const Result r = Cli({"profile", "ops", kTrace, "--sort", key, "--top", "3"});
    EXPECT_EQ(r.code, 0) << key << r.err;
    EXPECT_NE(r.out.find("Self CPU time total: 305.080 ms per step"), std::string::npos)
        << key << "\n" << r.out;
  }
}

TEST(CliContract, KernelFilters) {
  Result r = Cli({"profile", "kernels", kTrace, "--category", "gemm", "--top", "0", "--json"});
  ASSERT_EQ(r.code, 0);
  rapidjson::Document d;
  d.Parse(r.out.c_str());
  for (const auto& k : d["kernels"].GetArray()) {
    EXPECT_EQ(std::string(k["category"].GetString()), "gemm / conv");
  }
  r = Cli({"profile", "kernels", kTrace, "--tensorcore", "--top", "0", "--json"});
  d.Parse(r.out.c_str());
  ASSERT_GT(d["kernels"].Size(), 0u);
  for (const auto& k : d["kernels"].GetArray()) EXPECT_TRUE(k["tensorcore"].GetBool());
  r = Cli({"profile", "kernels", kTrace, "--grep", "^void fbgemm", "--sort", "count", "--json"});
  d.Parse(r.out.c_str());
  ASSERT_GT(d["kernels"].Size(), 1u);
  EXPECT_GE(d["kernels"][0]["count_per_step"].GetDouble(),
            d["kernels"][1]["count_per_step"].GetDouble());
}

TEST(CliContract, JobAddressWithoutDaemonExits2) {
  // No daemon binary to start: the error says what is missing and exits 2.
  ::setenv("LIBREYOLOD", "/nonexistent/libreyolod", 1);
  const Result r = Cli({"profile", "summary", "job:42"});
  ::unsetenv("LIBREYOLOD");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("libreyolod"), std::string::npos);
}

// A project the files cannot be fetched into is refused before the job is submitted (no daemon
// is reached: none answers at this address), not after the whole job ran.
TEST(CliContract, AnUnwritableProjectIsRefusedBeforeTheJob) {
  TempDir dir;
  const std::string file = dir.Write("a-file", "x");
  for (const std::string& project : {file, file + "/sub", std::string(5000, 'p')}) {
    for (const char* cmd : {"infer", "run"}) {
      std::vector<std::string> args = {"profile", cmd};
      if (std::string(cmd) == "run") args.push_back("synthetic");
      for (const char* f : {"--device", "cpu", "--remote", "127.0.0.1:1", "--project"}) {
        args.push_back(f);
      }
      args.push_back(project);
      const Result r = Cli(args);
      EXPECT_EQ(r.code, 2) << cmd << " " << project.substr(0, 40) << ": " << r.err;
      EXPECT_NE(r.err.find("the job was not submitted"), std::string::npos) << r.err;
      EXPECT_EQ(r.err.find("127.0.0.1:1"), std::string::npos) << r.err;
    }
  }
}

TEST(CliContract, CompareSingleRunSaysNoCall) {
  const Result r = Cli({"profile", "compare", kTrace, kAmd});
  ASSERT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("a single run cannot support a significance call"), std::string::npos);
}

// Issue 9 item 10: names from a profile (or a daemon) reach the terminal escaped, so a crafted
// model or op name cannot clear the screen, retitle the window or hide text.
TEST(CliContract, ControlCharactersInNamesAreEscaped) {
  TempDir dir;
  std::string profile = ReadBytes(Fixture("profiles/libreyolo-python-run.json"));
  auto replace_all = [&](const std::string& from, const std::string& to) {
    for (size_t at = profile.find(from); at != std::string::npos;
         at = profile.find(from, at + to.size())) {
      profile.replace(at, from.size(), to);
    }
  };
  replace_all("\"YOLOv9-t\"", "\"evil\\u001b[2J\\u001b]0;owned\\u0007\\r\\u202emodel\"");
  replace_all("\"aten::conv2d\"", "\"aten::conv2d\\u001b[8m\"");
  const std::string path = dir.Write("crafted.json", profile);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"profile", "summary", path},
        std::vector<std::string>{"profile", "ops", path, "--top", "0"}}) {
    const Result r = Cli(args);
    EXPECT_EQ(r.code, 0) << r.err;
    for (const char c : {'\x1b', '\x07', '\r'}) {
      EXPECT_EQ(r.out.find(c), std::string::npos) << args[1] << " printed byte " << int(c);
    }
    EXPECT_EQ(r.out.find("\xe2\x80\xae"), std::string::npos) << args[1];
  }
  EXPECT_NE(Cli({"profile", "summary", path}).out.find("evil\\x1b[2J\\x1b]0;owned\\x07\\x0d"),
            std::string::npos);
  EXPECT_NE(Cli({"profile", "ops", path, "--top", "0"}).out.find("aten::conv2d\\x1b[8m"),
            std::string::npos);
}

// ---- issue 11: messages and output that say what is true --------------------------------

TEST(Issue11Messages, KeyValueForAPositionalSuggestsNoMissingFlag) {
  const Result r = Cli({"profile", "summary", "trace=x.json"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.find("--trace"), std::string::npos) << r.err;  // summary has no --trace
  EXPECT_NE(r.err.find("give the trace as it is: 'summary x.json'"), std::string::npos) << r.err;
}

TEST(Issue11Messages, CompareWithOneArgumentNamesWhatIsMissing) {
  const Result r = Cli({"profile", "compare", kTrace});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("needs 2 arguments (before after); missing: after"), std::string::npos)
      << r.err;
}

TEST(Issue11Messages, KernelsOfACpuProfileSaysItHasNoGpuKernels) {
  const Result r = Cli({"profile", "kernels", Fixture("profiles/libreyolo-python-infer.json")});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("no GPU kernels in this profile"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("no kernels match"), std::string::npos) << r.out;
}

TEST(Issue11Messages, OpsSortByAColumnTheProfileLacksSaysSo) {
  TempDir dir;
  const std::string t = dir.Write(
      "t.json",
      R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1,)"
      R"( "ts": 0, "dur": 5}, {"ph": "X", "cat": "cpu_op", "name": "aten::mul", "pid": 1,)"
      R"( "tid": 1, "ts": 10, "dur": 9}]})");
  const Result r = Cli({"profile", "ops", t, "--sort", "flops"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("sorted by flops"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sorted by cpu_time_total"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no flops values (recorded without --with-flops)"), std::string::npos)
      << r.out;
}

TEST(Issue11Compare, VerdictFirstAndAWarningPerMismatchedSetting) {
  const Result r = Cli({"profile", "compare", Fixture("profiles/libreyolo-python-infer.json"),
                        Fixture("profiles/libreyolo-python-run.json")});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("significance: ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("warning: different mode: inference before, training after"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("warning: different imgsz: 640 before, 320 after"), std::string::npos);
  EXPECT_NE(r.out.find("warning: different batch: 1 before, 2 after"), std::string::npos);
  const Result same = Cli({"profile", "compare", kTrace, kTrace});
  EXPECT_EQ(same.out.find("warning:"), std::string::npos) << same.out;
  const Result json = Cli({"profile", "compare", Fixture("profiles/libreyolo-python-infer.json"),
                           Fixture("profiles/libreyolo-python-run.json"), "--json"});
  rapidjson::Document d;
  d.Parse(json.out.c_str());
  ASSERT_TRUE(d.IsObject() && d.HasMember("warnings"));
  EXPECT_GE(d["warnings"].Size(), 3u);
}

TEST(Issue11JobJson, ErrorsOfRunAndInferWithJsonAreJsonLines) {
  for (const char* cmd : {"infer", "run"}) {
    std::vector<std::string> args = {"profile", cmd};
    if (std::string(cmd) == "run") args.push_back("synthetic:8");
    for (const char* a : {"--batch", "many", "--json"}) args.push_back(a);
    const Result r = Cli(args);
    EXPECT_EQ(r.code, 2) << r.err;
    std::istringstream lines(r.err);
    std::string line;
    int n = 0;
    while (std::getline(lines, line)) {
      ++n;
      rapidjson::Document d;
      d.Parse(line.c_str());
      ASSERT_TRUE(!d.HasParseError() && d.IsObject()) << cmd << ": not a JSON line: " << line;
      EXPECT_STREQ(d["event"].GetString(), "error");
      EXPECT_EQ(d["exit_code"].GetInt(), 2);
    }
    EXPECT_EQ(n, 1) << r.err;
  }
}

TEST(Issue11JobJson, StdoutDocumentNamesTheJob) {
  const std::string doc = WithJobFields("{\n  \"source\": \"x\"\n}",
                                        JobJsonFields{"j-42", "/p/profile.json", "", "", {}, 1});
  rapidjson::Document d;
  d.Parse(doc.c_str());
  ASSERT_FALSE(d.HasParseError()) << doc;
  EXPECT_STREQ(d["job_id"].GetString(), "j-42");
  EXPECT_STREQ(d["profile_path"].GetString(), "/p/profile.json");
  EXPECT_STREQ(d["source"].GetString(), "x");
}

TEST(Issue11Messages, AFailedJobsErrorIsShownOnce) {
  std::ostringstream err;
  ProgressDisplay display(err, ProgressStyle::kLines);
  display.set_quiet_terminal_message(true);
  v1::JobEvent e;
  e.set_stage("failed");
  e.set_message("the window was never filled");
  display.Show(e);
  display.Finish();
  EXPECT_EQ(err.str().find("never filled"), std::string::npos) << err.str();  // the command's
                                                                              // error line says it
}

}  // namespace
}  // namespace libreyolo::cli
