// Datasets the loader reads from: indexable, thread-safe sources of decoded samples (BGR image
// plus pixel boxes). Labels are parsed when a dataset is opened, so a bad label line stops the
// run before the first step rather than in the middle of the measured window.
#ifndef LIBREYOLO_SERVER_ENGINE_DATA_DATASET_H_
#define LIBREYOLO_SERVER_ENGINE_DATA_DATASET_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/engine/data/dataset_spec.h"
#include "server/engine/data/image_header.h"
#include "server/engine/data/labels.h"
#include "server/engine/data/transforms.h"

namespace libreyolo::engine {

class DetectionDataset {
 public:
  virtual ~DetectionDataset() = default;
  virtual int64_t size() const = 0;
  virtual int num_classes() const = 0;
  // Sample `index` in [0, size()): the decoded image and its boxes in its pixels. Called from
  // several loader threads at once.
  virtual absl::StatusOr<Sample> Load(int64_t index) const = 0;
  // For messages: "synthetic (128 images)", "/data/coco128/images/train2017 (128 images)".
  virtual std::string Describe() const = 0;
};

// Image files with YOLO label files beside them (see image_io.h for the label path rule).
class FileDataset : public DetectionDataset {
 public:
  // Parses every label file; fails on the first bad line (file:line), and on an empty list
  // unless `allow_empty`. Load() refuses an image over `max_pixels` (width x height, image_io.h).
  static absl::StatusOr<std::unique_ptr<FileDataset>> Open(
      std::vector<std::string> images, int num_classes, std::string description,
      bool allow_empty = false, int64_t max_pixels = kMaxDecodedPixels);

  int64_t size() const override { return static_cast<int64_t>(images_.size()); }
  int num_classes() const override { return num_classes_; }
  absl::StatusOr<Sample> Load(int64_t index) const override;
  std::string Describe() const override { return description_; }

  const std::vector<std::string>& images() const { return images_; }
  const std::vector<LabelBox>& labels(int64_t index) const {
    return labels_[static_cast<size_t>(index)];
  }

 private:
  FileDataset() = default;
  std::vector<std::string> images_;
  std::vector<std::vector<LabelBox>> labels_;
  int num_classes_ = 0;
  std::string description_;
  int64_t max_pixels_ = kMaxDecodedPixels;
};

// The built-in synthetic dataset (synthetic.h): `count` images made from `seed` on demand.
class SyntheticDataset : public DetectionDataset {
 public:
  SyntheticDataset(int64_t count, int num_classes, uint64_t seed);
  int64_t size() const override { return count_; }
  int num_classes() const override { return num_classes_; }
  absl::StatusOr<Sample> Load(int64_t index) const override;
  std::string Describe() const override;

 private:
  int64_t count_;
  int num_classes_;
  uint64_t seed_;
};

enum class Split { kTrain, kVal };

// The dataset for one split of a resolved spec. NOT_FOUND when the split's folder is missing
// (naming the YAML line), INVALID_ARGUMENT when a label is bad or the split holds no images
// (with `allow_empty`: an empty dataset, for a caller that says what that means for it). A
// spec without `val` falls back to `train` for kVal (as the reference's examples do). An image
// over `max_pixels` (TrainJobSpec.max_decoded_pixels) fails the sample that loads it.
absl::StatusOr<std::shared_ptr<const DetectionDataset>> OpenDataset(
    const DatasetSpec& spec, Split split, bool allow_empty = false,
    int64_t max_pixels = kMaxDecodedPixels);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_DATA_DATASET_H_
