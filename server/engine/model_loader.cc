#include "server/engine/model_loader.h"

#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <optional>
#include <variant>

#include "absl/strings/str_cat.h"
#include "server/engine/checkpoint/checkpoint.h"

namespace libreyolo::engine {

absl::StatusOr<LoadedModel> LoadModel(const std::string& weights, const std::string& size,
                                      int64_t num_classes) {
  LoadedModel out;
  out.size = size;
  const bool exists = std::filesystem::exists(weights);
  if (!exists && weights != kDefaultWeights) {
    return absl::NotFoundError(absl::StrCat("--weights ", weights,
                                            ": no such file (give the path to a LibreYOLO9 "
                                            "checkpoint saved with torch.save)"));
  }
  std::optional<Checkpoint> ckpt;
  if (exists) {
    auto read = ReadCheckpoint(weights);
    if (!read.ok()) return read.status();
    ckpt = *std::move(read);
    if (num_classes <= 0) {
      auto it = ckpt->metadata.find("nc");
      if (it != ckpt->metadata.end() && std::holds_alternative<int64_t>(it->second)) {
        num_classes = std::get<int64_t>(it->second);
      }
    }
    out.class_names = ckpt->class_names;
  }
  out.num_classes = num_classes > 0 ? num_classes : 80;
  Yolo9Options options;
  options.size = size;
  options.num_classes = out.num_classes;
  if (auto valid = ValidateYolo9Options(options); !valid.ok()) return valid;
  if (!exists) torch::manual_seed(kRandomInitSeed);
  out.model = Yolo9(options);
  if (!exists) {
    out.weights_label = "random-init";
    out.notice = absl::StrCat(weights, " not found: using a seeded random initialisation (seed ",
                              kRandomInitSeed, "); timings are valid, detections are not");
    return out;
  }
  std::map<std::string, torch::Tensor> tensors;
  for (const auto& [name, t] : ckpt->tensors) tensors.emplace(name, ToTorch(t));
  if (auto loaded = LoadStateDict(out.model, tensors); !loaded.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--weights ", weights, " does not fit LibreYOLO9-", size, " with ",
                     out.num_classes, " classes: ", loaded.message()));
  }
  out.weights_label = weights;
  return out;
}

}  // namespace libreyolo::engine
