#include "server/engine/data/synthetic.h"

#include <gtest/gtest.h>

#include "server/engine/data/dataset.h"

namespace libreyolo::engine {
namespace {

TEST(SyntheticTest, DeterministicPerSeedAndIndex) {
  const Sample a = MakeSyntheticSample(42, 3, 80);
  const Sample b = MakeSyntheticSample(42, 3, 80);
  ASSERT_EQ(a.image.size(), b.image.size());
  EXPECT_EQ(cv::norm(a.image, b.image, cv::NORM_INF), 0.0);
  ASSERT_EQ(a.boxes.size(), b.boxes.size());
  for (size_t i = 0; i < a.boxes.size(); ++i) {
    EXPECT_EQ(a.boxes[i].cls, b.boxes[i].cls);
    EXPECT_EQ(a.boxes[i].x1, b.boxes[i].x1);
    EXPECT_EQ(a.boxes[i].y2, b.boxes[i].y2);
  }
  EXPECT_EQ(a.path, "synthetic:3");
  const Sample other = MakeSyntheticSample(42, 4, 80);
  const Sample reseeded = MakeSyntheticSample(43, 3, 80);
  EXPECT_TRUE(other.image.size() != a.image.size() ||
              cv::norm(other.image, a.image, cv::NORM_INF) > 0);
  EXPECT_TRUE(reseeded.image.size() != a.image.size() ||
              cv::norm(reseeded.image, a.image, cv::NORM_INF) > 0);
}

TEST(SyntheticTest, LabelsMatchThePixels) {
  for (int64_t i = 0; i < 40; ++i) {
    const Sample s = MakeSyntheticSample(kDefaultSyntheticSeed, i, 5);
    EXPECT_EQ(s.image.type(), CV_8UC3);
    EXPECT_EQ(s.image.cols % 8, 0);
    EXPECT_GE(s.image.cols, 320);
    EXPECT_LE(s.image.rows, 800);
    ASSERT_GE(s.boxes.size(), 1u);
    ASSERT_LE(s.boxes.size(), 8u);
    for (const Box& b : s.boxes) {
      EXPECT_GE(b.cls, 0);
      EXPECT_LT(b.cls, 5);
      EXPECT_GE(b.x1, 0);
      EXPECT_LE(b.x2, s.image.cols);
      EXPECT_LE(b.y2, s.image.rows);
      EXPECT_GT(b.width(), 0);
    }
    // The last rectangle drawn is on top: its box is one flat colour.
    const Box& top = s.boxes.back();
    const cv::Rect r(static_cast<int>(top.x1), static_cast<int>(top.y1),
                     static_cast<int>(top.width()), static_cast<int>(top.height()));
    cv::Scalar mean, stddev;
    cv::meanStdDev(s.image(r), mean, stddev);
    EXPECT_LT(stddev[0] + stddev[1] + stddev[2], 1e-3) << "image " << i;  // float rounding
  }
}

TEST(SyntheticTest, DatasetSplitsDiffer) {
  DatasetSpec spec;
  spec.synthetic_count = 4;
  spec.names.assign(80, "x");
  auto train = OpenDataset(spec, Split::kTrain);
  auto val = OpenDataset(spec, Split::kVal);
  ASSERT_TRUE(train.ok() && val.ok());
  auto a = (*train)->Load(0);
  auto b = (*val)->Load(0);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(a->image.size() != b->image.size() || cv::norm(a->image, b->image, cv::NORM_INF) > 0);
  EXPECT_EQ((*train)->Load(4).status().code(), absl::StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace libreyolo::engine
