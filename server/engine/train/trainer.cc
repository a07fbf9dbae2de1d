#include "server/engine/train/trainer.h"

#include <torch/cuda.h>
#include <torch/torch.h>

#include <chrono>
#include <thread>
#include <utility>

#include "common/status/status_macros.h"
#include "server/engine/collect/torch_profiler.h"
#include "server/engine/runtime/cuda_runtime.h"

namespace libreyolo::engine {
namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

}  // namespace

std::vector<torch::Tensor> ForwardMaps(Yolo9& model, const torch::Tensor& images, bool amp) {
  std::vector<torch::Tensor> raw;
  {
    const CudaAutocast autocast(amp, /*bfloat16=*/false);
    raw = model->forward_raw(images);
  }
  if (amp) {
    for (torch::Tensor& r : raw) r = r.to(torch::kFloat32);
  }
  return raw;
}

Yolo9Loss TrainingLoss(Yolo9& model, const torch::Tensor& images, const torch::Tensor& targets,
                       int64_t imgsz, const Yolo9LossOptions& options, bool amp) {
  Yolo9Impl::TrainMaps maps;
  {
    const CudaAutocast autocast(amp, /*bfloat16=*/false);
    maps = model->forward_train(images);
  }
  if (amp) {
    for (auto* level : {&maps.main, &maps.aux}) {
      for (torch::Tensor& r : *level) r = r.to(torch::kFloat32);
    }
  }
  const Yolo9Loss main = ComputeYolo9Loss(maps.main, targets, imgsz, options);
  if (maps.aux.empty()) return main;
  return CombineAuxLoss(main, ComputeYolo9Loss(maps.aux, targets, imgsz, options),
                        model->aux_weight());
}

PhaseTimes& PhaseTimes::operator+=(const PhaseTimes& o) {
  dataload += o.dataload;
  to_device += o.to_device;
  forward += o.forward;
  backward += o.backward;
  optimizer += o.optimizer;
  ema += o.ema;
  return *this;
}

PhaseTimes PhaseTimes::Scaled(double k) const {
  return {dataload * k, to_device * k, forward * k, backward * k, optimizer * k, ema * k};
}

Trainer::Trainer(Yolo9 model, const TrainerOptions& options)
    : model_(std::move(model)), options_(options) {
  model_->train();
  loss_options_.num_classes = model_->options().num_classes;
  optimizer_ = BuildSgd(*model_, options_.sgd, &groups_);
  update_ = std::make_unique<SgdUpdate>(*optimizer_);
  ema_ = std::make_unique<ModelEma>(*model_, options_.ema);
  if (options_.amp && options_.device.cuda) {
    scaler_ = std::make_unique<GradScaler>(CudaDevice(options_.device));
  }
}

void Trainer::Sync(bool on) const {
  if (on && options_.device.cuda) torch::cuda::synchronize(options_.device.index);
}

absl::StatusOr<PhaseTimes> Trainer::Step(BatchSource& source, bool sync) {
  PhaseTimes t;
  auto t0 = Clock::now();
  Batch batch;
  {
    ScopedRange r("step/dataload");
    ASSIGN_OR_RETURN(auto next, source.Next());
    batch = std::move(next);
    if (options_.dataload_delay_ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(options_.dataload_delay_ms));
    }
  }
  auto t1 = Clock::now();
  torch::Tensor images, targets;
  {
    ScopedRange r("step/to_device");
    if (options_.device.cuda) {
      const torch::Device device = CudaDevice(options_.device);
      // Non-blocking only helps from pinned memory; the loader pins when it can.
      const bool pinned = batch.images.is_pinned();
      images = batch.images.to(device, /*non_blocking=*/pinned);
      targets = batch.targets.to(device, /*non_blocking=*/pinned);
    } else {
      images = batch.images;
      targets = batch.targets;
    }
    Sync(sync);
  }
  auto t2 = Clock::now();
  Yolo9Loss loss;
  {
    ScopedRange r("step/forward");
    if (data_parallel_ != nullptr) data_parallel_->BeforeForward();
    loss = TrainingLoss(model_, images, targets, options_.imgsz, loss_options_, scaler_ != nullptr);
    if (data_parallel_ != nullptr) data_parallel_->BeforeBackward();
    Sync(sync);
  }
  auto t3 = Clock::now();
  {
    ScopedRange r("step/backward");
    if (scaler_) {
      scaler_->Scale(loss.total).backward();
    } else {
      loss.total.backward();
    }
    Sync(sync);
  }
  auto t4 = Clock::now();
  {
    ScopedRange r("step/optimizer");
    if (scaler_) {
      scaler_->Step(*optimizer_, *update_);
    } else {
      update_->Step();
    }
    optimizer_->zero_grad();
    Sync(sync);
  }
  auto t5 = Clock::now();
  {
    ScopedRange r("step/ema");
    ema_->Update();
    Sync(sync);
  }
  auto t6 = Clock::now();
  last_loss_ = loss.total.detach();
  // Views, no kernel: the step's work is the same with or without the step log.
  last_losses_ = StepLosses{last_loss_, loss.box.detach(), loss.dfl.detach(), loss.cls.detach()};
  t.dataload = Ms(t1 - t0);
  t.to_device = Ms(t2 - t1);
  t.forward = Ms(t3 - t2);
  t.backward = Ms(t4 - t3);
  t.optimizer = Ms(t5 - t4);
  t.ema = Ms(t6 - t5);
  return t;
}

std::vector<double> Trainer::LearningRates() const {
  std::vector<double> out;
  for (const auto& group : optimizer_->param_groups()) out.push_back(group.options().get_lr());
  return out;
}

}  // namespace libreyolo::engine
