// DDetect: the anchor-free decoupled YOLOv9 head with DFL box regression. Per level it runs a
// box tower (64 = 4 sides x 16 bins of DFL logits) and a class tower (nc logits); the raw maps
// are what the loss consumes, the decode is LibreYOLO's eval `predictions`.
#ifndef LIBREYOLO_SERVER_ENGINE_MODEL_HEAD_H_
#define LIBREYOLO_SERVER_ENGINE_MODEL_HEAD_H_

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

// Python's nn.Sequential(Conv 3x3, Conv 3x3 (grouped for the box tower), Conv2d 1x1 + bias).
class HeadTowerImpl : public torch::nn::Module {
 public:
  HeadTowerImpl(int64_t c_in, int64_t hidden, int64_t c_out, int64_t groups);
  torch::Tensor forward(const torch::Tensor& x) { return pred_(conv1_(conv0_(x))); }
  double Flops(Hw in) const;
  // Sets the bias of the final 1x1 conv (the detection prior).
  void FillBias(double value);

 private:
  Conv conv0_{nullptr};
  Conv conv1_{nullptr};
  torch::nn::Conv2d pred_{nullptr};
};
TORCH_MODULE(HeadTower);

class DDetectImpl : public torch::nn::Module {
 public:
  // `channels`: the input channels of the P3, P4, P5 feature maps.
  DDetectImpl(int64_t num_classes, const std::vector<int64_t>& channels);

  // Per level, cat(box tower, class tower) along channels: [B, 4*16 + nc, H, W].
  std::vector<torch::Tensor> forward(const std::vector<torch::Tensor>& feats);

  // The raw maps decoded to [B, 4 + nc, A]: xyxy boxes in input pixels (DFL expectation over
  // the 16 bins, anchors at cell centres, times the level stride), then sigmoid scores.
  torch::Tensor Decode(const std::vector<torch::Tensor>& raw);

  double Flops(const std::vector<Hw>& level_sizes) const;
  int64_t num_classes() const { return num_classes_; }

 private:
  // Anchor centres [2, A] (grid units), strides [1, A] and the DFL bin values [1, 1, 16, 1]
  // for the current level shapes, dtype and device; rebuilt only when those change, as
  // LibreYOLO caches its anchor grid, so a steady-state decode runs the same kernels.
  void UpdateGrid(const std::vector<torch::Tensor>& raw);

  int64_t num_classes_;
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
