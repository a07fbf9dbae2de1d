#include "server/engine/model/yolo9_parts.h"

#include "server/engine/model/module_scope.h"

namespace libreyolo::engine {
namespace {

// Channel widths per size, from LibreYOLO's YOLO9_CONFIGS (the official YOLOv9 configs).
// Stages are {down, {out, part}}; for t/s/m every ELAN's part equals its out.
// clang-format off
constexpr Yolo9Config kConfigT = {
    .conv0 = 16, .conv1 = 32, .first_is_elan = true, .first = {32, 32}, .adown = false,
    .stages = {{{64, {64, 64}}, {96, {96, 96}}, {128, {128, 128}}}},
    .spp_out = 128, .repeat = 3, .up1 = {96, 96}, .up2 = {64, 64},
    .down1 = {48, {96, 96}}, .down2 = {64, {128, 128}}};
constexpr Yolo9Config kConfigS = {
    .conv0 = 32, .conv1 = 64, .first_is_elan = true, .first = {64, 64}, .adown = false,
    .stages = {{{128, {128, 128}}, {192, {192, 192}}, {256, {256, 256}}}},
    .spp_out = 256, .repeat = 3, .up1 = {192, 192}, .up2 = {128, 128},
    .down1 = {96, {192, 192}}, .down2 = {128, {256, 256}}};
constexpr Yolo9Config kConfigM = {
    .conv0 = 32, .conv1 = 64, .first_is_elan = false, .first = {128, 128}, .adown = false,
    .stages = {{{240, {240, 240}}, {360, {360, 360}}, {480, {480, 480}}}},
    .spp_out = 480, .repeat = 1, .up1 = {360, 360}, .up2 = {240, 240},
    .down1 = {184, {360, 360}}, .down2 = {240, {480, 480}}};
constexpr Yolo9Config kConfigC = {
    .conv0 = 64, .conv1 = 128, .first_is_elan = false, .first = {256, 128}, .adown = true,
    .stages = {{{256, {512, 256}}, {512, {512, 512}}, {512, {512, 512}}}},
    .spp_out = 512, .repeat = 1, .up1 = {512, 512}, .up2 = {256, 256},
    .down1 = {256, {512, 512}}, .down2 = {512, {512, 512}}};
// clang-format on

RepNCSPELAN MakeElan(int64_t c1, Yolo9Config::Elan e, int64_t n) {
  return RepNCSPELAN(c1, e.part, e.part / 2, e.out, n);
}

}  // namespace

const Yolo9Config* FindYolo9Config(std::string_view size) {
  if (size == "t") return &kConfigT;
  if (size == "s") return &kConfigS;
  if (size == "m") return &kConfigM;
  if (size == "c") return &kConfigC;
  return nullptr;
}

DownBlock::DownBlock(torch::nn::Module& parent, const char* name, bool adown, int64_t c1,
                     int64_t c2) {
  if (adown) {
    adown_ = parent.register_module(name, ADown(c1, c2));
  } else {
    aconv_ = parent.register_module(name, AConv(c1, c2));
  }
}

torch::Tensor DownBlock::operator()(const torch::Tensor& x) {
  return aconv_ ? aconv_(x) : adown_(x);
}

Backbone9Impl::Backbone9Impl(const Yolo9Config& cfg) {
  // Registration follows Python's attribute order so named_parameters() lists keys in the
  // checkpoint's order.
  conv0_ = register_module("conv0", Conv(3, cfg.conv0, 3, 2));
  conv1_ = register_module("conv1", Conv(cfg.conv0, cfg.conv1, 3, 2));
  if (cfg.first_is_elan) {
    elan1_ = register_module("elan1",
                             ELAN(cfg.conv1, cfg.first.part, cfg.first.part / 2, cfg.first.out, 1));
  } else {
    elan1_csp_ = register_module("elan1", MakeElan(cfg.conv1, cfg.first, cfg.repeat));
  }
  const auto& s = cfg.stages;
  down2_ = DownBlock(*this, "down2", cfg.adown, cfg.first.out, s[0].down);
  elan2_ = register_module("elan2", MakeElan(s[0].down, s[0].elan, cfg.repeat));
  down3_ = DownBlock(*this, "down3", cfg.adown, s[0].elan.out, s[1].down);
  elan3_ = register_module("elan3", MakeElan(s[1].down, s[1].elan, cfg.repeat));
  down4_ = DownBlock(*this, "down4", cfg.adown, s[1].elan.out, s[2].down);
  elan4_ = register_module("elan4", MakeElan(s[2].down, s[2].elan, cfg.repeat));
  spp_ = register_module("spp", SPPELAN(s[2].elan.out, cfg.spp_out / 2, cfg.spp_out));
}

BackboneOutputs Backbone9Impl::forward(const torch::Tensor& x) {
  const ModuleScope scope(this);
  torch::Tensor y = conv1_(conv0_(x));
  y = elan1_ ? elan1_(y) : elan1_csp_(y);
  BackboneOutputs out;
  out.p3 = elan2_(down2_(y));
  out.p4 = elan3_(down3_(out.p3));
  out.b5 = elan4_(down4_(out.p4));
  out.p5 = spp_(out.b5);
  return out;
}

double Backbone9Impl::Flops(Hw in, std::array<Hw, 3>& levels) const {
  double flops = conv0_->Flops(in);
  Hw hw = conv0_->Out(in);
  flops += conv1_->Flops(hw);
  hw = conv1_->Out(hw);
  flops += elan1_ ? elan1_->Flops(hw) : elan1_csp_->Flops(hw);
  const DownBlock* downs[3] = {&down2_, &down3_, &down4_};
  const RepNCSPELAN* elans[3] = {&elan2_, &elan3_, &elan4_};
  for (size_t i = 0; i < 3; ++i) {
    flops += downs[i]->Flops(hw);
    hw = downs[i]->Out(hw);
    flops += (*elans[i])->Flops(hw);
    levels[i] = hw;
  }
  return flops + spp_->Flops(hw);
}

Neck9Impl::Neck9Impl(const Yolo9Config& cfg) {
  const int64_t b3 = cfg.stages[0].elan.out;
  const int64_t b4 = cfg.stages[1].elan.out;
  elan_up1_ = register_module("elan_up1", MakeElan(cfg.spp_out + b4, cfg.up1, cfg.repeat));
  elan_up2_ = register_module("elan_up2", MakeElan(cfg.up1.out + b3, cfg.up2, cfg.repeat));
  down1_ = DownBlock(*this, "down1", cfg.adown, cfg.up2.out, cfg.down1.down);
  elan_down1_ = register_module("elan_down1",
                                MakeElan(cfg.down1.down + cfg.up1.out, cfg.down1.elan, cfg.repeat));
  down2_ = DownBlock(*this, "down2", cfg.adown, cfg.down1.elan.out, cfg.down2.down);
  elan_down2_ = register_module("elan_down2",
                                MakeElan(cfg.down2.down + cfg.spp_out, cfg.down2.elan, cfg.repeat));
}

std::vector<torch::Tensor> Neck9Impl::forward(const BackboneOutputs& b) {
  const ModuleScope scope(this);
  torch::Tensor n4 = elan_up1_(torch::cat({Upsample2x(b.p5), b.p4}, 1));
  torch::Tensor p3 = elan_up2_(torch::cat({Upsample2x(n4), b.p3}, 1));
  torch::Tensor p4 = elan_down1_(torch::cat({down1_(p3), n4}, 1));
  torch::Tensor p5 = elan_down2_(torch::cat({down2_(p4), b.p5}, 1));
  return {p3, p4, p5};
}

double Neck9Impl::Flops(const std::array<Hw, 3>& levels) const {
  // Upsampled maps are assumed to land exactly on the finer level (inputs a multiple of 32).
  return elan_up1_->Flops(levels[1]) + elan_up2_->Flops(levels[0]) + down1_.Flops(levels[0]) +
         elan_down1_->Flops(levels[1]) + down2_.Flops(levels[1]) + elan_down2_->Flops(levels[2]);
}

AuxNeck9Impl::AuxNeck9Impl(const Yolo9Config& cfg) {
  // Python's construction order (spp, elan_a4, elan_a3): the same draws from the same seed.
  const int64_t b3 = cfg.stages[0].elan.out;
  const int64_t b4 = cfg.stages[1].elan.out;
  spp_ = register_module("spp", SPPELAN(cfg.stages[2].elan.out, cfg.spp_out / 2, cfg.spp_out));
  elan_a4_ = register_module("elan_a4", MakeElan(cfg.spp_out + b4, cfg.up1, cfg.repeat));
  elan_a3_ = register_module("elan_a3", MakeElan(cfg.up1.out + b3, cfg.up2, cfg.repeat));
}

std::vector<torch::Tensor> AuxNeck9Impl::forward(const BackboneOutputs& b) {
  const ModuleScope scope(this);
  torch::Tensor a5 = spp_(b.b5);
  torch::Tensor a4 = elan_a4_(torch::cat({Upsample2x(a5), b.p4}, 1));
  torch::Tensor a3 = elan_a3_(torch::cat({Upsample2x(a4), b.p3}, 1));
  return {a3, a4, a5};
}

double AuxNeck9Impl::Flops(const std::array<Hw, 3>& levels) const {
  return spp_->Flops(levels[2]) + elan_a4_->Flops(levels[1]) + elan_a3_->Flops(levels[0]);
}

}  // namespace libreyolo::engine
