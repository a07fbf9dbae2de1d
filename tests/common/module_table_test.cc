// The per-layer view (common/analysis/module_table.h) and the `modules` reader on hand-made
// traces, every expected number computed by hand (docs/metrics.md, "Module scopes").
#include "common/analysis/module_table.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/readers/modules_view.h"
#include "tests/common/trace_builder.h"

namespace libreyolo {
namespace {

using testing::Kernel;
using testing::Launch;
using testing::Op;
using testing::Step;
using testing::Trace;

// Our engine's ranges: user annotations named "nn.Module: <full path>".
std::string Mod(const std::string& path, int64_t ts, int64_t dur) {
  return testing::Ann("nn.Module: " + path, ts, dur);
}
std::string Flops(double f) { return absl::StrCat(R"("flops": )", f); }

// Two steps of 100 us, each:
//   backbone [0, 60): backbone.conv0 [5, 25) with aten::conv2d [6, 20) (1000 FLOPs) launching
//   a 4 us kernel at 8; backbone.conv1 [30, 50) with aten::conv2d [31, 45) (3000 FLOPs)
//   launching a 6 us kernel at 33; aten::cat [52, 56) in backbone itself;
//   head [60, 90): aten::add [62, 70) launching a 2 us kernel at 64.
std::string TwoSteps() {
  std::vector<std::string> ev;
  for (int s = 0; s < 2; ++s) {
    const int64_t t = 100 * s;
    const int64_t c = 10 * s;
    ev.push_back(Step(s + 1, t, 100));
    ev.push_back(Mod("backbone", t, 60));
    ev.push_back(Mod("backbone.conv0", t + 5, 20));
    ev.push_back(Op("aten::conv2d", t + 6, 14, testing::kMain, Flops(1000)));
    ev.push_back(Launch(t + 8, 2, c + 1));
    ev.push_back(Kernel("k_conv0", t + 9, 4, c + 1));
    ev.push_back(Mod("backbone.conv1", t + 30, 20));
    ev.push_back(Op("aten::conv2d", t + 31, 14, testing::kMain, Flops(3000)));
    ev.push_back(Launch(t + 33, 2, c + 2));
    ev.push_back(Kernel("k_conv1", t + 34, 6, c + 2));
    ev.push_back(Op("aten::cat", t + 52, 4));
    ev.push_back(Mod("head", t + 60, 30));
    ev.push_back(Op("aten::add", t + 62, 8));
    ev.push_back(Launch(t + 64, 2, c + 3));
    ev.push_back(Kernel("k_add", t + 65, 2, c + 3));
  }
  return Trace(ev);
}

TraceData Read(const std::string& json) {
  auto data = ReadTraceText(json);
  EXPECT_TRUE(data.ok()) << data.status();
  return *std::move(data);
}

TEST(ModuleTable, SelfAndTotalCpuGpuFlopsPerStep) {
  const ModuleTable t = BuildModuleTable(Read(TwoSteps()));
  EXPECT_EQ(t.steps, 2);
  EXPECT_CLOSE(t.step_ms, 0.100);
  EXPECT_EQ(t.scopes, 8);
  EXPECT_TRUE(t.has_gpu);
  EXPECT_TRUE(t.has_flops);
  ASSERT_EQ(t.rows.size(), 4u);
  const ModuleRow& bb = t.rows[0];
  EXPECT_EQ(bb.path, "backbone");
  EXPECT_EQ(bb.depth, 0);
  EXPECT_CLOSE(bb.calls_per_step, 1);
  EXPECT_CLOSE(bb.cpu_ms_per_step, 0.060);
  EXPECT_CLOSE(bb.self_cpu_ms_per_step, 0.020);  // 60 - 20 - 20 (the ops stay self)
  EXPECT_CLOSE(bb.gpu_ms_per_step, 0.010);
  EXPECT_NEAR(bb.self_gpu_ms_per_step, 0, 1e-15);
  EXPECT_CLOSE(bb.kernels_per_step, 2);
  EXPECT_OPT_CLOSE(bb.flops_per_step, 4000);
  EXPECT_CLOSE(bb.pct_of_step, 60);
  const ModuleRow& c0 = t.rows[1];
  EXPECT_EQ(c0.path, "backbone.conv0");
  EXPECT_EQ(c0.name, "conv0");
  EXPECT_EQ(c0.depth, 1);
  EXPECT_CLOSE(c0.cpu_ms_per_step, 0.020);
  EXPECT_CLOSE(c0.self_cpu_ms_per_step, 0.020);
  EXPECT_CLOSE(c0.gpu_ms_per_step, 0.004);
  EXPECT_CLOSE(c0.self_gpu_ms_per_step, 0.004);
  EXPECT_OPT_CLOSE(c0.flops_per_step, 1000);
  EXPECT_CLOSE(c0.pct_of_step, 20);
  EXPECT_EQ(t.rows[2].path, "backbone.conv1");
  EXPECT_CLOSE(t.rows[2].self_gpu_ms_per_step, 0.006);
  EXPECT_OPT_CLOSE(t.rows[2].flops_per_step, 3000);
  const ModuleRow& head = t.rows[3];
  EXPECT_EQ(head.path, "head");
  EXPECT_CLOSE(head.cpu_ms_per_step, 0.030);
  EXPECT_CLOSE(head.self_cpu_ms_per_step, 0.030);
  EXPECT_CLOSE(head.self_gpu_ms_per_step, 0.002);
  EXPECT_OPT_CLOSE(head.flops_per_step, 0);  // the trace has FLOPs, head's ops none
  // The module ranges are not ops: the analyser sees the 8 ops of the two steps.
  EXPECT_CLOSE(*AnalyseTrace(Read(TwoSteps())).ops_per_step, 4);
}

// --depth 1: backbone's members (backbone, backbone.conv0, backbone.conv1) make one row; the
// enclosed members count once (calls and totals), their self times add up.
TEST(ModuleTable, DepthAggregatesByPathPrefix) {
  const ModuleTable t = BuildModuleTable(Read(TwoSteps()), 1);
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0].path, "backbone");
  EXPECT_CLOSE(t.rows[0].calls_per_step, 1);
  EXPECT_CLOSE(t.rows[0].cpu_ms_per_step, 0.060);
  EXPECT_CLOSE(t.rows[0].self_cpu_ms_per_step, 0.060);
  EXPECT_CLOSE(t.rows[0].gpu_ms_per_step, 0.010);
  EXPECT_CLOSE(t.rows[0].self_gpu_ms_per_step, 0.010);
  EXPECT_CLOSE(t.rows[0].kernels_per_step, 2);
  EXPECT_OPT_CLOSE(t.rows[0].flops_per_step, 4000);
  EXPECT_EQ(t.rows[1].path, "head");
  EXPECT_CLOSE(t.rows[1].cpu_ms_per_step, 0.030);
}

// A top-level scope whose path extends another row's (head.decode, run after head rather than
// inside it) is part of that row at every depth: a parent's total includes its children
// (issue 22: --depth 1 showed head 2 calls / 15.7 ms, --depth 2 head 1 call / 14.0 ms and
// head.decode's 1.7 ms outside it). Calls are the module's own.
TEST(ModuleTable, AParentsTotalIncludesItsChildrenAtEveryDepth) {
  const TraceData d = Read(Trace(
      {Step(1, 0, 100), Mod("head", 0, 30), Mod("head.cv2.0", 5, 10), Mod("head.decode", 40, 20)}));
  const ModuleTable all = BuildModuleTable(d);
  ASSERT_EQ(all.rows.size(), 3u);
  EXPECT_EQ(all.rows[0].path, "head");
  EXPECT_CLOSE(all.rows[0].calls_per_step, 1);
  EXPECT_CLOSE(all.rows[0].cpu_ms_per_step, 0.050);  // head 30 + head.decode 20
  EXPECT_EQ(all.rows[1].path, "head.cv2.0");
  EXPECT_EQ(all.rows[1].depth, 2);
  EXPECT_EQ(all.rows[2].path, "head.decode");
  EXPECT_CLOSE(all.rows[2].cpu_ms_per_step, 0.020);
  for (int depth : {1, 2, 3}) {
    const ModuleTable t = BuildModuleTable(d, depth);
    ASSERT_FALSE(t.rows.empty()) << depth;
    EXPECT_EQ(t.rows[0].path, "head") << depth;
    EXPECT_CLOSE(t.rows[0].calls_per_step, 1);
    EXPECT_CLOSE(t.rows[0].cpu_ms_per_step, 0.050);
    for (const ModuleRow& r : t.rows) {
      EXPECT_LE(r.cpu_ms_per_step, t.rows[0].cpu_ms_per_step + 1e-12) << depth << " " << r.path;
    }
  }
  const ModuleTable one = BuildModuleTable(d, 1);
  ASSERT_EQ(one.rows.size(), 1u);
  EXPECT_CLOSE(one.rows[0].self_cpu_ms_per_step, 0.050);
  EXPECT_FALSE(one.has_gpu);
  EXPECT_FALSE(one.rows[0].flops_per_step.has_value());
}

TEST(ModuleTable, FoldedStacksWeighSelfTimeInMicroseconds) {
  EXPECT_EQ(FoldedStacks(Read(TwoSteps())),
            "backbone 32\n"
            "backbone;aten::cat 8\n"
            "backbone;backbone.conv0 12\n"
            "backbone;backbone.conv0;aten::conv2d 24\n"
            "backbone;backbone.conv0;aten::conv2d;cudaLaunchKernel 4\n"
            "backbone;backbone.conv1 12\n"
            "backbone;backbone.conv1;aten::conv2d 24\n"
            "backbone;backbone.conv1;aten::conv2d;cudaLaunchKernel 4\n"
            "head 44\n"
            "head;aten::add 12\n"
            "head;aten::add;cudaLaunchKernel 4\n");
}

TEST(ModulesReader, NoModuleScopesSaysHowToGetThem) {
  const TraceData d = Read(Trace({Step(1, 0, 100), Op("aten::add", 10, 5)}));
  auto v = BuildModules(d, ModulesOptions{}, "t.json", "t.json");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(v.status().message().find("no module scopes in this trace"), std::string::npos);
  EXPECT_NE(v.status().message().find("--with-modules"), std::string::npos);
}

TEST(ModulesReader, SortsAndRejectsColumnsTheTraceLacks) {
  const TraceData d = Read(TwoSteps());
  ModulesOptions o;
  o.sort = "self_gpu";
  auto v = BuildModules(d, o, "t.json", "t.json");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->table.rows[0].path, "backbone.conv1");
  EXPECT_EQ(v->table.rows.back().path, "backbone");
  const std::string text = RenderModulesText(*v);
  EXPECT_NE(text.find("sorted by self_gpu"), std::string::npos) << text;
  EXPECT_NE(text.find("self GPU ms"), std::string::npos) << text;
  // Self CPU adds up to the module time: 20 + 20 + 20 + 30 us per step of 100.
  EXPECT_NE(text.find("adds up to 0.090 ms/step, 90.0 % of the profiled step"), std::string::npos)
      << text;
  o.sort = "bogus";
  EXPECT_EQ(BuildModules(d, o, "t", "t").status().code(), absl::StatusCode::kInvalidArgument);
  const TraceData cpu = Read(Trace({Step(1, 0, 100), Mod("backbone", 0, 50)}));
  o.sort = "gpu_total";
  auto no_gpu = BuildModules(cpu, o, "t", "t");
  EXPECT_EQ(no_gpu.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(no_gpu.status().message().find("no GPU kernels"), std::string::npos);
  o.sort = "flops";
  EXPECT_EQ(BuildModules(cpu, o, "t", "t").status().code(), absl::StatusCode::kInvalidArgument);
  o.sort = "order";
  auto ok = BuildModules(cpu, o, "t", "t");
  ASSERT_TRUE(ok.ok());
  const std::string cpu_text = RenderModulesText(*ok);
  EXPECT_EQ(cpu_text.find("GPU ms"), std::string::npos) << cpu_text;
  EXPECT_NE(cpu_text.find("no GPU kernels in this trace: GPU columns n/a"), std::string::npos);
  const std::string json = RenderModulesJson(*ok);
  EXPECT_NE(json.find("\"gpu_ms_per_step\": null"), std::string::npos) << json;
}

TEST(ModulesReader, FoldedFormatRendersTheStacks) {
  ModulesOptions o;
  o.format = "folded";
  auto v = BuildModules(Read(TwoSteps()), o, "t", "t");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(RenderModulesText(*v), FoldedStacks(Read(TwoSteps())));
  EXPECT_NE(RenderModulesJson(*v).find("\"us\": 32"), std::string::npos);
}

}  // namespace
}  // namespace libreyolo
