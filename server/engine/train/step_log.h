// metrics.jsonl: one line per training step the job ran outside the profiler (the measured
// trials' warmup and measured steps), for a user to plot, as the Python LibreYOLO writes one
// line per epoch (training/artifacts.py TrainingStatusCallback: "train/<name>_loss", "lr/pg<i>"
// columns). The losses stay on the device while the steps run and are read once, after them,
// so logging never adds a synchronisation to a timed step.
#ifndef LIBREYOLO_SERVER_ENGINE_TRAIN_STEP_LOG_H_
#define LIBREYOLO_SERVER_ENGINE_TRAIN_STEP_LOG_H_

#include <torch/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace libreyolo::engine {

// One step's losses as the trainer computed them (detached scalars, on the device).
struct StepLosses {
  torch::Tensor total, box, dfl, cls;
};

struct StepRecord {
  std::string stage;  // "warmup" | "measuring"
  int64_t trial = 1;  // 1-based
  int64_t step = 1;   // 1-based over the whole log
  StepLosses losses;
  // The step's wall time where it was synchronised (every CPU step; the per-phase CUDA steps);
  // null where the host ran ahead of the device (unsynchronised CUDA steps: one step's wall time
  // means nothing there, only the window's mean does).
  std::optional<double> step_ms;
  std::vector<double> lr;  // per parameter group
};

class StepLog {
 public:
  void Add(StepRecord r) { records_.push_back(std::move(r)); }
  size_t size() const { return records_.size(); }
  // The JSON lines, reading every loss in one device-to-host copy. Non-finite losses are null.
  std::string ToJsonLines() const;

 private:
  std::vector<StepRecord> records_;
};

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_TRAIN_STEP_LOG_H_
