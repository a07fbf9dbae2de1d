#include "server/engine/data/synthetic.h"

#include <algorithm>
#include <opencv2/imgproc.hpp>

#include "absl/strings/str_cat.h"
#include "server/engine/data/rng.h"

namespace libreyolo::engine {
namespace {

cv::Scalar RandomColor(Rng* rng) {
  return cv::Scalar(static_cast<double>(rng->UniformInt(0, 255)),
                    static_cast<double>(rng->UniformInt(0, 255)),
                    static_cast<double>(rng->UniformInt(0, 255)));
}

// Low-amplitude noise so images are not trivially compressible or constant, drawn from our
// own Rng (cv::randu's generator is OpenCV-version dependent).
void AddNoise(cv::Mat* image, Rng* rng) {
  for (int y = 0; y < image->rows; ++y) {
    uchar* row = image->ptr<uchar>(y);
    const int n = image->cols * image->channels();
    for (int i = 0; i < n; i += 4) {
      const uint64_t r = rng->Next();
      for (int k = 0; k < 4 && i + k < n; ++k) {
        const int noise = static_cast<int>((r >> (8 * k)) & 0xF) - 8;
        row[i + k] = static_cast<uchar>(std::clamp(row[i + k] + noise, 0, 255));
      }
    }
  }
}

}  // namespace

Sample MakeSyntheticSample(uint64_t seed, int64_t index, int num_classes) {
  Rng rng(MixSeed(seed, static_cast<uint64_t>(index)));
  const int width = static_cast<int>(rng.UniformInt(40, 100)) * 8;
  const int height = static_cast<int>(rng.UniformInt(40, 100)) * 8;
  Sample sample;
  sample.path = absl::StrCat("synthetic:", index);
  sample.image = cv::Mat(height, width, CV_8UC3, RandomColor(&rng));
  AddNoise(&sample.image, &rng);
  const int count = static_cast<int>(rng.UniformInt(1, 8));
  for (int i = 0; i < count; ++i) {
    const int w = static_cast<int>(rng.UniformInt(width / 16, width / 2));
    const int h = static_cast<int>(rng.UniformInt(height / 16, height / 2));
    const int x = static_cast<int>(rng.UniformInt(0, width - w));
    const int y = static_cast<int>(rng.UniformInt(0, height - h));
    const int cls = static_cast<int>(rng.UniformInt(0, num_classes - 1));
    // Filled rectangle covering pixels [x, x + w) x [y, y + h): its box is exactly that.
    cv::rectangle(sample.image, cv::Rect(x, y, w, h), RandomColor(&rng), cv::FILLED);
    sample.boxes.push_back(Box{cls, static_cast<float>(x), static_cast<float>(y),
                               static_cast<float>(x + w), static_cast<float>(y + h)});
  }
  return sample;
}

cv::Mat MakeSampleImage() {
  cv::Mat image(kSampleImageHeight, kSampleImageWidth, CV_8UC3);
  // Sky gradient above the horizon, ground below (BGR).
  const int horizon = kSampleImageHeight * 11 / 20;
  for (int y = 0; y < kSampleImageHeight; ++y) {
    const double t = static_cast<double>(y) / kSampleImageHeight;
    const cv::Vec3b color =
        y < horizon ? cv::Vec3b(static_cast<uchar>(235 - 60 * t), static_cast<uchar>(200 - 40 * t),
                                static_cast<uchar>(150 - 50 * t))
                    : cv::Vec3b(static_cast<uchar>(70 + 20 * t), static_cast<uchar>(110 + 10 * t),
                                static_cast<uchar>(90 + 30 * t));
    image.row(y).setTo(cv::Scalar(color[0], color[1], color[2]));
  }
  // A house, a sun, a tree, a car and a figure: shapes of several sizes and aspect ratios.
  cv::rectangle(image, cv::Rect(90, 430, 300, 260), cv::Scalar(60, 90, 200), cv::FILLED);
  const cv::Point roof[] = {{70, 430}, {240, 300}, {410, 430}};
  cv::fillConvexPoly(image, roof, 3, cv::Scalar(40, 40, 140));
  cv::rectangle(image, cv::Rect(210, 560, 60, 130), cv::Scalar(30, 60, 90), cv::FILLED);
  cv::circle(image, cv::Point(650, 160), 80, cv::Scalar(40, 210, 250), cv::FILLED);
  cv::rectangle(image, cv::Rect(585, 470, 40, 220), cv::Scalar(30, 70, 100), cv::FILLED);
  cv::circle(image, cv::Point(605, 430), 95, cv::Scalar(50, 150, 40), cv::FILLED);
  cv::rectangle(image, cv::Rect(120, 800, 420, 120), cv::Scalar(180, 60, 40), cv::FILLED);
  cv::rectangle(image, cv::Rect(200, 730, 240, 80), cv::Scalar(200, 90, 60), cv::FILLED);
  cv::circle(image, cv::Point(210, 925), 45, cv::Scalar(25, 25, 25), cv::FILLED);
  cv::circle(image, cv::Point(450, 925), 45, cv::Scalar(25, 25, 25), cv::FILLED);
  cv::ellipse(image, cv::Point(690, 880), cv::Size(40, 110), 0, 0, 360, cv::Scalar(90, 60, 160),
              cv::FILLED);
  cv::circle(image, cv::Point(690, 745), 32, cv::Scalar(120, 170, 220), cv::FILLED);
  return image;
}

}  // namespace libreyolo::engine
