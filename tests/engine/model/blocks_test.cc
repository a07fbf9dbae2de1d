// Shapes, state-dict key names and FLOPs of the YOLOv9 blocks and the DDetect head.
#include "server/engine/model/blocks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "server/engine/model/head.h"

namespace libreyolo::engine {
namespace {

using ::testing::ElementsAre;
using ::testing::IsSupersetOf;

class BlocksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    torch::set_num_threads(2);
    torch::manual_seed(7);
  }
  torch::NoGradGuard no_grad_;
  torch::Tensor x8_ = torch::randn({2, 8, 32, 32});
};

std::vector<std::string> Keys(const torch::nn::Module& m) {
  std::vector<std::string> keys;
  for (const auto& p : m.named_parameters()) keys.push_back(p.key());
  for (const auto& b : m.named_buffers()) keys.push_back(b.key());
  return keys;
}

std::vector<int64_t> Shape(const torch::Tensor& t) { return t.sizes().vec(); }

TEST_F(BlocksTest, ConvIsConvBnSiLUWithYoloBatchNorm) {
  Conv conv(8, 16, 3, 2);
  EXPECT_THAT(Shape(conv(x8_)), ElementsAre(2, 16, 16, 16));
  EXPECT_THAT(Keys(*conv), ElementsAre("conv.weight", "bn.weight", "bn.bias", "bn.running_mean",
                                       "bn.running_var", "bn.num_batches_tracked"));
  auto bn = std::dynamic_pointer_cast<torch::nn::BatchNorm2dImpl>(conv->named_children()["bn"]);
  ASSERT_NE(bn, nullptr);
  EXPECT_DOUBLE_EQ(bn->options.eps(), 1e-3);
  EXPECT_DOUBLE_EQ(bn->options.momentum().value(), 0.03);
  // FLOPs: 2 x (16 x 8 x 3 x 3) multiply-adds per output pixel, 16 x 16 pixels.
  EXPECT_DOUBLE_EQ(conv->Flops({32, 32}), 2.0 * 16 * 8 * 9 * 16 * 16);
  EXPECT_EQ(conv->Out({32, 32}).h, 16);
  EXPECT_EQ(conv->Out({31, 33}).w, 17);

  // Without activation the output keeps negative values SiLU would bound at -0.28.
  conv->eval();
  Conv linear(8, 16, 1, 1, 1, /*act=*/false);
  linear->eval();
  EXPECT_LT(linear(x8_).min().item<float>(), -0.3F);
  EXPECT_GT(conv(x8_).min().item<float>(), -0.3F);
}

TEST_F(BlocksTest, RepConvNSumsBothBranches) {
  RepConvN rep(8, 16);
  EXPECT_THAT(Shape(rep(x8_)), ElementsAre(2, 16, 32, 32));
  EXPECT_THAT(Keys(*rep), IsSupersetOf({"conv1.conv.weight", "conv2.conv.weight",
                                        "conv1.bn.running_var", "conv2.bn.weight"}));
  EXPECT_EQ(rep->named_parameters()["conv2.conv.weight"].size(2), 1);
}

TEST_F(BlocksTest, RepNBottleneckKeepsShape) {
  RepNBottleneck b(8);
  EXPECT_THAT(Shape(b(x8_)), ElementsAre(2, 8, 32, 32));
  EXPECT_THAT(Keys(*b), IsSupersetOf({"cv1.conv1.conv.weight", "cv2.conv.weight"}));
}

TEST_F(BlocksTest, RepNCSP) {
  RepNCSP csp(8, 16, 2);
  EXPECT_THAT(Shape(csp(x8_)), ElementsAre(2, 16, 32, 32));
  EXPECT_THAT(Keys(*csp), IsSupersetOf({"cv1.conv.weight", "cv2.conv.weight", "cv3.conv.weight",
                                        "m.0.cv1.conv1.conv.weight", "m.1.cv2.bn.bias"}));
}

TEST_F(BlocksTest, ELAN) {
  ELAN elan(8, 16, 8, 24);
  EXPECT_THAT(Shape(elan(x8_)), ElementsAre(2, 24, 32, 32));
  EXPECT_EQ(elan->named_parameters()["cv4.conv.weight"].size(1), 32);  // 16 + 2 x 8
  ELAN deeper(8, 16, 8, 24, 3);
  EXPECT_THAT(Shape(deeper(x8_)), ElementsAre(2, 24, 32, 32));
  EXPECT_THAT(Keys(*deeper), IsSupersetOf({"m.0.conv.weight", "m.1.conv.weight"}));
}

TEST_F(BlocksTest, RepNCSPELAN) {
  RepNCSPELAN elan(8, 16, 8, 24, 1);
  EXPECT_THAT(Shape(elan(x8_)), ElementsAre(2, 24, 32, 32));
  EXPECT_THAT(Keys(*elan),
              IsSupersetOf({"cv1.conv.weight", "cv2.0.cv1.conv.weight",
                            "cv2.0.m.0.cv1.conv2.conv.weight", "cv2.1.conv.weight",
                            "cv3.0.cv3.conv.weight", "cv3.1.bn.running_mean", "cv4.conv.weight"}));
  EXPECT_EQ(elan->named_parameters()["cv4.conv.weight"].size(1), 32);  // 16 + 2 x 8
}

TEST_F(BlocksTest, AConvHalvesTheMap) {
  AConv down(8, 16);
  EXPECT_THAT(Shape(down(x8_)), ElementsAre(2, 16, 16, 16));
  EXPECT_THAT(Keys(*down), IsSupersetOf({"cv.conv.weight"}));
  EXPECT_EQ(down->Out({32, 32}).h, 16);
  // The avg pool leaves 31 x 31, the stride-2 conv 16 x 16.
  EXPECT_DOUBLE_EQ(down->Flops({32, 32}), 2.0 * 16 * 8 * 9 * 16 * 16);
}

TEST_F(BlocksTest, ADownSplitsChannels) {
  ADown down(8, 16);
  EXPECT_THAT(Shape(down(x8_)), ElementsAre(2, 16, 16, 16));
  EXPECT_THAT(Keys(*down), IsSupersetOf({"cv1.conv.weight", "cv2.conv.weight"}));
  EXPECT_THAT(Shape(down->named_parameters()["cv1.conv.weight"]), ElementsAre(8, 4, 3, 3));
  EXPECT_THAT(Shape(down->named_parameters()["cv2.conv.weight"]), ElementsAre(8, 4, 1, 1));
  EXPECT_EQ(down->Out({32, 32}).w, 16);
}

TEST_F(BlocksTest, SPPELAN) {
  SPPELAN spp(8, 4, 12);
  EXPECT_THAT(Shape(spp(x8_)), ElementsAre(2, 12, 32, 32));
  EXPECT_THAT(Shape(spp->named_parameters()["cv5.conv.weight"]), ElementsAre(12, 16, 1, 1));
}

TEST_F(BlocksTest, Upsample2xRepeatsPixels) {
  torch::Tensor y = Upsample2x(x8_);
  EXPECT_THAT(Shape(y), ElementsAre(2, 8, 64, 64));
  EXPECT_TRUE(torch::equal(y.index({0, 0, 3, 5}), x8_.index({0, 0, 1, 2})));
}

TEST_F(BlocksTest, DDetectRawMapsAndKeys) {
  DDetect head(5, std::vector<int64_t>{16, 24, 32});
  std::vector<torch::Tensor> feats = {torch::randn({2, 16, 8, 8}), torch::randn({2, 24, 4, 4}),
                                      torch::randn({2, 32, 2, 2})};
  std::vector<torch::Tensor> raw = head(feats);
  ASSERT_EQ(raw.size(), 3U);
  EXPECT_THAT(Shape(raw[0]), ElementsAre(2, 64 + 5, 8, 8));
  EXPECT_THAT(Shape(raw[2]), ElementsAre(2, 64 + 5, 2, 2));
  // Box tower: width max(16/4 rounded to 4 groups, 64) = 64; class tower: max(16, min(5, 100)).
  auto params = head->named_parameters();
  EXPECT_THAT(Shape(params["cv2.0.0.conv.weight"]), ElementsAre(64, 16, 3, 3));
  EXPECT_THAT(Shape(params["cv2.1.1.conv.weight"]), ElementsAre(64, 16, 3, 3));
  EXPECT_THAT(Shape(params["cv2.2.2.weight"]), ElementsAre(64, 16, 1, 1));
  EXPECT_THAT(Shape(params["cv3.1.0.conv.weight"]), ElementsAre(16, 24, 3, 3));
  EXPECT_THAT(Shape(params["cv3.2.2.weight"]), ElementsAre(5, 16, 1, 1));
  EXPECT_FLOAT_EQ(params["cv2.0.2.bias"][0].item<float>(), 1.0F);
  EXPECT_FLOAT_EQ(params["cv3.0.2.bias"][0].item<float>(), -10.0F);
  EXPECT_EQ(head->named_buffers().find("dfl.project"), nullptr);  // non-persistent in Python
}

TEST_F(BlocksTest, DecodeOfUniformAndOneHotDistributions) {
  DDetect head(2, std::vector<int64_t>{16, 24, 32});
  // 64 x 64 input: levels of 8 x 8, 4 x 4 and 2 x 2 cells.
  std::vector<torch::Tensor> raw = {torch::zeros({1, 66, 8, 8}), torch::zeros({1, 66, 4, 4}),
                                    torch::zeros({1, 66, 2, 2})};
  // Anchor 9 = level 0 cell (row 1, col 1), centre (1.5, 1.5) cells = (12, 12) px: put all of
  // the left side's mass on bin 3 and of the bottom side's on bin 0.
  raw[0].index_put_({0, 3, 1, 1}, 100.0);
  raw[0].index_put_({0, 48, 1, 1}, 100.0);
  raw[0].index_put_({0, 65, 1, 1}, 2.0);
  torch::Tensor out = head->Decode(raw);
  EXPECT_THAT(Shape(out), ElementsAre(1, 4 + 2, 64 + 16 + 4));
  // Uniform logits: every side at the mean bin 7.5. Anchor 0 of level 0: centre 0.5 cells.
  EXPECT_FLOAT_EQ(out[0][0][0].item<float>(), (0.5F - 7.5F) * 8);
  EXPECT_FLOAT_EQ(out[0][3][0].item<float>(), (0.5F + 7.5F) * 8);
  EXPECT_FLOAT_EQ(out[0][4][0].item<float>(), 0.5F);
  // First anchor of level 2 (index 80), stride 32.
  EXPECT_FLOAT_EQ(out[0][2][80].item<float>(), (0.5F + 7.5F) * 32);
  EXPECT_NEAR(out[0][0][9].item<float>(), (1.5F - 3.0F) * 8, 1e-4);
  EXPECT_NEAR(out[0][1][9].item<float>(), (1.5F - 7.5F) * 8, 1e-4);
  EXPECT_NEAR(out[0][3][9].item<float>(), (1.5F + 0.0F) * 8, 1e-4);
  EXPECT_NEAR(out[0][5][9].item<float>(), 1.0F / (1.0F + std::exp(-2.0F)), 1e-6);
  // A second call with the same shapes reuses the grid and gives the same answer.
  EXPECT_TRUE(torch::equal(head->Decode(raw), out));
}

}  // namespace
}  // namespace libreyolo::engine
