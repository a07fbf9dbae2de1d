// Builds the LibreYOLO9 model a job asked for and loads its weights.
#ifndef LIBREYOLO_SERVER_ENGINE_MODEL_LOADER_H_
#define LIBREYOLO_SERVER_ENGINE_MODEL_LOADER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/engine/model/yolo9.h"

namespace libreyolo::engine {

inline constexpr char kDefaultWeights[] = "LibreYOLO9t.pt";
inline constexpr uint64_t kRandomInitSeed = 1234;

struct LoadedModel {
  Yolo9 model{nullptr};
  std::string weights_label;  // the path, or "random-init"
  std::string notice;         // one line for the user when weights were not loaded
  std::string size;
  int64_t num_classes = 80;
  std::vector<std::string> class_names;
  bool from_cache = false;  // the checkpoint was parsed by an earlier job in this process
};

// `weights` names a torch.save checkpoint (a state dict or LibreYOLO's dict). The default name
// when no such file exists gives a seeded random initialisation with a notice (nothing can be
// downloaded here); any other missing path is NOT_FOUND. `num_classes` <= 0 takes the
// checkpoint's `nc` (80 without one). Every missing/extra/mis-shaped tensor is reported by name.
absl::StatusOr<LoadedModel> LoadModel(const std::string& weights, const std::string& size,
                                      int64_t num_classes);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_MODEL_LOADER_H_
