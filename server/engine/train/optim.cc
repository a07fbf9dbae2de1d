#include "server/engine/train/optim.h"

#include <ATen/ATen.h>
#include <torch/nn/modules/batchnorm.h>

#include <cmath>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"

namespace libreyolo::engine {
namespace {

template <typename M>
bool Is(const torch::nn::Module& m) {
  return dynamic_cast<const M*>(&m) != nullptr;
}

bool IsBatchNorm(const torch::nn::Module& m) {
  return Is<torch::nn::BatchNorm1dImpl>(m) || Is<torch::nn::BatchNorm2dImpl>(m) ||
         Is<torch::nn::BatchNorm3dImpl>(m);
}

}  // namespace

std::string ParamGroupCounts::Describe(const SgdSettings& s) const {
  return absl::StrFormat(
      "SGD lr %g momentum %g%s; weight_decay %g on %d conv weights, none on %d BatchNorm "
      "weights and %d biases",
      s.lr, s.momentum, s.nesterov ? " nesterov" : "", s.weight_decay, decayed_weights, bn_weights,
      no_decay);
}

std::unique_ptr<torch::optim::SGD> BuildSgd(torch::nn::Module& model, const SgdSettings& s,
                                            ParamGroupCounts* counts) {
  std::vector<torch::Tensor> bn, decayed, plain;
  // A parameter shared by two modules must join one group only (LibTorch rejects duplicates).
  std::set<const void*> seen;
  auto add = [&](std::vector<torch::Tensor>& group, const torch::Tensor& p) {
    if (!p.defined() || !p.requires_grad()) return;
    if (!seen.insert(p.unsafeGetTensorImpl()).second) return;
    group.push_back(p);
  };
  for (const auto& item : model.named_modules("", /*include_self=*/true)) {
    const torch::nn::Module& m = *item.value();
    for (const auto& param : m.named_parameters(/*recurse=*/false)) {
      if (param.key() == "bias") {
        add(plain, param.value());
      } else if (param.key() == "weight") {
        add(IsBatchNorm(m) ? bn : decayed, param.value());
      }
    }
  }
  // Parameters that are not a module's weight or bias (none in LibreYOLO9 today) still train,
  // without decay, as the reference's sweep of leftovers does.
  for (const auto& param : model.named_parameters(/*recurse=*/true)) add(plain, param.value());

  if (counts != nullptr) {
    counts->bn_weights = static_cast<int64_t>(bn.size());
    counts->decayed_weights = static_cast<int64_t>(decayed.size());
    counts->no_decay = static_cast<int64_t>(plain.size());
  }
  auto options = [&](double decay) {
    auto o = std::make_unique<torch::optim::SGDOptions>(s.lr);
    o->momentum(s.momentum).nesterov(s.nesterov).weight_decay(decay);
    return o;
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  if (!bn.empty()) groups.emplace_back(std::move(bn), options(0.0));
  if (!decayed.empty()) groups.emplace_back(std::move(decayed), options(s.weight_decay));
  if (!plain.empty()) groups.emplace_back(std::move(plain), options(0.0));
  torch::optim::SGDOptions defaults(s.lr);
  defaults.momentum(s.momentum).nesterov(s.nesterov).weight_decay(0.0);
  return std::make_unique<torch::optim::SGD>(std::move(groups), defaults);
}

ModelEma::ModelEma(torch::nn::Module& model, const EmaSettings& settings) : settings_(settings) {
  torch::NoGradGuard no_grad;
  auto take = [&](const torch::Tensor& t) {
    if (!t.defined() || !t.is_floating_point()) return;
    source_.push_back(t);
    shadow_.push_back(t.detach().clone());
    cuda_ = cuda_ || t.is_cuda();
  };
  for (const auto& p : model.named_parameters(/*recurse=*/true)) take(p.value());
  for (const auto& b : model.named_buffers(/*recurse=*/true)) take(b.value());
}

double ModelEma::NextDecay() const {
  const double n = static_cast<double>(updates_ + 1);
  if (settings_.tau <= 0) return settings_.decay;
  return settings_.decay * (1.0 - std::exp(-n / settings_.tau));
}

void ModelEma::Update() {
  const double d = NextDecay();
  ++updates_;
  torch::NoGradGuard no_grad;
  if (cuda_) {
    // One launch per op for all tensors instead of two per tensor: the step is launch-bound.
    at::_foreach_mul_(shadow_, d);
    at::_foreach_add_(shadow_, source_, 1.0 - d);
    return;
  }
  for (size_t i = 0; i < shadow_.size(); ++i) shadow_[i].mul_(d).add_(source_[i], 1.0 - d);
}

SgdUpdate::SgdUpdate(torch::optim::SGD& sgd) : sgd_(sgd) {
  bool all_cuda = false;
  for (const auto& group : sgd_.param_groups()) {
    for (const torch::Tensor& p : group.params()) {
      if (!p.is_cuda()) return;  // per-tensor
      all_cuda = true;
    }
  }
  foreach_ = all_cuda;
  buffers_.resize(sgd_.param_groups().size());
}

std::string SgdUpdate::Describe() const {
  return foreach_ ? "foreach (CUDA, multi-tensor)" : "per-tensor";
}

void SgdUpdate::Step() {
  if (foreach_) {
    ForeachStep();
  } else {
    sgd_.step();
  }
}

// torch/optim/sgd.py's _multi_tensor_sgd (maximize off), group by group.
void SgdUpdate::ForeachStep() {
  torch::NoGradGuard no_grad;
  for (size_t g = 0; g < sgd_.param_groups().size(); ++g) {
    auto& group = sgd_.param_groups()[g];
    const auto& o = static_cast<const torch::optim::SGDOptions&>(group.options());
    std::vector<torch::Tensor> params, grads;
    for (const torch::Tensor& p : group.params()) {
      if (!p.grad().defined()) continue;
      params.push_back(p);
      grads.push_back(p.grad());
    }
    if (params.empty()) continue;
    if (o.weight_decay() != 0) grads = at::_foreach_add(grads, params, o.weight_decay());
    if (o.momentum() != 0) {
      std::vector<torch::Tensor>& bufs = buffers_[g];
      if (bufs.size() != grads.size()) {
        // First step: the buffers start as the gradients (clone().detach(), as PyTorch).
        bufs.clear();
        for (const torch::Tensor& grad : grads) bufs.push_back(grad.clone().detach());
      } else {
        at::_foreach_mul_(bufs, o.momentum());
        at::_foreach_add_(bufs, grads, 1.0 - o.dampening());
      }
      if (o.nesterov()) {
        at::_foreach_add_(grads, bufs, o.momentum());
      } else {
        grads = bufs;
      }
    }
    at::_foreach_add_(params, grads, -o.lr());
  }
}

GradScaler::GradScaler(const torch::Device& device, const GradScalerSettings& s)
    : settings_(s),
      scale_(torch::full({1}, s.init_scale, torch::dtype(torch::kFloat32).device(device))),
      growth_tracker_(torch::zeros({1}, torch::dtype(torch::kInt32).device(device))),
      skipped_(torch::zeros({1}, torch::dtype(torch::kFloat32).device(device))) {}

void GradScaler::Step(torch::optim::SGD& optimizer, SgdUpdate& update) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> grads;
  for (const auto& group : optimizer.param_groups()) {
    for (const torch::Tensor& p : group.params()) {
      if (p.grad().defined()) grads.push_back(p.grad());
    }
  }
  auto found_inf = torch::zeros({1}, scale_.options());
  // The reciprocal in double, as GradScaler computes it, so large scales stay exact.
  const torch::Tensor inv_scale = scale_.to(torch::kFloat64).reciprocal().to(torch::kFloat32);
  if (!grads.empty()) at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale);
  if (found_inf.item<float>() == 0.0F) update.Step();
  skipped_.add_(found_inf);
  at::_amp_update_scale_(scale_, growth_tracker_, found_inf, settings_.growth_factor,
                         settings_.backoff_factor, settings_.growth_interval);
}

int64_t GradScaler::skipped_steps() const {
  return static_cast<int64_t>(skipped_.item<float>());
}

}  // namespace libreyolo::engine
