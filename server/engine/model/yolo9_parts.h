// The YOLOv9 backbone and PAN neck, and the per-size channel table they are built from
// (LibreYOLO's YOLO9_CONFIGS, itself the official YOLOv9 t/s/m/c configs).
#ifndef LIBREYOLO_SERVER_ENGINE_MODEL_YOLO9_PARTS_H_
#define LIBREYOLO_SERVER_ENGINE_MODEL_YOLO9_PARTS_H_

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "server/engine/model/blocks.h"

namespace libreyolo::engine {

struct Yolo9Config {
  struct Elan {
    int64_t out;
    int64_t part;  // cv1 width; the branches get part / 2
  };
  struct Stage {
    int64_t down;  // downsampling block output
    Elan elan;
  };
  int64_t conv0;
  int64_t conv1;
  bool first_is_elan;  // ELAN for t/s, RepNCSPELAN for m/c
  Elan first;
  bool adown;                   // ADown (c) instead of AConv (t/s/m)
  std::array<Stage, 3> stages;  // B3, B4, B5
  int64_t spp_out;
  int64_t repeat;  // RepNCSP bottlenecks per block
  Elan up1;        // neck N4
  Elan up2;        // neck P3
  Stage down1;     // neck P4
  Stage down2;     // neck P5
};

// nullptr for a size other than t, s, m, c.
const Yolo9Config* FindYolo9Config(std::string_view size);

// AConv or ADown, whichever the size uses, registered under one name: the two differ in keys
// ("cv" vs "cv1"/"cv2"), so only the one in use may be registered.
class DownBlock {
 public:
  DownBlock() = default;
  DownBlock(torch::nn::Module& parent, const char* name, bool adown, int64_t c1, int64_t c2);
  torch::Tensor operator()(const torch::Tensor& x);
  Hw Out(Hw in) const { return aconv_ ? aconv_->Out(in) : adown_->Out(in); }
  double Flops(Hw in) const { return aconv_ ? aconv_->Flops(in) : adown_->Flops(in); }

 private:
  AConv aconv_{nullptr};
  ADown adown_{nullptr};
};

struct BackboneOutputs {
  torch::Tensor p3;
  torch::Tensor p4;
  torch::Tensor p5;  // after SPPELAN
  torch::Tensor b5;  // before SPPELAN: the PGI auxiliary neck's input (Python's return_b5)
};

class Backbone9Impl : public torch::nn::Module {
 public:
  explicit Backbone9Impl(const Yolo9Config& cfg);
  BackboneOutputs forward(const torch::Tensor& x);
  // FLOPs at batch 1 for an input of `in`; fills the P3, P4, P5 sizes.
  double Flops(Hw in, std::array<Hw, 3>& levels) const;

 private:
  Conv conv0_{nullptr};
  Conv conv1_{nullptr};
  ELAN elan1_{nullptr};             // t/s
  RepNCSPELAN elan1_csp_{nullptr};  // m/c (same key, "elan1")
  DownBlock down2_;
  RepNCSPELAN elan2_{nullptr};
  DownBlock down3_;
  RepNCSPELAN elan3_{nullptr};
  DownBlock down4_;
  RepNCSPELAN elan4_{nullptr};
  SPPELAN spp_{nullptr};
};
TORCH_MODULE(Backbone9);

class Neck9Impl : public torch::nn::Module {
 public:
  explicit Neck9Impl(const Yolo9Config& cfg);
  std::vector<torch::Tensor> forward(const BackboneOutputs& b);
  double Flops(const std::array<Hw, 3>& levels) const;

 private:
  RepNCSPELAN elan_up1_{nullptr};
  RepNCSPELAN elan_up2_{nullptr};
  DownBlock down1_;
  RepNCSPELAN elan_down1_{nullptr};
  DownBlock down2_;
  RepNCSPELAN elan_down2_{nullptr};
};
TORCH_MODULE(Neck9);

// LibreYOLO9's PGI auxiliary neck ("aux", Python's AuxNeck; MultimediaTechLab's v9 `auxiliary`),
// built only for training: SPPELAN on the pre-SPP B5 (A5), then top-down: upsample, concat
// B4, RepNCSPELAN (A4); upsample, concat B3, RepNCSPELAN (A3). Keys aux.spp, aux.elan_a4,
// aux.elan_a3 with the widths of the main neck's top-down blocks.
class AuxNeck9Impl : public torch::nn::Module {
 public:
  explicit AuxNeck9Impl(const Yolo9Config& cfg);
  // {A3, A4, A5}, the auxiliary head's inputs at strides 8, 16, 32.
  std::vector<torch::Tensor> forward(const BackboneOutputs& b);
  double Flops(const std::array<Hw, 3>& levels) const;

 private:
  SPPELAN spp_{nullptr};
  RepNCSPELAN elan_a4_{nullptr};
  RepNCSPELAN elan_a3_{nullptr};
};
TORCH_MODULE(AuxNeck9);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_MODEL_YOLO9_PARTS_H_
