// Builds the LibreYOLO9 model a job asked for and loads its weights.
#ifndef LIBREYOLO_SERVER_ENGINE_JOB_MODEL_LOADER_H_
#define LIBREYOLO_SERVER_ENGINE_JOB_MODEL_LOADER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/engine/model/yolo9.h"

namespace libreyolo::engine {

inline constexpr char kDefaultWeights[] = "LibreYOLO9t.pt";
inline constexpr uint64_t kRandomInitSeed = 1234;
// The seed of a re-initialised class head: the Python LibreYOLO's train() seeds torch with its
// `seed` (default 0) just before `_rebuild_for_new_classes`, and `profile run` passes none.
inline constexpr uint64_t kHeadInitSeed = 0;

struct TensorShape {
  std::string name;
  std::vector<int64_t> shape;
};

// A checkpoint trained on another class count than the job's dataset, loaded as the Python
// LibreYOLO's train() does (`_rebuild_for_new_classes`): every tensor loaded, then each class
// tower's final 1x1 conv (the only class-dependent tensors; the towers keep the checkpoint's
// width) drawn anew, and DDetect._init_bias, which also resets the box predictors' biases.
struct HeadReinit {
  int64_t from_classes = 0;  // the checkpoint's
  int64_t to_classes = 0;    // the dataset's
  int64_t class_hidden = 0;  // the class towers' width, the checkpoint's
  uint64_t seed = kHeadInitSeed;
  std::vector<TensorShape> reinitialised;  // new shape, new values
  std::vector<TensorShape> reset;          // loaded, then overwritten by the bias prior
  int64_t kept = 0;                        // loaded and left as the checkpoint has them
};

struct LoadedModel {
  Yolo9 model{nullptr};
  std::string weights_label;  // the path, or "random-init"
  std::string notice;  // one line for the user: weights not loaded, or the class head re-made
  std::string size;
  int64_t num_classes = 80;
  std::vector<std::string> class_names;
  bool from_cache = false;  // the checkpoint was parsed by an earlier job in this process
  std::optional<HeadReinit> head_reinitialised;  // the checkpoint's classes were not the job's
  // A random init: every place the weights were looked for (`searched`, then `weights` itself
  // as the worker sees it); recorded as the profile's config.weights_searched.
  std::vector<std::string> weights_searched;
};

// `weights` names a torch.save checkpoint (a state dict or LibreYOLO's dict). The default name
// when no such file exists gives a seeded random initialisation with a notice (nothing can be
// downloaded here); any other missing path is NOT_FOUND. A checkpoint of another size than
// `size` (its metadata's, else its widths') is INVALID_ARGUMENT naming what it is.
// `num_classes` is the training dataset's class count: <= 0 (inference) takes the checkpoint's
// (80 for a random init); another count than the checkpoint's re-initialises its class head
// (HeadReinit) and says so in `notice`. The class towers keep the checkpoint's width. Any other
// missing/extra/mis-shaped tensor is reported by name. `searched`: where the caller and the
// daemon already looked for the default name (ModelSpec.weights_searched), named by the notice.
absl::StatusOr<LoadedModel> LoadModel(const std::string& weights, const std::string& size,
                                      int64_t num_classes,
                                      const std::vector<std::string>& searched = {});

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_JOB_MODEL_LOADER_H_
