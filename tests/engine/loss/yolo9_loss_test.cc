#include "server/engine/loss/yolo9_loss.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace libreyolo::engine {
namespace {

class Yolo9LossTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { at::set_num_threads(2); }
};

// Head-shaped maps: DFL logits ~ N(0, 4), class logits ~ N(-5, 4) (mostly background, as a
// trained head), one map per stride.
std::vector<torch::Tensor> RandomRaw(int64_t batch, int64_t nc, int64_t imgsz,
                                     bool requires_grad = false) {
  std::vector<torch::Tensor> raw;
  for (const int64_t s : {8, 16, 32}) {
    torch::Tensor p = torch::randn({batch, 64 + nc, imgsz / s, imgsz / s}) * 2.0;
    p.narrow(1, 64, nc).sub_(5.0);
    raw.push_back(p.requires_grad_(requires_grad));
  }
  return raw;
}

// The fixture's targets: (class, x1, y1, x2, y2) normalised, class -1 padding.
torch::Tensor FixtureTargets() {
  return torch::tensor({0.0f,  .1f,  .1f,  .4f,  .5f,  17.0f, .5f,  .55f, .9f,  .95f,
                        -1.0f, 0.0f, 0.0f, 0.0f, 0.0f, 2.0f,  .2f,  .3f,  .35f, .45f,
                        2.0f,  .6f,  .1f,  .95f, .4f,  56.0f, .05f, .6f,  .3f,  .98f})
      .view({2, 3, 5});
}

double Rel(const torch::Tensor& got, double want) {
  return std::abs(got.item<double>() - want) / std::abs(want);
}

TEST_F(Yolo9LossTest, MatchesTheReferenceOnSeededMaps) {
  // Expected values: a transcription of LibreYOLO's YOLO9Loss evaluated by Python torch 1.13 on
  // the same maps (torch.manual_seed(7); randn per level as RandomRaw) and the same targets.
  torch::manual_seed(7);
  const auto raw = RandomRaw(2, 80, 320);
  const Yolo9Loss l = ComputeYolo9Loss(raw, FixtureTargets(), 320);
  EXPECT_LT(Rel(l.box, 2.71524429), 1e-4);
  EXPECT_LT(Rel(l.dfl, 6.1672039), 1e-4);
  EXPECT_LT(Rel(l.cls, 520.381653), 1e-4);
  EXPECT_LT(Rel(l.total, 529.264099), 1e-4);
  EXPECT_EQ(l.num_foreground.item<int64_t>(), 50);
}

TEST_F(Yolo9LossTest, FiniteAndPositiveOnRandomMaps) {
  torch::manual_seed(1);
  const auto raw = RandomRaw(2, 3, 64, /*requires_grad=*/true);
  const torch::Tensor targets =
      torch::tensor({0.0f, .1f, .1f, .6f, .5f, 2.0f,  .5f,  .4f,  .9f,  .9f,
                     1.0f, .3f, .3f, .7f, .8f, -1.0f, 0.0f, 0.0f, 0.0f, 0.0f})
          .view({2, 2, 5});
  const Yolo9Loss l = ComputeYolo9Loss(raw, targets, 64, {.num_classes = 3});
  for (const torch::Tensor& part : {l.total, l.box, l.dfl, l.cls}) {
    EXPECT_EQ(part.dim(), 0);
    EXPECT_TRUE(std::isfinite(part.item<double>()));
    EXPECT_GT(part.item<double>(), 0.0);
  }
  EXPECT_NEAR(l.total.item<double>(),
              l.box.item<double>() + l.dfl.item<double>() + l.cls.item<double>(), 1e-4);
  ASSERT_TRUE(l.total.requires_grad());
  l.total.backward();
  for (const auto& p : raw) EXPECT_TRUE(torch::isfinite(p.grad()).all().item<bool>());
}

TEST_F(Yolo9LossTest, DecreasesWhenTheMapsAreOptimised) {
  torch::manual_seed(2);
  const auto raw = RandomRaw(1, 3, 64, /*requires_grad=*/true);
  const torch::Tensor targets =
      torch::tensor({0.0f, .1f, .1f, .6f, .5f, 2.0f, .5f, .4f, .9f, .9f}).view({1, 2, 5});
  const Yolo9LossOptions o{.num_classes = 3};
  std::vector<double> totals, boxes;
  for (int step = 0; step < 20; ++step) {
    const Yolo9Loss l = ComputeYolo9Loss(raw, targets, 64, o);
    totals.push_back(l.total.item<double>());
    boxes.push_back(l.box.item<double>() + l.dfl.item<double>());
    l.total.backward();
    at::NoGradGuard no_grad;
    for (const auto& p : raw) {
      p.sub_(p.grad() * 1.0);
      p.grad().zero_();
    }
  }
  for (size_t i = 1; i < totals.size(); ++i) EXPECT_LT(totals[i], totals[i - 1]) << "step " << i;
  EXPECT_LT(totals.back(), 0.6 * totals.front());
  EXPECT_LT(boxes.back(), 0.9 * boxes.front());
}

TEST_F(Yolo9LossTest, PaddingRowsAreIgnored) {
  torch::manual_seed(3);
  const auto raw = RandomRaw(1, 3, 64);
  const Yolo9LossOptions o{.num_classes = 3};
  const torch::Tensor real = torch::tensor({1.0f, .2f, .2f, .7f, .6f}).view({1, 1, 5});
  // Padding rows with and without a box: neither may take an anchor.
  const torch::Tensor padded = torch::tensor({-1.0f, 0.0f, 0.0f, 0.0f, 0.0f, 1.0f, .2f, .2f, .7f,
                                              .6f, -1.0f, .1f, .1f, .5f, .5f})
                                   .view({1, 3, 5});
  const Yolo9Loss a = ComputeYolo9Loss(raw, real, 64, o);
  const Yolo9Loss b = ComputeYolo9Loss(raw, padded, 64, o);
  EXPECT_DOUBLE_EQ(a.box.item<double>(), b.box.item<double>());
  EXPECT_DOUBLE_EQ(a.dfl.item<double>(), b.dfl.item<double>());
  EXPECT_DOUBLE_EQ(a.cls.item<double>(), b.cls.item<double>());
}

TEST_F(Yolo9LossTest, NoTargetsGivesOnlyBackgroundClassLoss) {
  torch::manual_seed(4);
  const auto raw = RandomRaw(1, 3, 64, /*requires_grad=*/true);
  const Yolo9LossOptions o{.num_classes = 3};
  for (const torch::Tensor& targets :
       {torch::tensor({-1.0f, 0.0f, 0.0f, 0.0f, 0.0f, -1.0f, 0.0f, 0.0f, 0.0f, 0.0f})
            .view({1, 2, 5}),
        torch::zeros({1, 0, 5})}) {
    const Yolo9Loss l = ComputeYolo9Loss(raw, targets, 64, o);
    EXPECT_EQ(l.box.item<double>(), 0.0);
    EXPECT_EQ(l.dfl.item<double>(), 0.0);
    EXPECT_EQ(l.num_foreground.item<int64_t>(), 0);
    // Every class logit is pushed towards 0 and normalised by 1 (no positives).
    const torch::Tensor bce =
        torch::cat({raw[0].narrow(1, 64, 3).flatten(), raw[1].narrow(1, 64, 3).flatten(),
                    raw[2].narrow(1, 64, 3).flatten()})
            .exp()
            .log1p()
            .sum();
    EXPECT_NEAR(l.cls.item<double>(), 0.5 * bce.item<double>(), 1e-3 * bce.item<double>());
    l.total.backward();
    EXPECT_TRUE(raw[0].grad().narrow(1, 0, 64).abs().sum().item<double>() == 0.0);
    for (const auto& p : raw) p.grad().zero_();
  }
}

TEST_F(Yolo9LossTest, GainsScaleOnlyTheirPart) {
  torch::manual_seed(5);
  const auto raw = RandomRaw(1, 3, 64);
  const torch::Tensor targets = torch::tensor({0.0f, .1f, .1f, .6f, .5f}).view({1, 1, 5});
  const Yolo9Loss a = ComputeYolo9Loss(raw, targets, 64, {.num_classes = 3});
  const Yolo9Loss b = ComputeYolo9Loss(
      raw, targets, 64, {.num_classes = 3, .box_gain = 1.0, .dfl_gain = 3.0, .cls_gain = 0.0});
  EXPECT_NEAR(b.box.item<double>() * 7.5, a.box.item<double>(), 1e-5);
  EXPECT_NEAR(b.dfl.item<double>(), 2.0 * a.dfl.item<double>(), 1e-5);
  EXPECT_EQ(b.cls.item<double>(), 0.0);
}

TEST_F(Yolo9LossTest, RectangularInput) {
  torch::manual_seed(6);
  std::vector<torch::Tensor> raw;
  for (const int64_t s : {8, 16, 32}) raw.push_back(torch::randn({1, 67, 32 / s, 96 / s}));
  const torch::Tensor targets = torch::tensor({1.0f, .1f, .2f, .4f, .9f}).view({1, 1, 5});
  const Yolo9Loss l = ComputeYolo9Loss(raw, targets, 96, 32, {.num_classes = 3});
  EXPECT_GT(l.num_foreground.item<int64_t>(), 0);
  EXPECT_TRUE(std::isfinite(l.total.item<double>()));
}

TEST_F(Yolo9LossTest, RejectsMapsThatDoNotFitTheOptions) {
  const torch::Tensor targets = torch::zeros({1, 0, 5});
  const auto raw = RandomRaw(1, 3, 64);
  EXPECT_THROW(ComputeYolo9Loss(raw, targets, 64, {.num_classes = 4}), c10::Error);
  EXPECT_THROW(ComputeYolo9Loss(raw, targets, 128, {.num_classes = 3}), c10::Error);
  EXPECT_THROW(ComputeYolo9Loss({raw[0], raw[1]}, targets, 64, {.num_classes = 3}), c10::Error);
  EXPECT_THROW(ComputeYolo9Loss(raw, torch::zeros({1, 2, 4}), 64, {.num_classes = 3}), c10::Error);
}

}  // namespace
}  // namespace libreyolo::engine
