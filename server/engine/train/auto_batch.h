// `--batch -1`: the largest batch that fits. On CUDA the reference's AutoBatch: train on a few
// probe batches (1, 2, 4, 8, 16), fit device memory in use against the batch size with a line,
// and take the largest power of two whose prediction stays under 70% of the device's memory.
// On the CPU there is no memory wall worth probing: the rule is the reference's fallback, 16.
// The dataset plays no part, as in the reference's autobatch: a dataset smaller than the batch
// is one batch of all of it an epoch (loader.h), and the window fills across epochs.
#ifndef LIBREYOLO_SERVER_ENGINE_TRAIN_AUTO_BATCH_H_
#define LIBREYOLO_SERVER_ENGINE_TRAIN_AUTO_BATCH_H_

#include <cstdint>
#include <string>

#include "server/engine/model/yolo9.h"
#include "server/engine/runtime/runtime_info.h"

namespace libreyolo::engine {

inline constexpr int64_t kCpuAutoBatch = 16;
inline constexpr double kAutoBatchMemoryFraction = 0.7;

struct AutoBatch {
  int64_t batch = kCpuAutoBatch;
  std::string rule;  // how it was chosen, for the profile's config and the progress message
};

// `model` is on `device` and is used for the probes (its BatchNorm statistics move, its
// weights do not: no optimizer step runs). Never fails: a probe that cannot run falls back to
// 16 and says so in `rule`.
AutoBatch PickAutoBatch(Yolo9& model, const DeviceChoice& device, bool amp, int64_t imgsz);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_TRAIN_AUTO_BATCH_H_
