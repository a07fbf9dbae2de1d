// One training or evaluation sample, from dataset index to an S x S canvas with pixel boxes:
// what a loader worker does per image before collation. Torch-free, so it runs and is tested
// without LibTorch in the translation unit.
#ifndef LIBREYOLO_SERVER_ENGINE_DATA_PIPELINE_H_
#define LIBREYOLO_SERVER_ENGINE_DATA_PIPELINE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "server/engine/data/dataset.h"
#include "server/engine/data/transforms.h"

namespace libreyolo::engine {

// The reference's YOLO9 training defaults: mosaic always, flip 1/2, HSV always.
struct AugmentOptions {
  bool enabled = true;  // false: letterbox only (evaluation)
  double mosaic_prob = 1.0;
  double flip_prob = 0.5;
  double hsv_prob = 1.0;
  HsvGains hsv_gains;
};

// Training: [mosaic of the sample and 3 random others | the sample resized to fit], HSV,
// flip, letterbox to S; boxes 1 pixel or less wide/high dropped (if that drops all, the
// un-augmented letterbox is used instead, as the reference does). Deterministic in `seed`.
// Evaluation (augment.enabled == false): letterbox only. The result is S x S BGR uint8 with
// boxes in canvas pixels, clipped to it.
absl::StatusOr<Sample> MakeSample(const DetectionDataset& dataset, int64_t index, int size,
                                  const AugmentOptions& augment, uint64_t seed);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_DATA_PIPELINE_H_
