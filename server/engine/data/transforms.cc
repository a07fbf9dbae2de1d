#include "server/engine/data/transforms.h"

#include <algorithm>
#include <cmath>
#include <opencv2/imgproc.hpp>

namespace libreyolo::engine {
namespace {

Box ScaleBox(const Box& b, double scale, double dx, double dy) {
  auto map = [](float v, double s, double d) { return static_cast<float>(double{v} * s + d); };
  return Box{b.cls, map(b.x1, scale, dx), map(b.y1, scale, dy), map(b.x2, scale, dx),
             map(b.y2, scale, dy)};
}

// Resize that skips the copy-free case; INTER_LINEAR as the reference's cv2.resize default.
cv::Mat ResizeTo(const cv::Mat& image, int width, int height) {
  if (image.cols == width && image.rows == height) return image;
  cv::Mat out;
  cv::resize(image, out, cv::Size(width, height), 0, 0, cv::INTER_LINEAR);
  return out;
}

// Placement of mosaic tile `index` (0 top-left, 1 top-right, 2 bottom-left, 3 bottom-right)
// of size w x h around centre (xc, yc) on the 2S canvas: `dst` on the canvas, `src` in the
// tile; the two rectangles have the same size (possibly empty).
void TilePlacement(int index, int xc, int yc, int w, int h, int size2, cv::Rect* dst,
                   cv::Rect* src) {
  int x1a = 0, y1a = 0, x2a = 0, y2a = 0, x1b = 0, y1b = 0, x2b = 0, y2b = 0;
  switch (index) {
    case 0:
      x1a = std::max(xc - w, 0), y1a = std::max(yc - h, 0), x2a = xc, y2a = yc;
      x1b = w - (x2a - x1a), y1b = h - (y2a - y1a), x2b = w, y2b = h;
      break;
    case 1:
      x1a = xc, y1a = std::max(yc - h, 0), x2a = std::min(xc + w, size2), y2a = yc;
      x1b = 0, y1b = h - (y2a - y1a), x2b = std::min(w, x2a - x1a), y2b = h;
      break;
    case 2:
      x1a = std::max(xc - w, 0), y1a = yc, x2a = xc, y2a = std::min(yc + h, size2);
      x1b = w - (x2a - x1a), y1b = 0, x2b = w, y2b = std::min(y2a - y1a, h);
      break;
    default:
      x1a = xc, y1a = yc, x2a = std::min(xc + w, size2), y2a = std::min(yc + h, size2);
      x1b = 0, y1b = 0, x2b = std::min(w, x2a - x1a), y2b = std::min(y2a - y1a, h);
      break;
  }
  *dst = cv::Rect(x1a, y1a, std::max(0, x2a - x1a), std::max(0, y2a - y1a));
  *src = cv::Rect(x1b, y1b, std::max(0, x2b - x1b), std::max(0, y2b - y1b));
}

}  // namespace

LetterboxGeometry ComputeLetterbox(int src_width, int src_height, int size) {
  LetterboxGeometry g;
  g.canvas = size;
  g.scale = std::min(static_cast<double>(size) / src_height, static_cast<double>(size) / src_width);
  g.width = std::clamp(static_cast<int>(src_width * g.scale), 1, size);
  g.height = std::clamp(static_cast<int>(src_height * g.scale), 1, size);
  return g;
}

cv::Mat LetterboxImage(const cv::Mat& image, int size, LetterboxGeometry* geometry) {
  const LetterboxGeometry g = ComputeLetterbox(image.cols, image.rows, size);
  cv::Mat canvas(size, size, image.type(), cv::Scalar::all(kPadValue));
  ResizeTo(image, g.width, g.height)
      .copyTo(canvas(cv::Rect(g.pad_left, g.pad_top, g.width, g.height)));
  if (geometry != nullptr) *geometry = g;
  return canvas;
}

Box MapToCanvas(const Box& box, const LetterboxGeometry& g) {
  return ScaleBox(box, g.scale, g.pad_left, g.pad_top);
}

Box MapToSource(const Box& box, const LetterboxGeometry& g, int src_width, int src_height) {
  Box out = ScaleBox(box, 1.0 / g.scale, -g.pad_left / g.scale, -g.pad_top / g.scale);
  out.x1 = std::clamp(out.x1, 0.0f, static_cast<float>(src_width));
  out.x2 = std::clamp(out.x2, 0.0f, static_cast<float>(src_width));
  out.y1 = std::clamp(out.y1, 0.0f, static_cast<float>(src_height));
  out.y2 = std::clamp(out.y2, 0.0f, static_cast<float>(src_height));
  return out;
}

Sample LetterboxSample(const Sample& sample, int size) {
  Sample out;
  LetterboxGeometry g;
  out.image = LetterboxImage(sample.image, size, &g);
  out.path = sample.path;
  out.boxes.reserve(sample.boxes.size());
  for (const Box& b : sample.boxes) out.boxes.push_back(MapToCanvas(b, g));
  return out;
}

Sample ResizeToFit(const Sample& sample, int size) {
  const LetterboxGeometry g = ComputeLetterbox(sample.image.cols, sample.image.rows, size);
  Sample out;
  out.image = ResizeTo(sample.image, g.width, g.height);
  out.path = sample.path;
  out.boxes.reserve(sample.boxes.size());
  for (const Box& b : sample.boxes) out.boxes.push_back(ScaleBox(b, g.scale, 0, 0));
  return out;
}

void FlipHorizontal(Sample* sample) {
  cv::Mat flipped;
  cv::flip(sample->image, flipped, 1);
  sample->image = flipped;
  const float width = static_cast<float>(sample->image.cols);
  for (Box& b : sample->boxes) {
    const float x1 = width - b.x2;
    b.x2 = width - b.x1;
    b.x1 = x1;
  }
}

void AugmentHsv(cv::Mat* image, const HsvGains& gains, Rng* rng) {
  const double scale[3] = {gains.h, gains.s, gains.v};
  int delta[3];
  for (int c = 0; c < 3; ++c) {
    // The reference draws the three gains first, then the three keep-flags.
    delta[c] = static_cast<int>(rng->Uniform(-1, 1) * scale[c]);
  }
  for (int c = 0; c < 3; ++c) delta[c] *= static_cast<int>(rng->UniformInt(0, 1));
  if (delta[0] == 0 && delta[1] == 0 && delta[2] == 0) return;
  cv::Mat lut(1, 256, CV_8UC3);
  for (int i = 0; i < 256; ++i) {
    cv::Vec3b& entry = lut.at<cv::Vec3b>(0, i);
    entry[0] = static_cast<uchar>(((i + delta[0]) % 180 + 180) % 180);
    entry[1] = static_cast<uchar>(std::clamp(i + delta[1], 0, 255));
    entry[2] = static_cast<uchar>(std::clamp(i + delta[2], 0, 255));
  }
  cv::Mat hsv;
  cv::cvtColor(*image, hsv, cv::COLOR_BGR2HSV);
  cv::LUT(hsv, lut, hsv);
  cv::Mat out;
  cv::cvtColor(hsv, out, cv::COLOR_HSV2BGR);
  *image = out;
}

void ClipAndFilterBoxes(std::vector<Box>* boxes, float width, float height, float min_side) {
  std::vector<Box> kept;
  kept.reserve(boxes->size());
  for (Box b : *boxes) {
    b.x1 = std::clamp(b.x1, 0.0f, width);
    b.x2 = std::clamp(b.x2, 0.0f, width);
    b.y1 = std::clamp(b.y1, 0.0f, height);
    b.y2 = std::clamp(b.y2, 0.0f, height);
    if (b.width() > min_side && b.height() > min_side) kept.push_back(b);
  }
  *boxes = std::move(kept);
}

Sample Mosaic(const std::array<Sample, 4>& tiles, int size, Rng* rng) {
  const int size2 = 2 * size;
  const int yc = static_cast<int>(rng->Uniform(0.5 * size, 1.5 * size));
  const int xc = static_cast<int>(rng->Uniform(0.5 * size, 1.5 * size));
  cv::Mat canvas(size2, size2, CV_8UC3, cv::Scalar::all(kPadValue));
  Sample out;
  out.path = tiles[0].path;
  for (int i = 0; i < 4; ++i) {
    const Sample& tile = tiles[static_cast<size_t>(i)];
    const double scale = std::min({1.0, static_cast<double>(size) / tile.image.rows,
                                   static_cast<double>(size) / tile.image.cols});
    const cv::Mat image = ResizeTo(tile.image, static_cast<int>(tile.image.cols * scale),
                                   static_cast<int>(tile.image.rows * scale));
    cv::Rect dst, src;
    TilePlacement(i, xc, yc, image.cols, image.rows, size2, &dst, &src);
    if (dst.area() > 0) image(src).copyTo(canvas(dst));
    const double dx = dst.x - src.x, dy = dst.y - src.y;
    for (const Box& b : tile.boxes) out.boxes.push_back(ScaleBox(b, scale, dx, dy));
  }
  ClipAndFilterBoxes(&out.boxes, static_cast<float>(size2), static_cast<float>(size2), 0.0f);
  cv::resize(canvas, out.image, cv::Size(size, size), 0, 0, cv::INTER_LINEAR);
  for (Box& b : out.boxes) b = ScaleBox(b, 0.5, 0, 0);
  ClipAndFilterBoxes(&out.boxes, static_cast<float>(size), static_cast<float>(size), 2.0f);
  return out;
}

}  // namespace libreyolo::engine
