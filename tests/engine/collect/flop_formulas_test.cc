// The FLOP formula table (common/trace/flop_formulas.h) and its attribution to a collected
// trace (server/engine/collect/flop_attribution.h), without LibTorch. The expected numbers are
// torch.utils.flop_counter.FlopCounterMode's on the same shapes and arguments (torch 2.11),
// except where a comment says why ours differs.
#include "common/trace/flop_formulas.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/analysis/trace_analyser.h"
#include "server/engine/collect/flop_attribution.h"
#include "server/engine/collect/trace_export.h"
#include "tests/support/test_files.h"

namespace libreyolo {
namespace {

using A = FlopArg;

// conv2d(input, weight, bias, stride, padding, dilation, groups)
std::vector<FlopArg> Conv2d(std::vector<int64_t> x, std::vector<int64_t> w, int64_t stride,
                            int64_t pad, int64_t dil, int64_t groups) {
  return {A::Tensor(std::move(x)),   A::Tensor(std::move(w)), A::None(),
          A::Ints({stride, stride}), A::Ints({pad, pad}),     A::Ints({dil, dil}),
          A::Ints({groups})};
}

// _convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
// groups, benchmark, deterministic, cudnn_enabled, allow_tf32): what a traced graph records.
std::vector<FlopArg> UnderscoreConv(std::vector<int64_t> x, std::vector<int64_t> w,
                                    std::vector<int64_t> stride, std::vector<int64_t> pad,
                                    bool transposed, std::vector<int64_t> out_pad, int64_t groups) {
  return {A::Tensor(std::move(x)), A::Tensor(std::move(w)),     A::None(),
          A::Ints(stride),         A::Ints(std::move(pad)),     A::Ints({1, 1}),
          A::Bools({transposed}),  A::Ints(std::move(out_pad)), A::Ints({groups}),
          A::Bools({false}),       A::Bools({false}),           A::Bools({true}),
          A::Bools({true})};
}

TEST(FlopFormulas, ConvolutionWithStrideAndPadding) {
  EXPECT_EQ(FlopsOf("aten::conv2d", Conv2d({2, 8, 17, 15}, {16, 8, 3, 3}, 2, 1, 1, 1)), 331776);
  // The same convolution through every entry point a graph may record it by.
  EXPECT_EQ(FlopsOf("aten::_convolution", UnderscoreConv({2, 8, 17, 15}, {16, 8, 3, 3}, {2, 2},
                                                         {1, 1}, false, {0, 0}, 1)),
            331776);
  // mkldnn_convolution(self, weight, bias, padding, stride, dilation, groups)
  EXPECT_EQ(FlopsOf("aten::mkldnn_convolution",
                    std::vector<FlopArg>{A::Tensor({2, 8, 17, 15}), A::Tensor({16, 8, 3, 3}),
                                         A::None(), A::Ints({1, 1}), A::Ints({2, 2}),
                                         A::Ints({1, 1}), A::Ints({1})}),
            331776);
  // thnn_conv2d(self, weight, kernel_size, bias, stride, padding)
  EXPECT_EQ(
      FlopsOf("aten::thnn_conv2d",
              std::vector<FlopArg>{A::Tensor({2, 8, 17, 15}), A::Tensor({16, 8, 3, 3}),
                                   A::Ints({3, 3}), A::None(), A::Ints({2, 2}), A::Ints({1, 1})}),
      331776);
  // cudnn_convolution(self, weight, padding, stride, dilation, groups, ...)
  EXPECT_EQ(
      FlopsOf("aten::cudnn_convolution",
              std::vector<FlopArg>{A::Tensor({2, 8, 17, 15}), A::Tensor({16, 8, 3, 3}),
                                   A::Ints({1, 1}), A::Ints({2, 2}), A::Ints({1, 1}), A::Ints({1}),
                                   A::Bools({false}), A::Bools({false}), A::Bools({true})}),
      331776);
}

TEST(FlopFormulas, ConvolutionWithGroupsAndDilation) {
  EXPECT_EQ(FlopsOf("aten::conv2d", Conv2d({1, 8, 20, 20}, {16, 2, 3, 3}, 1, 2, 2, 4)), 230400);
  EXPECT_EQ(FlopsOf("aten::conv2d", Conv2d({1, 32, 10, 10}, {32, 1, 5, 5}, 1, 2, 1, 32)), 160000);
  // conv2d(padding="same") and 1-D / 3-D convolutions.
  std::vector<FlopArg> same = Conv2d({1, 4, 9, 9}, {6, 4, 3, 3}, 1, 0, 1, 1);
  same[4] = A::String("same");
  EXPECT_EQ(FlopsOf("aten::conv2d", same), 34992);
  EXPECT_EQ(FlopsOf("aten::conv1d",
                    std::vector<FlopArg>{A::Tensor({3, 4, 50}), A::Tensor({5, 4, 7}), A::None(),
                                         A::Ints({3}), A::Ints({0}), A::Ints({1}), A::Ints({1})}),
            12600);
  EXPECT_EQ(FlopsOf("aten::conv3d",
                    std::vector<FlopArg>{A::Tensor({1, 2, 6, 7, 8}), A::Tensor({4, 2, 3, 3, 3}),
                                         A::None(), A::Ints({1, 1, 1}), A::Ints({1, 1, 1}),
                                         A::Ints({1, 1, 1}), A::Ints({1})}),
            145152);
}

TEST(FlopFormulas, TransposedConvolution) {
  // conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation)
  EXPECT_EQ(FlopsOf("aten::conv_transpose2d",
                    std::vector<FlopArg>{A::Tensor({2, 8, 7, 9}), A::Tensor({8, 4, 4, 4}),
                                         A::None(), A::Ints({2, 2}), A::Ints({1, 1}),
                                         A::Ints({1, 1}), A::Ints({1}), A::Ints({1, 1})}),
            129024);
  // The traced form: _convolution with transposed=true, and groups.
  EXPECT_EQ(FlopsOf("aten::_convolution",
                    UnderscoreConv({1, 8, 5, 5}, {8, 3, 3, 3}, {2, 2}, {0, 0}, true, {0, 0}, 2)),
            10800);
}

TEST(FlopFormulas, ConvolutionBackward) {
  // convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
  // transposed, output_padding, groups, output_mask): grad input and grad weight, each the
  // forward's 165888 (FlopCounterMode: forward + backward = 497664).
  const std::vector<FlopArg> args = {A::Tensor({2, 16, 6, 6}),
                                     A::Tensor({2, 8, 12, 12}),
                                     A::Tensor({16, 8, 3, 3}),
                                     A::None(),
                                     A::Ints({2, 2}),
                                     A::Ints({1, 1}),
                                     A::Ints({1, 1}),
                                     A::Bools({false}),
                                     A::Ints({0, 0}),
                                     A::Ints({1}),
                                     A::Bools({true, true, false})};
  EXPECT_EQ(FlopsOf("aten::convolution_backward", args), 2 * 165888);
}

TEST(FlopFormulas, MissingArgumentsCountNothing) {
  // A collector without the scalar inputs: no stride, so no guess.
  std::vector<FlopArg> args =
      UnderscoreConv({1, 8, 9, 9}, {8, 8, 3, 3}, {2, 2}, {1, 1}, false, {0, 0}, 1);
  args[3] = A::None();
  EXPECT_EQ(FlopsOf("aten::_convolution", args), std::nullopt);
  EXPECT_EQ(FlopsOf("aten::conv2d", std::vector<FlopArg>{A::Tensor({1, 8, 9, 9})}), std::nullopt);
  EXPECT_EQ(FlopsOf("aten::add", std::vector<FlopArg>{}), std::nullopt);
}

TEST(FlopFormulas, MatrixProducts) {
  // linear(input [2, 5, 16], weight [32, 16], bias): the bias is not counted.
  EXPECT_EQ(FlopsOf("aten::linear", std::vector<FlopArg>{A::Tensor({2, 5, 16}), A::Tensor({32, 16}),
                                                         A::Tensor({32})}),
            10240);
  EXPECT_EQ(FlopsOf("aten::bmm", std::vector<FlopArg>{A::Tensor({4, 3, 5}), A::Tensor({4, 5, 7})}),
            840);
  EXPECT_EQ(
      FlopsOf("aten::matmul", std::vector<FlopArg>{A::Tensor({2, 1, 3, 5}), A::Tensor({4, 5, 7})}),
      1680);
  EXPECT_EQ(FlopsOf("aten::addmm",
                    std::vector<FlopArg>{A::Tensor({3, 7}), A::Tensor({3, 5}), A::Tensor({5, 7})}),
            210);
  EXPECT_EQ(
      FlopsOf("aten::baddbmm", std::vector<FlopArg>{A::Tensor({4, 3, 7}), A::Tensor({4, 3, 5}),
                                                    A::Tensor({4, 5, 7})}),
      840);
  EXPECT_EQ(MatmulFlops(std::vector<int64_t>{5}, std::vector<int64_t>{5, 7}), 70);  // vector @ M
  EXPECT_EQ(MatmulFlops(std::vector<int64_t>{3, 5}, std::vector<int64_t>{4, 7}), std::nullopt);
}

TEST(FlopFormulas, ScaledDotProductAttention) {
  const std::vector<FlopArg> qkv = {A::Tensor({2, 4, 10, 16}), A::Tensor({2, 4, 12, 16}),
                                    A::Tensor({2, 4, 12, 8})};
  EXPECT_EQ(FlopsOf("aten::scaled_dot_product_attention", qkv), 46080);
  EXPECT_EQ(FlopsOf("aten::_scaled_dot_product_flash_attention_for_cpu", qkv), 46080);
  EXPECT_EQ(FlopsOf("aten::_scaled_dot_product_efficient_attention", qkv), 46080);
  // Backward (grad_out, q, k, v): flop_counter's five products, 2 * BH * L * S * (3E + 2Ev).
  EXPECT_EQ(FlopsOf("aten::_scaled_dot_product_flash_attention_backward",
                    std::vector<FlopArg>{A::Tensor({2, 4, 10, 16}), A::Tensor({2, 4, 10, 16}),
                                         A::Tensor({2, 4, 12, 16}), A::Tensor({2, 4, 12, 16})}),
            2.0 * 8 * 10 * 12 * (3 * 16 + 2 * 16));
}

TEST(FlopFormulas, Classification) {
  EXPECT_EQ(ClassifyFlopOp("aten::_convolution"), FlopOpClass::kFormula);
  EXPECT_EQ(ClassifyFlopOp("aten::mkldnn_convolution"), FlopOpClass::kFormula);
  EXPECT_EQ(ClassifyFlopOp("aten::linear"), FlopOpClass::kFormula);
  EXPECT_EQ(ClassifyFlopOp("aten::lstm"), FlopOpClass::kNoFormula);
  EXPECT_EQ(ClassifyFlopOp("aten::add"), FlopOpClass::kNone);
  EXPECT_EQ(ClassifyFlopOp("aten::einsum"), FlopOpClass::kNone);  // its bmm is counted
}

namespace engine_side {

using engine::AttributeFlops;
using engine::CollectedEvent;
using engine::CollectedKind;
using engine::CollectedTrace;

CollectedEvent Op(std::string name, int64_t start, int64_t end, std::vector<FlopArg> args = {},
                  std::optional<double> libtorch_flops = std::nullopt, uint64_t thread = 1) {
  CollectedEvent e;
  e.kind = CollectedKind::kCpuOp;
  e.name = std::move(name);
  e.start_ns = start;
  e.dur_ns = end - start;
  e.thread = thread;
  e.flop_args = std::move(args);
  e.flops = libtorch_flops;
  return e;
}

TEST(FlopAttribution, AConvolutionChainCountsOnce) {
  const auto conv = Conv2d({2, 8, 17, 15}, {16, 8, 3, 3}, 2, 1, 1, 1);
  const auto under =
      UnderscoreConv({2, 8, 17, 15}, {16, 8, 3, 3}, {2, 2}, {1, 1}, false, {0, 0}, 1);
  CollectedTrace t;
  // conv2d -> convolution -> _convolution -> mkldnn_convolution, each recorded with its inputs
  // (and LibTorch's own count on conv2d), then an add LibTorch counted, outside the chain.
  t.events.push_back(Op("aten::conv2d", 100, 200, conv, 331776.0));
  t.events.push_back(Op("aten::convolution", 101, 199, under));
  t.events.push_back(Op("aten::_convolution", 102, 198, under));
  t.events.push_back(Op("aten::mkldnn_convolution", 103, 197,
                        {A::Tensor({2, 8, 17, 15}), A::Tensor({16, 8, 3, 3}), A::None(),
                         A::Ints({1, 1}), A::Ints({2, 2}), A::Ints({1, 1}), A::Ints({1})}));
  t.events.push_back(Op("aten::add", 210, 220, {}, 4080.0));
  // A traced graph's chain starts at _convolution; an add inside a matmul is the matmul's.
  t.events.push_back(Op("aten::_convolution", 300, 400, under));
  t.events.push_back(Op("aten::mkldnn_convolution", 301, 399,
                        {A::Tensor({2, 8, 17, 15}), A::Tensor({16, 8, 3, 3}), A::None(),
                         A::Ints({1, 1}), A::Ints({2, 2}), A::Ints({1, 1}), A::Ints({1})}));
  t.events.push_back(Op("aten::matmul", 500, 600, {A::Tensor({4, 3, 5}), A::Tensor({4, 5, 7})}));
  t.events.push_back(
      Op("aten::bmm", 510, 590, {A::Tensor({4, 3, 5}), A::Tensor({4, 5, 7})}, 840.0));
  t.events.push_back(Op("aten::add", 591, 595, {}, 84.0));
  AttributeFlops(t);
  double total = 0;
  for (const auto& e : t.events) total += e.flops.value_or(0);
  EXPECT_EQ(total, 2 * 331776 + 4080 + 840);
  EXPECT_EQ(t.events[0].flops, 331776);
  for (const size_t i : std::vector<size_t>{1, 2, 3, 6, 8, 9})
    EXPECT_FALSE(t.events[i].flops.has_value()) << i;
  EXPECT_EQ(t.events[5].flops, 331776);
  EXPECT_TRUE(t.events[5].flop_args.empty());  // dropped once counted
}

TEST(FlopAttribution, AnUnreadableHeadLeavesTheCountToWhatItDispatchesTo) {
  auto under = UnderscoreConv({2, 8, 17, 15}, {16, 8, 3, 3}, {2, 2}, {1, 1}, false, {0, 0}, 1);
  under[3] = A::None();  // no stride recorded
  CollectedTrace t;
  t.events.push_back(Op("aten::_convolution", 0, 100, under));
  t.events.push_back(Op("aten::mkldnn_convolution", 1, 99,
                        {A::Tensor({2, 8, 17, 15}), A::Tensor({16, 8, 3, 3}), A::None(),
                         A::Ints({1, 1}), A::Ints({2, 2}), A::Ints({1, 1}), A::Ints({1})}));
  // Another thread: ops nest per thread only.
  t.events.push_back(Op("aten::mm", 10, 20, {A::Tensor({3, 5}), A::Tensor({5, 7})}, {}, 2));
  AttributeFlops(t);
  EXPECT_FALSE(t.events[0].flops.has_value());
  EXPECT_EQ(t.events[1].flops, 331776);
  EXPECT_EQ(t.events[2].flops, 210);
}

// What stays uncounted is named in the profile, and the total is a lower bound.
TEST(FlopAttribution, TheProfileNamesTheOpsItCouldNotCount) {
  auto under = UnderscoreConv({1, 8, 9, 9}, {8, 8, 3, 3}, {1, 1}, {1, 1}, false, {0, 0}, 1);
  under[3] = A::None();  // no stride: neither it nor what it dispatches to can be counted
  CollectedTrace t;
  CollectedEvent step;
  step.kind = CollectedKind::kUserAnnotation;
  step.name = "ProfilerStep#1";
  step.start_ns = 1'000'000'000;
  step.dur_ns = 1'000'000;
  step.thread = 1;
  t.events.push_back(step);
  const int64_t s = step.start_ns;
  t.events.push_back(
      Op("aten::conv2d", s + 1000, s + 2000, Conv2d({1, 8, 9, 9}, {8, 8, 3, 3}, 1, 1, 1, 1)));
  t.events.push_back(Op("aten::_convolution", s + 3000, s + 4000, under));
  t.events.push_back(Op("aten::mkldnn_convolution", s + 3100, s + 3900));
  t.events.push_back(Op("aten::lstm", s + 5000, s + 6000));
  AttributeFlops(t);
  test::TempDir dir("flops");
  auto data = engine::ExportChromeTraceAndData(t, dir.path() + "/trace.json", {});
  ASSERT_TRUE(data.ok()) << data.status();
  const Profile p = AnalyseTrace(*std::move(data));
  ASSERT_TRUE(p.flops_per_step.has_value());
  EXPECT_EQ(*p.flops_per_step, 2.0 * 81 * 8 * 8 * 9);
  EXPECT_EQ(p.flops_uncounted_ops, (std::vector<std::string>{"aten::_convolution", "aten::lstm",
                                                             "aten::mkldnn_convolution"}));
  EXPECT_TRUE(FlopsAreLowerBound(p));
}

}  // namespace engine_side
}  // namespace
}  // namespace libreyolo
