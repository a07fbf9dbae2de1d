// The two profile.json files written by the public Python LibreYOLO (tests/fixtures/profiles):
// every reader view must accept them, show the numbers they hold, and show n/a for the rest.
#include <gtest/gtest.h>

#include <gmock/gmock.h>

#include <string>

#include "common/analysis/compare.h"
#include "common/analysis/what_if.h"
#include "common/io/file_reader.h"
#include "common/load/load_profile.h"
#include "common/profile/profile_json.h"
#include "common/readers/compare_view.h"
#include "common/readers/get_view.h"
#include "common/readers/kernels_view.h"
#include "common/readers/ops_view.h"
#include "common/readers/phases_view.h"
#include "common/readers/summary_view.h"
#include "common/readers/what_if_view.h"
#include "tests/common/trace_builder.h"

namespace libreyolo::testing {
namespace {

using ::testing::HasSubstr;

const std::string kInfer = LIBREYOLO_FIXTURES_DIR "/profiles/libreyolo-python-infer.json";
const std::string kRun = LIBREYOLO_FIXTURES_DIR "/profiles/libreyolo-python-run.json";

Profile Load(const std::string& path) {
  auto p = LoadProfile(path);
  if (!p.ok()) {
    ADD_FAILURE() << path << ": " << p.status();
    return Profile{};
  }
  return *std::move(p);
}

std::vector<std::string> PhaseNames(const Profile& p) {
  std::vector<std::string> names;
  for (const PhaseRow& r : p.phases) names.push_back(r.phase);
  return names;
}

TEST(PythonProfiles, ReadProfileJsonAndLoadProfileAgree) {
  for (const std::string& path : {kInfer, kRun}) {
    auto text = ReadWholeFile(path);
    ASSERT_TRUE(text.ok()) << text.status();
    auto direct = ReadProfileJson(*text, path);
    ASSERT_TRUE(direct.ok()) << direct.status();
    const Profile loaded = Load(path);
    EXPECT_EQ(loaded.source_kind, "profile");
    EXPECT_EQ(loaded.step_ms, direct->step_ms);
    EXPECT_EQ(loaded.ops.size(), direct->ops.size());
  }
}

TEST(PythonProfiles, InferHoldsItsNumbers) {
  const Profile p = Load(kInfer);
  EXPECT_OPT_CLOSE(p.step_ms, 151.38);
  EXPECT_OPT_CLOSE(p.img_per_s, 6.61);
  EXPECT_EQ(p.bound, "compute");
  EXPECT_EQ(p.mode, std::optional<std::string>("inference"));
  EXPECT_EQ(p.batch, std::optional<int64_t>(1));
  EXPECT_EQ(PhaseNames(p), (std::vector<std::string>{"preprocess", "forward", "postprocess"}));
  EXPECT_CLOSE(p.phases[1].ops_per_step, 4708.0);
  EXPECT_FALSE(p.phases[1].wall_ms_per_step.has_value());  // null in the file
  EXPECT_EQ(p.ops.size(), 54u);
  EXPECT_EQ(p.ops[0].op, "aten::conv2d");
  EXPECT_CLOSE(p.ops[0].ms_per_step, 84.2887);
  EXPECT_OPT_CLOSE(p.ops[0].pct_of_cpu_ops, 20.74);
  EXPECT_FALSE(p.ops[0].self_cpu_ms_per_step.has_value());
  ASSERT_TRUE(p.latency.has_value());
  EXPECT_CLOSE(p.latency->p50_ms, 153.0);
  EXPECT_CLOSE(p.latency->p99_ms, 160.992);
  EXPECT_EQ(p.latency->n, 10);
  ASSERT_TRUE(p.stages_ms.has_value());
  EXPECT_OPT_CLOSE(p.stages_ms->forward, 130.66);
  EXPECT_OPT_CLOSE(p.stages_ms->postprocess, 0.641);
  EXPECT_EQ(p.real_steps, std::optional<int64_t>(6));
  EXPECT_OPT_CLOSE(p.window_wall_ms, 904.6);
  EXPECT_OPT_CLOSE(p.ops_per_step, 4752.0);  // from the "metrics" object
  // Missing or null keys stay empty.
  EXPECT_FALSE(p.peak_vram_mb.has_value());
  EXPECT_FALSE(p.peak_reserved_mb.has_value());
  EXPECT_FALSE(p.launch_api_ms_per_step.has_value());
  EXPECT_FALSE(p.host_api_ms_per_step.has_value());
  EXPECT_FALSE(p.gpu_kernel_ms_per_step.has_value());
  EXPECT_FALSE(p.host_overhead_method.has_value());
  EXPECT_FALSE(p.repeat.img_per_s_n.has_value());
  EXPECT_TRUE(p.kernels.empty());
}

TEST(PythonProfiles, RunHoldsItsNumbers) {
  const Profile p = Load(kRun);
  EXPECT_OPT_CLOSE(p.step_ms, 439.73);
  EXPECT_EQ(p.bound, "compute");
  EXPECT_FALSE(p.mode.has_value());
  EXPECT_EQ(p.batch, std::optional<int64_t>(2));
  EXPECT_EQ(PhaseNames(p), (std::vector<std::string>{"dataload", "to_device", "forward",
                                                     "backward", "optimizer"}));
  EXPECT_OPT_CLOSE(p.phases[3].wall_ms_per_step, 189.09);
  EXPECT_OPT_CLOSE(p.dataload_ms, 20.221);
  EXPECT_OPT_CLOSE(p.dataload_frac, 0.046);
  // A CPU run: the file's host overhead (419.51, the whole step less data loading) and its
  // 0.0 GPU utilisation do not apply; null, as in every view (issue 22).
  EXPECT_TRUE(IsCpuJob(p));
  EXPECT_FALSE(p.host_overhead_ms_per_step.has_value());
  EXPECT_FALSE(p.gpu_util.has_value());
  EXPECT_EQ(p.ops.size(), 195u);
  EXPECT_FALSE(p.latency.has_value());
  EXPECT_FALSE(p.stages_ms.has_value());
  EXPECT_FALSE(p.peak_vram_mb.has_value());
  EXPECT_FALSE(p.launch_api_ms_per_step.has_value());
}

TEST(PythonProfiles, SummaryGetAndPhasesBuildAndShowNa) {
  for (const std::string& path : {kInfer, kRun}) {
    const Profile p = Load(path);
    const SummaryView s = BuildSummary(p, path);
    const std::string text = RenderSummaryText(s);
    EXPECT_THAT(text, HasSubstr("verdict: compute"));
    EXPECT_THAT(text, HasSubstr("n/a"));  // peak VRAM, kernel sum, ...
    // The Python tool times its step under torch.profiler and says nothing of it: no claim
    // that it was measured without the profiler (issue 22).
    EXPECT_THAT(text, ::testing::Not(HasSubstr("without the profiler"))) << path;
    EXPECT_FALSE(RenderSummaryJson(s).empty());
    // Not a random init (the Python tool's config records no "random-init"): no weights line,
    // and the JSON field is null, not "".
    EXPECT_TRUE(s.weights_note.empty());
    EXPECT_THAT(RenderSummaryJson(s), HasSubstr("\"weights_note\": null"));

    auto all = BuildGet(p, std::nullopt, path);
    ASSERT_TRUE(all.ok()) << all.status();
    EXPECT_FALSE(all->single);
    EXPECT_THAT(RenderGetText(*all), HasSubstr("n/a"));
    EXPECT_FALSE(RenderGetJson(*all).empty());
    auto vram = BuildGet(p, std::string("peak_vram_mb"), path);
    ASSERT_TRUE(vram.ok()) << vram.status();
    EXPECT_EQ(RenderGetText(*vram), "n/a\n");
    auto launch = BuildGet(p, std::string("launch_api_ms"), path);
    ASSERT_TRUE(launch.ok()) << launch.status();
    EXPECT_EQ(RenderGetText(*launch), "n/a\n");
    EXPECT_EQ(BuildGet(p, std::string("no_such_metric"), path).status().code(),
              absl::StatusCode::kNotFound);

    const PhasesView ph = BuildPhases(p, path);
    EXPECT_EQ(ph.phases.size(), p.phases.size());
    EXPECT_FALSE(RenderPhasesText(ph).empty());
    EXPECT_FALSE(RenderPhasesJson(ph).empty());
  }
  // Inference: nms_ms is the postprocess stage; the null phase walls render as n/a.
  const Profile infer = Load(kInfer);
  auto nms = BuildGet(infer, std::string("nms_ms"), kInfer);
  ASSERT_TRUE(nms.ok()) << nms.status();
  ASSERT_EQ(nms->metrics.size(), 1u);
  EXPECT_OPT_CLOSE(nms->metrics[0].number, 0.641);
  EXPECT_EQ(RenderGetText(*nms), "0.641\n");
  EXPECT_THAT(RenderPhasesText(BuildPhases(infer, kInfer)), HasSubstr("n/a"));
  auto step = BuildGet(infer, std::string("step_ms"), kInfer);
  ASSERT_TRUE(step.ok());
  EXPECT_EQ(RenderGetText(*step), "151.38\n");
}

TEST(PythonProfiles, KernelsAndOpsBuild) {
  for (const std::string& path : {kInfer, kRun}) {
    const Profile p = Load(path);
    auto k = BuildKernels(p, KernelsOptions{}, path);
    ASSERT_TRUE(k.ok()) << k.status();
    EXPECT_TRUE(k->rows.empty());
    EXPECT_FALSE(RenderKernelsText(*k).empty());
    KernelsOptions kf;
    kf.phase = "forward";
    EXPECT_TRUE(BuildKernels(p, kf, path).ok());

    auto ops = BuildOps(p, OpsOptions{}, path);
    ASSERT_TRUE(ops.ok()) << ops.status();
    EXPECT_EQ(ops->rows.size(), 20u);  // default top 20
    EXPECT_EQ(ops->total_rows, p.ops.size());
    const std::string text = RenderOpsText(*ops);
    EXPECT_THAT(text, HasSubstr("n/a"));  // self CPU is not in Python profiles
    EXPECT_FALSE(RenderOpsJson(*ops).empty());

    OpsOptions fwd;
    fwd.phase = "forward";
    fwd.top = 0;
    auto f = BuildOps(p, fwd, path);
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_EQ(f->rows.size(), 40u);
    EXPECT_FALSE(RenderOpsText(*f).empty());

    OpsOptions bad;
    bad.phase = "no_such_phase";
    EXPECT_EQ(BuildOps(p, bad, path).status().code(), absl::StatusCode::kNotFound);
    OpsOptions shapes;
    shapes.group_by_input_shape = true;
    EXPECT_EQ(BuildOps(p, shapes, path).status().code(),
              absl::StatusCode::kFailedPrecondition);
  }
}

// `libreyolo profile infer --no-trace` (Python) writes phases with walls but empty
// `ops_by_phase`/`kernels_by_phase`: a listed phase is valid for --phase, with no rows; a phase
// the profile does not list is still unknown.
TEST(PythonProfiles, ListedPhaseWithoutRowsIsEmptyNotUnknown) {
  const std::string json = R"({"schema": "libreyolo.profile.analysis/v1", "mode": "inference",
    "trace": null, "step_ms": 67.6, "bound": "compute",
    "phases": [{"phase": "preprocess", "gpu_ms_per_step": 0.0, "wall_ms_per_step": 5.2,
                "kernels_per_step": 0, "ops_per_step": 0, "unique_kernels": 0},
               {"phase": "forward", "gpu_ms_per_step": 0.0, "wall_ms_per_step": 63.8,
                "kernels_per_step": 0, "ops_per_step": 0, "unique_kernels": 0}],
    "kernels_by_phase": {}, "ops_by_phase": {}, "kernels": [], "ops": []})";
  auto p = ReadProfileJson(json, "notrace.json");
  ASSERT_TRUE(p.ok()) << p.status();
  OpsOptions o;
  o.phase = "forward";
  auto ops = BuildOps(*p, o, "notrace.json");
  ASSERT_TRUE(ops.ok()) << ops.status();
  EXPECT_TRUE(ops->rows.empty());
  EXPECT_FALSE(RenderOpsText(*ops).empty());
  KernelsOptions k;
  k.phase = "preprocess";
  auto kernels = BuildKernels(*p, k, "notrace.json");
  ASSERT_TRUE(kernels.ok()) << kernels.status();
  EXPECT_TRUE(kernels->rows.empty());
  o.phase = "backward";
  EXPECT_EQ(BuildOps(*p, o, "notrace.json").status().code(), absl::StatusCode::kNotFound);
  k.phase = "backward";
  EXPECT_EQ(BuildKernels(*p, k, "notrace.json").status().code(), absl::StatusCode::kNotFound);
}

TEST(PythonProfiles, CompareTheTwo) {
  const CompareResult r = Compare(Load(kInfer), Load(kRun), kInfer, kRun);
  const CompareDelta* mpi = nullptr;
  for (const CompareDelta& d : r.deltas) {
    if (d.metric == "ms_per_image") mpi = &d;
  }
  ASSERT_NE(mpi, nullptr);
  EXPECT_OPT_CLOSE(mpi->before, 151.38);       // 151.38 / batch 1
  EXPECT_OPT_CLOSE(mpi->after, 439.73 / 2.0);  // batch 2
  EXPECT_FALSE(r.significance.available);
  const std::string text = RenderCompareText(r);
  EXPECT_THAT(text, HasSubstr("single run"));
  EXPECT_THAT(text, HasSubstr("n/a"));  // gpu_util 0 -> 0 has no relative change
  EXPECT_FALSE(RenderCompareJson(r).empty());
}

TEST(PythonProfiles, WhatIfRemoveLaunches) {
  for (const std::string& path : {kInfer, kRun}) {
    const Profile p = Load(path);
    auto r = WhatIf(p, WhatIfRequest{std::nullopt, 10});
    ASSERT_TRUE(r.ok()) << r.status();
    // A CPU run (issue 36 §5): nothing is projected; n/a, and the caveat says why.
    EXPECT_FALSE(r->applicable);
    EXPECT_CLOSE(r->step_now_ms, *p.step_ms);
    EXPECT_THAT(r->caveat, HasSubstr("CPU job"));
    EXPECT_THAT(RenderWhatIfText(*r), HasSubstr("projected n/a"));
    EXPECT_THAT(RenderWhatIfJson(*r), HasSubstr("\"projected\": null"));
    // No kernel categories: --remove-category is an error that says so.
    auto c = WhatIf(p, WhatIfRequest{std::string("gemm"), std::nullopt});
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace libreyolo::testing
