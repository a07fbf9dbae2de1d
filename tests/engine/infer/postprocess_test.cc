// NMS against a brute-force reference, and the postprocess rules (multi-label, class-aware,
// confidence threshold, max-det).
#include "server/engine/infer/postprocess.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <set>

namespace libreyolo::engine {
namespace {

double IoU(const float* a, const float* b) {
  const double w = std::min(a[2], b[2]) - std::max(a[0], b[0]);
  const double h = std::min(a[3], b[3]) - std::max(a[1], b[1]);
  if (w <= 0 || h <= 0) return 0;
  const double inter = w * h;
  const double area_a = static_cast<double>((a[2] - a[0]) * (a[3] - a[1]));
  const double area_b = static_cast<double>((b[2] - b[0]) * (b[3] - b[1]));
  return inter / (area_a + area_b - inter);
}

// The textbook definition: repeatedly take the best remaining box, drop those overlapping it.
std::vector<int64_t> BruteForceNms(const torch::Tensor& boxes, const torch::Tensor& scores,
                                   double thr) {
  const torch::Tensor b = boxes.contiguous();
  const float* bp = b.data_ptr<float>();
  std::vector<int64_t> alive(static_cast<size_t>(boxes.size(0)));
  for (size_t i = 0; i < alive.size(); ++i) alive[i] = static_cast<int64_t>(i);
  std::vector<int64_t> keep;
  while (!alive.empty()) {
    auto best = std::max_element(alive.begin(), alive.end(), [&](int64_t x, int64_t y) {
      return scores[x].item<float>() < scores[y].item<float>();
    });
    const int64_t k = *best;
    keep.push_back(k);
    std::vector<int64_t> next;
    for (int64_t j : alive) {
      if (j != k && IoU(bp + 4 * k, bp + 4 * j) <= thr) next.push_back(j);
    }
    alive = next;
  }
  return keep;
}

TEST(Nms, MatchesBruteForceOnRandomBoxes) {
  torch::manual_seed(7);
  for (int trial = 0; trial < 20; ++trial) {
    const int64_t n = 200;
    const torch::Tensor xy = torch::rand({n, 2}) * 100;
    const torch::Tensor wh = torch::rand({n, 2}) * 40 + 1;
    const torch::Tensor boxes = torch::cat({xy, xy + wh}, 1);
    const torch::Tensor scores = torch::rand({n});
    for (double thr : {0.3, 0.45, 0.7}) {
      const torch::Tensor kept = Nms(boxes, scores, thr);
      const std::vector<int64_t> got(kept.data_ptr<int64_t>(),
                                     kept.data_ptr<int64_t>() + kept.size(0));
      EXPECT_EQ(got, BruteForceNms(boxes, scores, thr)) << "trial " << trial << " thr " << thr;
    }
  }
}

TEST(Nms, EmptyInput) {
  EXPECT_EQ(Nms(torch::empty({0, 4}), torch::empty({0}), 0.5).size(0), 0);
}

// predictions [1, 4 + 3, A] from rows of (box, per-class scores).
torch::Tensor Predictions(const std::vector<std::vector<float>>& rows) {
  std::vector<float> flat;
  for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  return torch::tensor(flat).view({1, static_cast<int64_t>(rows.size()), 7}).transpose(1, 2);
}

TEST(Postprocess, ClassAwareMultiLabelThresholdAndMaxDet) {
  const torch::Tensor pred = Predictions({
      {0, 0, 10, 10, 0.9f, 0.8f, 0.0f},  // two labels above conf: both candidates
      {1, 1, 11, 11, 0.7f, 0.0f, 0.0f},  // overlaps the first, same class 0: suppressed
      {50, 50, 60, 60, 0.1f, 0.0f, 0.3f},  // class 2 only
      {80, 80, 90, 90, 0.2f, 0.2f, 0.2f},  // nothing above 0.25
  });
  PostprocessOptions o;
  auto dets = Postprocess(pred, o);
  ASSERT_EQ(dets.size(), 1u);
  ASSERT_EQ(dets[0].scores.size(0), 3);
  EXPECT_FLOAT_EQ(dets[0].scores[0].item<float>(), 0.9f);
  EXPECT_EQ(dets[0].classes[0].item<int64_t>(), 0);
  EXPECT_EQ(dets[0].classes[1].item<int64_t>(), 1);  // same box, other class: kept
  EXPECT_EQ(dets[0].classes[2].item<int64_t>(), 2);
  EXPECT_FLOAT_EQ(dets[0].boxes[2][0].item<float>(), 50);  // boxes come back unshifted
  o.max_det = 2;
  dets = Postprocess(pred, o);
  EXPECT_EQ(dets[0].scores.size(0), 2);
  o.conf = 0.95;
  dets = Postprocess(pred, o);
  EXPECT_EQ(dets[0].scores.size(0), 0);
}

// FCOS's per-level cap (the backend's _parse_fcos): each level's best `cap` by score when it has
// more, its own order otherwise, the levels in order; a level id outside 0..groups-1 is dropped.
TEST(CapPerGroup, KeepsEachLevelsBestInLevelOrderAndDropsOthers) {
  Candidates c;
  c.scores = torch::tensor({0.5f, 0.9f, 0.7f, 0.8f, 0.6f, 0.95f});
  c.boxes = torch::arange(24, torch::kFloat).view({6, 4});
  c.classes = torch::tensor({0, 1, 2, 3, 4, 5}, torch::kLong);
  c.anchors = torch::tensor({10, 11, 12, 13, 14, 15}, torch::kLong);
  const torch::Tensor level = torch::tensor({1, 0, 1, 1, 0, 7}, torch::kLong);
  const Candidates k = CapPerGroup(c, level, 2, 2);
  // Level 0 (anchors 11, 14: two, kept in order), then level 1's best two (13: 0.8, 12: 0.7);
  // anchor 15 (level 7) is gone.
  ASSERT_EQ(k.scores.size(0), 4);
  EXPECT_EQ(std::vector<int64_t>(k.anchors.data_ptr<int64_t>(), k.anchors.data_ptr<int64_t>() + 4),
            (std::vector<int64_t>{11, 14, 13, 12}));
  EXPECT_FLOAT_EQ(k.boxes[2][0].item<float>(), 12);  // candidate 3's box moved with it
  EXPECT_EQ(k.classes[3].item<int64_t>(), 2);
}

}  // namespace
}  // namespace libreyolo::engine
