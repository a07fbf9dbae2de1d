#include "server/engine/loss/tal_assigner.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "server/engine/loss/bbox_ops.h"

namespace libreyolo::engine {
namespace {

// One 4x4 level at stride 8 over a 32x32 input: anchor r * 4 + c sits at (4 + 8c, 4 + 8r).
class TalAssignerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { at::set_num_threads(2); }

  static constexpr int64_t kAnchors = 16;

  TalAssignerTest() {
    // Default prediction: a 1x1 box in the corner that aligns with none of the ground truths.
    boxes_ = torch::tensor({0.0f, 0.0f, 1.0f, 1.0f}).repeat({1, kAnchors, 1});
    logits_ = torch::zeros({1, kAnchors, 2});
  }

  void SetBox(int64_t anchor, float x1, float y1, float x2, float y2) {
    boxes_[0][anchor] = torch::tensor({x1, y1, x2, y2});
  }

  TalAssignment Assign(const std::vector<std::vector<float>>& rows, int64_t topk = 2,
                       int64_t width = 32, int64_t height = 32) {
    std::vector<torch::Tensor> t;
    for (const auto& r : rows) t.push_back(torch::tensor(r));
    const torch::Tensor targets = torch::stack(t).unsqueeze(0);
    const TaskAlignedAssigner assigner(MakeAnchorGrid(width, height, {8}),
                                       {.num_classes = 2, .reg_max = 16, .topk = topk});
    return assigner.Assign(logits_, boxes_, targets);
  }

  static std::vector<int64_t> Foreground(const TalAssignment& a) {
    std::vector<int64_t> out;
    for (int64_t i = 0; i < a.fg.size(1); ++i) {
      if (a.fg[0][i].item<bool>()) out.push_back(i);
    }
    return out;
  }

  torch::Tensor boxes_;
  torch::Tensor logits_;
};

TEST_F(TalAssignerTest, TopKByAlignmentAndSoftTargets) {
  // Ground truth 0 (class 1) covers anchors 0, 1, 4, 5; ground truth 1 (class 0) 10, 11, 14, 15.
  SetBox(5, 0, 0, 16, 16);     // exact
  SetBox(1, 0, 0, 16, 12);     // good
  SetBox(0, 0, 0, 16, 8);      // fair: loses the top-2 cut
  SetBox(4, 0, 0, 16, 4);      // poor
  SetBox(10, 16, 16, 32, 32);  // exact; 11, 14, 15 keep CIoU <= 0 and are never matches
  for (int64_t i : {11, 14, 15}) SetBox(i, 28, 28, 32, 32);
  logits_[0][1][1] = 2.0f;   // anchor 1 is confident in class 1 ...
  logits_[0][1][0] = -3.0f;  // ... and its class-0 score must not be the one used
  // A padding row is ignored even when its box is real.
  const TalAssignment a = Assign({{1, 0, 0, 16, 16}, {0, 16, 16, 32, 32}, {-1, 0, 0, 16, 16}});

  EXPECT_EQ(Foreground(a), (std::vector<int64_t>{1, 5, 10}));
  EXPECT_EQ(a.gt_index[0][1].item<int64_t>(), 0);
  EXPECT_EQ(a.gt_index[0][5].item<int64_t>(), 0);
  EXPECT_EQ(a.gt_index[0][10].item<int64_t>(), 1);
  EXPECT_TRUE(torch::equal(a.boxes[0][10], torch::tensor({16.0f, 16.0f, 32.0f, 32.0f})));

  // Best anchor of each ground truth scores that ground truth's best IoU (1 here); the others
  // their alignment relative to it: (ciou_1 / 1)^6 * sqrt(sigmoid(2) / sigmoid(0)).
  const float c1 =
      CompleteIou(boxes_[0][1], torch::tensor({0.0f, 0.0f, 16.0f, 16.0f})).item<float>();
  const float expected_1 = std::pow(c1, 6.0f) * std::sqrt((1.0f / (1.0f + std::exp(-2.0f))) / 0.5f);
  EXPECT_NEAR(a.scores[0][5][1].item<float>(), 1.0, 1e-5);
  EXPECT_NEAR(a.scores[0][1][1].item<float>(), expected_1, 1e-5);
  EXPECT_NEAR(a.scores[0][10][0].item<float>(), 1.0, 1e-5);
  EXPECT_EQ(a.scores[0][5][0].item<float>(), 0.0f);
  EXPECT_EQ(a.scores[0][10][1].item<float>(), 0.0f);
  EXPECT_NEAR(a.scores.sum().item<float>(), 2.0f + expected_1, 1e-5);
}

TEST_F(TalAssignerTest, SharedAnchorGoesToTheHigherIou) {
  // Anchor 5 is inside both boxes: exact for ground truth 0, CIoU 0.168 for ground truth 1.
  SetBox(5, 0, 0, 16, 16);
  SetBox(6, 6, 6, 22, 22);
  const TalAssignment a = Assign({{1, 0, 0, 16, 16}, {0, 6, 6, 22, 22}});
  EXPECT_EQ(Foreground(a), (std::vector<int64_t>{5, 6}));
  EXPECT_EQ(a.gt_index[0][5].item<int64_t>(), 0);
  EXPECT_EQ(a.gt_index[0][6].item<int64_t>(), 1);
  EXPECT_NEAR(a.scores[0][5][1].item<float>(), 1.0, 1e-5);
  EXPECT_NEAR(a.scores[0][6][0].item<float>(), 1.0, 1e-5);
}

TEST_F(TalAssignerTest, GroundTruthWithNoAnchorInsideTakesItsBestAligned) {
  // A 2x2 box between anchor centres; anchor 5's prediction (outside it) overlaps it best.
  SetBox(5, 12, 12, 16, 16);
  const TalAssignment a = Assign({{0, 13, 13, 15, 15}});
  EXPECT_EQ(Foreground(a), (std::vector<int64_t>{5}));
  EXPECT_NEAR(a.scores[0][5][0].item<float>(), 0.25, 1e-5);  // its IoU: 4 / 16
}

TEST_F(TalAssignerTest, AnchorsMustReachEverySideWithinTheDflRange) {
  // One row of 32 anchors (x = 4, 12, ..., 252). A 200 px wide box is expressible only from
  // anchors whose both horizontal sides are <= 14.99 strides away: x in [80.08, 119.92].
  boxes_ = torch::tensor({0.0f, 0.0f, 200.0f, 8.0f}).repeat({1, 32, 1});
  logits_ = torch::zeros({1, 32, 2});
  const TalAssignment a = Assign({{0, 0, 0, 200, 8}}, /*topk=*/10, /*width=*/256, /*height=*/8);
  EXPECT_EQ(Foreground(a), (std::vector<int64_t>{10, 11, 12, 13, 14}));
}

TEST_F(TalAssignerTest, PaddingOnlyAndEmptyTargetsAssignNothing) {
  SetBox(5, 0, 0, 16, 16);
  const TalAssignment padded = Assign({{-1, 0, 0, 16, 16}, {-1, 0, 0, 0, 0}});
  EXPECT_FALSE(padded.fg.any().item<bool>());
  EXPECT_EQ(padded.scores.abs().sum().item<float>(), 0.0f);

  const TaskAlignedAssigner assigner(MakeAnchorGrid(32, 32, {8}), {.num_classes = 2});
  const TalAssignment empty = assigner.Assign(logits_, boxes_, torch::zeros({1, 0, 5}));
  EXPECT_FALSE(empty.fg.any().item<bool>());
  EXPECT_EQ(empty.scores.sizes(), logits_.sizes());
  EXPECT_EQ(empty.boxes.sizes(), boxes_.sizes());
}

}  // namespace
}  // namespace libreyolo::engine
