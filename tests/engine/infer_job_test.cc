// The infer job end to end on the CPU: a tiny window, the files it writes, and its errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <filesystem>

#include "common/analysis/module_table.h"
#include "common/load/load_profile.h"
#include "common/readers/get_view.h"
#include "common/readers/kernels_view.h"
#include "common/readers/modules_view.h"
#include "common/readers/ops_view.h"
#include "common/readers/phases_view.h"
#include "common/readers/run_reader.h"
#include "common/readers/summary_view.h"
#include "common/status/exit_code.h"
#include "common/trace/trace_reader.h"
#include "server/engine/engine.h"
#include "absl/strings/str_cat.h"
#include "server/engine/runtime/cpu_threads.h"
#include "tests/engine/budget_record_check.h"

namespace libreyolo::engine {
namespace {

namespace fs = std::filesystem;

class InferJob : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("libreyolo_infer_job_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    spec_.model.device = "cpu";
    spec_.model.threads = 2;
    spec_.model.weights = (dir_ / "LibreYOLO9t.pt").string();  // absent, but not the default name
    spec_.imgsz = 64;
    spec_.warmup = 1;
    spec_.runs = 4;
    spec_.profiled_runs = 2;
    spec_.project = (dir_ / "runs").string();
    // Probing (tens of interleaved windows) only in the tests of probing, which turn it on
    // (issue 22 §5): the others test what a job writes, with its switches as given.
    spec_.profiler.probe_overhead = false;
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  InferJobSpec spec_;
};

TEST_F(InferJob, MissingWeightsPathIsNotFound) {
  auto r = RunInferJob(spec_, nullptr, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsNotFound(r.status())) << r.status();
}

TEST_F(InferJob, WritesAProfileEveryReaderAccepts) {
  spec_.model.weights = "LibreYOLO9t.pt";  // the default name: seeded random init
  // Everything recorded, whatever it costs (FLOPs and shapes for the readers; FLOPs are off by
  // default).
  spec_.profiler.record_shapes = spec_.profiler.profile_memory = spec_.profiler.with_flops = true;
  std::vector<std::string> stages;
  auto r = RunInferJob(
      spec_, [&](const JobProgress& p) { stages.push_back(p.stage); }, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(fs::exists(r->profile_path));
  EXPECT_TRUE(fs::exists(r->trace_path));
  EXPECT_EQ(stages.front(), "loading model");

  auto p = LoadProfile(r->profile_path);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->mode, "inference");
  ASSERT_TRUE(p->latency.has_value());
  EXPECT_EQ(p->latency->n, 4);
  EXPECT_GT(p->latency->p50_ms, 0);
  ASSERT_TRUE(p->stages_ms.has_value());
  EXPECT_GT(p->stages_ms->forward.value_or(0), 0);
  EXPECT_EQ(*p->real_steps, 2);
  EXPECT_EQ(p->bound, "compute");
  EXPECT_NE(p->config_json.find("random-init"), std::string::npos) << p->config_json;
  EXPECT_NE(p->profiler_json.find("overhead_pct"), std::string::npos);
  // A CPU job: no GPU collector, and no note about one.
  {
    rapidjson::Document prof;
    prof.Parse(p->profiler_json.c_str());
    ASSERT_TRUE(prof.IsObject() && prof.HasMember("gpu_collector")) << p->profiler_json;
    EXPECT_STREQ(prof["gpu_collector"].GetString(), "none");
    // The default CPU collector: ours (op_collector.h), with shapes, memory and FLOPs.
    ASSERT_TRUE(prof.HasMember("cpu_collector")) << p->profiler_json;
    EXPECT_STREQ(prof["cpu_collector"].GetString(), "native");
  }
  EXPECT_EQ(p->profiler_json.find("CUPTI"), std::string::npos) << p->profiler_json;
  std::vector<std::string> phases;
  for (const PhaseRow& row : p->phases) phases.push_back(row.phase);
  EXPECT_EQ(phases, (std::vector<std::string>{"preprocess", "forward", "postprocess"}));
  bool conv = false;
  for (const OpRow& o : p->ops) conv |= o.op == "aten::conv2d" && o.flops.value_or(0) > 0;
  EXPECT_TRUE(conv);

  // The trace analysed later agrees with the profile written now.
  auto again = LoadProfile(r->trace_path);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->ops.size(), p->ops.size());
  // Same name, same value: the profiled step of the profile and of its own trace.
  EXPECT_EQ(ProfiledStepMs(*again), ProfiledStepMs(*p));
  EXPECT_DOUBLE_EQ(*again->ops_per_step, *p->ops_per_step);

  EXPECT_FALSE(RenderSummaryText(BuildSummary(*p, r->profile_path)).empty());
  EXPECT_TRUE(BuildGet(*p, std::string("latency_p50_ms"), "x").ok());
  EXPECT_TRUE(BuildKernels(*p, {}, "x").ok());
  OpsOptions grouped;
  grouped.group_by_input_shape = true;
  EXPECT_TRUE(BuildOps(*p, grouped, "x").ok());
  OpsOptions forward;
  forward.phase = "forward";
  EXPECT_TRUE(BuildOps(*p, forward, "x").ok());
}

bool ProfilerFlag(const std::string& profiler_json, const char* key) {
  rapidjson::Document d;
  d.Parse(profiler_json.c_str());
  EXPECT_TRUE(d.IsObject() && d.HasMember(key) && d[key].IsBool()) << key << ": " << profiler_json;
  return d.IsObject() && d.HasMember(key) && d[key].IsBool() && d[key].GetBool();
}

// Module scopes are on by default: the trace holds a range per LibreYOLO9 block, named by its
// Python module path, the `modules` reader reads them from profile.json, and the profile says
// with_modules only when the trace holds them (never with --no-trace); with_stack is never
// claimed (LibTorch in C++ records no stacks).
TEST_F(InferJob, ModuleScopesAreRecordedAndTheProfileSaysSoTruthfully) {
  spec_.model.weights = std::string(LIBREYOLO_SHARED_DIR) +
                        "/fixtures/models/libreyolo9t_seed1234.pt";
  spec_.profiler.profile_memory = false;
  spec_.profiler.record_shapes = spec_.profiler.with_flops = true;  // FLOPs need the shapes
  ASSERT_TRUE(spec_.profiler.with_modules);                         // the default
  auto r = RunInferJob(spec_, nullptr, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(ProfilerFlag(r->profile.profiler_json, "with_modules"));
  EXPECT_FALSE(ProfilerFlag(r->profile.profiler_json, "with_stack"));
  auto data = ReadTraceFile(r->trace_path);
  ASSERT_TRUE(data.ok()) << data.status();
  const ModuleTable t = BuildModuleTable(*data);
  EXPECT_EQ(t.steps, 2);
  std::vector<std::string> top;
  for (const ModuleRow& row : t.rows) {
    if (row.depth == 0) top.push_back(row.path);
  }
  EXPECT_EQ(top, (std::vector<std::string>{"backbone", "neck", "head"}));
  EXPECT_EQ(t.rows[1].path, "backbone.conv0");  // the first block to run
  EXPECT_DOUBLE_EQ(t.rows[1].calls_per_step, 1);
  double conv_flops = 0;
  for (const OpRow& o : r->profile.ops) {
    if (o.op == "aten::conv2d" && o.flops) conv_flops += *o.flops;
  }
  // Every convolution runs inside a module; the ops outside (pre/postprocessing) add the rest
  // of the profile's FLOPs.
  const ModuleTable by_part = BuildModuleTable(*data, 1);
  double module_flops = 0;
  for (const ModuleRow& row : by_part.rows) module_flops += row.flops_per_step.value_or(0);
  ASSERT_GT(conv_flops, 0);
  EXPECT_GE(module_flops, conv_flops * (1 - 1e-9));
  EXPECT_LE(module_flops, *r->profile.flops_per_step * (1 + 1e-9));

  // The reader, from profile.json (its trace beside it).
  ReaderInvocation inv;
  inv.reader = ReaderId::kModules;
  inv.inputs = {r->profile_path};
  inv.modules.depth = 2;
  auto out = RunReader(inv, [](const std::string& p) { return LoadProfile(p); });
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_NE(out->text.find("backbone.conv0"), std::string::npos) << out->text;
  EXPECT_EQ(out->text.find("backbone.elan2.cv2"), std::string::npos) << out->text;  // depth 2

  // --no-trace records nothing, and says so.
  spec_.trace = false;
  r = RunInferJob(spec_, nullptr, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(ProfilerFlag(r->profile.profiler_json, "with_modules"));
  EXPECT_FALSE(ProfilerFlag(r->profile.profiler_json, "with_stack"));

  // --no-with-modules: a trace without scopes; the reader says how to get them (exit 2).
  spec_.trace = true;
  spec_.profiler.with_modules = false;
  r = RunInferJob(spec_, nullptr, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(ProfilerFlag(r->profile.profiler_json, "with_modules"));
  inv.inputs = {r->trace_path};
  out = RunReader(inv, [](const std::string& p) { return LoadProfile(p); });
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(ExitCodeForStatus(out.status()), 2);
  EXPECT_NE(out.status().message().find("run with --with-modules"), std::string::npos);
}

TEST_F(InferJob, RepeatWritesTheRepeatFile) {
  spec_.model.weights = "LibreYOLO9t.pt";
  spec_.repeat = 2;
  spec_.runs = 2;
  spec_.profiled_runs = 1;
  // As the daemon runs it: paths relative to the project, a report.
  spec_.output.paths_relative_to_project = true;
  spec_.output.report_label = "job:x";
  auto r = RunInferJob(spec_, nullptr, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  // The Python tool's tree (issue 36 §3): infer_0/, infer_1/ and infer_repeat.json at the
  // project root; the recorded window's trace and the report in the final trial's folder.
  const fs::path project(spec_.project);
  std::vector<std::string> tree;
  for (const auto& e : fs::recursive_directory_iterator(project)) {
    if (e.is_regular_file()) tree.push_back(fs::relative(e.path(), project).string());
  }
  std::sort(tree.begin(), tree.end());
  EXPECT_THAT(tree, ::testing::ElementsAre("infer_0/profile.json", "infer_1/profile.json",
                                           "infer_1/profile_trace.json", "infer_1/report.html",
                                           "infer_repeat.json"));
  EXPECT_EQ(r->profile_path, (project / "infer_1" / "profile.json").string());
  ASSERT_TRUE(r->repeat_path.has_value());
  EXPECT_EQ(*r->repeat_path, (project / "infer_repeat.json").string());
  auto p = LoadProfile(*r->repeat_path);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->repeat.img_per_s_n, 2);
  EXPECT_EQ(p->repeat.img_per_s_trials.size(), 2u);
  // Every scalar is the mean over the trials (issue 11), as the Python tool defines it (issue 36
  // §3): the step is the trials' mean step, the throughput the trials' mean throughput.
  ASSERT_TRUE(p->repeat.metrics.contains("step_ms"));
  const TrialStat& step = p->repeat.metrics.at("step_ms");
  ASSERT_EQ(step.trials.size(), 2u);
  EXPECT_DOUBLE_EQ(*p->step_ms, (step.trials[0] + step.trials[1]) / 2);
  const std::vector<double>& ips = p->repeat.img_per_s_trials;
  ASSERT_EQ(ips.size(), 2u);
  EXPECT_DOUBLE_EQ(*p->img_per_s, (ips[0] + ips[1]) / 2);
  EXPECT_DOUBLE_EQ(p->latency->mean_ms, *p->step_ms);
  EXPECT_TRUE(p->repeat.metrics.contains("latency_p50_ms"));
  EXPECT_TRUE(p->repeat.metrics.contains("forward_ms"));
  EXPECT_EQ(p->latency->n, 4);  // both trials' samples
  EXPECT_THAT(RenderSummaryText(BuildSummary(*p, "x")), ::testing::HasSubstr("(n=2 trials)"));
  // The aggregate names its trials as the Python tool's profile_repeat.json does.
  EXPECT_THAT(p->repeat.profiles,
              ::testing::ElementsAre("infer_0/profile.json", "infer_1/profile.json"));

  // Each trial's profile.json: that trial's own measurements (one trial: no n, no sd), the
  // recorded window's trace found from its own folder; every reader reads each file.
  for (size_t t = 0; t < 2; ++t) {
    const std::string path = (project / ("infer_" + std::to_string(t)) / "profile.json").string();
    auto trial = LoadProfile(path);
    ASSERT_TRUE(trial.ok()) << trial.status();
    EXPECT_DOUBLE_EQ(*trial->img_per_s, ips[t]) << path;
    EXPECT_DOUBLE_EQ(*trial->step_ms, step.trials[t]) << path;
    EXPECT_FALSE(trial->repeat.img_per_s_n.has_value()) << path;
    EXPECT_EQ(trial->latency->n, 2) << path;
    const fs::path trace = t == 0 ? project / "infer_0" / ".." / "infer_1" / "profile_trace.json"
                                  : project / "infer_1" / "profile_trace.json";
    std::string why;
    EXPECT_EQ(ProfileTracePath(path, *trial, &why), trace.string()) << why;
  }
  for (const std::string& input :
       {(project / "infer_repeat.json").string(), (project / "infer_0" / "profile.json").string(),
        (project / "infer_1" / "profile.json").string()}) {
    for (ReaderId reader : {ReaderId::kSummary, ReaderId::kGet, ReaderId::kKernels,
                            ReaderId::kOps, ReaderId::kModules}) {
      ReaderInvocation inv;
      inv.reader = reader;
      inv.inputs = {input};
      if (reader == ReaderId::kGet) inv.field = "img_per_s";
      auto out = RunReader(inv, [](const std::string& f) { return LoadProfile(f); });
      EXPECT_TRUE(out.ok()) << input << ": " << out.status();
    }
  }
  ReaderInvocation cmp;
  cmp.reader = ReaderId::kCompare;
  cmp.inputs = {(project / "infer_0" / "profile.json").string(),
                (project / "infer_repeat.json").string()};
  auto compared = RunReader(cmp, [](const std::string& f) { return LoadProfile(f); });
  EXPECT_TRUE(compared.ok()) << compared.status();
}

TEST_F(InferJob, RandomInitIsLabelledWithTheSizeItWasBuiltAt) {
  spec_.model.weights = "LibreYOLO9t.pt";  // the default name, absent: seeded random init
  spec_.model.size = "s";
  spec_.runs = 1;
  spec_.warmup = 0;
  spec_.trace = false;
  auto r = RunInferJob(spec_, nullptr, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->profile.model, "LibreYOLO9s (random init)");
  // Issue 20 section 6: the summary says which timings hold for trained weights (not
  // "timings are valid"): postprocess follows the detections.
  const SummaryView s = BuildSummary(r->profile, "x");
  // Where the default weights were looked for comes first (issue 36 §1), then what a random
  // init's timings are worth.
  EXPECT_THAT(RenderSummaryText(s),
              ::testing::ContainsRegex("\n  weights +seeded random init: no weights file at "
                                       "[^\n]*LibreYOLO9t.pt; preprocess and "
                                       "forward time as trained weights do"));
  EXPECT_THAT(s.weights_note, ::testing::HasSubstr("postprocess does not, since NMS works on the "
                                                   "detections"));
  EXPECT_THAT(RenderSummaryJson(s), ::testing::HasSubstr("\"weights_note\": \"no weights file at "));
}

// The options' bounds (--half on the CPU, the imgsz grid, the budget) are the job spec's one
// validator's (request_validation_test.cc); the engine checks what only it can know.
TEST_F(InferJob, MissingDevicesAndSources) {
  spec_.model.weights = "LibreYOLO9t.pt";
  spec_.model.device = "3";
  EXPECT_TRUE(absl::IsFailedPrecondition(RunInferJob(spec_, nullptr, nullptr).status()));
  spec_.model.device = "cpu";
  spec_.source = (dir_ / "no-such-dir").string();
  EXPECT_TRUE(absl::IsNotFound(RunInferJob(spec_, nullptr, nullptr).status()));
}

TEST_F(InferJob, TheDefaultSwitchesAreProbedAndTheirCostsRecorded) {
  spec_.profiler.probe_overhead = true;
  spec_.model.weights = "LibreYOLO9t.pt";
  int64_t probing = 0;
  auto r = RunInferJob(
      spec_, [&](const JobProgress& p) { probing += p.stage == "probing"; }, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  auto p = LoadProfile(r->profile_path);
  ASSERT_TRUE(p.ok()) << p.status();
  ExpectConsistentBudgetRecord(p->profiler_json, 3.0, ProfilerSwitches{}, /*probed=*/true);
  ExpectSwitchRecordMatchesTrace(p->profiler_json, r->trace_path);
  rapidjson::Document d;
  d.Parse(p->profiler_json.c_str());
  // Each probe round: kProbePairs profiled windows between kProbePairs + 1 unprofiled ones.
  EXPECT_EQ(probing, d["probe_rounds"].GetInt64() * (2 * kProbePairs + 1));
  // The summary names a switch exactly when its measured cost is over the budget.
  bool over = false;
  for (const auto& cost : d["switch_costs"].GetObject()) {
    over |= cost.value["over_budget"].GetBool();
  }
  EXPECT_EQ(RenderSummaryText(BuildSummary(*p, "x")).find("turns it off") != std::string::npos,
            over);
}

// Issue 36, section 4: under load (here a budget of 0 %, which any measurable cost exceeds) the
// probe used to turn switches off (record_shapes first, and with it the FLOPs and `ops
// --group-by-input-shape`; an asked-for --with-flops kept the shapes, but profile_memory went).
// Now the switches are the flags and the defaults whatever the probes read: shapes, memory and
// FLOPs are in the trace, and a cost over the budget is named in the summary with its flag.
TEST_F(InferJob, OverTheBudgetTheSwitchesStayOnWithTheirFlops) {
  spec_.profiler.probe_overhead = true;
  spec_.model.weights = "LibreYOLO9t.pt";
  spec_.profiler.overhead_budget_pct = 0;
  spec_.profiler.with_flops = true;  // --with-flops; the other two their defaults
  auto r = RunInferJob(spec_, nullptr, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectConsistentBudgetRecord(r->profile.profiler_json, 0, spec_.profiler, /*probed=*/true);
  ExpectSwitchRecordMatchesTrace(r->profile.profiler_json, r->trace_path);
  rapidjson::Document d;
  d.Parse(r->profile.profiler_json.c_str());
  EXPECT_EQ(d["record_shapes"].GetBool(), kDefaultRecordShapes) << r->profile.profiler_json;
  EXPECT_EQ(d["profile_memory"].GetBool(), kDefaultProfileMemory) << r->profile.profiler_json;
  EXPECT_TRUE(d["with_flops"].GetBool()) << r->profile.profiler_json;
  ASSERT_TRUE(r->profile.flops_per_step.has_value());
  EXPECT_GT(*r->profile.flops_per_step, 0);
  OpsOptions grouped;
  grouped.group_by_input_shape = true;
  EXPECT_TRUE(BuildOps(r->profile, grouped, "x").ok());
  // Every cost over the budget is said, with its flag.
  const std::string text = RenderSummaryText(BuildSummary(r->profile, "x"));
  const std::string json = RenderSummaryJson(BuildSummary(r->profile, "x"));
  for (const auto& cost : d["switch_costs"].GetObject()) {
    if (!cost.value["over_budget"].GetBool()) continue;
    const std::string line = absl::StrCat(cost.name.GetString(), " cost ");
    EXPECT_THAT(text, ::testing::HasSubstr(line)) << text;
    EXPECT_THAT(text, ::testing::HasSubstr(absl::StrCat(cost.value["off_flag"].GetString(),
                                                        " turns it off")))
        << text;
    EXPECT_THAT(json, ::testing::HasSubstr(line)) << json;
  }
}

TEST_F(InferJob, ExplicitSwitchesAreHonoured) {
  spec_.profiler.probe_overhead = true;
  spec_.model.weights = "LibreYOLO9t.pt";
  // LibTorch's profiler, the fallback collector, honours the same switches (the default, our
  // collector, is WritesAProfileEveryReaderAccepts').
  spec_.profiler.collector = "libtorch";
  spec_.profiler.record_shapes = false;    // --no-record-shapes
  spec_.profiler.overhead_budget_pct = 0;  // as strict as it gets: cannot turn it back on
  auto r = RunInferJob(spec_, nullptr, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectConsistentBudgetRecord(r->profile.profiler_json, 0, spec_.profiler, /*probed=*/true);
  rapidjson::Document d;
  d.Parse(r->profile.profiler_json.c_str());
  EXPECT_FALSE(d["record_shapes"].GetBool());
  ExpectSwitchRecordMatchesTrace(r->profile.profiler_json, r->trace_path);

  // Every switch explicit: on means on whatever it costs (not probed here: the probes are the
  // first job's and TheDefaultSwitches...'s).
  spec_.profiler.record_shapes = true;
  spec_.profiler.profile_memory = true;
  spec_.profiler.with_flops = false;
  spec_.profiler.probe_overhead = false;
  r = RunInferJob(spec_, nullptr, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectConsistentBudgetRecord(r->profile.profiler_json, 0, spec_.profiler, /*probed=*/false);
  ExpectSwitchRecordMatchesTrace(r->profile.profiler_json, r->trace_path);
  d.Parse(r->profile.profiler_json.c_str());
  EXPECT_TRUE(d["record_shapes"].GetBool());
  EXPECT_TRUE(d["profile_memory"].GetBool());
  EXPECT_FALSE(d["with_flops"].GetBool());
  EXPECT_STREQ(d["cpu_collector"].GetString(), "libtorch");
}

TEST_F(InferJob, NoTraceSaysWhyNothingWasProbed) {
  spec_.model.weights = "LibreYOLO9t.pt";
  spec_.trace = false;
  auto r = RunInferJob(spec_, nullptr, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  rapidjson::Document d;
  ASSERT_FALSE(d.Parse(r->profile.profiler_json.c_str()).HasParseError());
  EXPECT_EQ(d["probe_overhead_pct"].Size(), 0u);
  EXPECT_NE(std::string(d["probe_note"].GetString()).find("--no-trace"), std::string::npos);
  EXPECT_TRUE(d["overhead_pct"].IsNull());
  // Nothing was recorded, so no switch says it was on (auto switches would have been).
  EXPECT_FALSE(d["record_shapes"].GetBool() || d["profile_memory"].GetBool() ||
               d["with_flops"].GetBool())
      << r->profile.profiler_json;
  EXPECT_TRUE(d.HasMember("switch_notes")) << r->profile.profiler_json;
}

TEST_F(InferJob, RecordsTheThreadPools) {
  spec_.model.weights = "LibreYOLO9t.pt";
  spec_.trace = false;
  auto r = RunInferJob(spec_, nullptr, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  rapidjson::Document c;
  ASSERT_FALSE(c.Parse(r->profile.config_json.c_str()).HasParseError()) << r->profile.config_json;
  EXPECT_EQ(c["threads"].GetInt(), 2);
  EXPECT_GE(c["interop_threads"].GetInt(), 1);
  EXPECT_EQ(c["omp_wait_policy"].GetString(), OmpWaitPolicy());
  const std::string blas = c["blas"].GetString();
  if (blas.rfind("openblas", 0) == 0) {
    // LibTorch brought OpenBLAS in: its pool follows --threads, whatever it was before.
    EXPECT_EQ(c["blas_threads"].GetInt(), 2);
    EXPECT_EQ(OpenBlasThreads(), 2);
    spec_.model.threads = 1;
    r = RunInferJob(spec_, nullptr, nullptr);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(OpenBlasThreads(), 1);
  } else {
    EXPECT_TRUE(c["blas_threads"].IsNull()) << blas;
  }
}

TEST_F(InferJob, CancelIsObserved) {
  spec_.model.weights = "LibreYOLO9t.pt";
  CancelToken cancel;
  cancel.cancelled = true;
  auto r = RunInferJob(spec_, nullptr, &cancel);
  EXPECT_TRUE(absl::IsCancelled(r.status())) << r.status();
}

}  // namespace
}  // namespace libreyolo::engine
