#include "server/engine/data/transforms.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <opencv2/imgproc.hpp>
#include <vector>

#include "server/engine/data/pipeline.h"
#include "tests/engine/data/test_util.h"

namespace libreyolo::engine {
namespace {

using testing::ClassColor;

struct Rect {
  int cls, x, y, w, h;
};

// A grey image with filled rectangles in their class colours; boxes are exactly the pixels.
Sample ColourSample(int width, int height, const std::vector<Rect>& rects) {
  Sample s;
  s.image = cv::Mat(height, width, CV_8UC3, cv::Scalar(128, 128, 128));
  for (const Rect& r : rects) {
    cv::rectangle(s.image, cv::Rect(r.x, r.y, r.w, r.h), ClassColor(r.cls), cv::FILLED);
    s.boxes.push_back(Box{r.cls, static_cast<float>(r.x), static_cast<float>(r.y),
                          static_cast<float>(r.x + r.w), static_cast<float>(r.y + r.h)});
  }
  return s;
}

// Every pixel of a class colour lies inside some box of that class (1.5 px slack for
// interpolation), and every box of reasonable size holds pixels of its colour.
void ExpectBoxesCoverColours(const Sample& s, int num_classes) {
  const float w = static_cast<float>(s.image.cols), h = static_cast<float>(s.image.rows);
  for (const Box& b : s.boxes) {
    EXPECT_GE(b.x1, 0.0f);
    EXPECT_GE(b.y1, 0.0f);
    EXPECT_LE(b.x2, w);
    EXPECT_LE(b.y2, h);
    EXPECT_GT(b.width(), 0.0f);
    EXPECT_GT(b.height(), 0.0f);
  }
  for (int cls = 0; cls < num_classes; ++cls) {
    const cv::Scalar c = ClassColor(cls);
    cv::Mat mask;
    cv::inRange(s.image, c - cv::Scalar::all(8), c + cv::Scalar::all(8), mask);
    for (int y = 0; y < mask.rows; ++y) {
      for (int x = 0; x < mask.cols; ++x) {
        if (!mask.at<uchar>(y, x)) continue;
        bool inside = false;
        const float px = static_cast<float>(x) + 0.5f, py = static_cast<float>(y) + 0.5f;
        for (const Box& b : s.boxes) {
          inside |= b.cls == cls && px >= b.x1 - 1.5f && px <= b.x2 + 1.5f && py >= b.y1 - 1.5f &&
                    py <= b.y2 + 1.5f;
        }
        ASSERT_TRUE(inside) << "class " << cls << " pixel (" << x << ", " << y
                            << ") outside every box of its class";
      }
    }
    for (const Box& b : s.boxes) {
      if (b.cls != cls || b.width() < 4 || b.height() < 4) continue;
      const cv::Rect r(static_cast<int>(b.x1), static_cast<int>(b.y1), static_cast<int>(b.width()),
                       static_cast<int>(b.height()));
      EXPECT_GT(cv::countNonZero(mask(r & cv::Rect(0, 0, mask.cols, mask.rows))), 0)
          << "box of class " << cls << " holds none of its colour";
    }
  }
}

TEST(LetterboxTest, GeometryMatchesTheReference) {
  struct Case {
    int w, h, size, new_w, new_h;
    double scale;
  };
  for (const Case& c :
       {Case{810, 1080, 640, 480, 640, 640.0 / 1080}, Case{640, 480, 640, 640, 480, 1.0},
        Case{100, 50, 640, 640, 320, 6.4}, Case{333, 500, 320, 213, 320, 0.64},
        Case{1920, 1080, 640, 640, 360, 1.0 / 3}, Case{500, 375, 416, 416, 312, 0.832}}) {
    const LetterboxGeometry g = ComputeLetterbox(c.w, c.h, c.size);
    EXPECT_DOUBLE_EQ(g.scale, c.scale) << c.w << "x" << c.h;
    EXPECT_EQ(g.width, c.new_w) << c.w << "x" << c.h;
    EXPECT_EQ(g.height, c.new_h) << c.w << "x" << c.h;
    EXPECT_EQ(g.pad_left, 0);
    EXPECT_EQ(g.pad_top, 0);
    EXPECT_EQ(g.canvas, c.size);
  }
}

TEST(LetterboxTest, TopLeftPlacementAndPad114) {
  cv::Mat image(480, 640, CV_8UC3);
  cv::randu(image, 0, 256);
  LetterboxGeometry g;
  const cv::Mat canvas = LetterboxImage(image, 640, &g);
  ASSERT_EQ(canvas.rows, 640);
  ASSERT_EQ(canvas.cols, 640);
  EXPECT_EQ(cv::norm(canvas(cv::Rect(0, 0, 640, 480)), image, cv::NORM_INF), 0.0);
  const cv::Mat pad = canvas(cv::Rect(0, 480, 640, 160));
  EXPECT_EQ(cv::norm(pad, cv::Mat(160, 640, CV_8UC3, cv::Scalar::all(114)), cv::NORM_INF), 0.0);

  // Portrait: the pad is on the right.
  const cv::Mat tall(1080, 810, CV_8UC3, cv::Scalar(10, 20, 30));
  const cv::Mat canvas2 = LetterboxImage(tall, 640, &g);
  EXPECT_EQ(canvas2.at<cv::Vec3b>(0, 0), cv::Vec3b(10, 20, 30));
  EXPECT_EQ(canvas2.at<cv::Vec3b>(639, 479), cv::Vec3b(10, 20, 30));
  EXPECT_EQ(canvas2.at<cv::Vec3b>(0, 480), cv::Vec3b(114, 114, 114));
  EXPECT_EQ(canvas2.at<cv::Vec3b>(639, 639), cv::Vec3b(114, 114, 114));
}

TEST(LetterboxTest, BoxMappingRoundTrip) {
  const LetterboxGeometry g = ComputeLetterbox(810, 1080, 640);
  const Box box{5, 100.5f, 200.25f, 700.0f, 1000.0f};
  const Box canvas = MapToCanvas(box, g);
  EXPECT_NEAR(canvas.x1, 100.5 * 640 / 1080, 1e-3);
  EXPECT_NEAR(canvas.y2, 1000.0 * 640 / 1080, 1e-3);
  const Box back = MapToSource(canvas, g, 810, 1080);
  EXPECT_EQ(back.cls, 5);
  EXPECT_NEAR(back.x1, box.x1, 1e-3);
  EXPECT_NEAR(back.y1, box.y1, 1e-3);
  EXPECT_NEAR(back.x2, box.x2, 1e-3);
  EXPECT_NEAR(back.y2, box.y2, 1e-3);
  // A detection reaching into the pad is clipped to the picture.
  const Box clipped = MapToSource(Box{0, 400, 10, 630, 700}, g, 810, 1080);
  EXPECT_FLOAT_EQ(clipped.x2, 810.0f);
  EXPECT_FLOAT_EQ(clipped.y2, 1080.0f);
}

TEST(LetterboxTest, SampleBoxesFollowTheImage) {
  const Sample s = ColourSample(200, 100, {{0, 10, 20, 50, 30}, {1, 150, 60, 40, 30}});
  const Sample out = LetterboxSample(s, 320);
  EXPECT_FLOAT_EQ(out.boxes[0].x1, 16.0f);
  EXPECT_FLOAT_EQ(out.boxes[0].y2, 80.0f);
  ExpectBoxesCoverColours(out, 2);
}

TEST(FlipTest, MirrorsImageAndBoxes) {
  Sample s = ColourSample(100, 60, {{0, 10, 5, 20, 30}, {2, 70, 30, 25, 20}});
  const cv::Mat original = s.image.clone();
  FlipHorizontal(&s);
  EXPECT_FLOAT_EQ(s.boxes[0].x1, 70.0f);
  EXPECT_FLOAT_EQ(s.boxes[0].x2, 90.0f);
  EXPECT_FLOAT_EQ(s.boxes[1].x1, 5.0f);
  ExpectBoxesCoverColours(s, 3);
  FlipHorizontal(&s);
  EXPECT_EQ(cv::norm(s.image, original, cv::NORM_INF), 0.0);
  EXPECT_FLOAT_EQ(s.boxes[0].x1, 10.0f);
}

TEST(MosaicTest, BoxesStayInsideAndCoverTheirPixels) {
  const std::array<Sample, 4> tiles = {
      ColourSample(320, 240, {{0, 20, 30, 100, 80}, {1, 200, 100, 90, 120}}),
      ColourSample(200, 320, {{2, 10, 10, 60, 200}}),
      ColourSample(320, 320, {{3, 150, 150, 160, 160}, {4, 0, 0, 40, 40}}),
      ColourSample(640, 400, {{5, 300, 100, 300, 250}})};  // larger than S: scaled down
  for (uint64_t seed = 0; seed < 25; ++seed) {
    Rng rng(seed);
    const Sample out = Mosaic(tiles, 320, &rng);
    ASSERT_EQ(out.image.rows, 320);
    ASSERT_EQ(out.image.cols, 320);
    ExpectBoxesCoverColours(out, 6);
    // Same seed, same mosaic.
    Rng again(seed);
    const Sample twin = Mosaic(tiles, 320, &again);
    EXPECT_EQ(cv::norm(out.image, twin.image, cv::NORM_INF), 0.0);
    ASSERT_EQ(out.boxes.size(), twin.boxes.size());
  }
}

TEST(HsvTest, DeterministicAndShapePreserving) {
  cv::Mat a(50, 60, CV_8UC3);
  cv::randu(a, 0, 256);
  cv::Mat b = a.clone(), c = a.clone();
  Rng r1(7), r2(7);
  AugmentHsv(&b, HsvGains{}, &r1);
  AugmentHsv(&c, HsvGains{}, &r2);
  EXPECT_EQ(b.size(), a.size());
  EXPECT_EQ(cv::norm(b, c, cv::NORM_INF), 0.0);
  cv::Mat d = a.clone();
  Rng r3(7);
  AugmentHsv(&d, HsvGains{0, 0, 0}, &r3);  // no gain: untouched
  EXPECT_EQ(cv::norm(d, a, cv::NORM_INF), 0.0);
}

// An in-memory dataset of colour samples, for the whole training pipeline.
class ColourDataset : public DetectionDataset {
 public:
  int64_t size() const override { return 6; }
  int num_classes() const override { return 6; }
  absl::StatusOr<Sample> Load(int64_t i) const override {
    const int k = static_cast<int>(i);
    Sample s =
        ColourSample(160 + 40 * k, 300 - 20 * k,
                     {{k, 10 + 5 * k, 20, 60, 70}, {(k + 1) % 6, 100, 150 - 10 * k, 40, 50}});
    s.path = "colour:" + std::to_string(i);
    return s;
  }
  std::string Describe() const override { return "colour"; }
};

TEST(PipelineTest, TrainSamplesAreDeterministicAndConsistent) {
  ColourDataset dataset;
  AugmentOptions augment;
  augment.hsv_prob = 0;  // colours must survive to be checked
  for (uint64_t seed = 0; seed < 12; ++seed) {
    augment.mosaic_prob = seed % 3 == 0 ? 0.0 : 1.0;
    auto a = MakeSample(dataset, static_cast<int64_t>(seed % 6), 256, augment, seed);
    auto b = MakeSample(dataset, static_cast<int64_t>(seed % 6), 256, augment, seed);
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_EQ(a->image.rows, 256);
    ASSERT_EQ(a->image.cols, 256);
    EXPECT_EQ(cv::norm(a->image, b->image, cv::NORM_INF), 0.0);
    ASSERT_EQ(a->boxes.size(), b->boxes.size());
    EXPECT_FALSE(a->boxes.empty());
    ExpectBoxesCoverColours(*a, 6);
  }
  AugmentOptions eval;
  eval.enabled = false;
  auto plain = MakeSample(dataset, 2, 256, eval, 0);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->path, "colour:2");
  ExpectBoxesCoverColours(*plain, 6);
}

}  // namespace
}  // namespace libreyolo::engine
