// One LibreYOLO9 training step with its phases marked for the profiler: step/dataload (the
// loader's next batch), step/to_device, step/forward (forward_train, the PGI auxiliary branch's
// included while attached, and the loss: the reference computes its loss inside the model's
// forward, so its "forward" includes it and ours does too),
// step/backward, step/optimizer (step + zero_grad) and step/ema.
#ifndef LIBREYOLO_SERVER_ENGINE_TRAIN_TRAINER_H_
#define LIBREYOLO_SERVER_ENGINE_TRAIN_TRAINER_H_

#include <torch/optim/sgd.h>
#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "server/engine/data/batch.h"
#include "server/engine/data/loader.h"
#include "server/engine/loss/yolo9_loss.h"
#include "server/engine/model/yolo9.h"
#include "server/engine/runtime/runtime_info.h"
#include "server/engine/train/data_parallel.h"
#include "server/engine/train/optim.h"
#include "server/engine/train/step_log.h"

namespace libreyolo::engine {

// The torch device of a CUDA choice (LibTorch's index type is narrower than int).
inline torch::Device CudaDevice(const DeviceChoice& d) {
  return {torch::kCUDA, static_cast<c10::DeviceIndex>(d.index)};
}

// forward_raw, under float16 autocast when `amp`. The maps come back float32 either way: the
// loss (its assigner scatters into float32 tensors) is written for float32, so with AMP the
// loss runs in float32 on the float16 maps cast up.
std::vector<torch::Tensor> ForwardMaps(Yolo9& model, const torch::Tensor& images, bool amp);

// One step's loss as the Python LibreYOLO9Model's forward with targets computes it: the main
// head's, plus the PGI auxiliary head's at the model's aux_weight while the branch is attached
// (CombineAuxLoss). Both heads' maps come from one forward_train, under float16 autocast when
// `amp`, cast up to float32 for the loss as ForwardMaps does.
Yolo9Loss TrainingLoss(Yolo9& model, const torch::Tensor& images, const torch::Tensor& targets,
                       int64_t imgsz, const Yolo9LossOptions& options, bool amp);

// Wall milliseconds of one step's phases.
struct PhaseTimes {
  double dataload = 0, to_device = 0, forward = 0, backward = 0, optimizer = 0, ema = 0;
  double total() const { return dataload + to_device + forward + backward + optimizer + ema; }
  PhaseTimes& operator+=(const PhaseTimes& o);
  PhaseTimes Scaled(double k) const;
};

struct TrainerOptions {
  DeviceChoice device;
  bool amp = false;  // float16 autocast + loss scaling; honoured on CUDA only
  int64_t imgsz = 640;
  SgdSettings sgd;
  EmaSettings ema;
  int64_t dataload_delay_ms = 0;  // TrainJobSpec::inject_dataload_delay_ms
};

class Trainer {
 public:
  // `model` must already be on options.device; it is put in training mode.
  Trainer(Yolo9 model, const TrainerOptions& options);

  // One step. `sync` waits for the device at the end of each phase (CUDA) so that the phase
  // wall times are real; unsynchronised steps give the honest step time. Loader errors come
  // back as a Status; LibTorch failures throw c10::Error (callers catch at their edge).
  absl::StatusOr<PhaseTimes> Step(BatchSource& source, bool sync);

  // The last step's loss (detached, on the device; reading it syncs).
  const torch::Tensor& last_loss() const { return last_loss_; }
  // The last step's loss and its parts, the same way.
  const StepLosses& last_losses() const { return last_losses_; }
  // Each parameter group's learning rate now (host values, no sync).
  std::vector<double> LearningRates() const;
  const ParamGroupCounts& groups() const { return groups_; }
  // How the optimizer updates: "foreach (CUDA, ...)" or "per-tensor" (SgdUpdate::Describe).
  std::string UpdateDescription() const { return update_->Describe(); }
  const ModelEma& ema() const { return *ema_; }
  bool amp() const { return scaler_ != nullptr; }
  const DeviceChoice& device() const { return options_.device; }
  int64_t skipped_steps() const { return scaler_ ? scaler_->skipped_steps() : 0; }
  // A data-parallel rank's c10d hooks around each step's forward and backward (not owned; it
  // must have joined with this trainer's model before the trainer was built, so that the EMA
  // starts from rank 0's weights).
  void set_data_parallel(DataParallel* dp) { data_parallel_ = dp; }

 private:
  void Sync(bool on) const;

  Yolo9 model_;
  TrainerOptions options_;
  Yolo9LossOptions loss_options_;
  ParamGroupCounts groups_;
  std::unique_ptr<torch::optim::SGD> optimizer_;
  std::unique_ptr<SgdUpdate> update_;  // per-tensor, or foreach on CUDA
  std::unique_ptr<ModelEma> ema_;
  std::unique_ptr<GradScaler> scaler_;
  DataParallel* data_parallel_ = nullptr;
  torch::Tensor last_loss_;
  StepLosses last_losses_;
};

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_TRAIN_TRAINER_H_
