// The YOLOv9 building blocks, laid out so that named_parameters()/named_buffers() reproduce
// LibreYOLO's state-dict keys: every submodule is registered under the Python attribute name,
// and Python's nn.Sequential/nn.ModuleList children under "0", "1", ... so that checkpoints
// load by name. Each block also reports the FLOPs of its convolutions for a given input size,
// computed from the weight shapes (no forward pass), so a profile can state the model's work.
#ifndef LIBREYOLO_SERVER_ENGINE_MODEL_BLOCKS_H_
#define LIBREYOLO_SERVER_ENGINE_MODEL_BLOCKS_H_

#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cstdint>
#include <vector>

namespace libreyolo::engine {

// Spatial size of a feature map.
struct Hw {
  int64_t h = 0;
  int64_t w = 0;
};

// FLOPs of one convolution at batch 1: 2 per multiply-add, i.e. 2 * weight.numel() per output
// pixel (the weight is [out, in/groups, kh, kw]); biases, BN and activations are not counted,
// as in the usual GFLOPs figures quoted for YOLO models.
double ConvFlops(const torch::nn::Conv2dImpl& conv, Hw out);

// Conv2d (no bias, "same" padding k/2) + BatchNorm (eps 1e-3, momentum 0.03) + optional SiLU.
class ConvImpl : public torch::nn::Module {
 public:
  ConvImpl(int64_t c1, int64_t c2, int64_t k, int64_t s = 1, int64_t groups = 1, bool act = true);
  torch::Tensor forward(const torch::Tensor& x);
  // "same" padding k/2, so only the stride changes the size.
  Hw Out(Hw in) const { return {(in.h - 1) / stride_ + 1, (in.w - 1) / stride_ + 1}; }
  double Flops(Hw in) const { return ConvFlops(*conv_, Out(in)); }

 private:
  torch::nn::Conv2d conv_{nullptr};
  torch::nn::BatchNorm2d bn_{nullptr};
  int64_t stride_;
  bool act_;
};
TORCH_MODULE(Conv);

// RepVGG-style block in its training form: SiLU(BN(conv3x3(x)) + BN(conv1x1(x))). LibreYOLO
// builds it without the identity BN branch, so there is none here either.
class RepConvNImpl : public torch::nn::Module {
 public:
  RepConvNImpl(int64_t c1, int64_t c2);
  torch::Tensor forward(const torch::Tensor& x);
  double Flops(Hw in) const { return conv1_->Flops(in) + conv2_->Flops(in); }

 private:
  Conv conv1_{nullptr};
  Conv conv2_{nullptr};
};
TORCH_MODULE(RepConvN);

// x + Conv3x3(RepConvN(x)) (always c1 == c2 in YOLOv9, so the shortcut is always taken).
class RepNBottleneckImpl : public torch::nn::Module {
 public:
  explicit RepNBottleneckImpl(int64_t c);
  torch::Tensor forward(const torch::Tensor& x);
  double Flops(Hw in) const { return cv1_->Flops(in) + cv2_->Flops(in); }

 private:
  RepConvN cv1_{nullptr};
  Conv cv2_{nullptr};
};
TORCH_MODULE(RepNBottleneck);

// CSP block: cv3(cat(m(cv1(x)), cv2(x))) with n RepNBottlenecks at half width.
class RepNCSPImpl : public torch::nn::Module {
 public:
  RepNCSPImpl(int64_t c1, int64_t c2, int64_t n);
  torch::Tensor forward(const torch::Tensor& x);
  double Flops(Hw in) const;

 private:
  Conv cv1_{nullptr};
  Conv cv2_{nullptr};
  Conv cv3_{nullptr};
  std::vector<RepNBottleneck> m_;  // also registered as the ModuleList "m"
};
TORCH_MODULE(RepNCSP);

// ELAN (t/s first block): split cv1 in two, chain 3x3 convs on the second half, concat all.
class ELANImpl : public torch::nn::Module {
 public:
  ELANImpl(int64_t c1, int64_t c2, int64_t c3, int64_t c4, int64_t n = 1);
  torch::Tensor forward(const torch::Tensor& x);
  double Flops(Hw in) const;

 private:
  Conv cv1_{nullptr};
  Conv cv2_{nullptr};
  Conv cv3_{nullptr};
  Conv cv4_{nullptr};
  std::vector<Conv> m_;  // the n-1 extra convs, registered as the ModuleList "m"
};
TORCH_MODULE(ELAN);

// Python's nn.Sequential(RepNCSP, Conv3x3) inside RepNCSPELAN, with children "0" and "1".
class RepNCSPConvImpl : public torch::nn::Module {
 public:
  RepNCSPConvImpl(int64_t c1, int64_t c2, int64_t n);
  torch::Tensor forward(const torch::Tensor& x) { return conv_(csp_(x)); }
  double Flops(Hw in) const { return csp_->Flops(in) + conv_->Flops(in); }

 private:
  RepNCSP csp_{nullptr};
  Conv conv_{nullptr};
};
TORCH_MODULE(RepNCSPConv);

// RepNCSPELAN(c1, c2 = part, c3 = part/2, c4 = out, n): ELAN whose branches are CSP blocks.
class RepNCSPELANImpl : public torch::nn::Module {
 public:
  RepNCSPELANImpl(int64_t c1, int64_t c2, int64_t c3, int64_t c4, int64_t n = 1);
  torch::Tensor forward(const torch::Tensor& x);
  double Flops(Hw in) const;

 private:
  Conv cv1_{nullptr};
  RepNCSPConv cv2_{nullptr};
  RepNCSPConv cv3_{nullptr};
  Conv cv4_{nullptr};
};
TORCH_MODULE(RepNCSPELAN);

// Downsampling: avg_pool 2x2 stride 1, then Conv 3x3 stride 2.
class AConvImpl : public torch::nn::Module {
 public:
  AConvImpl(int64_t c1, int64_t c2);
  torch::Tensor forward(const torch::Tensor& x);
  Hw Out(Hw in) const { return cv_->Out(Pooled(in)); }
  double Flops(Hw in) const { return cv_->Flops(Pooled(in)); }

 private:
  static Hw Pooled(Hw in) { return {in.h - 1, in.w - 1}; }
  Conv cv_{nullptr};
};
TORCH_MODULE(AConv);

// Downsampling (c): avg_pool 2x2 s1, then half the channels through Conv 3x3 s2 and half
// through max_pool 3x3 s2 + Conv 1x1, concatenated.
class ADownImpl : public torch::nn::Module {
 public:
  ADownImpl(int64_t c1, int64_t c2);
  torch::Tensor forward(const torch::Tensor& x);
  Hw Out(Hw in) const { return cv1_->Out({in.h - 1, in.w - 1}); }
  double Flops(Hw in) const { return cv1_->Flops({in.h - 1, in.w - 1}) + cv2_->Flops(Out(in)); }

 private:
  Conv cv1_{nullptr};
  Conv cv2_{nullptr};
};
TORCH_MODULE(ADown);

// SPP-ELAN: cv1, three chained 5x5 stride-1 max pools, cv5 over the concatenation of all four.
class SPPELANImpl : public torch::nn::Module {
 public:
  SPPELANImpl(int64_t c1, int64_t c2, int64_t c3);
  torch::Tensor forward(const torch::Tensor& x);
  double Flops(Hw in) const { return cv1_->Flops(in) + cv5_->Flops(in); }

 private:
  Conv cv1_{nullptr};
  Conv cv5_{nullptr};
};
TORCH_MODULE(SPPELAN);

// nearest-neighbour 2x upsampling, as Python's nn.Upsample(scale_factor=2, mode="nearest").
torch::Tensor Upsample2x(const torch::Tensor& x);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_MODEL_BLOCKS_H_
