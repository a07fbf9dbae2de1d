// Image + box transforms on OpenCV BGR uint8 images, boxes in pixels (xyxy). Every random
// choice comes from the Rng passed in, so a transform is a pure function of its seed.
// Geometry follows the reference (LibreYOLO yolo9 transforms): letterbox into the top-left
// corner with pad 114 (no centring), mosaic of four tiles on a 2S x 2S canvas halved to S x S,
// horizontal flip, HSV jitter.
#ifndef LIBREYOLO_SERVER_ENGINE_DATA_TRANSFORMS_H_
#define LIBREYOLO_SERVER_ENGINE_DATA_TRANSFORMS_H_

#include <array>
#include <opencv2/core.hpp>
#include <string>
#include <vector>

#include "server/engine/data/rng.h"

namespace libreyolo::engine {

inline constexpr int kPadValue = 114;

// One object in pixel coordinates of the image it travels with.
struct Box {
  int cls = 0;
  float x1 = 0, y1 = 0, x2 = 0, y2 = 0;
  float width() const { return x2 - x1; }
  float height() const { return y2 - y1; }
};

// An image (BGR uint8) with its boxes and where it came from.
struct Sample {
  cv::Mat image;
  std::vector<Box> boxes;
  std::string path;
};

// Where a letterboxed image sits on the canvas: the source was scaled by `scale` to
// `width` x `height` and placed at (pad_left, pad_top), which is (0, 0) here (top-left).
struct LetterboxGeometry {
  double scale = 1;
  int width = 0, height = 0;
  int pad_left = 0, pad_top = 0;
  int canvas = 0;  // S: the canvas is S x S
};

// scale = min(S / h, S / w); resized size truncated as the reference does (int(w * scale)),
// at least 1 pixel.
LetterboxGeometry ComputeLetterbox(int src_width, int src_height, int size);

// The S x S canvas (pad 114) holding `image` resized per ComputeLetterbox in its top-left.
cv::Mat LetterboxImage(const cv::Mat& image, int size, LetterboxGeometry* geometry);

// Box mapping source <-> canvas; MapToSource also clips to the source image, so detections
// on the padding do not leave the picture.
Box MapToCanvas(const Box& box, const LetterboxGeometry& g);
Box MapToSource(const Box& box, const LetterboxGeometry& g, int src_width, int src_height);

// Letterboxes a sample: image to S x S, boxes scaled and shifted with it.
Sample LetterboxSample(const Sample& sample, int size);

// Resizes so the longer side fits S (scale = min(S / h, S / w), up or down), boxes with it:
// what the reference's dataset does before mosaic ("load_resized_img").
Sample ResizeToFit(const Sample& sample, int size);

// Mirrors the image left-right and the boxes with it (x -> W - x).
void FlipHorizontal(Sample* sample);

// HSV jitter as the reference: gains drawn in [-1, 1] x (hgain, sgain, vgain), each channel
// kept with probability 1/2; hue wraps mod 180, saturation and value clip.
struct HsvGains {
  double h = 5, s = 30, v = 30;
};
void AugmentHsv(cv::Mat* image, const HsvGains& gains, Rng* rng);

// Four tiles (each at most S on its longer side; larger ones are scaled down) around a random
// centre in [S/2, 3S/2)^2 of a 2S x 2S canvas, then halved to S x S. Boxes are shifted with
// their tile, clipped to the canvas, halved, and dropped when 2 pixels or less wide or high.
Sample Mosaic(const std::array<Sample, 4>& tiles, int size, Rng* rng);

// Clips boxes to [0, W] x [0, H] and drops those with width or height <= min_side.
void ClipAndFilterBoxes(std::vector<Box>* boxes, float width, float height, float min_side);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_DATA_TRANSFORMS_H_
