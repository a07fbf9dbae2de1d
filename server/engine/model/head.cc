#include "server/engine/model/head.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/utils.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "server/engine/model/module_scope.h"

namespace libreyolo::engine {
namespace {

int64_t RoundUp(int64_t value, int64_t divisor) {
  return (value + divisor - 1) / divisor * divisor;
}

}  // namespace

int64_t ClassTowerWidth(int64_t p3_channels, int64_t num_classes) {
  return std::max(p3_channels, std::min<int64_t>(num_classes, 100));
}

HeadTowerImpl::HeadTowerImpl(int64_t c_in, int64_t hidden, int64_t c_out, int64_t groups) {
  conv0_ = register_module("0", Conv(c_in, hidden, 3));
  conv1_ = register_module("1", Conv(hidden, hidden, 3, 1, groups));
  pred_ = register_module(
      "2", torch::nn::Conv2d(torch::nn::Conv2dOptions(hidden, c_out, 1).groups(groups)));
}

double HeadTowerImpl::Flops(Hw in) const {
  return conv0_->Flops(in) + conv1_->Flops(in) + ConvFlops(*pred_, in);
}

void HeadTowerImpl::FillBias(double value) {
  torch::NoGradGuard no_grad;
  pred_->bias.fill_(value);
}

void HeadTowerImpl::ResetPredictor(at::Generator& generator) {
  torch::NoGradGuard no_grad;
  torch::Tensor& weight = pred_->weight;
  TORCH_CHECK(weight.device().is_cpu(), "ResetPredictor draws on the CPU, before .to(device)");
  // Python's expressions, step for step, so that the bounds are the same doubles:
  // kaiming_uniform_(a=sqrt(5)): gain = sqrt(2 / (1 + a^2)), bound = sqrt(3) * gain / sqrt(fan).
  const auto fan_in = static_cast<double>(weight.size(1) * weight.size(2) * weight.size(3));
  const double a = std::sqrt(5.0);
  const double gain = std::sqrt(2.0 / (1 + a * a));
  const double weight_bound = std::sqrt(3.0) * (gain / std::sqrt(fan_in));
  weight.uniform_(-weight_bound, weight_bound, generator);
  // Conv2d.reset_parameters: bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
  const double bias_bound = 1 / std::sqrt(fan_in);
  pred_->bias.uniform_(-bias_bound, bias_bound, generator);
}

DDetectImpl::DDetectImpl(int64_t num_classes, const std::vector<int64_t>& channels,
                         int64_t class_hidden)
    : num_classes_(num_classes) {
  TORCH_CHECK(static_cast<int64_t>(channels.size()) == kNumLevels, "DDetect needs 3 levels");
  TORCH_CHECK(class_hidden >= 0, "class tower width must be >= 0, got ", class_hidden);
  // Tower widths are part of LibreYOLO9's checkpoint geometry: the box tower is a quarter of
  // the P3 width rounded up to its 4 groups, at least 4*16; the class tower is the caller's
  // (a checkpoint's) or ClassTowerWidth.
  constexpr int64_t kBoxGroups = 4;
  const int64_t box_out = 4 * kRegMax;
  const int64_t box_hidden = std::max({RoundUp(channels[0] / 4, kBoxGroups), box_out, kRegMax});
  if (class_hidden == 0) class_hidden = ClassTowerWidth(channels[0], num_classes);
  class_hidden_ = class_hidden;
  auto box_list = register_module("cv2", torch::nn::ModuleList());
  auto class_list = register_module("cv3", torch::nn::ModuleList());
  // Every box tower, then every class tower, as Python builds cv2 then cv3: the same draws
  // from the same seed (a fresh auxiliary head, yolo9.h EnableAux).
  for (int64_t c : channels) {
    box_towers_.emplace_back(c, box_hidden, box_out, kBoxGroups);
    box_list->push_back(box_towers_.back());
  }
  for (int64_t c : channels) {
    class_towers_.emplace_back(c, class_hidden, num_classes, 1);
    class_list->push_back(class_towers_.back());
  }
  InitBias();
}

void DDetectImpl::InitBias() {
  // Detection prior for training from scratch (a checkpoint overwrites it): box logits start
  // at 1, class logits at -10, i.e. a ~4.5e-5 foreground probability.
  for (auto& tower : box_towers_) tower->FillBias(1.0);
  for (auto& tower : class_towers_) tower->FillBias(-10.0);
}

void DDetectImpl::ReinitialiseClassPredictors(uint64_t seed) {
  // A private generator: the same draws as Python's after torch.manual_seed(seed), without
  // touching the global one that other jobs of the daemon may be using.
  at::Generator generator = at::detail::createCPUGenerator(seed);
  for (auto& tower : class_towers_) tower->ResetPredictor(generator);
  InitBias();
}

std::vector<torch::Tensor> DDetectImpl::forward(const std::vector<torch::Tensor>& feats) {
  const ModuleScope scope(this);
  std::vector<torch::Tensor> out;
  out.reserve(feats.size());
  // The towers' forward is inline in the header: their scopes open here.
  auto tower = [](HeadTower& t, const torch::Tensor& x) {
    const ModuleScope tower_scope(t.get());
    return t(x);
  };
  for (size_t i = 0; i < feats.size(); ++i) {
    out.push_back(
        torch::cat({tower(box_towers_[i], feats[i]), tower(class_towers_[i], feats[i])}, 1));
  }
  return out;
}

void DDetectImpl::UpdateGrid(const std::vector<torch::Tensor>& raw) {
  const torch::Tensor& first = raw.front();
  std::vector<int64_t> key = {static_cast<int64_t>(first.scalar_type()),
                              static_cast<int64_t>(first.device().type()), first.device().index()};
  for (const auto& level : raw) {
    key.push_back(level.size(2));
    key.push_back(level.size(3));
  }
  if (key == grid_key_) return;
  const auto options = first.options();
  std::vector<torch::Tensor> points;
  std::vector<torch::Tensor> strides;
  for (size_t i = 0; i < raw.size(); ++i) {
    const int64_t h = raw[i].size(2);
    const int64_t w = raw[i].size(3);
    torch::Tensor xs = torch::arange(w, options) + 0.5;
    torch::Tensor ys = torch::arange(h, options) + 0.5;
    std::vector<torch::Tensor> grid = torch::meshgrid({ys, xs}, "ij");
    points.push_back(torch::stack({grid[1], grid[0]}, -1).reshape({-1, 2}));
    strides.push_back(torch::full({h * w, 1}, static_cast<double>(kStrides[i]), options));
  }
  anchors_ = torch::cat(points).transpose(0, 1);
  anchor_strides_ = torch::cat(strides).transpose(0, 1);
  bins_ = torch::arange(kRegMax, options).view({1, 1, kRegMax, 1});
  grid_key_ = std::move(key);
}

torch::Tensor DDetectImpl::Decode(const std::vector<torch::Tensor>& raw) {
  TORCH_CHECK(static_cast<int64_t>(raw.size()) == kNumLevels, "Decode needs 3 levels");
  const ModuleScope scope(this, "decode");  // inside Python's head forward: "head.decode"
  UpdateGrid(raw);
  std::vector<torch::Tensor> box_levels;
  std::vector<torch::Tensor> score_levels;
  for (const auto& level : raw) {
    std::vector<torch::Tensor> parts =
        level.flatten(2).split_with_sizes({4 * kRegMax, num_classes_}, 1);
    box_levels.push_back(parts[0]);
    score_levels.push_back(parts[1]);
  }
  torch::Tensor logits = torch::cat(box_levels, 2);
  const int64_t batch = logits.size(0);
  const int64_t anchors = logits.size(2);
  // DFL: the expected distance under a softmax over the 16 bins, per side (l, t, r, b).
  torch::Tensor dist = logits.view({batch, 4, kRegMax, anchors}).softmax(2).mul(bins_).sum(2);
  std::vector<torch::Tensor> lt_rb = dist.chunk(2, 1);
  torch::Tensor centres = anchors_.unsqueeze(0);
  torch::Tensor boxes = torch::cat({centres - lt_rb[0], centres + lt_rb[1]}, 1) * anchor_strides_;
  torch::Tensor scores = torch::cat(score_levels, 2).sigmoid();
  return torch::cat({boxes, scores}, 1);
}

double DDetectImpl::Flops(const std::vector<Hw>& level_sizes) const {
  double flops = 0.0;
  for (size_t i = 0; i < level_sizes.size() && i < box_towers_.size(); ++i) {
    flops += box_towers_[i]->Flops(level_sizes[i]) + class_towers_[i]->Flops(level_sizes[i]);
  }
  return flops;
}

}  // namespace libreyolo::engine
