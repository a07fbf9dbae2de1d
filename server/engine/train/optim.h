// The update side of a LibreYOLO9 training step, as the reference trainer sets it up: SGD
// (lr 0.01, momentum 0.937, Nesterov) with weight decay on convolution weights only, an
// exponential moving average of the weights (decay 0.9999, ramped), and dynamic loss scaling
// for float16 on CUDA (LibTorch's C++ API has no GradScaler).
#ifndef LIBREYOLO_SERVER_ENGINE_TRAIN_OPTIM_H_
#define LIBREYOLO_SERVER_ENGINE_TRAIN_OPTIM_H_

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>
#include <torch/optim/sgd.h>
#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace libreyolo::engine {

struct SgdSettings {
  double lr = 0.01;
  double momentum = 0.937;
  bool nesterov = true;
  double weight_decay = 5e-4;  // conv (non-BatchNorm) weights only
};

// How the parameters were split, for the profile's config.
struct ParamGroupCounts {
  int64_t bn_weights = 0;       // BatchNorm weights: no decay
  int64_t decayed_weights = 0;  // every other module's `weight`: decay
  int64_t no_decay = 0;         // biases (BatchNorm's too) and any other parameter: no decay
  std::string Describe(const SgdSettings& s) const;
};

// Groups as LibreYOLO's BaseTrainer does (pg0 BatchNorm weights, pg1 other weights with decay,
// pg2 biases and stray parameters), each with an explicit weight_decay so no group inherits a
// default. Only parameters that require grad take part. The optimizer holds the parameters'
// tensors, so build it after the model is on its device.
std::unique_ptr<torch::optim::SGD> BuildSgd(torch::nn::Module& model, const SgdSettings& s,
                                            ParamGroupCounts* counts);

// The update itself, done as PyTorch's torch.optim.SGD does it by default on each device (the
// Python LibreYOLO builds it so: its build_optimizer keeps SGD off the fused path, whose
// momentum advances on steps a GradScaler skips). When every parameter is on CUDA: the
// multi-tensor path (_multi_tensor_sgd: a few at::_foreach_* calls per group, each a handful of
// launches for all its tensors) instead of a chain of ops per parameter tensor (thousands of
// launches a step). Elsewhere: LibTorch's per-parameter SGD::step, PyTorch's single-tensor path
// (its default off CUDA). Same arithmetic either way.
class SgdUpdate {
 public:
  explicit SgdUpdate(torch::optim::SGD& sgd);
  bool foreach() const { return foreach_; }
  // "foreach (CUDA, multi-tensor)" or "per-tensor", for the profile's config.
  std::string Describe() const;
  void Step();

 private:
  void ForeachStep();
  torch::optim::SGD& sgd_;
  bool foreach_ = false;
  std::vector<std::vector<torch::Tensor>> buffers_;  // momentum, per group and parameter
};

// ---- EMA: LibreYOLO's ModelEMA (from YOLOX / timm): decay 0.9999 ramped by
// (1 - exp(-updates / 2000)) so the average follows the model closely while training starts.

struct EmaSettings {
  double decay = 0.9999;
  double tau = 2000;  // ramp time constant in updates; <= 0 = constant decay
};

class ModelEma {
 public:
  // Shadows every floating-point parameter and buffer of `model` (BatchNorm running
  // statistics included, the integer batch counters not), on the model's device. Keeps
  // handles to the model's tensors: construct it after the model reached its device.
  explicit ModelEma(torch::nn::Module& model, const EmaSettings& settings = {});

  // v = d * v + (1 - d) * model, d = decay * (1 - exp(-updates / tau)). On CUDA two
  // multi-tensor (_foreach) calls, as the reference does; elsewhere per tensor.
  void Update();

  // The decay the next Update() will use.
  double NextDecay() const;
  int64_t updates() const { return updates_; }
  const std::vector<torch::Tensor>& shadow() const { return shadow_; }

 private:
  EmaSettings settings_;
  int64_t updates_ = 0;
  std::vector<torch::Tensor> source_;  // the model's tensors (shared storage)
  std::vector<torch::Tensor> shadow_;  // the average, same order
  bool cuda_ = false;
};

// ---- Loss scaling: the part of torch.amp.GradScaler a float16 step needs: scale the loss,
// unscale the gradients and skip the step when any is inf/NaN, then grow or back off.

struct GradScalerSettings {
  double init_scale = 65536.0;  // torch.amp.GradScaler's defaults
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
};

class GradScaler {
 public:
  // `device` must be a CUDA device (float16 training is CUDA-only here).
  explicit GradScaler(const torch::Device& device, const GradScalerSettings& s = {});

  torch::Tensor Scale(const torch::Tensor& loss) const { return loss * scale_; }

  // Unscales the gradients of every parameter `optimizer` holds, runs `update` when they are
  // all finite, and updates the scale, as GradScaler.step + update do (one flag read back from
  // the device: a sync, as GradScaler's non-fused path does).
  void Step(torch::optim::SGD& optimizer, SgdUpdate& update);

  double scale() const { return scale_.item<double>(); }
  // Steps skipped for inf/NaN gradients (reads a device counter: a sync).
  int64_t skipped_steps() const;

 private:
  GradScalerSettings settings_;
  torch::Tensor scale_;           // float32 [1] on the device
  torch::Tensor growth_tracker_;  // int32 [1]: finite steps since the last change
  torch::Tensor skipped_;         // float32 [1]: sum of found_inf over the steps
};

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_TRAIN_OPTIM_H_
