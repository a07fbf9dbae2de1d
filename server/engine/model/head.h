// DDetect: the anchor-free decoupled YOLOv9 head with DFL box regression. Per level it runs a
// box tower (64 = 4 sides x 16 bins of DFL logits) and a class tower (nc logits); the raw maps
// are what the loss consumes, the decode is LibreYOLO's eval `predictions`.
#ifndef LIBREYOLO_SERVER_ENGINE_MODEL_HEAD_H_
#define LIBREYOLO_SERVER_ENGINE_MODEL_HEAD_H_

#include <ATen/core/Generator.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cstdint>
#include <vector>

#include "server/engine/model/blocks.h"

namespace libreyolo::engine {

inline constexpr int64_t kRegMax = 16;
inline constexpr int64_t kNumLevels = 3;
inline constexpr int64_t kStrides[kNumLevels] = {8, 16, 32};

// LibreYOLO9's class-tower width for a fresh build: the P3 width, at least min(nc, 100).
int64_t ClassTowerWidth(int64_t p3_channels, int64_t num_classes);

// Python's nn.Sequential(Conv 3x3, Conv 3x3 (grouped for the box tower), Conv2d 1x1 + bias).
class HeadTowerImpl : public torch::nn::Module {
 public:
  HeadTowerImpl(int64_t c_in, int64_t hidden, int64_t c_out, int64_t groups);
  torch::Tensor forward(const torch::Tensor& x) { return pred_(conv1_(conv0_(x))); }
  double Flops(Hw in) const;
  // Sets the bias of the final 1x1 conv (the detection prior).
  void FillBias(double value);
  // Draws the final 1x1 conv's weight, then its bias, from `generator` as a fresh
  // torch.nn.Conv2d does (kaiming_uniform_(a=sqrt(5)), then U(+-1/sqrt(fan_in))).
  void ResetPredictor(at::Generator& generator);

 private:
  Conv conv0_{nullptr};
  Conv conv1_{nullptr};
  torch::nn::Conv2d pred_{nullptr};
};
TORCH_MODULE(HeadTower);

class DDetectImpl : public torch::nn::Module {
 public:
  // `channels`: the input channels of the P3, P4, P5 feature maps. `class_hidden` is the class
  // towers' width; 0 takes LibreYOLO9's rule (ClassTowerWidth). A checkpoint fine-tuned from
  // COCO keeps its 80-wide towers whatever its class count, so loaders pass its width.
  DDetectImpl(int64_t num_classes, const std::vector<int64_t>& channels, int64_t class_hidden = 0);

  // Per level, cat(box tower, class tower) along channels: [B, 4*16 + nc, H, W].
  std::vector<torch::Tensor> forward(const std::vector<torch::Tensor>& feats);

  // The raw maps decoded to [B, 4 + nc, A]: xyxy boxes in input pixels (DFL expectation over
  // the 16 bins, anchors at cell centres, times the level stride), then sigmoid scores.
  torch::Tensor Decode(const std::vector<torch::Tensor>& raw);

  double Flops(const std::vector<Hw>& level_sizes) const;
  int64_t num_classes() const { return num_classes_; }
  int64_t class_hidden() const { return class_hidden_; }

  // LibreYOLO's `_rebuild_detect_class_layers` on a head already built for the new class
  // count: each class tower's final 1x1 conv drawn anew from a CPU generator seeded `seed`
  // (level by level, weight then bias, as Python builds nn.Conv2d(hidden, nc, 1) after
  // torch.manual_seed(seed)), then `_init_bias`, which also resets the box towers' biases.
  void ReinitialiseClassPredictors(uint64_t seed);
  // `DDetect._init_bias`: box predictor biases 1.0, class predictor biases -10.
  void InitBias();

 private:
  // Anchor centres [2, A] (grid units), strides [1, A] and the DFL bin values [1, 1, 16, 1]
  // for the current level shapes, dtype and device; rebuilt only when those change, as
  // LibreYOLO caches its anchor grid, so a steady-state decode runs the same kernels.
  void UpdateGrid(const std::vector<torch::Tensor>& raw);

  int64_t num_classes_;
  int64_t class_hidden_;
  std::vector<HeadTower> box_towers_;    // registered as the ModuleList "cv2"
  std::vector<HeadTower> class_towers_;  // registered as the ModuleList "cv3"
  std::vector<int64_t> grid_key_;
  torch::Tensor anchors_;
  torch::Tensor anchor_strides_;
  torch::Tensor bins_;
};
TORCH_MODULE(DDetect);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_MODEL_HEAD_H_
