#include "server/engine/data/batch.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>

#include <algorithm>
#include <opencv2/core.hpp>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status/status_macros.h"

namespace libreyolo::engine {
namespace {

at::TensorOptions FloatOptions(bool pin) {
  return at::TensorOptions().dtype(at::kFloat).pinned_memory(pin);
}

}  // namespace

bool PinnedMemoryAvailable() { return at::hasCUDA(); }

absl::StatusOr<at::Tensor> ImagesToTensor(const std::vector<cv::Mat>& canvases, bool pin) {
  if (canvases.empty()) return absl::InvalidArgumentError("no images to collate");
  const int size = canvases.front().rows;
  for (size_t i = 0; i < canvases.size(); ++i) {
    const cv::Mat& c = canvases[i];
    if (c.type() != CV_8UC3 || c.rows != size || c.cols != size) {
      return absl::InvalidArgumentError(absl::StrCat(
          "image ", i, " of the batch is ", c.cols, "x", c.rows, " type ", c.type(),
          "; every image must be a ", size, "x", size, " BGR uint8 canvas (letterbox first)"));
    }
  }
  const int64_t b = static_cast<int64_t>(canvases.size());
  at::Tensor images = at::empty({b, 3, size, size}, FloatOptions(pin));
  float* base = images.data_ptr<float>();
  const size_t plane = static_cast<size_t>(size) * static_cast<size_t>(size);
  cv::Mat scaled;
  for (size_t i = 0; i < canvases.size(); ++i) {
    canvases[i].convertTo(scaled, CV_32FC3, 1.0 / 255.0);
    // Scatter B, G, R straight into the tensor's planes 2, 1, 0: BGR -> RGB, HWC -> CHW in one
    // pass; mixChannels writes into the given Mats and never reallocates them.
    float* img = base + i * 3 * plane;
    cv::Mat planes[3] = {cv::Mat(size, size, CV_32FC1, img),
                         cv::Mat(size, size, CV_32FC1, img + plane),
                         cv::Mat(size, size, CV_32FC1, img + 2 * plane)};
    const int from_to[] = {0, 2, 1, 1, 2, 0};
    cv::mixChannels(&scaled, 1, planes, 3, from_to, 3);
  }
  return images;
}

at::Tensor TargetsToTensor(const std::vector<std::vector<Box>>& boxes, int size, int max_labels,
                           bool pin) {
  size_t most = 1;  // never a zero-sized dimension: the loss indexes [B, maxN, 5] as is
  for (const auto& per_image : boxes) most = std::max(most, per_image.size());
  const int64_t n = std::min<int64_t>(static_cast<int64_t>(most), max_labels);
  const int64_t b = static_cast<int64_t>(boxes.size());
  at::Tensor targets = at::zeros({b, n, 5}, FloatOptions(pin));
  float* t = targets.data_ptr<float>();
  const float s = static_cast<float>(size);
  for (int64_t i = 0; i < b; ++i) {
    const auto& per_image = boxes[static_cast<size_t>(i)];
    for (int64_t j = 0; j < n; ++j) {
      float* row = t + (i * n + j) * 5;
      if (j >= static_cast<int64_t>(per_image.size())) {
        row[0] = -1;
        continue;
      }
      const Box& box = per_image[static_cast<size_t>(j)];
      row[0] = static_cast<float>(box.cls);
      row[1] = std::clamp(box.x1 / s, 0.0f, 1.0f);
      row[2] = std::clamp(box.y1 / s, 0.0f, 1.0f);
      row[3] = std::clamp(box.x2 / s, 0.0f, 1.0f);
      row[4] = std::clamp(box.y2 / s, 0.0f, 1.0f);
    }
  }
  return targets;
}

absl::StatusOr<Batch> Collate(const std::vector<Sample>& samples, int size, bool pin) {
  std::vector<cv::Mat> canvases;
  std::vector<std::vector<Box>> boxes;
  Batch batch;
  canvases.reserve(samples.size());
  boxes.reserve(samples.size());
  for (const Sample& s : samples) {
    canvases.push_back(s.image);
    boxes.push_back(s.boxes);
    batch.paths.push_back(s.path);
  }
  ASSIGN_OR_RETURN(batch.images, ImagesToTensor(canvases, pin));
  if (batch.images.size(2) != size) {
    return absl::InvalidArgumentError(
        absl::StrCat("collate: canvases are ", batch.images.size(2), " pixels, expected ", size));
  }
  batch.targets = TargetsToTensor(boxes, size, kMaxLabelsPerImage, pin);
  return batch;
}

absl::StatusOr<InferenceBatch> PreprocessForInference(const std::vector<cv::Mat>& images, int size,
                                                      bool pin) {
  InferenceBatch out;
  std::vector<cv::Mat> canvases;
  canvases.reserve(images.size());
  for (size_t i = 0; i < images.size(); ++i) {
    if (images[i].type() != CV_8UC3 || images[i].empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "inference image ", i, " is not a 3-channel 8-bit image (decode with image_io.h)"));
    }
    LetterboxGeometry g;
    canvases.push_back(LetterboxImage(images[i], size, &g));
    out.geometry.push_back(g);
    out.source_sizes.push_back(images[i].size());
  }
  ASSIGN_OR_RETURN(out.images, ImagesToTensor(canvases, pin));
  return out;
}

}  // namespace libreyolo::engine
