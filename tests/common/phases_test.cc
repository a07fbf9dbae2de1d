// docs/metrics.md "Correlation" and "Phases": one hand-made trace exercising every rule.
#include <gtest/gtest.h>

#include <string>

#include "common/readers/phases_view.h"
#include "tests/common/trace_builder.h"

namespace libreyolo::testing {
namespace {

const PhaseRow* FindPhase(const Profile& p, const std::string& name) {
  for (const PhaseRow& r : p.phases) {
    if (r.phase == name) return &r;
  }
  return nullptr;
}

// One step [0, 10000) us. Thread 1/1 is the main thread, 1/2 the autograd thread, 1/3 another.
//  forward     "## forward ##" [100, 2100) on 1/1
//                aten::conv2d [200, 700) -> cudaLaunchKernel [300, 350) corr 11 -> conv_kernel 400
//                cudaLaunchKernel [800, 850) without correlation, flow s id 12 at 810
//                  -> relu_kernel 100 (linked through the ac2g flow)
//  postprocess "step/postprocess" [2500, 3500) on 1/1, aten::sort [2600, 2700)
//                fill_kernel at 2700 without correlation -> by time overlap
//  preprocess  "step/preprocess" [4000, 5000) on 1/1
//  to_device     "## to_device ##" [4200, 4500) inside preprocess: the innermost span
//                cudaLaunchKernel [4300, 4320) corr 13 -> copy_kernel 50
//                sigmoid_kernel at 4250 without correlation -> overlap, latest-starting span
//  backward    autograd::engine::evaluate_function: ... [5000, 6000) on 1/2 (no span)
//                aten::convolution_backward [5100, 5900) -> launch corr 14 -> wgrad_kernel 500
//  (none)      stray_kernel at 6500 with correlation 99 that matches no launch, no span
//  optimizer   "## optimizer ##" [7000, 8000) on 1/3; multi_tensor_apply at 7500 (overlap)
//  dataload    "enumerate(DataLoader)#..." [8000, 8500) on 1/1 and "## dataload ##" [8300, 8700)
//                on 1/3: union [8000, 8700) = 700 us (the sum would be 900)
//  (none)      orphan_kernel at 9000, no correlation, no span
//  alpha, zeta "step/zeta" [9500, 9600), "step/alpha" [9700, 9800): sorted after the known ones
std::string PhaseTrace() {
  const Th main = kMain, autograd = Thread(2), other = Thread(3);
  return Trace({
      Step(1, 0, 10000),
      Ann("## forward ##", 100, 2000, main),
      Op("aten::conv2d", 200, 500, main),
      Launch(300, 50, 11, main),
      Kernel("conv_kernel", 1000, 400, 11),
      Launch(800, 50, -1, main),
      Flow(12, 810, main),
      Kernel("relu_kernel", 1500, 100, 12),
      Ann("step/postprocess", 2500, 1000, main),
      Op("aten::sort", 2600, 100, main),
      Kernel("fill_kernel", 2700, 100),
      Ann("step/preprocess", 4000, 1000, main),
      Ann("## to_device ##", 4200, 300, main),
      Launch(4300, 20, 13, main),
      Kernel("copy_kernel", 4600, 50, 13),
      Kernel("sigmoid_kernel", 4250, 10),
      Op("autograd::engine::evaluate_function: ConvolutionBackward0", 5000, 1000, autograd),
      Op("aten::convolution_backward", 5100, 800, autograd),
      Launch(5200, 30, 14, autograd),
      Kernel("wgrad_kernel", 5300, 500, 14),
      Kernel("stray_kernel", 6500, 100, 99),
      Ann("## optimizer ##", 7000, 1000, other),
      Kernel("multi_tensor_apply_kernel", 7500, 200),
      Ann("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 8000, 500, main),
      Ann("## dataload ##", 8300, 400, other),
      Kernel("orphan_kernel", 9000, 100),
      Ann("step/zeta", 9500, 100, main),
      Ann("step/alpha", 9700, 100, main),
  });
}

TEST(Phases, OrderFollowsTheDocumentedListThenAlphabetical) {
  const Profile p = Analyse(PhaseTrace());
  std::vector<std::string> names;
  for (const PhaseRow& r : p.phases) names.push_back(r.phase);
  EXPECT_EQ(names, (std::vector<std::string>{"dataload", "to_device", "preprocess", "forward",
                                             "backward", "postprocess", "optimizer", "alpha",
                                             "zeta"}));
}

TEST(Phases, KernelAttributionThroughCorrelationFlowAutogradAndOverlap) {
  const Profile p = Analyse(PhaseTrace());
  // forward: conv_kernel (correlation) 400 + relu_kernel (ac2g flow) 100 = 500 us.
  const PhaseRow* fwd = FindPhase(p, "forward");
  ASSERT_NE(fwd, nullptr);
  EXPECT_CLOSE(fwd->gpu_ms_per_step, 0.5);
  EXPECT_CLOSE(fwd->kernels_per_step, 2.0);
  EXPECT_EQ(fwd->unique_kernels, 2);
  // to_device: copy_kernel (launch inside the innermost span) 50 us. sigmoid_kernel, which runs
  // inside the span, has no launch call: with launch calls in the trace it is left out.
  const PhaseRow* dev = FindPhase(p, "to_device");
  ASSERT_NE(dev, nullptr);
  EXPECT_CLOSE(dev->gpu_ms_per_step, 0.05);
  EXPECT_CLOSE(dev->kernels_per_step, 1.0);
  // preprocess encloses to_device but gets none of its kernels.
  const PhaseRow* pre = FindPhase(p, "preprocess");
  ASSERT_NE(pre, nullptr);
  EXPECT_CLOSE(pre->gpu_ms_per_step, 0.0);
  EXPECT_CLOSE(pre->kernels_per_step, 0.0);
  // backward: wgrad_kernel launched under the autograd op on a thread with no span.
  const PhaseRow* bwd = FindPhase(p, "backward");
  ASSERT_NE(bwd, nullptr);
  EXPECT_CLOSE(bwd->gpu_ms_per_step, 0.5);
  EXPECT_CLOSE(bwd->kernels_per_step, 1.0);
  // fill_kernel, sigmoid_kernel, stray_kernel (correlation 99, no call), multi_tensor_apply and
  // orphan_kernel have no launch call: left out of the window, so of every phase.
  EXPECT_EQ(p.parse_stats.unattributed_kernels, 5);
  EXPECT_CLOSE(FindPhase(p, "postprocess")->gpu_ms_per_step, 0.0);
  EXPECT_CLOSE(FindPhase(p, "optimizer")->gpu_ms_per_step, 0.0);
  EXPECT_CLOSE(FindPhase(p, "dataload")->gpu_ms_per_step, 0.0);
  // The window's kernels: 400 + 100 + 50 + 500 = 1050 us, every one in a phase, so the phases
  // add up to the headline.
  EXPECT_OPT_CLOSE(p.gpu_kernel_ms_per_step, 1.05);
  double phase_ms = 0;
  for (const PhaseRow& r : p.phases) phase_ms += r.gpu_ms_per_step;
  EXPECT_CLOSE(phase_ms, 1.05);
  const PhasesView v = BuildPhases(p, "t.json");
  EXPECT_OPT_CLOSE(v.unattributed_gpu_ms_per_step, 0.0);
  // kernels_by_phase holds the phase's own kernels.
  ASSERT_EQ(p.kernels_by_phase.count("forward"), 1u);
  ASSERT_EQ(p.kernels_by_phase.at("forward").size(), 2u);
  EXPECT_EQ(p.kernels_by_phase.at("forward")[0].raw_name, "conv_kernel");
  EXPECT_EQ(p.kernels_by_phase.at("forward")[1].raw_name, "relu_kernel");
}

// Without launch calls in the trace (the start-time fallback) a kernel's phase comes from time
// overlap: the innermost (latest-starting) phase span on any thread containing its start.
TEST(Phases, WithoutLaunchCallsKernelsFallBackToTimeOverlap) {
  const Th main = Thread(1), other = Thread(3);
  const Profile p = AnalyseEvents({
      Step(1, 0, 10000),
      Ann("step/postprocess", 2500, 1000, main),
      Kernel("fill_kernel", 2700, 100),
      Ann("step/preprocess", 4000, 1000, main),
      Ann("## to_device ##", 4200, 300, main),
      Kernel("sigmoid_kernel", 4250, 10),  // both spans contain it: the latest-starting wins
      Ann("## optimizer ##", 7000, 1000, other),
      Kernel("multi_tensor_apply_kernel", 7500, 200),  // a span on another thread
      Kernel("orphan_kernel", 9000, 100),              // no span: no phase
  });
  EXPECT_EQ(p.gpu_attribution, "start");
  EXPECT_EQ(p.parse_stats.unattributed_kernels, 0);
  EXPECT_CLOSE(FindPhase(p, "postprocess")->gpu_ms_per_step, 0.1);
  EXPECT_CLOSE(FindPhase(p, "to_device")->gpu_ms_per_step, 0.01);
  EXPECT_CLOSE(FindPhase(p, "preprocess")->gpu_ms_per_step, 0.0);
  EXPECT_CLOSE(FindPhase(p, "optimizer")->gpu_ms_per_step, 0.2);
  // All kernels 410 us; in phases 310 us; the phases view shows the rest.
  EXPECT_OPT_CLOSE(p.gpu_kernel_ms_per_step, 0.41);
  const PhasesView v = BuildPhases(p, "t.json");
  EXPECT_OPT_CLOSE(v.unattributed_gpu_ms_per_step, 0.1);  // orphan_kernel
}

TEST(Phases, WallTimeIsTheUnionOfSpansAndNullWithoutSpan) {
  const Profile p = Analyse(PhaseTrace());
  EXPECT_OPT_CLOSE(FindPhase(p, "dataload")->wall_ms_per_step, 0.7);  // [8000, 8700)
  EXPECT_OPT_CLOSE(FindPhase(p, "forward")->wall_ms_per_step, 2.0);
  EXPECT_OPT_CLOSE(FindPhase(p, "to_device")->wall_ms_per_step, 0.3);
  EXPECT_OPT_CLOSE(FindPhase(p, "preprocess")->wall_ms_per_step, 1.0);
  EXPECT_OPT_CLOSE(FindPhase(p, "postprocess")->wall_ms_per_step, 1.0);
  EXPECT_OPT_CLOSE(FindPhase(p, "optimizer")->wall_ms_per_step, 1.0);
  EXPECT_OPT_CLOSE(FindPhase(p, "zeta")->wall_ms_per_step, 0.1);
  EXPECT_FALSE(FindPhase(p, "backward")->wall_ms_per_step.has_value());
  // dataload_ms = dataload wall; dataload_frac = 0.7 / 10.0.
  EXPECT_OPT_CLOSE(p.dataload_ms, 0.7);
  EXPECT_OPT_CLOSE(p.dataload_frac, 0.07);
}

TEST(Phases, OpsPerStepPerPhase) {
  const Profile p = Analyse(PhaseTrace());
  // CPU ops: aten::conv2d (forward), aten::sort (postprocess), the autograd op and
  // aten::convolution_backward (backward); annotations and runtime calls are not ops.
  EXPECT_CLOSE(FindPhase(p, "forward")->ops_per_step, 1.0);
  EXPECT_CLOSE(FindPhase(p, "postprocess")->ops_per_step, 1.0);
  EXPECT_CLOSE(FindPhase(p, "backward")->ops_per_step, 2.0);
  EXPECT_CLOSE(FindPhase(p, "to_device")->ops_per_step, 0.0);
  EXPECT_CLOSE(FindPhase(p, "dataload")->ops_per_step, 0.0);
  EXPECT_OPT_CLOSE(p.ops_per_step, 4.0);
  ASSERT_EQ(p.ops_by_phase.count("backward"), 1u);
  EXPECT_EQ(p.ops_by_phase.at("backward").size(), 2u);
  ASSERT_EQ(p.ops_by_phase.at("forward").size(), 1u);
  EXPECT_EQ(p.ops_by_phase.at("forward")[0].op, "aten::conv2d");
}

TEST(Phases, PerStepDivisionAndOnlyPhasesWithSomething) {
  // Two steps; a forward span in each; one kernel per step linked by correlation.
  const Profile p = AnalyseEvents({
      Step(1, 0, 1000), Step(2, 1000, 1000),
      Ann("## forward ##", 100, 300), Launch(150, 10, 1), Kernel("k", 200, 100, 1),
      Ann("## forward ##", 1100, 500), Launch(1150, 10, 2), Kernel("k", 1200, 100, 2),
      Op("aten::empty", 1800, 10),  // in no phase
      Ann("some_other_annotation", 1850, 10),
  });
  ASSERT_EQ(p.phases.size(), 1u);
  EXPECT_EQ(p.phases[0].phase, "forward");
  EXPECT_CLOSE(p.phases[0].gpu_ms_per_step, 0.1);            // 200 us / 2
  EXPECT_OPT_CLOSE(p.phases[0].wall_ms_per_step, 0.4);       // (300 + 500) us / 2
  EXPECT_CLOSE(p.phases[0].kernels_per_step, 1.0);
  EXPECT_EQ(p.phases[0].unique_kernels, 1);
  EXPECT_OPT_CLOSE(p.dataload_ms, 0.0);  // no dataload phase
}

TEST(Phases, SpanNames) {
  EXPECT_EQ(PhaseOfSpanName("step/forward"), "forward");
  EXPECT_EQ(PhaseOfSpanName("step/nms"), "nms");
  EXPECT_EQ(PhaseOfSpanName("## forward ##"), "forward");
  EXPECT_EQ(PhaseOfSpanName("## backward ##"), "backward");
  EXPECT_EQ(PhaseOfSpanName("## data_load ##"), "dataload");
  EXPECT_EQ(PhaseOfSpanName("## dataload ##"), "dataload");
  EXPECT_EQ(PhaseOfSpanName("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"),
            "dataload");
  EXPECT_EQ(PhaseOfSpanName("## to_device ##"), "to_device");
  EXPECT_EQ(PhaseOfSpanName("Optimizer.step#SGD.step"), "optimizer");
  EXPECT_EQ(PhaseOfSpanName("Optimizer.zero_grad#SGD.zero_grad"), "optimizer");
  EXPECT_EQ(PhaseOfSpanName("## optimizer ##"), "optimizer");
  EXPECT_EQ(PhaseOfSpanName("aten::conv2d"), "");
  EXPECT_EQ(PhaseOfSpanName("ProfilerStep#3"), "");
}

// docs/metrics.md "Phases", inferred forward: a trace without forward marks (the Python
// LibreYOLO's `libreyolo train` attached: cpu_op events, Optimizer.step/zero_grad and
// enumerate(DataLoader) only) gets its forward from Kineto's fwdbwd flows: the top-level op
// holding the start of one (a forward op whose autograd node ran in the trace) is forward.
std::string FwdBwd(int64_t id, int64_t ts, const Th& th = kMain) {
  return absl::StrCat(R"({"ph": "s", "cat": "fwdbwd", "name": "fwdbwd", "id": )", id,
                      R"(, "pid": )", th.pid, R"(, "tid": )", th.tid, R"(, "ts": )", ts, "}");
}
std::string FwdBwdEnd(int64_t id, int64_t ts, const Th& th = kMain) {
  return absl::StrCat(R"({"ph": "f", "bp": "e", "cat": "fwdbwd", "name": "fwdbwd", "id": )", id,
                      R"(, "pid": )", th.pid, R"(, "tid": )", th.tid, R"(, "ts": )", ts, "}");
}

// One step [0, 10000) us on 1/1 (the step mark's category given):
//  aten::conv2d [100, 500) > aten::convolution [150, 400) holding flow 1's start: forward
//  aten::relu [600, 700) holding flow 2's start: forward
//  aten::to [800, 900), no flow (a copy without autograd): no phase
//  aten::add [950, 1000) with a flow start on another thread only: no phase
//  autograd::engine::evaluate_function: ReluBackward0 [2000, 2100) holding the flows' ends:
//    backward
//  Optimizer.step#SGD.step [3000, 3500) > aten::add_ [3100, 3200): optimizer
std::vector<std::string> UnmarkedTraining(absl::string_view step_cat) {
  return {Step(1, 0, 10000, step_cat),
          Op("aten::conv2d", 100, 400),
          Op("aten::convolution", 150, 250),
          FwdBwd(1, 150),
          Op("aten::relu", 600, 100),
          FwdBwd(2, 600),
          Op("aten::to", 800, 100),
          Op("aten::add", 950, 50),
          FwdBwd(3, 960, Thread(2)),
          Op("autograd::engine::evaluate_function: ReluBackward0", 2000, 100),
          FwdBwdEnd(2, 2000),
          FwdBwdEnd(1, 2050),
          Ann("Optimizer.step#SGD.step", 3000, 500),
          Op("aten::add_", 3100, 100)};
}

TEST(Phases, WithoutForwardMarksTheFwdBwdFlowsMarkTheForwardOps) {
  // A ProfilerStep#N of category cpu_op (older Kineto) is not the "top-level op".
  for (const char* step_cat : {"user_annotation", "cpu_op"}) {
    SCOPED_TRACE(step_cat);
    const Profile p = AnalyseEvents(UnmarkedTraining(step_cat));
    std::vector<std::string> names;
    for (const PhaseRow& r : p.phases) names.push_back(r.phase);
    EXPECT_EQ(names, (std::vector<std::string>{"forward", "backward", "optimizer"}));
    const PhaseRow* fwd = FindPhase(p, "forward");
    ASSERT_NE(fwd, nullptr);
    // conv2d (self 150), convolution (250), relu (100); aten::to and aten::add are not.
    EXPECT_CLOSE(fwd->ops_per_step, 3.0);
    EXPECT_OPT_CLOSE(fwd->cpu_ms_per_step, 0.5);
    EXPECT_FALSE(fwd->wall_ms_per_step.has_value()) << "no span: like backward, no wall time";
    ASSERT_EQ(p.ops_by_phase.count("forward"), 1u);
    EXPECT_EQ(p.ops_by_phase.at("forward").size(), 3u);
    EXPECT_OPT_CLOSE(FindPhase(p, "backward")->cpu_ms_per_step, 0.1);
    EXPECT_OPT_CLOSE(FindPhase(p, "optimizer")->cpu_ms_per_step, 0.1);
  }
}

TEST(Phases, ForwardMarksAnywhereInTheTraceTurnTheFlowRuleOff) {
  // "## forward ##" around the relu only (our engine's and the Python tool's profile traces
  // mark their forward): the conv2d, whose flow would make it forward, stays unmarked.
  std::vector<std::string> events = UnmarkedTraining("user_annotation");
  events.push_back(Ann("## forward ##", 590, 200));
  const Profile p = AnalyseEvents(events);
  const PhaseRow* fwd = FindPhase(p, "forward");
  ASSERT_NE(fwd, nullptr);
  EXPECT_CLOSE(fwd->ops_per_step, 1.0);  // aten::relu
  EXPECT_OPT_CLOSE(fwd->wall_ms_per_step, 0.2);
  // A mark outside the window (after the step) counts too: it is the trace's convention.
  events.back() = Ann("## forward ##", 20000, 100);
  const Profile q = AnalyseEvents(events);
  EXPECT_EQ(FindPhase(q, "forward"), nullptr);
}

// A cut of a real trace (tests/fixtures/traces/libreyolo_train_cpu.json.gz): the Python
// LibreYOLO's `libreyolo train` of YOLOX-n on the CPU, attached with Kineto's on-demand
// profiling (default settings: no forward mark). The values are the independent oracle's
// (tests/fixtures/expected/libreyolo_train_cpu.expected.json).
TEST(Phases, TheAttachedPythonTrainingHasItsForward) {
  auto loaded =
      AnalyseTraceFile(std::string(LIBREYOLO_FIXTURES_DIR) + "/traces/libreyolo_train_cpu.json.gz");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const Profile& p = *loaded;
  const PhaseRow* fwd = FindPhase(p, "forward");
  const PhaseRow* bwd = FindPhase(p, "backward");
  ASSERT_NE(fwd, nullptr);
  ASSERT_NE(bwd, nullptr);
  EXPECT_CLOSE(fwd->ops_per_step, 1339.0);
  EXPECT_NEAR(fwd->cpu_ms_per_step.value_or(0), 446.006953, 1e-6);
  EXPECT_NEAR(bwd->cpu_ms_per_step.value_or(0), 303.693191, 1e-6);
  // Forward is 43% of the window's CPU self time, backward 30%.
  ASSERT_TRUE(p.self_cpu_total_ms_per_step.has_value());
  EXPECT_NEAR(*fwd->cpu_ms_per_step / *p.self_cpu_total_ms_per_step, 0.4348, 1e-3);
  EXPECT_NEAR(*bwd->cpu_ms_per_step / *p.self_cpu_total_ms_per_step, 0.2960, 1e-3);
}

}  // namespace
}  // namespace libreyolo::testing
