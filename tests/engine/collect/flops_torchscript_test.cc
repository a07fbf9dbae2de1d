// FLOPs of a TorchScript graph (issue 38 §3): LibreYOLO9t traced as `libreyolo export --format
// torchscript` traces it records its convolutions as aten::_convolution (and, below it,
// aten::mkldnn_convolution), which LibTorch's own FLOP counter skips: the profile said 2 MFLOP
// for a 3.3 GFLOP network. Both CPU collectors must count the traced graph as the eager
// network, within 2 % of two independent counts: the native model's (Yolo9::Flops, from its
// weight shapes) and torch.utils.flop_counter.FlopCounterMode's on the Python tool's export.
#include <gtest/gtest.h>
#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/frontend/tracer.h>
#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "server/engine/collect/op_collector.h"
#include "server/engine/collect/torch_profiler.h"
#include "server/engine/model/yolo9.h"

namespace libreyolo::engine {
namespace {

constexpr int64_t kImgsz = 160;
// FlopCounterMode on `libreyolo export --format torchscript` of LibreYOLO9t (80 classes), run at
// 160 x 160 (torch 2.11, LibreYOLO 1.6.0): {aten._convolution: 487116800}; 3292909568 at 416.
constexpr double kFlopCounterModeAt160 = 487116800.0;

struct Totals {
  double all = 0;                        // every op's FLOPs
  std::map<std::string, double> by_op;   // per op name
  std::map<std::string, int64_t> count;  // ops per name
};

Totals Sum(const CollectedTrace& t) {
  Totals out;
  for (const CollectedEvent& e : t.events) {
    if (e.kind != CollectedKind::kCpuOp) continue;
    ++out.count[e.name];
    if (!e.flops) continue;
    out.all += *e.flops;
    out.by_op[e.name] += *e.flops;
  }
  return out;
}

// LibreYOLO9t in eval mode, no gradients: what an export holds.
Yolo9 Model() {
  torch::manual_seed(0);
  Yolo9 model(Yolo9Options{"t", 80});
  model->eval();
  for (auto& p : model->parameters()) p.requires_grad_(false);
  return model;
}

// The model's forward traced as torch.jit.trace traces it (weights baked in as constants), run
// by the TorchScript interpreter.
std::unique_ptr<torch::jit::GraphFunction> Traced(Yolo9& model, const torch::Tensor& x) {
  torch::NoGradGuard no_grad;
  auto traced = torch::jit::tracer::trace(
      {x},
      [&](torch::jit::Stack in) {
        std::vector<c10::IValue> outputs;
        for (const torch::Tensor& y : model->forward_raw(in[0].toTensor())) outputs.emplace_back(y);
        return torch::jit::Stack{c10::ivalue::Tuple::create(std::move(outputs))};
      },
      [](const torch::Tensor&) { return std::string(); }, /*strict=*/false);
  return std::make_unique<torch::jit::GraphFunction>("forward", traced.first->graph, nullptr);
}

CollectedTrace ProfileWithOurCollector(const std::function<void()>& step) {
  OpCollectorOptions o;
  o.record_shapes = o.with_flops = true;
  auto c = OpCollector::Start(o);
  EXPECT_TRUE(c.ok()) << c.status();
  step();
  auto t = (*c)->Stop();
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *std::move(t) : CollectedTrace{};
}

CollectedTrace ProfileWithLibTorch(const std::function<void()>& step) {
  TorchProfilerOptions o;
  o.record_shapes = o.with_flops = true;
  o.profile_memory = false;
  auto p = TorchProfiler::Start(o);
  EXPECT_TRUE(p.ok()) << p.status();
  step();
  auto t = (*p)->Stop();
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *std::move(t) : CollectedTrace{};
}

void ExpectWithin2Pct(double ours, double independent, const std::string& what) {
  EXPECT_NEAR(ours / independent, 1.0, 0.02)
      << what << ": ours " << ours << ", independent " << independent;
}

TEST(TorchScriptFlops, ATracedLibreYolo9CountsAsTheNativeNetwork) {
  torch::set_num_threads(1);
  Yolo9 model = Model();
  const torch::Tensor x = torch::rand({1, 3, kImgsz, kImgsz});
  auto graph = Traced(model, x);
  auto run = [&] {
    torch::NoGradGuard no_grad;
    torch::jit::Stack in{x};
    (*graph)(in);
  };
  run();  // the profiling executor's first run
  run();
  const double native = ForwardFlops(model, kImgsz);
  ExpectWithin2Pct(native, kFlopCounterModeAt160, "the native count against FlopCounterMode");
  for (const bool libtorch : {false, true}) {
    SCOPED_TRACE(libtorch ? "libtorch collector" : "native collector");
    const Totals t = Sum(libtorch ? ProfileWithLibTorch(run) : ProfileWithOurCollector(run));
    ASSERT_GT(t.count.count("aten::_convolution"), 0u) << "not a traced graph";
    ExpectWithin2Pct(t.all, native, "all ops against the native count");
    ExpectWithin2Pct(t.all, kFlopCounterModeAt160, "all ops against FlopCounterMode");
    // The convolutions alone are FlopCounterMode's count exactly, each counted once: on the
    // traced graph's _convolution, never again on the mkldnn_convolution it dispatches to.
    EXPECT_EQ(t.by_op.at("aten::_convolution"), kFlopCounterModeAt160);
    EXPECT_EQ(t.by_op.count("aten::mkldnn_convolution"), 0u);
    EXPECT_EQ(t.by_op.count("aten::thnn_conv2d"), 0u);
  }
}

TEST(TorchScriptFlops, TheEagerNetworkCountsEachConvolutionOnce) {
  torch::set_num_threads(1);
  Yolo9 model = Model();
  const torch::Tensor x = torch::rand({1, 3, kImgsz, kImgsz});
  auto run = [&] {
    torch::NoGradGuard no_grad;
    (void)model->forward_raw(x);
  };
  for (const bool libtorch : {false, true}) {
    SCOPED_TRACE(libtorch ? "libtorch collector" : "native collector");
    const Totals t = Sum(libtorch ? ProfileWithLibTorch(run) : ProfileWithOurCollector(run));
    // conv2d -> convolution -> _convolution -> mkldnn_convolution: one count, on conv2d.
    EXPECT_EQ(t.by_op.at("aten::conv2d"), ForwardFlops(model, kImgsz));
    for (const char* inner :
         {"aten::convolution", "aten::_convolution", "aten::mkldnn_convolution"}) {
      EXPECT_EQ(t.by_op.count(inner), 0u) << inner;
    }
  }
}

}  // namespace
}  // namespace libreyolo::engine
