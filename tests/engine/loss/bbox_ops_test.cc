#include "server/engine/loss/bbox_ops.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>

namespace libreyolo::engine {
namespace {

class BboxOpsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { at::set_num_threads(2); }
};

torch::Tensor Box(float x1, float y1, float x2, float y2) {
  return torch::tensor({x1, y1, x2, y2});
}

float Ciou(const torch::Tensor& a, const torch::Tensor& b) {
  return CompleteIou(a, b).item<float>();
}

TEST_F(BboxOpsTest, IdenticalBoxesGiveOne) {
  EXPECT_NEAR(Ciou(Box(0, 0, 2, 4), Box(0, 0, 2, 4)), 1.0, 1e-6);
  EXPECT_NEAR(Ciou(Box(10, 20, 30, 25), Box(10, 20, 30, 25)), 1.0, 1e-6);
}

TEST_F(BboxOpsTest, DisjointBoxesArePenalisedByCentreDistance) {
  // IoU 0; centres 2 apart, enclosing box 3 x 1: 0 - 4 / 10. Same aspect, so no v term.
  EXPECT_NEAR(Ciou(Box(0, 0, 1, 1), Box(2, 0, 3, 1)), -0.4, 1e-6);
}

TEST_F(BboxOpsTest, NestedConcentricBoxesGivePlainIou) {
  // 2x2 inside 4x4 with the same centre and aspect: IoU 4 / 16.
  EXPECT_NEAR(Ciou(Box(0, 0, 4, 4), Box(1, 1, 3, 3)), 0.25, 1e-6);
}

TEST_F(BboxOpsTest, AspectRatioTermByHand) {
  // IoU 1/2; centre distance^2 1/4 over diagonal^2 5; v = 4/pi^2 (atan 2 - atan 1)^2 = 0.041956,
  // alpha = v / (v + 1/2) = 0.077416: 0.5 - 0.05 - 0.003248 = 0.446752.
  EXPECT_NEAR(Ciou(Box(0, 0, 2, 1), Box(0, 0, 1, 1)), 0.4467518, 1e-6);
}

TEST_F(BboxOpsTest, BroadcastsAndPairwise) {
  const torch::Tensor a = torch::stack({Box(0, 0, 4, 4), Box(0, 0, 1, 1)}).unsqueeze(0);
  const torch::Tensor b =
      torch::stack({Box(1, 1, 3, 3), Box(2, 0, 3, 1), Box(0, 0, 4, 4)}).unsqueeze(0);
  const torch::Tensor m = PairwiseCompleteIou(a, b);
  ASSERT_EQ(m.sizes(), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_NEAR(m[0][0][0].item<float>(), 0.25, 1e-6);
  EXPECT_NEAR(m[0][0][2].item<float>(), 1.0, 1e-6);
  EXPECT_NEAR(m[0][1][1].item<float>(), -0.4, 1e-6);
  EXPECT_NEAR(m[0][1][2].item<float>(), Ciou(Box(0, 0, 1, 1), Box(0, 0, 4, 4)), 1e-7);
}

TEST_F(BboxOpsTest, GradientFlowsThroughTheBoxes) {
  const torch::Tensor a = Box(0, 0, 2, 1).requires_grad_(true);
  CompleteIou(a, Box(0.5, 0, 1.5, 1.5)).backward();
  ASSERT_TRUE(a.grad().defined());
  EXPECT_TRUE(torch::isfinite(a.grad()).all().item<bool>());
  EXPECT_GT(a.grad().abs().sum().item<float>(), 0.0f);
}

TEST_F(BboxOpsTest, DistAndBoxRoundTrip) {
  const torch::Tensor points = torch::tensor({{4.0f, 4.0f}, {12.0f, 4.0f}});
  const torch::Tensor ltrb = torch::tensor({{1.0f, 2.0f, 3.0f, 4.0f}, {0.5f, 0.0f, 2.0f, 1.0f}});
  const torch::Tensor boxes = Dist2Bbox(ltrb, points);
  EXPECT_TRUE(torch::allclose(
      boxes, torch::tensor({{3.0f, 2.0f, 7.0f, 8.0f}, {11.5f, 4.0f, 14.0f, 5.0f}})));
  EXPECT_TRUE(torch::allclose(Bbox2Dist(boxes, points), ltrb));
  // Batched boxes against shared points.
  EXPECT_EQ(Dist2Bbox(ltrb.expand({3, 2, 4}), points).sizes(), (std::vector<int64_t>{3, 2, 4}));
}

TEST_F(BboxOpsTest, AnchorGridIsLevelThenRowMajorAtCellCentres) {
  const AnchorGrid g = MakeAnchorGrid(64, 32, {8, 16, 32});
  EXPECT_EQ(g.level_sizes, (std::vector<int64_t>{32, 8, 2}));
  ASSERT_EQ(g.points.sizes(), (std::vector<int64_t>{42, 2}));
  ASSERT_EQ(g.strides.sizes(), (std::vector<int64_t>{42}));
  EXPECT_TRUE(torch::equal(g.points[0], torch::tensor({4.0f, 4.0f})));
  EXPECT_TRUE(torch::equal(g.points[1], torch::tensor({12.0f, 4.0f})));
  EXPECT_TRUE(torch::equal(g.points[8], torch::tensor({4.0f, 12.0f})));  // second row
  EXPECT_TRUE(torch::equal(g.points[32], torch::tensor({8.0f, 8.0f})));  // stride 16
  EXPECT_TRUE(torch::equal(g.points[41], torch::tensor({48.0f, 16.0f})));
  EXPECT_EQ(g.strides[31].item<float>(), 8.0f);
  EXPECT_EQ(g.strides[32].item<float>(), 16.0f);
  EXPECT_EQ(g.strides[41].item<float>(), 32.0f);
}

}  // namespace
}  // namespace libreyolo::engine
