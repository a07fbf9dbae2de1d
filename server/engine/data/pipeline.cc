#include "server/engine/data/pipeline.h"

#include <array>
#include <utility>

#include "server/engine/data/rng.h"
#include "common/status/status_macros.h"

namespace libreyolo::engine {
namespace {

absl::StatusOr<Sample> LoadFitted(const DetectionDataset& dataset, int64_t index, int size) {
  ASSIGN_OR_RETURN(Sample sample, dataset.Load(index));
  return ResizeToFit(sample, size);
}

Sample Finish(Sample sample, int size) {
  Sample out = LetterboxSample(sample, size);
  const float s = static_cast<float>(size);
  ClipAndFilterBoxes(&out.boxes, s, s, 1.0f);
  return out;
}

}  // namespace

absl::StatusOr<Sample> MakeSample(const DetectionDataset& dataset, int64_t index, int size,
                                  const AugmentOptions& augment, uint64_t seed) {
  if (!augment.enabled) {
    ASSIGN_OR_RETURN(Sample sample, dataset.Load(index));
    Sample out = LetterboxSample(sample, size);
    const float s = static_cast<float>(size);
    ClipAndFilterBoxes(&out.boxes, s, s, 0.0f);
    return out;
  }
  Rng rng(seed);
  Sample sample;
  if (rng.Bernoulli(augment.mosaic_prob)) {
    std::array<Sample, 4> tiles;
    ASSIGN_OR_RETURN(tiles[0], LoadFitted(dataset, index, size));
    for (size_t i = 1; i < tiles.size(); ++i) {
      ASSIGN_OR_RETURN(tiles[i], LoadFitted(dataset, rng.UniformInt(0, dataset.size() - 1), size));
    }
    sample = Mosaic(tiles, size, &rng);
    sample.path = tiles[0].path;
  } else {
    ASSIGN_OR_RETURN(sample, LoadFitted(dataset, index, size));
  }
  const Sample original = sample;  // shares pixels; the steps below replace, never write into
  if (rng.Bernoulli(augment.hsv_prob)) AugmentHsv(&sample.image, augment.hsv_gains, &rng);
  if (rng.Bernoulli(augment.flip_prob)) FlipHorizontal(&sample);
  Sample out = Finish(std::move(sample), size);
  if (out.boxes.empty() && !original.boxes.empty()) {
    out = Finish(original, size);
  }
  return out;
}

}  // namespace libreyolo::engine
