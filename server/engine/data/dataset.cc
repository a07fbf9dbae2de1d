#include "server/engine/data/dataset.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/engine/data/image_io.h"
#include "common/status/status_macros.h"
#include "server/engine/data/synthetic.h"

namespace libreyolo::engine {

absl::StatusOr<std::unique_ptr<FileDataset>> FileDataset::Open(std::vector<std::string> images,
                                                               int num_classes,
                                                               std::string description,
                                                               bool allow_empty,
                                                               int64_t max_pixels) {
  if (images.empty() && !allow_empty) {
    return absl::InvalidArgumentError(
        absl::StrCat(description, ": no images found (", ImageExtensionList(),
                     "); check the split's folder or list in the dataset YAML"));
  }
  std::unique_ptr<FileDataset> dataset(new FileDataset());
  dataset->labels_.reserve(images.size());
  for (const std::string& image : images) {
    ASSIGN_OR_RETURN(std::vector<LabelBox> labels,
                     ReadLabelFile(LabelPathForImage(image), num_classes));
    dataset->labels_.push_back(std::move(labels));
  }
  dataset->images_ = std::move(images);
  dataset->num_classes_ = num_classes;
  dataset->max_pixels_ = max_pixels;
  dataset->description_ = absl::StrCat(description, " (", dataset->images_.size(), " images)");
  return dataset;
}

absl::StatusOr<Sample> FileDataset::Load(int64_t index) const {
  if (index < 0 || index >= size()) {
    return absl::OutOfRangeError(absl::StrCat("sample ", index, " is outside ", Describe()));
  }
  const size_t i = static_cast<size_t>(index);
  Sample sample;
  sample.path = images_[i];
  ASSIGN_OR_RETURN(sample.image, DecodeImageFile(images_[i], max_pixels_));
  const float w = static_cast<float>(sample.image.cols);
  const float h = static_cast<float>(sample.image.rows);
  sample.boxes.reserve(labels_[i].size());
  for (const LabelBox& l : labels_[i]) {
    sample.boxes.push_back(Box{l.cls, (l.cx - l.w / 2) * w, (l.cy - l.h / 2) * h,
                               (l.cx + l.w / 2) * w, (l.cy + l.h / 2) * h});
  }
  return sample;
}

SyntheticDataset::SyntheticDataset(int64_t count, int num_classes, uint64_t seed)
    : count_(count), num_classes_(num_classes), seed_(seed) {}

absl::StatusOr<Sample> SyntheticDataset::Load(int64_t index) const {
  if (index < 0 || index >= count_) {
    return absl::OutOfRangeError(absl::StrCat("sample ", index, " is outside ", Describe()));
  }
  return MakeSyntheticSample(seed_, index, num_classes_);
}

std::string SyntheticDataset::Describe() const {
  return absl::StrCat("synthetic (", count_, " images)");
}

absl::StatusOr<std::shared_ptr<const DetectionDataset>> OpenDataset(const DatasetSpec& spec,
                                                                    Split split, bool allow_empty,
                                                                    int64_t max_pixels) {
  if (spec.synthetic()) {
    // Train and val differ in content, as real splits do, through the seed.
    const uint64_t seed =
        split == Split::kTrain ? kDefaultSyntheticSeed : MixSeed(kDefaultSyntheticSeed, 1);
    return std::make_shared<const SyntheticDataset>(spec.synthetic_count, spec.nc(), seed);
  }
  const SplitSources& sources = split == Split::kVal && !spec.val.empty() ? spec.val : spec.train;
  ASSIGN_OR_RETURN(std::vector<std::string> images,
                   ListSplitImages(sources.sources, sources.origin));
  ASSIGN_OR_RETURN(
      std::unique_ptr<FileDataset> dataset,
      FileDataset::Open(std::move(images), spec.nc(),
                        absl::StrCat(sources.origin, " ", absl::StrJoin(sources.sources, ", ")),
                        allow_empty, max_pixels));
  return std::shared_ptr<const DetectionDataset>(std::move(dataset));
}

}  // namespace libreyolo::engine
