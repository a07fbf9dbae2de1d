#include "server/engine/model/blocks.h"

#include <torch/nn/functional/upsampling.h>

#include <string>

#include "server/engine/model/module_scope.h"

namespace libreyolo::engine {

double ConvFlops(const torch::nn::Conv2dImpl& conv, Hw out) {
  return 2.0 * static_cast<double>(conv.weight.numel()) * static_cast<double>(out.h) *
         static_cast<double>(out.w);
}

ConvImpl::ConvImpl(int64_t c1, int64_t c2, int64_t k, int64_t s, int64_t groups, bool act)
    : stride_(s), act_(act) {
  conv_ = register_module(
      "conv",
      torch::nn::Conv2d(
          torch::nn::Conv2dOptions(c1, c2, k).stride(s).padding(k / 2).groups(groups).bias(false)));
  // YOLO's BN settings (not PyTorch's 1e-5 / 0.1): they change both eval outputs and training.
  bn_ = register_module(
      "bn", torch::nn::BatchNorm2d(torch::nn::BatchNorm2dOptions(c2).eps(1e-3).momentum(0.03)));
}

torch::Tensor ConvImpl::forward(const torch::Tensor& x) {
  const ModuleScope scope(this);
  torch::Tensor y = bn_(conv_(x));
  return act_ ? torch::silu(y) : y;
}

RepConvNImpl::RepConvNImpl(int64_t c1, int64_t c2) {
  conv1_ = register_module("conv1", Conv(c1, c2, 3, 1, 1, false));
  conv2_ = register_module("conv2", Conv(c1, c2, 1, 1, 1, false));
}

torch::Tensor RepConvNImpl::forward(const torch::Tensor& x) {
  const ModuleScope scope(this);
  return torch::silu(conv1_(x) + conv2_(x));
}

RepNBottleneckImpl::RepNBottleneckImpl(int64_t c) {
  cv1_ = register_module("cv1", RepConvN(c, c));
  cv2_ = register_module("cv2", Conv(c, c, 3));
}

torch::Tensor RepNBottleneckImpl::forward(const torch::Tensor& x) {
  const ModuleScope scope(this);
  return x + cv2_(cv1_(x));
}

RepNCSPImpl::RepNCSPImpl(int64_t c1, int64_t c2, int64_t n) {
  const int64_t hidden = c2 / 2;
  cv1_ = register_module("cv1", Conv(c1, hidden, 1));
  cv2_ = register_module("cv2", Conv(c1, hidden, 1));
  cv3_ = register_module("cv3", Conv(2 * hidden, c2, 1));
  auto list = register_module("m", torch::nn::ModuleList());
  for (int64_t i = 0; i < n; ++i) {
    m_.emplace_back(hidden);
    list->push_back(m_.back());
  }
}

torch::Tensor RepNCSPImpl::forward(const torch::Tensor& x) {
  const ModuleScope scope(this);
  torch::Tensor y = cv1_(x);
  for (auto& block : m_) y = block(y);
  return cv3_(torch::cat({y, cv2_(x)}, 1));
}

double RepNCSPImpl::Flops(Hw in) const {
  double flops = cv1_->Flops(in) + cv2_->Flops(in) + cv3_->Flops(in);
  for (const auto& block : m_) flops += block->Flops(in);
  return flops;
}

ELANImpl::ELANImpl(int64_t c1, int64_t c2, int64_t c3, int64_t c4, int64_t n) {
  cv1_ = register_module("cv1", Conv(c1, c2, 1));
  cv2_ = register_module("cv2", Conv(c2 / 2, c3, 3));
  cv3_ = register_module("cv3", Conv(c3, c3, 3));
  cv4_ = register_module("cv4", Conv(c2 + c3 * (1 + n), c4, 1));
  // Python registers the (empty for n = 1) ModuleList even though it holds no weights.
  auto list = register_module("m", torch::nn::ModuleList());
  for (int64_t i = 0; i + 1 < n; ++i) {
    m_.emplace_back(c3, c3, 3);
    list->push_back(m_.back());
  }
}

torch::Tensor ELANImpl::forward(const torch::Tensor& x) {
  const ModuleScope scope(this);
  // chunk() returns views: the split costs no copy, only the final cat does.
  std::vector<torch::Tensor> y = cv1_(x).chunk(2, 1);
  y.push_back(cv2_(y.back()));
  y.push_back(cv3_(y.back()));
  for (auto& conv : m_) y.push_back(conv(y.back()));
  return cv4_(torch::cat(y, 1));
}

double ELANImpl::Flops(Hw in) const {
  double flops = cv1_->Flops(in) + cv2_->Flops(in) + cv3_->Flops(in) + cv4_->Flops(in);
  for (const auto& conv : m_) flops += conv->Flops(in);
  return flops;
}

RepNCSPConvImpl::RepNCSPConvImpl(int64_t c1, int64_t c2, int64_t n) {
  csp_ = register_module("0", RepNCSP(c1, c2, n));
  conv_ = register_module("1", Conv(c2, c2, 3));
}

RepNCSPELANImpl::RepNCSPELANImpl(int64_t c1, int64_t c2, int64_t c3, int64_t c4, int64_t n) {
  cv1_ = register_module("cv1", Conv(c1, c2, 1));
  cv2_ = register_module("cv2", RepNCSPConv(c2 / 2, c3, n));
  cv3_ = register_module("cv3", RepNCSPConv(c3, c3, n));
  cv4_ = register_module("cv4", Conv(c2 + 2 * c3, c4, 1));
}

torch::Tensor RepNCSPELANImpl::forward(const torch::Tensor& x) {
  const ModuleScope scope(this);
  std::vector<torch::Tensor> y = cv1_(x).chunk(2, 1);
  // RepNCSPConv's forward is inline in the header: its scope opens here.
  for (RepNCSPConv* branch : {&cv2_, &cv3_}) {
    const ModuleScope branch_scope(branch->get());
    y.push_back((*branch)(y.back()));
  }
  return cv4_(torch::cat(y, 1));
}

double RepNCSPELANImpl::Flops(Hw in) const {
  return cv1_->Flops(in) + cv2_->Flops(in) + cv3_->Flops(in) + cv4_->Flops(in);
}

AConvImpl::AConvImpl(int64_t c1, int64_t c2) { cv_ = register_module("cv", Conv(c1, c2, 3, 2)); }

torch::Tensor AConvImpl::forward(const torch::Tensor& x) {
  const ModuleScope scope(this);
  // Python: F.avg_pool2d(x, 2, 1, 0, ceil_mode=False, count_include_pad=True).
  return cv_(torch::avg_pool2d(x, {2, 2}, {1, 1}, {0, 0}, false, true));
}

ADownImpl::ADownImpl(int64_t c1, int64_t c2) {
  cv1_ = register_module("cv1", Conv(c1 / 2, c2 / 2, 3, 2));
  cv2_ = register_module("cv2", Conv(c1 / 2, c2 / 2, 1));
}

torch::Tensor ADownImpl::forward(const torch::Tensor& x) {
  const ModuleScope scope(this);
  std::vector<torch::Tensor> halves =
      torch::avg_pool2d(x, {2, 2}, {1, 1}, {0, 0}, false, true).chunk(2, 1);
  torch::Tensor a = cv1_(halves[0]);
  torch::Tensor b = cv2_(torch::max_pool2d(halves[1], {3, 3}, {2, 2}, {1, 1}));
  return torch::cat({a, b}, 1);
}

SPPELANImpl::SPPELANImpl(int64_t c1, int64_t c2, int64_t c3) {
  cv1_ = register_module("cv1", Conv(c1, c2, 1));
  cv5_ = register_module("cv5", Conv(4 * c2, c3, 1));
}

torch::Tensor SPPELANImpl::forward(const torch::Tensor& x) {
  const ModuleScope scope(this);
  std::vector<torch::Tensor> features;
  features.reserve(4);
  features.push_back(cv1_(x));
  for (int i = 0; i < 3; ++i) {
    features.push_back(torch::max_pool2d(features.back(), {5, 5}, {1, 1}, {2, 2}));
  }
  return cv5_(torch::cat(features, 1));
}

torch::Tensor Upsample2x(const torch::Tensor& x) {
  namespace F = torch::nn::functional;
  return F::interpolate(x, F::InterpolateFuncOptions()
                               .scale_factor(std::vector<double>{2.0, 2.0})
                               .mode(torch::kNearest));
}

}  // namespace libreyolo::engine
