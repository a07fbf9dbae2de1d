// Collation: S x S BGR canvases and their boxes into the tensors the model and loss take.
// The only part of the data library that touches LibTorch (plus the loader that returns it).
//
// Batch::targets is the contract with the loss (the same layout as the shared fixture
// targets_2x3x5.npy): float32 [B, maxN, 5], rows (class, x1, y1, x2, y2) with coordinates
// normalised to the S x S canvas and clipped to [0, 1]; maxN is the most boxes any image of
// the batch has (at least 1, at most max_labels); unused rows are (-1, 0, 0, 0, 0).
#ifndef LIBREYOLO_SERVER_ENGINE_DATA_BATCH_H_
#define LIBREYOLO_SERVER_ENGINE_DATA_BATCH_H_

#include <ATen/core/Tensor.h>

#include <opencv2/core.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/engine/data/transforms.h"

namespace libreyolo::engine {

// The reference pads to 300 labels per image; more are dropped.
inline constexpr int kMaxLabelsPerImage = 300;

struct Batch {
  at::Tensor images;   // [B, 3, S, S] float32 RGB in [0, 1] (pixel / 255), contiguous, CPU
  at::Tensor targets;  // [B, maxN, 5] float32, see above
  std::vector<std::string> paths;  // one per image ("synthetic:<i>" for synthetic data)
};

// True when this LibTorch can allocate pinned (page-locked) host memory, i.e. it was built
// with CUDA and a device is present. Pinning elsewhere throws, so callers must ask first.
bool PinnedMemoryAvailable();

// [B, 3, S, S] float32 RGB / 255 from equally sized square BGR uint8 canvases (the model input
// layout, also for inference). `pin` allocates page-locked memory (check
// PinnedMemoryAvailable() first). INVALID_ARGUMENT for an empty list or mismatched canvases.
absl::StatusOr<at::Tensor> ImagesToTensor(const std::vector<cv::Mat>& canvases, bool pin);

// Targets per the contract above from boxes in canvas pixels.
at::Tensor TargetsToTensor(const std::vector<std::vector<Box>>& boxes, int size, int max_labels,
                           bool pin);

// Both, from samples made by MakeSample (pipeline.h).
absl::StatusOr<Batch> Collate(const std::vector<Sample>& samples, int size, bool pin);

// The inference preprocess: letterbox each image (any size, BGR uint8) to S x S and stack.
// `geometry[i]` with MapToSource (transforms.h) maps detections back onto image i.
struct InferenceBatch {
  at::Tensor images;  // [B, 3, S, S] float32 RGB / 255
  std::vector<LetterboxGeometry> geometry;
  std::vector<cv::Size> source_sizes;
};
absl::StatusOr<InferenceBatch> PreprocessForInference(const std::vector<cv::Mat>& images, int size,
                                                      bool pin);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_DATA_BATCH_H_
