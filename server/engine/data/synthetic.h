// Procedural images: the built-in `synthetic` dataset (filled rectangles whose labels are
// exact) and the sample image `profile infer` uses when no source is given. Both are made in
// memory from a seed, so the project ships no third-party pictures and runs are reproducible.
#ifndef LIBREYOLO_SERVER_ENGINE_DATA_SYNTHETIC_H_
#define LIBREYOLO_SERVER_ENGINE_DATA_SYNTHETIC_H_

#include <cstdint>
#include <opencv2/core.hpp>

#include "server/engine/data/transforms.h"

namespace libreyolo::engine {

inline constexpr uint64_t kDefaultSyntheticSeed = 0x11B2E70;
inline constexpr int kSampleImageWidth = 810;
inline constexpr int kSampleImageHeight = 1080;
inline constexpr char kSampleImageName[] = "<libreyolo sample 810x1080>";

// Image `index` of the synthetic dataset with `num_classes` classes: a size between 320 and
// 800 pixels a side (multiples of 8, so both orientations occur), a flat background with mild
// noise, and 1 to 8 filled rectangles, each one object whose box is exactly its pixels
// (later rectangles may cover earlier ones, as real objects occlude). Deterministic in
// (seed, index); `path` is "synthetic:<index>".
Sample MakeSyntheticSample(uint64_t seed, int64_t index, int num_classes);

// The inference sample: 810 x 1080 (portrait, like the usual bus.jpg), a sky-and-ground
// background and a few coloured shapes. Always the same pixels.
cv::Mat MakeSampleImage();

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_DATA_SYNTHETIC_H_
